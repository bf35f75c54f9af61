"""Reading queries as SES patterns ([SES] Def 3.1), the implied equalities Θ_eq⁺ and the partition
attributes X (docs/references.md E11, [SES] Def 5.3), and the errors for everything outside the fragment."""

import pytest

import cepkit
from cepkit.engines.ses import SetPattern
from cepkit.lang import ast as A
from cepkit.lang.equalities import equality_link, transitive_equalities


def read(text) -> SetPattern:
    return SetPattern.from_query(cepkit.parse(text))


def test_set_shapes():
    """Bare atoms are singleton sets, a lone set or atom is a one-set sequence, nested SEQs flatten."""
    assert read("SEQ(A a, B+ b, C c)").sets == (("a",), ("b",), ("c",))
    assert read("SEQ(A a, B+ b, C c)").kleene == {"b"}
    assert read("{A a, B b}").sets == (("a", "b"),)
    assert read("A+ a").sets == (("a",),) and read("A+ a").kleene == {"a"}
    assert read("(A a ; {B b, C c}) ; D d").sets == (("a",), ("b", "c"), ("d",))


def test_conditions_from_everywhere():
    """WHERE, FILTERs around the sequence, a set or an atom, and condition items are one conjunction Θ."""
    pattern = read("SEQ({A a, B b, a.x = b.x}, (C c FILTER c.y > 1)) FILTER a.z < 3 WHERE b.w != 0")
    assert sorted(cepkit.pretty(c) for c in pattern.conditions) == ["a.x = b.x", "a.z < 3", "b.w != 0", "c.y > 1"]


def test_anonymous_atoms_count_in_positions_only():
    """An atom without a variable still takes an event: it is in C, not in the bindings (as the reference)."""
    events = [{"type": t, "ts": i} for i, t in enumerate("ABAB")]
    found = cepkit.match("SEQ(A, B b) WITHIN 1", events, engine="ses")
    assert found.positions() == [(0, 1), (2, 3)] and [m.bindings for m in found] == [{"b": 1}, {"b": 3}]
    assert found == cepkit.match("SEQ(A, B b) WITHIN 1", events, engine="reference")


def test_hierarchy_types():
    """A concept stands for the types below it (docs/language.md §7), in sets too; an attribute hierarchy does not
    classify types (docs/decisions.md, as in the reference)."""
    events = [{"type": t, "ts": i} for i, t in enumerate(["IBM", "MSFT", "IBM"])]
    hierarchy = {"Tech": ["IBM", "MSFT"]}
    query = "SEQ({Tech t, IBM i}) WITHIN 5"
    found = cepkit.match(query, events, engine="ses", hierarchy=hierarchy)
    assert found.positions() == [(0, 1), (0, 2), (1, 2)]
    assert found == cepkit.match(query, events, engine="reference", hierarchy=hierarchy)
    on_attribute = cepkit.Hierarchy(hierarchy, attribute="sector")  # classifies an attribute, not types
    assert cepkit.match(query, events, engine="ses", hierarchy=on_attribute).positions() == []


@pytest.mark.parametrize("window", ["WITHIN 2 EVENTS", "WITHIN 2", ""])
def test_punctuations_are_never_matched(window):
    """PUNCTUATION events (docs/language.md §6) are not events of the pattern's streams: ANY does not take them and
    ``n EVENTS`` does not count them, as in the reference."""
    events = [{"type": "A", "ts": 0}, {"type": "PUNCTUATION", "of": "A", "ts": 1}, {"type": "B", "ts": 2}]
    query = f"SEQ({{ANY x}}, {{ANY y}}) {window}"
    found = cepkit.match(query, events, engine="ses")
    assert found.positions() == [(0, 2)]
    assert found == cepkit.match(query, events, engine="reference")


