"""MATCH_RECOGNIZE over a stream: rows arrive in batches, and each match comes out once it is decided.

A partition of a stream has no last row, so a match is final only when no row to come could change it:
the matcher (``run.find_open``) stops at the first start row whose preferred match still depends on rows
to come (a greedy ``B+`` that may go on, a NEXT not yet here, a WITHIN window still open). What a partition
keeps between batches (``Partition``): the rows from that start row on, the few rows before it that PREV
reads, the rows the watermark has not settled yet, and the next MATCH_NUMBER. When the stream ends
(``close``), the rest is matched as the batch ``cepkit.sql`` matches a partition's last rows, so the rows
out of every batch and the close are exactly the batch query's rows (docs/language.md §13, streams).

Rows settle when the watermark passes their ORDER BY time: rows with a time below it are in order and
final, rows at or above it wait (they may still be preceded by rows to come). Without a watermark every
row given is settled: the stream is in ORDER BY order.

Streams take ONE ROW PER MATCH only (an append-only stream cannot show the unmatched rows or every row of a
match before the match is decided, and Flink's MATCH_RECOGNIZE makes the same choice), and no anchor ``^``
or ``$`` (a stream has no last row, and its first row is long gone); the first ORDER BY column, ascending,
is the event time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np
import pandas as pd

from ..errors import QueryError
from . import ast as A
from .run import _sorted, check_columns, find_open, output, reach, within_times


def check_streamable(query: A.Recognize) -> None:
    """A ``QueryError`` for what a stream cannot run: ALL ROWS PER MATCH, anchors, no ORDER BY, or an
    ORDER BY whose first column is not ascending."""
    if query.rows != "one":
        raise QueryError(
            "a stream gives ONE ROW PER MATCH only: ALL ROWS PER MATCH would show rows before their "
            "match is decided; run it on the data at rest (cepkit.sql, cepkit.spark.sql on a batch "
            "DataFrame)",
            query.text,
        )
    anchors = [node.kind for node in A.walk(query.pattern) if isinstance(node, A.Anchor)]
    if anchors:
        raise QueryError(
            f"a stream has no first or last row: the anchor {anchors[0]} cannot be matched; run it on the data at rest",
            query.text,
        )
    if not query.order or not query.order[0][1]:
        raise QueryError("a stream needs ORDER BY its event time, ascending, first", query.text)


@dataclass
class Partition:
    """What one partition of a stream keeps between batches: its settled rows from ``keep`` rows before the
    next start row on (sorted), then its rows not settled yet (``held`` of them, unsorted); the start row's
    index ``begin`` in ``rows`` and the next MATCH_NUMBER."""

    rows: pd.DataFrame
    held: int = 0
    begin: int = 0
    number: int = 1

    @property
    def settled(self) -> pd.DataFrame:
        return self.rows.iloc[: len(self.rows) - self.held]


def advance(
    query: A.Recognize,
    part: Partition,
    new: Optional[pd.DataFrame],
    watermark: Any = None,
    *,
    clock: Optional[str] = None,
    horizon: Optional[int] = None,
) -> Tuple[pd.DataFrame, Partition]:
    """Take a partition's new rows and the watermark (an ORDER BY value: rows before it are settled; None:
    every row is); return the output rows of the matches now decided and what the partition keeps.

    ``clock``: the column the watermark is compared with, when not the first ORDER BY column (Spark's event
    time in UTC microseconds); ``horizon``: then the watermark as ``within_times`` counts time."""
    waiting = part.rows.iloc[len(part.rows) - part.held :]
    if new is not None and len(new):
        waiting = pd.concat([waiting, new], ignore_index=True)
    settled, waiting = _settle(query, part.settled, waiting, watermark, clock or query.order[0][0])
    if part.begin >= len(settled):
        return _empty(query, part.rows), Partition(
            pd.concat([settled, waiting], ignore_index=True), len(waiting), part.begin, part.number
        )
    horizon = _horizon(query, settled, watermark if horizon is None else horizon)
    matched, resume = find_open(query, settled, part.begin, horizon, part.number)
    return _kept(query, matched, settled, waiting, resume, part.number)


def close(query: A.Recognize, part: Partition) -> Tuple[pd.DataFrame, Partition]:
    """The stream has ended: match the partition's remaining rows as a batch query matches its last rows."""
    rows = _sorted(query, part.rows)
    if part.begin >= len(rows):
        return _empty(query, rows), Partition(rows.iloc[:0], 0, 0, part.number)
    matched, resume = find_open(query, rows, part.begin, None, part.number)
    out, _ = _kept(query, matched, rows, rows.iloc[:0], resume, part.number)
    return out, Partition(rows.iloc[:0], 0, 0, part.number + len(matched))


