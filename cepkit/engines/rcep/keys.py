"""Join keys: the value one side of a join or chain predicate reads from one event, and how columns of
such values compare, with the language's value rules (keys are compiled by ``cepkit.lang.compiled``;
never ``eval``).

``f(x) φ g(y)`` is evaluated as ``key_f(event of x) φ key_g(event of y)``: every key is computed once per
event when the event enters its tree ([RCEP] §3.5, Algorithm 1, step 1), never again per pair. A column of keys
is float64 with a validity mask (null keys compare false, docs/language.md §10) while every key is a number a double holds
exactly; a string or a huge integer turns it into a column of Python objects compared value by value.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...errors import EventError
from ...lang import ast as A
from ...lang.compiled import compile_value
from ...lang.values import COMPARE, cannot_compare, compare

EXACT = 2**53  # integers below this in magnitude are exact as doubles


def key_function(expr: A.Expr) -> Callable:
    """``event -> value`` for a plain value over one event (attributes, literals, arithmetic; a ``prev``
    or ``b[i-1]`` side of a chain predicate reads the event it is given). Null in, null out.

    >>> from cepkit.runtime.events import Event
    >>> from cepkit.lang.parser import parse_tree
    >>> key = key_function(parse_tree("A a WHERE a.amount * 5 > 0").where.left)
    >>> key(Event("A", 0, {"amount": 3})), key(Event("A", 0, {}))
    (15, None)
    """
    for node in expr.walk():
        if not isinstance(node, _PLAIN):
            raise TypeError(f"not a plain value: {type(node).__name__}")
    return compile_value(expr, _on_event)


_PLAIN = (A.Literal, A.Duration, A.Attr, A.Prev, A.Neg, A.Arith)


def _on_event(expr: A.Expr) -> tuple:
    """How ``cepkit.lang.compiled`` reads ``x.attr`` (or ``prev(x.attr)``) from the one event of a key."""
    attr = (expr.arg if isinstance(expr, A.Prev) else expr).attr
    return (lambda event: event.get(attr)), (lambda event: event.position)


def is_exact_number(value) -> bool:
    """Whether a key can live in a float64 column without changing how it compares."""
    if isinstance(value, float):
        return True
    return isinstance(value, (int, np.integer)) and -EXACT < value < EXACT


class KeyColumn:
    """A growable column of keys in arrival order: ``values`` (float64, or object once a key is not an
    exact number) and ``valid`` (False where the key is null)."""

    def __init__(self, capacity: int = 64):
        self.values = np.zeros(capacity)
        self.valid = np.zeros(capacity, dtype=bool)

    def set(self, i: int, value) -> None:
        if i >= len(self.values):
            self.grow(max(2 * len(self.values), i + 1))
        if value is not None and self.values.dtype != object and not is_exact_number(value):
            self.values = self.values.astype(object)
        self.values[i] = 0.0 if value is None and self.values.dtype != object else value
        self.valid[i] = value is not None

    def grow(self, capacity: int) -> None:
        values = np.zeros(capacity, dtype=self.values.dtype)
        values[: len(self.values)] = self.values
        valid = np.zeros(capacity, dtype=bool)
        valid[: len(self.valid)] = self.valid
        self.values, self.valid = values, valid

    def shift(self, start: int, stop: int) -> None:
        """Drop rows before ``start`` (expired events), keep rows up to ``stop``."""
        n = stop - start
        self.values[:n] = self.values[start:stop]
        self.valid[:n] = self.valid[start:stop]


def compare_arrays(op: str, left, left_valid, right, right_valid, blame=None) -> np.ndarray:
    """Element-wise (broadcast) ``left op right`` with nulls false; values that cannot be ordered raise
    the ``EventError`` of the reference (``blame(i, j)`` gives (position, attribute) of a culprit)."""
    mask = left_valid & right_valid
    if left.dtype != object and right.dtype != object:
        return COMPARE[op](left, right) & mask
    # Python's own values on both sides: a float64 beside a huge int would make numpy convert the int
    left, right, mask = np.broadcast_arrays(left.astype(object), right.astype(object), mask)
    out = np.zeros(mask.shape, dtype=bool)
    for index in zip(*np.nonzero(mask)):
        a, b = left[index], right[index]
        try:
            out[index] = compare(op, a, b)
        except TypeError:
            position, attr = blame(index) if blame is not None else (-1, "?")
            raise EventError(position, attr, cannot_compare(op, a, b)) from None
    return out
