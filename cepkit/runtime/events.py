"""Events and streams (docs/language.md §1).

A ``Stream`` is the one input every engine receives, held as columns (docs/decisions.md, "Stream as
columns"): the type of each event as a code into the list of type names, its time in seconds (``times``;
datetime ts are converted), its ts as given, its position, and one ``Column`` per attribute with a null
mask. A DataFrame's or an Arrow table's columns stay columns; dicts and ``Event``s are turned into columns
once. Validation is vectorized and names the first bad position and field (``EventError``).

``Event`` objects are a lazy view: ``stream[i]`` and iteration build them on demand (iteration builds
them all once and keeps them), with their null attributes left out, so an event's attributes are
exactly the fields it has. Engines that walk events one by one read that view; the columnar engines
read ``type_codes``, ``times`` and ``column(name)``.
"""
from __future__ import annotations

import ctypes
import datetime as _dt
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from types import SimpleNamespace
from typing import Any, Iterable, Optional

import numpy as np
import pandas as pd

from ..errors import EventError

RESERVED = ("type", "ts")
PUNCTUATION = "PUNCTUATION"
EXACT_FLOAT = 2 ** 53   # integers up to this size are exact in a float64


@dataclass(frozen=True, slots=True)
class Event:
    """One event. ``ts`` is as given; ``time`` is ts in seconds (float) for windows and ordering.

    A plain record: it is validated when it enters a stream (``Stream.from_any``, ``make_event``,
    ``Matcher.push``), where a bad one gets an ``EventError`` naming its position (a type that is not a
    string, a ts that is not a finite number or datetime); ``attrs=None`` means no attributes.
    """
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


# ----------------------------------------------------------------------------- ts
def _is_null(value) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _to_seconds(value, position: int) -> tuple:
    """(seconds, is_datetime) for a ts value; EventError unless it is a finite number or a datetime."""
    if value is None or isinstance(value, (bool, np.bool_)):
        raise EventError(position, "ts", f"expected a number or a datetime, got {value!r}")
    if isinstance(value, (_dt.date, np.datetime64)):     # datetime, date, pd.Timestamp, NaT
        try:
            stamp = pd.Timestamp(value)
        except (ValueError, OverflowError) as err:
            raise EventError(position, "ts", f"datetime {value!r} is out of range ({err})") from None
        if stamp is pd.NaT:
            raise EventError(position, "ts", "ts is missing (NaT)")
        if stamp.tzinfo is None:
            stamp = stamp.tz_localize("UTC")
        return stamp.timestamp(), True
    if isinstance(value, (int, float, Decimal, np.integer, np.floating)) or \
            (hasattr(value, "__float__") and not isinstance(value, (complex, np.complexfloating, str))):
        try:
            seconds = float(value)
        except (OverflowError, TypeError, ValueError):
            raise EventError(position, "ts", f"ts {_short(value)} is out of range for a float") from None
        if math.isnan(seconds):
            raise EventError(position, "ts", "ts is missing (NaN)")
        if math.isinf(seconds):
            raise EventError(position, "ts", f"ts must be finite, got {_short(value)}")
        return seconds, False
    raise EventError(position, "ts", f"expected a number or a datetime, got {type(value).__name__} {_short(value)}")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _mixing(position: int, is_datetime: bool) -> EventError:
    now, before = ("a datetime", "numbers") if is_datetime else ("a number", "datetimes")
    return EventError(position, "ts", f"ts is {now} but earlier ts are {before}: one stream's ts are all numbers "
                                      "or all datetimes")


def _seconds_of_values(values: list, first_position: int) -> tuple:
    """(seconds, is_datetime) of a list of ts values, one kind for the whole stream."""
    seconds = np.empty(len(values))
    kind = None
    for i, value in enumerate(values):
        seconds[i], is_dt = _to_seconds(value, first_position + i)
        if kind is None:
            kind = is_dt
        elif is_dt != kind:
            raise _mixing(first_position + i, is_dt)
    return seconds, bool(kind)


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask))


