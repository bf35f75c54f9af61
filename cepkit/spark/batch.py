"""``cepkit.spark.match``: a query over a Spark DataFrame of events, as a Spark DataFrame of matches.

The steps, each a plain Spark operation:

1. check the columns against the query (``Layout.of``), pick the engine (``select_engine``): errors surface
   before any job runs;
2. number the events in logical order, (ts, then the position column), as in the local API, and check
   there are no null types or ts (a local frame on the driver, a Spark DataFrame in a Spark job); then
   keep only the events of the types the query names (``named_types``: the others change no match, unless
   STRICT, an EVENTS window, STNM or ANY counts them);
3. group them (``plan_split``): by the PARTITION BY key, by overlapping time slices (also for a PARTITION BY
   query with a time window when the data spans enough slices to give each shuffle partition one), or as
   one group;
4. sort each group by position and run the local engine on it (``GroupMatcher`` in ``mapInArrow``);
5. number the matches in output order (by last position, then positions), as ``Matches.to_pandas()`` does:
   slices reach the partitions in order (``_slice_places``), so their matches are numbered where they lie;
   the matches of keys, which interleave, are sorted first.

Steps 2 and 5 need global ranks, so ``match`` runs its jobs when called and returns a DataFrame read from
a local checkpoint; showing or collecting it runs no matching again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import itertools
import json
from typing import Optional

import numpy as np
import pandas as pd
from pyspark.accumulators import AccumulatorParam
from pyspark.sql import DataFrame, functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from ..errors import ColumnError, EventError
from ..runtime.api import prepare, refuse_limit
from ..runtime.columns import check_columns
from ..runtime.columns import is_arrow
from ..runtime.match_tables import named_fields
from ..runtime.selection import select_engine
from .frames import Layout, check_local_columns, null_keys, read_attributes
from .groups import (
    COORD,
    HOME,
    LAST,
    POS,
    PREFIX,
    RANK,
    SLICE,
    TS,
    GroupMatcher,
    describe_row,
    freeze_heap,
    named_types,
    output_variables,
    plan_split,
    warn_single,
)

_PART = PREFIX + "part"  # the Spark partition a row sits in (after a global sort, or in a checkpoint)
_ROW = PREFIX + "row"  # monotonically_increasing_id: partition index in the high bits, row in the low 33
_INPUT = PREFIX + "input"  # the input's own row order: the last tie-break, after ts and the position column
_ORDER = PREFIX + "order"  # the order's columns (ts, the position column), numbered, in the order check
_BAD = PREFIX + "bad"  # a null type or ts, in the order check
_SLICES_PER_PARTITION = 4  # time slices per shuffle partition, by default


@contextlib.contextmanager
def _settings(spark, settings: dict):
    """``settings`` on a classic session meanwhile, restored after as they were, unset if they were (Spark
    Connect: unchanged).
    Another thread using the session meanwhile sees them too."""
    from .jobs import is_connect

    if is_connect(spark):
        yield
        return
    before = {key: spark.conf.get(key, None) for key in settings}  # (None: not set, Spark's default)
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def static_plans(spark):
    """Spark's adaptive execution off meanwhile, on a classic session (``_settings``).

    Under it each shuffle's map stage runs as a job of its own, and so does a lazy checkpoint's: on the
    flights year ``match`` ran 4 jobs (5 from Parquet) where 1 (3) do the same work, and the CPU of the
    whole process tree fell 12-25% without them (bench/README.md). What it adapts is moot here: every
    shuffle of ``match`` is given its partitions' number, and its joins come after (``fields``, lazily)."""
    return _settings(spark, {"spark.sql.adaptive.enabled": "false"})


def with_row_numbers(df: DataFrame, order: list, name: str, stats: tuple = ()) -> tuple:
    """(``df`` with a column ``name``: each row's 0-based rank in ``order``, a total order; the counting
    job's row per Spark partition, in order, with its ``count`` and its ``offset`` (the rank of its first
    row), then ``stats``: aggregates over the partition's rows, which may read ``row_in_partition()``).

    A global sort leaves the rows in range partitions, in order; counting each partition's rows gives its
    offset. The sorted rows are checkpointed, kept by the counting job (a lazy checkpoint: no job of its
    own), so that every later job sees the same partitions. Unlike ``row_number()`` over a window without
    PARTITION BY, nothing is moved to a single partition. Sampling the sort's bounds reads ``df`` once more:
    checkpoint it first if it is costly to compute. ``stats`` ride on the counting job, so checks of the
    data cost no pass of their own.
    """
    return numbered_in_place(df.orderBy(*order).localCheckpoint(eager=False), name, stats)


def numbered_in_place(rows: DataFrame, name: str, stats: tuple = ()) -> tuple:
    """``with_row_numbers``' result for ``rows`` whose partitions already hold them in order, one partition
    after the other (a checkpoint, so that every job reads the same partitions; a lazy one is kept by this
    counting job): one counting job."""
    rows = rows.withColumn(_PART, F.spark_partition_id()).withColumn(_ROW, F.monotonically_increasing_id())
    parts = rows.groupBy(_PART).agg(F.count(F.lit(1)).alias("count"), *stats).collect()
    return _numbered(rows, parts, name)


def _numbered(rows: DataFrame, parts: list, name: str) -> tuple:
    """(``rows`` (with ``_PART`` and ``_ROW``) with a column ``name``: their partition's offset plus
    ``row_in_partition()``; ``parts``, a row per partition with its ``count``, as dicts in partition order
    with their ``offset``)."""
    parts = sorted(parts, key=lambda row: row[_PART])
    offsets = dict(zip((row[_PART] for row in parts), itertools.accumulate((row["count"] for row in parts), initial=0)))
    parts = [{**(row.asDict() if hasattr(row, "asDict") else row), "offset": offsets[row[_PART]]} for row in parts]
    table = [offsets.get(p, 0) for p in range(max(offsets, default=-1) + 1)] or [0]
    offset = F.element_at(F.array(*[F.lit(o) for o in table]), F.col(_PART) + 1)
    return rows.withColumn(name, offset + row_in_partition()).drop(_PART, _ROW), parts


