"""How one query's results are computed from another's ([LIU] §4.4), each way exact.

A result is a *row*: one stream position per positive item, in item order (a flat SEQ over an in-order
stream binds increasing positions). Every strategy returns exactly the rows the query has alone; the
conditions under which that holds are checked when the strategy is offered (``offer_*`` returns None
when they fail), so the planner only ever chooses exact edges.

==================  ======  ==========================================================================
strategy     [LIU] §4.4    what it does
==================  ======  ==========================================================================
``Scratch``         --      the stack engine over the whole stream (Chase's edge from v0)
``FilterConcept``   (b)     g→s concept: re-read each general row against the finer types and values
                            (Eq 4.4); a coarser negation (Eq 4.5) re-checks the rows' gaps on the
                            rows' events plus the negated ones
``JoinPattern``     (a)     g→s pattern: join the general rows with the added items: the specific query
                            runs over the general rows' events plus the added items' events, and keeps
                            the matches that extend a general row (online filtering, Ex 12: no general
                            row, nothing to do)
``UnionConcept``    (e)     s→g concept: the child's rows plus the pointer pairs it did not cover, one
                            delta query per combination of "child type / the rest" (Ex 16)
``ProjectPattern``  (d)     s→g pattern: the specific rows projected, plus the delta query with the
                            added item negated, ``q3 = π(q6) ⊎ SEQ(G,A,!D,T)`` (Ex 15)
``Via``             (c)(f)  both kinds: through the intermediate query that differs by one kind only
==================  ======  ==========================================================================

Scope conditions (ours; [LIU] §4.4 does not discuss a negation near an added item): an added positive item
must not fall in a gap where the general query has a negation, nor before the first or after the last
general item when it has a leading or trailing negation, since that would narrow the negation's scope
(then a specific match need not extend a general one). Strategies that run the stack engine on a part
of the stream (``FilterConcept`` with a coarser negation, ``JoinPattern``) are not offered under
``WITHIN n EVENTS``, whose positions count every event.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Optional

import numpy as np
import pandas as pd

from ..errors import QueryError
from ..lang.ast import variables_in
from ..engines.compiled import jit
from ..lang.window import first_fitting_all, past_fitting_all
from ..runtime.match_arrays import MatchArrays
from ..runtime.registry import get_engine
from ..runtime.api import compiled
from ..runtime.stream import Stream
from .cost import CostModel
from .lattice import Refinement
from .shape import Item, Shape, condition_texts, in_output_order, output_order, rename

MAX_DELTAS = 8  # UnionConcept: at most this many delta queries (3^|differing positions| − 1 at worst)


class Executor:
    """Runs shapes with an engine over one stream, or over a part of it, and returns their rows: an int64
    array with one row per match and one column per positive item (its position), in output order
    (docs/language.md §10.2), as every strategy below returns them. Rows are never turned into ``Match``
    objects here: the strategies work on these arrays with numpy."""

    def __init__(self, stream: Stream, engine: str = "auto", compiled: Optional[dict] = None):
        self.stream = stream
        self.engine = engine
        self._plans: dict = {}
        # shape -> a compiled plan never run (``Plan.fresh``), shared by the executors of one cube: compiling
        # costs as much as a small stream's matching, and a streaming cube runs every batch
        self._compiled = {} if compiled is None else compiled
        self._accepted: dict = {}
        self._identity: Optional[bool] = None  # whether the stream's positions are 0..n-1 (``index``)
        self.evaluations = 0  # engine runs
        self.events_read = 0  # events fed to the engine, over all runs

    def _plan(self, shape: Shape):
        plan = self._plans.get(shape)
        if plan is None and shape in self._compiled:
            plan = self._plans[shape] = self._compiled[shape].fresh()
        if plan is None:
            if self.engine == "auto":  # the engine cepkit.match would choose (never the cube itself)
                chosen, plan = compiled(shape.query)
                if chosen.name == "ecube":
                    plan = get_engine("stack").compile(shape.query)
            else:
                plan = get_engine(self.engine).compile(shape.query)
            self._plans[shape] = plan
            unrun = plan.fresh()
            if unrun is not None:
                self._compiled[shape] = unrun
        return plan

    def evaluate(self, shape: Shape, part=None) -> np.ndarray:
        """The rows of ``shape`` over the stream, or over the events where the mask ``part`` is True."""
        stream = self.stream if part is None else self.stream.take(part)
        self.evaluations += 1
        self.events_read += len(stream)
        return rows_of(self._plan(shape).run(stream), len(shape.positives))

    def accepted(self, item: Item, attribute) -> np.ndarray:
        """A mask over the stream: the events ``item`` accepts (types, and values of ``attribute``)."""
        key = (item.types, item.values, item.excluded, attribute)
        found = self._accepted.get(key)
        if found is None:
            found = self.stream.type_in(item.types)
            if attribute is not None and (item.values is not None or item.excluded):
                values, excluded = item.values, item.excluded  # as ``Item.accepts``: a null is None
                ok = np.fromiter(
                    (
                        (values is None or v in values) and v not in excluded
                        for v in self.stream.column(attribute).objects()
                    ),
                    bool,
                    len(self.stream),
                )
                found = found & ok
            self._accepted[key] = found
        return found

    def typed(self, items) -> np.ndarray:
        """A mask over the stream: the events whose type some item accepts (a superset of what they match)."""
        mask = np.zeros(len(self.stream), bool)
        for item in items:
            mask |= self.stream.type_in(item.types)
        return mask

    def index(self, rows: np.ndarray) -> np.ndarray:
        """Indices into the stream of the positions in ``rows`` (the positions themselves when the stream is
        numbered 0..n-1: its positions increase, so they are then the indices)."""
        if self._identity is None:
            positions = self.stream.positions
            self._identity = not len(positions) or (positions[0] == 0 and positions[-1] == len(positions) - 1)
        return rows if self._identity else np.searchsorted(self.stream.positions, rows)

    def covered(self, rows: np.ndarray) -> np.ndarray:
        """A mask over the stream: the events some row holds."""
        mask = np.zeros(len(self.stream), bool)
        mask[self.index(rows.ravel())] = True
        return mask


def rows_of(found, width: int) -> np.ndarray:
    """An engine's matches of a flat SEQ as an (n, width) int64 array of positions (one per positive item),
    in output order."""
    if isinstance(found, MatchArrays):
        if (found.sign < 0).any():
            found = found.take(found.sign > 0)
        offsets = found.offsets
        if len(offsets) > 1 and not (np.diff(offsets) == width).all():
            raise AssertionError("a flat SEQ's matches hold one position per positive item")
        rows = found.positions[offsets[0] : offsets[-1]].reshape(-1, width).copy()
        return rows if found.in_output_order() else in_output_order(rows)
    return in_output_order(np.asarray([m.positions for m in found if m.sign == "+"], np.int64).reshape(-1, width))


def row_keys(*arrays) -> list:
    """One int64 key per row of each (n_i, k) array, equal keys for equal rows across all of them."""
    stacked = np.concatenate(arrays)
    keys = np.zeros(len(stacked), np.int64)
    for c in range(stacked.shape[1]):
        column = stacked[:, c]
        base = int(column.max()) + 1 if len(column) else 1
        if len(keys) and int(keys.max()) >= (2**62) // base:
            keys = pd.factorize(keys)[0].astype(np.int64)
        keys = keys * base + column
    return np.split(keys, np.cumsum([len(a) for a in arrays])[:-1])


def rows_in(rows: np.ndarray, others: np.ndarray) -> np.ndarray:
    """A mask over ``rows``: the rows that are rows of ``others`` too (hashed, not sorted)."""
    mine, theirs = row_keys(rows, others)
    return pd.Series(mine).isin(theirs).to_numpy()


def unique_rows(rows: np.ndarray) -> np.ndarray:
    """``rows`` without repeats (first occurrences, in order)."""
    if len(rows) < 2:
        return rows
    (keys,) = row_keys(rows)
    return rows[~pd.Series(keys).duplicated().to_numpy()]


def projection(general: Shape, specific: Shape, embedding: tuple) -> tuple:
    """For each general positive item, the index in a specific row of the aligned item's position."""
    return tuple(specific.positives.index(embedding[g]) for g in general.positives)


