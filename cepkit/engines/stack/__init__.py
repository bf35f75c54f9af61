"""The ``stack`` engine: SASE active-instance stacks for flat SEQ queries with negation, EXISTS, joins
and windows, in order or out of order ([LIU] ch. 2, ch. 3, [LIU] ch. 2-3).

``run`` on an in-order stream is the columnar run (``batch``: the stacks as sorted arrays, construction
as vectorized range joins); ``matcher()`` and the out-of-order modes push events one by one through the
stacks (``core``, ``modes``). Both give the same matches (docs/stack-engine.md).

>>> import cepkit
>>> events = [{"type": "A", "ts": 1}, {"type": "C", "ts": 2}, {"type": "A", "ts": 3}, {"type": "B", "ts": 4}]
>>> cepkit.match("SEQ(A a, !C c, B b) WITHIN 5", events, engine="stack").positions()
[(2, 3)]

Out of order (``disorder=``): ``kslack`` with ``k``, ``conservative`` with ``max_delay`` and/or
PUNCTUATION events, ``aggressive`` (optionally ``max_delay`` to bound its state). ``max_delay`` is one
bound for every type, or (an extension of docs/language.md §6) a mapping from event type to its own bound,
each a number, a timedelta or text such as ``"2 min"``: ``max_delay={"A": 5, "B": "2 min"}`` promises no
A arrives after an event whose ts exceeds its own by more than 5, no B by more than 120. A type missing
from the mapping has no max-delay guarantee (only punctuations complete it) unless the key ``"*"`` bounds
every type not named; a key may be a concept (it bounds every type below it), and a concept is complete
once every type below it is. An event breaking its bound is dropped and listed in ``info["dropped"]``
(as K-slack and the out-of-order layer drop what they cannot place). A tight bound on a negated type
releases matches early:

>>> slow_b = [{"type": "A", "ts": 1}, {"type": "B", "ts": 4}, {"type": "A", "ts": 6}, {"type": "A", "ts": 15}]
>>> query = "SEQ(A a, !C c, B b) WITHIN 5"
>>> [d.emitted_at for d in cepkit.match(query, slow_b, engine="stack", disorder="conservative",
...                                     max_delay={"C": 1, "B": 10}).deltas]
[2]
>>> [d.emitted_at for d in cepkit.match(query, slow_b, engine="stack", disorder="conservative",
...                                     max_delay=10).deltas]
[3]

In aggressive mode ``Matches.deltas`` lists every emission, retractions (``sign="-"``) included:

>>> late = [{"type": "A", "ts": 1}, {"type": "B", "ts": 4}, {"type": "C", "ts": 2}]
>>> m = cepkit.match("SEQ(A a, !C c, B b) WITHIN 5", late, engine="stack", disorder="aggressive")
>>> [(d.sign, d.positions, d.emitted_at) for d in m.deltas], m.positions()
([('+', (0, 1), 1), ('-', (0, 1), 2)], [])
"""

from __future__ import annotations

import numpy as np

from ...runtime.stream import Stream
from ...runtime.match_arrays import AT_LAST, MatchArrays
from ...runtime.registry import Engine, Plan, register
from .batch import ColumnarRun
from .modes import AggressiveMatcher, ConservativeMatcher, InOrderMatcher, KSlackMatcher
from ...runtime.delays import type_hierarchy
from ...runtime.disorder import (
    ReleasedRun,
    broken_promises,
    delay_options,
    numbered_in_arrival_order,
    release_schedule,
    released_run,
    replay,
    to_arrival,
)
from ...runtime.event_record import PUNCTUATION
from .program import compile_program

__all__ = ["StackEngine", "StackPlan"]

OWN_MODES = ("kslack", "conservative", "aggressive")  # the modes ``modes`` runs (the layer runs the rest)


