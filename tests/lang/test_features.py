"""``Query.features``: the vocabulary engines declare (``cepkit.lang.FEATURES``), each found where it is used."""

import pytest

import cepkit
from cepkit.lang import FEATURES

# For every feature: a query that uses it, and the text of the node the feature points at (for carets).
USES = {
    "sequence": ("A a ; B b", "A a ; B b"),
    "or": ("A a OR B b", "A a OR B b"),
    "and": ("AND(A a, B b)", "AND(A a, B b)"),
    "kleene": ("A a ; B+ b", "B+ b"),
    "nested_kleene": ("((A a)+ ; B b)+", "(A a)+"),
    "negation": ("SEQ(A a, !B b, C c)", "!B b"),
    "exists": ("SEQ(A a, EXISTS B b, C c)", "EXISTS B b"),
    "nested_negation": ("SEQ(A a, !(B b ; C c), D d)", "!(B b ; C c)"),
    "nesting": ("SEQ(A a, AND(B b, C c))", "AND(B b, C c)"),
    "unary_conditions": ("A a FILTER a.v > 1", "a.v > 1"),
    "binary_conditions": ("A a ; B b FILTER a.v < b.v", "a.v < b.v"),
    "correlated_filters": ("H x ; (T y FILTER y.id = x.id)+ ; H z", "y.id = x.id"),
    "condition_items": ("SEQ(A a, B b, a.id = b.id)", "a.id = b.id"),
    "kleene_conditions": ("A a ; B+ b WHERE prev(b.v) < b.v", "prev(b.v)"),
    "aggregates": ("A a ; B+ b WHERE count(b) > 2", "count(b)"),
    "time_window": ("A a ; B b WITHIN 5 min", "WITHIN 5 min"),
    "event_window": ("A a ; B b WITHIN 5 EVENTS", "WITHIN 5 EVENTS"),
    "partition": ("A a ; B b PARTITION BY id", "A a ; B b PARTITION BY id"),
    "consume": ("A a ; B b CONSUME BY ANY", "A a ; B b CONSUME BY ANY"),
    "projection": ("A a ; B b RETURN a", "A a ; B b RETURN a"),
    "any_type": ("A a ; ANY x", "ANY x"),
    "hierarchy": ("A a ; Stock s", "Stock s"),
    "attribute_hierarchy": ("A a ; B b WHERE b.sector = 'Tech'", "b.sector = 'Tech'"),
    "nested_strategy": ("NEXT(A a ; B b) ; C c", "NEXT(A a ; B b)"),
    **{
        f"strategy:{name}": (
            f"SELECT {name} * PATTERN A a ; B b PARTITION BY id",
            f"SELECT {name} * PATTERN A a ; B b PARTITION BY id",
        )
        for name in ("STRICT", "PARTITION_STRICT", "NEXT", "LAST", "MAX", "STNM", "ROBUST_STNM")
    },
}
HIERARCHY = {"Stock": ["IBM", "MSFT"]}
SECTORS = cepkit.Hierarchy({"Tech": ["Software", "Chips"]}, attribute="sector")


def test_every_feature_has_an_example():
    assert set(USES) == set(FEATURES)


@pytest.mark.parametrize("feature", FEATURES)
def test_feature_is_found_and_located(feature):
    text, located = USES[feature]
    query = cepkit.parse(text, hierarchy=SECTORS if feature == "attribute_hierarchy" else HIERARCHY)
    assert feature in query.features
    line, column, end_line, end_column = query.features[feature].span
    assert (line, end_line) == (1, 1)
    assert text[column - 1 : end_column - 1] == located


@pytest.mark.parametrize(
    "text, features",
    [
        # [CEL] §2, φ1: a conjunction of unary filters, the CEL fragment the automaton compiles; arity is per
        # conjunct (a conjunct relating two variables, or a disjunction over two, is binary).
        (
            "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)",
            {"sequence", "unary_conditions"},
        ),
        ("(T AS x ; H AS y) FILTER (x.tmp > 40 or y.hum < 25)", {"sequence", "binary_conditions"}),
        ("(T AS x ; H AS y) FILTER x.tmp > 40 and x.id = y.id", {"sequence", "unary_conditions", "binary_conditions"}),
        ("SEQ(A a)", set()),
        ("A a", set()),
        ("A a ; B b CONSUME BY NONE", {"sequence"}),
        ("SELECT ALL * A a ; B b", {"sequence"}),
        ("NXT(A a) ; B b", {"sequence", "nested_strategy", "strategy:NEXT"}),
        ("A a ; Stock s", {"sequence"}),  # no hierarchy given: Stock is a plain type
    ],
)
def test_exact_feature_sets(text, features):
    assert set(cepkit.parse(text).features) == features


def test_hierarchy_feature_needs_a_concept_with_types_below():
    assert "hierarchy" not in cepkit.parse("A a ; IBM s", hierarchy=HIERARCHY).features
    assert "hierarchy" in cepkit.parse("A a ; Stock s", hierarchy=HIERARCHY).features


def test_with_strategy_changes_the_features():
    query = cepkit.parse("A a ; B b")
    assert "strategy:MAX" in query.with_strategy("max").features
    assert query.with_strategy("NXT").strategy == "NEXT"
    assert query.with_strategy("ALL") == query