def keeps_negation_scopes(general: Shape, specific: Shape, embedding: tuple) -> bool:
    """True when no added positive item narrows a general negation's scope (module docstring)."""
    mapped = set(embedding)
    gap_of, gap, negation_gaps = {}, 0, set()
    for k, item in enumerate(specific.items):
        if k in mapped and item.positive:
            gap += 1
        gap_of[k] = gap
    last = gap
    for g, s in enumerate(embedding):
        if not general.items[g].positive:
            negation_gaps.add(gap_of[s])
    ends = {0, last}
    for k, item in enumerate(specific.items):
        if k in mapped or not item.positive:
            continue
        if gap_of[k] in negation_gaps or (gap_of[k] in ends and negation_gaps & ends):
            return False
    return True


# ----------------------------------------------------------------------------- strategies
@dataclass(frozen=True)
class Scratch:
    """The query alone, from scratch."""

    shape: Shape
    method = "scratch"
    direction = "scratch"

    evaluations = 1  # engine runs (``UnitCosts.C_eval`` each)

    def cost(self, model: CostModel) -> float:
        return model.scratch_cost(self.shape) + model.fixed(self.evaluations)

    def run(self, executor: Executor, rows=None) -> np.ndarray:
        return executor.evaluate(self.shape)


@dataclass(frozen=True)
class FilterConcept:
    """g→s concept ([LIU] §4.4.2): a general row is a specific row when its events fit the finer items and,
    for a coarser negation, no event of the newly negated types lies in its gap (Eq 4.5)."""

    general: Shape
    specific: Shape
    method = "filter_concept"
    direction = "g→s"

    @property
    def rechecked(self) -> list:
        return [s for g, s in zip(self.general.items, self.specific.items) if not s.positive and not g.same_as(s)]

    @property
    def evaluations(self) -> int:
        return 1 if self.rechecked else 0

    def cost(self, model: CostModel) -> float:
        return model.filter_concept(self.general, self.specific, self.rechecked) + model.fixed(self.evaluations)

    def run(self, executor: Executor, rows) -> np.ndarray:
        attribute = self.specific.attribute
        keep = np.ones(len(rows), bool)
        for c, k in enumerate(self.specific.positives):
            keep &= executor.accepted(self.specific.items[k], attribute)[executor.index(rows[:, c])]
        kept = rows[keep]
        if not len(kept) or not self.rechecked:
            return kept
        negated = [item for item in self.specific.items if not item.positive]
        checked = executor.evaluate(self.specific, executor.covered(kept) | executor.typed(negated))
        return kept[rows_in(kept, checked)]


