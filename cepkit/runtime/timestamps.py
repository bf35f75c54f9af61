"""An event's ts as seconds: numbers and datetimes (one kind per stream), validated one by one or a
DataFrame column at a time, a bad one named by its position (``EventError``)."""

from __future__ import annotations

import datetime as _dt
import math
from decimal import Decimal

import numpy as np
import pandas as pd

from ..errors import EventError


def to_seconds(value, position: int) -> tuple:
    """(seconds, is_datetime) for a ts value; EventError unless it is a finite number or a datetime."""
    if value is None or isinstance(value, (bool, np.bool_)):
        raise EventError(position, "ts", f"expected a number or a datetime, got {value!r}")
    if isinstance(value, str):
        from .columns import text_time  # (a text ts: a number or a date, as the dict gave it)

        value = text_time(value, position)
    if isinstance(value, (_dt.date, np.datetime64)):  # datetime, date, pd.Timestamp, NaT
        try:
            stamp = pd.Timestamp(value)
        except (ValueError, OverflowError) as err:
            raise EventError(position, "ts", f"datetime {value!r} is out of range ({err})") from None
        if stamp is pd.NaT:
            raise EventError(position, "ts", "ts is missing (NaT)")
        if stamp.tzinfo is None:
            stamp = stamp.tz_localize("UTC")
        return stamp.timestamp(), True
    if isinstance(value, (int, float, Decimal, np.integer, np.floating)) or (
        hasattr(value, "__float__") and not isinstance(value, (complex, np.complexfloating, str))
    ):
        try:
            seconds = float(value)
        except (OverflowError, TypeError, ValueError):
            raise EventError(position, "ts", f"ts {short_repr(value)} is out of range for a float") from None
        if math.isnan(seconds):
            raise EventError(position, "ts", "ts is missing (NaN)")
        if math.isinf(seconds):
            raise EventError(position, "ts", f"ts must be finite, got {short_repr(value)}")
        return seconds, False
    raise EventError(position, "ts", f"expected a number or a datetime, got {type(value).__name__} {short_repr(value)}")


def short_repr(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def mixing_error(position: int, is_datetime: bool) -> EventError:
    now, before = ("a datetime", "numbers") if is_datetime else ("a number", "datetimes")
    return EventError(
        position, "ts", f"ts is {now} but earlier ts are {before}: one stream's ts are all numbers or all datetimes"
    )


def missing_ts_error(position: int, given: bool) -> EventError:
    """An event with a ts among events without (or the reverse): a ts is the position only when no event has
    one (docs/language.md §1), so a stream gives every event a ts or none."""
    now, before = ("has a ts", "have none (their ts is their position)") if given else ("has no ts", "have one")
    return EventError(
        position, "ts", f"the event {now} but the events before it {before}: give every event a ts, or none"
    )


def seconds_of_values(values: list, first_position: int) -> tuple:
    """(seconds, is_datetime) of a list of ts values, one kind for the whole stream."""
    seconds = np.empty(len(values))
    kind = None
    for i, value in enumerate(values):
        seconds[i], is_dt = to_seconds(value, first_position + i)
        if kind is None:
            kind = is_dt
        elif is_dt != kind:
            raise mixing_error(first_position + i, is_dt)
    return seconds, bool(kind)


def frame_seconds(col: pd.Series, first_position: int) -> tuple:
    """(seconds, is_datetime) of a DataFrame's ts column, vectorized where the dtype allows."""
    dtype = col.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype):
        missing = col.isna().to_numpy()
        if missing.any():
            raise EventError(first_position + int(np.argmax(missing)), "ts", "ts is missing (NaT)")
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
            i = int(np.argmax(bad))
            reason = "ts is missing (NaN)" if np.isnan(seconds[i]) else f"ts must be finite, got {seconds[i]!r}"
            raise EventError(first_position + i, "ts", reason)
        return seconds, False
    from .columns import is_text, text_times  # (a text ts, as read_csv gives it)

    if is_text(col):
        return frame_seconds(text_times(col, "ts", first_position), first_position)
    return seconds_of_values(col.tolist(), first_position)
