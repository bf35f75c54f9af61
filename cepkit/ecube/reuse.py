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
from typing import Optional

from ..errors import QueryError
from ..lang.ast import variables_in
from ..runtime.stream import Stream
from ..runtime.registry import get_engine
from .cost import CostModel
from .lattice import Refinement
from .shape import Item, Shape, condition_texts, rename

MAX_DELTAS = 8   # UnionConcept: at most this many delta queries (3^|differing positions| − 1 at worst)


class Executor:
    """Runs shapes with an engine (``stack`` by default) over one stream, or over a part of it."""

    def __init__(self, stream: Stream, engine: str = "stack"):
        self.stream = stream
        self.engine = get_engine(engine)
        self._plans: dict = {}
        self._by_type: dict = {}
        for event in stream:
            self._by_type.setdefault(event.type, []).append(event.position)
        self.evaluations = 0     # engine runs
        self.events_read = 0     # events fed to the engine, over all runs

    def evaluate(self, shape: Shape, positions=None) -> set:
        """The rows of ``shape`` over the stream, or over the events at ``positions`` only."""
        plan = self._plans.get(shape)
        if plan is None:
            plan = self._plans[shape] = self.engine.compile(shape.query)
        if positions is None:
            part = self.stream
        else:
            part = Stream([self.stream[p] for p in sorted(positions)], self.stream.ts_is_datetime)
        self.evaluations += 1
        self.events_read += len(part)
        return {m.positions for m in plan.run(part)}

    def positions_of(self, items) -> set:
        """Positions of the events whose type some item accepts (a superset of what they match)."""
        return {p for item in items for t in item.types for p in self._by_type.get(t, ())}


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

    def cost(self, model: CostModel) -> float:
        return model.scratch_cost(self.shape)

    def run(self, executor: Executor, rows=None) -> set:
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

    def cost(self, model: CostModel) -> float:
        return model.filter_concept(self.general, self.specific, self.rechecked)

    def run(self, executor: Executor, rows) -> set:
        stream, attribute = executor.stream, self.specific.attribute
        items = [self.specific.items[k] for k in self.specific.positives]
        kept = {r for r in rows if all(item.accepts(stream[p], attribute) for item, p in zip(items, r))}
        if not kept or not self.rechecked:
            return kept
        negated = [item for item in self.specific.items if not item.positive]
        positions = {p for r in kept for p in r} | executor.positions_of(negated)
        return kept & executor.evaluate(self.specific, positions)


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

    def cost(self, model: CostModel) -> float:
        return model.join_pattern(self.general, self.specific, self.added)

    def run(self, executor: Executor, rows) -> set:
        if not rows:
            return set()    # online filtering (Ex 12): no general match, no specific one
        negated = [item for item in self.specific.items if not item.positive]
        positions = {p for r in rows for p in r} | executor.positions_of(self.added + negated)
        index = projection(self.general, self.specific, self.embedding)
        rows = set(rows)
        return {r for r in executor.evaluate(self.specific, positions) if tuple(r[i] for i in index) in rows}


@dataclass(frozen=True)
class UnionConcept:
    """s→g concept ([LIU] §4.4.5, Eq 4.8): the child's rows plus the rows of the delta queries, which put in
    at least one differing position the general item's *rest* (its types or values the child lacks)."""
    general: Shape
    specific: Shape
    deltas: tuple
    method = "union_concept"
    direction = "s→g"

    def cost(self, model: CostModel) -> float:
        return model.union_concept(self.general, self.specific, list(self.deltas))

    def run(self, executor: Executor, rows) -> set:
        found = set(rows)
        for delta in self.deltas:
            found |= executor.evaluate(delta)
        return found


@dataclass(frozen=True)
class ProjectPattern:
    """s→g pattern ([LIU] §4.4.4): the specific rows projected onto the general items, plus the general
    matches the added item missed: ``delta``, the general query with that item negated."""
    general: Shape
    specific: Shape
    embedding: tuple
    delta: Shape
    method = "project_pattern"
    direction = "s→g"

    def cost(self, model: CostModel) -> float:
        return model.project_pattern(self.general, self.specific, self.delta)

    def run(self, executor: Executor, rows) -> set:
        index = projection(self.general, self.specific, self.embedding)
        return {tuple(r[i] for i in index) for r in rows} | executor.evaluate(self.delta)


@dataclass(frozen=True)
class Via:
    """Both kinds ([LIU] §4.4, Eqs 4.6 and 4.9): two steps through an ``intermediate`` query."""
    first: object
    second: object
    intermediate: Shape
    direction: str
    method = "via"

    def cost(self, model: CostModel) -> float:
        return self.first.cost(model) + self.second.cost(model)

    def run(self, executor: Executor, rows) -> set:
        return self.second.run(executor, self.first.run(executor, rows))


# ----------------------------------------------------------------------------- offers
def offer_general_to_specific(general: Shape, specific: Shape, ref: Refinement):
    """The g→s strategy for a lattice edge, or None when none is exact here."""
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


def offer_specific_to_general(general: Shape, specific: Shape, ref: Refinement):
    """The s→g strategy for a lattice edge, or None when none is exact here."""
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
    return specific.with_items([specific.items[s] for s in ref.embedding],
                               [rename(c, mapping) for c in general.conditions])


def complements(general: Item, specific: Item) -> list:
    """Items that together accept exactly what ``general`` accepts and ``specific`` does not."""
    out = []
    if general.types - specific.types:
        out.append(replace(general, types=general.types - specific.types, label=f"{general.label}∖{specific.label}"))
    if specific.values is not None and general.values != specific.values:
        label = f"{specific.label}∖values"
        if general.values is None:
            out.append(replace(general, types=specific.types, excluded=general.excluded | specific.values,
                               label=label))
        else:
            out.append(replace(general, types=specific.types, values=general.values - specific.values,
                               label=label))
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
            choices.append([replace(s, var=g.var)] + complements(g, s))   # the general query's names
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
    carried = [rename(c, inverse) for c in specific.conditions
               if condition_texts([c]) - own and item.var in variables_in(c)]
    delta = general.with_items(general.items[:before] + (negated,) + general.items[before:],
                               general.conditions + tuple(carried))
    try:
        delta.query          # rule 7: a conjunct over two negations cannot be carried
    except QueryError:
        return None
    return delta


def _fresh(name: str, taken: set) -> str:
    return next(f"{name}_{i}" for i in itertools.count(1) if f"{name}_{i}" not in taken)
