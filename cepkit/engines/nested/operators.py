"""The NEEL plan: one operator per expression ([LIU] §5.1.3, plan generation).

A scoped pattern (``Query.scoped``: every condition where it is evaluated) becomes a tree of operators,
``WinSeq``, ``WinAnd``, ``WinOr`` over ``Leaf`` (one event type) and ``Select`` (a condition kept where it
is written). The ``!``/``EXISTS`` items of a SEQ or AND are *sub-queries*: their own operator trees,
evaluated on demand over the constrained window their outer candidate gives them (``execution``).

Identical sub-patterns (same tree, same variables) compile to one operator, so their results are built
once and shared ([LIU] §5.3: common sub-expressions; in a DNF the disjuncts' common SEQ prefixes, the
PreCache of Ex 27, share one prefix operator too: ``WinSeq.prefixes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

from ...lang import ast as A
from ...lang.checks import bound


@dataclass(frozen=True, eq=False)
class Partial:
    """A result of an operator: its positions (logical indices of one sub-stream), bindings (var ->
    index), and the results of its children (SEQ/AND: one per positive item; OR/Select: one)."""

    op: "Operator"
    positions: frozenset
    bindings: dict
    parts: tuple = ()
    first: int = field(init=False)
    last: int = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "first", min(self.positions))
        object.__setattr__(self, "last", max(self.positions))

    @cached_property
    def key(self) -> tuple:
        """(C, β): one operator builds its bindings in one variable order, so no sorting is needed."""
        return self.positions, tuple(self.bindings.items())


class Operator:
    """A node of the plan. ``memo`` says whether its results are kept per end index (positive context);
    sub-query operators are cached by their sliding view instead (``views``)."""

    memo = True


@dataclass(eq=False)
class Leaf(Operator):
    type: Optional[str]  # None: ANY
    var: Optional[str]


@dataclass(eq=False)
class Select(Operator):
    """A condition on its child's results: checked when built if ``closed`` (it mentions only the child's
    variables), else by the validation, once the enclosing bindings are known (CEL φ4)."""

    child: Operator
    cond: A.Expr
    closed: bool


@dataclass(frozen=True)
class Boolean:
    """A ``!``/``EXISTS`` item at ``index`` among its SEQ/AND's items: ``negations`` counts the ``!`` in its
    chain (``!!X`` is ``EXISTS X``), ``sub`` is the sub-query's operator."""

    index: int
    negations: int
    sub: Operator


@dataclass(eq=False)
class WinSeq(Operator):
    parts: tuple  # operators of the positive items, in order
    positions: tuple  # their indices among the SEQ's items
    booleans: tuple  # Boolean items
    prefixes: tuple = ()  # shared prefix keys, one per positive item (``parts[:k+1]``)
    top: bool = False  # only ever a match of the whole query (``PlanBuilder.mark_top``)

    def __post_init__(self):
        at = self.positions

        def sides(k):  # (nearest positive part on the left, on the right) of item k, as part numbers
            left = max((j for j, p in enumerate(at) if p < k), default=None)
            right = min((j for j, p in enumerate(at) if p > k), default=None)
            return left, right

        self.part_sides = tuple(
            (j, sides(p)) for j, (p, op) in enumerate(zip(at, self.parts)) if not isinstance(op, Leaf)
        )
        self.boolean_sides = tuple(sides(b.index) for b in self.booleans)
        # the ``!``/``EXISTS`` items strictly between part k-1 and part k (``gates[k]``)
        self.gates = tuple(tuple(b for b in self.booleans if k and at[k - 1] < b.index < at[k]) for k in range(len(at)))


@dataclass(eq=False)
class WinAnd(Operator):
    parts: tuple
    booleans: tuple


@dataclass(eq=False)
class WinOr(Operator):
    branches: tuple


