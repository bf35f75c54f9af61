"""Events and streams (LANGUAGE.md §1).

A ``Stream`` is the one input every engine receives: the events in arrival order, each with its position,
type, time in seconds (``time``; datetime ts are converted) and attributes. Null attributes are dropped,
so an event's attributes are exactly the fields it has.
"""
from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field
from functools import cached_property
from numbers import Number
from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from ..errors import EventError

RESERVED = ("type", "ts")
PUNCTUATION = "PUNCTUATION"


@dataclass(frozen=True, slots=True)
class Event:
    """One event. ``ts`` is as given; ``time`` is ts in seconds (float) for windows and ordering."""
    type: str
    ts: Any = None
    attrs: Mapping[str, Any] = field(default_factory=dict)
    position: int = -1
    time: float = math.nan

    def get(self, name: str, default=None):
        if name == "ts":
            return self.time
        if name == "type":
            return self.type
        return self.attrs.get(name, default)

    def __getitem__(self, name: str):
        return self.get(name)

    def to_dict(self) -> dict:
        return {"type": self.type, "ts": self.ts, **self.attrs}


def _is_null(value) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _to_seconds(value, position: int) -> tuple:
    """(seconds, is_datetime) for a ts value; raises EventError for anything else."""
    if isinstance(value, bool) or value is None:
        raise EventError(position, "ts", f"expected a number or a datetime, got {value!r}")
    if isinstance(value, (pd.Timestamp, _dt.datetime)):
        ts = pd.Timestamp(value)
        if ts.tzinfo is None:
            ts = ts.tz_localize("UTC")
        return ts.timestamp(), True
    if isinstance(value, np.datetime64):
        return pd.Timestamp(value).tz_localize("UTC").timestamp(), True
    if isinstance(value, _dt.date):
        return pd.Timestamp(value).tz_localize("UTC").timestamp(), True
    if isinstance(value, Number):
        seconds = float(value)
        if math.isnan(seconds):
            raise EventError(position, "ts", "ts is missing (NaN)")
        return seconds, False
    raise EventError(position, "ts", f"expected a number or a datetime, got {type(value).__name__} {value!r}")


def make_event(raw, position: int, default_ts=None) -> Event:
    """An ``Event`` at ``position`` from a dict, an Event or a pandas row; validates type and ts."""
    if isinstance(raw, Event):
        seconds = raw.time if not math.isnan(raw.time) else _to_seconds(raw.ts if raw.ts is not None else position,
                                                                          position)[0]
        return Event(raw.type, raw.ts if raw.ts is not None else position, dict(raw.attrs), position, seconds)
    if not isinstance(raw, Mapping):
        raise EventError(position, "type", f"an event is a dict or a cepkit.Event, not {type(raw).__name__}")
    if "type" not in raw or _is_null(raw["type"]):
        raise EventError(position, "type", "every event needs a type")
    type_ = raw["type"]
    if not isinstance(type_, str):
        raise EventError(position, "type", f"the type must be a string, got {type(type_).__name__} {type_!r}")
    ts = raw.get("ts", default_ts if default_ts is not None else position)
    if ts is None:
        ts = position
    seconds, _ = _to_seconds(ts, position)
    attrs = {k: v for k, v in raw.items() if k not in RESERVED and not _is_null(v)}
    return Event(type_, ts, attrs, position, seconds)