def _frame_seconds(col: pd.Series, first_position: int) -> tuple:
    """(seconds, is_datetime) of a DataFrame's ts column, vectorized where the dtype allows."""
    dtype = col.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype):
        missing = col.isna().to_numpy()
        if missing.any():
            raise EventError(first_position + _first(missing), "ts", "ts is missing (NaT)")
        if getattr(dtype, "tz", None) is not None:
            col = col.dt.tz_convert("UTC").dt.tz_localize(None)
        raw = col.to_numpy()
        unit, _ = np.datetime_data(raw.dtype)
        return raw.view(np.int64) / float(np.timedelta64(1, "s") / np.timedelta64(1, unit)), True
    kind = getattr(dtype, "kind", "O")
    if kind == "b":
        raise EventError(first_position, "ts", f"expected a number or a datetime, got {col.iloc[0]!r}")
    if kind == "c":
        raise EventError(first_position, "ts", f"expected a number or a datetime, got complex {col.iloc[0]!r}")
    if kind in "iuf":
        seconds = col.to_numpy(dtype=float, na_value=np.nan)
        bad = ~np.isfinite(seconds)
        if bad.any():
            i = _first(bad)
            reason = "ts is missing (NaN)" if np.isnan(seconds[i]) else f"ts must be finite, got {seconds[i]!r}"
            raise EventError(first_position + i, "ts", reason)
        return seconds, False
    return _seconds_of_values(col.tolist(), first_position)


# ----------------------------------------------------------------------------- attribute columns
class Column:
    """One attribute over a stream: ``values`` (a numpy array whose items, read with ``tolist()``, are the
    values the events carry) and ``null`` (the events without it). ``kind`` says how its known values
    compare: "num" (real numbers exact in a float64: ``numbers`` holds them as float64, NaN where null),
    "str" (strings), "bool", or "other" (mixed kinds, huge integers, lists...: compared as Python objects).
    """
    __slots__ = ("values", "null", "__dict__")   # __dict__: the cached classification

    def __init__(self, values: np.ndarray, null: np.ndarray):
        self.values, self.null = values, null

    @classmethod
    def of_series(cls, series: pd.Series) -> "Column":
        """A DataFrame column as it is: numpy numbers stay numpy, nullable dtypes become values + mask,
        anything else (strings, categories, datetimes) Python objects."""
        dtype = series.dtype
        kind = getattr(dtype, "kind", "O")
        if isinstance(dtype, np.dtype) and kind in "iub":
            return cls(series.to_numpy(), np.zeros(len(series), dtype=bool))
        if isinstance(dtype, np.dtype) and kind == "f":
            values = series.to_numpy()
            return cls(values, np.isnan(values))
        if kind in "iufb" and getattr(dtype, "numpy_dtype", None) is not None:   # Int64, Float64, boolean...
            fill = {"b": False, "f": np.nan}.get(kind, 0)
            null = np.asarray(series.array.isna(), dtype=bool)     # (its mask: no Series made, as isna() would)
            return cls(series.to_numpy(dtype=dtype.numpy_dtype, na_value=fill), null)
        null = series.isna().to_numpy()
        values = series.to_numpy(dtype=object)
        if null.any():
            values = values.copy()
            values[null] = None
        return cls(values, null)

    @classmethod
    def of_values(cls, raw: list) -> "Column":
        """The column of Python values ``raw`` (None or NaN: the event lacks the attribute)."""
        values = np.fromiter(raw, dtype=object, count=len(raw))
        null = np.asarray(pd.isna(values), dtype=bool)
        if null.any():
            values[null] = None
        return cls(values, null)

    @classmethod
    def missing(cls, n: int) -> "Column":
        return cls(np.full(n, None, dtype=object), np.ones(n, dtype=bool))

    def __len__(self):
        return len(self.values)

    def take(self, index) -> "Column":
        return Column(self.values[index], self.null[index])

    def followed_by(self, other: "Column") -> "Column":
        """This column's rows, then ``other``'s, each value comparing as it did: one dtype stays that dtype,
        two numeric kinds ("num") meet as float64 (exact, NaN where null), anything else as Python objects
        (a bool never becomes a number)."""
        null = np.concatenate([self.null, other.null])
        if self.values.dtype == other.values.dtype:
            return Column(np.concatenate([self.values, other.values]), null)
        if self.kind == other.kind == "num":
            return Column(np.concatenate([self.numbers, other.numbers]), null)
        return Column(np.concatenate([self.objects(), other.objects()]), null)

    @property
    def kind(self) -> str:
        return self._classified[0]

    @property
    def numbers(self) -> Optional[np.ndarray]:
        """float64 values (NaN where null) when ``kind`` is "num"; None otherwise."""
        return self._classified[1]

    def objects(self) -> np.ndarray:
        """The values as Python objects (None where null)."""
        if self.values.dtype == object:
            return self.values
        out = self.values.astype(object)
        out[self.null] = None
        return out

    @cached_property
    def _classified(self) -> tuple:
        values, null = self.values, self.null
        kind, numbers = "other", None
        if values.dtype.kind == "b":
            kind = "bool"
        elif values.dtype.kind in "iu":
            if not len(values) or (int(values.min()) >= -EXACT_FLOAT and int(values.max()) <= EXACT_FLOAT):
                kind, numbers = "num", _floats(values, null)
        elif values.dtype.kind == "f":
            kind, numbers = "num", _floats(values, null)
        else:
            known = values[~null]
            inferred = pd.api.types.infer_dtype(known, skipna=False)
            if inferred == "string":
                kind = "str"
            elif inferred == "boolean":
                kind = "bool"
            elif inferred in ("empty", "integer", "floating", "mixed-integer-float"):
                exact = _exact_floats(known)
                if exact is not None:
                    kind, numbers = "num", np.full(len(values), np.nan)
                    numbers[~null] = exact
        return kind, numbers