@dataclass(frozen=True)
class JoinPattern:
    """g→s pattern ([LIU] §4.4.1): the specific query over the general rows' events and the added items'
    events; a match counts when its projection is a general row."""

    general: Shape
    specific: Shape
    embedding: tuple
    method = "join_pattern"
    direction = "g→s"

    @property
    def added(self) -> list:
        return [item for k, item in enumerate(self.specific.items) if k not in self.embedding]

    @property
    def evaluations(self) -> int:
        return 0 if self.extends else 1

    def cost(self, model: CostModel) -> float:
        return model.join_pattern(self.general, self.specific, self.added, self.extends) + model.fixed(self.evaluations)

    def run(self, executor: Executor, rows) -> np.ndarray:
        width = len(self.specific.positives)
        if not len(rows):
            return np.zeros((0, width), np.int64)  # online filtering (Ex 12): no general match, no specific one
        if self.extends:
            return extend_rows(executor, self.general, self.specific, self.embedding, rows)
        negated = [item for item in self.specific.items if not item.positive]
        found = executor.evaluate(self.specific, executor.covered(rows) | executor.typed(self.added + negated))
        index = list(projection(self.general, self.specific, self.embedding))
        return found[rows_in(found[:, index], rows)]

    @property
    def extends(self) -> bool:
        """Whether the general rows can simply be extended (``extend_rows``): one added item, positive, with
        no condition of its own, no PARTITION BY."""
        if len(self.added) != 1 or not self.added[0].positive or self.specific.partition_by:
            return False
        mapping = Refinement("pattern", self.embedding).renaming(self.general, self.specific)
        return condition_texts(self.specific.conditions) == condition_texts(
            rename(c, mapping) for c in self.general.conditions
        )


