"""A finite stream as columns, and conditions evaluated over many candidate rows at once.

The columnar run (``batch``) binds each variable to an *array* of event indices, one per partial match,
so a condition is evaluated for all rows with a handful of numpy operations instead of one closure call
per row: ``x.attr`` is a gather from that attribute's column, comparisons and arithmetic are ufuncs.

The value rules are ``cepkit.lang.values``' (the closures of ``conditions.py`` follow them too): a
missing attribute is null, arithmetic with a null is null and so is a division by zero, a comparison
with a null is false (``!=`` included), ``not`` of a false comparison is true. A column whose non-null
values are all real numbers (exact in a float64) is a float64 array; any other column is an object
array on which numpy applies Python's own operators element by element. Whatever numpy cannot decide
the same way (a bare value used as a condition on an object column, arithmetic on non-numbers,
ordering a string against a number) is evaluated row by row by the compiled closures, which raise the
``EventError`` naming the event and the field, exactly as the stacks do.

>>> from cepkit import parse
>>> from cepkit.runtime.events import Event
>>> events = [Event("A", 0, {"v": 1}, 0, 0.0), Event("B", 1, {"v": 3}, 1, 1.0), Event("B", 2, {}, 2, 2.0)]
>>> table = Columns(events)
>>> rows = {"a": np.array([0, 0]), "b": np.array([1, 2])}
>>> table.test(parse("A a ; B b WHERE a.v + 1 < b.v").where, rows)
array([ True, False])
"""
from __future__ import annotations

import operator
from numbers import Real

import numpy as np
import pandas as pd

from ...lang import ast as A
from ...runtime.attribute_columns import EXACT_FLOAT, hashable_key
from ...runtime.stream import Stream
from .conditions import compile_condition

_UFUNC = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
          ">=": operator.ge, "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


class RowByRow(Exception):
    """Raised inside the vectorized evaluator when numpy cannot follow the value rules exactly."""


class Column:
    """One attribute over the stream: ``values`` (float64 or object), ``null`` mask, ``numeric``."""
    __slots__ = ("values", "null", "numeric")

    def __init__(self, values: np.ndarray, null: np.ndarray, numeric: bool):
        self.values, self.null, self.numeric = values, null, numeric