def row_in_partition():
    """A row's 0-based rank in its Spark partition, read from its ``_ROW`` (``monotonically_increasing_id``)."""
    return F.col(_ROW).bitwiseAND(F.lit((1 << 33) - 1))


def _number_events(df: DataFrame, layout: Layout, coordinate, as_given: bool = True) -> tuple:
    """(the events with POS (position in logical order) and TS (ts as the engines read it); the extent
    (first, last) of ``coordinate``, None for POS itself). EventError for a null type or ts, found by the
    numbering's counting job.

    Input already in logical order (a file written sorted by ts, say) is numbered by its row numbers: one
    check job, no global sort (``_numbered_as_given``); otherwise (or without ``as_given``: known not to be)
    the rows are sorted (``with_row_numbers``).
    """
    events = df.withColumn(_INPUT, F.monotonically_increasing_id())
    if layout.ts_kind != "position":
        events = events.withColumn(TS, layout.engine_ts())
    bad_ts = F.col(TS).isNull() if layout.ts_kind != "position" else F.lit(False)
    if layout.ts_kind == "number":
        bad_ts = bad_ts | F.isnan(F.col(TS)) | F.abs(F.col(TS)).cast("double").eqNullSafe(F.lit(float("inf")))
    by_position = layout.ts_kind == "position" or coordinate is None
    if not rereadable(df):
        # Read by the check, then by the sort or the grouping; kept by the check job (a lazy checkpoint: no
        # pass of its own). A local frame arrives in a Spark partition per Arrow batch (70 for the flights
        # year): coalesced (no shuffle, _INPUT numbered before) to the shuffle's partitions, they cost fewer
        # tasks of each job that reads them.
        partitions = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
        events = events.coalesce(partitions).localCheckpoint(eager=False)
    # the events' own order, ties broken by _INPUT: a partition's rows follow it, and so must the partitions
    numbered = (
        _numbered_as_given(events, layout.order() + [F.col(_INPUT)], F.col("type").isNull() | bad_ts)
        if as_given
        else None
    )
    if numbered is not None:
        events, parts = numbered
        if not by_position and parts:  # COORD grows with TS (layout.coordinate): the first and last rows'
            first, last = layout.seconds(parts[0]["first0"]), layout.seconds(parts[-1]["last0"])
    else:
        stats = [
            F.min(F.when(F.col("type").isNull(), row_in_partition())).alias("no_type"),
            F.min(F.when(bad_ts, row_in_partition())).alias("no_ts"),
            F.sum(bad_ts.cast("long")).alias("bad_ts"),
        ]
        if not by_position:
            stats += [F.min(coordinate).alias("first"), F.max(coordinate).alias("last")]
        events, parts = with_row_numbers(events, layout.order() + [F.col(_INPUT)], POS, tuple(stats))
        if not by_position:
            first = min((row["first"] for row in parts if row["first"] is not None), default=0.0)
            last = max((row["last"] for row in parts if row["last"] is not None), default=0.0)
    if layout.ts_kind == "position":
        events = events.withColumn(TS, F.col(POS))
    for column, field in (("no_type", "type"), ("no_ts", "ts")):
        bad = [row["offset"] + row[column] for row in parts if row.get(column) is not None]
        if bad:
            others = sum(row["bad_ts"] for row in parts) - 1 if field == "ts" else 0
            row = events.where(F.col(POS) == min(bad)).drop(POS, TS).first()  # (a job, on this path only)
            raise EventError(
                min(bad),
                field,
                f"{_bad_value(field, row[field])}"
                f"{f', as in {others} other event(s)' if others else ''}; the row: "
                f"{describe_row(row)}",
            )
    count = sum(row["count"] for row in parts)
    if by_position:
        first, last = 0.0, float(max(count - 1, 0))
    elif not parts:
        first, last = 0.0, 0.0
    return events.drop(_INPUT), first, last


# The physical operators of a plan that reads the same rows into the same partitions each time it runs.
_REREADABLE = frozenset({"FileSourceScanExec", "BatchScanExec", "RangeExec", "ProjectExec", "FilterExec"})


def rereadable(df: DataFrame) -> bool:
    """Whether every run of ``df`` gives the same rows in the same partitions, in the same order: files (or
    ``spark.range``) read by a deterministic projection or filter (no shuffle, no local relation, whose ids
    Spark may compute on the driver for one partition). Then the numbering's jobs and the matching may each
    read the input again, instead of all reading a checkpoint of it (a copy of every event in the executors'
    memory: 100 M events would not fit).
    False on Spark Connect (no JVM plan to inspect) and whenever in doubt."""
    try:
        execution = df._jdf.queryExecution()
        if not execution.optimizedPlan().deterministic():
            return False
        nodes = [execution.sparkPlan()]
    except Exception:  # Spark Connect, or a plan Spark cannot build here: checkpoint
        return False
    while nodes:
        node = nodes.pop()
        if node.getClass().getSimpleName() not in _REREADABLE:
            return False
        children = node.children()
        nodes.extend(children.apply(i) for i in range(children.size()))
    return True


def _bad_value(field: str, value) -> str:
    """Why a type or ts ``value`` cannot be an event's (``cepkit.runtime.events`` says it alike)."""
    if field == "type":
        return "every event needs a type (this one is null)"
    if value is None or value != value:
        return f"ts is missing ({'null' if value is None else 'NaN'})"
    return f"ts must be finite, got {value!r}"


