"""One event (docs/language.md §1): the ``Event`` record and its validation as it enters a stream (a
type that is a string, a ts that is a finite number or a datetime)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import EventError
from .timestamps import to_seconds

RESERVED = ("type", "ts")
PUNCTUATION = "PUNCTUATION"


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


def _is_null(value) -> bool:
    if value is None:
        return True
    kind = type(value)  # the common scalars without ``pd.isna`` (~0.4 µs a call: a pusher's key pays it per event)
    if kind is str or kind is int or kind is bool:
        return False
    if kind is float:
        return value != value
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def values_event(columns: tuple, type_: str, time: float, values, position: int) -> Event:
    """The ``Event`` of a pusher's values of ``columns`` (``Matcher.pusher``: the type and ts checked, the
    names canonical): a None or NaN value is a missing attribute."""
    attrs = {name: v for name, v in zip(columns, values) if name not in RESERVED and v is not None and not _is_null(v)}
    return Event(type_, time, attrs, position, time)


def key_column(key_at: list):
    """The column (index) of a PARTITION BY key of one attribute among a pusher's columns; None for
    another key. ``key_at`` as ``values_key`` takes it."""
    return key_at[0][1] if len(key_at) == 1 and key_at[0][0] not in RESERVED else None


def values_key(key_at: list):
    """The PARTITION BY key of a pusher's events, as ``Event.get`` reads it: a function of (type, time,
    values); ``key_at`` holds (name, index of its column or None) per key attribute; a None, NaN or absent
    value is None. One attribute in the columns (the common case) is read without a loop."""
    at = key_column(key_at)
    if at is not None:

        def one(type_: str, time: float, values) -> tuple:
            value = values[at]
            return (None,) if _is_null(value) else (value,)

        return one

    def key(type_: str, time: float, values) -> tuple:
        out = []
        for name, at in key_at:
            if name == "type":
                out.append(type_)
            elif name == "ts":
                out.append(time)
            else:
                value = None if at is None else values[at]
                out.append(None if _is_null(value) else value)
        return tuple(out)

    return key


def make_event(raw, position: int) -> Event:
    """An ``Event`` at ``position`` from a dict or an Event; validates type and ts (None: the position)."""
    type_, ts, attrs = event_parts(raw, position)
    if ts is None:
        ts = position
    seconds = raw.time if isinstance(raw, Event) and not is_nan(raw.time) else to_seconds(ts, position)[0]
    return Event(
        type_, ts, {k: v for k, v in attrs.items() if k not in RESERVED and not _is_null(v)}, position, seconds
    )


def is_nan(value) -> bool:
    return isinstance(value, float) and math.isnan(value)


def event_parts(raw, position: int) -> tuple:
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
