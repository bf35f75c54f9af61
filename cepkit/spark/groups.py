"""How a query splits into groups that can be matched independently, and the pure pandas work done per group.

Nothing here imports PySpark: Spark only moves rows. Batch (``cepkit.spark.match``) and streaming
(``cepkit.spark.match_stream``) hand each group of events, as a pandas DataFrame, to ``GroupMatcher``, which
runs a local engine ``Plan`` (so every engine runs on Spark unchanged) and maps the group's positions back
to the positions of the whole stream.

Three ways to split (``plan_split``):

* ``"partition"``: PARTITION BY k evaluates the pattern on each sub-stream of equal k (docs/language.md §4), so
  the events are spread over Spark's partitions by key. A key's events always meet in one group; small
  keys are gathered into one engine run (the engine partitions them itself), since one run per key would
  cost more than the matching when keys are many. With a time window the time slices below work as well,
  each holding every key (a key's events within a time range are all in the slice): ``by_time`` switches
  to them when the data spans enough slices to give each shuffle partition one (the slices' matches then
  come out in order, and a few large keys cannot leave cores idle).
* ``"slices"``: without PARTITION BY but with a window ``w``, the time axis (the position axis for
  ``WITHIN n EVENTS``, with ``w = n - 1``) is cut into slices of length ``L``. Slice ``k`` *owns* the
  matches whose last event lies in ``[kL, (k+1)L)`` and receives the events in ``[kL - w, (k+1)L + r)``.
  Everything that decides a match lies in ``[last - w, first + r]`` when ``r = w``, and in
  ``[last - w, last]`` when ``r = 0``:

  - its events (max ts - min ts <= w), and the other matches with the same last event that the NEXT,
    LAST and MAX strategies compare it with (docs/language.md §10.3: strategies see windowed matches);
  - the events between its own (STRICT, skip-till-next-match, [SES] Def 6.1);
  - the scope of a leading negation, ``[last - w, first)``, and of a trailing one, ``(last, first + w]``
    (docs/language.md §10.4), and the rest of a full match for robust skip-till-next-match (Def 6.2) or for a
    projected (RETURN) match. Only queries with such features need ``r = w``.

  So every match is found in exactly the slice that owns it: none is lost or reported twice, whatever L.
* ``"single"``: everything else runs as one group. That is the case without PARTITION BY and without a
  window (a match may span the whole stream), and for features whose outcome depends on the whole history:
  ``CONSUME BY`` (a match discards partial matches that started arbitrarily early) and a strategy wrapped
  around a sub-pattern (it compares sub-matches that need not lie in the window). Under PARTITION BY these
  still run per key, except ``CONSUME BY ANY``, which couples the keys.
"""

from __future__ import annotations

import gc
import math
import warnings
from dataclasses import dataclass, replace
from typing import Iterator, Optional

import numpy as np
import pandas as pd

from ..lang import ast as A
from ..lang.checks import definitions, negated_vars
from ..lang.query import Query
from ..runtime.stream import Stream
from ..runtime.match_arrays import MatchArrays
from ..runtime.matches import Matches
from ..runtime.selection import select_engine

# Internal columns travel with the events; the prefix keeps them apart from attributes.
PREFIX = "_cep_"
POS = PREFIX + "pos"  # the event's position in the whole stream (docs/language.md §1)
TS = PREFIX + "ts"  # ts for the engine: epoch microseconds (datetime ts), the number, or POS
COORD = PREFIX + "coord"  # where the event lies on the slicing axis: seconds, or POS for EVENTS windows
SLICE = PREFIX + "slice"  # the slice a copy of the event belongs to
HOME = PREFIX + "home"  # the slice that owns matches ending at this event
LAST = PREFIX + "last"  # a match's last position, for the output order
RANK = PREFIX + "rank"  # a match's rank in its group's output order (ties between equal positions)

