"""Columnar witness summaries: a sub-query computed once for the whole sub-stream, not per outer candidate
([LIU] §5.3 shared execution, §5.6 decorrelation; [CSV] §3's views, kept as one integer per end index).

A ``!``/``EXISTS`` item asks one thing of its sub-query: is there a *witness* strictly inside the scope
``(lo, hi)`` its outer candidate gives it. When a result's validity depends on the result alone — the
sub-query is *independent*: it mentions no variable of the enclosing query, and every ``!``/``EXISTS``
inside it is bounded by its own positive items — one integer per end index answers that for every
candidate at once:

    best[e]  = the largest first index of a valid result ending at e (-1: none)
    reach[e] = max(best[start..e])

and a witness lies inside ``(lo, hi)`` iff ``reach[hi - 1] > lo`` (a result ending at or before ``lo``
starts at or before it, so the running maximum needs no left bound). A lookup is then one array read, with
no witness built or validated in Python; the candidate's own events must lie outside the scope (they do
for every ``!``/``EXISTS`` of a SEQ; an AND's scope holds its own events, and those lookups enumerate).

``best`` is computed a chunk of end indices at a time, in numpy, over the events from ``floor(first end)``
on (no scope reaches further back, so a result starting earlier is never a witness):

- an atom (with its one-variable conditions): its event's index where the type and conditions hold;
- OR: the elementwise maximum of its branches;
- SEQ of atoms, ``!``/``EXISTS`` items between them: left to right, the best first of the items so far
  ending at e is the range maximum of the previous column over the ends j its gap allows
  (``j >= reach_X[e-1]`` for ``!X``, ``j < reach_X[e-1]`` for ``EXISTS X``: the nested sub-query's own
  summary), a sparse table answering all ends at once. SEQs sharing a prefix share its columns;
- AND of atoms no event can match twice: at e, the earliest of the other parts' latest events before e;
- anything else (composite positive items, conditions on two variables): the sub-query's results ending at
  e are built and validated once per end index, still once for every candidate.

*Decorrelation* ([LIU] §5.6): a sub-query whose conditions mention enclosing variables (``s.id = r.id``,
[CSV] Ex 3's correlated view) is rebuilt with those values as constants, once per distinct tuple of values,
and summarised like an independent one; the candidate looks its values up and joins back.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...lang import ast as A
from ...lang.checks import definitions
from ...semantics.conditions import holds
from ...semantics.substream import Scope
from .operators import Leaf, PlanBuilder, Select, WinAnd, WinOr, WinSeq


def independent(op, left: bool = False, right: bool = False) -> bool:
    """Whether a result's validity depends on the result alone (``left``/``right``: the enclosing scope is
    bounded by the sub-query's own events on that side)."""
    if isinstance(op, Leaf):
        return True
    if isinstance(op, Select):
        return independent(op.child, left, right)
    if isinstance(op, WinOr):
        return all(independent(b, left, right) for b in op.branches)
    if isinstance(op, WinAnd):
        return (not op.booleans or (left and right)) and all(independent(p, left, right) for p in op.parts)
    if isinstance(op, WinSeq):
        at = op.positions
        for k, part in zip(at, op.parts):
            if not independent(part, left or at[0] < k, right or at[-1] > k):
                return False
        return all(at[0] < b.index < at[-1] and independent(b.sub, True, True) for b in op.booleans)
    return False


def free_references(node) -> tuple:
    """The attributes ``x.attr`` a sub-query's conditions read from variables defined outside it."""
    defined = definitions(node)
    refs = []
    for n in node.walk():
        if isinstance(n, A.Attr) and n.var not in defined and n not in refs:
            refs.append(n)
    return tuple(refs)


class SubQuery:
    """How one sub-query is summarised: directly (``refs`` empty), per distinct tuple of the enclosing
    attributes ``refs`` (decorrelated), or not at all (``plain`` False and ``refs`` None)."""

    def __init__(self, op, node):
        self.op, self.node = op, node
        refs = free_references(node)
        if not refs:
            self.refs = () if independent(op) else None
        elif all(r.index is None for r in refs) and not any(isinstance(n, A.Agg) for n in node.walk()):
            self.refs = refs
        else:
            self.refs = None
        self.types = leaf_types(op)
        self._ops: dict = {}

    def op_for(self, values: tuple):
        """The sub-query with the enclosing attributes replaced by ``values`` (None: not independent)."""
        if values not in self._ops:
            if len(self._ops) >= 4096:  # a plan kept by cepkit.match's cache: bound what it remembers
                self._ops.clear()
            constants = dict(zip(self.refs, values))
            node = self.node.transform(lambda n: A.Literal(constants[n]) if n in constants else n)
            op = PlanBuilder().build(node, positive=False)
            self._ops[values] = op if independent(op) else None
        return self._ops[values]


