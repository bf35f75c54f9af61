"""One key's events between micro-batches: buffered, settled by the event-time watermark, fed to the engine's
incremental matcher once settled.

Pure pandas, no PySpark: ``cepkit.spark.match_stream`` keeps a ``KeyBuffer`` per key in Spark's state store
and calls ``advance`` for each micro-batch and each timer. The watermark W is the reorder buffer of the
out-of-order modes ([LIU] §3.5, §3.6.1):

* an event is *settled* once its ts < W: Spark drops later arrivals with ts < W, so the settled events
  of a key are complete and their order (ts, then position) is final. Each call feeds the newly settled
  events, in that order, to the key's ``Live`` matcher (the engine's own incremental matcher, ranks as
  positions) and emits what it reports: final matches, each once.
* a match waiting for a trailing scope (negation, EXISTS, a set or window still open) is reported by the
  matcher when a later settled event closes its scope (at the latest the first event more than w after
  its first one); a quiet key has no such event: once W passes the last fed event by the window, every
  scope is complete, so the matcher is closed (flushing what waits) and the key's state is dropped.
* the matcher lives in the Python worker (``Live``), not in the state store: a worker that has no matcher
  for a key (a restart, another executor) rebuilds it by feeding the key's fed events again, whose matches
  were emitted before. The buffer keeps the fed events a waiting match or a later one may still read:
  those at or after ``last fed - 2w`` (every waiting match started at or after ``last fed - w``).

For ``WITHIN n EVENTS`` the same holds on the axis of settled ranks (the key's sub-stream positions,
docs/language.md §10.5) with ``w = n - 1``: the buffer keeps the last ``2w + r + 1`` fed events however long ago
they came (``r = w`` for negation, projection, robust skip-till-next-match; else 0), and the matcher is
never closed (its waiting matches wait for events).

Time is in epoch microseconds; a few microseconds of slack absorb the engines' float rounding (a wider
retention or a later emission never changes a result).

A key's events are columns (``Columns``: name -> numpy array) between and within calls, not DataFrames: a
stream with many keys makes a call per key and micro-batch with a few events each, where pandas' fixed
cost per operation (~0.1 ms, dozens of them) was most of the work. A DataFrame is made only for what
leaves: the events fed to the engine and the matches emitted.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import EventError
from ..runtime.stream import Stream
from ..runtime.match_arrays import MatchArrays
from ..runtime.match_list import MatchList
from ..runtime.match_tables import pandas_binding
from ..runtime.python_objects import row_lists
from .groups import LAST, POS, PREFIX, RANK, TS, GroupMatcher, Split, describe_row, plain

TIME = PREFIX + "time"  # ts in epoch microseconds (numeric ts: seconds x 1e6)
SEQ = PREFIX + "seq"  # rank among the key's settled events (EVENTS windows only)
FED = PREFIX + "fed"  # the rank under which a settled event was fed to the matcher (NaN: not yet)
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


Columns = dict  # a key's events: column name -> numpy array (or pandas ExtensionArray), all one length


def columns_of(frame: pd.DataFrame) -> Columns:
    """A DataFrame's columns as arrays (numpy where the dtype is numpy's, else the pandas array)."""
    return {
        name: (series.to_numpy() if isinstance(series.dtype, np.dtype) else series.array)
        for name, series in frame.items()
    }


def rows_count(columns: Columns) -> int:
    return len(next(iter(columns.values()))) if columns else 0


def take(columns: Columns, index) -> Columns:
    """The rows at ``index`` (a boolean mask or indices) of every column."""
    return {name: values[index] for name, values in columns.items()}


def _concat(first, second):
    if isinstance(first, np.ndarray) and isinstance(second, np.ndarray):
        return np.concatenate([first, second])
    return pd.concat([pd.Series(first), pd.Series(second)], ignore_index=True).array  # extension dtypes


def _concat_all(parts: list):
    """Output columns of several results, in turn: arrays, pandas arrays or lists (positions)."""
    if all(isinstance(p, list) for p in parts):
        return [v for p in parts for v in p]
    if all(isinstance(p, np.ndarray) for p in parts):
        return np.concatenate(parts)
    return pd.concat(
        [pd.Series(p, dtype=object if isinstance(p, list) else None) for p in parts], ignore_index=True
    ).array


def _concat_columns(old: Columns, new: Columns) -> Columns:
    """``old``'s rows then ``new``'s; a column ``new`` lacks (FED, SEQ) is NaN in its rows."""
    if not rows_count(old):
        return dict(new)
    n = rows_count(new)
    return {name: _concat(values, new[name] if name in new else np.full(n, np.nan)) for name, values in old.items()}


@dataclass
class KeyBuffer:
    """A key's state: buffered events (``columns``: unsettled ones, and the fed ones a match may still
    read), the largest watermark seen, the number of settled events so far (EVENTS windows), of matches
    emitted (the next ``match_id``) and of events fed to the matcher (the next rank).

    ``columns`` may be given as a DataFrame; ``events`` is a DataFrame view of them (tests, inspection)."""

    columns: Columns
    frontier: Optional[int] = None
    settled: int = 0
    emitted: int = 0
    fed: int = 0

    def __post_init__(self):
        if isinstance(self.columns, pd.DataFrame):
            self.columns = columns_of(self.columns)

    @property
    def events(self) -> pd.DataFrame:
        return pd.DataFrame(self.columns)

    def __len__(self) -> int:
        return rows_count(self.columns)

    def to_bytes(self) -> bytes:
        """The events as an Arrow IPC stream (compact; the pandas dtype of an extension column, such as
        Int64, kept in the schema's metadata) for Spark's state store."""
        arrays = [pa.array(values) for values in self.columns.values()]
        kinds = {name: str(values.dtype) for name, values in self.columns.items() if not isinstance(values, np.ndarray)}
        schema = pa.schema(
            [pa.field(name, array.type) for name, array in zip(self.columns, arrays)],
            metadata={"cepkit_dtypes": json.dumps(kinds)} if kinds else None,
        )
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema) as writer:
            writer.write_batch(pa.record_batch(arrays, schema=schema))
        return sink.getvalue().to_pybytes()

    @classmethod
    def from_state(cls, blob: bytes, frontier, settled: int, emitted: int, fed: int = 0) -> "KeyBuffer":
        reader = pa.ipc.open_stream(pa.py_buffer(blob))
        batch = reader.read_next_batch()
        metadata = reader.schema.metadata or {}
        kinds = json.loads(metadata.get(b"cepkit_dtypes", b"{}"))
        columns = {}
        for name, array in zip(batch.schema.names, batch.columns):
            if name in kinds:  # (Arrow's own pandas form first: a timestamp keeps its zone)
                columns[name] = array.to_pandas().astype(kinds[name]).array
            else:
                columns[name] = array.to_numpy(zero_copy_only=False)
        return cls(columns, frontier, settled, emitted, fed)


def check_arrivals(rows, names: dict) -> None:
    """EventError for the first of a micro-batch's ``rows`` (``Columns`` or a DataFrame; by position) that a
    stream cannot place: a null type, a ts that is null, NaN or infinite (``TIME`` null), a negative ts
    (Spark's watermark starts at 0), a null position. ``names`` maps the internal columns (``type``,
    ``TS``, ``POS``) to the user's names; the error shows the row with them."""
    if isinstance(rows, pd.DataFrame):
        rows = columns_of(rows)
    time = np.asarray(rows[TIME], dtype=float)  # (Arrow hands a long column with nulls over as floats)
    problems = [
        (pd.isna(rows["type"]), "type", lambda row: "every event needs a type (this one is null)"),
        (
            np.isnan(np.asarray(rows[POS], dtype=float)),
            POS,
            lambda row: "every event of a stream needs a position (this one is null)",
        ),
        (np.isnan(time), TS, lambda row: "ts is missing (null or NaN) or not finite"),
        (
            time < 0,
            TS,
            lambda row: f"a stream's ts must be >= 0 (Spark's watermark starts at 0), got {plain(row[TS])!r}",
        ),
    ]
    bad = np.zeros(rows_count(rows), bool)
    for flags, _, _ in problems:
        bad |= np.asarray(flags, dtype=bool)
    if not bad.any():
        return
    positions = np.asarray(rows[POS], dtype=float)
    first = min(np.flatnonzero(bad), key=lambda i: (not np.isnan(positions[i]), positions[i]))
    row = {name: values[first] for name, values in rows.items()}
    field, reason = next((f, why) for flags, f, why in problems if flags[first])
    shown = {
        names.get(c, c): (None if pd.isna(row[c]) else int(row[c]) if c == POS else row[c])
        for c in rows
        if c in names or not c.startswith(PREFIX)
    }
    raise EventError(
        None if np.isnan(positions[first]) else int(positions[first]),
        names.get(field, field),
        f"{reason(row)}; the row: {describe_row(shown)}",
    )


# The side output's columns (``match_stream(late="side")``): a row's kind ("match" or "late"), then, for a late
# event, its type, ts and position and the watermark it missed (null in a match's row).
KIND = "kind"
LATE_COLUMNS = ("late_type", "late_ts", "late_position", "watermark")


def split_late(rows: Columns, watermark: int) -> tuple:
    """(the rows on time, the rows later than ``watermark`` (µs)): the rows Spark would drop, TIME < W."""
    late = rows[TIME] < watermark
    if not late.any():
        return rows, take(rows, late)
    return take(rows, ~late), take(rows, late)


def side_rows(
    found: pd.DataFrame, late: Columns, watermark: int, output: list, keys: tuple, datetime: bool
) -> pd.DataFrame:
    """The side output's rows of a call: the matches ``found`` (``output`` columns) as kind "match", then the
    ``late`` arrivals as kind "late", each with its key, type, ts, position and the ``watermark`` (µs) it
    missed; ts and watermark are UTC timestamps for datetime ts, else seconds."""
    frames = []
    if len(found):
        frames.append(found[output].assign(**{KIND: "match"}, **{c: None for c in LATE_COLUMNS}))
    if rows_count(late):
        ts = pd.to_datetime(late[TS], unit="us", utc=True) if datetime else late[TS]
        mark = pd.Timestamp(watermark, unit="us", tz="UTC") if datetime else watermark / 1e6
        frames.append(
            pd.DataFrame(
                {
                    KIND: "late",
                    **{c: None for c in output if c not in keys},
                    **{k: late[k] for k in keys},
                    "late_type": late["type"],
                    "late_ts": ts,
                    "late_position": np.asarray(late[POS]).astype("int64"),
                    "watermark": mark,
                }
            )
        )
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    return frame[[KIND, *output, *LATE_COLUMNS]]


def fed_rows(events: Columns):
    """``event(ranks)``: the rows in a key's buffer ``events`` of the fed ranks (an array), which the matches
    read (a match reading an event the buffer dropped is a bug: RuntimeError)."""
    at = np.flatnonzero(~np.isnan(events[FED]))
    ranks = events[FED][at].astype(np.int64)
    first = int(ranks.min())
    row_of = np.full(int(ranks.max()) + 1 - first, -1, np.int64)
    row_of[ranks - first] = at

    def event(rank: np.ndarray) -> np.ndarray:
        rank = np.asarray(rank, np.int64) - first
        if np.any((rank < 0) | (rank >= len(row_of))) or (row_of[rank] < 0).any():
            raise RuntimeError("a match reads an event no longer in its key's buffer")
        return row_of[rank]

    return event


class Live:
    """A key's engine matcher in this worker: fed settled events in (ts, position) order, their ranks as
    positions (engines expect increasing positions; the stream's own may not be), matches mapped back."""

    def __init__(self, matcher: GroupMatcher):
        self.group = matcher
        self.inner = matcher.plan.matcher()
        self.fed = 0  # the next rank it expects: a matcher that missed a call is not used again
        self.empty = pd.DataFrame(columns=matcher.output_columns)  # copied: making one costs ~0.3 ms

    def feed(self, rows: Columns, ranks: np.ndarray):
        """The matches the matcher reports while it reads ``rows`` (ranked ``ranks``), given to it as one
        micro-batch of columns (``IncrementalPlan.extend``): a list or a ``MatchList``."""
        if not len(ranks):
            return []
        columns = self.group.columns
        if columns.ts_kind == "number":  # already the engine's frame: type, ts, attributes
            frame = pd.DataFrame({"type": rows["type"], "ts": rows[TS], **{a: rows[a] for a in columns.attributes}})
        else:
            frame = columns.engine_frame(pd.DataFrame({name: rows[name] for name in ("type", *columns.attributes, TS)}))
        found = self.inner.extend(Stream.from_frame(frame).numbered(ranks))
        self.fed = int(ranks[-1]) + 1
        return found

    def close(self) -> list:
        return self.inner.close()

    def rows(self, found: list, events: Columns, match_ids: Optional[np.ndarray] = None) -> pd.DataFrame:
        """``GroupMatcher.output_columns`` rows of the matches of the results ``found`` (lists or ``MatchList``s,
        in turn), positions read from the buffer's events: built from the matches' columns (a list's made by
        ``MatchArrays.from_matches``), the fed ranks mapped to positions with numpy. ``match_ids`` (one per
        match, when given) become a first column ``match_id``."""
        found = [f for f in found if len(f)]
        if not found:
            return self.empty.copy()
        event = fed_rows(events)
        parts = [
            self._columns(f.arrays if isinstance(f, MatchList) else MatchArrays.from_matches(f), events, event)
            for f in found
        ]
        columns = parts[0] if len(parts) == 1 else {name: _concat_all([p[name] for p in parts]) for name in parts[0]}
        n = len(columns[LAST])
        head = {} if match_ids is None else {"match_id": match_ids}
        return pd.DataFrame({**head, LAST: columns.pop(LAST), RANK: np.arange(n), **columns})

    def _columns(self, arrays: MatchArrays, events: Columns, event) -> dict:
        """One result's columns without RANK; ``event(ranks)`` are the fed ranks' rows in ``events``."""
        group = self.group
        positions = np.asarray(events[POS]).astype(np.int64, copy=False)

        def position(rank: np.ndarray) -> np.ndarray:
            return positions[event(rank)]

        start, stop = int(arrays.offsets[0]), int(arrays.offsets[-1])
        lasts = event(arrays.positions[arrays.offsets[1:] - 1])
        columns = {
            LAST: positions[lasts],
            "positions": row_lists(arrays.offsets - start, position(arrays.positions[start:stop]).tolist()),
        }
        for var, (kind, value) in group.stream_bindings(arrays, position).items():
            if kind == "single":
                columns[var] = pd.arrays.IntegerArray(np.maximum(value, 0), value < 0)
            else:
                columns[var] = pandas_binding(kind, value)
        for key in group.split.keys:
            columns[key] = events[key][lasts]
        return columns


def advance(
    buffer: KeyBuffer,
    new,
    watermark: int,
    matcher: GroupMatcher,
    horizon: Horizon,
    live: Optional[Live] = None,
    start=Live,
) -> tuple:
    """Take a key's new events (``Columns`` or a DataFrame, or None) and the watermark (epoch µs); return
    (final matches, buffer, next timer, the key's ``Live`` matcher or None once closed).

    The matches are ``matcher.output_columns`` rows with ``match_id`` counted per key; the next timer is the
    watermark (µs) beyond which calling again can emit or drop something, or None. ``live`` is the matcher
    the previous call returned for this key, or None: then ``start(matcher)`` makes one, fed the buffer's fed
    events again (``Live``; ``cepkit.spark.cube``'s ``CubeLive`` for a cube per key).
    """
    if isinstance(new, pd.DataFrame):
        new = columns_of(new)
    events = dict(buffer.columns) if new is None or not rows_count(new) else _concat_columns(buffer.columns, new)
    n = rows_count(events)
    # (owned copies: FED and SEQ are written in place; the state's arrays are read-only views)
    events[FED] = np.array(events[FED], dtype=float) if FED in events else np.full(n, np.nan)
    if horizon.axis == "position":
        events[SEQ] = np.array(events[SEQ], dtype=float) if SEQ in events else np.full(n, np.nan)
    times = np.asarray(events[TIME]).astype(np.int64, copy=False)
    order = np.lexsort((np.asarray(events[POS]), np.asarray(events[TS])))  # (stable: ties keep their order)
    if (order != np.arange(n)).any():  # events most often arrive in order: no copy then
        events, times = take(events, order), times[order]
    settled = times < watermark
    fed = ~np.isnan(events[FED])
    if live is None or live.fed != buffer.fed:
        live = start(matcher)
        live.feed(take(events, fed), events[FED][fed])  # reported before: only the state is wanted
    fresh = settled & ~fed
    live.fed = buffer.fed
    next_rank = buffer.fed + int(fresh.sum())
    events[FED][fresh] = np.arange(buffer.fed, next_rank)
    found = [live.feed(take(events, fresh), events[FED][fresh])]
    fed = ~np.isnan(events[FED])
    if horizon.axis == "position":
        fresh_seq = settled & np.isnan(events[SEQ])
        events[SEQ][fresh_seq] = buffer.settled + np.arange(int(fresh_seq.sum()))
        count = buffer.settled + int(fresh_seq.sum())
    else:
        count = buffer.settled
    frontier = watermark if buffer.frontier is None else max(buffer.frontier, watermark)
    last_fed = times[fed].max() if fed.any() else -np.inf
    scope = horizon.window + horizon.slack  # a waiting match's scope ends within w of its first event
    closing = horizon.axis == "time" and fed.any() and last_fed + scope < frontier
    if closing:  # every waiting scope is complete: report what waits, and forget the fed events
        found.append(live.close())
    count_found = sum(len(f) for f in found)
    rows = live.rows(found, events, np.arange(buffer.emitted, buffer.emitted + count_found, dtype=np.int64))
    if not count_found:
        rows.insert(0, "match_id", np.zeros(0, np.int64))

    if closing:
        keep = ~settled
    elif horizon.axis == "time":
        keep = ~fed | (times >= last_fed - horizon.window - scope)
    else:
        keep = ~fed | (events[FED] >= next_rank - 2 * horizon.window - horizon.lookahead - 1)
    kept = events if keep.all() else take(events, keep)
    unsettled = times[~settled]
    timers = list(unsettled[:1])  # sorted by ts: the earliest event still to settle
    if horizon.axis == "time" and not closing and fed.any():
        timers.append(last_fed + scope)  # when the matcher can be closed
    timer = int(min(timers)) if timers else None
    return (
        rows,
        KeyBuffer(kept, frontier, count, buffer.emitted + len(rows), next_rank),
        timer,
        None if closing else live,
    )
