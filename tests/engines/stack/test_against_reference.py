"""The stack engine agrees with the reference evaluator on random flat SEQ queries with negation (leading,
middle, trailing), unary and join predicates, windows, PARTITION BY and the strategies ALL, STRICT,
PARTITION_STRICT and STNM; and its incremental matcher agrees with its batch run."""

import cepkit
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import assert_agrees, flat_seq_queries, streams


@settings(max_examples=300, deadline=None)
@given(flat_seq_queries(), streams(max_size=12))
def test_all_matches_agree(query, events):
    assert_agrees(query, events, "stack")


@settings(max_examples=150, deadline=None)
@given(flat_seq_queries(strategies=("STRICT", "PARTITION_STRICT", "STNM")), streams(max_size=12))
def test_strategies_agree(query, events):
    assert_agrees(query, events, "stack")


@settings(max_examples=100, deadline=None)
@given(
    flat_seq_queries(joins=False, negation=False, max_len=3),
    streams(types=("A", "B"), max_size=10),
    st.sampled_from([None, "Event", "Root"]),
)
def test_hierarchy_and_any_agree(query, events, concept):
    # Atoms of type A also match the concept "Event" (A, B below it); "ANY" is every type.
    hierarchy = {"Event": ["A", "B"], "Root": ["Event"]}
    if concept is not None:
        query = query.replace("A AS", f"{concept} AS", 1)
    expected = cepkit.match(query, events, engine="reference", hierarchy=hierarchy)
    got = cepkit.match(query, events, engine="stack", hierarchy=hierarchy)
    assert [m.key for m in got] == [m.key for m in expected]


@settings(max_examples=100, deadline=None)
@given(flat_seq_queries(), streams(max_size=12))
def test_incremental_matcher_agrees_with_batch(query, events):
    matcher = cepkit.Matcher(query, engine="stack")
    pushed = []
    for event in events:
        pushed.extend(matcher.push(event))
    pushed.extend(matcher.close())
    batch = cepkit.match(query, events, engine="stack")
    assert sorted(m.key for m in pushed) == sorted(m.key for m in batch)
    # a match is final when pushed: every position it uses has arrived
    assert all(m.emitted_at is None or m.positions[-1] <= m.emitted_at for m in pushed)


@settings(max_examples=120, deadline=None)
@given(flat_seq_queries(exists=True, strategies=("ALL", "STRICT", "PARTITION_STRICT", "STNM")), streams(max_size=12))
def test_exists_items_agree(query, events):
    """EXISTS items (NEEL, [LIU] §5.1.2; docs/language.md §2, §10.11): the negation scopes, with "some event"."""
    assert_agrees(query, events, "stack")


def test_an_attribute_hierarchy_does_not_classify_types():
    """``Hierarchy(..., attribute="loc")`` classifies values of ``loc``: TX matches events of type TX only."""
    hierarchy = cepkit.Hierarchy({"TX": ["D"]}, attribute="loc")
    events = [{"type": "D", "ts": 0, "loc": "D"}, {"type": "TX", "ts": 1}, {"type": "B", "ts": 2}]
    for disorder in ("reject", "conservative"):
        got = cepkit.match("SEQ(TX t, B b)", events, engine="stack", hierarchy=hierarchy, disorder=disorder)
        assert got.positions() == [(1, 2)]
    assert cepkit.match("SEQ(TX t, B b)", events, engine="reference", hierarchy=hierarchy).positions() == [(1, 2)]


def test_equalities_through_a_negated_variable_do_not_partition_the_match():
    """a.id = c.id and c.id = b.id belong to the negation (docs/language.md §2): <a, b> with different ids
    matches, since no C can equal both. The stacks were once partitioned by id through c."""
    events = [{"type": "A", "id": 1}, {"type": "C", "id": 1}, {"type": "B", "id": 2}, {"type": "B", "id": 1}]
    for strategy in ("", "SELECT STNM * "):
        query = strategy + "PATTERN SEQ(A a, !C c, B b) WHERE a.id = c.id and c.id = b.id"
        assert cepkit.match(query, events, engine="stack").positions() == [(0, 2)]
        assert_agrees(query, events, "stack")


def test_equal_projections_are_emitted_once():
    """RETURN merges matches that project onto one (C, β) (docs/language.md §4 RETURN, §10.2: one entry per
    distinct (C, β)): the matcher emits it once, with its first match, and in aggressive mode retracts it
    only when its last match is blocked. Found by fuzzing: <0, 1> and <0, 2> both gave x1 = 0 twice."""
    events = [{"type": "A", "ts": 0}, {"type": "A", "ts": 1}, {"type": "A", "ts": 2}]
    query = "PATTERN SEQ(!A x0, A x1, A x2) RETURN x1"
    matcher = cepkit.Matcher(query, engine="stack")
    pushed = [(m.key, m.emitted_at) for e in events for m in matcher.push(e)] + [m.key for m in matcher.close()]
    assert pushed == [(((0,), (("x1", 0),)), 1)]
    assert [(d.key, d.emitted_at) for d in cepkit.match(query, events, engine="stack").deltas] == pushed
    late = [{"type": "A", "ts": 0}, {"type": "B", "ts": 2}, {"type": "B", "ts": 1}, {"type": "C", "ts": 1.5}]
    got = cepkit.match("SEQ(A x1, !C c, B x2) RETURN x1", late, engine="stack", disorder="aggressive")
    assert [(d.sign, d.positions) for d in got.deltas] == [("+", (0,))]  # <0, 2> still holds after C
    assert got.positions() == [(0,)]
