"""``cepkit.spark.cube_stream``'s per-key work (``cepkit.spark.cube``) driven in pure pandas as its stateful
processor drives it: random cubes (tests/ecube/test_properties.py), events arriving out of order within the
watermark's delay in random micro-batches, a global watermark, the key cubes lost before random calls (a
restart: rebuilt from the buffered events). Every query's emitted matches must be the batch ``ECube``'s,
each once; a quiet key's state is dropped."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cepkit.ecube import ECube
from cepkit.ecube.incremental import Reach
from cepkit.ecube.workloads import COMPANIES, every_workload, trades
from cepkit.spark.cube import CubeGroup, CubeLive
from cepkit.spark.groups import EventColumns, Split
from cepkit.spark.watermark import TIME, Horizon, KeyBuffer, advance

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "ecube"))
from key_streams import stream_frame  # noqa: E402
from test_properties import cases  # noqa: E402


def run_cube(queries, hierarchy, events, jitter, batches: int, delay: float, restarts=(), attributes=("v", "id")):
    """Every (name, positions) the per-key cubes emit over ``events`` arriving ``jitter`` late (at most
    ``delay``) in ``batches`` micro-batches, the key cubes lost before the calls in ``restarts``."""
    cube = ECube(queries, hierarchy)
    reach = Reach.of(cube.queries.values())
    keys = tuple(next(iter(cube.queries.values())).partition_by)
    split = Split("partition", keys, axis=reach.axis, window=reach.window, lookahead=reach.lookahead)
    group, horizon = CubeGroup(cube, EventColumns(attributes, "number"), split), Horizon.of(split)
    frame = stream_frame(events) if attributes == ("v", "id") else _frame(events, attributes)
    arrival = frame.iloc[np.argsort(frame["ts"].to_numpy() + jitter, kind="stable")]
    key_of = (lambda rows: [tuple(r) for r in rows[list(keys)].to_numpy()]) if keys else (lambda rows: [()] * len(rows))
    state: dict = {}  # key -> (buffer, live)
    emitted, highest = [], None

    def call(key, rows, watermark):
        buffer, live = state.get(key, (KeyBuffer(frame.iloc[:0].copy()), None))
        found, buffer, timer, live = advance(buffer, rows, watermark, group, horizon, live, CubeLive)
        emitted.append(found)
        if len(buffer) or live is not None:
            state[key] = (buffer, live)
        else:
            state.pop(key, None)
        if timer is not None:
            assert timer >= watermark

    for number, index in enumerate(np.array_split(np.arange(len(arrival)), batches)):
        chunk = arrival.iloc[index]
        if number in restarts:
            state = {key: (buffer, None) for key, (buffer, _) in state.items()}
        watermark = highest - round(delay * 1e6) if highest is not None else -(2**62)  # (Spark's: the last batch's)
        if len(chunk):
            highest = max(highest or 0, int(chunk[TIME].max()))
        chunk_keys = key_of(chunk)
        for key in {*state, *chunk_keys}:
            rows = chunk[[k == key for k in chunk_keys]]
            call(key, rows if len(rows) else None, watermark)
    for key in list(state):
        call(key, None, 2**62)
    if reach.axis == "time":
        assert not state  # every quiet key's state is dropped
    out = pd.concat([f for f in emitted if len(f)] or [emitted[-1]], ignore_index=True)
    return out


def _frame(events: pd.DataFrame, attributes) -> pd.DataFrame:
    from cepkit.spark.groups import POS, TS

    frame = events[["type", "ts", *attributes]].copy()
    frame[TS] = frame["ts"]
    frame[POS] = np.arange(len(frame))
    frame[TIME] = (frame["ts"] * 1_000_000).astype("int64")
    return frame


def batch_rows(queries, hierarchy, events) -> list:
    return sorted((name, tuple(p)) for name, m in ECube(queries, hierarchy).run(events).items() for p in m.positions())


def emitted_rows(out: pd.DataFrame) -> list:
    return sorted((name, tuple(int(p) for p in positions)) for name, positions in zip(out["query"], out["positions"]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(0, 3), st.integers(1, 5), st.randoms(use_true_random=False), st.data())
def test_the_key_cubes_emit_the_batch_cubes_matches_out_of_order_and_restarted(case, delay, batches, rng, data):
    hierarchy, queries, events = case
    cube = ECube(queries, hierarchy)
    assume(events and Reach.of(cube.queries.values()) is not None)
    within = next(iter(cube.queries.values())).within
    if within.events:  # a stream never ends: later events of each key stand for them (they change no match)
        keys = {e["id"] for e in events} if next(iter(cube.queries.values())).partition_by else {0}
        last = events[-1]["ts"]
        events = events + [{"type": "Z", "ts": last + 1, "v": 0, "id": k} for k in keys for _ in range(within.amount)]
    jitter = np.array([rng.uniform(0, delay) for _ in events])
    restarts = set(data.draw(st.lists(st.integers(0, batches), max_size=3)))
    out = run_cube(queries, hierarchy, events, jitter, batches, delay, restarts)
    assert emitted_rows(out) == batch_rows(queries, hierarchy, events), (queries, restarts)
    keys = out["id"] if "id" in out else pd.Series(0, index=out.index)
    for _, ids in out["match_id"].groupby(keys):
        assert sorted(ids) == list(range(len(ids)))  # counted per key, over the cube's queries


def test_a_workload_over_shuffled_trades_with_restarts():
    """W1 of [LIU] §4.6 (five queries sharing SEQ(INTC, !MSFT, FCF), one trailing negation scope each) over
    600 trades arriving up to 30 ms late in 7 micro-batches, the key cubes lost twice."""
    queries, children = every_workload()["W1"]
    events = trades(600, seed=4)
    rng = np.random.default_rng(4)
    out = run_cube(queries, children, events, rng.uniform(0, 30, len(events)), 7, 30, {2, 5}, ("price",))
    expected = batch_rows(queries, children, events)
    assert len(expected) > 20
    assert emitted_rows(out) == expected


def test_a_quiet_key_reports_what_its_trailing_negation_held():
    """A quiet stretch closes the key: what the trailing negation held comes out, and the state is dropped."""
    queries = {"q": "SEQ(Computer c, Finance f, !EFC e) WITHIN 5", "r": "SEQ(INTC c, FCF f) WITHIN 5"}
    events = [{"type": t, "ts": s, "v": 0, "id": 0} for t, s in [("INTC", 0), ("FCF", 1), ("INTC", 30), ("FCF", 31)]]
    out = run_cube(queries, COMPANIES, events, np.zeros(4), 4, 0)
    assert emitted_rows(out) == [("q", (0, 1)), ("q", (2, 3)), ("r", (0, 1)), ("r", (2, 3))]