def extend_rows(executor: Executor, general: Shape, specific: Shape, embedding: tuple, rows: np.ndarray):
    """The specific rows of a one-item extension, built from the general rows with numpy: each general row
    repeated once per event of the added item that lies between its neighbours in the row and, as a new
    first or last item, fits the window (docs/language.md §5: max ts − min ts ≤ n). Exact when
    ``keeps_negation_scopes`` holds: no general negation's scope changes."""
    stream, times = executor.stream, executor.stream.times
    (k,) = [k for k in range(len(specific.items)) if k not in embedding]
    column = specific.positives.index(k)  # the added item's column; general columns keep their order
    n, width = rows.shape
    if column == width:  # the rows in order of their positions (see the end)
        order = output_order(rows, lead=0)
        rows = rows if order is None else rows[order]
    candidates = np.flatnonzero(executor.accepted(specific.items[k], specific.attribute))
    idx = executor.index(rows)
    starts = np.searchsorted(candidates, idx[:, column - 1], "right") if column else np.zeros(n, np.int64)
    stops = (
        np.searchsorted(candidates, idx[:, column], "left") if column < width else np.full(n, len(candidates), np.int64)
    )
    within = specific.within
    if within is not None and len(candidates) and column in (0, width):
        near = times[candidates]  # max ts − min ts ≤ w by ``lang.window``'s rule, as every engine decides
        if column == width:  # a new last item e
            stops = np.minimum(
                stops, _per_event(idx[:, 0], lambda at: past_fitting_all(near, times[at], within.seconds))
            )
        else:  # a new first item e
            starts = np.maximum(
                starts, _per_event(idx[:, -1], lambda at: first_fitting_all(near, times[at], within.seconds))
            )
    counts = np.maximum(stops - starts, 0)
    total = int(counts.sum())
    added = stream.position_of(candidates)
    if column == width:
        # output order (docs/language.md §10.2) is by the new last event, then the general row's positions:
        # a counting sort by the new event, the general rows visited in their order, in one compiled pass
        some = counts > 0
        m = len(candidates) + 1
        covering = np.cumsum(np.bincount(starts[some], minlength=m) - np.bincount(stops[some], minlength=m))
        first = np.concatenate(([0], np.cumsum(covering[:-1])))  # where candidate j's rows begin
        out = np.empty((total, width + 1), np.int64)
        _scatter_extended(rows, starts, stops, added, first, out)
        return out
    general = np.repeat(np.arange(n), counts)  # each specific row's general row
    picked = np.arange(total) - np.repeat(np.cumsum(counts) - counts - starts, counts)  # and candidate
    widened = np.zeros((n, width + 1), np.int64)  # the general rows with room for the new item
    widened[:, [c for c in range(width + 1) if c != column]] = rows
    out = np.take(widened, general, axis=0)  # (a whole-row gather: numpy's fastest)
    out[:, column] = added[picked]
    return in_output_order(out)


def _per_event(events: np.ndarray, bound) -> np.ndarray:
    """``bound(at)`` for each of ``events`` (stream indices), computed once per distinct event: rows share
    their first and last events, and a window's bound is a bisection per value."""
    seen = np.zeros(int(events.max()) + 1 if len(events) else 0, bool)
    seen[events] = True
    at = np.flatnonzero(seen)
    found = np.zeros(len(seen), np.int64)
    found[at] = bound(at)
    return found[events]


