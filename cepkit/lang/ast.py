"""The one abstract syntax tree of the cepkit language (docs/language.md).

Every node is a frozen dataclass; children are tuples, so trees are hashable and compare by value.
Each node carries a source ``span`` (line, column, end line, end column) that takes no part in
equality: ``parse(pretty(q)) == q`` holds although the printed text differs from the original.

Patterns: Atom, Seq, And, Or, Filter, Plus, Strategy; items of Seq/And may also be Not, Exists or a
condition. Conditions: Literal, Duration, Attr, Agg, Prev, Arith, Neg, Compare, In, BoolOp, BoolNot.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Iterator, Optional, TypeVar, Union

Span = Optional[tuple]  # (line, column, end_line, end_column), 1-based

STRATEGIES = ("ALL", "STRICT", "PARTITION_STRICT", "NEXT", "LAST", "MAX", "STNM", "ROBUST_STNM")
AGGREGATES = ("count", "sum", "avg", "min", "max")
TIME_UNITS = {  # unit word -> seconds
    "ms": 0.001,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
}


N = TypeVar("N", bound="Node")  # find_all(A.Atom) yields Atoms


@dataclass(frozen=True)
class Node:
    span: Span = field(default=None, compare=False, repr=False, kw_only=True)

    @property
    def key(self) -> str:
        """Lower-case class name, used by visitors (``visit_<key>``)."""
        return type(self).__name__.lower()

    def children(self) -> Iterator["Node"]:
        for f in fields(self):
            if f.name == "span":
                continue
            value = getattr(self, f.name)
            if isinstance(value, Node):
                yield value
            elif isinstance(value, tuple):
                yield from (v for v in value if isinstance(v, Node))

    def walk(self) -> Iterator["Node"]:
        """All nodes below and including this one, parents first."""
        yield self
        for child in self.children():
            yield from child.walk()

    def find_all(self, *types: type[N]) -> Iterator[N]:
        return (n for n in self.walk() if isinstance(n, types))

    def transform(self, fn) -> "Node":
        """Rebuild the tree bottom-up, replacing each node by ``fn(node)`` (return the node to keep it)."""
        changes = {}
        for f in fields(self):
            if f.name == "span":
                continue
            value = getattr(self, f.name)
            if isinstance(value, Node):
                changes[f.name] = value.transform(fn)
            elif isinstance(value, tuple) and any(isinstance(v, Node) for v in value):
                changes[f.name] = tuple(v.transform(fn) if isinstance(v, Node) else v for v in value)
        node = replace(self, **changes) if changes else self
        return fn(node)


class Visitor:
    """Dispatch on node class: ``visit_seq``, ``visit_atom``...; ``generic_visit`` otherwise."""

    def visit(self, node: Node, *args, **kwargs):
        return getattr(self, "visit_" + node.key, self.generic_visit)(node, *args, **kwargs)

    def generic_visit(self, node: Node, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no visit_{node.key}")


# ----------------------------------------------------------------------------- conditions
class Expr(Node):
    """A condition or a value inside a condition."""


@dataclass(frozen=True)
class Literal(Expr):
    value: Union[int, float, str, bool, None]


@dataclass(frozen=True)
class Duration(Expr):
    """``15 days``; its value in seconds is ``seconds``."""

    amount: float
    unit: str

    @property
    def seconds(self) -> float:
        return self.amount * TIME_UNITS[self.unit.lower()]


@dataclass(frozen=True)
class Attr(Expr):
    """``x.attr``; on a Kleene variable ``index`` picks one event: an int k (``b[k]``, 1-based),
    ``"i"`` / ``"i-1"`` (SASE's current / previous iteration), ``"first"`` or ``"last"``."""

    var: str
    attr: str
    index: Union[int, str, None] = None


@dataclass(frozen=True)
class Agg(Expr):
    """``count(b)``, ``sum(b.v)``, ``avg(b.v)``, ``min(b.v)``, ``max(b.v)``."""

    func: str
    var: str
    attr: Optional[str] = None


@dataclass(frozen=True)
class Prev(Expr):
    """``prev(b.v)``: the value of the previous event of Kleene variable b (SES ``prev``)."""

    arg: Attr


@dataclass(frozen=True)
class Arith(Expr):
    op: str  # + - * /
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Neg(Expr):
    arg: Expr


@dataclass(frozen=True)
class Compare(Expr):
    op: str  # = != < <= > >=
    left: Expr
    right: Expr


@dataclass(frozen=True)
class In(Expr):
    arg: Expr
    values: tuple


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str  # "and" | "or"
    args: tuple


@dataclass(frozen=True)
class BoolNot(Expr):
    arg: Expr


# ----------------------------------------------------------------------------- patterns
class Pattern(Node):
    """A pattern; its matches are pairs (set of positions, bindings)."""


@dataclass(frozen=True)
class Atom(Pattern):
    """``T AS x``: one event of type T (or below concept T); ``type`` None means ANY."""

    type: Optional[str]
    var: Optional[str] = None


@dataclass(frozen=True)
class Seq(Pattern):
    """``SEQ(...)`` / ``p ; q``; items are patterns, Not, Exists or conditions."""

    items: tuple


@dataclass(frozen=True)
class And(Pattern):
    """``AND(...)`` / SES set ``{...}``: all items, any order, distinct events."""

    items: tuple


@dataclass(frozen=True)
class Or(Pattern):
    items: tuple


@dataclass(frozen=True)
class Filter(Pattern):
    pattern: Pattern
    cond: Expr


@dataclass(frozen=True)
class Plus(Pattern):
    """Iteration ``p+``; ``B+ b`` is ``Plus(Atom("B", "b"))``."""

    pattern: Pattern


@dataclass(frozen=True)
class Strategy(Pattern):
    """A selection strategy applied to a sub-pattern, e.g. ``NEXT(A a ; B+ b)``."""

    name: str
    pattern: Pattern


@dataclass(frozen=True)
class Not(Node):
    """``!item`` inside SEQ/AND (NEEL negation)."""

    item: Node


@dataclass(frozen=True)
class Exists(Node):
    """``EXISTS item`` inside SEQ/AND."""

    item: Node


# ----------------------------------------------------------------------------- queries
@dataclass(frozen=True)
class Window(Node):
    """``WITHIN n unit`` (unit None: the ts's own scale) or ``WITHIN n EVENTS`` (unit "EVENTS")."""

    amount: float
    unit: Optional[str] = None

    @property
    def events(self) -> bool:
        return self.unit is not None and self.unit.upper() == "EVENTS"

    @property
    def seconds(self) -> Optional[float]:
        """The window in seconds (numeric ts count seconds); None for an EVENTS window."""
        if self.events:
            return None
        return self.amount * (TIME_UNITS[self.unit.lower()] if self.unit else 1.0)


@dataclass(frozen=True)
class QueryNode(Node):
    """A whole query: a pattern and its clauses (docs/language.md §4)."""

    pattern: Pattern
    where: Optional[Expr] = None
    within: Optional[Window] = None
    partition_by: tuple = ()
    consume: Optional[str] = None  # "ANY" | "PARTITION" | "NONE"
    select: Optional[tuple] = None  # projected variables; None = all
    limit: Optional[int] = None  # LIMIT n: the first n matches in output order; None = all
    strategy: Optional[str] = None  # SELECT <strategy>; None = ALL
    source: Optional[str] = None  # FROM name
    core_style: bool = False  # FROM ... WHERE <pattern> header (kept for printing)
    # where each name of PARTITION BY / RETURN / SELECT stands: ((clause, name, span), ...)
    name_spans: tuple = field(default=(), compare=False, repr=False)

    def name_at(self, clause: str, name: str) -> Node:
        """A node located where ``name`` stands in ``clause`` ("partition_by" or "select"), for an error's
        caret; the whole query where it was not written (a query built by hand)."""
        for where, written, span in self.name_spans:
            if where == clause and written == name:
                return Node(span=span)
        return self


def variables_in(expr: Node) -> tuple:
    """Variables an expression mentions, in order of first mention."""
    seen = []
    for n in expr.walk():
        var = getattr(n, "var", None)
        if isinstance(n, (Attr, Agg)) and var not in seen:
            seen.append(var)
    return tuple(seen)


def conjuncts(expr: Optional[Expr]) -> tuple:
    """Split a condition on top-level ``and``."""
    if expr is None:
        return ()
    if isinstance(expr, BoolOp) and expr.op == "and":
        return tuple(c for a in expr.args for c in conjuncts(a))
    return (expr,)


def conjoin(exprs) -> Optional[Expr]:
    exprs = tuple(exprs)
    if not exprs:
        return None
    return exprs[0] if len(exprs) == 1 else BoolOp("and", exprs)
