"""How condition values behave (docs/language.md §3 and §10), in one place for every evaluator: one value
at a time (``compare``, ``arith``, ``truthy``...) and over columns (``condition_values``).

The reference evaluator (``cepkit.semantics.conditions``) and the engines' compiled conditions
(``cepkit.engines.ses``, ``cepkit.engines.stack``, ``cepkit.engines.automaton``) all follow these rules:
a comparison with a null operand is false, arithmetic with a null is null, a division by zero is null,
and a value used as a condition holds when it is neither null nor falsy. Values that cannot be compared
raise ``TypeError`` here; each evaluator turns it into an ``EventError`` blaming its own event and field,
with the messages below.

>>> compare("<", 1, 2), compare("!=", None, 2), arith("/", 1, 0), arith("+", None, 1), truthy(0)
(True, False, None, None, False)
"""

from __future__ import annotations

import operator
from numbers import Number, Real

import numpy as np

from . import ast as A

COMPARE = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
"""The comparison operators of the language, by symbol: one table so every evaluator agrees."""

ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
"""The arithmetic operators of the language, by symbol: one table so every evaluator agrees."""


def compare(op: str, a, b) -> bool:
    """``a op b``, false when either is null (two-valued, docs/language.md §10); ``TypeError`` if they cannot be compared."""
    if a is None or b is None:
        return False
    return bool(COMPARE[op](a, b))


def arith(op: str, a, b):
    """``a op b`` on numbers, null when either is null or on a division by zero (no exception, docs/language.md §10)."""
    if a is None or b is None:
        return None
    if op == "/" and b == 0:
        return None
    return ARITH[op](a, b)


def member(value, options) -> bool:
    """``value IN (options)``: false for a null value; Python's equality otherwise (``options`` may be a
    generator: it is read until a match)."""
    return value is not None and any(value == option for option in options)


def is_number(value) -> bool:
    """Whether arithmetic accepts ``value`` (a Python or numpy number; a bool counts, as in Python)."""
    return isinstance(value, Number)


def truthy(value) -> bool:
    """Whether a value used as a condition holds: not null and true in Python's sense (docs/language.md §10)."""
    return value is not None and bool(value)


def cannot_compare(op: str, a, b) -> str:
    """The message of the ``EventError`` for values that cannot be compared, the same in every engine."""
    return f"cannot compare {a!r} ({type(a).__name__}) {op} {b!r} ({type(b).__name__})"


def not_a_number(value) -> str:
    """The message of the ``EventError`` for arithmetic on a non-number, the same in every engine."""
    return f"expected a number, got {value!r} ({type(value).__name__})"


# ----------------------------------------------------------------------------- over columns
# The same rules over numpy arrays, for the evaluators that test a condition for many events or rows at
# once (``cepkit.engines.unary``: every event of a stream; ``cepkit.engines.stack.columns``: every partial
# match). A value is a triple ``(values, null, numeric)``: an array or a scalar, a boolean null mask (or
# bool) of the same shape, and whether ``values`` are float64 numbers (exact, NaN where null); other
# values are Python objects, on which numpy applies Python's own operators element by element. What
# numpy cannot decide as the rules say raises ``NotVectorizable``: the caller evaluates event by event.

EXACT_FLOAT = 2**53  # integers up to this size are exact in a float64


class NotVectorizable(Exception):
    """numpy cannot follow the value rules exactly here (ordering a string against a number, arithmetic
    on a non-number, a bare non-numeric value as a condition, an indexed attribute or an aggregate)."""


def is_exact_number(value) -> bool:
    """Whether ``value`` is a real number (not a bool) that a float64 holds exactly enough to compare."""
    return isinstance(value, Real) and not isinstance(value, (bool, np.bool_)) and abs(value) <= EXACT_FLOAT


def literal_values(value) -> tuple:
    """The triple of a constant: null, a float64 number, or a Python object."""
    if value is None:
        return None, True, False
    if is_exact_number(value):
        return float(value), False, True
    return value, False, False


def condition_values(cond, leaf):
    """Whether ``cond`` holds, as a bool array (or a bool, for a condition on constants only): the rules of
    ``holds`` over columns. ``leaf(node)`` gives the triple of an attribute reference (``A.Attr`` without
    index) and raises ``NotVectorizable`` for what its caller cannot read as a column."""
    if isinstance(cond, A.BoolOp):
        combine = np.logical_and if cond.op == "and" else np.logical_or
        out = condition_values(cond.args[0], leaf)
        for arg in cond.args[1:]:
            out = combine(out, condition_values(arg, leaf))
        return out
    if isinstance(cond, A.BoolNot):
        return np.logical_not(condition_values(cond.arg, leaf))
    if isinstance(cond, A.Compare):
        return compare_values(cond.op, expression_values(cond.left, leaf), expression_values(cond.right, leaf))
    if isinstance(cond, A.In):
        arg = expression_values(cond.arg, leaf)
        held = False
        for option in cond.values:
            held = np.logical_or(held, compare_values("=", arg, expression_values(option, leaf)))
        return held
    values, null, numeric = expression_values(cond, leaf)  # a bare value: not null and truthy
    if not numeric:
        raise NotVectorizable
    return np.logical_and(np.logical_not(null), values != 0)


def expression_values(expr, leaf) -> tuple:
    """The triple of a value expression (literal, duration, attribute, negation, arithmetic)."""
    if isinstance(expr, A.Literal):
        return literal_values(expr.value)
    if isinstance(expr, A.Duration):
        return float(expr.seconds), False, True
    if isinstance(expr, A.Attr) and expr.index is None:
        return leaf(expr)
    if isinstance(expr, A.Neg):
        values, null, numeric = expression_values(expr.arg, leaf)
        if not numeric:
            raise NotVectorizable
        return -values, null, True
    if isinstance(expr, A.Arith):
        return arith_values(expr.op, expression_values(expr.left, leaf), expression_values(expr.right, leaf))
    raise NotVectorizable


def compare_values(op: str, left: tuple, right: tuple):
    """``compare`` element by element: false where either side is null; Python's operators on objects."""
    (x, x_null, x_num), (y, y_null, y_num) = left, right
    known = np.logical_not(np.logical_or(x_null, y_null))
    with np.errstate(invalid="ignore"):
        if x_num and y_num:
            return np.logical_and(known, COMPARE[op](x, y))
        x, y = _as_objects(x), _as_objects(y)
        held = np.zeros(np.broadcast(x, y, known).shape, dtype=bool)
        try:
            if not held.shape:
                return bool(known) and bool(COMPARE[op](x, y))
            mask = np.broadcast_to(known, held.shape)
            held[mask] = np.asarray(COMPARE[op](_pick(x, mask), _pick(y, mask)), dtype=bool)
        except TypeError:
            raise NotVectorizable from None  # e.g. a string ordered against a number: the caller blames
        return held


def arith_values(op: str, left: tuple, right: tuple) -> tuple:
    """``arith`` element by element on numbers: null where either side is null or on a division by zero."""
    (x, x_null, x_num), (y, y_null, y_num) = left, right
    if not (x_num and y_num):
        raise NotVectorizable
    null = np.logical_or(x_null, y_null)
    if op == "/":
        null = np.logical_or(null, np.equal(y, 0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # numpy scalars: a division of two constants by zero is nan (masked as null), not an exception
        return ARITH[op](np.float64(x) if np.isscalar(x) else x, y), null, True


def _as_objects(values):
    return values.astype(object) if isinstance(values, np.ndarray) and values.dtype != object else values


def _pick(values, mask):
    return values[mask] if isinstance(values, np.ndarray) and values.shape else values