def _numbered_as_given(events: DataFrame, order: list, bad) -> Optional[tuple]:
    """``with_row_numbers``' result without its global sort, when the rows already lie in ``order`` (their
    own row order breaking ties): a row's position is its partition's offset plus its row number there.
    ``events`` must be checkpointed, so that the check and the positions read the same partitions (partition
    ids and row numbers are read from the checkpoint: over a local relation Spark computes them on the
    driver, for one partition, and then splits the rows), or ``rereadable``. One job ships the order's
    columns and ``bad`` (a null type or ts) to Python and reads, per partition, its count, whether it is in
    order, and its first and last order keys (the partitions must follow each other). None when some row
    is out of order, or ``bad`` (the sorted path reports it with its position)."""
    scanned = events.withColumn(_PART, F.spark_partition_id()).withColumn(_ROW, F.monotonically_increasing_id())
    shipped = events.select(bad.alias(_BAD), *[c.alias(f"{_ORDER}{i}") for i, c in enumerate(order)])
    ends = [
        T.StructField(f"{end}{i}", shipped.schema[f"{_ORDER}{i}"].dataType)
        for i in range(len(order))
        for end in ("first", "last")
    ]
    schema = T.StructType(
        [
            T.StructField(_PART, T.IntegerType()),
            T.StructField("count", T.LongType()),
            T.StructField("ordered", T.BooleanType()),
            *ends,
        ]
    )
    parts = sorted(
        shipped.mapInArrow(
            functools.partial(order_summary, width=len(order), schema=to_arrow_schema(schema)), schema
        ).collect(),
        key=lambda row: row[_PART],
    )
    if not _follow(parts, len(order)):
        return None
    scanned, parts = _numbered(scanned, parts, POS)
    return scanned, [{**row, "no_type": None, "no_ts": None, "bad_ts": 0} for row in parts]


def order_summary(batches, width: int, schema):
    """``_numbered_as_given``'s ``mapInArrow`` body: one row of ``schema`` per non-empty Spark partition."""
    freeze_heap()
    import pyarrow as pa
    from pyspark import TaskContext

    check = OrderCheck()
    for batch in batches:
        check.add([batch.column(f"{_ORDER}{i}") for i in range(width)], batch.column(_BAD))
    if check.count:
        yield pa.RecordBatch.from_pylist([check.row(TaskContext.get().partitionId(), width)], schema=schema)


class OrderCheck:
    """Whether the rows of one Spark partition, seen a batch at a time, are in order: by their order keys
    (Arrow arrays, compared as tuples), with none null or NaN and none ``bad``; their count, first and last
    keys (the partitions must follow each other too)."""

    def __init__(self):
        self.count, self.ordered = 0, True
        self.first = self.last = None

    def add(self, keys: list, bad) -> bool:
        """Take a batch's order keys and ``bad`` flags; whether the rows are still in order."""
        import pyarrow as pa
        import pyarrow.compute as pc

        rows = len(bad)
        if not rows:
            return self.ordered
        self.count += rows
        self.ordered = (
            self.ordered
            and not pc.any(bad).as_py()
            and not any(
                column.null_count or (pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py())
                for column in keys
            )
        )
        if self.ordered and keys:
            head = tuple(column[0].as_py() for column in keys)
            self.ordered = self.last is None or not head < self.last
            down, tied = np.zeros(rows - 1, bool), np.ones(rows - 1, bool)
            for column in keys:
                values = column.to_numpy(zero_copy_only=False)
                before, after = values[:-1], values[1:]
                down |= tied & (after < before)
                tied &= after == before
            self.ordered = self.ordered and not down.any()
            self.first = head if self.first is None else self.first
            self.last = tuple(column[-1].as_py() for column in keys)
        return self.ordered

    def row(self, partition: int, width: int) -> dict:
        """The partition's summary: ``_PART``, ``count``, ``ordered``, ``first{i}`` and ``last{i}`` (None
        unless ordered)."""
        return {
            _PART: partition,
            "count": self.count,
            "ordered": self.ordered,
            **{f"first{i}": self.first[i] if self.ordered and self.count else None for i in range(width)},
            **{f"last{i}": self.last[i] if self.ordered and self.count else None for i in range(width)},
        }


def _follow(parts: list, width: int) -> bool:
    """Whether the partitions' summaries (``OrderCheck.row``, in partition order) are each in order and
    follow each other."""
    ends = [
        (tuple(row[f"first{i}"] for i in range(width)), tuple(row[f"last{i}"] for i in range(width)))
        for row in parts
        if row["count"]
    ]
    return all(row["ordered"] for row in parts) and not any(b[1] > a[0] for a, b in zip(ends[1:], ends))


def _slice_places(split, first: float, last: float, partitions: int):
    """The Spark partition of each slice, for ``repartitionById``: ``(k - k0) * partitions // slices`` for
    slice k, so that each partition receives a run of consecutive slices, the first partition the first
    run."""
    firsts, lasts, _ = split.slice_span(np.array([first, last], float), np.floor)
    k0, k1 = int(firsts.min()), int(lasts.max())  # the first event's first slice (-1: the pad), the last's last
    count = k1 - k0 + 1
    place = F.floor((F.col(SLICE) - F.lit(k0)) * F.lit(partitions) / F.lit(count))
    return F.least(F.greatest(place, F.lit(0)), F.lit(partitions - 1)).cast("int")


def _with_fields(found: DataFrame, events: DataFrame, fields, query, variables: tuple) -> DataFrame:
    """The matches joined with the events they bind (``Matches.to_pandas(fields=...)``'s columns): a left
    join per variable on its position; a Kleene variable's array is exploded, joined and collected back in
    order. ``"all"``: every variable's ts and attributes, then the columns null in every match dropped
    (and ``v.type`` unless v binds several types), as locally."""
    attributes = [c for c in events.columns if not c.startswith(PREFIX)] + (
        ["ts"] if "ts" not in events.columns else []
    )
    if isinstance(fields, str) and fields == "all":
        wanted = [(f"{v}.{a}", v, a) for v in variables for a in ["ts", *(a for a in attributes if a != "ts")]]
    else:
        wanted = named_fields(fields, list(variables), attributes)
    events = events if "ts" in events.columns else events.withColumn("ts", F.col(POS))
    columns = list(found.columns)
    for var in dict.fromkeys(v for _, v, _ in wanted):
        labels = [(label, attr) for label, v, attr in wanted if v == var]
        at = PREFIX + "at"
        side = events.select(F.col(POS).alias(at), *[F.col(attr).alias(label) for label, attr in labels])
        if var not in query.kleene_variables:
            found = found.join(side, found[var] == side[at], "left").drop(at)
            continue
        index, gathered = PREFIX + "i", PREFIX + "gathered"
        exploded = found.select("match_id", F.posexplode(var).alias(index, at)).join(side, at)
        lists = exploded.groupBy("match_id").agg(
            F.sort_array(F.collect_list(F.struct(index, *[F.col(f"`{label}`") for label, _ in labels]))).alias(gathered)
        )
        found = found.join(
            lists.select("match_id", *[F.col(gathered)[label].alias(label) for label, _ in labels]), "match_id", "left"
        )
    found = found.select(*columns, *[F.col(f"`{label}`") for label, _, _ in wanted]).orderBy("match_id")
    if isinstance(fields, str) and fields == "all":
        counts = found.agg(
            *[F.count(F.col(f"`{label}`")).alias(label) for label, _, _ in wanted],
            *[F.countDistinct(F.col(f"`{label}`")).alias(label + "#") for label, _, a in wanted if a == "type"],
        ).first()
        dropped = [label for label, _, a in wanted if not counts[label] or (a == "type" and counts[label + "#"] < 2)]
        found = found.drop(*dropped)
    return found


