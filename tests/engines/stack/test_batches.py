"""The in-order stack matcher's micro-batches as columns (issue 11, ``cepkit/engines/stack/tail.py``): a
batch through ``Matcher.extend`` returns exactly what pushing its rows one by one returns (the matches,
their order, ``emitted_at``), ``close`` too, with pushes and batches mixed in any order; the kept result is
``cepkit.match``'s and the reference's; the events kept between batches stay within the window."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.engines.stack.tail import refusal
from cepkit.lang import ast as A
from cepkit.lang.parser import parse_tree
from cepkit.lang.printer import pretty
from cepkit.runtime.stream import Stream
from cepkit.runtime.match_list import MatchList
from strategies import flat_seq_queries, streams

STRATEGIES = ("ALL", "STRICT", "PARTITION_STRICT", "STNM")


@st.composite
def windowed_queries(draw):
    """``flat_seq_queries`` whose batches run as columns: a window always (of either kind), and half of them
    with a trailing negation or EXISTS added (what waits across batches)."""
    query = parse_tree(draw(flat_seq_queries(max_len=3, strategies=STRATEGIES, exists=True)))
    within = query.within or A.Window(draw(st.integers(1, 8)), draw(st.sampled_from([None, "EVENTS"])))
    items = query.pattern.items
    if not isinstance(items[-1], (A.Not, A.Exists)) and draw(st.booleans()):
        guard = draw(st.sampled_from([A.Not, A.Exists]))
        items += (guard(A.Atom(draw(st.sampled_from("ABCD")), "t")),)
    return pretty(replace(query, pattern=A.Seq(items), within=within))


@st.composite
def rows_and_plan(draw, max_size=40):
    """In-order rows (ties in ts; now and then no ``v`` or ``id``: nulls) and how they are fed: segments
    (cut points, repeats: empty batches), each pushed row by row or extended as one batch, now and then
    followed by a ``close`` (and more events after it)."""
    rows = draw(streams(types=("A", "B", "C", "D"), max_size=max_size, null_one_in=10))
    n = len(rows)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    bounds = [0, *cuts, n]
    ways = draw(
        st.lists(
            st.sampled_from(["extend"] * 4 + ["push"] * 2 + ["extend close", "push close"]),
            min_size=len(bounds) - 1,
            max_size=len(bounds) - 1,
        )
    )
    return rows, list(zip(bounds[:-1], bounds[1:], ways))


SCHEMA = pd.DataFrame({"type": list("ABCD"), "ts": 0, "v": 0, "id": 0})  # every type has v and id: no data check fails


def frame(rows: list) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["type", "ts", "v", "id"]) if rows else pd.DataFrame({"type": [], "ts": []})


def pushed(query, rows, plan=()):
    """What each push (and each close ``plan`` asks for, and the last one) returned, in order, and the
    matcher."""
    matcher = cepkit.Matcher(query, engine="stack", schema=SCHEMA)
    closes = [stop for _, stop, way in plan if way.endswith("close")]
    found = []
    for i, row in enumerate(rows):
        found += [m for _ in range(closes.count(i)) for m in matcher.close()]
        found += matcher.push({k: v for k, v in row.items() if v is not None})
    found += [m for _ in range(closes.count(len(rows))) for m in matcher.close()]
    return found + matcher.close(), matcher


def fed(query, rows, plan):
    """The same rows fed as ``plan`` says (segments pushed or extended, a close after some), then close."""
    matcher = cepkit.Matcher(query, engine="stack", schema=SCHEMA)
    found = []
    for start, stop, way in plan:
        if way.startswith("push"):
            found += [
                m for row in rows[start:stop] for m in matcher.push({k: v for k, v in row.items() if v is not None})
            ]
        else:
            got = matcher.extend(frame(rows[start:stop]))
            assert isinstance(got, (list, MatchList))
            found += got
        if way.endswith("close"):
            found += matcher.close()
    return found + matcher.close(), matcher


def outcome(found) -> list:
    return [(m.key, m.sign, m.emitted_at) for m in found]


def assert_fed_as_pushed(query, rows, plan):
    expected, by_push = pushed(query, rows, plan)
    got, by_plan = fed(query, rows, plan)
    assert outcome(got) == outcome(expected), (query, rows, plan)
    assert outcome(by_plan.deltas) == outcome(by_push.deltas)
    assert by_plan.result() == by_push.result()
    return expected


@settings(max_examples=300, deadline=None)
@given(flat_seq_queries(max_len=4, strategies=STRATEGIES, exists=True), rows_and_plan())
def test_batches_and_pushes_in_any_order_give_what_pushes_give(query, data):
    """Negations and EXISTS (leading, middle, trailing), joins, PARTITION BY, windows of both kinds, every
    strategy; random streams with ties and nulls; batches empty, of one row, one batch, pushes between."""
    rows, plan = data
    assert_fed_as_pushed(query, rows, plan)


@settings(max_examples=300, deadline=None)
@given(windowed_queries(), rows_and_plan())
def test_batches_of_windowed_queries_give_what_pushes_give(query, data):
    """The same on queries that all take their batches as columns, half of them waiting for a trailing item."""
    rows, plan = data
    assert refusal(cepkit.Matcher(query, engine="stack")._plan.program) is None
    assert_fed_as_pushed(query, rows, plan)


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(flat_seq_queries(max_len=3, strategies=STRATEGIES, exists=True), windowed_queries()),
    rows_and_plan(max_size=30),
)
def test_the_kept_result_is_match_and_the_reference(query, data):
    rows, plan = data
    rows = [{k: v for k, v in r.items() if v is not None} for r in rows]
    try:
        expected = cepkit.match(query, rows, engine="stack")
    except cepkit.QueryError:  # an attribute no event of its type has: the data check (the batches have SCHEMA)
        return
    _, matcher = fed(query, rows, [(a, b, "extend") for a, b, _ in plan])  # (no close before the end)
    assert matcher.result() == expected
    assert (
        matcher.result().positions()
        == expected.positions()
        == cepkit.match(query, rows, engine="reference").positions()
    )


QUERIES = {  # query -> whether its batches run as columns
    "SEQ(A a, !C c, B b) WITHIN 10 s": True,
    "SEQ(A a, B b, !C c) WITHIN 4 s PARTITION BY id": True,
    "SEQ(!D d, A a, B b, !C c) WITHIN 5 s": True,
    "SEQ(A a, B b, EXISTS C c) WHERE a.v = b.v WITHIN 6 s": True,
    "SEQ(!C c, A a, B b, !D d) WITHIN 6 EVENTS": True,
    "SELECT STRICT * PATTERN SEQ(A a, B b, !C c) WITHIN 8 s PARTITION BY id": True,
    "SEQ(!C c, A a, B b, !D d) WITHIN 5 EVENTS PARTITION BY id": True,
    "SEQ(A a, !C c, B b)": False,
    "PATTERN SEQ(A a, B b, !C c) WITHIN 5 s RETURN a": False,
}


@pytest.mark.parametrize("query", sorted(QUERIES))
def test_a_long_stream_in_batches_keeps_a_bounded_tail(query):
    """5,000 events in uneven batches with pushes between: the result is the pushes', the batches come
    back as columns where the query allows it (``tail.refusal`` says where not), and the events kept
    between batches never outgrow the window's reach (twice the window, or 2(n - 1) events per key)."""
    rng = np.random.default_rng(11)
    n = 5000
    rows = pd.DataFrame(
        {
            "type": rng.choice(list("ABCD"), n),
            "ts": np.cumsum(rng.integers(0, 3, n)),
            "v": rng.integers(0, 4, n),
            "id": rng.integers(0, 3, n),
        }
    ).to_dict("records")
    cuts = np.sort(rng.choice(n, 60, replace=False)).tolist()
    bounds = [0, *cuts, n]
    plan = [(a, b, "push" if k % 7 == 3 else "extend") for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]
    assert assert_fed_as_pushed(query, rows, plan)
    matcher = cepkit.Matcher(query, engine="stack")
    program = matcher._plan.program
    assert (refusal(program) is None) == QUERIES[query]
    most = 0
    for start, stop, _ in plan:
        got = matcher.extend(frame(rows[start:stop]))
        if QUERIES[query] and stop > start:
            assert isinstance(got, MatchList) or got == []
            tail = matcher._inc._tail.stream
            most = max(most, len(tail))
            assert matcher._inc.info()["state"] == len(tail)  # the stacks are let go; the tail is the state
            if program.window_time is not None:  # ts 0-2 apart: at most 2w + 1 seconds' worth of events
                assert tail.times[0] >= tail.times[-1] - 2 * program.window_time - 1e-6
            else:
                keys = len(set(tail.column("id").values.tolist())) if program.partition_by else 1
                assert len(tail) <= 2 * (program.window_events - 1) * keys
        elif not QUERIES[query]:
            assert matcher._inc._tail is None and isinstance(got, list)
    assert most <= (2 * 10 + 1) * 3 if QUERIES[query] else most == 0