@jit
def _scatter_extended(rows, starts, stops, added, first, out):
    """``out``: each general row r, with ``added[j]`` appended, for j in ``starts[r]..stops[r]-1``, grouped by
    j (candidate j's rows from ``first[j]`` on) and in row order within a group: a stable counting sort."""
    width = rows.shape[1]
    fill = first.copy()
    for r in range(rows.shape[0]):
        for j in range(starts[r], stops[r]):
            k = fill[j]
            fill[j] = k + 1
            for c in range(width):
                out[k, c] = rows[r, c]
            out[k, width] = added[j]


@dataclass(frozen=True)
class UnionConcept:
    """s→g concept ([LIU] §4.4.5, Eq 4.8): the child's rows plus the rows of the delta queries, which put in
    at least one differing position the general item's *rest* (its types or values the child lacks).

    The parts are disjoint (at each position the child's item and the complements accept disjoint sets of
    events), so they are concatenated."""

    general: Shape
    specific: Shape
    deltas: tuple
    method = "union_concept"
    direction = "s→g"

    @property
    def evaluations(self) -> int:
        return len(self.deltas)

    def cost(self, model: CostModel) -> float:
        return model.union_concept(self.general, self.specific, list(self.deltas)) + model.fixed(self.evaluations)

    def run(self, executor: Executor, rows) -> np.ndarray:
        return in_output_order(np.concatenate([rows] + [executor.evaluate(delta) for delta in self.deltas]))


@dataclass(frozen=True)
class ProjectPattern:
    """s→g pattern ([LIU] §4.4.4): the specific rows projected onto the general items (once each), plus the
    general matches the added item missed: ``delta``, the general query with that item negated (disjoint
    from the projection: those have an event of the added item in the gap)."""

    general: Shape
    specific: Shape
    embedding: tuple
    delta: Shape
    method = "project_pattern"
    direction = "s→g"

    evaluations = 1

    def cost(self, model: CostModel) -> float:
        return model.project_pattern(self.general, self.specific, self.delta) + model.fixed(self.evaluations)

    def run(self, executor: Executor, rows) -> np.ndarray:
        index = list(projection(self.general, self.specific, self.embedding))
        return in_output_order(np.concatenate([unique_rows(rows[:, index]), executor.evaluate(self.delta)]))


@dataclass(frozen=True)
class Via:
    """Both kinds ([LIU] §4.4, Eqs 4.6 and 4.9): two steps through an ``intermediate`` query."""

    first: object
    second: object
    intermediate: Shape
    direction: str
    method = "via"

    @property
    def evaluations(self) -> int:
        return self.first.evaluations + self.second.evaluations

    def cost(self, model: CostModel) -> float:
        return self.first.cost(model) + self.second.cost(model)

    def run(self, executor: Executor, rows) -> np.ndarray:
        return self.second.run(executor, self.first.run(executor, rows))


# ----------------------------------------------------------------------------- offers
@lru_cache(maxsize=4096)
def offer_general_to_specific(general: Shape, specific: Shape, ref: Refinement):
    """The g→s strategy for a lattice edge, or None when none is exact here (made once per process and edge:
    every fresh cube over the same queries plans with them)."""
    events_window = specific.within is not None and specific.within.events
    if ref.kind == "concept":
        step = FilterConcept(general, specific)
        return None if step.rechecked and events_window else step
    if events_window or not keeps_negation_scopes(general, specific, ref.embedding):
        return None
    if ref.kind == "pattern":
        return JoinPattern(general, specific, ref.embedding)
    middle = intermediate(general, specific, ref)
    first = offer_general_to_specific(general, middle, Refinement("concept", tuple(range(len(general.items)))))
    return None if first is None else Via(first, JoinPattern(middle, specific, ref.embedding), middle, "g→s")