def _spark_frame(events) -> DataFrame:
    """``events`` as a Spark DataFrame: a local frame (pandas, Arrow) is handed to the session cepkit runs on,
    so a user who has one need not know ``createDataFrame``; anything else is refused by name."""
    if isinstance(events, DataFrame):
        return events
    if isinstance(events, pd.DataFrame) or is_arrow(events):
        from .session import session

        if isinstance(events, pd.DataFrame):
            check_local_columns(events)
        if is_arrow(events) and not hasattr(events, "to_batches"):  # a RecordBatch: Spark takes Tables
            import pyarrow as pa

            events = pa.Table.from_batches([events])
        return session().createDataFrame(events)
    raise TypeError(
        f"cepkit.spark.match takes the events as a Spark DataFrame (or a pandas DataFrame or "
        f"pyarrow Table, handed to cepkit.spark.session()), not {type(events).__name__}"
    )


def _local_input(events, query, position: str, type: Optional[str], ts: Optional[str], fields) -> tuple:
    """A local frame (pandas, Arrow) as ``match`` reads it: (a Spark DataFrame on ``cepkit.spark.session()``,
    its row count, the engines' ts of its rows or None).

    Only the columns the query reads are converted and sent to the JVM (``type``, ``ts``, the position
    column, the attributes it names): every column when ``fields`` are asked for, or when the query names
    one the frame lacks (the error then lists them all). ``type=``/``ts=`` rename as in ``own_columns``.
    The rows are in memory here, so they are numbered here too (``_driver_positions``): the DataFrame
    carries POS and ``match`` runs no numbering job and keeps no checkpoint of the events. What the driver
    does not order as Spark would (a text ts, nulls, NaN; the errors then come from Spark's numbering) is
    numbered by Spark: the DataFrame has no POS then, and the ts are None."""
    import pyarrow as pa

    from .session import session

    frame = pa.Table.from_batches([events]) if is_arrow(events) and not hasattr(events, "to_batches") else events
    local = isinstance(frame, pd.DataFrame)
    names = list(frame.columns) if local else list(frame.schema.names)
    renames = {k: v for k, v in (("type", type), ("ts", ts)) if v is not None and v != k}
    check_columns([str(name) for name in names], renames)
    read = read_attributes(query)
    if fields is None and read <= {str(name) for name in names} | {"type", "ts"}:
        wanted = {renames.get(name, name) for name in ("type", "ts", position, *read)}
        kept = [name for name in names if str(name) in wanted]
        frame = frame[kept] if local else frame.select(kept)
    if renames:
        back = {own: canonical for canonical, own in renames.items()}
        frame = (
            frame.rename(columns=back)
            if local
            else frame.rename_columns([back.get(name, name) for name in frame.schema.names])
        )
    if local:
        check_local_columns(frame)
    spark = session()
    utc = spark.conf.get("spark.sql.session.timeZone") in ("UTC", "Etc/UTC")
    numbering = _driver_positions(frame, position, utc)
    count = len(frame) if local else frame.num_rows
    ts_values = None
    if numbering is not None:
        positions, ts_values = numbering
        if local:
            frame = frame.copy(deep=False)  # (the caller's frame keeps its columns)
            frame[POS] = positions
        else:
            frame = frame.append_column(POS, pa.array(positions, pa.int64()))
    # Arrow batches under 48 MB (the year's few columns) become a LocalRelation: every row made a JVM row
    # on the driver, then shipped in the tasks, 3-4x the CPU of the same no-op over batches turned into rows
    # in the executors, a partition each (bench/README.md).
    with _settings(spark, {"spark.sql.execution.arrow.localRelationThreshold": "0"}):
        return spark.createDataFrame(frame), count, ts_values


def _driver_positions(frame, position: str, utc: bool) -> Optional[tuple]:
    """(each row's position in logical order, its ts as the engines read it or None without a ts column) of a
    local frame, as Spark's numbering gives them: by ts (datetimes as the microseconds Spark keeps), then
    the position column, then the row order. None when a type is null or a ts or position is not a plain
    number or datetime (null, NaN, infinite, text, or naive datetimes on a session not in UTC)."""
    local = isinstance(frame, pd.DataFrame)
    count = len(frame) if local else frame.num_rows
    names = list(frame.columns) if local else list(frame.schema.names)
    if not count or (frame["type"].isna().any() if local else frame.column("type").null_count):
        return None
    keys = {}
    for name in ("ts", position):
        if name in names:
            keys[name] = _order_key(frame[name] if local else frame.column(name).combine_chunks(), utc)
            if keys[name] is None:
                return None
    order = [keys[name] for name in ("ts", position) if name in keys]
    down, tied = np.zeros(count - 1, bool), np.ones(count - 1, bool)
    for key in order:
        down |= tied & (key[1:] < key[:-1])
        tied &= key[1:] == key[:-1]
    positions = np.arange(count, dtype=np.int64)
    if down.any():  # lexsort is stable: ties keep the row order
        positions[np.lexsort(order[::-1])] = np.arange(count, dtype=np.int64)
    return positions, keys.get("ts")


