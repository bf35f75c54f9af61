"""Unary conditions (about one event) evaluated over a whole ``Stream`` at once.

The automaton's letters and rcep's local tests ask, for every event, whether a condition on that one event
holds. Over a stream's columns that is a handful of numpy operations (``vector_truth``: the value rules of
``cepkit.lang.values`` over columns, the same code as the stack's columnar run); what numpy cannot evaluate
exactly as the language says (ordering strings against numbers, a bare non-numeric value used as a
condition, indexed or aggregated attributes) falls back to the reference semantics,
``cepkit.semantics.conditions.holds``, event by event on the events in scope only, so both paths agree.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..lang import ast as A
from ..lang.values import NotVectorizable, condition_values, expression_values
from ..runtime.stream import Stream
from ..semantics.conditions import holds


def unary_truth(cond: A.Expr, var: str, columns: "StreamColumns", scope: np.ndarray) -> np.ndarray:
    """Whether ``cond`` (about variable ``var`` only) holds of each event in ``scope`` (False elsewhere)."""
    vector = vector_truth(cond, columns)
    if vector is not None:
        return vector & scope
    out = np.zeros(len(scope), dtype=bool)
    index = np.flatnonzero(scope)
    for i, event in zip(index.tolist(), columns.stream.take(index)):
        out[i] = holds(cond, {var: 0}, (event,))
    return out


class StreamColumns:
    """A stream's columns as conditions read them: each attribute as (values, null mask, numeric), the
    triple of ``cepkit.lang.values``, built on first use from ``Stream.column``; ``stream`` may also be a
    list of ``Event``s with their positions and times."""

    def __init__(self, stream):
        self.stream = stream if isinstance(stream, Stream) else Stream(stream)
        self.times = self.stream.times
        self._columns: dict = {}

    @property
    def type_codes(self) -> tuple:
        """(code of each event's type, the distinct types in code order)."""
        return self.stream.type_codes, self.stream.type_names

    def type_in(self, types: frozenset) -> np.ndarray:
        return self.stream.type_in(types)

    def column(self, attr: str) -> tuple:
        """(values, null mask, numeric) of an attribute over the stream: float64 numbers (NaN where null)
        when every known value is a number exact in a float64, Python objects otherwise."""
        found = self._columns.get(attr)
        if found is None:
            n = len(self.times)
            if attr == "ts":
                found = (self.times, np.zeros(n, dtype=bool), True)
            elif attr == "type":
                found = (self.stream.types, np.zeros(n, dtype=bool), False)
            else:
                column = self.stream.column(attr)
                numeric = column.kind == "num"
                found = (column.numbers if numeric else column.objects(), column.null, numeric)
            self._columns[attr] = found
        return found

    def exact_column(self, node: A.Attr) -> tuple:
        """``column`` of the attribute ``node`` reads when its known values are all numbers or all strings;
        ``NotVectorizable`` otherwise (booleans, mixed kinds, huge integers: the reference decides them
        event by event, on the events in scope only)."""
        if node.attr not in ("ts", "type") and self.stream.column(node.attr).kind not in ("num", "str"):
            raise NotVectorizable
        return self.column(node.attr)


def vector_truth(cond: A.Expr, columns: StreamColumns) -> Optional[np.ndarray]:
    """Whether ``cond`` holds of each event, column-wise; None when only the reference semantics can say.

    Two-valued as the language says (``cepkit.semantics.conditions``): a comparison with a null is false,
    and ``not`` of it is true.
    """
    try:
        held = condition_values(cond, columns.exact_column)
    except NotVectorizable:
        return None
    return np.broadcast_to(np.asarray(held, dtype=bool), (len(columns.stream),))


def vector_value(node, columns: StreamColumns) -> Optional[tuple]:
    """(kind, values, present) of a value expression over the stream, kind "num" (float64), "str" (any
    other values) or "null" (the constant null); scalars broadcast; None if not exactly vectorizable."""
    try:
        values, null, numeric = expression_values(node, columns.exact_column)
    except NotVectorizable:
        return None
    n = len(columns.stream)
    if values is None and null is True:
        return "null", None, np.zeros(n, dtype=bool)
    return "num" if numeric else "str", values, np.broadcast_to(np.logical_not(null), (n,))