def leaf_types(op) -> Optional[frozenset]:
    """The event types the atoms of a sub-query name at any depth (its ``!``/``EXISTS`` items' too); None
    when one is ANY. An event of none of them is in no witness, nor in a witness's inner witnesses."""
    types, stack, seen = set(), [op], set()
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if isinstance(op, Leaf):
            if op.type is None:
                return None
            types.add(op.type)
        elif isinstance(op, Select):
            stack.append(op.child)
        elif isinstance(op, WinOr):
            stack += op.branches
        elif isinstance(op, (WinSeq, WinAnd)):
            stack += [*op.parts, *(b.sub for b in op.booleans)]
    return frozenset(types)


class Summary:
    """``reach`` of one independent sub-query over one sub-stream, for the end indices ``start`` on."""

    def __init__(self, part, op):
        self.part, self.op = part, op
        self.start = 0
        self.reach = np.empty(0, np.int64)
        self.computed = 0

    @property
    def covered(self) -> int:
        return self.start + len(self.reach)

    def exists(self, lo: int, hi: int) -> bool:
        """Whether a valid result lies strictly inside (lo, hi) (``hi`` at most the events seen)."""
        return hi > lo + 1 and self.latest(hi, lo) > lo

    def latest(self, hi: int, lo: int) -> int:
        """The largest first index of a valid result ending before ``hi`` (exact when above ``lo``; -1:
        none)."""
        if hi <= lo + 1:
            return -1
        if not len(self.reach) or lo + 1 < self.start:
            self.start, self.reach = lo + 1, np.empty(0, np.int64)
        if hi > self.covered:
            # doubling chunks: the look-back of each chunk (``floor``) is paid O(log n) times
            stop = min(self.part.n, max(hi, self.covered + max(256, len(self.reach))))
            best = self._best(self.covered, stop)
            self.computed += len(best)
            if len(self.reach):
                best[0] = max(best[0], self.reach[-1])
            self.reach = np.concatenate([self.reach, np.maximum.accumulate(best)])
        return int(self.reach[hi - 1 - self.start])

    def purge(self, before: int) -> None:
        cut = min(len(self.reach), before - self.start)
        if cut > 0:
            self.reach = self.reach[cut:]
            self.start += cut

    def _best(self, a: int, b: int) -> np.ndarray:
        part = self.part
        r0 = min(a, max(part.events.start, part.floor(a)))
        best = Region(part, r0, b).best(self.op)
        if best is not None:
            return best[a - r0 :].copy()
        out = np.full(b - a, -1, np.int64)
        for e in range(a, b):
            top = -1
            for r in part.results(self.op, e, part.floor(e)):
                if r.first > top and part.valid(r, {}, Scope(-1, part.n), r.positions) is True:
                    top = r.first
            out[e - a] = top
        return out


