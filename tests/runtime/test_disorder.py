"""The out-of-order layer (``cepkit.runtime.disorder``, issue 14): every engine's in-order matcher behind
K-slack and conservative reorder buffers, and aggressive re-evaluation of the stretch a late event
touches. Random queries of each engine's own fragment (tests/strategies.py) on random disordered streams:
the net result is the reference's over the arrivals (docs/language.md §6). The conformance suite
(tests/engines/test_conformance.py) runs every engine x mode on one query per feature."""

import dataclasses
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.lang import ast as A
from cepkit.lang.printer import pretty
from cepkit.runtime.selection import select_engine
from cepkit.semantics import evaluate
from strategies import (
    dropped_by_kslack,
    reference_without,
    cel_queries,
    kleene_queries,
    nested_queries,
    set_query_variants,
    shuffled_arrivals,
    streams,
)


def time_windowed(draw_query):
    """A drawn query with a time window of 1-6 and no CONSUME BY (aggressive needs a bounded stretch)."""

    @st.composite
    def build(draw):
        ast = cepkit.parse(draw(draw_query)).ast
        return pretty(dataclasses.replace(ast, within=A.Window(draw(st.integers(1, 6))), consume=None))

    return build()


ENGINE_QUERIES = {
    "automaton": time_windowed(cel_queries(max_depth=2)),
    "rcep": time_windowed(kleene_queries(max_len=2)),
    "ses": time_windowed(set_query_variants(max_sets=2, max_set_size=2)),
    "nested": time_windowed(nested_queries(max_depth=2)),
}


@st.composite
def arrivals(draw):
    events = draw(streams(min_size=3, max_size=9))
    return shuffled_arrivals(events, draw, draw(st.sampled_from([1, 3, None])))


def keys(matches):
    return sorted(m.key for m in matches)


def runs(query, engine, **options) -> bool:
    try:
        select_engine(cepkit.parse(query), engine, options)
    except cepkit.QueryError:
        return False
    return True


@pytest.mark.parametrize("engine", sorted(ENGINE_QUERIES))
def test_every_mode_converges_on_random_queries_of_the_engines_fragment(engine):
    @settings(max_examples=15, deadline=None)
    @given(ENGINE_QUERIES[engine], arrivals())
    def check(query, arrived):
        if not runs(query, engine, disorder="aggressive"):
            return
        expected = reference_without(query, arrived)
        for options in ({"disorder": "aggressive"}, {"disorder": "conservative"}, {"disorder": "kslack", "k": 100}):
            found = cepkit.match(query, arrived, engine=engine, **options)
            assert keys(found) == expected, (options, query, arrived)
        # an emission never precedes the arrival of its events; retractions withdraw live matches
        live = set()
        for d in found.deltas:
            assert d.emitted_at >= max(d.positions)
            (live.add if d.sign == "+" else live.remove)(d.key)
        assert sorted(live) == expected

    check()


KLEENE_MAX = "SELECT MAX * PATTERN SEQ(A a, B+ b, C c) WITHIN 10"


@pytest.mark.parametrize("engine", ["automaton", "rcep"])
def test_a_late_kleene_event_retracts_the_shorter_match(engine):
    """MAX keeps the longest iteration: b@3 arriving after c@5 makes <a1, b2, c5> give way to <a1, b2, b3, c5>."""
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 2}, {"type": "C", "ts": 5}, {"type": "B", "ts": 3}]
    found = cepkit.match(KLEENE_MAX, events, engine=engine, disorder="aggressive")
    assert [(d.sign, d.positions, d.emitted_at) for d in found.deltas] == [
        ("+", (0, 1, 2), 2),
        ("-", (0, 1, 2), 3),
        ("+", (0, 1, 2, 3), 3),
    ]
    assert found.positions() == [(0, 1, 2, 3)] and found[0].bindings["b"] == (1, 3)
    assert found.info["replays"] == 1 and found.info["replayed"] == 4


