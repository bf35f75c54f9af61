"""MATCH_RECOGNIZE on Spark (docs/language.md §13), which Spark SQL itself lacks.

The workers run the same ``cepkit.sql`` that runs locally, on the rows of a whole Spark partition or of
one key (``sql`` says which way the rows get there: one task, clustered, shuffled), so the rows out are
the local ones. Arrow's batches reach pandas once per call, strings dictionary-encoded by Arrow
(``_as_pandas``): ``cepkit.sql`` reads the codes of the PARTITION BY key and of the strings DEFINE tests,
and creates no Python string per row. The output schema is known before any job runs: it follows from the
query and the input schema (``output_schema``).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Dict, Optional, Union

from ..errors import QueryError, did_you_mean
from ..match_recognize import ast as A
from ..match_recognize.parser import parse
from ..match_recognize.run import check_columns, read_columns
from .groups import OneGroupWarning


def sql(query: Union[str, A.Recognize], frame, *, delay=None, one_task: Optional[bool] = None):
    """Run a ``SELECT ... FROM t MATCH_RECOGNIZE (...)`` query over a Spark DataFrame (the query's FROM name
    is not looked up: ``frame`` is the table); returns a Spark DataFrame, lazily.

    At rest the rows reach ``cepkit.sql`` in one of three ways. A small input (``small``: Spark's size
    estimate at most ``spark.sql.autoBroadcastJoinThreshold``), or any with ``one_task=True``, or one
    without PARTITION BY: all of it in one task, no shuffle (``coalesce(1)``). Rows already clustered by
    the PARTITION BY keys (``clustered``: a table bucketed by them, a frame repartitioned by them): as they
    lie, no shuffle, one call per key (``groupBy(keys).applyInArrow``). Any other: shuffled by the keys,
    one call per Spark partition, whatever keys it holds (``mapInArrow``). ``one_task=False`` keeps a
    small input off the first way.

    On a streaming DataFrame the result streams too (append mode, ONE ROW PER MATCH): each match comes out
    once no row to come could change it. ORDER BY's first column is then the event time (a timestamp), and
    ``delay`` (seconds, a timedelta or Spark's text, default 0) how late a row may arrive: Spark's watermark.

    >>> out = cepkit.spark.sql("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts "
    ...                        "PATTERN (A B+) DEFINE B AS v > PREV(v))", spark.table("t"))  # doctest: +SKIP
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    from ..match_recognize import sql as local_sql

    parsed = parse(query) if isinstance(query, str) else query
    schema = output_schema(parsed, frame.schema)
    if frame.isStreaming:
        from .recognize_stream import stream

        return stream(parsed, frame, schema, delay, read_columns(parsed))
    if delay is not None:
        raise ValueError("delay= is for a streaming DataFrame (Spark's watermark); this one is at rest")
    if parsed.rows == "one":  # only the columns the query reads travel to Python
        frame = frame.select(*[name for name in frame.columns if name in read_columns(parsed)])

    def run(group):
        return local_sql(parsed, group)[schema.fieldNames()]

    arrow = to_arrow_schema(schema, timezone=frame.sparkSession.conf.get("spark.sql.session.timeZone"))
    body = functools.partial(_whole_partition, run, arrow)
    if not parsed.partition:
        warnings.warn(
            "a MATCH_RECOGNIZE query without PARTITION BY runs as one group on one core",
            OneGroupWarning,
            stacklevel=2,
        )
        return frame.coalesce(1).mapInArrow(body, schema)
    if one_task is None:
        one_task = small(frame)
    if one_task:
        return frame.coalesce(1).mapInArrow(body, schema)
    grouped = frame.groupBy(*parsed.partition).applyInArrow(functools.partial(_group, run, arrow), schema)
    if clustered(frame, grouped):
        return grouped
    # No number of partitions: adaptive execution coalesces the shuffle's empty partitions (a few keys in
    # Spark's 200 would each start a Python task for nothing) and keeps each key's rows apart.
    return frame.repartition(*parsed.partition).mapInArrow(body, schema)


def small(frame) -> bool:
    """Whether Spark's estimate of ``frame``'s size (its optimizer's statistics: for files, their size on
    disk) is at most ``spark.sql.autoBroadcastJoinThreshold``, the size Spark itself ships whole to one
    process (10 MB unless set; -1: never). False on Spark Connect (no plan to read)."""
    try:
        limit = int(frame.sparkSession._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())
        size = int(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # Spark Connect: no JVM plan to read
        return False
    return 0 <= size <= limit


def clustered(frame, grouped) -> bool:
    """Whether Spark plans ``grouped`` (a ``groupBy(keys)`` of ``frame``) without an exchange more than
    ``frame``'s own: the input's partitioning already keeps each key in one partition (a table bucketed by
    the keys, a frame repartitioned by them). False on Spark Connect."""
    try:
        plans = [df._jdf.queryExecution().executedPlan().toString() for df in (frame, grouped)]
    except Exception:  # Spark Connect: no JVM plan to read
        return False
    return plans[1].count("Exchange") == plans[0].count("Exchange")


def _whole_partition(run, schema, batches):
    """``mapInArrow``'s body: the rows of one Spark partition (Arrow batches) matched in one ``run``, on
    one pandas frame (converted once, not per batch), its output rows as Arrow batches of ``schema``."""
    import pyarrow as pa

    batches = list(batches)
    if batches:
        out = run(_as_pandas(pa.Table.from_batches(batches)))
        yield from pa.Table.from_pandas(out, schema=schema, preserve_index=False).to_batches()


def _group(run, schema, table):
    """``applyInArrow``'s body: one key's rows (an Arrow table) matched by ``run``."""
    import pyarrow as pa

    return pa.Table.from_pandas(run(_as_pandas(table)), schema=schema, preserve_index=False)


def _as_pandas(table):
    """An Arrow table as pandas with its strings dictionary-encoded by Arrow: pandas categoricals (categories
    sorted, so partitions come in the order plain strings give), not a Python string per row; ``cepkit.sql``
    reads their codes for PARTITION BY and for string tests in DEFINE, so no string is hashed again."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = [
        pc.dictionary_encode(column)
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
        else column
        for column in table.columns
    ]
    frame = pa.table(columns, names=table.column_names).to_pandas()
    for name in frame.columns:
        if isinstance(frame[name].dtype, pd.CategoricalDtype):
            frame[name] = frame[name].cat.reorder_categories(sorted(frame[name].cat.categories))
    return frame


def output_schema(query: A.Recognize, schema):
    """The output's Spark schema: partition columns, (ALL ROWS: ORDER BY columns,) measures typed from their
    expressions, (ALL ROWS: the other input columns); a ``QueryError`` for a column the input lacks."""
    from pyspark.sql import types as T

    fields: Dict[str, Any] = {f.name: f.dataType for f in schema.fields}
    check_columns(query, fields)

    def column(name: str):
        if name not in fields:
            raise QueryError(
                f"no column {name!r}; the columns are " + ", ".join(fields) + did_you_mean(name, fields),
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