def _floats(values: np.ndarray, null: np.ndarray) -> np.ndarray:
    """Numeric ``values`` as float64, NaN where null (a plain conversion when none is: ~4x faster)."""
    return np.where(null, np.nan, values) if null.any() else values.astype(np.float64)


def _exact_floats(known: np.ndarray) -> Optional[np.ndarray]:
    """``known`` (Python or numpy real numbers, no bools) as float64 if every one is exactly a double."""
    try:
        floats = known.astype(float)
    except (OverflowError, TypeError, ValueError):
        return None
    big = np.abs(floats) >= EXACT_FLOAT   # where a double may have rounded the value
    if big.any() and not all(float(f) == v for f, v in zip(floats[big].tolist(), known[big].tolist())):
        return None
    return floats


# ----------------------------------------------------------------------------- one event
def make_event(raw, position: int) -> Event:
    """An ``Event`` at ``position`` from a dict or an Event; validates type and ts (None: the position)."""
    type_, ts, attrs = _parts(raw, position)
    if ts is None:
        ts = position
    seconds = raw.time if isinstance(raw, Event) and not _is_nan(raw.time) else _to_seconds(ts, position)[0]
    return Event(type_, ts, {k: v for k, v in attrs.items() if k not in RESERVED and not _is_null(v)},
                 position, seconds)


def _is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _parts(raw, position: int) -> tuple:
    """(type, ts or None, attributes mapping) of a dict or an Event, the type validated."""
    if isinstance(raw, Event):
        type_, ts, attrs = raw.type, raw.ts, raw.attrs
        if attrs is None:
            attrs = {}
        elif not isinstance(attrs, Mapping):
            raise EventError(position, "attrs", f"an Event's attrs are a dict, not {type(attrs).__name__}")
    elif isinstance(raw, Mapping):
        if "type" not in raw or _is_null(raw["type"]):
            raise EventError(position, "type", "every event needs a type")
        type_, ts, attrs = raw["type"], raw.get("ts"), raw
    else:
        raise EventError(position, "type", f"an event is a dict or a cepkit.Event, not {type(raw).__name__}")
    if not isinstance(type_, str):
        raise EventError(position, "type", f"the type must be a string, got {type(type_).__name__} {type_!r}")
    return type_, ts, attrs


