"""SES conditions ([SES] ch. 3, docs/language.md §3 and rule 6): quantification over Kleene variables, ``prev``,
the monotone / property classes that drive the automaton, and the reference's value rules."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.engines.ses.conditions import Conjunct
from cepkit.runtime.event_record import Event

INDEX = {"p": 0, "q": 1, "a": 2}
KLEENE = {"p", "q"}


def conjunct(text) -> Conjunct:
    return Conjunct(cepkit.parse(f"SEQ({{P+ p, Q+ q}}, A a) WHERE {text}").where, INDEX, KLEENE)


def events(type_, *values, attr="v"):
    return tuple(Event(type_, i, {attr: v}, i) for i, v in enumerate(values))


def test_every_pair_between_kleene_variables():
    """Def 3.2: ``p.v < q.v`` holds when it holds for every pair (x in p, y in q)."""
    theta = conjunct("p.v < q.v")
    assert theta.holds((events("P", 1, 2), events("Q", 3, 4), ()))
    assert not theta.holds((events("P", 1, 5), events("Q", 3, 6), ()))


def test_prev_ranges_over_consecutive_pairs():
    """``prev(p.v) < p.v`` is every consecutive pair, vacuously true for one event; ``p[i-1]`` is the same."""
    for text in ("prev(p.v) < p.v", "p[i-1].v < p[i].v"):
        theta = conjunct(text)
        assert theta.holds((events("P", 7), (), ()))
        assert theta.holds((events("P", 1, 2, 3), (), ()))
        assert not theta.holds((events("P", 1, 3, 2), (), ()))


def test_classes():
    """Monotone unless a ``not`` covers a Kleene variable; a property when it is about one variable without
    prev; exact per event unless a Kleene variable meets ``or`` (all above 5, or all below 2)."""
    plain = conjunct("p.v > 3")
    assert plain.monotone and plain.property and plain.exact_property
    either = conjunct("p.v > 5 or p.v < 2")
    assert either.monotone and either.property and not either.exact_property
    negated = conjunct("not p.v > 3")
    assert not negated.monotone and not negated.property
    single = conjunct("not a.v > 3")
    assert single.monotone and single.exact_property
    assert not conjunct("prev(p.v) < p.v").property and not conjunct("p.v < q.v").property


leaf_texts = st.sampled_from(
    ["p.v < q.v", "prev(p.v) < p.v", "p.v + a.v > q.v", "p.v != a.v", "q.v IN (1, 2)", "p.v * 2 >= q.v - a.v"]
)
values = st.lists(st.integers(0, 4), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(leaf_texts, values, values, st.integers(0, 4), st.sampled_from([0, 1, 2]))
def test_incremental_check_equals_the_full_one(text, ps, qs, a, var):
    """Θδ checks only the assignments that use the event just appended: when θ held before, the incremental
    answer is the full one."""
    theta = conjunct(text)
    binding = [events("P", *ps), events("Q", *qs), events("A", a)]
    before = list(binding)
    before[var] = binding[var][:-1]
    if before[var] and theta.holds(tuple(before)):
        assert theta.holds_extended(tuple(binding), var) == theta.holds(tuple(binding))


def test_one_quantifier_per_comparison_agrees_with_the_reference():
    """Rule 6 on a Kleene variable: ``p.v > 5 or p.v < 2`` keeps ⟨6⟩ and ⟨1⟩ but not ⟨6, 1⟩; ``not p.v > 3``
    (some p.v <= 3) takes ⟨5, 2⟩ but not ⟨5⟩, so it cannot prune early."""
    stream = [{"type": "P", "ts": 0, "v": 6}, {"type": "P", "ts": 1, "v": 1}, {"type": "B", "ts": 2, "v": 0}]
    either = "SEQ(P+ p, B b) WHERE p.v > 5 or p.v < 2 WITHIN 5"
    assert cepkit.match(either, stream, engine="ses").positions() == [(0, 2), (1, 2)]
    stream[0]["v"], stream[1]["v"] = 5, 2
    some = "SEQ(P+ p, B b) WHERE not p.v > 3 WITHIN 5"
    for strategy in ("ALL", "STNM", "ROBUST_STNM"):
        found = cepkit.match(some, stream, engine="ses", strategy=strategy)
        assert found == cepkit.match(some, stream, engine="reference", strategy=strategy)
    assert cepkit.match(some, stream, engine="ses").positions() == [(0, 1, 2), (1, 2)]


@pytest.mark.parametrize(
    "condition,expected",
    [
        ("a.v < b.w", [(0, 2)]),  # the first b has no w: null, false
        ("not a.v < b.w", [(0, 1)]),  # two-valued: not of it is true
        ("a.v / 0 = a.v / 0", []),  # division by zero is null
        ("a.v + 1 = b.v", [(0, 1)]),
        ("a.ts < b.ts and a.type = 'A' and b.ts > 1", [(0, 2)]),
    ],
)
def test_value_rules(condition, expected):
    """Nulls and arithmetic as the reference has them (docs/decisions.md, Nulls)."""
    stream = [{"type": "A", "ts": 0, "v": 1}, {"type": "B", "ts": 1, "v": 2}, {"type": "B", "ts": 2, "v": 3, "w": 5}]
    query = f"SEQ({{A a}}, {{B b}}) WHERE {condition}"
    assert cepkit.match(query, stream, engine="ses").positions() == expected
    assert cepkit.match(query, stream, engine="reference").positions() == expected


def test_ordering_a_string_against_a_number_names_the_event():
    """As in the reference: an EventError with the position and attribute of the offending event."""
    stream = [{"type": "A", "ts": 0, "v": "x"}, {"type": "B", "ts": 1, "v": 2}]
    with pytest.raises(cepkit.EventError) as error:
        cepkit.match("SEQ({A a}, {B b}) WHERE a.v < b.v", stream, engine="ses")
    assert (error.value.position, error.value.field) == (0, "v")


def test_constant_conditions():
    """A conjunct without variables is decided once: false, no match at all."""
    stream = [{"type": "A", "ts": 0}, {"type": "B", "ts": 1}]
    assert cepkit.match("SEQ(A a, B b) WHERE 1 = 2", stream, engine="ses").positions() == []
    assert cepkit.match("SEQ(A a, B b) WHERE 1 = 1", stream, engine="ses").positions() == [(0, 1)]