class Stream:
    """A finite stream of events in arrival order.

    Build one with ``Stream.from_any(events)`` from a pandas DataFrame, an iterable of dicts or of
    ``Event``. ``ordered`` tells whether ts never decreases along positions.
    """

    def __init__(self, events: list, ts_is_datetime: bool = False, frame: Optional[pd.DataFrame] = None):
        self.events = events
        self.ts_is_datetime = ts_is_datetime
        self._frame = frame

    @classmethod
    def from_any(cls, events) -> "Stream":
        if isinstance(events, Stream):
            return events
        if isinstance(events, pd.DataFrame):
            return cls.from_frame(events)
        out, datetime_seen = [], False
        for position, raw in enumerate(events):
            event = make_event(raw, position)
            datetime_seen = datetime_seen or _to_seconds(event.ts, position)[1]
            out.append(event)
        return cls(out, datetime_seen)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> "Stream":
        if "type" not in frame.columns:
            raise EventError(0, "type", f"the DataFrame has no 'type' column (columns: {list(frame.columns)})")
        frame = frame.reset_index(drop=True)
        types = frame["type"]
        bad = types.isna() | ~types.map(lambda t: isinstance(t, str))
        if bad.any():
            position = int(bad.idxmax())
            raise EventError(position, "type", f"the type must be a non-null string, got {types[position]!r}")
        if "ts" in frame.columns:
            ts_col = frame["ts"]
            is_dt = pd.api.types.is_datetime64_any_dtype(ts_col)
            if is_dt:
                stamps = ts_col.dt.tz_localize("UTC") if ts_col.dt.tz is None else ts_col
                if stamps.isna().any():
                    raise EventError(int(stamps.isna().idxmax()), "ts", "ts is missing (NaT)")
                seconds = (stamps.astype("int64") / 1e9).to_numpy(dtype=float)
            elif pd.api.types.is_numeric_dtype(ts_col) and not pd.api.types.is_bool_dtype(ts_col):
                seconds = ts_col.to_numpy(dtype=float)
                if np.isnan(seconds).any():
                    raise EventError(int(np.argmax(np.isnan(seconds))), "ts", "ts is missing (NaN)")
            else:
                values = [_to_seconds(v, i) for i, v in enumerate(ts_col)]
                seconds = np.array([v[0] for v in values], dtype=float)
                is_dt = any(v[1] for v in values)
            ts_values = ts_col.tolist()
        else:
            seconds = np.arange(len(frame), dtype=float)
            ts_values = list(range(len(frame)))
            is_dt = False
        attr_cols = [c for c in frame.columns if c not in RESERVED]
        records = frame[attr_cols].to_dict("records") if attr_cols else [{} for _ in range(len(frame))]
        events = [
            Event(t, ts, {k: v for k, v in rec.items() if not _is_null(v)}, i, float(s))
            for i, (t, ts, rec, s) in enumerate(zip(types.tolist(), ts_values, records, seconds))
        ]
        return cls(events, bool(is_dt), frame)

    def __len__(self):
        return len(self.events)

    def __iter__(self):
        return iter(self.events)

    def __getitem__(self, i):
        return self.events[i]

    @cached_property
    def times(self) -> np.ndarray:
        return np.fromiter((e.time for e in self.events), dtype=float, count=len(self.events))

    @cached_property
    def types(self) -> list:
        return [e.type for e in self.events]

    @property
    def frame(self) -> pd.DataFrame:
        """The events as a DataFrame (type, ts, attributes), in arrival order."""
        if self._frame is None:
            self._frame = pd.DataFrame([e.to_dict() for e in self.events], columns=None)
        return self._frame

    def first_disorder(self) -> Optional[int]:
        """The first position whose ts is earlier than an earlier position's ts, or None if in order."""
        t = self.times
        if len(t) < 2:
            return None
        running = np.maximum.accumulate(t)
        bad = np.nonzero(t[1:] < running[:-1])[0]
        return int(bad[0]) + 1 if len(bad) else None

    def require_order(self) -> None:
        position = self.first_disorder()
        if position is not None:
            earlier = int(np.argmax(self.times[:position] > self.times[position]))
            raise EventError(position, "ts", f"the stream is out of order: ts {self.events[position].ts!r} comes "
                                             f"after ts {self.events[earlier].ts!r} at position {earlier}; sort it, "
                                             "or choose an out-of-order mode with disorder=")

    def logical_order(self) -> list:
        """Positions sorted by (time, position): the order sequence and windows use (LANGUAGE.md §10.1)."""
        return sorted(range(len(self.events)), key=lambda i: (self.events[i].time, i))

    def attributes_of(self, types: Optional[frozenset] = None) -> set:
        """Attribute names seen on events of the given types; for all events (``None``), also the attribute
        columns of the DataFrame the stream came from, null in every row or not."""
        names = set()
        if types is None and self._frame is not None:
            names.update(c for c in self._frame.columns if c not in RESERVED)
        for e in self.events:
            if types is None or e.type in types:
                names.update(e.attrs)
        return names
