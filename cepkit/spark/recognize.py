"""MATCH_RECOGNIZE on Spark (docs/language.md §13), which Spark SQL itself lacks.

The rows are spread over Spark's partitions by the PARTITION BY key and each Spark partition, whatever
keys it holds, is matched by one call of the same ``cepkit.sql`` that runs locally (``mapInArrow``: the
partition's Arrow batches joined into one table, made a pandas frame once), so the rows out are the local
ones: ``cepkit.sql`` sorts and splits the partition's keys itself, so Spark neither sorts the rows by key
(as ``groupBy(...).applyInPandas`` would) nor calls Python once per key. Without PARTITION BY every row goes to
one group (a ``OneGroupWarning`` says so). The output schema is known before any job runs: it follows from
the query and the input schema (``output_schema``).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Dict, Union

from ..errors import QueryError
from ..match_recognize import ast as A
from ..match_recognize.parser import did_you_mean, parse
from ..match_recognize.run import check_columns, read_columns
from .groups import OneGroupWarning


def sql(query: Union[str, A.Recognize], frame, *, delay=None):
    """Run a ``SELECT ... FROM t MATCH_RECOGNIZE (...)`` query over a Spark DataFrame (the query's FROM name
    is not looked up: ``frame`` is the table); returns a Spark DataFrame, lazily.

    On a streaming DataFrame the result streams too (append mode, ONE ROW PER MATCH): each match comes out
    once no row to come could change it. ORDER BY's first column is then the event time (a timestamp), and
    ``delay`` (seconds, a timedelta or Spark's text, default 0) how late a row may arrive: Spark's watermark.

    >>> out = cepkit.spark.sql("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts "
    ...                        "PATTERN (A B+) DEFINE B AS v > PREV(v))", spark.table("t"))  # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    from ..match_recognize import sql as local_sql

    parsed = parse(query) if isinstance(query, str) else query
    schema = output_schema(parsed, frame.schema)
    if frame.isStreaming:
        from .recognize_stream import stream

        return stream(parsed, frame, schema, delay, read_columns(parsed))
    if delay is not None:
        raise ValueError("delay= is for a streaming DataFrame (Spark's watermark); this one is at rest")
    if parsed.rows == "one":  # only the columns the query reads travel through the shuffle
        frame = frame.select(*[name for name in frame.columns if name in read_columns(parsed)])

    def run(group):
        return local_sql(parsed, group)[schema.fieldNames()]

    if parsed.partition:
        # No number of partitions: adaptive execution coalesces the shuffle's empty partitions (a few keys
        # in Spark's 200 would each start a Python task for nothing) and keeps each key's rows apart.
        from pyspark.sql.pandas.types import to_arrow_schema

        spread = frame.repartition(*parsed.partition)
        arrow = to_arrow_schema(schema, timezone=frame.sparkSession.conf.get("spark.sql.session.timeZone"))
        return spread.mapInArrow(functools.partial(_whole_partition, run, arrow), schema)
    warnings.warn(
        "a MATCH_RECOGNIZE query without PARTITION BY runs as one group on one core", OneGroupWarning, stacklevel=2
    )
    group = "__cepkit_group"  # groupBy(lit(0)) would read as a column ordinal
    return (
        frame.withColumn(group, F.lit(0))
        .groupBy(group)
        .applyInPandas(lambda rows: run(rows.drop(columns=group)), schema)
    )


def _whole_partition(run, schema, batches):
    """``mapInArrow``'s body: the rows of one Spark partition (Arrow batches) matched in one ``run``, on
    one pandas frame (converted once, not per batch), its output rows as Arrow batches of ``schema``."""
    import pyarrow as pa

    batches = list(batches)
    if batches:
        out = run(pa.Table.from_batches(batches).to_pandas())
        yield from pa.Table.from_pandas(out, schema=schema, preserve_index=False).to_batches()


def output_schema(query: A.Recognize, schema):
    """The output's Spark schema: partition columns, (ALL ROWS: ORDER BY columns,) measures typed from their
    expressions, (ALL ROWS: the other input columns); a ``QueryError`` for a column the input lacks."""
    from pyspark.sql import types as T

    fields: Dict[str, Any] = {f.name: f.dataType for f in schema.fields}
    check_columns(query, fields)

    def column(name: str):
        if name not in fields:
            raise QueryError(
                f"no column {name!r}" + did_you_mean(name, fields) + "; the columns are " + ", ".join(fields),
                query.text,
            )
        return fields[name]

    def numeric(kind):
        return kind if isinstance(kind, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)) else T.DoubleType()

    def typed(expr):
        if isinstance(expr, A.Column):
            return column(expr.name)
        if isinstance(expr, A.Navigation):
            return typed(A.innermost(expr))
        if isinstance(expr, A.Literal):
            value = expr.value
            return (
                T.BooleanType()
                if isinstance(value, bool)
                else T.LongType()
                if isinstance(value, int)
                else T.DoubleType()
                if isinstance(value, float)
                else T.StringType()
            )
        if isinstance(expr, (A.MatchNumber,)):
            return T.LongType()
        if isinstance(expr, A.Classifier):
            return T.StringType()
        if isinstance(expr, A.Aggregate):
            if expr.func == "COUNT":
                return T.LongType()
            if expr.func == "AVG":
                return T.DoubleType()
            inner = typed(expr.arg)
            return numeric(inner) if expr.func == "SUM" else inner
        if isinstance(expr, A.Arith):
            left, right = typed(expr.left), typed(expr.right)
            if expr.op == "/" or T.DoubleType() in (numeric(left), numeric(right)):
                return T.DoubleType()
            return T.LongType()
        if isinstance(expr, A.Negate):
            return typed(expr.arg)
        return T.BooleanType()

    out = [T.StructField(name, column(name)) for name in query.partition]
    if query.rows == "all":
        out += [T.StructField(name, column(name)) for name, _ in query.order]
    out += [T.StructField(name, _widened(typed(expr))) for name, expr in query.measures]
    if query.rows == "all":
        taken = {f.name for f in out}
        out += [T.StructField(f.name, f.dataType) for f in schema.fields if f.name not in taken]
    if query.select is not None:
        by_name = {f.name: f for f in out}
        for name in query.select:
            if name not in by_name:
                raise QueryError(f"SELECT {name}: not an output column" + did_you_mean(name, by_name), query.text)
        out = [by_name[name] for name in query.select]
    return T.StructType(out)


def _widened(kind):
    # pandas gives int64 for every integer measure: Spark reads it into a LongType field.
    from pyspark.sql import types as T

    return T.LongType() if isinstance(kind, (T.IntegerType, T.ShortType, T.ByteType)) else kind