# ----------------------------------------------------------------------------- streams
class Stream:
    """A finite stream of events in arrival order, as columns.

    Build one with ``Stream.from_any(events)`` from a pandas DataFrame, a pyarrow Table, an iterable of
    dicts or of ``Event``. ``Stream(events)`` wraps ``Event``s that already carry their positions and
    times (an engine's sub-stream). ``ts_is_datetime`` tells whether the ts are datetimes.
    """

    def __init__(self, events: Iterable = (), ts_is_datetime: bool = False):
        events = list(events)
        types, ts, attrs = [], [], {}
        for i, e in enumerate(events):
            types.append(e.type)
            ts.append(e.ts)
            for name, value in (e.attrs or {}).items():
                attrs.setdefault(name, [None] * len(events))[i] = value
        times = np.fromiter((e.time for e in events), dtype=float, count=len(events))
        codes, names = pd.factorize(np.fromiter(types, dtype=object, count=len(types)))
        positions = np.fromiter((e.position for e in events), dtype=np.int64, count=len(events))
        self._init(codes, names, times, pd.Series(ts, dtype=object), positions,
                   {name: Column.of_values(values) for name, values in attrs.items()}, ts_is_datetime)
        self.__dict__["events"] = events

    def _init(self, codes, names, times, ts, positions, attrs: dict, ts_is_datetime: bool, declared=(),
              frame=None) -> None:
        self.type_codes = codes.astype(np.int32, copy=False)   # code of each event's type
        self.type_names = list(names)                          # the type of each code
        self.times = times                                     # seconds, float64
        self._ts = ts                                          # ts as given (a Series), None: the position
        if isinstance(positions, (int, np.integer)):          # consecutive from there: made when read
            self._first_position = int(positions)
        else:
            self._first_position = None
            self.positions = positions                         # int64
        self._attrs = attrs                                    # name -> Column
        self._declared = tuple(declared)                       # attribute columns of the source frame
        self._frame = frame
        self._type_masks: dict = {}
        self.ts_is_datetime = bool(ts_is_datetime)

    @classmethod
    def _of_columns(cls, *args, **kwargs) -> "Stream":
        stream = cls.__new__(cls)
        stream._init(*args, **kwargs)
        return stream

    # ------------------------------------------------------------------ building
    @classmethod
    def from_any(cls, events, first_position: int = 0) -> "Stream":
        """A stream from a DataFrame, a pyarrow Table, dicts or Events (or a Stream, returned as is);
        positions start at ``first_position``."""
        if isinstance(events, Stream):
            return events
        if isinstance(events, pd.DataFrame):
            return cls.from_frame(events, first_position)
        if is_arrow(events):
            return cls.from_arrow(events, first_position)
        return cls.from_records(events, first_position)

    @classmethod
    def from_arrow(cls, table, first_position: int = 0) -> "Stream":
        """A pyarrow Table or RecordBatch: integer and boolean columns with nulls keep their kind."""
        import pyarrow as pa
        nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
                    pa.int64(): pd.Int64Dtype(), pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
                    pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(), pa.bool_(): pd.BooleanDtype()}
        names = list(table.schema.names)
        if len(set(names)) < len(names):     # to_pandas would merge them silently
            _duplicates(pd.Index(names), first_position)
        return cls.from_frame(table.to_pandas(types_mapper=nullable.get), first_position)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, first_position: int = 0) -> "Stream":
        """A DataFrame (column ``type``, optional ``ts``, one column per attribute): its columns are kept."""
        columns = frame.columns
        _duplicates(columns, first_position)
        if "type" not in columns:
            raise EventError(first_position, "type",
                             f"the DataFrame has no 'type' column (columns: {list(columns)})")
        n = len(frame)
        codes, names = _frame_types(frame["type"], first_position)
        if "ts" in columns:
            ts = frame["ts"]            # read by place (``iloc``) only: its index need not be reset (a copy)
            times, is_dt = _frame_seconds(ts, first_position)
        else:
            ts, times, is_dt = None, np.arange(first_position, first_position + n, dtype=float), False
        declared = [c for c in columns if c not in RESERVED]
        attrs = {c: Column.of_series(frame[c]) for c in declared}
        return cls._of_columns(codes, names, times, ts, first_position, attrs, is_dt, declared, frame)

    @classmethod
    def from_records(cls, events: Iterable, first_position: int = 0) -> "Stream":
        """Dicts or Events (re-positioned in order), turned into columns in one pass."""
        events = events if isinstance(events, list) else list(events)
        n = len(events)
        types, ts, attrs = [None] * n, [None] * n, {}
        seconds = np.empty(n)
        kind = None
        for i, raw in enumerate(events):
            position = first_position + i
            type_, value, fields = _parts(raw, position)
            if value is None:
                value = position
            time = raw.time if isinstance(raw, Event) and not _is_nan(raw.time) else None
            seconds[i], is_dt = _to_seconds(value, position)
            if time is not None:
                seconds[i] = time
            if kind is None:
                kind = is_dt
            elif is_dt != kind:
                raise _mixing(position, is_dt)
            types[i], ts[i] = type_, value
            for name, v in fields.items():
                if name not in RESERVED:
                    column = attrs.get(name)
                    if column is None:
                        column = attrs[name] = [None] * n
                    column[i] = v
        codes, names = pd.factorize(np.fromiter(types, dtype=object, count=n))
        return cls._of_columns(codes, names, seconds, pd.Series(ts, dtype=object), first_position,
                               {name: Column.of_values(values) for name, values in attrs.items()}, bool(kind))

    def numbered(self, positions) -> "Stream":
        """The same events at ``positions`` (increasing): numbered by a caller that feeds an engine a part of
        a larger stream (a Spark key's ranks). Without a ts column the ts are these positions."""
        return Stream._of_columns(self.type_codes, self.type_names, self.times, self._ts,
                                  np.asarray(positions, np.int64), self._attrs, self.ts_is_datetime, self._declared,
                                  self._frame)

    def take(self, index) -> "Stream":
        """The events at ``index`` (indices into this stream, a mask, or a slice: its columns are then
        views), keeping their positions."""
        if isinstance(index, slice):
            picked = np.arange(len(self))[index]
        else:
            index = picked = np.asarray(index)
            if index.dtype == bool:
                index = picked = np.flatnonzero(index)
        ts = None if self._ts is None else self._ts.iloc[index].reset_index(drop=True)
        stream = Stream._of_columns(self.type_codes[index], self.type_names, self.times[index], ts,
                                    self.position_of(picked), {k: c.take(index) for k, c in self._attrs.items()},
                                    self.ts_is_datetime, self._declared)
        if "events" in self.__dict__:
            events = self.__dict__["events"]
            stream.__dict__["events"] = [events[i] for i in picked.tolist()]
        return stream

    def followed_by(self, other: "Stream") -> "Stream":
        """This stream's events, then ``other``'s, each keeping its position (an incremental matcher's kept
        events and the micro-batch after them): types re-coded through their names, every attribute of
        either (null where a side lacks it), ts as given. Both must have the same kind of ts (an empty one
        has none: the other is returned)."""
        if not len(self) or not len(other):
            return other if not len(self) else self
        if self.ts_is_datetime != other.ts_is_datetime:
            raise ValueError("streams with datetime ts and with numeric ts cannot be joined")
        code_of = {t: k for k, t in enumerate(self.type_names)}
        for t in other.type_names:
            code_of.setdefault(t, len(code_of))
        names = list(code_of)
        recode = np.asarray([code_of[t] for t in other.type_names], dtype=np.int32)
        codes = np.concatenate([self.type_codes, recode[other.type_codes] if len(recode) else other.type_codes])
        attrs = {name: self.column(name).followed_by(other.column(name))
                 for name in dict.fromkeys(self.attributes + other.attributes)}
        if self._ts is None and other._ts is None:     # both: the ts are the positions, which are kept
            ts = None
        else:       # (numpy's concatenation: pandas' costs ~10x more on a micro-batch)
            ts = pd.Series(np.concatenate([self._ts_values(), other._ts_values()]), copy=False)
        return Stream._of_columns(codes, names, np.concatenate([self.times, other.times]), ts,
                                  np.concatenate([self.position_of(np.arange(len(self))),
                                                  other.position_of(np.arange(len(other)))]),
                                  attrs, self.ts_is_datetime, dict.fromkeys(self._declared + other._declared))

    def _ts_values(self) -> np.ndarray:
        """The ts as given (the positions where the stream has no ts column)."""
        return self.position_of(np.arange(len(self))) if self._ts is None else self._ts.to_numpy()

    # ------------------------------------------------------------------ the lazy view: Events
    def __len__(self):
        return len(self.times)

    @cached_property
    def positions(self) -> np.ndarray:
        """The position of each event (int64); a stream built from columns holds consecutive positions as
        its first one and makes this array when it is first read (80 MB per 10M events)."""
        return np.arange(self._first_position, self._first_position + len(self), dtype=np.int64)

    def position_of(self, index) -> np.ndarray:
        """The positions of the events at ``index`` (indices into the stream), without making ``positions``
        when they are consecutive."""
        if self._first_position is None:
            return self.positions[index]
        return np.asarray(index, dtype=np.int64) + self._first_position

    @cached_property
    def events(self) -> list:
        """Every event as an ``Event``, built once on first use."""
        return self._build(slice(None))

    def __iter__(self):
        return iter(self.events)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.take(i)
        if "events" in self.__dict__:
            return self.__dict__["events"][i]
        n = len(self)
        i = int(i)
        if not -n <= i < n:
            raise IndexError(f"position {i} is outside a stream of {n} events")
        return self._build(slice(i % n, i % n + 1))[0]

    def _build(self, rows: slice) -> list:
        codes = self.type_codes[rows].tolist()
        names = self.type_names
        times = self.times[rows].tolist()
        if self._first_position is None:
            positions = self.positions[rows].tolist()
        else:
            start, stop, step = rows.indices(len(self))
            positions = list(range(self._first_position + start, self._first_position + stop, step))
        ts = positions if self._ts is None else self._ts.iloc[rows].tolist()
        fields = [(name, column.values[rows].tolist(), column.null[rows].tolist())
                  for name, column in self._attrs.items()]
        if fields:
            attrs = [{} for _ in codes]
            for name, values, null in fields:
                for held, value, missing in zip(attrs, values, null):
                    if not missing:
                        held[name] = value
        else:
            attrs = [{} for _ in codes]
        return [Event(names[c], t, a, p, s) for c, t, a, p, s in zip(codes, ts, attrs, positions, times)]

    # ------------------------------------------------------------------ columns
    @cached_property
    def types(self) -> np.ndarray:
        """The type of each event (an object array)."""
        return np.asarray(self.type_names, dtype=object)[self.type_codes] if len(self) else \
            np.zeros(0, dtype=object)

    def type_in(self, types) -> np.ndarray:
        """Whether each event's type is one of ``types`` (kept: engines ask the same question often)."""
        types = frozenset(types)
        found = self._type_masks.get(types)
        if found is None:
            codes = [k for k, name in enumerate(self.type_names) if name in types]
            if not codes:           # (zeros are pages the system maps when written, and they never are)
                found = np.zeros(len(self), dtype=bool)
            elif len(codes) == 1:
                found = self.type_codes == codes[0]
            else:
                found = np.isin(self.type_codes, codes)
            self._type_masks[types] = found
            found.flags.writeable = False
        return found

    @property
    def attributes(self) -> tuple:
        """The attribute names that have a column."""
        return tuple(self._attrs)

    def column(self, name: str) -> Column:
        """The attribute ``name`` over the stream (every event null when no event has it)."""
        found = self._attrs.get(name)
        return found if found is not None else Column.missing(len(self))

    @property
    def frame(self) -> pd.DataFrame:
        """The events as a DataFrame (type, ts, attributes), in arrival order."""
        if self._frame is None:
            ts = pd.Series(self.positions) if self._ts is None else self._ts
            self._frame = pd.DataFrame({"type": self.types, "ts": ts.to_numpy(),
                                        **{k: c.objects() for k, c in self._attrs.items()}})
        elif not isinstance(self._frame.index, pd.RangeIndex) or self._frame.index.start != 0:
            self._frame = self._frame.reset_index(drop=True)
        return self._frame

    def first_disorder(self, after: float = -math.inf) -> Optional[int]:
        """The first index whose ts is earlier than an earlier event's ts (or than ``after``, the latest ts
        of the events before the stream: a micro-batch's), or None if in order."""
        t = self.times
        if not len(t) or (t[0] >= after and (t[1:] >= t[:-1]).all()):
            return None
        bad = np.flatnonzero(t < np.maximum.accumulate(np.r_[after, t[:-1]]))
        return int(bad[0]) if len(bad) else None

    def require_order(self) -> None:
        index = self.first_disorder()
        if index is not None:
            earlier = int(np.argmax(self.times[:index] > self.times[index]))
            raise EventError(int(self.position_of(index)), "ts",
                             f"the stream is out of order: ts {self[index].ts!r} comes after ts "
                             f"{self[earlier].ts!r} at position {int(self.position_of(earlier))}; sort it, or "
                             "choose an out-of-order mode with disorder=")

    def logical_order(self) -> list:
        """Indices sorted by (time, index): the order sequence and windows use (docs/language.md §10.1)."""
        return np.argsort(self.times, kind="stable").tolist()

    def attributes_of(self, types: Optional[frozenset] = None) -> set:
        """Attribute names seen on events of the given types; for all events (``None``), also the attribute
        columns of the DataFrame the stream came from, null in every row or not."""
        if types is None:
            return set(self._declared) | {name for name, c in self._attrs.items() if not c.null.all()}
        wanted = self.type_in(types)
        return {name for name, c in self._attrs.items() if (wanted & ~c.null).any()}

    def key_codes(self, names) -> np.ndarray:
        """A code per event for its values of ``names`` (a PARTITION BY key), numbered in order of first
        appearance: equal codes exactly for keys Python finds equal; a null value is a key too."""
        combined = np.zeros(len(self), dtype=np.int64)
        for name in names:
            if name == "type":
                codes = self.type_codes.astype(np.int64)
            elif name == "ts":
                codes = pd.factorize(self.times)[0]
            else:
                column = self.column(name)
                codes = pd.factorize(column.numbers if column.kind == "num" else column.objects())[0]
            combined = combined * (int(codes.max(initial=0)) + 2) + codes + 1
            combined = pd.factorize(combined)[0]
        return combined

    def require_hashable(self, name: str) -> None:
        """EventError at the first event whose ``name`` cannot be a PARTITION BY key (a list, a dict...)."""
        column = self._attrs.get(name)
        if column is None or column.values.dtype != object:
            return
        try:
            pd.factorize(column.values)
            return
        except TypeError:
            pass
        for i, value in enumerate(column.values.tolist()):
            try:
                hash(value)
            except TypeError:
                raise EventError(int(self.position_of(i)), name,
                                 f"PARTITION BY needs values that can be keys, got {type(value).__name__} "
                                 f"{_short(value)}") from None


