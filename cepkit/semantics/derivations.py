"""Phase 1 of the reference evaluator: every derivation of a pattern's positive structure, bottom up.

A *derivation* records how a pattern matches: its set of positions C (CEL's complex event), its
bindings β, and one sub-derivation per generating item (which item got which sub-match). Phase 1
enumerates them by brute force, following LANGUAGE.md §2:

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
their scope (§10.11).
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


@dataclass(frozen=True, eq=False)
class Derivation:
    """How ``node`` matches: positions C (logical indices), bindings β (var -> index or tuple), and the
    sub-derivations (Seq/And: one per generating item, in item order; Or/Filter/Strategy: one; Plus:
    one per iteration; Atom: none)."""
    node: A.Pattern
    positions: frozenset
    bindings: Mapping
    parts: tuple = ()
    first: int = field(init=False)   # min C
    last: int = field(init=False)    # max C

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

    def __init__(self, stream: Substream, hierarchy=None):
        self.stream = stream
        self.hierarchy = hierarchy
        self._memo: dict = {}
        self._closed: dict = {}

    def derive(self, node: A.Pattern, lo: int = 0, hi: Optional[int] = None, windowed: bool = True) -> list:
        """The derivations of ``node`` using only logical indices lo <= i < hi."""
        hi = len(self.stream) if hi is None else hi
        key = (id(node), lo, hi, windowed)
        if key not in self._memo:
            self._memo[key] = (node, self.visit(node, lo, hi, windowed))  # keep node alive: ids stay unique
        return self._memo[key][1]

    def _fits(self, first: int, last: int, windowed: bool) -> bool:
        return not windowed or self.stream.fits(first, last)

    # ------------------------------------------------------------------ atoms
    def type_matches(self, pattern_type: Optional[str], event_type: str) -> bool:
        """A pattern type matches its own name and every type below it in the hierarchy; ANY matches every
        event (punctuations are never matched, LANGUAGE.md §6)."""
        if event_type == PUNCTUATION:
            return False
        if pattern_type is None or pattern_type == event_type:
            return True
        return self.hierarchy is not None and self.hierarchy.attribute is None and \
            self.hierarchy.matches(pattern_type, event_type)

    def visit_atom(self, node: A.Atom, lo, hi, windowed):
        events = self.stream.events
        return [Derivation(node, frozenset((i,)), {node.var: i} if node.var else {})
                for i in range(lo, hi) if self.type_matches(node.type, events[i].type)]

    # ------------------------------------------------------------------ composites
    def visit_seq(self, node: A.Seq, lo, hi, windowed):
        return self._combinations(node, lo, hi, windowed, ordered=True)

    def visit_and(self, node: A.And, lo, hi, windowed):
        return self._combinations(node, lo, hi, windowed, ordered=False)

    def _combinations(self, node, lo, hi, windowed, ordered: bool) -> list:
        """One derivation per generating item: each after the previous (SEQ) or on distinct events (AND)."""
        options = [sorted(self.derive(item, lo, hi, windowed), key=lambda d: d.first)
                   for item in generating(node.items)]
        firsts = [[d.first for d in option] for option in options]
        out = []

        def extend(chosen: tuple, used: frozenset, first: int, last: int):
            k = len(chosen)
            if k == len(options):
                out.append(_combine(node, chosen))
                return
            if ordered:
                start = bisect.bisect_right(firsts[k], last)
            else:  # an AND part may start before the others, but not before the window allows
                start = bisect.bisect_left(firsts[k], self.stream.earliest(last)) if chosen and windowed else 0
            for d in options[k][start:]:
                if chosen and d.first > first and not self._fits(first, d.first, windowed):
                    break  # sorted by first: every later candidate leaves the window too
                if ordered or not d.positions & used:
                    span = min(first, d.first), max(last, d.last)
                    if self._fits(*span, windowed):
                        extend(chosen + (d,), used | d.positions, *span)

        extend((), frozenset(), len(self.stream), -1)
        return out

    def visit_or(self, node: A.Or, lo, hi, windowed):
        return [Derivation(node, d.positions, d.bindings, (d,))
                for branch in node.items for d in self.derive(branch, lo, hi, windowed)]

    def visit_plus(self, node: A.Plus, lo, hi, windowed):
        body = sorted(self.derive(node.pattern, lo, hi, windowed), key=lambda d: d.first)
        firsts = [d.first for d in body]
        out = []

        def extend(chain: tuple):
            out.append(_iterations(node, chain))
            for d in body[bisect.bisect_right(firsts, chain[-1].last):]:
                if not self._fits(chain[0].first, d.first, windowed):
                    break  # sorted by first: every later iteration leaves the window too
                if self._fits(chain[0].first, d.last, windowed):
                    extend(chain + (d,))

        for d in body:
            extend((d,))
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


def _iterations(node: A.Plus, chain: tuple) -> Derivation:
    """A chain of iterations; each variable of the body becomes the tuple of its positions, flattened."""
    positions, bindings = frozenset(), {}
    for part in chain:
        positions |= part.positions
        for var, value in part.bindings.items():
            bindings[var] = bindings.get(var, ()) + (value if isinstance(value, tuple) else (value,))
    return Derivation(node, positions, bindings, chain)
