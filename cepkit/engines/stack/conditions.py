"""Condition trees compiled to Python closures over a binding (variable -> ``Event``).

Conditions are never evaluated with ``eval``: each AST node becomes a small closure once, at compile
time, so the stacks' depth-first construction pays one call per test. Only the stack engine's fragment
is compiled (no Kleene indexing, ``prev`` or aggregates; the engine refuses those before we get here).

The rules are the reference evaluator's (``cepkit.lang.values``, inlined here for speed): an attribute
an event lacks is null, arithmetic on null (or a division by zero) is null, a comparison with null is
false (so is ``!=``), ``null IN (...)`` is false, and ``not`` of a false comparison is true. Ordering
values that cannot be ordered (a string with a number), or arithmetic on a non-number, is an
``EventError`` naming the event's position and the attribute.

>>> from cepkit import parse
>>> from cepkit.runtime.events import Event
>>> test = compile_condition(parse("A a ; B b WHERE a.v + 1 < b.v").where)
>>> test({"a": Event("A", 0, {"v": 1}), "b": Event("B", 1, {"v": 3})})
True
>>> test({"a": Event("A", 0, {}), "b": Event("B", 1, {"v": 3})})
False
"""
from __future__ import annotations

from numbers import Number
from typing import Callable, Mapping

from ...errors import EventError
from ...lang import ast as A
from ...lang.values import ARITH, COMPARE, cannot_compare, not_a_number

Binding = Mapping[str, object]   # var -> cepkit.Event
Test = Callable[[Binding], bool]
Value = Callable[[Binding], object]


def compile_condition(expr: A.Expr) -> Test:
    """A closure ``binding -> bool`` for a condition (see the module docstring for nulls)."""
    if isinstance(expr, A.BoolOp):
        parts = tuple(compile_condition(a) for a in expr.args)
        if expr.op == "and":
            return lambda b: all(p(b) for p in parts)
        return lambda b: any(p(b) for p in parts)
    if isinstance(expr, A.BoolNot):
        inner = compile_condition(expr.arg)
        return lambda b: not inner(b)
    if isinstance(expr, A.Compare):
        return _compare(expr, compile_value(expr.left), compile_value(expr.right))
    if isinstance(expr, A.In):
        arg = compile_value(expr.arg)
        options = tuple(compile_value(v) for v in expr.values)

        def is_in(b):
            value = arg(b)
            return value is not None and any(value == o(b) for o in options)
        return is_in
    value = compile_value(expr)   # a bare value used as a condition: true when truthy and not null
    return lambda b: bool(value(b))


def _blame(expr: A.Expr, b: Binding) -> tuple:
    """(position, attribute) of the first event attribute ``expr`` reads, for error messages."""
    for node in expr.walk():
        if isinstance(node, A.Attr) and node.var in b:
            return b[node.var].position, node.attr
    return -1, "?"


def _compare(expr: A.Compare, left: Value, right: Value) -> Test:
    op = COMPARE[expr.op]

    def compare(b):
        x, y = left(b), right(b)
        if x is None or y is None:
            return False
        try:
            return bool(op(x, y))
        except TypeError:
            position, field = _blame(expr, b)
            raise EventError(position, field, cannot_compare(expr.op, x, y)) from None
    return compare


def compile_value(expr: A.Expr) -> Value:
    """A closure ``binding -> value`` for an arithmetic expression, a literal or ``x.attr``."""
    if isinstance(expr, A.Literal):
        constant = expr.value
        return lambda b: constant
    if isinstance(expr, A.Duration):
        seconds = expr.seconds
        return lambda b: seconds
    if isinstance(expr, A.Attr):
        var, attr = expr.var, expr.attr
        return lambda b: b[var].get(attr)
    if isinstance(expr, A.Neg):
        inner = compile_value(expr.arg)

        def negate(b):
            value = inner(b)
            if value is None:
                return None
            if not isinstance(value, Number):
                position, field = _blame(expr.arg, b)
                raise EventError(position, field, not_a_number(value))
            return -value
        return negate
    if isinstance(expr, A.Arith):
        op, left, right = ARITH[expr.op], compile_value(expr.left), compile_value(expr.right)

        def arith(b):
            x, y = left(b), right(b)
            if x is None or y is None:
                return None
            for value, side in ((x, expr.left), (y, expr.right)):
                if not isinstance(value, Number):
                    position, field = _blame(side, b)
                    raise EventError(position, field, not_a_number(value))
            if expr.op == "/" and y == 0:
                return None
            return op(x, y)
        return arith
    if isinstance(expr, (A.Compare, A.In, A.BoolOp, A.BoolNot)):
        return compile_condition(expr)
    raise TypeError(f"cannot compile {type(expr).__name__} in the stack engine")