# Features that only ever look back from a match's last event (see the module docstring).
_LOOK_BACK_ONLY = frozenset(
    {
        "sequence",
        "or",
        "and",
        "kleene",
        "nested_kleene",
        "nesting",
        "unary_conditions",
        "binary_conditions",
        "correlated_filters",
        "condition_items",
        "kleene_conditions",
        "aggregates",
        "time_window",
        "event_window",
        "partition",
        "any_type",
        "hierarchy",
        "strategy:STRICT",
        "strategy:PARTITION_STRICT",
        "strategy:NEXT",
        "strategy:LAST",
        "strategy:MAX",
        "strategy:STNM",
    }
)
# Features whose outcome depends on the whole history, and why: no slicing.
_WHOLE_HISTORY = {
    "consume": "CONSUME BY makes each match depend on all earlier ones",
    "nested_strategy": "a strategy on a sub-pattern compares sub-matches outside the window",
}


# Features under which an event of a type the query never names can change its matches: it then counts
# (STRICT contiguity, EVENTS windows, skip-till-next-match's "next"), or the query names no type (ANY).
_TYPE_BOUND = frozenset(
    {
        "any_type",
        "event_window",
        "strategy:STRICT",
        "strategy:PARTITION_STRICT",
        "strategy:STNM",
        "strategy:ROBUST_STNM",
    }
)


def named_types(query: Query, options: Optional[dict] = None) -> Optional[frozenset]:
    """The event types ``query``'s matches can read: the types its atoms name (negated ones included, with
    every type below a concept of its hierarchy), or None when an event of any other type may count too
    (``_TYPE_BOUND`` features, or engine ``options``, such as an out-of-order mode's punctuation).

    An event of another type binds no variable and falls in no negation's scope, and a time window reads
    only the ts of bound events: dropping such events before the shuffle leaves every match (with its
    whole-stream positions, numbered before the drop) as it was, and moves only the events that matter.

    >>> from cepkit import parse
    >>> sorted(named_types(parse("SEQ(A a, !B b, C c) WITHIN 5 s")))
    ['A', 'B', 'C']
    >>> named_types(parse("SEQ(A a, C c) WITHIN 5 EVENTS")) is None
    True
    """
    if options or _TYPE_BOUND & set(query.features):
        return None
    concepts = query.hierarchy if query.hierarchy is not None and query.hierarchy.attribute is None else None
    found: set = set()
    for atom in query.ast.pattern.find_all(A.Atom):
        found |= concepts.covers(atom.type) if concepts is not None else {atom.type}
    return frozenset(found)


def freeze_heap() -> None:
    """Hide the objects a Python worker holds now from its cyclic collector, once per process (``gc.freeze``).

    A reused PySpark worker runs a full ``gc.collect()`` after every task (pyspark/daemon.py); once cepkit,
    numba and pandas are imported it walks ~200,000 objects, 0.09 s a task: on the flights year's 70 small
    input partitions most of the workers' CPU. Called as a task starts (imports done, before its data),
    it leaves later objects, the tasks' own, to the collector as before."""
    if not _FROZEN:
        gc.collect()
        gc.freeze()
        _FROZEN.append(True)


_FROZEN: list = []


class OneGroupWarning(UserWarning):
    """The query runs as one group, on one core: it has no PARTITION BY and cannot be cut into slices."""