def hashable_key(value):
    """``value`` as a dict key with Python's equality: itself when hashable; a list, tuple, dict or set by
    its contents (tagged with its kind, as ``[1] != (1,)``); anything else only equal to itself."""
    try:
        hash(value)
        return value
    except TypeError:
        pass
    if isinstance(value, Mapping):
        return ("dict", frozenset((k, hashable_key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(hashable_key(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(value))
    return ("object", id(value))


def is_arrow(events) -> bool:
    """Whether ``events`` is a pyarrow Table or RecordBatch (without importing pyarrow)."""
    return type(events).__module__.startswith("pyarrow") and hasattr(events, "to_pandas") and \
        hasattr(events, "schema")


def _duplicates(columns: pd.Index, first_position: int) -> None:
    if columns.is_unique:       # (cached by the Index, which a micro-batch's slice shares with its frame)
        return
    twice = columns[columns.duplicated()]
    if len(twice):
        name = twice[0]
        raise EventError(first_position, str(name), f"the DataFrame has two {name!r} columns")


FACTORIZE_ROWS = 1 << 20     # rows factorized at once: pandas' codes are int64, the stream keeps int32
FEW_OBJECTS = 4096           # distinct objects in a slice up to which they are merged by value one by one


def _factorized(values) -> tuple:
    """(int32 codes, the types in order of first appearance) of a type column (a numpy or pandas array),
    as ``pd.factorize`` gives them, with -1 for a null and for any value that is not a string (an error
    for the caller to name), a slice at a time: its int64 codes for a 10M-row column (80 MB) would exceed
    the int32 column kept.

    An object column (``type`` of strings in a DataFrame) mostly repeats a few ``str`` objects: its slices
    are numbered by the objects' addresses (with numba a pass with a small table, else ``pd.factorize``
    of the addresses: 5-15x faster than hashing each string), and the few distinct objects are then
    merged by value (distinct but equal strings get one code; order of first appearance is kept, since
    addresses are met in that order)."""
    by_address = isinstance(values, np.ndarray) and values.dtype == object
    if by_address:
        addresses = _addresses(values)
        numbering = _address_numbering()
    codes = np.empty(len(values), np.int32)
    known: dict = {}                # type -> its code
    for start in range(0, len(values), FACTORIZE_ROWS):
        stop = min(start + FACTORIZE_ROWS, len(values))
        part, uniques, in_place = codes[start:stop], None, False
        if by_address:
            if numbering is not None:
                firsts, complete = numbering(addresses[start:stop], part, FEW_OBJECTS)
                in_place = complete
            else:
                part, firsts = pd.factorize(addresses[start:stop])
                complete = len(firsts) <= FEW_OBJECTS
            if complete:           # (``values`` holds the objects: their addresses stay theirs)
                uniques = [ctypes.cast(int(a), ctypes.py_object).value for a in firsts.tolist()]
        if uniques is None:
            part, uniques = pd.factorize(values[start:stop])
        ids = [known.setdefault(u, len(known)) if isinstance(u, str) else -1 for u in uniques]
        if in_place and ids == list(range(len(ids))):
            continue               # numbered in place, as the whole column numbers them
        codes[start:stop] = np.array(ids + [-1], dtype=np.int32)[part]    # (-1, a null, reads the last -1)
    return codes, list(known)


def _number_addresses(addresses, out, limit):
    """Numbers each address by first appearance into ``out`` (int32) with an open-addressing table;
    (the distinct addresses in that order, True), or (-, False) past ``limit`` of them. Compiled by numba
    (``_address_numbering``); no address is 0."""
    size = 1
    while size < 2 * limit:
        size *= 2
    slots = np.zeros(size, np.int64)
    slot_codes = np.zeros(size, np.int32)
    firsts = np.zeros(limit, np.int64)
    count = 0
    last, last_code = 0, 0
    for i in range(len(addresses)):
        address = addresses[i]
        if address != last:
            j = (address >> 4) & (size - 1)
            while slots[j] != 0 and slots[j] != address:
                j = (j + 1) & (size - 1)
            if slots[j] == 0:
                if count == limit:
                    return firsts[:0], False
                slots[j] = address
                slot_codes[j] = count
                firsts[count] = address
                count += 1
            last, last_code = address, slot_codes[j]
        out[i] = last_code
    return firsts[:count], True


@functools.cache
def _address_numbering():
    """``_number_addresses`` compiled, or None without numba (the ``fast`` extra) or with its JIT off."""
    try:
        import numba
    except ImportError:   # pragma: no cover - numba is in the dev/bench/fast extras
        return None
    if numba.config.DISABLE_JIT:
        return None
    return numba.njit(cache=True, nogil=True)(_number_addresses)


def _addresses(values: np.ndarray) -> np.ndarray:
    """The addresses of an object array's items: a read-only intp view of its references, strides and
    all (it holds ``values``, so each address stays its object's). An array interface, not a ctypes
    array: ctypes keeps a new array type for every length it is asked for."""
    holder = SimpleNamespace(values=values, __array_interface__={
        "data": (values.ctypes.data, True), "shape": values.shape, "strides": values.strides,
        "typestr": np.dtype(np.intp).str, "version": 3})
    return np.asarray(holder)


def _frame_types(col: pd.Series, first_position: int) -> tuple:
    """(codes, names) of a DataFrame's type column; EventError at the first null or non-string type."""
    bad_codes = []
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes, names = col.cat.codes.to_numpy(), list(col.cat.categories)
        bad_codes = [k for k, name in enumerate(names) if not isinstance(name, str)]
    else:   # (an Arrow-backed string column is dictionary-encoded by Arrow, not turned into objects)
        codes, names = _factorized(col.to_numpy() if isinstance(col.dtype, np.dtype) else col.array)
    bad = codes < 0
    if bad_codes:
        bad |= np.isin(codes, bad_codes)
    if bad.any():
        i = _first(bad)
        value = col.iloc[i]
        raise EventError(first_position + i, "type", f"the type must be a non-null string, got {value!r}")
    return codes, names
