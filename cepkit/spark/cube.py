"""``cepkit.spark.cube_stream``: an ``ECube`` over a streaming DataFrame, per PARTITION BY key, per micro-batch.

When every query of a cube has the same PARTITION BY, each key's sub-stream is a cube of its own (a match,
and every negation deciding it, lies within one key: docs/language.md §5). Each micro-batch of the stream
(``foreachBatch``) is ordered by (ts, position) and cut by key; each key's events go to that key's
``StreamingCube(keep=False)`` ([LIU] §4.5's plan adaptation per key), which reports every query's matches as
they become final, each once, and keeps about two windows of the key's events. The matches are the batch
``ECube``'s over the same events (tests/spark/test_cube_stream.py), with the ``position`` column's values as
their positions.

The key cubes live in the driver, between micro-batches: a key's state is its kept events (memory flat per
key), the matches go to ``sink`` (by default kept in ``CubeStream.frames()``). Events of a key arrive in time
order (a later batch never holds an event earlier than the key's last one: ``EventError``); an out-of-order
source needs ``cepkit.spark.match_stream``'s watermark, per query. A restarted stream starts its key cubes
afresh, and a Spark Connect session is refused (its ``foreachBatch`` runs in the server's process).
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame

from ..ecube.cube import ECube
from ..errors import QueryError
from .jobs import is_connect


class CubeStream:
    """A running streaming cube: ``query`` (the ``StreamingQuery``), ``cubes`` (key -> its
    ``StreamingCube``), ``frames()`` (name -> the matches so far, one row each, when no ``sink`` was given)."""

    def __init__(self, cube: ECube, keys: tuple, position: str, sink: Optional[Callable]):
        self.cube = cube
        self.keys = keys
        self.position = position
        self.cubes: dict = {}
        self.batches = 0
        self._found: dict = {name: [] for name in cube.queries}
        self._sink = sink or self._keep
        self.query = None

    def _keep(self, name: str, rows: pd.DataFrame, batch_id: int) -> None:
        self._found[name].append(rows)

    def frames(self) -> dict:
        """name -> a DataFrame of its final matches so far: the key columns and ``positions`` (a tuple of the
        ``position`` column's values, one per positive item, in order)."""
        columns = [*self.keys, "positions"]
        return {
            name: pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
            for name, parts in self._found.items()
        }

    def feed(self, events: pd.DataFrame, batch_id: int = 0) -> None:
        """One micro-batch as pandas (what ``foreachBatch`` does with each): per key, in (ts, position) order."""
        self.batches += 1
        if not len(events):
            return
        events = events.sort_values(["ts", self.position], kind="stable")
        groups = events.groupby(list(self.keys), sort=False, dropna=False) if self.keys else [((), events)]
        found: dict = {name: [] for name in self.cube.queries}
        for key, part in groups:
            key = key if isinstance(key, tuple) else (key,)
            live = self.cubes.get(key)
            if live is None:
                live = self.cubes[key] = ECube(self.cube.queries, self.cube.hierarchy, units=self.cube.units).stream(
                    keep=False
                )
            self._collect(found, key, live, live.extend(part.reset_index(drop=True)))
        self._send(found, batch_id)

    def _collect(self, found: dict, key: tuple, live, reported: dict) -> None:
        for name, matches in reported.items():
            if len(matches):
                rows = np.asarray(matches.positions(), np.int64).reshape(len(matches), -1)
                found[name].append((key, live.field_at(rows, self.position)))

    def _send(self, found: dict, batch_id: int) -> None:
        for name, parts in found.items():
            if parts:
                self._sink(name, self._frame(parts), batch_id)

    def _frame(self, parts: list) -> pd.DataFrame:
        columns = {k: [] for k in self.keys}
        positions = []
        for key, values in parts:
            for k, v in zip(self.keys, key):
                columns[k].extend([v] * len(values))
            positions.extend(tuple(int(p) for p in row) for row in values)
        return pd.DataFrame({**columns, "positions": positions})

    def close(self) -> None:
        """Stop the stream, and report the matches still waiting (a trailing negation's window): the
        source has ended."""
        if self.query is not None:
            self.query.stop()
        found: dict = {name: [] for name in self.cube.queries}
        for key, live in self.cubes.items():
            self._collect(found, key, live, live.close())
        self._send(found, -1)


def cube_stream(
    cube: ECube,
    frame: DataFrame,
    *,
    position: str = "position",
    sink: Optional[Callable] = None,
    checkpoint: Optional[str] = None,
) -> CubeStream:
    """Start ``cube`` over the streaming DataFrame ``frame`` (columns ``type``, ``ts``, ``position`` and what the
    queries read); every query must have a WITHIN window and the same PARTITION BY. ``sink(name, rows,
    batch_id)`` receives each micro-batch's final matches of each query (pandas: the key columns and
    ``positions``); without it they are kept in ``frames()``. Returns the running ``CubeStream``."""
    partitions = {tuple(q.partition_by) for q in cube.queries.values()}
    if len(partitions) != 1:
        raise QueryError(
            "cube_stream needs every query of the cube to have the same PARTITION BY (each key is then a cube "
            f"of its own); these have {sorted(partitions)}"
        )
    (keys,) = partitions
    for column in ("type", "ts", position, *keys):
        if column not in frame.columns:
            raise QueryError(f"cube_stream needs a column {column!r}; the stream has {frame.columns}")
    if is_connect(frame.sparkSession):
        raise ValueError(
            "cube_stream keeps each key's cube in this process, between micro-batches: it needs a classic "
            "session (Spark Connect runs foreachBatch in the server's process)"
        )
    cube.stream(keep=False)  # the window check, before anything starts
    running = CubeStream(cube, keys, position, sink)
    writer = frame.writeStream.foreachBatch(lambda batch, batch_id: running.feed(batch.toPandas(), batch_id))
    if checkpoint is not None:
        writer = writer.option("checkpointLocation", checkpoint)
    running.query = writer.start()
    return running
