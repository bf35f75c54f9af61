"""One key's events between micro-batches: buffered, settled by the event-time watermark, matched once final.

Pure pandas, no PySpark: ``cepkit.spark.match_stream`` keeps a ``KeyBuffer`` per key in Spark's state store
and calls ``advance`` for each micro-batch and each timer. The argument is the one behind batch time
slices (``cepkit.spark.groups``), with the watermark W as the moving slice border:

* an event is *settled* once its ts < W: Spark drops later arrivals with ts < W, so the settled events
  of a key are complete and their order (ts, then position) is final;
* a match is decided by the events in ``[last - w, first + r]`` (``r = w`` for negation, projection,
  robust skip-till-next-match; else 0), so it is *final* once ``last + r < W``: each call emits the matches
  that became final since the previous call, ``F_prev <= last + r < F``, each exactly once;
* later matches need only the settled events at or after ``F - r - w``: older ones are dropped, so the
  state holds about one window of events. Once a key has been quiet that long, its state is cleared.

For ``WITHIN n EVENTS`` the same holds on the axis of settled ranks (the key's sub-stream positions,
LANGUAGE.md §10.5) with ``w = n - 1``: a match is final once ``r`` more events have settled after its last
one; the state keeps the last ``r + w`` settled events of the key, however long ago they came.

Time is in epoch microseconds; a few microseconds of slack absorb the engines' float rounding (a wider
retention or a later emission never changes a result).
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
import pyarrow as pa

from .groups import POS, PREFIX, TS, GroupMatcher, Split

TIME = PREFIX + "time"      # ts in epoch microseconds (numeric ts: seconds x 1e6)
SEQ = PREFIX + "seq"        # rank among the key's settled events (EVENTS windows only)
_SLACK_US = 2


@dataclass(frozen=True)
class Horizon:
    """When events settle and matches become final, on the query's axis (see the module docstring).

    ``window`` and ``lookahead`` are in microseconds on the time axis and in events on the position axis.
    """
    axis: str
    window: int
    lookahead: int

    @classmethod
    def of(cls, split: Split) -> "Horizon":
        if split.axis == "position":
            return cls("position", int(split.window), int(split.lookahead))
        return cls("time", math.ceil(split.window * 1e6), math.ceil(split.lookahead * 1e6))

    @property
    def slack(self) -> int:
        return _SLACK_US if self.axis == "time" else 0


@dataclass
class KeyBuffer:
    """A key's state: buffered events (``events``), the frontier F (emitted: matches with last + r < F),
    the number of settled events so far (EVENTS windows) and of matches emitted (the next ``match_id``)."""
    events: pd.DataFrame
    frontier: Optional[int] = None
    settled: int = 0
    emitted: int = 0

    def to_bytes(self) -> bytes:
        """The events as an Arrow IPC stream (exact dtypes, compact) for Spark's state store."""
        sink = io.BytesIO()
        table = pa.Table.from_pandas(self.events, preserve_index=False)
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue()

    @classmethod
    def from_state(cls, blob: bytes, frontier, settled: int, emitted: int) -> "KeyBuffer":
        events = pa.ipc.open_stream(bytes(blob)).read_all().to_pandas()
        return cls(events, frontier, settled, emitted)


def advance(buffer: KeyBuffer, new: Optional[pd.DataFrame], watermark: int, matcher: GroupMatcher,
            horizon: Horizon) -> tuple:
    """Take a key's new events and the watermark (epoch µs); return (final matches, buffer, next timer).

    The matches are ``matcher.match_group`` rows with ``match_id`` counted per key; the next timer is the
    watermark (µs) beyond which calling again can emit or drop something, or None.
    """
    events = buffer.events if new is None or not len(new) else pd.concat([buffer.events, new], ignore_index=True)
    events = events.sort_values([TS, POS], kind="stable", ignore_index=True)
    settled = (events[TIME] < watermark).to_numpy()
    previous = buffer.frontier
    if horizon.axis == "position":
        fresh = settled & events[SEQ].isna().to_numpy()
        events.loc[fresh, SEQ] = buffer.settled + np.arange(int(fresh.sum()))
        count = buffer.settled + int(fresh.sum())
        frontier, axis = count, events[SEQ].to_numpy(dtype=float, na_value=np.inf)
    else:
        count = buffer.settled
        frontier = watermark if previous is None else max(previous, watermark)
        axis = events[TIME].to_numpy(dtype=float)
    reach = axis + horizon.lookahead + horizon.slack          # a match ending here is final once reach < F
    due = settled & (reach < frontier) & (reach >= (-np.inf if previous is None else previous))
    found = matcher.match_group(events[settled].reset_index(drop=True), owned=due[settled]) if due.any() \
        else pd.DataFrame(columns=matcher.output_columns)
    found.insert(0, "match_id", np.arange(buffer.emitted, buffer.emitted + len(found), dtype=np.int64))

    keep = ~settled | (axis >= frontier - horizon.lookahead - horizon.window - horizon.slack)
    kept = events[keep].reset_index(drop=True)
    pending = reach[keep & (reach >= frontier)] if horizon.axis == "time" else events[TIME][~settled].to_numpy()
    if len(pending):
        timer = int(pending.min())
    elif horizon.axis == "time" and len(kept):
        timer = int(axis[keep].max()) + horizon.lookahead + horizon.window + horizon.slack
    else:
        timer = None
    return found, KeyBuffer(kept, frontier, count, buffer.emitted + len(found)), timer