class PlanBuilder:
    """Compiles a scoped pattern, sharing identical sub-patterns (hash-consing on the frozen AST)."""

    def __init__(self):
        self.shared: dict = {}  # (pattern node, positive context) -> operator
        self.subqueries: list = []  # every sub-query operator, outermost first
        self.nodes: dict = {}  # sub-query operator -> its pattern (``summaries.SubQuery``)

    def build(self, node: A.Pattern, positive: bool = True) -> Operator:
        key = (node, positive)
        if key not in self.shared:
            self.shared[key] = self._build(node, positive)
        return self.shared[key]

    def _build(self, node, positive: bool) -> Operator:
        if isinstance(node, A.Atom):
            op = Leaf(node.type, node.var)
        elif isinstance(node, A.Filter):
            op = Select(
                self.build(node.pattern, positive), node.cond, set(A.variables_in(node.cond)) <= bound(node.pattern)
            )
        elif isinstance(node, A.Or):
            op = WinOr(tuple(self.build(b, positive) for b in node.items))
        elif isinstance(node, (A.Seq, A.And)):
            parts, indices, booleans = [], [], []
            for k, item in enumerate(node.items):
                if isinstance(item, A.Pattern):
                    parts.append(self.build(item, positive))
                    indices.append(k)
                elif isinstance(item, (A.Not, A.Exists)):
                    booleans.append(self._boolean(k, item))
            if isinstance(node, A.Seq):
                op = WinSeq(
                    tuple(parts),
                    tuple(indices),
                    tuple(booleans),
                    tuple(tuple(parts[: k + 1]) for k in range(len(parts))),
                )
            else:
                op = WinAnd(tuple(parts), tuple(booleans))
        else:
            raise TypeError(f"no NEEL operator for {type(node).__name__}")
        op.memo = positive
        return op

    def mark_top(self, root: Operator) -> None:
        """Mark the SEQs whose results are only ever matches of the whole query (the root, through OR and
        conditions): no enclosing candidate's events can lie in their gaps, so a gap's ``!``/``EXISTS`` may
        prune their chains while they are built (``execution.SubStream._chains``); their prefix keys then
        include the gaps' items."""
        top = top_seqs(root)
        inner: set = set()
        stack = [
            c
            for op in self.shared.values()
            if isinstance(op, (WinSeq, WinAnd))
            for c in (*op.parts, *(b.sub for b in op.booleans))
        ]
        while stack:  # everything below an item of a SEQ/AND
            op = stack.pop()
            if op not in inner:
                inner.add(op)
                stack += _below(op)
        for op in top:
            if op not in inner:
                op.top = True
                op.prefixes = tuple((op.parts[: k + 1], op.gates[: k + 1]) for k in range(len(op.parts)))

    def _boolean(self, index: int, item) -> Boolean:
        negations = 0
        while isinstance(item, (A.Not, A.Exists)):
            negations += isinstance(item, A.Not)
            item = item.item
        sub = self.build(item, positive=False)
        if sub not in self.subqueries:
            self.subqueries.append(sub)
            self.nodes[sub] = item
        return Boolean(index, negations, sub)


def top_composites(root: Operator) -> list:
    """The SEQs and ANDs at the top of a plan: the root, or reached from it through OR and conditions only."""
    out, stack = [], [root]
    while stack:
        op = stack.pop()
        if isinstance(op, WinOr):
            stack += op.branches
        elif isinstance(op, Select):
            stack.append(op.child)
        elif isinstance(op, (WinSeq, WinAnd)):
            out.append(op)
    return out


def top_seqs(root: Operator) -> list:
    """The SEQs at the top of a plan: the root, or reached from it through OR and conditions only."""
    return [op for op in top_composites(root) if isinstance(op, WinSeq)]


def _below(op: Operator) -> list:
    if isinstance(op, (WinSeq, WinAnd)):
        return [*op.parts, *(b.sub for b in op.booleans)]
    if isinstance(op, WinOr):
        return list(op.branches)
    if isinstance(op, Select):
        return [op.child]
    return []
