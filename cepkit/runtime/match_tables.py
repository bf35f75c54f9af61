"""Matches as tables: the columns of each variable's bindings as pandas and Arrow give them, and the
bound events' attributes (``Matches.to_pandas(fields=...)``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import QueryError, did_you_mean
from .python_objects import row_lists


def named_fields(fields, variables: list, attributes: list, also=()) -> list:
    """(label, variable, attribute) for each ``"variable.attribute"`` of ``fields`` (a list, or one
    string); QueryError naming the variables or the attributes there are (``also``: names taken too, not
    listed: ``ts`` where the user's own name for it is listed)."""
    out = []
    for label in [fields] if isinstance(fields, str) else fields:
        name, dot, attr = str(label).partition(".")
        if not dot or name not in variables:
            raise QueryError(
                f"unknown field {label!r}: fields are written variable.attribute, and the "
                f"matches bind {', '.join(variables) or 'no variable'}" + (did_you_mean(name, variables) if dot else "")
            )
        if attr not in attributes and attr not in also:
            raise QueryError(
                f"unknown attribute {attr!r} in field {label!r}: the events have {', '.join(map(str, attributes))}"
                + did_you_mean(attr, map(str, attributes))
            )
        out.append((str(label), name, attr))
    return out


def pandas_binding(kind: str, value):
    """A variable's column as ``to_pandas`` always gave it: ints, floats with NaN when some matches leave
    it unbound, lists (None when unbound) for a Kleene variable."""
    if kind == "single":
        return value if (value >= 0).all() else np.where(value >= 0, value, np.nan)
    if kind == "kleene":
        offsets, positions, bound = value
        return [v if b else None for v, b in zip(row_lists(offsets, positions.tolist()), bound.tolist())]
    return value


def arrow_binding(kind: str, value):
    """A variable's column as ``to_arrow`` gives it: nulls where unbound, Arrow lists for a Kleene one."""
    import pyarrow as pa

    if kind == "single":
        return pa.array(value, mask=value < 0)
    if kind == "kleene":
        offsets, positions, bound = value
        return pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(positions), mask=pa.array(~bound))
    return pa.array(value)


def event_frame(stream) -> pd.DataFrame:
    """The stream's events as columns (type, ts as given, attributes), one row per position."""
    frame = stream.frame
    if "ts" not in frame.columns:
        frame = frame.assign(ts=np.arange(len(frame)))
    return frame


def shown_attributes(events: pd.DataFrame, binding) -> list:
    """The attributes ``fields="all"`` shows for a variable: ts, every attribute non-null on one of
    the events it binds, and type when they have several types."""
    kind, value = binding
    if kind == "single":
        bound = value[value >= 0]
    elif kind == "kleene":
        bound = value[1]
    else:
        bound = np.array([p for v in value if v is not None for p in (v if isinstance(v, list) else [v])], np.int64)
    seen = events.iloc[np.unique(bound)]
    attrs = ["ts"] + [a for a in events.columns if a not in ("type", "ts") and seen[a].notna().any()]
    return attrs + (["type"] if seen["type"].nunique() > 1 else [])


def field_values(stream, binding, attr: str, arrow: bool):
    """The attribute ``attr`` of the events one variable binds, per match."""
    column = event_frame(stream)[attr]
    kind, value = binding
    if kind == "single":
        values = column.array.take(value, allow_fill=True)
        if arrow:
            import pyarrow as pa

            return pa.array(values, from_pandas=True)
        return values
    if kind == "kleene":
        offsets, positions, bound = value
        values = column.take(positions)
        if arrow:
            import pyarrow as pa

            return pa.LargeListArray.from_arrays(
                pa.array(offsets), pa.array(values.array, from_pandas=True), mask=pa.array(~bound)
            )
        return [v if b else None for v, b in zip(row_lists(offsets, values.tolist()), bound.tolist())]
    flat = column.tolist()
    out = [[flat[p] for p in v] if isinstance(v, list) else (None if v is None else flat[v]) for v in value]
    if arrow:
        import pyarrow as pa

        return pa.array(out)
    return out