def test_push_after_a_batch_rebuilds_the_stacks_from_the_tail():
    """A match waiting for its trailing scope across a batch and a push: released by the push, once."""
    query = "SEQ(A a, B b, !C c) WITHIN 5 s"
    matcher = cepkit.Matcher(query, engine="stack")
    assert matcher.extend(frame([{"type": "A", "ts": 0}, {"type": "B", "ts": 1}, {"type": "A", "ts": 4}])) == []
    assert [m.positions for m in matcher.push({"type": "B", "ts": 5})] == []
    released = matcher.push({"type": "D", "ts": 6})
    assert [(m.positions, m.emitted_at) for m in released] == [((0, 1), 4), ((0, 3), 4)]
    got = matcher.extend(frame([{"type": "D", "ts": 10}]))
    assert [(m.positions, m.emitted_at) for m in got] == [((2, 3), 5)]
    assert matcher.close() == []


def test_close_after_a_batch_releases_what_still_waits():
    matcher = cepkit.Matcher("SEQ(A a, B b, !C c) WITHIN 5 s", engine="stack")
    assert (
        matcher.extend(
            frame(
                [
                    {"type": "A", "ts": 0},
                    {"type": "B", "ts": 1},
                    {"type": "C", "ts": 2},
                    {"type": "A", "ts": 3},
                    {"type": "B", "ts": 4},
                ]
            )
        )
        == []
    )
    assert [(m.positions, m.emitted_at) for m in matcher.close()] == [((0, 4), 4), ((3, 4), 4)]