class Region:
    """Events ``r0..b-1`` of a sub-stream as columns, and the ``best`` column of operators over them (None
    where an operator has no columnar form). ``excluded`` events (an outer candidate's own) are in no result
    and no inner witness: the columns then answer for that one candidate (docs/language.md §10.4)."""

    def __init__(self, part, r0: int, b: int, excluded: tuple = ()):
        self.part, self.r0 = part, r0
        self.index = np.arange(r0, b, dtype=np.int64)
        self.excluded = np.asarray([p - r0 for p in excluded if r0 <= p < b], np.int64)
        self.masks: dict = {}
        self.bests: dict = {}

    def mask(self, op) -> Optional[np.ndarray]:
        """Which events are a result of an operator whose results are single events."""
        if op in self.masks:
            return self.masks[op]
        found = None
        if isinstance(op, Leaf):
            if op.type is None:
                found = np.ones(len(self.index), bool)
            elif self.part.run.hierarchy is None:
                found = self.part.type_mask(op.type, self.r0, self.r0 + len(self.index))
            else:
                types = self.part.type_column(self.r0, self.r0 + len(self.index))
                found = np.fromiter((self.part.run.type_matches(op.type, t) for t in types), bool, len(types))
            if len(self.excluded):
                found = found.copy()
                found[self.excluded] = False
        elif isinstance(op, WinOr):
            masks = [self.mask(b) for b in op.branches]
            if all(m is not None for m in masks):
                found = np.logical_or.reduce(masks)
        elif isinstance(op, Select) and op.closed:
            child, var = self.mask(op.child), _variable(op.child)
            if child is not None and var is not False and set(A.variables_in(op.cond)) <= {var}:
                found = child.copy()
                events = self.part.events
                for k in np.flatnonzero(child):
                    found[k] = holds(op.cond, {var: int(self.index[k])} if var else {}, events)
        self.masks[op] = found
        return found

    def best(self, op) -> Optional[np.ndarray]:
        if op not in self.bests:
            self.bests[op] = self._best(op)
        return self.bests[op]

    def _best(self, op) -> Optional[np.ndarray]:
        mask = self.mask(op)
        if mask is not None:
            return np.where(mask, self.index, -1)
        if isinstance(op, WinOr):
            branches = [self.best(b) for b in op.branches]
            return None if any(b is None for b in branches) else np.maximum.reduce(branches)
        if isinstance(op, WinSeq):
            return self._seq(op)
        if isinstance(op, WinAnd):
            return self._and(op)
        return None

    def _seq(self, op: WinSeq) -> Optional[np.ndarray]:
        masks = [self.mask(p) for p in op.parts]
        at = op.positions
        if any(m is None for m in masks) or not all(at[0] < b.index < at[-1] for b in op.booleans):
            return None
        column = np.where(masks[0], self.index, -1)
        for k in range(1, len(at)):
            lower = np.full(len(self.index), self.r0, np.int64)
            upper = self.index - 1
            for b in op.booleans:
                if at[k - 1] < b.index < at[k]:
                    inner = self.best(b.sub)
                    if inner is None:
                        return None
                    before = np.concatenate([[-1], np.maximum.accumulate(inner)[:-1]])  # reach over ends < e
                    if b.negations % 2:
                        lower = np.maximum(lower, before)
                    else:
                        upper = np.minimum(upper, before - 1)
            column = np.where(masks[k], _range_max(column, lower - self.r0, upper - self.r0), -1)
        return column

    def _and(self, op: WinAnd) -> Optional[np.ndarray]:
        masks = [self.mask(p) for p in op.parts]
        if op.booleans or any(m is None for m in masks):
            return None
        if len(masks) > 1 and np.any(np.sum(masks, axis=0) > 1):
            return None  # an event matching two parts: the latest events need not be distinct
        latest = [np.concatenate([[-1], np.maximum.accumulate(np.where(m, self.index, -1))[:-1]]) for m in masks]
        out = np.full(len(self.index), -1, np.int64)
        for k, m in enumerate(masks):
            others = [latest[j] for j in range(len(masks)) if j != k]
            first = np.minimum.reduce(others) if others else self.index
            out = np.where(m, first, out)
        return out


def _variable(op):
    """The variable of an operator whose results are single events (None: unnamed; False: not one)."""
    if isinstance(op, Leaf):
        return op.var
    if isinstance(op, Select):
        return _variable(op.child)
    if isinstance(op, WinOr):
        names = {_variable(b) for b in op.branches}
        return names.pop() if len(names) == 1 else False
    return False


def _range_max(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(values[lo[i]..hi[i]]) for every i (-1 where the range is empty): a sparse table."""
    n = len(values)
    out = np.full(n, -1, np.int64)
    lo = np.maximum(lo, 0)
    ok = lo <= hi
    if not ok.any():
        return out
    if (lo[ok] == 0).all():
        out[ok] = np.maximum.accumulate(values)[hi[ok]]
        return out
    table = [values]
    while (1 << len(table)) <= n:
        half = 1 << (len(table) - 1)
        prev = table[-1]
        table.append(np.maximum(prev[:-half], prev[half:]))
    qs = np.flatnonzero(ok)
    span = hi[qs] - lo[qs] + 1
    level = np.floor(np.log2(span)).astype(np.int64)
    for j in np.unique(level):
        sel = qs[level == j]
        row = table[j]
        out[sel] = np.maximum(row[lo[sel]], row[hi[sel] - (1 << j) + 1])
    return out
