"""``cepkit.spark.match_stream``: a query over a streaming DataFrame, as a streaming DataFrame of matches.

Structured Streaming with keyed state (``transformWithStateInPandas``): one key per PARTITION BY value (one
key in all without PARTITION BY), its buffered events in the state store, an event-time watermark that
settles events (``cepkit.spark.watermark``), the chosen engine's own incremental matcher per key fed the
settled events in order (any engine; kept in the worker between micro-batches, rebuilt from the state when
missing), and event-time timers that flush the matches of quiet keys and then drop their state.

Out-of-order events. The watermark delay is the query's out-of-order mode: ``disorder="kslack"`` with
``k=`` ([LIU] §3.5: hold events until the stream has moved k past them) or ``"conservative"`` with
``max_delay=`` ([LIU] §3.6.1, the same promise: nothing arrives more than that late) set the delay, ``delay=`` sets
it directly, and it is 0 otherwise (a per-type ``max_delay`` mapping sets the largest of its bounds, and
needs a ``"*"`` bound or ``delay=``). Within the delay, events may arrive in any order and the matches equal
those of the sorted stream (docs/language.md §6). Events later than that are dropped by Spark and counted
in each progress report (``numRowsDroppedByWatermark``; ``late_events(query)`` adds them up). The
aggressive mode ([LIU] §3.6.2) would retract emitted matches, which an append-only stream of matches cannot do.

What a stream needs, besides what ``cepkit.spark.match`` needs: a ``ts`` column (event time; numeric ts
count seconds and must not be negative), a position column of integers (reported in ``positions``: use a
sequence number, such as a Kafka offset, that follows (ts) order where ts tie), and a WITHIN window, which
bounds the state. Queries whose matches depend on the whole history (CONSUME BY, a strategy on a
sub-pattern) are rejected: run them with ``cepkit.spark.match`` on the data at rest.
"""

from __future__ import annotations

import datetime as _dt
import math
import numbers
from typing import Optional

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from ..errors import EventError, QueryError
from ..runtime.api import prepare, refuse_limit
from ..runtime.delays import longest_delay, max_delay_option
from ..runtime.selection import select_engine
from .batch import own_columns
from .frames import Layout, null_keys
from .groups import POS, PREFIX, TS, GroupMatcher, output_variables, plan_split, whole_history
from .session import use_rocksdb
from .watermark import (
    KIND,
    LATE_COLUMNS,
    TIME,
    Columns,
    Horizon,
    KeyBuffer,
    Live,
    advance,
    check_arrivals,
    rows_count,
    side_rows,
    split_late,
)

# The timestamp column Spark's watermark tracks: TIME + 1 µs. Spark drops a row as late when its event time
# is <= the watermark W, and W starts at 0, so without the shift an event at ts 0 would be dropped in the
# first batch; with it, the rows Spark drops are exactly those with TIME < W, the events ``advance`` settles.
_EVENT_TIME = PREFIX + "event_time"
_GROUP = PREFIX + "group"  # the one key of a query without PARTITION BY
_STATE = T.StructType(
    [
        T.StructField("events", T.BinaryType()),
        T.StructField("frontier", T.LongType()),
        T.StructField("settled", T.LongType()),
        T.StructField("emitted", T.LongType()),
        T.StructField("fed", T.LongType()),
    ]
)
# Under late="side", Spark's event-time column and the watermark delay are both shifted by a century: the
# watermark (max event time - delay) is unchanged, but no row is ever Spark's "late" (event time <= watermark),
# so late rows reach the processor, which tells them apart itself (TIME < watermark, ``split_late``).
SIDE_SHIFT_US = 100 * 365 * 86_400 * 1_000_000


