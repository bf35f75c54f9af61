"""The scoping pass ``cepkit.lang.scope`` (docs/language.md §2, §10 rules 7 and 11)."""

import pytest

import cepkit
from cepkit.lang import ast as A
from cepkit.lang.printer import pretty


def scoped(text):
    return pretty(cepkit.parse(text).scoped)


def test_where_becomes_a_top_level_filter():
    assert scoped("SEQ(A a, B b) WHERE a.v = b.v") == "A AS a ; B AS b FILTER a.v = b.v"


def test_condition_items_become_a_filter_on_their_seq():
    assert (
        scoped("SEQ(R r, SEQ(A a, B b, a.v = r.v), O o, r.id = o.id)")
        == "R AS r ; (A AS a ; B AS b FILTER a.v = r.v) ; O AS o FILTER r.id = o.id"
    )


def test_conjuncts_on_a_negated_variable_move_into_its_negation():
    """[LIU] §5.1.2 predicate scoping test: "there is no y with x.f <= y.f <= z.f"."""
    assert (
        scoped("SEQ(A x, !(B y), C z, x.f <= y.f and y.f <= z.f and x.f <= z.f)")
        == "SEQ(A AS x, !(B AS y FILTER x.f <= y.f and y.f <= z.f), C AS z) FILTER x.f <= z.f"
    )


def test_exists_receives_its_conditions_too():
    assert (
        scoped("SEQ(A a, EXISTS B b, C c) WHERE b.v > a.v") == "SEQ(A AS a, EXISTS (B AS b FILTER b.v > a.v), C AS c)"
    )


def test_innermost_negation_that_sees_all_variables():
    """Rule 11: a conjunct on variables of nested negations goes to the innermost one that sees them all."""
    assert (
        scoped("SEQ(A a, !SEQ(B b, !C c), D d) WHERE c.v = b.v and b.v = 1")
        == "SEQ(A AS a, !(SEQ(B AS b, !(C AS c FILTER c.v = b.v)) FILTER b.v = 1), D AS d)"
    )


def test_two_unrelated_negations_are_an_error_at_parse_time():
    """Rule 7: a conjunct mentioning variables of two different negations is a QueryError, with a caret."""
    with pytest.raises(cepkit.QueryError) as err:
        cepkit.parse("SEQ(A a, !B b, !C c, D d) WHERE c.v = b.v")
    assert "two different negations" in str(err.value) and "^^^^^^^^^" in str(err.value)
    assert (err.value.line, err.value.column) == (1, 33)


def test_disjunction_mentioning_a_negated_variable_moves_whole():
    """Conjuncts are the unit: an ``or`` mentioning b belongs to b's negation as a whole."""
    assert (
        scoped("SEQ(A a, !B b, C c) WHERE b.v = 1 or a.v = 2")
        == "SEQ(A AS a, !(B AS b FILTER b.v = 1 or a.v = 2), C AS c)"
    )


def test_scoped_tree_keeps_cel_filters_in_place():
    tree = cepkit.parse("(H AS x ; (T AS y FILTER y.id = x.id)+ ; H AS z) FILTER x.id = z.id").scoped
    assert isinstance(tree, A.Filter) and isinstance(tree.pattern.items[1].pattern, A.Filter)
