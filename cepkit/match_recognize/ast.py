"""The syntax tree of a MATCH_RECOGNIZE query: row patterns, expressions and the clauses around them.

A tree of its own, not cepkit's pattern AST: row pattern recognition is another language (regular
expressions over the rows of a partition, one preferred match per start, contiguous rows) whose
meaning differs from cepkit's skip-till-any-match patterns (docs/language.md §13).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Tuple

Span = Tuple[int, int, int, int]  # line, column, end line, end column (1-based)


# ------------------------------------------------------------------ row patterns
@dataclass(frozen=True)
class Var:
    """A row pattern variable: one row for which the variable's DEFINE condition holds."""

    name: str
    span: Optional[Span] = field(default=None, compare=False)


@dataclass(frozen=True)
class Concat:
    items: Tuple[Any, ...]


@dataclass(frozen=True)
class Alt:
    """Alternatives, preferred from left to right."""

    items: Tuple[Any, ...]


@dataclass(frozen=True)
class Quant:
    """``body`` repeated ``low`` to ``high`` times (``high`` None: unbounded); greedy prefers more."""

    body: Any
    low: int
    high: Optional[int]
    greedy: bool = True


@dataclass(frozen=True)
class Anchor:
    """``^`` (the partition's first row) or ``$`` (after its last row)."""

    kind: str


@dataclass(frozen=True)
class Exclude:
    """``{- body -}``: matched as usual, left out of ALL ROWS PER MATCH."""

    body: Any


@dataclass(frozen=True)
class Permute:
    """``PERMUTE(a, b, ...)``: every order, preferred in the lexicographic order of the listed items."""

    items: Tuple[Any, ...]


@dataclass(frozen=True)
class Empty:
    """``()``: the empty pattern."""


# ------------------------------------------------------------------ expressions
@dataclass(frozen=True)
class Literal:
    value: Any


@dataclass(frozen=True)
class Column:
    """``var.name`` (``var`` None: the universal variable, every row of the match)."""

    var: Optional[str]
    name: str
    span: Optional[Span] = field(default=None, compare=False)


@dataclass(frozen=True)
class Navigation:
    """PREV / NEXT (physical: ``offset`` rows from the row the argument points at) and FIRST / LAST
    (logical: the ``offset``-th row of the argument's variable from the match's first or last such row)."""

    kind: str
    arg: Any
    offset: int
    final: bool = False


@dataclass(frozen=True)
class Aggregate:
    """COUNT / SUM / AVG / MIN / MAX over the rows of ``var`` (None: every row of the match). ``arg`` None is
    ``COUNT(*)`` / ``COUNT(var.*)``."""

    func: str
    arg: Any
    var: Optional[str]
    final: bool = False


@dataclass(frozen=True)
class Classifier:
    """CLASSIFIER(): the variable the current row is mapped to."""

    final: bool = False


@dataclass(frozen=True)
class MatchNumber:
    """MATCH_NUMBER(): 1 for a partition's first match, then 2, 3..."""


@dataclass(frozen=True)
class Arith:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class Negate:
    arg: Any


@dataclass(frozen=True)
class Compare:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class And:
    items: Tuple[Any, ...]


@dataclass(frozen=True)
class Or:
    items: Tuple[Any, ...]


@dataclass(frozen=True)
class Not:
    arg: Any


@dataclass(frozen=True)
class IsNull:
    arg: Any
    negated: bool = False


@dataclass(frozen=True)
class InList:
    arg: Any
    items: Tuple[Any, ...]
    negated: bool = False


# ------------------------------------------------------------------ the query
@dataclass(frozen=True)
class Recognize:
    """``SELECT ... FROM source MATCH_RECOGNIZE (...)``. ``select`` None is ``*``; ``rows`` is "one" or
    "all"; ``empty`` is "show", "omit" or "unmatched"; ``skip`` is ("past_last",), ("next_row",),
    ("first", var) or ("last", var); ``within`` is a pandas Timedelta or None."""

    source: str
    select: Optional[Tuple[str, ...]]
    partition: Tuple[str, ...]
    order: Tuple[Tuple[str, bool], ...]
    measures: Tuple[Tuple[str, Any], ...]
    rows: str
    empty: str
    skip: Tuple[str, ...]
    pattern: Any
    within: Any
    subsets: Tuple[Tuple[str, Tuple[str, ...]], ...]
    defines: Tuple[Tuple[str, Any], ...]
    alias: Optional[str] = None
    text: str = field(default="", compare=False, repr=False)

    @property
    def variables(self) -> Tuple[str, ...]:
        """The pattern's variables in order of first appearance."""
        seen: list = []

        def walk(node):
            if isinstance(node, Var):
                if node.name not in seen:
                    seen.append(node.name)
            elif isinstance(node, (Concat, Alt, Permute)):
                for item in node.items:
                    walk(item)
            elif isinstance(node, (Quant, Exclude)):
                walk(node.body)

        walk(self.pattern)
        return tuple(seen)

    def define(self, var: str):
        """The DEFINE condition of ``var`` (None: always true)."""
        return dict(self.defines).get(var)

    def subset(self, name: str) -> Optional[Tuple[str, ...]]:
        return dict(self.subsets).get(name)


def children(node):
    """An expression's or pattern's direct sub-nodes."""
    for value in vars(node).values():
        for item in value if isinstance(value, tuple) else (value,):
            if hasattr(item, "__dataclass_fields__"):
                yield item


def walk(node):
    """``node`` and every node under it."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def innermost(expr):
    """The expression under a chain of navigations: ``PREV(LAST(A.price), 2)`` -> ``A.price``."""
    while isinstance(expr, Navigation):
        expr = expr.arg
    return expr


def variables_of(expr) -> set:
    """The variables an expression's columns name outside navigations (None: the universal variable)."""
    names = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Column):
            names.add(node.var)
        elif not isinstance(node, Navigation):
            stack.extend(children(node))
    return names