def _order_key(values, utc: bool) -> Optional[np.ndarray]:
    """A pandas Series or Arrow array as numbers that order as Spark orders the column (timestamps as epoch
    microseconds, dates as their microseconds), or None (see ``_driver_positions``)."""
    import pyarrow as pa

    if isinstance(values, pd.Series):
        if pd.api.types.is_bool_dtype(values) or not (
            pd.api.types.is_numeric_dtype(values) or pd.api.types.is_datetime64_any_dtype(values)
        ):
            return None
        values = pa.Array.from_pandas(values)
    kind = values.type
    if values.null_count:
        return None
    if pa.types.is_integer(kind):
        return values.to_numpy()
    if pa.types.is_floating(kind):
        numbers = values.to_numpy()
        return numbers if np.isfinite(numbers).all() else None
    if pa.types.is_timestamp(kind) and (kind.tz is not None or utc):  # (naive: read in the session's zone)
        return values.cast(pa.timestamp("us", kind.tz), safe=False).cast(pa.int64()).to_numpy()
    if pa.types.is_date32(kind):
        return values.cast(pa.int32()).to_numpy().astype(np.int64) * 86_400_000_000
    return None


def own_columns(df: DataFrame, type: Optional[str] = None, ts: Optional[str] = None) -> DataFrame:
    """``df`` with the columns ``type=``/``ts=`` name renamed ``type`` and ``ts`` (``cepkit.as_events``'s
    checks and errors), and a string ts read as timestamps (``try_to_timestamp``): a value that is not one is
    a ``ColumnError`` naming the column and the value (one job, only for a string ts; on a streaming
    DataFrame it becomes a null ts, which stops the stream naming its row)."""
    renames = {k: v for k, v in (("type", type), ("ts", ts)) if v is not None and v != k}
    check_columns(df.columns, renames)
    if renames:
        df = df.withColumnsRenamed({own: canonical for canonical, own in renames.items()})
    if "ts" in df.columns and isinstance(df.schema["ts"].dataType, T.StringType):
        parsed = F.try_to_timestamp(F.col("ts"))
        if df.isStreaming:  # (no job on a stream: an unreadable ts is a null ts, a bad row for the workers)
            return df.withColumn("ts", parsed)
        bad = df.filter(F.col("ts").isNotNull() & parsed.isNull()).select("ts").first()
        if bad is not None:
            raise ColumnError(
                renames.get("ts", "ts"),
                f"{bad[0]!r} is neither a number nor a datetime (Spark's "
                "to_timestamp reads 'yyyy-MM-dd HH:mm:ss' and ISO 8601)",
            )
        df = df.withColumn("ts", parsed)
    return df


