"""The rcep engine against the reference: random Kleene queries with complex predicates ([RCEP] §3.4,
docs/language.md §3) on random streams, every join method, the incremental matcher, sliding windows."""

import pickle

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import assert_agrees, kleene_queries, streams

import cepkit
from cepkit.engines.rcep import RcepPlan
from cepkit.runtime.stream import Stream


@settings(max_examples=250, deadline=None)
@given(kleene_queries(), streams(max_size=12, values=4, ids=2))
def test_random_kleene_queries_agree_with_the_reference(query, events):
    assert_agrees(query, events, "rcep")


@settings(max_examples=80, deadline=None)
@given(kleene_queries(strategies=("STNM",)), streams(max_size=12, values=4, ids=2))
def test_skip_till_next_match_agrees_and_waits_for_the_window(query, events):
    """STNM (Def 6.1, the thesis's STN): blocked matches are dropped at the trigger; with a Kleene last
    variable a match is reported only once its window has passed, or at ``close``."""
    assume("CONSUME" not in query)
    assert_agrees(query, events, "rcep")
    assert _pushed(query, events) == sorted(m.key for m in cepkit.match(query, events, engine="rcep"))


@settings(max_examples=80, deadline=None)
@given(kleene_queries(strategies=("STNM",)), streams(max_size=12, values=4, ids=2))
def test_skip_till_next_match_consumes_like_the_reference(query, events):
    """CONSUME BY under STNM when the last variable is single: every match is final at its trigger, so the
    matches are reported in the reference's order and consume as its do (a Kleene last variable delays
    them: refused, naming the engines that run it)."""
    assume("CONSUME" in query)
    if RcepPlan(cepkit.parse(query)).slots[-1].kleene:
        with pytest.raises(cepkit.QueryError, match="CONSUME BY under STNM with a Kleene last variable"):
            cepkit.match(query, events, engine="rcep")
        return
    assert_agrees(query, events, "rcep")
    assert _pushed(query, events) == sorted(m.key for m in cepkit.match(query, events, engine="rcep"))


def _pushed(query: str, events) -> list:
    """The matches a ``Matcher`` reports, pushed one event at a time (none before its last event), sorted."""
    matcher = cepkit.Matcher(query, engine="rcep")
    reported = []
    for position, event in enumerate(events):
        new = matcher.push(event)
        assert all(m.positions[-1] <= position for m in new)
        reported += [m.key for m in new]
    return sorted(reported + [m.key for m in matcher.close()])


@settings(max_examples=60, deadline=None)
@given(kleene_queries(), streams(max_size=12, values=4, ids=2))
def test_join_methods_give_the_same_matches(query, events):
    """The hybrid join (Algorithm 2), the nested-loop baseline (NLJoin) and the Z-order region join
    (Algorithm 4) differ in work, never in matches."""
    hybrid = cepkit.match(query, events, engine="rcep", join="hybrid")
    nested = cepkit.match(query, events, engine="rcep", join="nested")
    zorder = cepkit.match(query, events, engine="rcep", join="zorder")
    assert [m.key for m in hybrid] == [m.key for m in nested] == [m.key for m in zorder]
    # each bit of the hybrid join is either copied from a dominated successor or tested, at most once
    assert hybrid.info["join_tested"] + hybrid.info["join_reused"] <= nested.info["join_tested"]
    assert nested.info["join_reused"] == 0 and zorder.info["join_reused"] == 0


@settings(max_examples=60, deadline=None)
@given(kleene_queries(), streams(max_size=12, values=4, ids=2))
def test_matcher_reports_at_each_trigger_what_the_batch_finds(query, events):
    """Without STNM nothing waits for later events: each match comes out at the push of its last event."""
    matcher = cepkit.Matcher(query, engine="rcep")
    reported = []
    for position, event in enumerate(events):
        new = matcher.push(event)
        assert all(m.positions[-1] <= position and m.emitted_at == position for m in new)
        reported += [m.key for m in new]
    assert matcher.close() == []
    assert sorted(reported) == sorted(m.key for m in cepkit.match(query, events, engine="rcep"))


@settings(max_examples=25, deadline=None)
@given(kleene_queries(), streams(max_size=10))
def test_plans_pickle_and_rerun_from_scratch(query, events):
    """Spark ships plans and calls ``run`` once per group: a plan keeps no state between runs."""
    _, plan = cepkit.runtime.selection.select_engine(cepkit.parse(query), "rcep", {})
    first = sorted(m.key for m in plan.run(Stream.from_any(events)))
    assert sorted(m.key for m in plan.run(Stream.from_any(events))) == first
    assert sorted(m.key for m in pickle.loads(pickle.dumps(plan)).run(Stream.from_any(events))) == first


@pytest.mark.parametrize("window", ["WITHIN 4 EVENTS", "WITHIN 3 s"])
def test_memory_follows_the_sliding_window(window):
    """[RCEP] §3.7.4: events leave the trees as the window slides (CPU-friendly: hidden, compacted in bulk), so the
    stored events stay within about twice the window however long the stream."""
    query = f"SEQ(A a, B+ b, C c) WHERE a.v < b.v and prev(b.v) < b.v {window}"
    events = [{"type": "ABC"[k % 3], "ts": k, "v": (7 * k) % 10} for k in range(600)]
    found = cepkit.match(query, events, engine="rcep")
    assert found == cepkit.match(query, events, engine="reference")
    assert 0 < found.info["peak_stored"] <= 2 * 4 + 3
    assert found.info["triggers"] == 200


