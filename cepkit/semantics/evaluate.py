"""The reference evaluator: the executable meaning of the cepkit language (docs/language.md), by brute force.

It is the oracle every engine is tested against, written to be read: for tests and teaching on streams
of a few dozen events, never for speed. ``evaluate(query, events)`` runs this pipeline:

1. the stream in logical order (ts, then position; docs/language.md §10.1), punctuation events left out, split by
   PARTITION BY (a null key is a key like any other; docs/language.md §10.5);
2. per sub-stream, phase 1 (``derivations``) enumerates every derivation of the pattern's positive
   structure that fits the window; phase 2 (``validity``) checks what needs the full environment:
   correlated filters, negations and EXISTS, nested strategies. Conditions were first put where they are
   evaluated by ``cepkit.lang.scope``;
3. the top-level selection strategy among those matches (``strategies``, ``stnm``; docs/language.md §5, §10.3);
4. CONSUME BY ANY / PARTITION: matches are processed in output order, and a match is dropped when it uses
   a position at or before the last position of an earlier reported match of the same scope (the whole
   stream, or its partition); matches completing at the same position do not affect each other;
5. projection (RETURN / SELECT vars): bindings restricted to those variables, C to their positions;
   a match binding none of them is dropped; duplicates merge (docs/language.md §10.2).

Positions in the result are arrival positions. On a disordered stream the evaluator still works in
logical order, so it gives the ground truth out-of-order engines converge to (docs/language.md §6).

Incremental use (``complete=False``): over a stream prefix, only the matches that no later event can
change are returned. A match waiting for a trailing negation or EXISTS scope becomes final once an event
beyond its scope has arrived (an event with a later time than first + w, or the event at index
first + n for ``n EVENTS``), or when the stream is closed; without WITHIN, only at close. Selection
strategies and CONSUME BY wait for the matches they compare with. ``ReferencePlan.matcher()``
re-evaluates the prefix on every push and reports the matches that became final.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional
from ..errors import QueryError
from ..lang import ast as A
from ..lang.hierarchy import expand_attribute_concepts
from ..lang.query import Query, parse
from ..runtime.stream import Stream
from ..runtime.match_record import Match, output_order
from .derivations import PUNCTUATION, SEARCH_BUDGET, BudgetExhausted, Derivation, Deriver
from .stnm import STNM_STRATEGIES, check_stnm_shape, stnm_select
from .strategies import RANKED, beats, is_interval
from .substream import Substream
from .truth import Truth, all3, any3, not3
from .validity import Checker


class SearchSpent(QueryError):
    """The reference evaluator's search budget is spent (a ``QueryError`` at the pattern part it was spent
    on); ``budget`` the steps it had. ``cepkit.explain`` catches it and says what it judged without it."""

    budget: int = SEARCH_BUDGET


@dataclass
class _Found:
    """A match of one sub-stream, its truth so far, and where it lives."""

    derivation: Derivation
    truth: Truth
    partition: tuple
    events: list  # the sub-stream's events, indexed by the derivation's logical indices
    ranks: list  # logical index in the sub-stream -> logical index in the whole stream

    @property
    def span(self) -> tuple:
        """(first, last) as logical indices of the whole stream."""
        return self.ranks[self.derivation.first], self.ranks[self.derivation.last]


class Evaluation:
    """A query prepared for the reference evaluator: its scoped pattern, checked for what the semantics
    needs (STNM patterns are sequences of sets; cepkit.parse checked that every SEQ/AND has a positive item)."""

    def __init__(self, query: Query, budget: Optional[int] = SEARCH_BUDGET):
        self.query = query
        self.budget = budget  # positions in derivations per partition (docs/limits.md); None: no limit
        # An attribute hierarchy's concepts in conditions mean "the value or any value below it" (docs/language.md §7).
        self.pattern = expand_attribute_concepts(query.scoped, query.hierarchy)
        for strategy, node in self._strategies():
            if strategy in STNM_STRATEGIES:
                check_stnm_shape(node, query)

    def _strategies(self):
        yield self.query.strategy, self.pattern
        for node in self.pattern.walk():
            if isinstance(node, A.Strategy):
                yield node.name, node.pattern

    def run(self, stream, complete: bool = True) -> list:
        """The matches over ``stream`` (final ones only when ``complete`` is False), in output order."""
        stream = Stream.from_any(stream)
        ordered = [stream[i] for i in stream.logical_order()]
        clock = max((e.time for e in ordered), default=-math.inf)
        found = []
        for key, members in self._partitions(ordered).items():
            events = [ordered[r] for r in members]
            found += self._evaluate_partition(key, events, members, clock, complete)
        found = self._project(f for f in self._consume(found) if f.truth is True)
        limit = self.query.ast.limit
        return found if limit is None else found[:limit]  # LIMIT n: the first n in output order

    def _partitions(self, ordered: list) -> dict:
        """partition key -> logical indices (in the whole stream) of its events; punctuations left out."""
        parts: dict = {}
        for rank, event in enumerate(ordered):
            if event.type != PUNCTUATION:
                key = tuple(event.get(k) for k in self.query.partition_by)
                parts.setdefault(key, []).append(rank)
        return parts

    def _evaluate_partition(self, key, events, ranks, clock, complete) -> list:
        sub = Substream(events, self.query.within, clock, complete)
        deriver = Deriver(sub, self.query.hierarchy, self.budget)
        try:
            selected = self._select(self.valid_matches(sub, deriver), sub, deriver)
        except BudgetExhausted as err:
            spent = SearchSpent.at(
                err.node,
                f"the reference evaluator's search budget is spent: this pattern takes more "
                f"than {err.budget:,} steps over this stream (events held in partial matches, "
                "and checks of them: the reference enumerates them all); run it on another "
                "engine (automaton), on fewer events, or raise budget= (docs/limits.md)",
                self.query.text,
            )
            spent.budget = err.budget
            raise spent from None
        return [_Found(d, t, key, events, ranks) for d, t in selected if t is not False]

    def valid_matches(self, sub: Substream, deriver: Deriver) -> list:
        """(derivation, truth) for each (C, β) of the pattern over one sub-stream: windowed and checked, before
        the top-level strategy."""
        checker = Checker(sub, deriver)
        by_key: dict = {}
        for d in deriver.derive(self.pattern):
            by_key.setdefault(d.key, []).append(d)
        matches = []
        for same in by_key.values():  # one (C, β) may have several derivations: it holds if one does
            truths = [checker.valid(d) for d in same]
            best = next((d for d, t in zip(same, truths) if t is True), same[0])
            matches.append((best, any3(truths)))
        return matches

    def _select(self, matches: list, sub, deriver) -> list:
        """The top-level strategy among the valid (windowed, filtered) matches (docs/language.md §10.3)."""
        strategy = self.query.strategy
        if strategy == "ALL":
            return matches
        if strategy in ("STRICT", "PARTITION_STRICT"):
            return [(d, t) for d, t in matches if is_interval(d.positions)]
        if strategy in RANKED:
            by_last: dict = {}
            for d, t in matches:
                by_last.setdefault(d.last, []).append((d, t))
            return [
                (d, all3([t, *(not3(rt) for r, rt in by_last[d.last] if beats(strategy, r.positions, d.positions))]))
                for d, t in matches
            ]
        return stnm_select(strategy, matches, sub, deriver.type_matches)

    def _consume(self, found: list) -> list:
        policy = self.query.consume
        if policy in (None, "NONE"):
            return found
        found = sorted(found, key=lambda f: (f.span[1], sorted(f.ranks[i] for i in f.derivation.positions)))
        for k, f in enumerate(found):
            first, last = f.span
            earlier = [
                e for e in found[:k] if first <= e.span[1] < last and (policy == "ANY" or e.partition == f.partition)
            ]
            f.truth = all3([f.truth, *(not3(e.truth) for e in earlier)])
        return found

    def _project(self, found) -> list:
        """Matches with stream positions. A Kleene variable is a tuple in every match, also where an OR
        branch binds its name to one event (``A+ a OR B a``): one (C, β) per match, one shape per column."""
        select, kleene = self.query.select, self.query.kleene_variables
        out = {}
        for f in found:
            d, events = f.derivation, f.events
            bindings = {
                var: (
                    tuple(events[i].position for i in value)
                    if isinstance(value, tuple)
                    else (events[value].position,)
                    if var in kleene
                    else events[value].position
                )
                for var, value in d.bindings.items()
                if select is None or var in select
            }
            if select is None:
                positions = {events[i].position for i in d.positions}
            else:
                positions = {
                    p for value in bindings.values() for p in (value if isinstance(value, tuple) else (value,))
                }
            if positions:
                match = Match(tuple(sorted(positions)), bindings)
                out.setdefault(match.key, match)
        return output_order(out.values())


def evaluate(query, events, complete: bool = True, hierarchy=None) -> list:
    """The matches of ``query`` over ``events`` by the reference semantics (a list of ``Match``).

    ``complete=False`` treats ``events`` as a prefix of a longer stream and returns only final matches.

    >>> from cepkit.datasets import cel_fire_sensors
    >>> [m.positions for m in evaluate("(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 "
    ...                                "and y.id = 0)", cel_fire_sensors())]
    [(1, 2), (1, 8), (5, 8)]
    """
    return Evaluation(parse(query, hierarchy)).run(events, complete)