def match(
    query,
    df: DataFrame,
    engine: str = "auto",
    strategy: Optional[str] = None,
    hierarchy=None,
    *,
    position: str = "position",
    slice_length: Optional[float] = None,
    fields=None,
    type: Optional[str] = None,
    ts: Optional[str] = None,
    **options,
) -> DataFrame:
    """All matches of ``query`` over the events of a Spark DataFrame, as a Spark DataFrame.

    Parameters
    ----------
    query : str or Query
        The query text, or a parsed ``Query``.
    df : pyspark.sql.DataFrame
        Events: a string column ``type``, an optional ``ts`` (number of seconds, timestamp or date), an
        optional tie-breaking column named by ``position``; every other column is an attribute. A pandas
        DataFrame or pyarrow Table is made into one on ``cepkit.spark.session()``, rows in their order:
        only the columns the query reads (every one with ``fields``), numbered on the driver.
    engine, strategy, hierarchy, **options
        As for ``cepkit.match``; ``engine="auto"`` is resolved once, on the driver.
    type, ts : str, optional
        The columns holding the type and the time when they are not ``type`` and ``ts``, as for
        ``cepkit.match``; a string ts is read with Spark's ``to_timestamp``.
    position : str
        The column that orders events with equal ts. Without it, ties keep the DataFrame's own row order
        (``monotonically_increasing_id``), which is the row order for ``createDataFrame`` and file reads.
    fields : list of str or "all", optional
        The bound events' attributes as extra columns, as ``Matches.to_pandas(fields=...)`` names them
        (``["d.dep_delay", "w.ts"]``: an array per match for a Kleene variable, null where unbound; write
        them with backquotes in Spark expressions, ``F.col("`d.dep_delay`")``). Spark joins the matches
        with the events; the result is then sorted by ``match_id``.
    slice_length : float or timedelta, optional
        For a query cut into time slices: the slice length, in seconds (in events for ``WITHIN n EVENTS``).
        By default about four slices per shuffle partition, each at least four times the overlap long. A
        query without PARTITION BY but with a window is always sliced; one with PARTITION BY and a time
        window is sliced (every key in every slice) when the data spans at least one such slice per
        shuffle partition, or when ``slice_length`` is given; otherwise its keys are spread over the
        partitions.

    Returns
    -------
    pyspark.sql.DataFrame
        ``match_id``, ``positions`` (array<long>), one column per variable (long, or array<long> for a
        Kleene variable; null for a variable of an OR branch not taken), the PARTITION BY columns. Its
        partitions hold the rows in ``match_id`` order, so ``collect()``, ``toPandas()`` and ``show()``
        list them in output order without another sort. Positions are ranks in the logical order (ts, then
        ``position``), so they equal ``cepkit.match(query, df.toPandas())`` positions when the rows are
        already in that order.

    Raises
    ------
    QueryError
        Before any job: a query that does not parse, names an unknown attribute, or needs a feature the
        engine lacks.
    EventError
        Before any job: no ``type`` column, a ``ts`` that is neither a number nor a timestamp. After
        numbering: a null type or ts.

    Warns
    -----
    OneGroupWarning
        When the query cannot be split (no PARTITION BY and no WITHIN, or CONSUME BY...).

    Notes
    -----
    Input already in logical order (files written sorted by ts, say) is numbered by its row numbers after
    one check job; other input is sorted first. The matching runs a Spark partition's events at once in a
    Python worker (one engine run per time slice, else one for all its keys): more shuffle partitions make
    smaller runs.

    Examples
    --------
    >>> spark = cepkit.spark.session()                                            # doctest: +SKIP
    >>> rows = [("T", 1, 45.0), ("H", 2, 20.0)]                                    # doctest: +SKIP
    >>> events = spark.createDataFrame(rows, "type string, ts long, v double")     # doctest: +SKIP
    >>> cepkit.spark.match("T x ; H y WITHIN 5 s", events).show()                # doctest: +SKIP
    +--------+---------+---+---+
    |match_id|positions|  x|  y|
    +--------+---------+---+---+
    |       0|   [0, 1]|  0|  1|
    +--------+---------+---+---+
    """
    q = prepare(query, strategy, hierarchy)
    refuse_limit(
        q,
        "cepkit.spark.match",
        "keep the first n rows of its result (in output order: ``.orderBy('match_id').limit(n)``)",
    )
    count, ts_values = None, None
    if isinstance(df, pd.DataFrame) or is_arrow(df):
        df, count, ts_values = _local_input(df, q, position, type, ts, fields)
        type = ts = None  # (renamed)
    df = own_columns(_spark_frame(df), type, ts)
    numbered_here = POS in df.columns
    layout = Layout.of(T.StructType([f for f in df.schema.fields if f.name != POS]), q, position)
    chosen, _ = select_engine(q, engine, options)
    split = plan_split(q)
    warn_single(split)

    needed = [
        "type",
        *(["ts"] if layout.ts_kind != "position" else []),
        *layout.used,
        *([layout.position] if layout.position and layout.position not in layout.used else []),
    ]
    selected = df.select(*(needed + [POS] if numbered_here else needed) if fields is None else df.columns)
    kept = named_types(q, options)
    run = functools.partial(_matched, q, layout, split, chosen.name, options, slice_length)
    with static_plans(df.sparkSession):  # (the jobs run in here)
        coordinate = layout.coordinate(split)
        if numbered_here:  # a local frame, numbered on the driver (_local_input)
            numbered = selected.withColumn(TS, layout.engine_ts())
            if layout.ts_kind == "position" or split.axis == "position":
                first, last = 0.0, float(count - 1)
            else:
                first, last = layout.seconds(ts_values.min()), layout.seconds(ts_values.max())
            result = run(_named(numbered, kept), first, last)
        else:
            folded = _folded(selected, layout, split, kept)
            result = None
            if folded is not None:  # matched on provisional positions, the order checked meanwhile
                events, first, last, check = folded
                result = run(events, first, last)
                parts = check()
                if parts is None:  # not in order after all: sorted below
                    result = None
                else:
                    numbered = _numbered(_scanned(selected.withColumn(TS, layout.engine_ts())), parts, POS)[0]
                    result = _renumbered(result, parts, q)
            if result is None:
                numbered, first, last = _number_events(
                    selected, layout, None if split.axis == "position" else coordinate, as_given=folded is None
                )
                result = run(_named(numbered, kept), first, last)
    return result if fields is None else _with_fields(result, numbered, fields, q, output_variables(q))


def _named(numbered: DataFrame, kept: Optional[frozenset]) -> DataFrame:
    """Only the events of the types the query names travel on (numbered first: positions count them all)."""
    return numbered if kept is None else numbered.where(F.col("type").isin(*sorted(kept)))