def _settle(query: A.Recognize, settled: pd.DataFrame, waiting: pd.DataFrame, watermark, clock: str):
    """(settled rows, rows still waiting): the waiting rows before the watermark join the settled ones, sorted."""
    if watermark is None:
        ready = np.ones(len(waiting), dtype=bool)
    else:
        ready = (waiting[clock] < watermark).to_numpy(dtype=bool)
    if not ready.any():
        return settled, waiting
    fresh = _sorted(query, waiting[ready])
    return pd.concat([settled, fresh], ignore_index=True), waiting[~ready].reset_index(drop=True)


def _horizon(query: A.Recognize, settled: pd.DataFrame, watermark) -> int:
    """The time no row to come is before, as ``within_times`` counts it (only WITHIN reads it)."""
    if query.within is None:
        return 0
    last = int(within_times(query, settled.iloc[-1:])[0])
    if watermark is None:
        return last
    return max(last, watermark if isinstance(watermark, (int, np.integer)) else int(pd.Timestamp(watermark).value))


def _kept(query, matched, settled, waiting, resume: int, number: int) -> Tuple[pd.DataFrame, Partition]:
    out = output(matched)
    keep = max(0, resume - reach(query.defines + query.measures, "PREV"))
    rows = pd.concat([settled.iloc[keep:], waiting], ignore_index=True)
    return out, Partition(rows, len(waiting), resume - keep, number + len(matched))


def _empty(query: A.Recognize, rows: pd.DataFrame) -> pd.DataFrame:
    """No output rows, with the output's columns."""
    matched, _ = find_open(query, rows.iloc[:0], 0, None)
    return output(matched)


class RowStream:
    """A MATCH_RECOGNIZE query over a stream of pandas batches, every partition at once: ``push`` a batch
    (and the watermark, if the batches are not in ORDER BY order), get the output rows now decided;
    ``close`` at the end of the stream. The rows out of all calls are ``cepkit.sql``'s rows over all rows.

    >>> import pandas as pd
    >>> from cepkit.match_recognize import parse
    >>> stream = RowStream(parse("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY day MEASURES LAST(UP.day) AS top "
    ...                          "PATTERN (UP+) DEFINE UP AS price > PREV(price))"))
    >>> stream.push(pd.DataFrame({"day": [1, 2, 3], "price": [1, 2, 3]}))     # UP+ may go on
    Empty DataFrame
    Columns: [top]
    Index: []
    >>> stream.push(pd.DataFrame({"day": [4, 5], "price": [1, 2]}))           # it did not
       top
    0    3
    >>> stream.close()
       top
    0    5
    """

    def __init__(self, query: A.Recognize):
        check_streamable(query)
        self.query = query
        self.partitions: dict = {}
        self.columns: Optional[pd.DataFrame] = None  # no rows, the input's columns: the output's shape

    def push(self, rows: pd.DataFrame, watermark: Any = None) -> pd.DataFrame:
        check_columns(self.query, rows.columns)
        if self.columns is None:
            self.columns = rows.iloc[:0]
        outs = []
        for key, group in self._groups(rows):
            part = self.partitions.get(key) or Partition(group.iloc[:0])
            out, self.partitions[key] = advance(self.query, part, group, watermark)
            outs.append(out)
        for key in set(self.partitions) - {key for key, _ in self._groups(rows)}:
            if watermark is not None:  # the watermark moves every partition, with or without new rows
                out, self.partitions[key] = advance(self.query, self.partitions[key], None, watermark)
                outs.append(out)
        return self._combine(outs)

    def close(self) -> pd.DataFrame:
        outs = []
        for key, part in self.partitions.items():
            out, self.partitions[key] = close(self.query, part)
            outs.append(out)
        return self._combine(outs)

    def _groups(self, rows: pd.DataFrame):
        if not self.query.partition:
            return [((), rows)]
        keys = list(self.query.partition)
        return [
            (key if isinstance(key, tuple) else (key,), group.reset_index(drop=True))
            for key, group in rows.groupby(keys, sort=True, dropna=False)
        ]

    def _combine(self, outs) -> pd.DataFrame:
        outs = [out for out in outs if len(out)]
        if outs:
            return pd.concat(outs, ignore_index=True)
        if self.columns is None:
            raise ValueError("nothing pushed yet: the output's columns follow from the input's")
        return _empty(self.query, self.columns)