def test_implied_equalities():
    """docs/references.md E11: Θ_eq⁺ − Θ holds the missing pairs of each equality class and prev(v.A) = v.A for a Kleene v in one;
    X holds the attributes whose class covers every variable (Def 5.3)."""
    pattern = read("SEQ({C c, P+ p}, {B b}) WHERE c.PID = p.PID and p.PID = b.PID and c.room = b.room")
    assert [cepkit.pretty(c) for c in pattern.closure] == ["c.PID = b.PID", "prev(p.PID) = p.PID"]
    assert pattern.partition_attributes() == ("PID",)
    assert read("SEQ(C c, B b) WHERE c.x = b.y").partition_attributes() == ()
    assert read("C c").partition_attributes() == ()
    assert transitive_equalities(A.conjuncts(cepkit.parse("SEQ(A a, B b) WHERE a.x = b.x").where)) == ()
    # equalities with a variable a match does not bind (a negated one) imply nothing about the match
    ties = A.conjuncts(cepkit.parse("SEQ(A a, !(X x), B b) WHERE a.k = x.k and x.k = b.k").where)
    assert transitive_equalities(ties, variables={"a", "b"}) == ()
    assert [cepkit.pretty(c) for c in transitive_equalities(ties)] == ["a.k = b.k"]


def test_equality_links():
    """The equalities that tie an attribute across variables, or across a Kleene variable's events."""

    def link(text):
        return equality_link(cepkit.parse(f"SEQ(A+ a, B b) WHERE {text}").where)

    assert link("a.x = b.x") == ("x", "a", "b")
    assert link("prev(a.x) = a.x") == link("a.x = a[i-1].x") == ("x", "a", "a")
    assert link("a.x = b.y") is link("a.x < b.x") is link("a.x = 1") is link("prev(a.x) = b.x") is None


@pytest.mark.parametrize(
    "text,what",
    [
        ("SEQ(A a, (B b ; C c)+)", "iteration of a composite pattern"),
        ("SEQ(A a, (B b FILTER b.v > 1)+)", "a FILTER inside an iteration"),
        ("SEQ({A a, SEQ(B b, C c)}, D d)", "this nesting"),
        ("SEQ(A+ a, B b) WHERE first(a).v > 1", "first(), last() and b[k]"),
        ("SEQ(A a, B b) WHERE prev(a.v) < b.v", "not a Kleene variable"),
        ("SEQ(A a, B b) WHERE (a.v > 1 or b.v > 1) = true", "a condition used as a value"),
    ],
)
def test_outside_the_fragment(text, what):
    """A pattern the engine cannot run is a QueryError at the culprit, naming the engines that can; with
    engine="auto" the query falls through to one of them."""
    with pytest.raises(cepkit.QueryError, match="engine 'ses' does not support") as error:
        cepkit.match(text, [], engine="ses")
    assert what in str(error.value) and "reference" in error.value.engines
    assert error.value.line == 1 and error.value.column > 1
    assert cepkit.match(text, [{"type": "A", "v": 1}]).engine != "ses"


@pytest.mark.parametrize(
    "text,feature",
    [
        ("SEQ(A a, !B b, C c)", "negation"),
        ("A a OR B b", "or"),
        ("SEQ(A+ a, B b) WHERE count(a) > 1", "aggregates"),
        ("SELECT NEXT * PATTERN SEQ(A a, B b)", "strategy:NEXT"),
        ("SEQ(A a, B b) CONSUME BY ANY", "consume"),
    ],
)
def test_features_it_does_not_declare(text, feature):
    """Features outside ``SesEngine.features`` are refused before compiling, with the engines that have them."""
    with pytest.raises(cepkit.QueryError, match=f"does not support {feature}") as error:
        cepkit.match(text, [], engine="ses")
    assert "reference" in error.value.engines


def test_bad_options():
    """Engine options are checked: unknown values, the brute force under ROBUST_STNM, unknown names."""
    query = "SEQ({A a, B b}, C c)"
    with pytest.raises(ValueError, match="robust="):
        cepkit.match(query, [], engine="ses", robust="guess")
    with pytest.raises(ValueError, match="automaton="):
        cepkit.match(query, [], engine="ses", automaton="nfa")
    with pytest.raises(ValueError, match="ALL or STNM only"):
        cepkit.match(query, [], engine="ses", automaton="permutations", strategy="ROBUST_STNM")
    with pytest.raises(TypeError, match="does not take option"):
        cepkit.match(query, [], engine="ses", speed=11)
