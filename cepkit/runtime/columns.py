"""The user's own data as events: columns named otherwise, text timestamps, one table per event type, and
wide tables (one row per entity, a time column per event kind).

cepkit reads an event's type from the column ``type`` and its time from ``ts`` (docs/language.md §1).
``as_events(data, type="event_name", ts="event_time")`` names them so for a DataFrame, a pyarrow Table
or dicts as they come (a DataFrame is renamed without copying its columns); ``cepkit.match``,
``cepkit.Matcher``, ``cepkit.spark.match``, the CLI and the Workbench take the same two arguments and call
it. Text timestamps (what ``read_csv`` gives) are read as numbers when the column's first value is one,
else as datetimes; a value that breaks the rule is an ``EventError`` naming its row, the column and the
value. ``from_frames`` and ``from_wide`` build one in-order stream from several tables.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping
from contextlib import contextmanager
from typing import Optional, Sequence

import pandas as pd

from ..errors import ColumnError, EventError


def is_arrow(events) -> bool:
    """Whether ``events`` is a pyarrow Table or RecordBatch (without importing pyarrow)."""
    return type(events).__module__.startswith("pyarrow") and hasattr(events, "to_pandas") and hasattr(events, "schema")


# Column names that often hold an event's type or time, for the hint when ``type``/``ts`` is missing.
TYPE_HINTS = (
    "event_type",
    "event_name",
    "event",
    "eventtype",
    "eventname",
    "type_",
    "kind",
    "activity",
    "action",
    "name",
    "concept:name",
    "label",
    "category",
)
TS_HINTS = (
    "timestamp",
    "time",
    "event_time",
    "datetime",
    "date",
    "time:timestamp",
    "created_at",
    "occurred_at",
    "at",
    "when",
)


def as_events(data, type: Optional[str] = None, ts: Optional[str] = None, first_position: int = 0):
    """``data`` with its type and ts columns named ``type`` and ``ts``, and a text ts read as numbers or
    datetimes: a DataFrame (renamed, its columns not copied), a pyarrow Table, or a list of dicts (a Stream
    or ``cepkit.Event`` objects are returned as they are: they are events already).

    Parameters
    ----------
    data : DataFrame, pyarrow Table, list of dicts, Stream or Events
        The user's events.
    type, ts : str, optional
        The columns (or dict keys) holding each event's type and time, when they are not ``type`` and ``ts``.
    first_position : int, default 0
        The position of the first row, for the errors.

    Returns
    -------
    DataFrame, pyarrow Table or list
        The same kind of data, with ``type`` and ``ts`` named so.

    Raises
    ------
    ColumnError
        A missing column, or a mapping that would leave two ``type`` (or ``ts``) columns: it names the
        columns there are (and the likeliest one).
    EventError
        A text ts that is neither a number nor a date and time, named by position (the rows counted from
        ``first_position``).

    Examples
    --------
    >>> frame = pd.DataFrame({"event_name": ["view", "buy"], "event_time": ["2024-05-01 10:00", "2024-05-01 10:05"]})
    >>> as_events(frame, type="event_name", ts="event_time").dtypes.to_dict()
    {'type': dtype('O'), 'ts': datetime64[ns, UTC]}
    """
    renames = {k: v for k, v in (("type", type), ("ts", ts)) if v is not None and v != k}
    if isinstance(data, pd.DataFrame):
        return _frame(data, renames, first_position)
    if is_arrow(data):
        if not renames:
            return data
        names = list(data.schema.names)
        check_columns(names, renames)
        return data.rename_columns([_renamed(n, renames) for n in names])
    if renames and isinstance(data, (list, tuple)):
        return [_record(r, renames, first_position + i) for i, r in enumerate(data)]
    return data


@contextmanager
def renamed_fields(type: Optional[str] = None, ts: Optional[str] = None):
    """Re-raises an ``EventError`` about the field ``type`` or ``ts`` naming the user's column instead (the
    one ``type=``/``ts=`` mapped), so that the error names what the user sees."""
    try:
        yield
    except EventError as err:
        own = {"type": type, "ts": ts}.get(err.field)
        if own is None or own == err.field or isinstance(err, ColumnError):
            raise
        raise EventError(err.position, own, _reason(err)) from None


def _renamed(name, renames: dict):
    for canonical, own in renames.items():
        if name == own:
            return canonical
    return name


def _frame(frame: pd.DataFrame, renames: dict, first_position: int = 0) -> pd.DataFrame:
    check_frame_columns(list(frame.columns), renames)
    if renames:
        frame = frame.rename(columns={own: canonical for canonical, own in renames.items()}, copy=False)
    # A frame with two ts columns is refused by the Stream's duplicate check, naming them; leave it to that.
    if "ts" in frame.columns and frame.columns.is_unique and is_text(frame["ts"]):
        frame = frame.assign(ts=text_times(frame["ts"], renames.get("ts", "ts"), first_position))
    return frame


def check_frame_columns(columns: Sequence, renames: dict, flags: bool = False) -> None:
    """``check_columns`` for a table of events: a type column is needed, a ts column is not."""
    check_columns(columns, renames, flags)
    if "type" not in renames and "type" not in columns:
        check_columns(columns, {"type": None}, flags)


def check_columns(columns: Sequence, renames: dict, flags: bool = False) -> None:
    """ColumnError unless each own column of ``renames`` ({"type": own column}) exists and no canonical name is
    left twice (an own column of None: the canonical column itself must exist). The message names the
    arguments as ``type=`` (the library's keyword), or as the command line's ``--type`` with ``flags``."""
    for canonical, own in renames.items():
        if own is None or own not in columns:
            raise ColumnError(own or canonical, _missing(columns, canonical, own, flags))
        if canonical in columns:
            given, argument = (
                (f"--{canonical} {own}", f"--{canonical}") if flags else (f"{canonical}={own!r}", f"{canonical}=")
            )
            raise ColumnError(
                canonical,
                f"the data has a {canonical!r} column and {given} names another: drop or rename {canonical!r} "
                f"first (or leave {argument} out to use it)",
            )


def _missing(columns: Sequence, canonical: str, own: Optional[str], flags: bool = False) -> str:
    """Why a column is missing: the columns there are, and the likeliest one (the same name in other case,
    else a close name, a usual name for a type or a time first). ``flags``: the arguments as ``--type``."""
    names = [str(c) for c in columns]
    shown = ", ".join(repr(n) for n in names[:20]) + (", ..." if len(names) > 20 else "")
    hints = TYPE_HINTS if canonical == "type" else TS_HINTS
    argument = f"--{canonical}" if flags else f"{canonical}="

    def passing(column: str) -> str:
        return f"--{canonical} {column}" if flags else f"{canonical}={column!r}"

    if own is not None:
        close = [n for n in names if n.lower() == own.lower()] or sorted(
            difflib.get_close_matches(own, names, n=3, cutoff=0.6), key=lambda n: n.lower() not in hints
        )
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"no column {own!r} for {argument} (columns: {shown}){hint}"
    likely = [n for n in names if n.lower() in hints]
    if len(likely) == 1:
        hint = f"; pass {passing(likely[0])} to read the {canonical} from it"
    elif likely:
        hint = f"; {' and '.join(repr(n) for n in likely)} could each be it: pass {argument} to choose one"
    else:
        hint = f"; pass {passing('<column>')} to name the column that holds it"
    return f"the data has no {canonical!r} column (columns: {shown}){hint}"


def as_event(raw, position: int, type: Optional[str] = None, ts: Optional[str] = None):
    """One event (a dict) with its ``type``/``ts`` fields named as cepkit reads them (``Matcher.push``)."""
    renames = {k: v for k, v in (("type", type), ("ts", ts)) if v is not None and v != k}
    return _record(raw, renames, position) if renames else raw


def _record(raw, renames: dict, position: int):
    if not isinstance(raw, Mapping):
        return raw
    missing = [own for own in renames.values() if own not in raw]
    if missing:
        raise EventError(position, missing[0], f"the event has no {missing[0]!r} field (fields: {list(raw)})")
    inverse = {own: canonical for canonical, own in renames.items()}
    out = {}
    for key, value in raw.items():
        if key in renames and key not in inverse:
            raise EventError(position, key, f"the event has a {key!r} field and {key}={renames[key]!r} names another")
        out[inverse.get(key, key)] = value
    return out


# ----------------------------------------------------------------------------- text timestamps
def is_text(column: pd.Series) -> bool:
    """Whether ``column`` holds text (strings, nulls allowed)."""
    dtype = column.dtype
    if isinstance(dtype, pd.StringDtype):
        return True
    if dtype != object or not len(column):
        return False
    return pd.api.types.infer_dtype(column, skipna=True) == "string"


def text_times(column: pd.Series, name: str = "ts", first_position: int = 0) -> pd.Series:
    """A text ts column as numbers if its first value is one, else as UTC datetimes (ISO 8601, else the
    format pandas infers); the first row that breaks the rule is an ``EventError`` naming its position,
    the column ``name`` and the value (one stream's ts are all numbers or all datetimes)."""
    index, column = column.index, column.reset_index(drop=True)
    present = column.notna().to_numpy()
    if not present.any():
        return _dates(column).set_axis(index)
    first = int(present.argmax())
    numeric = not pd.isna(pd.to_numeric(column.iloc[first : first + 1], errors="coerce").iloc[0])
    if numeric:  # the one kind needed, parsed over the column
        parsed = pd.to_numeric(column, errors="coerce")
    else:
        parsed = _arrow_iso_times(column)
        if parsed is None:  # not Arrow's ISO 8601: pandas reads it, each value with an offset or none
            _one_kind_of_zone(column, name, first_position)
            parsed = _dates(column, arrow=False)
    bad = parsed.isna().to_numpy() & present
    if bad.any():
        row = int(bad.argmax())
        value = column.iloc[row]
        one = column.iloc[row : row + 1]
        kind = (
            "a datetime"
            if not pd.isna(_dates(one).iloc[0])
            else "a number"
            if not pd.isna(pd.to_numeric(one, errors="coerce").iloc[0])
            else None
        )
        reason = (
            f"{value!r} is neither a number nor a datetime"
            if kind is None
            else f"{value!r} is {kind}, but the ts of event {first_position + first} is "
            f"{'a number' if numeric else 'a datetime'} (a stream's ts are all numbers or all datetimes)"
        )
        raise EventError(first_position + row, name, reason)
    return parsed.set_axis(index)


def _one_kind_of_zone(column: pd.Series, name: str, first_position: int) -> None:
    """An ``EventError`` at the first text time that has a UTC offset where the first does not, or the
    reverse: such a column is ambiguous (are the others local times?), and pandas reads a time without an
    offset in the offset of the value before it."""
    text = column.dropna().astype(str)
    zoned = text.str.contains(r"\d:\d\d(?::\d\d(?:\.\d*)?)?\s*(?:Z|[+-]\d\d(?::?\d\d)?)\s*$", regex=True)
    if len(zoned) and zoned.nunique() > 1:
        first, row = zoned.index[0], zoned.index[int((zoned != zoned.iloc[0]).to_numpy().argmax())]
        has = "has a UTC offset" if zoned[row] else "has no UTC offset"
        raise EventError(
            first_position + int(row),
            name,
            f"{column[row]!r} {has}, but the ts of event {first_position + int(first)} ({column[first]!r}) "
            f"{'does not' if zoned[row] else 'does'}: write every time with its offset, or none (then UTC)",
        )


def _dates(column: pd.Series, arrow: bool = True) -> pd.Series:
    """Text as UTC datetimes, NaT where a value is not one: ISO 8601 (by Arrow, unless ``arrow`` is False);
    where that leaves values unread, the format pandas infers from the first value ('05/01/2024 10:00'),
    then each value's own format (slower), whichever reads most."""
    fast = _arrow_iso_times(column) if arrow else None
    if fast is not None:
        return fast
    best = pd.to_datetime(column, utc=True, errors="coerce", format="ISO8601")
    missing = int(column.isna().sum())
    for fmt in (None, "mixed"):
        if int(best.isna().sum()) == missing:
            break
        with warnings.catch_warnings():  # (pandas warns when it cannot infer one format)
            warnings.simplefilter("ignore")
            try:
                other = pd.to_datetime(column, utc=True, errors="coerce", format=fmt)
            except (ValueError, TypeError):
                continue
        if other.isna().sum() < best.isna().sum():
            best = other
    return best


def _arrow_iso_times(column: pd.Series) -> Optional[pd.Series]:
    """Text in ISO 8601 with a UTC offset in every value, or in none (then read as UTC), as UTC datetimes read
    by Arrow's cast (~30x pandas' ISO 8601 parser; the same instants); None when Arrow reads not every value
    so (``2024-5-1``, offsets in some values only, a date out of range...): pandas reads them then."""
    import pyarrow as pa

    try:
        text = pa.array(column, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    for target in (pa.timestamp("ns", tz="UTC"), pa.timestamp("ns")):
        try:
            times = text.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        series = times.to_pandas().set_axis(column.index).rename(column.name)
        return series if target.tz else series.dt.tz_localize("UTC")
    return None


# ----------------------------------------------------------------------------- several tables
def from_frames(frames: Mapping, ts="ts") -> pd.DataFrame:
    """One stream from one DataFrame per event type, ``{type: frame}``: each row becomes an event of that
    type, its time from the column ``ts`` (or ``ts={type: column}`` per table), its other columns its
    attributes; the events sorted by time, equal times in the order of ``frames`` then of the rows.

    Parameters
    ----------
    frames : mapping of str to DataFrame
        One table per event type.
    ts : str or mapping of str to str, default "ts"
        The time column of every table, or of each by type.

    Returns
    -------
    pandas.DataFrame
        The events: ``type``, ``ts``, then the tables' columns (null where a table lacks one).

    Raises
    ------
    ColumnError
        A table lacks its time column or has its own ``type`` column; some tables' times are dates and
        others' numbers.
    ValueError
        ``frames`` is empty, or a key is not a string or a value not a DataFrame.

    Examples
    --------
    >>> logins = pd.DataFrame({"at": [1, 5], "user": ["ann", "bob"]})
    >>> buys = pd.DataFrame({"at": [3], "user": ["ann"], "amount": [9.5]})
    >>> from_frames({"Login": logins, "Buy": buys}, ts="at")[["type", "ts", "user"]].values.tolist()
    [['Login', 1, 'ann'], ['Buy', 3, 'ann'], ['Login', 5, 'bob']]
    """
    if not frames:
        raise ValueError("from_frames needs at least one {type: DataFrame}")
    parts = []
    for name, frame in frames.items():
        if not isinstance(name, str):
            raise ValueError(f"from_frames: each key is an event type (a string), got {name!r}")
        if not isinstance(frame, pd.DataFrame):
            raise ValueError(f"from_frames: {name!r} is a {type(frame).__name__}, not a DataFrame")
        column = ts.get(name, "ts") if isinstance(ts, Mapping) else ts
        if "type" in frame.columns:
            raise ColumnError(
                "type",
                f"the table of {name!r} has its own 'type' column: from_frames takes the "
                "type from the table's key; drop or rename it",
            )
        if column not in frame.columns:
            raise ColumnError(column, f"(table {name!r}) " + _missing(list(frame.columns), "ts", column))
        part = frame.rename(columns={column: "ts"}, copy=False) if column != "ts" else frame
        if is_text(part["ts"]):
            try:
                part = part.assign(ts=text_times(part["ts"], column))
            except EventError as err:
                raise EventError(err.position, err.field, f"(table {name!r}) {_reason(err)}") from None
        parts.append(part.assign(type=name)[["type", "ts", *[c for c in part.columns if c not in ("type", "ts")]]])
    _one_kind(parts, "some tables' times are dates and others' numbers")
    return pd.concat(parts, ignore_index=True).sort_values("ts", kind="stable", ignore_index=True)


def _one_kind(parts: list, which: str) -> None:
    """ColumnError unless every part's ts are datetimes, or none's are (a stream has one kind of ts)."""
    kinds = {bool(pd.api.types.is_datetime64_any_dtype(p["ts"])) for p in parts if len(p)}
    if len(kinds) > 1:
        raise ColumnError("ts", f"{which}: one stream's ts are all numbers or all datetimes")


def _reason(err: EventError) -> str:
    """An EventError's message without its "event at position N, field 'f': " head."""
    head, sep, reason = str(err).partition(f"field {err.field!r}: ")
    return reason if sep else str(err)


def from_wide(frame: pd.DataFrame, events, keep: Optional[Sequence[str]] = None) -> pd.DataFrame:
    """One stream from a wide table, one row per entity and a time column per event kind: each non-null
    time becomes an event whose type is the kind and whose ts is that time, carrying the row's other
    columns (or only ``keep``) as attributes. ``events`` is ``{type: column}`` or a list of columns (each
    column's name is then the type). A null time is an event that did not happen: it makes no event.
    Events are sorted by time, equal times in row order, then in the order of ``events``.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per entity.
    events : mapping of str to str, or list of str
        ``{type: time column}``, or the time columns (each named as its type).
    keep : list of str, optional
        The columns to carry as attributes (default: every column that is not a time column).

    Returns
    -------
    pandas.DataFrame
        The events: ``type``, ``ts``, then the attributes.

    Raises
    ------
    ColumnError
        A time or ``keep`` column is missing, the table has a ``type`` or ``ts`` column of its own, or
        some time columns hold dates and others numbers.
    ValueError
        ``frame`` is not a DataFrame, or ``events`` is empty.

    Examples
    --------
    >>> orders = pd.DataFrame({"order": [1, 2], "placed": [0, 2], "shipped": [4, None]})
    >>> from_wide(orders, {"Placed": "placed", "Shipped": "shipped"}).values.tolist()
    [['Placed', 0.0, 1], ['Placed', 2.0, 2], ['Shipped', 4.0, 1]]
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"from_wide takes a DataFrame, not a {type(frame).__name__}")
    kinds = dict(events) if isinstance(events, Mapping) else {str(c): c for c in events}
    if not kinds:
        raise ValueError("from_wide needs at least one time column in events=")
    for name, column in kinds.items():
        if column not in frame.columns:
            raise ColumnError(column, f"(events of type {name!r}) " + _missing(list(frame.columns), "ts", column))
    for reserved in ("type", "ts"):
        if reserved in frame.columns and reserved not in kinds.values():
            raise ColumnError(
                reserved, f"the table has a {reserved!r} column, which from_wide makes from events=: drop or rename it"
            )
    attributes = list(keep) if keep is not None else [c for c in frame.columns if c not in kinds.values()]
    for column in attributes:
        if column not in frame.columns:
            raise ColumnError(column, f"keep= names {column!r}, which the table lacks (columns: {list(frame.columns)})")
    parts = []
    for name, column in kinds.items():
        times = frame[column]
        if is_text(times):
            times = text_times(times, column)
        part = frame[attributes].assign(type=name, ts=times)[["type", "ts", *attributes]]
        parts.append(part[times.notna().to_numpy()])
    _one_kind(parts, "some time columns hold dates and others numbers")
    joined = pd.concat(parts)  # kind after kind; the index, the rows, orders equal times by row
    joined["ts"] = joined["ts"].infer_objects()
    return joined.rename_axis("_row").sort_values(["ts", "_row"], kind="stable").reset_index(drop=True)


def text_time(value: str, position: int):
    """One text ts (an event given as a dict): a number if it reads as one, else a UTC ``pd.Timestamp``;
    an ``EventError`` naming ``position`` otherwise."""
    try:
        return float(value)
    except ValueError:
        pass
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, OverflowError):
        stamp = None
    if stamp is None or stamp is pd.NaT:
        raise EventError(
            position, "ts", f"the text {value!r} is neither a number nor a date and time (e.g. '2024-05-01 12:30:00')"
        )
    return stamp if stamp.tzinfo is not None else stamp.tz_localize("UTC")