class _KeyMatcher(StatefulProcessor):
    """The stateful processor: one ``KeyBuffer`` per key, advanced by new rows and by timers, and the key's
    engine matcher (``watermark.Live``) kept in this worker between calls (rebuilt from the buffer if not)."""

    def __init__(
        self,
        matcher: GroupMatcher,
        horizon: Horizon,
        received: list,
        columns: list,
        output: list,
        names: dict,
        side: bool = False,
        start=Live,
    ):
        self.matcher = matcher
        self.horizon = horizon
        self.received = received
        self.columns = columns
        self.output = output
        self.names = names  # the internal columns' names for the user, in errors
        self.side = side  # late="side": late arrivals reach this processor and come out as rows
        self.start = start  # makes a key's matcher: ``watermark.Live``, or ``cube.CubeLive`` (a cube per key)

    def init(self, handle) -> None:
        self.handle = handle
        self.state = handle.getValueState("cepkit", _STATE)
        self.lives: dict = {}  # key -> the engine's incremental matcher of that key, in this worker

    def handleInputRows(self, key, rows, timerValues):
        # Spark hands the rows over as namedtuples, which rename columns such as "_x" or "class": the input
        # columns are restored by position.
        new = self._columns(list(rows))
        check_arrivals(new, self.names)
        late: dict = {}
        if self.side:
            new, late = split_late(new, _watermark(timerValues))
            if not rows_count(new) and not self.state.exists():  # only late events of a key without state: no
                yield side_rows(
                    pd.DataFrame(),
                    late,
                    _watermark(timerValues),
                    self.output,  # state to make
                    self.matcher.split.keys,
                    self.matcher.columns.ts_kind == "datetime",
                )
                return
        yield from self._advance(key, new, timerValues, late)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        yield from self._advance(key, None, timerValues)

    def close(self) -> None:
        pass

    def _columns(self, frames: list) -> Columns:
        """The micro-batch's rows of the key as ``Columns`` of ``self.columns``, read by place."""
        at = [self.received.index(name) for name in self.columns]
        parts = [[series.to_numpy() for _, series in frame.items()] for frame in frames]  # (by place)
        if len(parts) == 1:
            return {name: parts[0][i] for name, i in zip(self.columns, at)}
        return {name: np.concatenate([part[i] for part in parts]) for name, i in zip(self.columns, at)}

    def _load(self) -> KeyBuffer:
        if self.state.exists():
            return KeyBuffer.from_state(*self.state.get())
        return KeyBuffer({})

    def _advance(self, key, new, timer_values, late=None):
        watermark_ms = timer_values.getCurrentWatermarkInMs()
        watermark = _watermark(timer_values)
        key = tuple(key)
        found, buffer, timer, live = advance(
            self._load(), new, watermark, self.matcher, self.horizon, self.lives.pop(key, None), self.start
        )
        if live is not None:
            self.lives[key] = live
        for old in list(self.handle.listTimers()):
            self.handle.deleteTimer(old)
        if len(buffer) or live is not None:
            self.state.update((buffer.to_bytes(), buffer.frontier, buffer.settled, buffer.emitted, buffer.fed))
        else:
            self.state.clear()
        if timer is not None:
            self.handle.registerTimer(max(timer // 1000 + 1, watermark_ms + 1))
        if self.side and (len(found) or rows_count(late or {})):
            yield side_rows(
                found, late, watermark, self.output, self.matcher.split.keys, self.matcher.columns.ts_kind == "datetime"
            )
        elif len(found):
            yield found[self.output]


def _watermark(timer_values) -> int:
    """The watermark in µs; Spark's starts at 0 ms, and until it moves nothing has settled (nor is late)."""
    watermark_ms = timer_values.getCurrentWatermarkInMs()
    return watermark_ms * 1000 if watermark_ms > 0 else -(2**62)


def _interval(value, shift_us: int = 0) -> str:
    """A watermark delay for Spark: a number of seconds, a timedelta, or Spark's own text ("10 seconds"),
    plus ``shift_us`` µs (text is then read by pandas' Timedelta)."""
    if isinstance(value, str):
        if not shift_us:
            return value
        try:
            value = pd.Timedelta(value)
        except ValueError:
            raise ValueError(
                f"late='side' needs a delay in seconds, a timedelta or text pandas reads as one "
                f"('10 seconds'), not {value!r}"
            ) from None
    if isinstance(value, _dt.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
        raise TypeError(f"a delay is a number of seconds >= 0, a timedelta or text such as '10 seconds', not {value!r}")
    return f"{round(value * 1e6) + shift_us} microseconds"


def check_side_names(query) -> None:
    """The side output's columns must not be a variable's or a key's (Spark's names ignore case)."""
    taken = {KIND, *LATE_COLUMNS}
    for name in (*output_variables(query), *query.partition_by):
        if name.lower() in taken:
            raise QueryError.at(
                query.variables.get(name, query.ast),
                f"{name!r} would share its output column with late='side''s {name.lower()!r} column; rename it",
                query.text,
            )


def lateness(delay, options: dict, shift_us: int = 0) -> tuple:
    """(watermark delay, engine options): the out-of-order mode becomes the watermark delay (plus
    ``shift_us`` µs, the event-time column's shift under late="side")."""
    options = dict(options)
    mode = options.pop("disorder", "reject")
    bound = {"kslack": "k", "conservative": "max_delay"}.get(mode)
    if mode == "aggressive":
        raise ValueError(
            "disorder='aggressive' retracts emitted matches, which an append-only stream of "
            "matches cannot do; use disorder='kslack' with k= (or delay=) instead"
        )
    if mode not in ("reject", "kslack", "conservative"):
        raise ValueError(f"unknown disorder mode {mode!r}; a stream takes 'reject', 'kslack' or 'conservative'")
    limit = options.pop(bound, None) if bound else None
    if bound and limit is None and delay is None:
        raise ValueError(
            f"disorder={mode!r} in a stream needs {bound}= (or delay=): the longest an event may arrive late"
        )
    if bound == "max_delay" and limit is not None:  # per-type bounds: the watermark waits for the latest
        limit = longest_delay(max_delay_option(limit))
        if limit == math.inf and delay is None:
            raise ValueError(
                "a per-type max_delay leaves some types unbounded (no '*' key), and Spark's "
                "watermark is one delay for the whole stream: add '*' or give delay="
            )
    return _interval(delay if delay is not None else limit if limit is not None else 0, shift_us), options


def check_streamable(query, layout: Layout, position: str) -> None:
    if layout.ts_kind == "position":
        raise EventError(0, "ts", "a stream needs event time: give the events a 'ts' column")
    if layout.position is None:
        raise EventError(
            0,
            position,
            f"a stream needs a position column {position!r} (an increasing sequence "
            "number such as a Kafka offset): positions cannot be counted across "
            "micro-batches and partitions",
        )
    kind = layout.schema[position].dataType
    if not isinstance(kind, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        raise EventError(0, position, f"the position column must hold integers, not {kind.simpleString()}")
    if query.within is None:
        raise QueryError.at(
            query.ast, "a streaming query needs WITHIN: the window bounds the state kept per key", query.text
        )
    reasons = whole_history(query)
    if reasons:
        raise QueryError.at(
            query.ast,
            f"a streaming query cannot keep bounded state here: {'; '.join(reasons)}; "
            "run cepkit.spark.match on the data at rest",
            query.text,
        )


def match_stream(
    query,
    events: DataFrame,
    engine: str = "auto",
    strategy: Optional[str] = None,
    hierarchy=None,
    *,
    position: str = "position",
    delay=None,
    late: str = "drop",
    type: Optional[str] = None,
    ts: Optional[str] = None,
    **options,
) -> DataFrame:
    """The matches of ``query`` over a streaming DataFrame of events, as an append-only streaming DataFrame.

    Parameters
    ----------
    query : str or Query
        Must have a WITHIN window; PARTITION BY keys become the state's keys.
    events : pyspark.sql.DataFrame
        A streaming DataFrame: ``type``, ``ts`` (seconds or timestamps), the integer column ``position``,
        attributes.
    engine, strategy, hierarchy
        As for ``cepkit.match``.
    position : str
        The column whose values are reported as positions (and order events with equal ts).
    type, ts : str, optional
        The columns holding the type and the time when not ``type`` and ``ts`` (as ``cepkit.spark.match``).
    delay : float, timedelta or str, optional
        How late an event may arrive (Spark's watermark delay); by default ``k`` (``disorder="kslack"``),
        ``max_delay`` (``"conservative"``), else 0.
    late : "drop" or "side"
        What becomes of an event later than the watermark. ``"drop"``: Spark drops it and counts it
        (``late_events``). ``"side"``: it comes out as a row of the same stream, with ``kind`` "late",
        its key, ``late_type``, ``late_ts``, ``late_position`` and the ``watermark`` it missed (seconds,
        or a timestamp for datetime ts), to audit or re-process; match rows then have ``kind`` "match".
        Spark then drops nothing itself (its event-time column is shifted by ``SIDE_SHIFT_US``, and the
        delay with it, so the watermark is the same): ``late_events`` counts 0, the late rows are the count.
    **options
        ``disorder`` and its bound, as above; the rest goes to the engine.

    Returns
    -------
    pyspark.sql.DataFrame
        ``match_id`` (counted per key), ``positions``, one column per variable, the PARTITION BY columns
        (with ``late="side"``: ``kind`` first and the late events' columns last). A match appears once the
        watermark passes its last event (plus the window, for a query with a trailing negation or a
        projection). Start it with ``writeStream.outputMode("append")`` and a ``checkpointLocation``, through
        ``cepkit.spark.supervise`` to have a stalled batch restarted on its checkpoint.

    Raises
    ------
    QueryError
        Before the stream starts: a query that does not parse, has no WITHIN, has LIMIT, or cannot keep
        bounded state; a feature the engine lacks.
    EventError
        No ``ts`` column, or no integer ``position`` column.
    ValueError
        ``late`` is neither "drop" nor "side".

    Examples
    --------
    >>> events = spark.readStream.schema("type string, ts double, position long, id long").json(path)  # doctest: +SKIP
    >>> query = "SEQ(A a, B b) WITHIN 10 s PARTITION BY id"                                           # doctest: +SKIP
    >>> found = cepkit.spark.match_stream(query, events, delay=5)                                      # doctest: +SKIP
    >>> found.writeStream.format("console").outputMode("append").start()                                # doctest: +SKIP
    """
    q = prepare(query, strategy, hierarchy)
    refuse_limit(
        q, "cepkit.spark.match_stream", "a stream's first n matches come from a Matcher, or take them from the sink"
    )
    events = own_columns(events, type, ts)
    layout = Layout.of(events.schema, q, position)
    check_streamable(q, layout, position)
    side = check_late(late)
    if side:
        check_side_names(q)
    watermark_delay, engine_options = lateness(delay, options, SIDE_SHIFT_US if side else 0)
    chosen, _ = select_engine(q, engine, engine_options)
    split = plan_split(q)
    matcher = GroupMatcher(q, chosen.name, engine_options, layout.columns, split)
    output = ["match_id", "positions", *output_variables(q), *split.keys]
    schema = layout.match_schema(q)
    out_schema = T.StructType([T.StructField("match_id", T.LongType()), *(schema[name] for name in output[1:])])
    return keyed_stream(events, layout, position, watermark_delay, side, matcher, output, out_schema)


def check_late(late: str) -> bool:
    """Whether ``late`` asks for the side output; ValueError unless it is "drop" or "side"."""
    if late not in ("drop", "side"):
        raise ValueError(
            f"late= is 'drop' (Spark drops late events and counts them) or 'side' (they come out "
            f"as rows of kind 'late'), not {late!r}"
        )
    return late == "side"


def keyed_stream(
    events: DataFrame,
    layout: Layout,
    position: str,
    watermark_delay: str,
    side: bool,
    matcher,
    output,
    out_schema,
    start=Live,
) -> DataFrame:
    """The streaming DataFrame of ``matcher``'s rows (``output`` columns of ``out_schema``): the events with
    the internal columns and Spark's watermark on their event time, grouped by the matcher's PARTITION BY
    keys (one key in all without), each key advanced by ``_KeyMatcher`` with its matcher made by ``start``
    (``match_stream``: the engine's per key; ``cube_stream``: a streaming cube per key)."""
    spark = events.sparkSession
    use_rocksdb(spark)
    if layout.ts_kind == "datetime":
        time_us = F.col(TS)
    else:  # NaN and infinities become null (a bad row, reported by the workers), not an overflow
        finite = ~F.isnan(F.col("ts")) & (F.abs(F.col("ts").cast("double")) < F.lit(float("inf")))
        time_us = F.when(finite, F.floor(F.col("ts") * F.lit(1_000_000)))
    prepared = (
        events.withColumn(TS, layout.engine_ts())
        .withColumn(POS, F.col(position).cast("long"))
        .withColumn(TIME, time_us.cast("long"))
        .withColumn(_EVENT_TIME, F.timestamp_micros(F.col(TIME) + 1 + (SIDE_SHIFT_US if side else 0)))
        .withWatermark(_EVENT_TIME, watermark_delay)
    )
    keys = list(matcher.split.keys)
    if not keys:
        prepared = prepared.withColumn(_GROUP, F.lit(0))
    prepared = null_keys(prepared, keys)
    columns = ["type", *layout.used, TS, POS, TIME]
    if side:
        when = T.TimestampType() if layout.ts_kind == "datetime" else None
        out_schema = T.StructType(
            [
                T.StructField(KIND, T.StringType()),
                *out_schema.fields,
                T.StructField("late_type", T.StringType()),
                T.StructField("late_ts", when or layout.schema["ts"].dataType),
                T.StructField("late_position", T.LongType()),
                T.StructField("watermark", when or T.DoubleType()),
            ]
        )
    processor = _KeyMatcher(
        matcher,
        Horizon.of(matcher.split),
        prepared.columns,
        columns,
        output,
        {TS: "ts", POS: position},
        side,
        start,
    )
    return prepared.groupBy(*(keys or [_GROUP])).transformWithStateInPandas(
        statefulProcessor=processor, outputStructType=out_schema, outputMode="Append", timeMode="EventTime"
    )


def late_events(streaming_query) -> int:
    """Events Spark dropped as later than the watermark, over the query's recent progress reports.

    Spark keeps the last ``spark.sql.streaming.numRecentProgressUpdates`` (100) reports; a long-running
    query should read ``numRowsDroppedByWatermark`` from a ``StreamingQueryListener`` instead.
    """
    return sum(
        op.numRowsDroppedByWatermark for progress in streaming_query.recentProgress for op in progress.stateOperators
    )