class StackPlan(Plan):
    """A compiled flat SEQ with its out-of-order mode. Pickles (its compiled closures are rebuilt)."""

    def __init__(self, engine: "StackEngine", query, disorder: str = "reject", k=None, max_delay=None):
        self.query = query
        self.disorder = disorder
        self.k = k
        self.max_delay = max_delay
        self.program = compile_program(query, lambda node, what: engine.unsupported(query, node, what))
        self._last = None

    def __getstate__(self):
        return {"query": self.query, "disorder": self.disorder, "k": self.k, "max_delay": self.max_delay}

    def __setstate__(self, state):
        self.__init__(StackEngine(), **state)

    def matcher(self):
        if self.disorder == "kslack":
            return KSlackMatcher(self.program, self.k)
        if self.disorder == "conservative":
            return ConservativeMatcher(self.program, self.max_delay, type_hierarchy(self.query))
        if self.disorder == "aggressive":
            return AggressiveMatcher(self.program, self.max_delay, type_hierarchy(self.query))
        return InOrderMatcher(self.program)

    def run(self, stream) -> list:
        """The net matches over a finite stream (``deltas()`` then lists every emission, in order).

        In order (``disorder="reject"``) the whole stream is known: the columnar run (``batch``) gives the
        matches, and the ``emitted_at`` the incremental matcher would have given them, at a fraction of
        its cost. The out-of-order modes replay the arrivals through their matcher."""
        if self.disorder == "reject":
            run = ColumnarRun(self.program, stream if isinstance(stream, Stream) else Stream(list(stream)))
            found = run.matches()
            self._last = run
            return found
        if isinstance(stream, Stream) and numbered_in_arrival_order(stream):
            released = self._kslack_columns(stream) if self.disorder == "kslack" else self._insertion_columns(stream)
            if released is not None:
                self._last = released
                return released.matches
        self._last = replay(self.matcher(), stream)
        return self._last.net()

    def _kslack_columns(self, stream):
        """K-slack over a whole arrival sequence as columns (``runtime.disorder.released_run``): the release
        order from the running max of ts, the columnar run over the released events (its ``emitted_at``, a
        trailing scope's wait included, in release ranks), each match emitted after the arrival that
        released its emission's event; at close after the last event that is not a punctuation (the
        matcher's ``last_position``). ``info()``: ``peak_state`` is the buffer's peak plus the columnar
        run's instances (the pushed matcher samples its stacks and buffer together)."""
        schedule = release_schedule(stream, "kslack", self.k)
        events = np.flatnonzero(~stream.type_in({PUNCTUATION}))
        close_at = int(stream.position_of(events[-1])) if len(events) else None
        runs: list = []

        def run(ranked):
            runs.append(ColumnarRun(self.program, ranked))
            return runs[0].matches()

        released = released_run(stream, schedule, run, close_at=close_at)
        if released is not None and runs:
            released.peak_state += runs[0].info()["peak_state"]
            released.facts = {"run": "columnar"}
        return released

    def _insertion_columns(self, stream):
        """Conservative or aggressive over a whole arrival sequence as columns, for a query without negation,
        EXISTS or RETURN (None for the others: their matchers run event by event). Late insertion then
        builds each match when its last event to arrive comes, and nothing holds or retracts it: the
        result is the in-order one over the events kept, each match emitted at the arrival of its largest
        position. An event is dropped as the matchers drop it: below the largest ts so far minus its
        type's ``max_delay``, or (conservative) at or below a punctuation of its type that came first."""
        program = self.program
        if program.negations or program.select is not None:
            return None
        dropped = broken_promises(stream, self.query, self.max_delay, punctuations=self.disorder == "conservative")
        kept = np.flatnonzero(~stream.type_in({PUNCTUATION}) & ~dropped)
        released = kept[np.argsort(stream.times[kept], kind="stable")]
        run = ColumnarRun(self.program, stream.take(released).numbered(np.arange(len(released))))
        found = run.matches()
        ranked = found if isinstance(found, MatchArrays) else MatchArrays.from_matches(list(found))
        matches = to_arrival(ranked, stream.position_of(released), AT_LAST)
        order = np.argsort(matches.emitted_at, kind="stable")
        out = ReleasedRun(matches, order, stream.position_of(np.flatnonzero(dropped)), run.info()["peak_state"])
        out.facts = {"run": "columnar"}
        return out

    def deltas(self) -> list:
        """Every emission of the last ``run``, in order: ``Match`` with ``sign`` "+" or "-" and
        ``emitted_at`` (the arrival position after which it was emitted)."""
        if isinstance(self._last, ColumnarRun):
            found = self._last.found
            return list(found.by_emission()) if isinstance(found, MatchArrays) else found
        return list(self._last.emissions) if self._last is not None else []

    def info(self) -> dict:
        facts = {
            "disorder": self.disorder,
            "slots": self.program.n,
            "negations": len(self.program.negations),
            "equality_partitioned": self.program.hashed,
        }
        if self._last is not None:
            facts.update(self._last.info())
        return facts


class StackEngine(Engine):
    name = "stack"
    rank = 20
    description = (
        "SASE active-instance stacks with pointers: flat SEQ with negation and EXISTS (leading, "
        "middle, trailing), join predicates, windows; K-slack, conservative and aggressive out-of-order modes"
    )
    features = frozenset(
        {
            "sequence",
            "negation",
            "exists",
            "unary_conditions",
            "binary_conditions",
            "correlated_filters",
            "condition_items",
            "time_window",
            "event_window",
            "partition",
            "any_type",
            "hierarchy",
            "strategy:STRICT",
            "strategy:PARTITION_STRICT",
            "strategy:STNM",
            "projection",
        }
    )
    disorder = frozenset({"reject", "kslack", "conservative", "aggressive"})
    options = frozenset({"k", "max_delay"})

    def runs_disorder(self, query, mode: str) -> bool:
        """Its own modes where they fit the query (``_out_of_order_gap``); the others, and every query they
        refuse, run its in-order matcher behind ``cepkit.runtime.disorder`` (docs/decisions.md)."""
        return mode == "reject" or (mode in OWN_MODES and _out_of_order_gap(query, mode) is None)

    def compile(self, query, disorder: str = "reject", k=None, max_delay=None) -> StackPlan:
        if disorder != "reject":
            gap = _out_of_order_gap(query, disorder)
            if gap is not None:
                raise self.unsupported(query, *gap)
        k, max_delay = delay_options(disorder, k, max_delay)
        return StackPlan(self, query, disorder, k, max_delay)


def _out_of_order_gap(query, disorder: str):
    """``(node, what)`` the stack's own out-of-order modes refuse, else None. The order is (ts, arrival
    position): EVENTS windows, STRICT and STNM speak of positions between events, which arrivals do not
    give; a late EXISTS witness would insert matches the conservative scopes never waited for."""
    if query.within is not None and query.within.events:
        return query.within, f"WITHIN n EVENTS with disorder={disorder!r}"
    if query.strategy != "ALL":
        return query.ast, f"the {query.strategy} strategy with disorder={disorder!r}"
    exists = query.features.get("exists")
    if exists is not None and disorder in ("conservative", "aggressive"):
        return exists, f"EXISTS with disorder={disorder!r}"
    return None


register(StackEngine())
