"""Phase 1 of the reference evaluator: every derivation of a pattern's positive structure, bottom up.

A *derivation* records how a pattern matches: its set of positions C (CEL's complex event), its
bindings β, and one sub-derivation per generating item (which item got which sub-match). Phase 1
enumerates them by brute force, following docs/language.md §2:

- ``T x``: one per event of type T (or below concept T; ``ANY``: every event);
- ``p ; q`` / ``SEQ``: every ordered combination, every position of one part before the next, gaps
  allowed; negated and existential items are left to phase 2;
- ``AND`` / ``{...}``: every combination using distinct events, any interleaving;
- ``OR``: the union of the branches;
- ``p+``: every chain of iterations C1 … Ck, each wholly before the next. A variable of p is rebound in
  each iteration; outside it, it is the tuple of its positions across iterations, flattened;
- ``p FILTER c``: when c mentions only variables bound in p it is applied here; otherwise (CEL φ4,
  correlation with enclosing variables) phase 2 evaluates it, once the enclosing bindings are known.

In a positive context, a derivation whose span already exceeds the window is dropped: every match
containing it would too. Derivations of negated items are not windowed: they only have to lie inside
their scope (docs/language.md §10.11).

Brute force grows exponentially with nested iteration (``((ANY+ a)+)+`` has (4^n − 1)/3 derivations over n
events), so a ``Deriver`` spends at most ``budget`` steps (``SEARCH_BUDGET`` by default, docs/limits.md): a
position held or copied by a derivation is one, and so is each check and comparison of phase 2
(``validity``: a nested strategy compares each match with its rivals, quadratic in them); then it raises
``BudgetExhausted``. The walks are loops, not recursion, so long chains and long iterations never reach
Python's recursion limit.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Mapping, Optional

from ..lang import ast as A
from ..lang.checks import bound
from .conditions import holds
from .substream import Substream

PUNCTUATION = "PUNCTUATION"
SEARCH_BUDGET = 250_000
"""Steps the reference evaluator may take per partition before it gives up (option ``budget``): a derivation of
k events costs k, a check of phase 2 one. About 0.5 s of work; the largest worked example ([RCEP]'s water
stream) takes 132,000."""


class BudgetExhausted(Exception):
    """The budget is spent, on derivations of ``node``; ``Evaluation`` turns it into a QueryError."""

    def __init__(self, node: A.Pattern, budget: int):
        super().__init__(node, budget)
        self.node = node
        self.budget = budget


@dataclass(frozen=True, eq=False)
class Derivation:
    """How ``node`` matches: positions C (logical indices), bindings β (var -> index or tuple), and the
    sub-derivations (Seq/And: one per generating item, in item order; Or/Filter/Strategy: one; Plus:
    one per iteration; Atom: none)."""

    node: A.Pattern
    positions: frozenset
    bindings: Mapping
    parts: tuple = ()
    first: int = field(init=False)  # min C
    last: int = field(init=False)  # max C

    def __post_init__(self):
        object.__setattr__(self, "first", min(self.positions))
        object.__setattr__(self, "last", max(self.positions))

    @property
    def key(self) -> tuple:
        """The match it stands for: (C, β)."""
        return self.positions, tuple(sorted(self.bindings.items()))


def generating(items) -> list:
    """The items of a SEQ/AND that contribute events (not negations, EXISTS or conditions)."""
    return [item for item in items if isinstance(item, A.Pattern)]


class Deriver(A.Visitor):
    """Phase 1 over one sub-stream; results are memoized per (node, index range, windowed)."""

    def __init__(self, stream: Substream, hierarchy=None, budget: Optional[int] = SEARCH_BUDGET):
        self.stream = stream
        self.hierarchy = hierarchy
        self.budget = budget  # None: no limit
        self.spent = 0  # steps so far: positions held or copied by derivations, and phase 2's checks
        self._memo: dict = {}
        self._closed: dict = {}

    def derive(self, node: A.Pattern, lo: int = 0, hi: Optional[int] = None, windowed: bool = True) -> list:
        """The derivations of ``node`` using only logical indices lo <= i < hi."""
        hi = len(self.stream) if hi is None else hi
        key = (id(node), lo, hi, windowed)
        if key not in self._memo:
            self._memo[key] = (node, self.visit(node, lo, hi, windowed))  # keep node alive: ids stay unique
        return self._memo[key][1]

    def _collect(self, node: A.Pattern, out: list, derivation: "Derivation") -> None:
        """Append a derivation of a SEQ, AND or ``+`` (the nodes whose derivations grow combinatorially) and
        charge the budget its size: time and memory grow with the positions held, not the derivations."""
        out.append(derivation)
        self.charge(node, len(derivation.positions))

    def charge(self, node: A.Pattern, cost: int) -> None:
        """Spend ``cost`` steps on ``node``; past the budget, stop (``BudgetExhausted``)."""
        self.spent += cost
        if self.budget is not None and self.spent > self.budget:
            raise BudgetExhausted(node, self.budget)

    def _fits(self, first: int, last: int, windowed: bool) -> bool:
        return not windowed or self.stream.fits(first, last)

    # ------------------------------------------------------------------ atoms
    def type_matches(self, pattern_type: Optional[str], event_type: str) -> bool:
        """A pattern type matches its own name and every type below it in the hierarchy; ANY matches every
        event (punctuations are never matched, docs/language.md §6)."""
        if event_type == PUNCTUATION:
            return False
        if pattern_type is None or pattern_type == event_type:
            return True
        return (
            self.hierarchy is not None
            and self.hierarchy.attribute is None
            and self.hierarchy.matches(pattern_type, event_type)
        )

    def visit_atom(self, node: A.Atom, lo, hi, windowed):
        events = self.stream.events
        found = [
            Derivation(node, frozenset((i,)), {node.var: i} if node.var else {})
            for i in range(lo, hi)
            if self.type_matches(node.type, events[i].type)
        ]
        self.charge(node, len(found))
        return found

    # ------------------------------------------------------------------ composites
    def visit_seq(self, node: A.Seq, lo, hi, windowed):
        return self._combinations(node, lo, hi, windowed, ordered=True)

    def visit_and(self, node: A.And, lo, hi, windowed):
        return self._combinations(node, lo, hi, windowed, ordered=False)

    def _combinations(self, node, lo, hi, windowed, ordered: bool) -> list:
        """One derivation per generating item: each after the previous (SEQ) or on distinct events (AND)."""
        options = [
            sorted(self.derive(item, lo, hi, windowed), key=lambda d: d.first) for item in generating(node.items)
        ]
        firsts = [[d.first for d in option] for option in options]
        out = []
        if not options:
            return out

        def start(k: int, last: int) -> int:
            """The first candidate of item k after the chosen ones (their last position ``last``)."""
            if ordered:
                return bisect.bisect_right(firsts[k], last)
            # an AND part may start before the others, but not before the window allows
            return bisect.bisect_left(firsts[k], self.stream.earliest(last)) if k and windowed else 0

        # Depth first without recursion: each entry is (chosen, their positions, span, next candidate index).
        pending = [[(), frozenset(), len(self.stream), -1, 0]]
        while pending:
            entry = pending[-1]
            chosen, used, first, last, index = entry
            k = len(chosen)
            if index >= len(options[k]):
                pending.pop()
                continue
            entry[4] = index + 1
            d = options[k][index]
            if chosen and d.first > first and not self._fits(first, d.first, windowed):
                pending.pop()  # sorted by first: every later candidate leaves the window too
                continue
            if not ordered and d.positions & used:
                continue
            span = min(first, d.first), max(last, d.last)
            if not self._fits(*span, windowed):
                continue
            if k + 1 == len(options):
                self._collect(node, out, _combine(node, chosen + (d,)))
            else:
                self.charge(node, k + 1)  # a partial combination costs its copy
                pending.append([chosen + (d,), used | d.positions, *span, start(k + 1, span[1])])
        return out

    def visit_or(self, node: A.Or, lo, hi, windowed):
        return [
            Derivation(node, d.positions, d.bindings, (d,))
            for branch in node.items
            for d in self.derive(branch, lo, hi, windowed)
        ]

    def visit_plus(self, node: A.Plus, lo, hi, windowed):
        body = sorted(self.derive(node.pattern, lo, hi, windowed), key=lambda d: d.first)
        firsts = [d.first for d in body]
        out = []
        # depth first without recursion: (chain's derivation or None, index of its next candidate iteration)
        pending = [[None, 0]]
        while pending:
            entry = pending[-1]
            chain, index = entry
            if index >= len(body):
                pending.pop()
                continue
            entry[1] = index + 1
            d = body[index]
            if chain is not None and not self._fits(chain.first, d.first, windowed):
                pending.pop()  # sorted by first: every later iteration leaves the window too
                continue
            if chain is not None and not self._fits(chain.first, d.last, windowed):
                continue
            longer = _iterations(node, chain, d)
            self._collect(node, out, longer)
            pending.append([longer, bisect.bisect_right(firsts, d.last)])
        return out

    def is_closed(self, node: A.Filter) -> bool:
        """Whether a filter mentions only variables its own pattern binds (else it correlates with enclosing
        variables and waits for phase 2)."""
        if id(node) not in self._closed:
            self._closed[id(node)] = set(A.variables_in(node.cond)) <= bound(node.pattern)
        return self._closed[id(node)]

    def visit_filter(self, node: A.Filter, lo, hi, windowed):
        inner = self.derive(node.pattern, lo, hi, windowed)
        if not self.is_closed(node):
            return [Derivation(node, d.positions, d.bindings, (d,)) for d in inner]
        events = self.stream.events
        return [Derivation(node, d.positions, d.bindings, (d,)) for d in inner if holds(node.cond, d.bindings, events)]

    def visit_strategy(self, node: A.Strategy, lo, hi, windowed):
        return [Derivation(node, d.positions, d.bindings, (d,)) for d in self.derive(node.pattern, lo, hi, windowed)]


def _combine(node: A.Pattern, parts: tuple) -> Derivation:
    positions, bindings = frozenset(), {}
    for part in parts:
        positions |= part.positions
        bindings.update(part.bindings)
    return Derivation(node, positions, bindings, parts)


def _iterations(node: A.Plus, chain: Optional[Derivation], d: Derivation) -> Derivation:
    """``chain`` (a derivation of ``node``, None for none) and one more iteration ``d``: each variable of the
    body becomes the tuple of its positions across iterations, flattened. Built from the chain's own
    derivation, so a chain of k iterations costs its last one, not k."""
    if chain is None:
        return Derivation(
            node,
            d.positions,
            {var: value if isinstance(value, tuple) else (value,) for var, value in d.bindings.items()},
            (d,),
        )
    bindings = dict(chain.bindings)
    for var, value in d.bindings.items():
        bindings[var] = bindings.get(var, ()) + (value if isinstance(value, tuple) else (value,))
    return Derivation(node, chain.positions | d.positions, bindings, chain.parts + (d,))
