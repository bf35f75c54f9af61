"""One key's events driven through ``cepkit.spark.watermark`` in pure pandas, as ``match_stream``'s stateful
processor drives them (shared by test_watermark.py and test_live_rows.py)."""

import numpy as np
import pandas as pd

import cepkit
from cepkit.spark.groups import POS, TS, EventColumns, GroupMatcher, plan_split
from cepkit.spark.watermark import SEQ, TIME, Horizon, KeyBuffer, advance

COLUMNS = EventColumns(("v", "id"), "number")


def stream_frame(events: list) -> pd.DataFrame:
    frame = pd.DataFrame(events, columns=["type", "ts", "v", "id"])
    frame[TS] = frame["ts"]
    frame[POS] = np.arange(len(frame))
    frame[TIME] = (frame["ts"] * 1_000_000).astype("int64")
    return frame


def run_stream(
    query: str, events: list, arrival_jitter: list, batches: int, delay: int, engine: str = "reference", restarts=()
) -> pd.DataFrame:
    """Feed one key's events in micro-batches; return every emitted match (checking the state on the way).
    Before the calls numbered in ``restarts`` the worker's matcher is lost (it is rebuilt from the buffer)."""
    q = cepkit.parse(query)
    split = plan_split(q)
    horizon = Horizon.of(split)
    matcher = GroupMatcher(q, engine, {}, COLUMNS, split)
    frame = stream_frame(events)
    # Each event arrives up to `delay` seconds late: never behind the watermark, so Spark keeps it.
    arrival = frame.iloc[np.argsort(frame["ts"].to_numpy() + arrival_jitter, kind="stable")]
    empty = frame.iloc[:0].copy()
    if horizon.axis == "position":
        empty[SEQ] = pd.Series(dtype=float)
    buffer, emitted, highest, live = KeyBuffer(empty), [], None, None
    for call, rows in enumerate(np.array_split(np.arange(len(arrival)), batches)):
        chunk = arrival.iloc[rows]
        if len(chunk):
            highest = max(highest or 0, int(chunk[TIME].max()))
        watermark = highest - delay * 1_000_000 if highest is not None else -(2**62)
        found, buffer, timer, live = advance(
            buffer, chunk, watermark, matcher, horizon, None if call in restarts else live
        )
        emitted.append(found)
        kept = buffer.events
        if horizon.axis == "time" and buffer.frontier is not None:
            settled = kept[TIME] < buffer.frontier
            oldest = buffer.frontier - 3 * horizon.window - 2 * horizon.slack
            assert (kept[TIME][settled] >= oldest).all()  # the state holds a few windows of events
        if timer is not None:
            assert timer >= watermark
    found, buffer, timer, live = advance(buffer, None, 2**62, matcher, horizon, live)
    emitted.append(found)
    if horizon.axis == "time":
        assert buffer.events.empty and timer is None and live is None  # a quiet key's state is dropped
    out = pd.concat([found for found in emitted if len(found)] or [found], ignore_index=True)
    assert list(out["match_id"]) == list(range(len(out)))
    return out


class Handle:
    """Spark's stateful handle as ``match_stream``'s processor uses it, in memory (no JVM)."""

    def __init__(self):
        self.value, self.timers = None, set()

    def getValueState(self, name, schema):
        handle = self

        class State:
            def exists(self):
                return handle.value is not None

            def get(self):
                return handle.value

            def update(self, value):
                handle.value = value

            def clear(self):
                handle.value = None

        return State()

    def listTimers(self):
        return list(self.timers)

    def deleteTimer(self, t):
        self.timers.discard(t)

    def registerTimer(self, t):
        self.timers.add(t)


class WatermarkAt:
    """Spark's timer values at a watermark (ms)."""

    def __init__(self, ms):
        self.ms = ms

    def getCurrentWatermarkInMs(self):
        return self.ms
