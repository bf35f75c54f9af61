"""Spark DataFrames in and out: the input's columns checked against the query before any job runs, the
internal event columns, and the schema of the matches.

Input: a column ``type`` (string), optionally ``ts`` (a number of seconds, a timestamp, a timestamp without
time zone read as UTC, or a date), optionally a tie-breaking position column; every other column is an
attribute (docs/language.md §1). Output: ``match_id``, ``positions`` (array<long>), one column per variable
(long, or array<long> for a Kleene variable), and the PARTITION BY columns.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Optional

import numpy as np
from pyspark.sql import Column, functions as F
from pyspark.sql import types as T

from ..errors import EventError, QueryError
from ..lang import ast as A
from ..lang.query import Query
from ..runtime.api import check
from ..runtime.event_record import RESERVED
from ..runtime.stream import Stream
from .groups import LAST, POS, PREFIX, RANK, TS, EventColumns, Split, describe_row, output_variables

_NUMBER = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)
_DATETIME = (T.TimestampType, T.TimestampNTZType, T.DateType)
# What a PARTITION BY key may hold: values that compare and hash alike in Spark and in pandas.
_KEY = (*_NUMBER, *_DATETIME, T.StringType, T.BooleanType)


@dataclass(frozen=True)
class Layout:
    """The roles of an input DataFrame's columns for one query.

    ``ts_kind`` is "datetime", "number" or "position" (no ts column: ts is the position); ``position`` names
    the tie-breaking column, if the DataFrame has it; ``attributes`` are all the other columns, ``used`` those
    the query reads (its conditions and PARTITION BY): only they travel to the engines.
    """

    schema: T.StructType
    ts_kind: str
    position: Optional[str]
    attributes: tuple
    used: tuple = ()

    @classmethod
    def of(cls, schema: T.StructType, query: Query, position: str = "position") -> "Layout":
        """Check ``schema`` against ``query``; raise EventError (bad columns) or QueryError (unknown names)."""
        events = cls.of_events(schema, position)
        check(query, Stream([], events.ts_kind == "datetime"))
        read = _check_names(query, events.attributes)
        _check_kinds(query, {f.name: f for f in schema.fields}, read)
        _check_outputs(query)
        return cls(
            schema,
            events.ts_kind,
            events.position,
            events.attributes,
            tuple(name for name in events.attributes if name in read),
        )

    @classmethod
    def of_events(cls, schema: T.StructType, position: str = "position") -> "Layout":
        """The roles of the columns of events, whatever the query; EventError for bad columns."""
        fields = {f.name: f for f in schema.fields}
        if "type" not in fields:
            raise EventError(0, "type", f"the DataFrame has no 'type' column (columns: {', '.join(fields)})")
        if not isinstance(fields["type"].dataType, T.StringType):
            raise EventError(
                0, "type", f"the 'type' column must hold strings, not {fields['type'].dataType.simpleString()}"
            )
        ts_kind = "position"
        if "ts" in fields:
            kind = fields["ts"].dataType
            if isinstance(kind, _DATETIME):
                ts_kind = "datetime"
            elif isinstance(kind, _NUMBER):
                ts_kind = "number"
            else:
                raise EventError(
                    0, "ts", f"the 'ts' column must hold numbers (seconds) or timestamps, not {kind.simpleString()}"
                )
        internal = [name for name in fields if name.startswith(PREFIX)]
        if internal:
            raise EventError(0, internal[0], f"column names starting with {PREFIX!r} are reserved for cepkit")
        if position in fields and not isinstance(fields[position].dataType, (*_NUMBER, *_DATETIME, T.StringType)):
            raise EventError(
                0,
                position,
                f"the position column {position!r} must be orderable, not {fields[position].dataType.simpleString()}",
            )
        attributes = tuple(name for name in fields if name not in RESERVED)
        return cls(schema, ts_kind, position if position in fields else None, attributes)

    @property
    def columns(self) -> EventColumns:
        return EventColumns(self.used, self.ts_kind)

    def engine_ts(self) -> Column:
        """TS: epoch microseconds for datetime ts (rebuilt as UTC datetimes in the workers), else ts itself."""
        if self.ts_kind == "position":
            return F.col(POS)
        if self.ts_kind == "number":
            return F.col("ts")
        return epoch_micros(F.col("ts"), self.schema["ts"].dataType)

    def seconds(self, ts) -> float:
        """COORD on the time axis of an event whose TS is ``ts`` (``coordinate``'s formula, on the driver)."""
        return ts / 1e6 if self.ts_kind == "datetime" else float(ts)

    def order(self) -> list:
        """The logical order of the input (docs/language.md §10.1): by ts, then the position column."""
        keys = [F.col(TS)] if self.ts_kind != "position" else []
        return keys + ([F.col(self.position)] if self.position else [])

    def coordinate(self, split: Split) -> Column:
        """COORD: where an event lies on the slicing axis (seconds, or its position for EVENTS windows)."""
        if split.axis == "position" or self.ts_kind == "position":
            return F.col(POS).cast("double")
        if self.ts_kind == "datetime":
            return F.col(TS) / F.lit(1e6)
        return F.col(TS).cast("double")

    def match_schema(self, query: Query) -> T.StructType:
        """The schema ``GroupMatcher`` writes: LAST, RANK, positions, the variables, the partition keys."""
        kleene = query.kleene_variables
        position_list = T.ArrayType(T.LongType())
        out = [
            T.StructField(LAST, T.LongType()),
            T.StructField(RANK, T.LongType()),
            T.StructField("positions", position_list),
        ]
        out += [T.StructField(v, position_list if v in kleene else T.LongType()) for v in output_variables(query)]
        out += [self.schema[k] for k in query.partition_by]
        return T.StructType(out)


def _read_nodes(query: Query) -> list:
    """The nodes of ``query`` that read an attribute (``Attr`` and ``Agg`` of one), in the order they appear."""
    roots = [query.ast.pattern] + ([query.where] if query.where is not None else [])
    return [
        node
        for root in roots
        for node in root.walk()
        if isinstance(node, (A.Attr, A.Agg)) and getattr(node, "attr", None) is not None
    ]


def read_attributes(query: Query) -> set:
    """The attribute names ``query`` reads: its PARTITION BY keys and those its conditions name."""
    return set(query.partition_by) | {node.attr for node in _read_nodes(query)}


def _check_names(query: Query, attributes: tuple) -> set:
    """The attribute names the query reads; QueryError at the first one the DataFrame lacks."""
    known = set(attributes) | set(RESERVED)
    listing = ", ".join(attributes) or "no attribute columns"
    for key in query.partition_by:
        if key not in known:
            raise QueryError.at(
                query.ast, f"unknown attribute {key!r} in PARTITION BY; the DataFrame has {listing}", query.text
            )
    for node in _read_nodes(query):
        if node.attr not in known:
            raise QueryError.at(
                node, f"unknown attribute {node.attr!r} of {node.var!r}: the DataFrame has {listing}", query.text
            )
    return read_attributes(query)


def _check_kinds(query: Query, fields: dict, read: set) -> None:
    """EventError for a column the schema shows cannot serve: a PARTITION BY key that is not a plain value
    (arrays, maps, structs, variants: Spark cannot hash some of them, pandas none), a variant the query
    reads (it holds values of mixed types, one per row)."""
    for key in query.partition_by:
        kind = fields[key].dataType
        if not isinstance(kind, _KEY):
            raise EventError(
                0,
                key,
                f"the PARTITION BY column {key!r} holds {kind.simpleString()}: a key must be "
                "a number, string, boolean, date or timestamp (cast it, or take one of its "
                "fields)",
            )
    for name in sorted(read):
        kind = fields[name].dataType if name in fields else None
        if isinstance(kind, T.VariantType):
            raise EventError(
                0,
                name,
                f"the column {name!r} is a variant (a type per row): cast it to one type "
                f"first, e.g. F.expr(\"try_variant_get({name}, '$', 'double')\")",
            )


def check_local_columns(frame) -> None:
    """EventError for a pandas column whose values are of several kinds (numbers and strings, say), which a
    Spark column cannot hold: locally such values compare as Python objects, on Spark ``createDataFrame``
    would fail or, falling back, turn some of them into nulls. Names the column and the first row whose
    value differs in kind from the column's first value."""
    import pandas as pd

    for name in frame.columns:
        column = frame[name]
        if column.dtype != object or pd.api.types.infer_dtype(column, skipna=True) not in ("mixed", "mixed-integer"):
            continue
        known = column[column.notna()]
        kinds = known.map(
            lambda v: "number" if isinstance(v, numbers.Number) and not isinstance(v, bool) else type(v).__name__
        )
        if kinds.nunique() < 2:
            continue
        at = int(np.flatnonzero((kinds != kinds.iloc[0]).to_numpy())[0])
        row = frame.index.get_loc(known.index[at])
        first = frame.index.get_loc(known.index[0])
        raise EventError(
            row,
            str(name),
            f"the column {name!r} mixes {kinds.iloc[0]} values (row {first}: "
            f"{describe_row(frame.iloc[first])}) and {kinds.iloc[at]} values (row "
            f"{row}: {describe_row(frame.iloc[row])}); a Spark column holds one "
            f"type: convert it first, e.g. df[{name!r}].astype(str)",
        )


def _check_outputs(query: Query) -> None:
    """Each variable needs an output column of its own (Spark's column names ignore case)."""
    taken = {"match_id", "positions", *(k.lower() for k in query.partition_by)}
    for var in output_variables(query):
        if var.lower() in taken:
            raise QueryError.at(
                query.variables.get(var, query.ast),
                f"variable {var!r} would share its output "
                "column with a PARTITION BY column or match_id/positions; rename it",
                query.text,
            )
        taken.add(var.lower())


def epoch_micros(col: Column, kind: T.DataType) -> Column:
    """Microseconds since the epoch; a timestamp without time zone (or a date) is read as UTC."""
    if isinstance(kind, T.TimestampType):
        return F.unix_micros(col)
    if isinstance(kind, T.DateType):
        return F.unix_date(col).cast("long") * F.lit(86_400_000_000)
    epoch = F.lit("1970-01-01 00:00:00").cast("timestamp_ntz")
    return F.timestamp_diff("MICROSECOND", epoch, col)


def null_keys(df, keys):
    """NaN keys become null: locally both are a missing attribute, so they must meet in one group."""
    for name in keys:
        if isinstance(df.schema[name].dataType, (T.FloatType, T.DoubleType)):
            df = df.withColumn(name, F.when(F.isnan(name), F.lit(None)).otherwise(F.col(name)))
    return df