@dataclass(frozen=True)
class Split:
    """How the events are grouped: ``kind`` is "partition", "slices" or "single".

    For slices: ``axis`` ("time" in seconds, or "position"), ``window`` (w), ``lookahead`` (r, 0 or w),
    ``length`` (L, set once the data's extent is known by ``with_length``), ``origin`` (where slice 0
    starts) and ``pad`` (a few ulps added to the borders so rounding never drops an event a slice needs).
    ``sliceable`` tells whether a PARTITION BY query may be cut into time slices too.
    """

    kind: str
    keys: tuple = ()
    reason: str = ""
    axis: str = "time"
    window: float = 0.0
    lookahead: float = 0.0
    length: float = 0.0
    origin: float = 0.0
    pad: float = 0.0
    sliceable: bool = False

    def by_time(self) -> "Split":
        """A sliceable PARTITION BY query cut into time slices, each holding every key."""
        if not self.sliceable:
            raise ValueError("only a query with a time window and no whole-history feature can be sliced")
        return replace(self, kind="slices")

    @property
    def work_keys(self) -> tuple:
        """The columns whose values name a group."""
        return {"partition": self.keys, "slices": (SLICE,), "single": ()}[self.kind]

    def with_length(self, first: float, last: float, slices: int, length: Optional[float] = None) -> "Split":
        """Fix the slice length for data spanning ``[first, last]`` on the axis.

        Without ``length``, aim at ``slices`` slices, each at least 4 times the overlap long so that at most
        a quarter of the events is copied into a second slice.
        """
        if self.kind != "slices":
            return self
        overlap = self.window + self.lookahead
        span = max(last - first, 0.0)
        if length is None:
            length = max(span / max(slices, 1), 4 * overlap) or 1.0
        elif not length > 0:
            raise ValueError(f"a slice length must be positive, not {length!r}")
        pad = 8 * math.ulp(abs(first) + span + overlap + length)
        return replace(self, length=float(length), origin=float(first), pad=pad)

    def slice_count(self, first: float, last: float) -> int:
        """How many slices own the matches of data spanning ``[first, last]`` on the axis (their HOME)."""
        return int(math.floor((max(last, first) - self.origin) / self.length)) + 1

    def slice_span(self, coord, floor):
        """(first slice, last slice, home slice) of an event at ``coord`` on the axis.

        ``coord`` is a numpy array or a Spark Column and ``floor`` the matching function (``np.floor`` or
        ``pyspark.sql.functions.floor``), so Spark and the tests use one formula.
        """
        relative = coord - self.origin
        first = floor((relative - self.lookahead - self.pad) / self.length)
        last = floor((relative + self.window + self.pad) / self.length)
        return first, last, floor(relative / self.length)


def plan_split(query: Query) -> Split:
    """Decide how ``query`` splits into independent groups (see the module docstring).

    Whatever the kind, a query with a window gets its ``axis``, ``window`` and ``lookahead``: streaming
    uses them to tell when a match is final.
    """
    features = set(query.features)
    keys = tuple(query.partition_by)
    bounds = {}
    if query.within is not None:
        window = query.within.amount - 1 if query.within.events else query.within.seconds
        bounds = {
            "axis": "position" if query.within.events else "time",
            "window": float(window),
            "lookahead": 0.0 if features <= _LOOK_BACK_ONLY else float(window),
        }
    history = whole_history(query)
    if keys and query.consume != "ANY":
        timed = query.within is not None and not query.within.events
        return Split("partition", keys, **bounds, sliceable=timed and not history)
    if keys:
        return Split("single", keys, "CONSUME BY ANY discards partial matches of every partition", **bounds)
    if query.within is None:
        return Split(
            "single", reason="the query has neither PARTITION BY nor WITHIN, so a match may span the whole stream"
        )
    if history:
        return Split("single", reason="; ".join(history), **bounds)
    return Split("slices", **bounds, sliceable=True)


def whole_history(query: Query) -> list:
    """Why the query's matches depend on the whole history (empty if they do not): no slicing, no streaming."""
    return [why for feature, why in _WHOLE_HISTORY.items() if feature in query.features]


def warn_single(split: Split) -> None:
    if split.kind == "single":
        warnings.warn(
            f"the query runs as one group on one core: {split.reason}; add PARTITION BY or WITHIN to "
            "spread it over the cluster",
            OneGroupWarning,
            stacklevel=3,
        )


def output_variables(query: Query) -> tuple:
    """The variables a match binds, in the order of the output columns: RETURN's, or every positive one."""
    if query.select is not None:
        return tuple(query.select)
    negated = negated_vars(query.pattern)
    return tuple(v for v in definitions(query.pattern) if v not in negated)


def describe_row(row) -> str:
    """A row (a Spark Row, a mapping) as the text an error shows: its columns and values."""
    items = row.asDict() if hasattr(row, "asDict") else dict(row)
    return (
        "{"
        + ", ".join(f"{name}: {plain(value)!r}" for name, value in items.items() if not str(name).startswith(PREFIX))
        + "}"
    )


