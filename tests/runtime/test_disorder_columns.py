"""K-slack and conservative as columns (``cepkit.runtime.disorder.released_run``): a batch run computes the
release order, the dropped events and each match's emission point over the whole arrival sequence, runs the
engine once over the released events, and gives what feeding the layer event by event gives: the same
matches, ``sign`` and ``emitted_at`` in ``deltas``, the same ``info`` (dropped positions, peak_state,
emissions). Random queries of each engine's fragment on random disorder: late shares, delays, punctuations
(of a type, of ``"*"``), per-type bounds, ties in ts; and the reference on the in-order stream without the
dropped events (docs/language.md §6)."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.lang import ast as A
from cepkit.lang.printer import pretty
from cepkit.runtime import Stream
from cepkit.runtime.disorder import layered, numbered_in_arrival_order, release_schedule, replay
from cepkit.runtime.registry import get_engine
from cepkit.runtime.selection import select_engine
from strategies import (
    cel_queries,
    flat_seq_queries,
    kleene_queries,
    nested_queries,
    reference_without,
    set_query_variants,
    shuffled_arrivals,
    streams,
)

ENGINE_QUERIES = {
    "automaton": cel_queries(max_depth=2),
    "rcep": kleene_queries(max_len=2),
    "ses": set_query_variants(max_sets=2, max_set_size=2),
    "nested": nested_queries(max_depth=2),
    "ecube": st.sampled_from(
        [
            "SEQ(A a, B b) WITHIN 3",
            "SEQ(A a, !C c, B b) WITHIN 4",
            "SEQ(A a, B b, !C c) WITHIN 3",
            "SEQ(A a, B b) WITHIN 2 EVENTS",
            "SEQ(A a, B b) WHERE a.id = b.id",
        ]
    ),
    "stack": st.sampled_from(  # what its own modes refuse runs behind the layer
        [
            "SEQ(A a, B b, C c) WITHIN 3 EVENTS",
            "SELECT STRICT * PATTERN SEQ(A a, B b)",
            "SEQ(A a, B b, !C c) WITHIN 3 EVENTS",
            "SELECT STNM * PATTERN SEQ(A a, B b, C c) WITHIN 4",
        ]
    ),
}


@st.composite
def arrivals(draw):
    """Disordered arrivals (ties in ts, any delay or a bounded one) with punctuations among them."""
    events = draw(streams(min_size=0, max_size=10))
    arrived = shuffled_arrivals(events, draw, draw(st.sampled_from([1, 3, None])))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(arrived)))
        of = draw(st.sampled_from(["A", "B", "C", "D", "*"]))
        arrived.insert(at, {"type": "PUNCTUATION", "ts": draw(st.integers(0, 12)), "of": of})
    return arrived


@st.composite
def mode_options(draw):
    if draw(st.booleans()):
        return "kslack", {"k": draw(st.sampled_from([0, 0.5, 1, 2, 4, 100]))}
    bound = st.sampled_from([0, 1, 2, 5])
    max_delay = draw(
        st.one_of(
            st.none(),
            bound,
            st.dictionaries(st.sampled_from(["A", "B", "C", "D", "*"]), bound, min_size=1, max_size=3),
        )
    )
    return "conservative", {} if max_delay is None else {"max_delay": max_delay}


@st.composite
def own_modes(draw):
    """A mode of the stack's own with its options: K-slack, or conservative or aggressive with or without
    ``max_delay`` (one bound or one per type)."""
    mode, options = draw(mode_options())
    if mode == "conservative" and draw(st.booleans()):
        return "aggressive", options
    return mode, options


def runs(query, engine, mode, options) -> bool:
    try:
        select_engine(cepkit.parse(query), engine, {"disorder": mode, **options})
    except cepkit.QueryError:
        return False
    return True


def emissions(deltas) -> list:
    return sorted((d.key, d.sign, d.emitted_at) for d in deltas)


def by_both_paths(query, arrived, engine, mode, options):
    """(the batch run, the layer fed event by event) over the same plan and stream."""
    plan = layered(get_engine(engine), cepkit.parse(query), mode, {"disorder": mode, **options})
    stream = Stream.from_any(arrived)
    found = cepkit.runtime.Matches(plan.run(stream), engine, plan.query, deltas=plan.deltas(), info=plan.info())
    pushed = replay(plan.matcher(), stream)
    expected = cepkit.runtime.Matches(pushed.net(), engine, plan.query, deltas=list(pushed.emissions))
    return found, expected, pushed.info()


@pytest.mark.parametrize("engine", sorted(ENGINE_QUERIES))
def test_the_batch_run_gives_what_the_layer_fed_event_by_event_gives(engine):
    @settings(max_examples=40, deadline=None)
    @given(ENGINE_QUERIES[engine], arrivals(), own_modes())
    def check(query, arrived, mode):
        mode, options = mode
        if mode == "aggressive":  # a time window bounds its stretch
            query = pretty(dataclasses.replace(cepkit.parse(query).ast, within=A.Window(4), consume=None))
        if not runs(query, engine, mode, options):
            return
        found, expected, facts = by_both_paths(query, arrived, engine, mode, options)
        assert sorted(m.key for m in found) == sorted(m.key for m in expected), (query, arrived, options)
        assert emissions(found.deltas) == emissions(expected.deltas), (query, arrived, options)
        at = [d.emitted_at for d in found.deltas]
        assert at == sorted(at)  # the log is in emission order
        for key in ("peak_state", "emissions", "dropped"):
            assert found.info[key] == facts[key], (key, query, arrived, options)
        assert sorted(m.key for m in found) == reference_without(query, arrived, set(found.info["dropped"]))

    check()


def test_common_queries_run_as_columns():
    """The batch run is the one taken where it can tell every emission; RETURN and LIMIT go event by event."""
    arrived = [{"type": t, "ts": ts} for t, ts in [("A", 1), ("B", 3), ("A", 2), ("C", 9), ("B", 4), ("B", 1)]]
    for engine, query in [
        ("automaton", "SEQ(A a, B+ b) WITHIN 5"),
        ("rcep", "SEQ(A a, B b) WITHIN 5"),
        ("ses", "SEQ({A a}, {B b}) WITHIN 5"),
        ("nested", "SEQ(A a, B b) WITHIN 5"),
        ("stack", "SEQ(A a, B b) WITHIN 5 EVENTS"),
        ("stack", "SEQ(A a, B b, !C c) WITHIN 5 EVENTS"),
    ]:
        for options in ({"disorder": "kslack", "k": 2}, {"disorder": "conservative", "max_delay": 2}):
            found = cepkit.match(query, arrived, engine=engine, **options)
            assert found.info["layer_run"] == "columns", (engine, query, options)
            assert found.info["dropped"] == [5]
    for query in ("SEQ(A a, B b) WITHIN 5 RETURN a", "SEQ(A a, B b) WITHIN 5 LIMIT 1"):
        found = cepkit.match(query, arrived, engine="automaton", disorder="kslack", k=2)
        assert found.info["layer_run"] == "events"


def test_release_points_by_hand():
    """K-slack with k=1: arrivals ts 1, 3, 2, 5, 0; the clock 1, 3, 3, 5, 5. ts 1 goes once the clock passes
    2 (arrival 1), ts 2 and 3 once it passes 4 (arrival 3), ts 5 at close; ts 0 arrives after ts 2 went:
    dropped. The buffer peaks at 3 (ts 2, 3, 5 before arrival 3's release)."""
    arrived = [{"type": "A", "ts": t} for t in (1, 3, 2, 5, 0)]
    released, release_at, dropped, peak = release_schedule(Stream.from_any(arrived), "kslack", 1)
    assert released.tolist() == [0, 2, 1, 3] and release_at.tolist() == [1, 3, 3, 5]
    assert dropped.tolist() == [4] and peak == 3
    found = cepkit.match("SEQ(A a, A b) WITHIN 9", arrived, engine="automaton", disorder="kslack", k=1)
    assert [(d.positions, d.emitted_at) for d in found.deltas] == [
        ((0, 2), 3),
        ((0, 1), 3),
        ((1, 2), 3),
        ((0, 3), 4),
        ((2, 3), 4),
        ((1, 3), 4),
    ]


def test_a_dataframe_in_disorder_as_a_user_gives_it():
    """``cepkit.match`` on a DataFrame, then ``positions()`` and ``deltas``, K-slack and conservative."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"type": ["A", "B", "A", "B", "B"], "ts": [1.0, 4.0, 2.0, 3.0, 6.0], "id": [1, 1, 2, 2, 1]})
    query = "SEQ(A a, B b) WITHIN 3 PARTITION BY id"  # engine="auto" takes the automaton
    for options in ({"disorder": "kslack", "k": 2}, {"disorder": "conservative", "max_delay": {"A": 1, "B": 2}}):
        found = cepkit.match(query, frame, **options)
        assert found.info["layer_run"] == "columns"
        assert found.positions() == [(0, 1), (2, 3)]
        assert {d.positions: d.emitted_at for d in found.deltas} == {(2, 3): 4, (0, 1): 4}


@settings(max_examples=80, deadline=None)
@given(flat_seq_queries(exists=True), arrivals(), own_modes())
def test_the_stacks_own_modes_as_columns_give_what_its_matchers_give(query, arrived, mode):
    """The stack's own modes (``StackPlan.run``). K-slack: its in-order columnar run over the released
    events, the emissions (a trailing scope's wait included) mapped to the arrivals that released them.
    Conservative and aggressive without negation, EXISTS or RETURN: the in-order run over the events
    kept, each match emitted at its last event to arrive."""
    mode, options = mode
    q = cepkit.parse(query)
    if not runs(query, "stack", mode, options) or not get_engine("stack").runs_disorder(q, mode):
        return
    plan = get_engine("stack").compile(q, disorder=mode, **options)
    stream = Stream.from_any(arrived)
    found = cepkit.runtime.Matches(plan.run(stream), "stack", plan.query, deltas=plan.deltas(), info=plan.info())
    columnar = mode == "kslack" or not ("negation" in q.features or "exists" in q.features)
    assert (found.info.get("run") == "columnar") == (columnar and numbered_in_arrival_order(stream))
    pushed = replay(plan.matcher(), stream)
    expected = cepkit.runtime.Matches(pushed.net(), "stack", plan.query, deltas=list(pushed.emissions))
    assert sorted(m.key for m in found) == sorted(m.key for m in expected), (query, arrived, mode, options)
    assert emissions(found.deltas) == emissions(expected.deltas), (query, arrived, mode, options)
    assert found.info["dropped"] == pushed.info()["dropped"]
    assert sorted(m.key for m in found) == reference_without(query, arrived, set(found.info["dropped"]))
