"""``StreamingCube``: an ECube over micro-batches. After every batch the matches reported so far are the batch
``ECube``'s over the stream so far whose last event is closed (no later event can change them), each once;
after ``close``, all of them. Random cubes and cuts (hypothesis), the workloads of [LIU] §4.6, drill-down and
roll-up while the stream runs, bounded memory with ``keep=False``."""

import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.ecube import ECube
from cepkit.ecube.workloads import COMPANIES, every_workload, trades

sys.path.insert(0, str(Path(__file__).parent))
from test_properties import cases  # noqa: E402

TOLERANCE = 1e-9


def final_rows(cube: ECube, events: list, name: str) -> set:
    """The batch cube's matches of ``name`` over ``events`` that no later event can change: a trailing
    negation waits until an event more than the window after the match's last one (EVENTS: that many
    events of its sub-stream); anything else is final at its last event."""
    query = cube.queries[name]
    rows = {m.positions for m in cube.run(events)[name]} if events else set()
    if cube.shapes[name].items[-1].positive:
        return rows
    within = query.within
    if within.events:
        keys = [tuple(e.get(k) for k in query.partition_by) for e in events]
        later = [sum(1 for k in keys[i + 1 :] if k == keys[i]) for i in range(len(events))]
        return {r for r in rows if later[r[-1]] >= within.amount - 1}
    now = events[-1]["ts"]
    return {r for r in rows if events[r[-1]]["ts"] + within.seconds < now - TOLERANCE * max(1, abs(now))}