@lru_cache(maxsize=4096)
def offer_specific_to_general(general: Shape, specific: Shape, ref: Refinement):
    """The s→g strategy for a lattice edge, or None when none is exact here (made once per process and edge)."""
    if ref.kind == "concept":
        deltas = concept_deltas(general, specific)
        return None if deltas is None else UnionConcept(general, specific, deltas)
    if not keeps_negation_scopes(general, specific, ref.embedding):
        return None
    if ref.kind == "pattern":
        delta = pattern_delta(general, specific, ref)
        return None if delta is None else ProjectPattern(general, specific, ref.embedding, delta)
    middle = intermediate(general, specific, ref)
    up = offer_specific_to_general(middle, specific, Refinement("pattern", ref.embedding))
    across = offer_specific_to_general(general, middle, Refinement("concept", tuple(range(len(general.items)))))
    return None if up is None or across is None else Via(up, across, middle, "s→g")


def intermediate(general: Shape, specific: Shape, ref: Refinement) -> Shape:
    """The query between the two of a "both" edge: the specific items the general ones align with,
    under the general conditions (renamed): a concept refinement of ``general``, a pattern
    generalisation of ``specific``."""
    mapping = ref.renaming(general, specific)
    return specific.with_items(
        [specific.items[s] for s in ref.embedding], [rename(c, mapping) for c in general.conditions]
    )


def complements(general: Item, specific: Item) -> list:
    """Items that together accept exactly what ``general`` accepts and ``specific`` does not."""
    out = []
    if general.types - specific.types:
        out.append(replace(general, types=general.types - specific.types, label=f"{general.label}∖{specific.label}"))
    if specific.values is not None and general.values != specific.values:
        label = f"{specific.label}∖values"
        if general.values is None:
            out.append(replace(general, types=specific.types, excluded=general.excluded | specific.values, label=label))
        else:
            out.append(replace(general, types=specific.types, values=general.values - specific.values, label=label))
    return out


def concept_deltas(general: Shape, specific: Shape) -> Optional[tuple]:
    """The delta queries of s→g concept reuse: every combination, over the differing positive
    positions, of "the child's item" or one of the complements, except the child itself (Ex 16's
    D→OK, TX→OK and TX→T when the child is D→T). None when negations differ or there are too many."""
    choices, differing = [], False
    for g, s in zip(general.items, specific.items):
        if g.same_as(s):
            choices.append([g])
        elif not g.positive:
            return None
        else:
            differing = True
            choices.append([replace(s, var=g.var)] + complements(g, s))  # the general query's names
    combos = [c for c in itertools.product(*choices) if any(not i.same_as(s) for i, s in zip(c, specific.items))]
    if not differing or len(combos) > MAX_DELTAS:
        return None
    return tuple(general.with_items(c) for c in combos)


def pattern_delta(general: Shape, specific: Shape, ref: Refinement) -> Optional[Shape]:
    """The delta of s→g pattern reuse: the general query with the one added positive item negated,
    its conditions carried along (they now belong to the negation). None for other differences."""
    added = ref.added(specific)
    if len(added) != 1 or not specific.items[added[0]].positive:
        return None
    k = added[0]
    item = specific.items[k]
    inverse = {s: g for g, s in ref.renaming(general, specific).items() if s is not None}
    if item.var is not None and item.var in {i.var for i in general.items}:
        inverse[item.var] = _fresh(item.var, {i.var for i in general.items})
    before = sum(1 for s in ref.embedding if s < k)
    negated = replace(item, positive=False, var=inverse.get(item.var, item.var))
    own = condition_texts(rename(c, ref.renaming(general, specific)) for c in general.conditions)
    carried = [
        rename(c, inverse) for c in specific.conditions if condition_texts([c]) - own and item.var in variables_in(c)
    ]
    delta = general.with_items(
        general.items[:before] + (negated,) + general.items[before:], general.conditions + tuple(carried)
    )
    try:
        delta.query  # rule 7: a conjunct over two negations cannot be carried
    except QueryError:
        return None
    return delta


def _fresh(name: str, taken: set) -> str:
    return next(f"{name}_{i}" for i in itertools.count(1) if f"{name}_{i}" not in taken)
