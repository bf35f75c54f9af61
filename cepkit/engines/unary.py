"""Unary conditions (about one event) evaluated over a whole ``Stream`` at once.

The automaton's letters and rcep's local tests ask, for every event, whether a condition on that one event
holds. Over a stream's columns that is a handful of numpy operations (``vector_truth``); conditions numpy
cannot evaluate exactly as the language says (strings against numbers, booleans, huge integers, values
used as conditions, indexed or aggregated attributes) fall back to the reference semantics,
``cepkit.semantics.conditions.holds``, event by event on the events in scope only, so both paths agree.
"""
from __future__ import annotations

from numbers import Number
from typing import Optional

import numpy as np

from ..lang import ast as A
from ..lang.values import ARITH, COMPARE
from ..semantics.conditions import holds


def unary_truth(cond: A.Expr, var: str, columns: "Columns", scope: np.ndarray) -> np.ndarray:
    """Whether ``cond`` (about variable ``var`` only) holds of each event in ``scope`` (False elsewhere)."""
    vector = vector_truth(cond, columns)
    if vector is not None:
        return vector & scope
    out = np.zeros(len(scope), dtype=bool)
    index = np.flatnonzero(scope)
    for i, event in zip(index.tolist(), columns.stream.take(index)):
        out[i] = holds(cond, {var: 0}, (event,))
    return out


class Columns:
    """The stream's columns as the letters read them: the type codes and each attribute's
    (kind, values, present), built on first use from ``Stream.column``."""

    def __init__(self, stream):
        self.stream = stream
        self._cache: dict = {}

    @property
    def type_codes(self) -> tuple:
        """(code of each event's type, the distinct types in code order)."""
        return self.stream.type_codes, self.stream.type_names

    def type_in(self, types: frozenset) -> np.ndarray:
        return self.stream.type_in(types)

    def column(self, attr: str) -> Optional[tuple]:
        """(kind, values, present) with kind "num" (float64) or "str" (object); None if the column holds
        values numpy would compare differently from Python (booleans, strings with numbers, huge integers)."""
        if attr not in self._cache:
            self._cache[attr] = self._build(attr)
        return self._cache[attr]

    def _build(self, attr: str) -> Optional[tuple]:
        n = len(self.stream)
        if attr == "ts":
            return "num", self.stream.times, np.ones(n, dtype=bool)
        if attr == "type":
            return "str", self.stream.types, np.ones(n, dtype=bool)
        column = self.stream.column(attr)
        if column.kind == "num":
            return "num", column.numbers, ~column.null
        if column.kind == "str":
            return "str", column.values, ~column.null
        return None


def vector_truth(cond: A.Expr, columns: Columns) -> Optional[np.ndarray]:
    """Whether ``cond`` holds of each event, column-wise; None when only the reference semantics can say.

    Two-valued as the language says (``cepkit.semantics.conditions``): a comparison with a null is false,
    and ``not`` of it is true.
    """
    if isinstance(cond, A.BoolOp):
        parts = [vector_truth(arg, columns) for arg in cond.args]
        if any(p is None for p in parts):
            return None
        return np.logical_and.reduce(parts) if cond.op == "and" else np.logical_or.reduce(parts)
    if isinstance(cond, A.BoolNot):
        inner = vector_truth(cond.arg, columns)
        return None if inner is None else ~inner
    if isinstance(cond, A.Compare):
        left, right = vector_value(cond.left, columns), vector_value(cond.right, columns)
        if left is None or right is None:
            return None
        (lkind, lval, lok), (rkind, rval, rok) = left, right
        if "null" in (lkind, rkind):
            return np.zeros(len(columns.stream), dtype=bool)
        if lkind != rkind and cond.op not in ("=", "!="):
            return None  # ordering a string against a number is an error the reference reports
        if lkind != rkind:
            hit = np.full(len(columns.stream), cond.op == "!=")
        else:
            with np.errstate(invalid="ignore"):
                hit = np.asarray(COMPARE[cond.op](lval, rval), dtype=bool)
        return hit & lok & rok
    if isinstance(cond, A.In):
        arg = vector_value(cond.arg, columns)
        values = [vector_value(v, columns) for v in cond.values]
        if arg is None or any(v is None for v in values):
            return None
        kind, val, ok = arg
        hit = np.zeros(len(columns.stream), dtype=bool)
        for vkind, vval, vok in values:
            if vkind == kind and kind != "null":
                with np.errstate(invalid="ignore"):
                    hit |= np.asarray(val == vval, dtype=bool) & vok
        return hit & ok
    return None


def vector_value(node, columns: Columns) -> Optional[tuple]:
    """(kind, values, present) of a value expression; scalars broadcast; None if not exactly vectorizable."""
    n = len(columns.stream)
    if isinstance(node, A.Literal):
        value = node.value
        if value is None:
            return "null", None, np.zeros(n, dtype=bool)
        if isinstance(value, bool):
            return None
        if isinstance(value, Number):
            return ("num", float(value), np.ones(n, dtype=bool)) if abs(value) < 2 ** 53 else None
        return "str", value, np.ones(n, dtype=bool)
    if isinstance(node, A.Duration):
        return "num", node.seconds, np.ones(n, dtype=bool)
    if isinstance(node, A.Attr) and node.index is None:
        return columns.column(node.attr)
    if isinstance(node, A.Neg):
        inner = vector_value(node.arg, columns)
        if inner is None or inner[0] != "num":
            return None
        return "num", -inner[1], inner[2]
    if isinstance(node, A.Arith):
        left, right = vector_value(node.left, columns), vector_value(node.right, columns)
        if left is None or right is None or left[0] != "num" or right[0] != "num":
            return None
        (_, lval, lok), (_, rval, rok) = left, right
        ok = lok & rok
        with np.errstate(divide="ignore", invalid="ignore"):
            if node.op == "/":
                zero = np.asarray(rval == 0)
                ok = ok & ~zero
                value = np.asarray(lval, dtype=float) / np.where(zero, 1.0, rval)
            else:
                value = ARITH[node.op](np.asarray(lval, dtype=float), rval)
        return "num", value, ok
    return None
