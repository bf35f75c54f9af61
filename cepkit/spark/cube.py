"""``cepkit.spark.cube_stream``: an ``ECube`` over a streaming DataFrame, as a streaming DataFrame of every query's
matches, with a streaming cube per PARTITION BY key in Structured Streaming's state.

When every query of a cube has the same PARTITION BY, each key's sub-stream is a cube of its own (a match,
and every negation deciding it, lies within one key: docs/language.md §5). So the cube runs as
``match_stream`` runs one query (``cepkit.spark.streaming``, ``cepkit.spark.watermark``): the stream grouped by
the key (``transformWithStateInPandas``), Spark's watermark on the event time settling each key's events
(out-of-order arrivals within the delay are put in order), the key's buffered events in the state store, and
its matcher a ``StreamingCube(keep=False)`` ([LIU] §4.5's plan adaptation per key) kept in the worker
between micro-batches, fed the settled events in order. It reports each query's matches as they become
final, each once; event-time timers close quiet keys (what a trailing negation held comes out) and drop
their state. A worker without the key's cube (a restart from the checkpoint, another executor) rebuilds it
from the buffered events, which hold the last two windows: ``cepkit.ecube.incremental``'s rule "final when
its last event is closed" depends on the events fed only, so the rebuilt cube reports exactly what the lost
one would have (tests/spark/test_recovery.py kills and restarts it).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from ..ecube.cube import ECube
from ..ecube.incremental import Reach
from ..errors import QueryError
from ..runtime.python_objects import row_lists
from .batch import own_columns
from .frames import Layout
from .groups import LAST, POS, RANK, EventColumns, Split
from .streaming import SIDE_SHIFT_US, check_late, check_streamable, keyed_stream, lateness
from .watermark import Columns, Live, fed_rows

QUERY = "query"  # the output column naming a match's query


class CubeGroup:
    """A key's work for ``watermark.advance``, as ``GroupMatcher`` is for one query: the cube's queries (a
    fresh ``StreamingCube`` per key, made in the worker: ``start``), the event columns and the split (its
    keys, its axis, the largest window and lookahead)."""

    def __init__(self, cube: ECube, columns: EventColumns, split: Split):
        self.queries = dict(cube.queries)
        self.hierarchy = cube.hierarchy
        self.engine = cube.engine
        self.units = cube.units
        self.columns = columns
        self.split = split

    @property
    def output_columns(self) -> list:
        return [LAST, RANK, QUERY, "positions", *self.split.keys]

    def start(self):
        return ECube(self.queries, self.hierarchy, engine=self.engine, units=self.units).stream(keep=False)


class Reported:
    """What a key's cube reported in one call: ``by_query`` (name -> ``Matches``); its length is their sum."""

    def __init__(self, by_query: dict):
        self.by_query = by_query

    def __len__(self) -> int:
        return sum(len(m) for m in self.by_query.values())


class CubeLive(Live):
    """A key's ``StreamingCube`` in this worker, fed settled events as ``Live`` feeds an engine's matcher; its
    rows name their query."""

    def __init__(self, group: CubeGroup):
        self.group = group
        self.inner = group.start()
        self.fed = 0
        self.empty = pd.DataFrame(columns=group.output_columns)

    def feed(self, rows: Columns, ranks: np.ndarray) -> Reported:
        found = super().feed(rows, ranks)
        return Reported(found if isinstance(found, dict) else {})

    def close(self) -> Reported:
        return Reported(self.inner.close())

    def rows(self, found: list, events: Columns, match_ids: Optional[np.ndarray] = None) -> pd.DataFrame:
        """The matches of the ``Reported`` results ``found`` as ``output_columns`` rows (positions read from the
        buffer's ``events``), ``match_id`` first when ``match_ids`` are given."""
        parts = [(name, m.arrays) for f in found for name, m in f.by_query.items() if len(m)]
        if not parts:
            return self.empty.copy()
        event = fed_rows(events)
        positions = np.asarray(events[POS]).astype(np.int64, copy=False)
        lasts, names, lists = [], [], []
        for name, arrays in parts:
            start, stop = int(arrays.offsets[0]), int(arrays.offsets[-1])
            lasts.append(event(arrays.positions[arrays.offsets[1:] - 1]))
            names.append(np.full(len(arrays), name, object))
            lists.extend(row_lists(arrays.offsets - start, positions[event(arrays.positions[start:stop])].tolist()))
        last = np.concatenate(lasts)
        head = {} if match_ids is None else {"match_id": match_ids}
        keys = {key: events[key][last] for key in self.group.split.keys}
        return pd.DataFrame(
            {
                **head,
                LAST: positions[last],
                RANK: np.arange(len(last)),
                QUERY: np.concatenate(names),
                "positions": lists,
                **keys,
            }
        )