def test_events_after_a_close_match_on_and_what_waited_then_stays_out():
    """A close releases what waits; later batches and pushes go on matching (with the events before the
    close too), and never release what the close released."""
    query = "SEQ(A a, B b, !C c) WITHIN 5 s"
    rows = [
        {"type": "A", "ts": 0},
        {"type": "B", "ts": 1},
        {"type": "A", "ts": 2},
        {"type": "B", "ts": 3},
        {"type": "D", "ts": 4},
        {"type": "D", "ts": 9},
        {"type": "B", "ts": 10},
        {"type": "D", "ts": 16},
    ]
    for ways in (
        ["extend", "extend", "push"],
        ["extend", "push", "push"],
        ["push", "extend", "extend"],
        ["extend", "extend", "extend"],
    ):
        plan = [(0, 2, ways[0] + " close"), (2, 4, ways[1]), (4, 8, ways[2])]
        expected = assert_fed_as_pushed(query, rows, plan)
        assert [(m.positions, m.emitted_at) for m in expected] == [((0, 1), 1), ((0, 3), 5), ((2, 3), 5)]


def test_punctuation_rows_in_a_batch_are_left_out():
    matcher = cepkit.Matcher("SEQ(A a, !C c, B b) WITHIN 5 s", engine="stack")
    got = matcher.extend(pd.DataFrame({"type": ["A", "PUNCTUATION", "B"], "ts": [0, 1, 2]}))
    assert [(m.positions, m.emitted_at) for m in got] == [((0, 2), 2)]
    assert matcher.extend(pd.DataFrame({"type": ["PUNCTUATION"], "ts": [3]})) == []


@pytest.mark.parametrize("query", [q for q, columnar in sorted(QUERIES.items()) if columnar])
def test_batches_build_no_event_objects(query, monkeypatch):
    """A batch stays columns from the DataFrame to the ``MatchList``: no ``Event`` is built for any row."""
    rng = np.random.default_rng(5)
    n = 600
    rows = pd.DataFrame(
        {
            "type": rng.choice(list("ABCD"), n),
            "ts": np.cumsum(rng.integers(0, 3, n)),
            "v": rng.integers(0, 4, n),
            "id": rng.integers(0, 3, n),
        }
    )
    expected, _ = pushed(query, rows.to_dict("records"))  # (no close before the end)

    def no_events(self, rows):
        raise AssertionError("an Event was built")

    monkeypatch.setattr(Stream, "_build", no_events)
    matcher = cepkit.Matcher(query, engine="stack", schema=SCHEMA)
    found = [m for start in range(0, n, 150) for m in matcher.extend(rows.iloc[start : start + 150])]
    monkeypatch.undo()
    assert outcome(found + matcher.close()) == outcome(expected) and expected