def _matched(q, layout: Layout, split, engine: str, options: dict, slice_length, events, first, last):
    """``match``'s matches of ``events`` (numbered, TS set, of the types that matter) spanning ``[first,
    last]`` on the slicing axis: grouped (``plan_split``), matched in ``mapInArrow``, numbered in output
    order (the jobs run here)."""
    events = events.withColumn(COORD, layout.coordinate(split))
    partitions = int(events.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    if isinstance(slice_length, dt.timedelta):
        slice_length = slice_length.total_seconds()
    if split.kind == "partition" and split.sliceable:
        # Time slices, each holding every key, when the data spans enough of them to give each partition
        # one: the partitions then hold the matches in output order (no sort of the matches), and a few
        # large keys cannot leave cores idle.
        sliced = split.by_time().with_length(first, last, _SLICES_PER_PARTITION * partitions, slice_length)
        if slice_length is not None or sliced.slice_count(first, last) >= partitions:
            split = sliced
    split = split.with_length(first, last, _SLICES_PER_PARTITION * partitions, slice_length)
    if split.kind == "slices":
        first_slice, last_slice, home = split.slice_span(F.col(COORD), F.floor)
        events = events.withColumn(HOME, home).withColumn(SLICE, F.explode(F.sequence(first_slice, last_slice)))
    events = null_keys(events, split.keys)

    shipped = [
        "type",
        *layout.used,
        *(["ts"] if "ts" in split.work_keys else []),
        TS,
        POS,
        *([HOME, SLICE] if split.kind == "slices" else []),
    ]
    # The partitions' number given, so that adaptive execution does not merge them into fewer tasks than
    # cores (it does by size: the events of a few seconds' matching make a small shuffle).
    if split.kind == "slices":  # consecutive slices to each partition in turn: the matches come out in order
        grouped = events.repartitionById(partitions, _slice_places(split, first, last, partitions))
    elif split.kind == "partition":
        grouped = events.repartition(partitions, *split.keys)
    else:
        grouped = events.repartition(1)  # the workers sort groups
    matcher = GroupMatcher(q, engine, options, layout.columns, split)
    schema = layout.match_schema(q)
    # Arrow both ways: no pandas lists of matches, no per-match objects. Checkpointed, so that numbering
    # the matches does not run the engines a second time; lazily: the engines run in the numbering's job.
    found = (
        grouped.select(*shipped).mapInArrow(matcher.arrow(to_arrow_schema(schema)), schema).localCheckpoint(eager=False)
    )
    if split.kind == "partition":  # the keys' matches interleave: a sort puts them in output order
        result = with_row_numbers(found, [F.col(LAST), F.col("positions"), F.col(RANK)], "match_id")[0]
    else:  # one group, or slices in order: each partition's matches follow the previous partition's
        result = numbered_in_place(found, "match_id")[0]
    return result.select("match_id", "positions", *output_variables(q), *split.keys)


def _scanned(rows: DataFrame) -> DataFrame:
    """``rows`` with their Spark partition (``_PART``) and ``monotonically_increasing_id`` (``_ROW``)."""
    return rows.withColumn(_PART, F.spark_partition_id()).withColumn(_ROW, F.monotonically_increasing_id())


def _folded(selected: DataFrame, layout: Layout, split, kept: Optional[frozenset]) -> Optional[tuple]:
    """Input in logical order as given, numbered by the matching job itself: (the events of the types
    ``kept``, TS set, POS a provisional position (``monotonically_increasing_id``'s, partition index in
    the high bits), the extent on the slicing axis, ``check()``), or None where the input is not read
    again alike by each job (``rereadable``), ts is not a time (positions are read as such then), or the
    files' statistics give no extent (``_file_extent``).

    A Python step on the matching job's map side checks the order as ``_numbered_as_given``'s job does
    (a partition out of order or with a bad row sends nothing further) and passes the rows on; provisional
    positions keep the order of the true ones, so the matching, the grouping and the output order are
    those of the true positions. After the job, ``check()`` gives the partitions' counts (``_numbered``'s
    ``parts``) when every partition was in order and followed the previous one, else None (then the
    input is sorted, as before: the matching's work is lost). So file input in order is read once, not
    twice (bench/README.md). Parquet files only: their footers tell whether Spark reads the files in
    time order (``_file_extent``), so that files read out of order are sorted at once, not matched first."""
    if layout.ts_kind == "position" or split.axis == "position" or not rereadable(selected):
        return None
    extent = _file_extent(selected, layout)  # (also: the files follow each other, else sorted at once)
    if extent is None:
        return None
    first, last = extent
    summaries = selected.sparkSession.sparkContext.accumulator({}, _Summaries())
    order = layout.order()
    bad = F.col("type").isNull() | F.col(TS).isNull()
    if layout.ts_kind == "number":
        bad = bad | F.isnan(F.col(TS)) | F.abs(F.col(TS)).cast("double").eqNullSafe(F.lit(float("inf")))
    events = selected.withColumn(TS, layout.engine_ts())
    schema = T.StructType([*events.schema.fields, T.StructField(POS, T.LongType(), False)])
    shipped = events.select("*", bad.alias(_BAD), *[c.alias(f"{_ORDER}{i}") for i, c in enumerate(order)])
    body = functools.partial(
        checked_events, width=len(order), kept=kept, summaries=summaries, names=tuple(schema.names)
    )

    def check() -> Optional[list]:
        found = summaries.value
        parts = [found.get(p) or {_PART: p, "count": 0} for p in range(max(found, default=-1) + 1)]
        return parts if _follow(parts, len(order) + 1) else None

    return shipped.mapInArrow(body, schema), first, last, check


class _Summaries(AccumulatorParam):
    """``checked_events``' accumulator: {partition: ``OrderCheck.row``}; a task run again writes the same."""

    def zero(self, value):
        return {}

    def addInPlace(self, value1, value2):
        value1.update(value2)
        return value1


def _file_extent(df: DataFrame, layout: Layout) -> Optional[tuple]:
    """(first, last) on the time axis of the events ``df`` reads, from the row groups' statistics of ts in
    the footers of its Parquet files (no job), or None: unless ``df``'s ts is a column of Parquet files
    scanned without a filter, every row group has statistics of it (as integers, or floats, or timestamps
    in ms, µs or ns), and the files follow each other in time in the order Spark's partitions read them
    (Spark packs the files into partitions largest first: files written in order may then be read out of
    order, which only sorting puts right). Only the slices' length and placement depend on the extent:
    any gives the same matches, the data's own balances the slices over the partitions."""
    try:
        plan = df.select("ts")._jdf.queryExecution().sparkPlan()
        if plan.getClass().getSimpleName() != "FileSourceScanExec" or plan.dataFilters().size():
            return None
        if plan.relation().fileFormat().getClass().getSimpleName() != "ParquetFileFormat":
            return None
        read = [str(f.filePath().toString()) for p in plan.inputRDD().partitions() for f in p.files()]
        ranges = {uri: _footer_extent(uri, layout) for uri in dict.fromkeys(read)}
    except Exception:  # Spark Connect, a file pyarrow cannot open, no ts in the files: no extent
        return None
    if not ranges or any(extent is None for extent in ranges.values()):
        return None
    order = [ranges[uri] for uri, _ in itertools.groupby(read)]  # (a file's splits, one after the other)
    if len(order) != len(ranges) or any(before[1] > after[0] for before, after in zip(order, order[1:])):
        return None
    low, high = min(lo for lo, _ in order), max(hi for _, hi in order)
    return (low, high) if np.isfinite([low, high]).all() else None


def _footer_extent(uri: str, layout: Layout) -> Optional[tuple]:
    """(first, last) of ts in one Parquet file, from its row groups' statistics (``_seconds_bounds``)."""
    import urllib.parse

    import pyarrow.fs
    import pyarrow.parquet as pq

    if uri.startswith("file:"):
        filesystem, path = pyarrow.fs.LocalFileSystem(), urllib.parse.unquote(urllib.parse.urlparse(uri).path)
    else:
        filesystem, path = pyarrow.fs.FileSystem.from_uri(uri)
    meta = pq.read_metadata(path, filesystem=filesystem)
    column = [meta.schema.column(i).path for i in range(meta.num_columns)].index("ts")
    bounds = [
        _seconds_bounds(meta.row_group(group).column(column).statistics, layout)
        for group in range(meta.num_row_groups)
        if meta.row_group(group).num_rows
    ]
    if not bounds or any(b is None for b in bounds):
        return None
    return min(lo for lo, _ in bounds), max(hi for _, hi in bounds)


_MICROS = {"milliseconds": 1_000, "microseconds": 1, "nanoseconds": 0.001}


def _seconds_bounds(stats, layout: Layout) -> Optional[tuple]:
    """A row group's ts statistics as (first, last) on the time axis (``Layout.seconds``), or None."""
    if stats is None or not stats.has_min_max:
        return None
    logical = stats.logical_type.to_json() if stats.logical_type is not None else "{}"
    kind = json.loads(logical) if logical else {}
    if layout.ts_kind == "datetime":
        if stats.physical_type != "INT64" or kind.get("Type") != "Timestamp":
            return None
        scale = _MICROS.get(kind.get("timeUnit"))
        return None if scale is None else (layout.seconds(stats.min_raw * scale), layout.seconds(stats.max_raw * scale))
    if stats.physical_type not in ("INT32", "INT64", "FLOAT", "DOUBLE") or kind.get("Type") not in (
        None,
        "None",
        "Int",
    ):
        return None
    return float(stats.min_raw), float(stats.max_raw)


def checked_events(batches, width: int, kept: Optional[frozenset], summaries, names: tuple):
    """``_folded``'s ``mapInArrow`` body: the rows' columns ``names`` (the last, POS, a provisional position) of the types
    ``kept``, while the partition is in order; its ``OrderCheck.row`` added to ``summaries``."""
    freeze_heap()
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark import TaskContext

    partition = TaskContext.get().partitionId()
    check = OrderCheck()
    wanted = None if kept is None else pa.array(sorted(kept), pa.string())
    for batch in batches:
        ids = pa.array(np.arange(check.count, check.count + batch.num_rows, dtype=np.int64) + (partition << 33))
        if not check.add([*(batch.column(f"{_ORDER}{i}") for i in range(width)), ids], batch.column(_BAD)):
            continue  # (out of order: the driver sorts the input, and this partition's matches are not used)
        rows = pa.RecordBatch.from_arrays([*(batch.column(n) for n in names[:-1]), ids], names=list(names))
        if wanted is not None:
            rows = rows.filter(pc.is_in(rows.column("type"), value_set=wanted))
        if rows.num_rows:
            yield rows
    summaries.add({partition: check.row(partition, width + 1)})


def _renumbered(result: DataFrame, parts: list, query) -> DataFrame:
    """``result``'s provisional positions (``_folded``) as positions: their partition's offset (``parts``,
    as ``_numbered`` gives them) plus their row there."""
    offsets = list(itertools.accumulate((row["count"] for row in parts), initial=0))[:-1] or [0]
    table = F.array(*[F.lit(o) for o in offsets])

    def true(p):
        return F.element_at(table, F.shiftright(p, 33).cast("int") + 1) + p.bitwiseAND(F.lit((1 << 33) - 1))

    kleene = query.kleene_variables
    columns = {"positions": F.transform("positions", true)}
    for var in output_variables(query):
        columns[var] = F.transform(var, true) if var in kleene else true(F.col(var))
    return result.withColumns(columns)


def with_positions(df: DataFrame, position: str = "position") -> DataFrame:
    """The events of ``df`` in logical order (ts, then the column ``position``, then the row order), with the
    column ``position`` holding each event's position: the positions ``cepkit.spark.match`` reports.

    Numbered once, ``match`` on the result reports the same positions and needs no sort (its rows are in
    order), and the events of a match are a filter on ``position`` away, which is how a widget shows them.
    The rows are checkpointed (computed once, then read from the executors' storage).

    Examples
    --------
    >>> events = cepkit.spark.with_positions(spark.createDataFrame(frame))                 # doctest: +SKIP
    >>> found = cepkit.spark.match("A a ; B b WITHIN 5 s", events)                          # doctest: +SKIP
    >>> events.where(F.col("position").isin(found.first()["positions"])).toPandas()        # doctest: +SKIP

    A local frame (pandas, Arrow) is numbered and put in order on the driver, as ``match`` numbers one
    (``_driver_positions``), then handed to ``cepkit.spark.session()``: no Spark job; what the driver does
    not order as Spark would (a text ts, nulls, NaN) is numbered by Spark, with its errors.
    """
    if isinstance(df, pd.DataFrame) or is_arrow(df):
        local = _driver_numbered(df, position)
        if local is not None:
            return local
    df = _spark_frame(df)
    layout = Layout.of_events(df.schema, position)
    numbered = _number_events(df, layout, None)[0]
    columns = [c for c in df.columns if c != position]
    return numbered.select(*columns, F.col(POS).alias(position))


def _driver_numbered(events, position: str) -> Optional[DataFrame]:
    """``with_positions`` of a local frame numbered on the driver (``_driver_positions``): its rows in
    logical order, the column ``position`` their positions, as a Spark DataFrame on ``session()``; None
    when the driver cannot number them as Spark would."""
    import pyarrow as pa

    from .session import session

    frame = pa.Table.from_batches([events]) if is_arrow(events) and not hasattr(events, "to_batches") else events
    local = isinstance(frame, pd.DataFrame)
    if local:
        check_local_columns(frame)
    names = [str(name) for name in (frame.columns if local else frame.schema.names)]
    if "type" not in names:  # (Spark's path names what is missing)
        return None
    spark = session()
    numbering = _driver_positions(frame, position, spark.conf.get("spark.sql.session.timeZone") in ("UTC", "Etc/UTC"))
    if numbering is None:
        return None
    order = np.argsort(numbering[0], kind="stable")  # (the rows at their positions)
    count = len(order)
    kept = [name for name in names if name != position]
    if local:
        frame = frame.iloc[order][kept].reset_index(drop=True)
        frame[position] = np.arange(count, dtype=np.int64)
    else:
        frame = frame.take(pa.array(order)).select(kept).append_column(position, pa.array(np.arange(count), pa.int64()))
    with _settings(spark, {"spark.sql.execution.arrow.localRelationThreshold": "0"}):  # (see _local_input)
        return spark.createDataFrame(frame)
