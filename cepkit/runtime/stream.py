"""A finite stream of events as columns (docs/language.md §1).

A ``Stream`` is the one input every engine receives, held as columns (docs/decisions.md, "Stream as
columns"): the type of each event as a code into the list of type names (``type_codes.py``), its time in
seconds (``times``; datetime ts are converted, ``timestamps.py``), its ts as given, its position, and one
``AttributeColumn`` per attribute with a null mask (``attribute_columns.py``). A DataFrame's or an Arrow table's
columns stay columns; dicts and ``Event``s are turned into columns once. Validation is vectorized and names
the first bad position and field (``EventError``).

``Event`` objects are a lazy view: ``stream[i]`` and iteration build them on demand (iteration builds
them all once and keeps them), with their null attributes left out, so an event's attributes are
exactly the fields it has. Engines that walk events one by one read that view; the columnar engines
read ``type_codes``, ``times`` and ``column(name)``.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Iterable, Optional

import numpy as np
import pandas as pd

from ..errors import EventError, shown
from .attribute_columns import AttributeColumn
from .columns import is_arrow
from .event_record import RESERVED, Event, event_parts, is_nan
from .timestamps import frame_seconds, missing_ts_error, mixing_error, short_repr, to_seconds
from .type_codes import frame_types


class Stream:
    """A finite stream of events in arrival order, as columns.

    Build one with ``Stream.from_any(events)`` from a pandas DataFrame, a pyarrow Table, an iterable of
    dicts or of ``Event``. ``Stream(events)`` wraps ``Event``s that already carry their positions and
    times (an engine's sub-stream). ``ts_is_datetime`` tells whether the ts are datetimes.

    Parameters
    ----------
    events : iterable of Event
        Events carrying their positions and times.
    ts_is_datetime : bool, default False
        Whether their ts are datetimes.

    See Also
    --------
    Stream.from_any : the usual way to build one.

    Examples
    --------
    >>> from cepkit.runtime.stream import Stream
    >>> stream = Stream.from_any([{"type": "A", "ts": 0, "v": 1}, {"type": "B", "ts": 1.5}])
    >>> len(stream), stream.type_names, stream.times.tolist(), stream.attributes
    (2, ['A', 'B'], [0.0, 1.5], ('v',))
    """

    def __init__(self, events: Iterable = (), ts_is_datetime: bool = False):
        events = list(events)
        types, ts, attrs = [], [], {}  # type: list, list, dict[str, list]
        for i, e in enumerate(events):
            types.append(e.type)
            ts.append(e.ts)
            for name, value in (e.attrs or {}).items():
                attrs.setdefault(name, [None] * len(events))[i] = value
        times = np.fromiter((e.time for e in events), dtype=float, count=len(events))
        codes, names = pd.factorize(np.fromiter(types, dtype=object, count=len(types)))
        positions = np.fromiter((e.position for e in events), dtype=np.int64, count=len(events))
        self._init(
            codes,
            names,
            times,
            pd.Series(ts, dtype=object),
            positions,
            {name: AttributeColumn.of_values(values) for name, values in attrs.items()},
            ts_is_datetime,
        )
        self.__dict__["events"] = events

    def _init(
        self, codes, names, times, ts, positions, attrs: dict, ts_is_datetime: bool, declared=(), frame=None
    ) -> None:
        self.type_codes = codes.astype(np.int32, copy=False)  # code of each event's type
        self.type_names = list(names)  # the type of each code
        self.times = times  # seconds, float64
        self._ts = ts  # ts as given (a Series), None: the position
        if isinstance(positions, (int, np.integer)):  # consecutive from there: made when read
            self._first_position: int | None = int(positions)
        else:
            self._first_position = None
            self.positions = positions  # int64
        self._attrs = attrs  # name -> AttributeColumn
        self._declared = tuple(declared)  # attribute columns of the source frame
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
        """A stream from a DataFrame, a pyarrow Table, dicts or Events (or a Stream, returned as is).

        Parameters
        ----------
        events : DataFrame, pyarrow Table, iterable of dicts or Event, or Stream
            One event per row: ``type``, an optional ``ts`` (the position when absent), attributes.
        first_position : int, default 0
            The position of the first event; the others follow.

        Returns
        -------
        Stream
            The events as columns.

        Raises
        ------
        EventError
            An event is malformed: its position and the field (no type, a non-finite or mixed ts,
            duplicate columns).

        Examples
        --------
        >>> import pandas as pd
        >>> stream = Stream.from_any(pd.DataFrame({"type": ["A", "B"], "ts": [3, 4]}), first_position=10)
        >>> stream.positions.tolist(), stream.type_names
        ([10, 11], ['A', 'B'])
        """
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

        nullable = {
            pa.int8(): pd.Int8Dtype(),
            pa.int16(): pd.Int16Dtype(),
            pa.int32(): pd.Int32Dtype(),
            pa.int64(): pd.Int64Dtype(),
            pa.uint8(): pd.UInt8Dtype(),
            pa.uint16(): pd.UInt16Dtype(),
            pa.uint32(): pd.UInt32Dtype(),
            pa.uint64(): pd.UInt64Dtype(),
            pa.bool_(): pd.BooleanDtype(),
        }
        names = list(table.schema.names)
        if len(set(names)) < len(names):  # to_pandas would merge them silently
            _duplicates(pd.Index(names), first_position)
        return cls.from_frame(table.to_pandas(types_mapper=nullable.get), first_position)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, first_position: int = 0) -> "Stream":
        """A DataFrame (column ``type``, optional ``ts``, one column per attribute): its columns are kept."""
        columns = frame.columns
        _duplicates(columns, first_position)
        if "type" not in columns:
            raise EventError(first_position, "type", f"the DataFrame has no 'type' column (columns: {list(columns)})")
        n = len(frame)
        codes, names = frame_types(frame["type"], first_position)
        if "ts" in columns:
            ts = frame["ts"]  # read by place (``iloc``) only: its index need not be reset (a copy)
            times, is_dt = frame_seconds(ts, first_position)
        else:
            ts, times, is_dt = None, np.arange(first_position, first_position + n, dtype=float), False
        declared = [c for c in columns if c not in RESERVED]
        attrs = {c: AttributeColumn.of_series(frame[c]) for c in declared}
        return cls._of_columns(codes, names, times, ts, first_position, attrs, is_dt, declared, frame)

    @classmethod
    def from_records(cls, events: Iterable, first_position: int = 0) -> "Stream":
        """Dicts or Events (re-positioned in order), turned into columns in one pass."""
        events = events if isinstance(events, list) else list(events)
        n = len(events)
        types, ts, attrs = [None] * n, [None] * n, {}  # type: list, list, dict[str, list]
        seconds = np.empty(n)
        kind = given = None
        for i, raw in enumerate(events):
            position = first_position + i
            type_, value, fields = event_parts(raw, position)
            if given is None:
                given = value is not None
            elif given != (value is not None):
                raise missing_ts_error(position, not given)
            if value is None:
                value = position
            time = raw.time if isinstance(raw, Event) and not is_nan(raw.time) else None
            seconds[i], is_dt = to_seconds(value, position)
            if time is not None:
                seconds[i] = time
            if kind is None:
                kind = is_dt
            elif is_dt != kind:
                raise mixing_error(position, is_dt)
            types[i], ts[i] = type_, value
            for name, v in fields.items():
                if name not in RESERVED:
                    column = attrs.get(name)
                    if column is None:
                        column = attrs[name] = [None] * n
                    column[i] = v
        codes, names = pd.factorize(np.fromiter(types, dtype=object, count=n))
        return cls._of_columns(
            codes,
            names,
            seconds,
            pd.Series(ts, dtype=object),
            first_position,
            {name: AttributeColumn.of_values(values) for name, values in attrs.items()},
            bool(kind),
        )

    def numbered(self, positions) -> "Stream":
        """The same events at ``positions`` (increasing): numbered by a caller that feeds an engine a part of
        a larger stream (a Spark key's ranks). Without a ts column the ts are these positions."""
        return Stream._of_columns(
            self.type_codes,
            self.type_names,
            self.times,
            self._ts,
            np.asarray(positions, np.int64),
            self._attrs,
            self.ts_is_datetime,
            self._declared,
            self._frame,
        )

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
        stream = Stream._of_columns(
            self.type_codes[index],
            self.type_names,
            self.times[index],
            ts,
            self.position_of(picked),
            {k: c.take(index) for k, c in self._attrs.items()},
            self.ts_is_datetime,
            self._declared,
        )
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
        attrs = {
            name: self.column(name).followed_by(other.column(name))
            for name in dict.fromkeys(self.attributes + other.attributes)
        }
        if self._ts is None and other._ts is None:  # both: the ts are the positions, which are kept
            ts = None
        else:  # (numpy's concatenation: pandas' costs ~10x more on a micro-batch)
            first, second = self._ts_values(), other._ts_values()
            if isinstance(first, pd.api.extensions.ExtensionArray) and first.dtype == second.dtype:
                # tz-aware datetimes: as numpy they would be an object array of Timestamps (7 s per 1M)
                ts = pd.concat([pd.Series(first), pd.Series(second)], ignore_index=True)
            else:
                ts = pd.Series(np.concatenate([np.asarray(first), np.asarray(second)]), copy=False)
        return Stream._of_columns(
            codes,
            names,
            np.concatenate([self.times, other.times]),
            ts,
            np.concatenate([self.position_of(np.arange(len(self))), other.position_of(np.arange(len(other)))]),
            attrs,
            self.ts_is_datetime,
            dict.fromkeys(self._declared + other._declared),
        )

    def _ts_values(self) -> np.ndarray:
        """The ts as given (the positions where the stream has no ts column)."""
        if self._ts is None:
            return self.position_of(np.arange(len(self)))
        return self._ts.array if isinstance(self._ts.dtype, pd.DatetimeTZDtype) else self._ts.to_numpy()

    # ------------------------------------------------------------------ the lazy view: Events
    def __len__(self):
        return len(self.times)

    @cached_property
    def positions(self) -> np.ndarray:
        """The position of each event (int64); a stream built from columns holds consecutive positions as
        its first one and makes this array when it is first read (80 MB per 10M events)."""
        first = self._first_position
        assert first is not None  # otherwise the constructor stored the array itself
        return np.arange(first, first + len(self), dtype=np.int64)

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
        fields = [
            (name, column.values[rows].tolist(), column.null[rows].tolist()) for name, column in self._attrs.items()
        ]
        attrs: list[dict] = [{} for _ in codes]
        for name, values, null in fields:
            for held, value, missing in zip(attrs, values, null):
                if not missing:
                    held[name] = value
        return [Event(names[c], t, a, p, s) for c, t, a, p, s in zip(codes, ts, attrs, positions, times)]

    # ------------------------------------------------------------------ columns
    @cached_property
    def types(self) -> np.ndarray:
        """The type of each event (an object array)."""
        return np.asarray(self.type_names, dtype=object)[self.type_codes] if len(self) else np.zeros(0, dtype=object)

    def type_in(self, types) -> np.ndarray:
        """Whether each event's type is one of ``types`` (kept: engines ask the same question often)."""
        types = frozenset(types)
        found = self._type_masks.get(types)
        if found is None:
            codes = [k for k, name in enumerate(self.type_names) if name in types]
            if not codes:  # (zeros are pages the system maps when written, and they never are)
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

    def column(self, name: str) -> AttributeColumn:
        """The attribute ``name`` over the stream (every event null when no event has it)."""
        found = self._attrs.get(name)
        return found if found is not None else AttributeColumn.missing(len(self))

    @property
    def frame(self) -> pd.DataFrame:
        """The events as a DataFrame (type, ts, attributes), in arrival order."""
        if self._frame is None:
            ts = pd.Series(self.positions) if self._ts is None else self._ts
            self._frame = pd.DataFrame(
                {"type": self.types, "ts": ts.to_numpy(), **{k: c.objects() for k, c in self._attrs.items()}}
            )
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
            raise EventError(
                int(self.position_of(index)),
                "ts",
                f"the stream is out of order: ts {shown(self[index].ts)} comes after ts "
                f"{shown(self[earlier].ts)} at position {int(self.position_of(earlier))}; sort it, or "
                "choose an out-of-order mode with disorder=",
            )

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
        for i, name in enumerate(names):
            if name == "type":
                codes = self.type_codes.astype(np.int64)
            elif name == "ts":
                codes = pd.factorize(self.times)[0]
            else:
                column = self.column(name)
                codes = pd.factorize(column.numbers if column.kind == "num" else column.objects())[0]
            if i == 0 and name != "type" and codes.min(initial=0) >= 0:
                combined = codes.astype(np.int64)  # factorize's codes are first-appearance codes already
                continue
            combined = combined * (int(codes.max(initial=0)) + 2) + codes + 1
            combined = pd.factorize(combined)[0]
        return combined

    def later_in_key(self, names) -> np.ndarray:
        """Per event, how many events with its values of ``names`` (a PARTITION BY key; none: the whole
        stream) come after it."""
        if not names:
            return np.arange(len(self))[::-1]
        codes = self.key_codes(names)
        counts = np.bincount(codes)
        order = np.argsort(codes, kind="stable")
        rank = np.empty(len(codes), dtype=np.int64)
        rank[order] = np.arange(len(codes)) - np.repeat(np.cumsum(counts) - counts, counts)
        return counts[codes] - 1 - rank

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
                raise EventError(
                    int(self.position_of(i)),
                    name,
                    f"PARTITION BY needs values that can be keys, got {type(value).__name__} {short_repr(value)}",
                ) from None


def _duplicates(columns: pd.Index, first_position: int) -> None:
    if columns.is_unique:  # (cached by the Index, which a micro-batch's slice shares with its frame)
        return
    twice = columns[columns.duplicated()]
    if len(twice):
        name = twice[0]
        raise EventError(first_position, str(name), f"the DataFrame has two {name!r} columns")