def test_the_matcher_pushes_retractions_and_keeps_the_net_result():
    matcher = cepkit.Matcher(KLEENE_MAX, engine="automaton", disorder="aggressive")
    pushed = [
        [(m.sign, m.positions) for m in matcher.push(e)]
        for e in [{"type": "A", "ts": 1}, {"type": "B", "ts": 2}, {"type": "C", "ts": 5}, {"type": "B", "ts": 3}]
    ]
    assert pushed == [[], [], [("+", (0, 1, 2))], [("-", (0, 1, 2)), ("+", (0, 1, 2, 3))]]
    assert matcher.close() == [] and [m.positions for m in matcher.result()] == [(0, 1, 2, 3)]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(
        ["SEQ(A a, B+ b, C c) WITHIN 6", "SEQ({A a, B+ b}, {C c}) WITHIN 6", "SEQ(A a, !SEQ(B b, C c), A d) WITHIN 6"]
    ),
    arrivals(),
    st.integers(0, 3),
)
def test_kslack_loses_exactly_the_events_it_cannot_place(query, arrived, k):
    engine = "nested" if "!" in query else "ses" if "{" in query else "automaton"
    found = cepkit.match(query, arrived, engine=engine, disorder="kslack", k=k)
    assert found.info["dropped"] == dropped_by_kslack(arrived, k)
    assert keys(found) == reference_without(query, arrived, set(found.info["dropped"]))
    dropped = found.dropped  # the same events as data: their rows, with the reason
    assert list(dropped["position"]) == found.info["dropped"]
    assert [(r["type"], r["ts"]) for r in dropped.to_dict("records")] == [
        (arrived[p]["type"], arrived[p]["ts"]) for p in found.info["dropped"]
    ]
    assert set(dropped["reason"]) <= {"arrived after a later event had been released: more than k late"}


@pytest.mark.parametrize(
    "engine, mode, options, reason",
    [
        ("automaton", "kslack", {"k": 2}, "more than k late"),
        ("stack", "kslack", {"k": 2}, "more than k late"),
        ("automaton", "conservative", {"max_delay": 2}, "broke its max_delay bound"),
        ("stack", "conservative", {"max_delay": 2}, "broke its max_delay bound"),
        ("stack", "aggressive", {"max_delay": 2}, "the stretch of stream it could change was forgotten"),
    ],
)
def test_dropped_events_come_back_as_rows_with_the_reason(engine, mode, options, reason):
    """``Matches.dropped``: the B at ts 1 arrives after ts 10 (8 late, the bound is 2); it is dropped, and
    comes back as its row (attributes included) with why; the matches are those of the stream without it."""
    arrived = [
        {"type": t, "ts": ts, "v": i}
        for i, (t, ts) in enumerate([("A", 0), ("B", 5), ("A", 10), ("B", 1), ("B", 11), ("A", 12), ("B", 13)])
    ]
    found = cepkit.match("SEQ(A a, B b) WITHIN 3", arrived, engine=engine, disorder=mode, **options)
    assert found.positions() == [(2, 4), (2, 6), (5, 6)]
    dropped = found.dropped
    assert list(dropped.columns) == ["position", "type", "ts", "v", "reason"]
    assert dropped.drop(columns="reason").to_dict("records") == [{"position": 3, "type": "B", "ts": 1, "v": 3}]
    assert reason in dropped["reason"].iat[0]
    in_order = cepkit.match("SEQ(A a, B b) WITHIN 3", sorted(arrived, key=lambda e: e["ts"]), engine="reference")
    assert cepkit.match(
        "SEQ(A a, B b) WITHIN 3", arrived[:3] + arrived[4:], engine=engine, disorder=mode, **options
    ).dropped.empty
    assert len(in_order) == 4  # (0, 3) is found in order: the dropped B is what loses it
    assert cepkit.match(
        "SEQ(A a, B b) WITHIN 3", sorted(arrived, key=lambda e: e["ts"]), engine=engine
    ).dropped.empty  # in order: nothing to drop


def test_conservative_waits_for_the_types_the_query_reads():
    """Per-type bounds: D may arrive 100 late but the query never reads D, so at D@3 the bounds of A and B (1)
    release the match (one bound of 100 for every type waits for the end); a punctuation on C completes C
    without any bound."""
    query = "SEQ(A a, B b) WITHIN 5"
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 2}, {"type": "D", "ts": 3}, {"type": "A", "ts": 4}]
    found = cepkit.match(
        query, events, engine="automaton", disorder="conservative", max_delay={"A": 1, "B": 1, "D": 100}
    )
    assert [(d.positions, d.emitted_at) for d in found.deltas] == [((0, 1), 2)]
    found = cepkit.match(query, events, engine="automaton", disorder="conservative", max_delay=100)
    assert [(d.positions, d.emitted_at) for d in found.deltas] == [((0, 1), 3)]
    query = "SEQ(A a, B b, C c) WITHIN 5"
    events = [
        {"type": "A", "ts": 1},
        {"type": "B", "ts": 2},
        {"type": "C", "ts": 3},
        {"type": "PUNCTUATION", "of": "C", "ts": 3},
        {"type": "B", "ts": 6},
    ]
    found = cepkit.match(query, events, engine="rcep", disorder="conservative", max_delay={"A": 0, "B": 0})
    assert [(d.positions, d.emitted_at) for d in found.deltas] == [((0, 1, 2), 3)]  # at the punctuation
    with pytest.raises(cepkit.EventError, match="'of'"):
        cepkit.match(query, [{"type": "PUNCTUATION", "ts": 1}], engine="rcep", disorder="conservative")