def cuts_of(n: int, sizes: list) -> list:
    bounds = [0]
    while bounds[-1] < n:
        bounds.append(min(n, bounds[-1] + sizes[len(bounds) % len(sizes)]))
    return list(zip(bounds[:-1], bounds[1:]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.lists(st.integers(1, 5), min_size=1, max_size=5), st.booleans())
def test_after_every_batch_the_reported_matches_are_the_batch_cubes_final_ones(case, sizes, keep):
    hierarchy, queries, events = case
    cube = ECube(queries, hierarchy)
    assume(all(q.within is not None for q in cube.queries.values()))
    live = ECube(queries, hierarchy).stream(keep=keep)
    reported = {name: [] for name in queries}
    for a, b in cuts_of(len(events), sizes):
        for name, found in live.extend(events[a:b]).items():
            reported[name] += found.positions()
        for name in queries:
            expected = final_rows(cube, events[:b], name)
            assert sorted(reported[name]) == sorted(expected), (name, queries[name], b, live.plan)
            if keep:
                assert live.results[name].positions() == sorted(expected, key=lambda r: (r[-1], r))
    for name, found in live.close().items():
        reported[name] += found.positions()
    for name, text in queries.items():
        expected = cepkit.match(text, events, engine="reference", hierarchy=hierarchy)
        assert sorted(reported[name]) == sorted(m.positions for m in expected), (name, text)


@pytest.mark.parametrize("workload", sorted(every_workload()))
def test_every_workload_streams_as_the_batch_cube(workload):
    """W1-W8 of [LIU] §4.6 over 800 trades in batches of 90 (a window is 10 trades): after every batch, the
    matches so far equal the batch cube's final ones; at the end, its whole result."""
    queries, children = every_workload()[workload]
    hierarchy = cepkit.Hierarchy(children)
    events = trades(800, seed=7).to_dict("records")
    cube, live = ECube(queries, hierarchy), ECube(queries, hierarchy).stream()
    for a in range(0, len(events), 90):
        live.extend(pd.DataFrame(events[a : a + 90]))
        results = live.results
        for name in queries:
            assert set(results[name].positions()) == final_rows(cube, events[: a + 90], name), (workload, name, a)
    live.close()
    batch = cube.run(events)
    assert {n: m.positions() for n, m in live.results.items()} == {n: m.positions() for n, m in batch.items()}
    assert sum(len(m) for m in batch.values()) > 10


OPERATIONS = [
    ("drill_down", {"concept": [("Computer", "INTC", 1)]}),
    ("drill_down", {"pattern": [("!QQQ", 2)]}),
    ("roll_up", {"pattern": [("Finance", 2)]}),
    ("roll_up", {"pattern": [("Computer", 1)]}),
]


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("method, args", OPERATIONS)
def test_drill_down_and_roll_up_while_the_stream_runs(method, args, keep):
    """An OLAP operation after the third batch answers from what is kept: with keep=True, the new query's
    final matches over the stream so far; with keep=False, those whose window (back from the last event)
    starts after what the cube forgot (``complete_from``). From then on the new query streams with the others: in the end it has
    every match of the batch cube."""
    hierarchy = cepkit.Hierarchy(COMPANIES)
    queries = {
        "q16": "SEQ(Computer c, Finance f, Education e) WITHIN 20",
        "q17": "SEQ(Computer c, Finance f, EFC e) WITHIN 20",
    }
    events = trades(600, seed=3).to_dict("records")
    live = ECube(queries, hierarchy).stream(keep=keep)
    for a in range(0, 300, 100):
        live.extend(events[a : a + 100])
    answer = getattr(live, method)("q17", **args)
    name = next(n for n in live.cube.queries if n not in queries)
    cube = ECube(queries, hierarchy)
    cube.run(events[:300])
    getattr(cube, method)("q17", **args)
    expected = final_rows(cube, events[:300], name)
    got = set(answer.positions())
    if keep:
        assert got == expected
    else:
        start = answer.info["complete_from"]
        assert start > 0 and got == {r for r in expected if events[r[-1]]["ts"] - 20 > start - 1e-6}
        assert len(got) < len(expected)  # part of the stream is gone, and the answer says so
    later = set()
    for a in range(300, 600, 100):
        later |= set(live.extend(events[a : a + 100])[name].positions())
    later |= set(live.close()[name].positions())
    whole = ECube({**queries, name: cube.queries[name]}, hierarchy).run(events)[name]
    assert got | later == set(whole.positions()) - (expected - got) and not got & later
    assert len(whole) > 10


def test_an_operation_landing_on_a_query_of_the_cube_answers_its_final_matches():
    hierarchy = cepkit.Hierarchy(COMPANIES)
    live = ECube(
        {
            "q16": "SEQ(Computer c, Finance f, Education e) WITHIN 20",
            "q17": "SEQ(Computer c, Finance f, EFC e) WITHIN 20",
        },
        hierarchy,
    ).stream()
    live.extend(trades(200, seed=4))
    got = live.roll_up("q17", concept=[("EFC", "Education", 3)])
    assert got.positions() == live.results["q16"].positions() and len(got) > 10
    assert set(live.cube.queries) == {"q16", "q17"}


def test_keep_false_holds_about_two_windows_of_events():
    """An endless stream with keep=False: the kept events stay within two windows plus a batch, whatever
    the stream's length (the memory bench, bench/ecube_stream.py, runs millions of events)."""
    hierarchy = cepkit.Hierarchy(COMPANIES)
    live = ECube({n: q for n, q in every_workload()["W1"][0].items()}, hierarchy).stream(keep=False)
    most = 0
    for k in range(40):
        found = live.extend(trades(250, seed=k, start=250 * k))
        most = max(most, len(live.kept.stream))
        assert sum(len(m) for m in found.values()) > 0
    assert most <= 250 + 2 * 10 + 2  # a batch and two windows of 10 trades (2 ms apart, 20 ms)
    with pytest.raises(ValueError, match="keeps no matches"):
        live.results


def test_a_streaming_cube_needs_windows_and_events_in_order():
    with pytest.raises(ValueError, match="needs every query to have a WITHIN window"):
        ECube({"q": "SEQ(A a, B b)"}).stream()
    live = ECube({"q": "SEQ(A a, B b) WITHIN 5"}).stream()
    live.extend([{"type": "A", "ts": 3}])
    with pytest.raises(cepkit.EventError, match="before the previous batch's last event") as err:
        live.extend([{"type": "B", "ts": 2}])
    assert err.value.position == 1
    with pytest.raises(ValueError, match="extend the streaming cube"):
        ECube({"q": "SEQ(A a, B b) WITHIN 5"}).stream().drill_down("q", pattern=[("C c", 1)])
    assert live.extend(pd.DataFrame({"type": ["B"], "ts": [4]}))["q"].positions() == [(0, 1)]
