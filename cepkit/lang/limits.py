"""The limits of the language (docs/limits.md): how deep a query may nest and how large its numbers may be.

Parsing itself has no depth limit (lark's LALR parser and ``parser``'s transformer run without recursion),
but the checks, the printer, the reference evaluator and every engine walk the tree recursively, so a tree
deeper than ``MAX_DEPTH`` is refused here, before any of them runs. Numbers must fit a float (ints stay
exact below that), windows and durations must be finite in seconds, and an ``EVENTS`` window must be a
count the engines' int64 arithmetic can add to a position. Each limit has its own ``QueryError``.

>>> from cepkit.lang.parser import parse_tree
>>> parse_tree("A a WITHIN 1e309")
Traceback (most recent call last):
...
cepkit.errors.QueryError: line 1, column 5: number out of range: numbers must lie within ±1.8e+308 (the float range; docs/limits.md)
  A a WITHIN 1e309
      ^^^^^^^^^^^^
"""

from __future__ import annotations

import math
import sys
from typing import Optional

from ..errors import QueryError
from . import ast as A

MAX_DEPTH = 100
"""Nesting levels of a query tree: each sub-pattern inside another, each ``not``, unary minus and arithmetic
operator is one level (a sum of n terms is n levels deep; parentheses alone add none)."""

MAX_NUMBER = sys.float_info.max
"""The largest magnitude of a number in a query (ints beyond 2**53 stay exact, but must fit a float)."""

MAX_EVENT_WINDOW = 10**15
"""The largest n of ``WITHIN n EVENTS`` (engines add it to int64 positions)."""


def check_limits(node: A.Node, text: Optional[str] = None) -> None:
    """Raise ``QueryError`` (at the offending node) when ``node`` nests deeper than ``MAX_DEPTH`` or holds a
    number, duration or window out of range. Iterative: it runs on trees too deep for anything else."""
    stack = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise QueryError.at(
                current,
                f"the query nests deeper than {MAX_DEPTH} levels here (each nested "
                "pattern, 'not', unary minus and arithmetic operator is a level; a sum "
                "of n terms is n levels deep): write it flatter (docs/limits.md)",
                text,
            )
        _check_values(current, text)
        level = 0 if isinstance(current, A.QueryNode) else 1
        stack.extend((child, depth + level) for child in current.children())


def _check_values(node: A.Node, text: Optional[str]) -> None:
    if isinstance(node, A.Literal) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        _check_number(node, node.value, text)
    elif isinstance(node, A.Duration):
        _check_number(node, node.amount, text)
        if not math.isfinite(node.amount * A.TIME_UNITS[node.unit.lower()]):
            raise QueryError.at(
                node,
                f"duration out of range: a duration must be at most {MAX_NUMBER:.1e} seconds (docs/limits.md)",
                text,
            )
    elif isinstance(node, A.Window):
        _check_number(node, node.amount, text)
        if node.events:
            if node.amount > MAX_EVENT_WINDOW:
                raise QueryError.at(
                    node,
                    "event window out of range: WITHIN n EVENTS counts at most 10**15 events (docs/limits.md)",
                    text,
                )
        elif not math.isfinite(node.seconds):
            raise QueryError.at(
                node,
                f"time window out of range: a window must be at most {MAX_NUMBER:.1e} seconds (docs/limits.md)",
                text,
            )


def _check_number(node: A.Node, value, text: Optional[str]) -> None:
    if isinstance(value, float) and math.isfinite(value) or isinstance(value, int) and abs(value) <= MAX_NUMBER:
        return
    raise QueryError.at(
        node, f"number out of range: numbers must lie within ±{MAX_NUMBER:.1e} (the float range; docs/limits.md)", text
    )