def test_positional_semantics_read_logical_order():
    """Behind the buffers the engine sees the stream in (ts, position) order: STRICT contiguity and EVENTS
    windows count logical neighbours, reported with arrival positions."""
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 3}, {"type": "C", "ts": 2}, {"type": "B", "ts": 4}]
    for query in ("SELECT STRICT * PATTERN SEQ(A a, C c, B b)", "SEQ(A a, B b) WITHIN 2 EVENTS"):
        expected = [m.positions for m in evaluate(query, events)]
        for engine in ("automaton", "rcep", "stack"):
            if runs(query, engine, disorder="kslack", k=5):
                assert cepkit.match(query, events, engine=engine, disorder="kslack", k=5).positions() == expected


def test_layered_plans_pickle_and_check_their_options():
    query = cepkit.parse("SEQ(A a, B+ b) WITHIN 5 RETURN a")
    _, plan = select_engine(query, "rcep", {"disorder": "aggressive", "max_delay": "2 s", "join": "nested"})
    clone = pickle.loads(pickle.dumps(plan))
    events = cepkit.runtime.Stream.from_any([{"type": "A", "ts": 1}, {"type": "B", "ts": 3}, {"type": "B", "ts": 2}])
    assert keys(clone.run(events)) == keys(plan.run(events)) == [((0,), (("a", 0),))]
    assert clone.info()["join"] == "nested" and clone.max_delay == 2.0
    with pytest.raises(TypeError, match="needs k="):
        cepkit.match("A a", [], engine="ses", disorder="kslack")
    with pytest.raises(TypeError, match="max_delay= is an option"):
        cepkit.match("A a", [], engine="ses", disorder="kslack", k=1, max_delay=1)
    with pytest.raises(TypeError, match="does not take option"):
        cepkit.match("A a", [], engine="automaton", disorder="kslack", k=1, delay=1)


def test_aggressive_refuses_what_it_cannot_bound():
    events = [{"type": "A", "ts": 1}]
    with pytest.raises(cepkit.QueryError, match="CONSUME BY") as err:
        cepkit.match("SEQ(A a, B b) WITHIN 5 CONSUME BY ANY", events, engine="automaton", disorder="aggressive")
    assert "^" in str(err.value)
    with pytest.raises(cepkit.QueryError, match="time window") as err:
        cepkit.match("SEQ(A a, B b) WITHIN 3 EVENTS", events, engine="rcep", disorder="aggressive")
    assert err.value.column == 15
    # auto takes the stack's own compensation, which needs no window
    assert cepkit.match("SEQ(A a, B b)", events, disorder="aggressive").engine == "stack"


def test_ecube_in_every_mode():
    hierarchy = {"X": ["A", "C"]}
    events = [{"type": "B", "ts": 3}, {"type": "A", "ts": 1}, {"type": "C", "ts": 2}, {"type": "B", "ts": 4}]
    expected = [m.positions for m in evaluate("SEQ(X x, B b) WITHIN 5", events, hierarchy=hierarchy)]
    for options in ({"disorder": "kslack", "k": 3}, {"disorder": "conservative"}, {"disorder": "aggressive"}):
        found = cepkit.match("SEQ(X x, B b) WITHIN 5", events, engine="ecube", hierarchy=hierarchy, **options)
        assert found.positions() == expected
        assert all(d.sign == "+" and d.emitted_at >= max(d.positions) for d in found.deltas)


def test_ecube_keeps_every_rank_over_a_long_stream():
    """The layer keeps the ranks a match ecube reports may name, over a stream past two windows and 64 events
    (a RuntimeError once, when ecube answered at close)."""
    hierarchy = {"X": ["A", "C"]}
    events = [{"type": "ABC"[i % 3], "ts": i * 0.5} for i in range(400)]
    arrivals = events[1:] + events[:1]  # the first event arrives last, 200 s late
    query = "SEQ(X x, B b) WITHIN 2"
    expected = sorted(
        tuple(sorted(events[p]["ts"] for p in m.positions)) for m in evaluate(query, events, hierarchy=hierarchy)
    )
    for options in (
        {"disorder": "kslack", "k": 400},
        {"disorder": "conservative", "max_delay": 400},
        {"disorder": "aggressive", "max_delay": 400},
    ):
        found = cepkit.match(query, arrivals, engine="ecube", hierarchy=hierarchy, **options)
        assert sorted(tuple(sorted(arrivals[p]["ts"] for p in ps)) for ps in found.positions()) == expected