class Columns:
    """A finite stream (a ``Stream``, or a list of ``Event``s with their positions and times) as the
    columns conditions read, built on first use from the stream's own columns.

    ``test(cond, rows)`` evaluates a condition for every row: ``rows`` maps each variable the condition
    mentions to an array of event indices (into the stream), all of one length.
    """

    def __init__(self, stream):
        self.stream = stream if isinstance(stream, Stream) else Stream(stream)
        self.times = self.stream.times
        self._columns: dict = {}
        self._closures: dict = {}

    def column(self, attr: str) -> Column:
        found = self._columns.get(attr)
        if found is None:
            n = len(self.times)
            if attr == "ts":
                found = Column(self.times, np.zeros(n, dtype=bool), True)
            elif attr == "type":
                found = Column(self.stream.types, np.zeros(n, dtype=bool), False)
            else:
                column = self.stream.column(attr)
                numeric = column.kind == "num"
                found = Column(column.numbers if numeric else column.objects(), column.null, numeric)
            self._columns[attr] = found
        return found

    def codes(self, wanted: list) -> list:
        """Equality classes: for each (attribute, event indices) of ``wanted``, an int64 array numbering the
        values, one numbering for all, equal codes exactly for values Python finds equal; -1 for null.

        >>> from cepkit.runtime.events import Event
        >>> table = Columns([Event("A", 0, {"k": 1}, 0, 0.0), Event("B", 1, {"j": 1.0}, 1, 1.0),
        ...                  Event("A", 2, {"k": 7}, 2, 2.0)])
        >>> table.codes([("k", np.array([0, 1, 2])), ("j", np.array([1]))])
        [array([ 0, -1,  1]), array([0])]
        """
        columns = [(self.column(attr), index) for attr, index in wanted]
        out = [np.full(len(index), -1, dtype=np.int64) for _, index in wanted]
        known = [~column.null[index] for column, index in columns]
        numeric = all(column.numeric for column, _ in columns)
        joined = [column.values[index][mask] for (column, index), mask in zip(columns, known)]
        if not numeric:       # Python's equality, as a dict's (1 = 1.0); pandas hashes objects that way
            joined = [values.astype(object) for values in joined]
        joined = np.concatenate(joined) if joined else np.zeros(0)
        try:
            inverse = pd.factorize(joined)[0]
        except TypeError:     # unhashable values (lists, dicts): numbered by their contents
            inverse = pd.factorize(np.fromiter(map(hashable_key, joined), dtype=object, count=len(joined)))[0]
        start = 0
        for codes, mask in zip(out, known):
            codes[mask] = inverse[start:start + int(mask.sum())]
            start += int(mask.sum())
        return out

    def test(self, cond: A.Expr, rows: dict, size: int = None) -> np.ndarray:
        """Boolean array: does ``cond`` hold for each row? (Row by row through the closures if numpy cannot.)
        ``size`` is the number of rows, needed when ``rows`` binds no variable (a condition on constants, or
        over unnamed atoms: ``SEQ(A, B) WHERE 1 = 2``)."""
        if size is None:
            size = len(next(iter(rows.values()))) if rows else 1
        try:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                held = self._cond(cond, rows)
        except RowByRow:
            held = self._row_by_row(cond, rows, size)
        return np.broadcast_to(np.asarray(held, dtype=bool), (size,))

    def _row_by_row(self, cond: A.Expr, rows: dict, size: int) -> np.ndarray:
        test = self._closures.get(id(cond))
        if test is None:
            test = self._closures[id(cond)] = (cond, compile_condition(cond))
        test, events = test[1], self.stream.events
        names = list(rows)
        columns = [rows[v].tolist() for v in names]
        return np.fromiter((test({v: events[i] for v, i in zip(names, row)}) for row in zip(*columns)),
                           dtype=bool, count=size) if names else np.full(size, test({}))

    # ------------------------------------------------------------------ conditions -> bool arrays
    def _cond(self, expr, rows):
        if isinstance(expr, A.BoolOp):
            parts = [self._cond(a, rows) for a in expr.args]
            combine = np.logical_and if expr.op == "and" else np.logical_or
            out = parts[0]
            for part in parts[1:]:
                out = combine(out, part)
            return out
        if isinstance(expr, A.BoolNot):
            return np.logical_not(self._cond(expr.arg, rows))
        if isinstance(expr, A.Compare):
            return self._compare(expr.op, self._value(expr.left, rows), self._value(expr.right, rows))
        if isinstance(expr, A.In):
            arg = self._value(expr.arg, rows)
            held = False
            for option in expr.values:
                held = np.logical_or(held, self._compare("=", arg, self._value(option, rows)))
            return held
        values, null, numeric = self._value(expr, rows)   # a bare value: true when not null and truthy
        if not numeric:
            raise RowByRow
        return np.logical_and(np.logical_not(null), values != 0)

    def _compare(self, op: str, left, right):
        (x, x_null, x_num), (y, y_null, y_num) = left, right
        known = np.logical_not(np.logical_or(x_null, y_null))
        if x_num and y_num:
            return np.logical_and(known, _UFUNC[op](x, y))
        # Python's operators, element by element, on the rows where both sides are known
        x, y = _as_objects(x), _as_objects(y)
        held = np.zeros(np.broadcast(x, y, known).shape, dtype=bool)
        try:
            if not held.shape:
                return bool(known) and bool(_UFUNC[op](x, y))
            mask = np.broadcast_to(known, held.shape)
            held[mask] = np.asarray(_UFUNC[op](_pick(x, mask), _pick(y, mask)), dtype=bool)
        except TypeError:
            raise RowByRow from None   # e.g. a string ordered against a number: the closures blame the event
        return held

    def _value(self, expr, rows) -> tuple:
        """(values, null mask, numeric) of an expression; scalars for constants."""
        if isinstance(expr, A.Literal):
            value = expr.value
            if _is_number(type(value)) and abs(value) <= EXACT_FLOAT:
                return float(value), False, True
            return value, value is None, False
        if isinstance(expr, A.Duration):
            return float(expr.seconds), False, True
        if isinstance(expr, A.Attr) and expr.index is None:
            column, at = self.column(expr.attr), rows[expr.var]
            return column.values[at], column.null[at], column.numeric
        if isinstance(expr, A.Neg):
            values, null, numeric = self._value(expr.arg, rows)
            if not numeric:
                raise RowByRow
            return -values, null, True
        if isinstance(expr, A.Arith):
            (x, x_null, x_num), (y, y_null, y_num) = self._value(expr.left, rows), self._value(expr.right, rows)
            if not (x_num and y_num):
                raise RowByRow
            null = np.logical_or(x_null, y_null)
            if expr.op == "/":
                null = np.logical_or(null, np.equal(y, 0))
            # numpy scalars: a division of two constants by zero is nan (masked as null), not an exception
            return _UFUNC[expr.op](np.float64(x) if np.isscalar(x) else x, y), null, True
        raise RowByRow


def _is_number(kind: type) -> bool:
    return issubclass(kind, Real) and not issubclass(kind, (bool, np.bool_))


def _as_objects(values):
    return values.astype(object) if isinstance(values, np.ndarray) and values.dtype != object else values


def _pick(values, mask):
    return values[mask] if isinstance(values, np.ndarray) and values.shape else values