def test_info_reports_what_the_experiments_measure():
    """[RCEP] §3.8: triggers, stored events (per tree), range hits, join work (comparisons made, bits reused by
    dominance), chains grown, matches."""
    query = "SEQ(A a, B+ b, C c) WHERE a.v < b.v and prev(b.v) > b.v and c.v < last(b).v WITHIN 20"
    events = [
        {"type": t, "ts": k, "v": v}
        for k, (t, v) in enumerate(
            [("A", 1), ("B", 9), ("B", 8), ("A", 2), ("B", 7), ("B", 5), ("C", 3), ("B", 4), ("C", 1)]
        )
    ]
    found = cepkit.match(query, events, engine="rcep")
    info = found.info
    assert found == cepkit.match(query, events, engine="reference")
    assert info["triggers"] == 2 and info["matches"] == len(found)
    assert info["tree_peaks"] == {"a": 2, "b": 5, "c": 1}
    assert info["join_tested"] > 0 and info["chains"] > 0
    # the batch kernel reads the columns of one word of candidates lazily; past 64, Algorithm 2 reuses bits
    many = [{"type": "A", "ts": k, "v": k} for k in range(100)] + [{"type": "B", "ts": 100, "v": 1000}]
    found = cepkit.match("SEQ(A a, B b) WHERE a.v < b.v WITHIN 1000", many, engine="rcep")
    assert len(found) == 100 and found.info["join_reused"] > 0


def test_residual_and_per_event_conditions():
    """Conditions no join expresses are checked on each enumerated match (predicates that depend on the chosen subset): an
    aggregate, ``or`` over a Kleene variable (all above or all below), a correlated ``or`` inside the
    iteration (per event)."""
    events = [
        {"type": t, "ts": k, "v": v, "id": i}
        for k, (t, v, i) in enumerate([("A", 3, 0), ("B", 5, 1), ("B", 1, 0), ("B", 6, 1), ("C", 0, 0)])
    ]
    for query in [
        "SEQ(A a, B+ b, C c) WHERE sum(b.v) > 6 and avg(b.v) < 5",
        "SEQ(A a, B+ b, C c) WHERE b.v > 4 or b.v < 2",
        "SEQ(A a, (B b FILTER b.v > a.v or b.id = 0)+, C c)",
    ]:
        found = cepkit.match(query, events, engine="rcep")
        assert len(found) and found == cepkit.match(query, events, engine="reference"), query


def test_plan_ignores_punctuation_and_uses_hierarchy_and_any():
    hierarchy = {"X": ["A", "C"]}
    events = [{"type": t, "ts": k, "v": k} for k, t in enumerate("ABPCAB")]
    events[2] = {"type": "PUNCTUATION", "ts": 2, "of": "A"}
    for query in ["X+ x ; B b", "A a ; ANY+ y ; B b WITHIN 3 EVENTS"]:
        found = cepkit.match(query, events, engine="rcep", hierarchy=hierarchy)
        assert found == cepkit.match(query, events, engine="reference", hierarchy=hierarchy), query
    assert isinstance(RcepPlan(cepkit.parse("A+ a")).info(), dict)


@given(st.lists(st.integers(0, 3), min_size=1, max_size=30))
@settings(max_examples=30, deadline=None)
def test_equal_timestamps_are_ordered_by_position(values):
    """docs/language.md §10.1: sequence uses (ts, position); a burst of equal ts is still a sequence."""
    events = [{"type": "AB"[v % 2], "ts": k // 4, "v": v} for k, v in enumerate(values)]
    assert_agrees("SEQ(A a, B+ b) WHERE prev(b.v) <= b.v and a.v <= first(b).v WITHIN 2", events, "rcep")


NESTED = [
    "(A a ; B+ b FILTER count(b) > 1) ; C c WITHIN 8",
    "((A a ; B b) FILTER a.v < b.v) ; C+ c WITHIN 6",
    "SEQ(SEQ(A a, B+ b, a.v < b.v), C c) WITHIN 6",
    "(A+ a FILTER a.v > 1 or a.v < 1) ; B b WITHIN 5",
]


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(NESTED), streams(max_size=14, values=4, ids=2))
def test_nested_sequences_and_filters_flatten(query, events):
    """A SEQ inside a SEQ is the same sequence, and a FILTER around a sub-sequence or a whole iteration is a
    condition on the match (an ``or`` there stays "all or all", docs/language.md §10.6)."""
    assert_agrees(query, events, "rcep")


@settings(max_examples=120, deadline=None)
@given(kleene_queries(strategies=("ROBUST_STNM",)), streams(max_size=12, values=4, ids=2))
def test_robust_skip_till_next_match_agrees_and_waits_for_the_window(query, events):
    """ROBUST_STNM ([SES] Def 6.2) on the recomputed ALL matches: the reference's matches, and the ses
    engine's where it runs the query; a match is reported once its window has passed, or at ``close``."""
    assume("CONSUME" not in query)
    assert_agrees(query, events, "rcep")
    found = sorted(m.key for m in cepkit.match(query, events, engine="rcep"))
    try:
        ses = sorted(m.key for m in cepkit.match(query, events, engine="ses"))
    except cepkit.QueryError:
        ses = found  # outside the ses fragment (aggregates, first/last, ...)
    assert found == ses
    assert _pushed(query, events) == found