def plain(value):
    """numpy scalars as Python values, so an error prints 2.0 rather than np.float64(2.0)."""
    return value.item() if hasattr(value, "item") and getattr(value, "ndim", None) == 0 else value


@dataclass(frozen=True)
class EventColumns:
    """Where a group's pandas rows keep what the engine needs: ``attributes`` (column names) and how
    ``TS`` encodes ts: ``"datetime"`` (epoch microseconds), ``"number"`` or ``"position"`` (no ts column)."""

    attributes: tuple
    ts_kind: str

    def engine_frame(self, rows: pd.DataFrame) -> pd.DataFrame:
        """The events as ``cepkit.match`` reads them: ``type``, ``ts``, attributes, in the group's order."""
        frame = rows[["type", *self.attributes]].reset_index(drop=True)
        ts = rows[TS].reset_index(drop=True)
        if self.ts_kind == "datetime":  # (a view of the microseconds: pd.to_datetime(unit=) takes 5x longer)
            ts = pd.Series(pd.DatetimeIndex(ts.to_numpy(np.int64).view("datetime64[us]")).tz_localize("UTC"))
        frame.insert(1, "ts", ts)
        return frame


class GroupMatcher:
    """The per-group work: run one engine on a group of events, report matches with whole-stream positions.

    Picklable (Spark ships it to the workers); the engine compiles the query once per worker process.

    Parameters
    ----------
    query : Query
    engine : str
        A registered engine's name (``engine="auto"`` is resolved on the driver, so every group uses one).
    options : dict
        Engine options, as for ``cepkit.match``.
    columns : EventColumns
    split : Split
    """

    def __init__(self, query: Query, engine: str, options: dict, columns: EventColumns, split: Split):
        self.query = query
        self.engine = engine
        self.options = dict(options)
        self.columns = columns
        self.split = split
        self.variables = output_variables(query)
        self.kleene = query.kleene_variables
        self._plan = None

    def __getstate__(self):
        return {**self.__dict__, "_plan": None}

    @property
    def plan(self):
        if self._plan is None:
            self._plan = select_engine(self.query, self.engine, self.options)[1]
        return self._plan

    @property
    def output_columns(self) -> list:
        return [LAST, RANK, "positions", *self.variables, *self.split.keys]

    def match_columns(self, rows: pd.DataFrame, owned: Optional[np.ndarray] = None) -> tuple:
        """The matches in one group (``rows`` sorted by POS), in output order, as columns with whole-stream
        positions: (LAST, RANK, positions offsets, positions, {variable: binding column}, index of each
        match's last event in ``rows``); the binding columns are ``stream_bindings``'.

        ``owned`` (one bool per row) keeps only matches whose last event is owned by this group; for
        slices it is read from the HOME and SLICE columns. A group may hold several PARTITION BY keys: the
        engine partitions them itself, and each match takes its key from its last event.
        """
        arrays = Matches(
            self.plan.run(Stream.from_frame(self.columns.engine_frame(rows))), self.engine, self.query
        ).arrays
        if owned is None and self.split.kind == "slices":
            owned = rows[HOME].to_numpy() == rows[SLICE].iat[0]
        last = arrays.positions[arrays.offsets[1:] - 1] if len(arrays) else np.zeros(0, np.int64)
        rank = np.arange(len(arrays))
        if owned is not None and not owned[last].all():
            rank = np.flatnonzero(owned[last])
            arrays, last = arrays.take(rank), last[rank]  # a subsequence of rows in output order keeps it
        positions = rows[POS].to_numpy(dtype=np.int64)
        mapped = self.stream_bindings(arrays, positions.__getitem__)
        return positions[last], rank, arrays.offsets, positions[arrays.positions], mapped, last

    def stream_bindings(self, arrays: MatchArrays, position) -> dict:
        """{variable: binding column} of the matches ``arrays`` (in their order), for every output variable:
        ``MatchArrays.binding_columns``' with each engine position p read as ``position(p)`` (applied to
        arrays of them) and -1 kept (unbound: a variable of an OR branch the match did not take, or one
        no match binds)."""
        bindings = arrays.binding_columns([var for var in self.variables if var in arrays.names])
        mapped = {}
        for var in self.variables:
            kind, value = bindings.get(var) or self.unbound(var, len(arrays))
            if kind == "single":
                at = np.full(len(value), -1, np.int64)
                bound = value >= 0
                at[bound] = position(value[bound])
                mapped[var] = (kind, at)
            elif kind == "kleene":
                offsets, flat, present = value
                mapped[var] = (kind, (offsets, position(flat), present))
            else:
                mapped[var] = (
                    kind,
                    [
                        None
                        if v is None
                        else position(np.asarray(v, np.int64)).tolist()
                        if isinstance(v, list)
                        else int(position(v))
                        for v in value
                    ],
                )
        return mapped

    def unbound(self, var: str, n: int) -> tuple:
        """The binding column of a variable no match binds (none in this group), of the variable's own kind."""
        if var in self.kleene:
            return "kleene", (np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(n, bool))
        return "single", np.full(n, -1, np.int64)

    def match_batch(self, rows: pd.DataFrame, schema):
        """``match_columns`` as a ``pyarrow.RecordBatch`` of ``schema`` (``mapInArrow``): Arrow lists and
        nulls straight from the arrays, no Python object per match."""
        import pyarrow as pa

        last, rank, offsets, positions, bindings, at = self.match_columns(rows)
        columns = [
            pa.array(last, pa.int64()),
            pa.array(rank, pa.int64()),
            pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(positions, pa.int64())),
        ]
        for var in self.variables:
            kind, value = bindings[var]
            if kind == "single":
                columns.append(pa.array(value, pa.int64(), mask=value < 0))
            elif kind == "kleene":
                offsets, bound, present = value
                columns.append(
                    pa.ListArray.from_arrays(
                        pa.array(offsets, pa.int32()), pa.array(bound, pa.int64()), mask=pa.array(~present)
                    )
                )
            else:
                columns.append(pa.array(value, schema.field(var).type))
        for key in self.split.keys:
            columns.append(pa.array(rows[key].iloc[at], schema.field(key).type, from_pandas=True))
        return pa.RecordBatch.from_arrays(columns, names=schema.names).cast(schema)

    def groups(self, rows: pd.DataFrame) -> Iterator[pd.DataFrame]:
        """The groups to match in the rows of one Spark partition (in any order), each sorted by POS: one
        per slice (a slice's copies of its events all land in one Spark partition), else all the rows. A
        PARTITION BY key's events all land in one Spark partition too, and the engine keeps the keys apart
        in one run: one run per key would cost more than the matching itself when keys are many."""
        if not len(rows):
            return
        if self.split.kind != "slices":
            yield rows.take(np.argsort(rows[POS].to_numpy(), kind="stable")).reset_index(drop=True)
            return
        rows = rows.take(np.lexsort((rows[POS].to_numpy(), rows[SLICE].to_numpy()))).reset_index(drop=True)
        bounds = [0, *(np.flatnonzero(np.diff(rows[SLICE].to_numpy())) + 1), len(rows)]
        for begin, end in zip(bounds[:-1], bounds[1:]):
            yield rows.iloc[begin:end].reset_index(drop=True)

    def arrow(self, schema):
        """A ``mapInArrow`` body writing ``schema``: the Arrow batches of one Spark partition in (read as one
        pandas frame), an Arrow batch of matches per group out."""

        def body(batches):
            import pyarrow as pa

            self.plan  # (the engine compiled, or read from numba's cache) before the heap is frozen
            freeze_heap()
            batches = list(batches)
            for rows in self.groups(pa.Table.from_batches(batches).to_pandas() if batches else pd.DataFrame()):
                found = self.match_batch(rows, schema)
                if found.num_rows:
                    yield found

        return body
