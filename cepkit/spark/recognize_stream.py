"""MATCH_RECOGNIZE over a streaming DataFrame: ONE ROW PER MATCH, append-only (docs/language.md §13).

One key per PARTITION BY value (``transformWithStateInPandas``); each key's state is what
``cepkit.match_recognize.stream.Partition`` keeps: the rows of its undecided match attempt, the rows PREV
reads before it, the rows the watermark has not settled, and the next MATCH_NUMBER. The watermark is
Spark's, on the first ORDER BY column (a timestamp) with the ``delay`` given; a row is settled once the
watermark passes it, and event-time timers settle the rows of quiet keys and close their WITHIN windows.
The rows out are those ``cepkit.spark.sql`` gives on the same rows at rest, except the matches still
undecided when the stream stops (a greedy ``B+`` that a next row could extend, a WITHIN window open).

Time: Spark hands timestamps to pandas in the session time zone (``spark.sql.session.timeZone``), as for
the batch query; the watermark is compared with each row's UTC instant, kept beside it.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from ..errors import QueryError
from ..match_recognize import ast as A
from ..match_recognize.stream import Partition, advance, check_streamable
from .groups import PREFIX
from .session import use_rocksdb
from .streaming import _EVENT_TIME, _GROUP, _interval

_CLOCK = PREFIX + "clock_us"  # the row's UTC instant in microseconds: what the watermark is compared with
_STATE = T.StructType(
    [
        T.StructField("rows", T.BinaryType()),
        T.StructField("held", T.LongType()),
        T.StructField("begin", T.LongType()),
        T.StructField("number", T.LongType()),
    ]
)


class _Recognizer(StatefulProcessor):
    """One key's ``Partition`` in the state store, advanced by its new rows and by event-time timers."""

    def __init__(self, query: A.Recognize, received: list, columns: list, output: list, time_zone: str):
        self.query = query
        self.received = received  # the columns Spark sends, in order
        self.columns = columns  # those the query reads, and the clock
        self.output = output
        self.time_zone = time_zone

    def init(self, handle) -> None:
        self.handle = handle
        self.state = handle.getValueState("cepkit_recognize", _STATE)

    def handleInputRows(self, key, rows, timerValues):
        # Spark hands rows over as namedtuples, which rename some columns: restore them by position.
        new = pd.concat([frame.set_axis(self.received, axis=1)[self.columns] for frame in rows], ignore_index=True)
        yield from self._advance(new, timerValues)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        yield from self._advance(None, timerValues)

    def close(self) -> None:
        pass

    def _advance(self, new, timer_values):
        watermark_ms = timer_values.getCurrentWatermarkInMs()
        part = self._load(new)
        if watermark_ms > 0:
            local = pd.Timestamp(watermark_ms, unit="ms", tz="UTC").tz_convert(self.time_zone).tz_localize(None)
            out, part = advance(self.query, part, new, watermark_ms * 1000, clock=_CLOCK, horizon=local.value)
        else:  # Spark's watermark starts at 0: until it moves, nothing is settled
            out, part = advance(self.query, part, new, -(2**62), clock=_CLOCK)
        self._save(part, watermark_ms)
        if len(out):
            yield out[self.output]

    def _load(self, new) -> Partition:
        if self.state.exists():
            blob, held, begin, number = self.state.get()
            rows = pa.ipc.open_stream(bytes(blob)).read_all().to_pandas()
            return Partition(rows, int(held), int(begin), int(number))
        return Partition(new.iloc[:0])

    def _save(self, part: Partition, watermark_ms: int) -> None:
        sink = pa.BufferOutputStream()
        table = pa.Table.from_pandas(part.rows, preserve_index=False)
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        self.state.update((sink.getvalue().to_pybytes(), part.held, part.begin, part.number))
        for old in list(self.handle.listTimers()):
            self.handle.deleteTimer(old)
        due = []  # when the watermark settles the next waiting row, and closes the open attempt's window
        if part.held:
            due.append(int(part.rows[_CLOCK].iloc[-part.held :].min()))
        settled = len(part.rows) - part.held
        if self.query.within is not None and part.begin < settled:
            due.append(int(part.rows[_CLOCK].iloc[part.begin]) + int(self.query.within.value) // 1000)
        if due:
            self.handle.registerTimer(max(min(due) // 1000 + 1, watermark_ms + 1))


def stream(query: A.Recognize, frame: DataFrame, schema, delay, read: set) -> DataFrame:
    """The streaming DataFrame of ``query``'s output rows over the streaming ``frame`` (see the module);
    ``schema``: the output's, ``read``: the input columns the query reads."""
    check_streamable(query)
    order = query.order[0][0]
    if not isinstance(frame.schema[order].dataType, (T.TimestampType, T.TimestampNTZType)):
        raise QueryError(
            f"a stream needs ORDER BY its event time, a timestamp column; {order!r} is "
            f"{frame.schema[order].dataType.simpleString()}",
            query.text,
        )
    spark = frame.sparkSession
    use_rocksdb(spark)
    keys = list(query.partition)
    prepared = (
        frame.withColumn(_CLOCK, F.unix_micros(F.col(order).cast("timestamp")))
        .withColumn(_EVENT_TIME, F.timestamp_micros(F.col(_CLOCK) + 1))  # as streaming.py's, the clock + 1 µs
        .withWatermark(_EVENT_TIME, _interval(0 if delay is None else delay))
    )
    if not keys:
        prepared = prepared.withColumn(_GROUP, F.lit(0))
    columns = [name for name in frame.columns if name in read] + [_CLOCK]
    processor = _Recognizer(
        query, prepared.columns, columns, schema.fieldNames(), spark.conf.get("spark.sql.session.timeZone")
    )
    return prepared.groupBy(*(keys or [_GROUP])).transformWithStateInPandas(
        statefulProcessor=processor, outputStructType=schema, outputMode="Append", timeMode="EventTime"
    )