def cube_stream(
    cube: ECube,
    events: DataFrame,
    *,
    position: str = "position",
    delay=None,
    late: str = "drop",
    type: Optional[str] = None,
    ts: Optional[str] = None,
    **options,
) -> DataFrame:
    """Every query's matches of ``cube`` over a streaming DataFrame of events, as one append-only streaming
    DataFrame (see the module docstring).

    Parameters
    ----------
    cube : ECube
        Every query needs a WITHIN window and the same PARTITION BY (its keys become the state's keys).
    events : pyspark.sql.DataFrame
        A streaming DataFrame: ``type``, ``ts``, the integer column ``position`` and what the queries read.
    position, delay, late, type, ts, **options
        As for ``cepkit.spark.match_stream``: the watermark delay (``delay=``, or ``disorder="kslack"`` with
        ``k=``, ``"conservative"`` with ``max_delay=``), events later than it dropped (``late="drop"``) or
        output as rows of kind "late" (``late="side"``).

    Returns
    -------
    pyspark.sql.DataFrame
        ``query`` (the query's name in the cube), ``match_id`` (counted per key, over the cube's queries),
        ``positions`` (the ``position`` column's values of the match's events, one per positive item, in
        order), the PARTITION BY columns; with ``late="side"``, ``kind`` first and the late events' columns
        last. A match appears once the watermark passes its last event (a window later after a trailing
        negation). Start it with ``writeStream.outputMode("append")``; a query's matches are
        ``found.where(found.query == name)``.

    Raises
    ------
    QueryError
        The queries' PARTITION BY differ, a query has no WITHIN or reads a column the stream lacks, a
        PARTITION BY column is named ``query``, ``match_id`` or ``positions``.
    EventError
        No ``ts`` column, or no integer ``position`` column.

    Examples
    --------
    >>> cube = cepkit.ECube({"any": "SEQ(Computer c, FCF f) WITHIN 1 s PARTITION BY desk",
    ...                      "intel": "SEQ(INTC c, FCF f) WITHIN 1 s PARTITION BY desk"}, COMPANIES)  # doctest: +SKIP
    >>> found = cepkit.spark.cube_stream(cube, spark.readStream.table("trades"), delay=2)          # doctest: +SKIP
    >>> found.writeStream.format("console").outputMode("append").start()                            # doctest: +SKIP
    """
    partitions = {tuple(q.partition_by) for q in cube.queries.values()}
    if len(partitions) != 1:
        raise QueryError(
            "cube_stream needs every query of the cube to have the same PARTITION BY (each key is then a cube "
            f"of its own); these have {sorted(partitions)}"
        )
    (keys,) = partitions
    taken = [key for key in keys if key.lower() in (QUERY, "match_id", "positions")]
    if taken:
        raise QueryError(f"the PARTITION BY column {taken[0]!r} would share its name with an output column; rename it")
    events = own_columns(events, type, ts)
    layouts = []
    for query in cube.queries.values():
        layouts.append(Layout.of(events.schema, query, position))
        check_streamable(query, layouts[-1], position)
    reach = Reach.of(cube.queries.values())
    cube.stream(keep=False)  # (the cube's own checks: one kind of window)
    side = check_late(late)
    watermark_delay, rest = lateness(delay, options, SIDE_SHIFT_US if side else 0)
    if rest:
        raise TypeError(f"cube_stream got unexpected options {sorted(rest)} (a cube has no engine options)")
    read = {name for layout in layouts for name in layout.used}
    layout = Layout(
        events.schema,
        layouts[0].ts_kind,
        layouts[0].position,
        layouts[0].attributes,
        tuple(name for name in layouts[0].attributes if name in read),
    )
    split = Split("partition", keys, axis=reach.axis, window=reach.window, lookahead=reach.lookahead)
    output = [QUERY, "match_id", "positions", *keys]
    out_schema = T.StructType(
        [
            T.StructField(QUERY, T.StringType()),
            T.StructField("match_id", T.LongType()),
            T.StructField("positions", T.ArrayType(T.LongType())),
            *(events.schema[key] for key in keys),
        ]
    )
    group = CubeGroup(cube, layout.columns, split)
    return keyed_stream(events, layout, position, watermark_delay, side, group, output, out_schema, CubeLive)
