"""Conditions compiled once to Python closures with the value rules of ``cepkit.lang.values``.

One compiler serves every engine that evaluates conditions event by event (``cepkit.engines.stack``,
``cepkit.engines.ses``, the keys of ``cepkit.engines.rcep``); they differ only in the *binding* a closure
is called with (variable -> event, a tuple of slots, one event) and so in how an attribute is read. That
is the ``access`` parameter: given a reference node (``A.Attr``, or ``A.Prev``), it returns

* ``read``: ``binding -> value`` (the attribute, null when the event lacks it), and
* ``locate``: ``binding -> position`` of the event ``read`` reads, or None when the binding does not
  bind that variable (an error then names the next attribute that is bound).

Any other leaf (an aggregate, ...) is handed to ``access`` too, which raises ``TypeError`` naming what its
engine cannot compile. Each node becomes one closure at compile time; nothing dispatches on node types
per call, and nothing is passed to ``eval``.

The rules, as the reference evaluator's (``cepkit.semantics.conditions``): arithmetic on a null, or a
division by zero, is null; a comparison with a null is false (``!=`` too) and ``not`` of it true;
``null IN (...)`` is false; a bare value used as a condition holds when it is neither null nor falsy.
Ordering values that cannot be ordered, or arithmetic on a non-number, is an ``EventError`` naming the
position and attribute of the first event attribute of the comparison (of the offending operand, for
arithmetic), with the messages of ``cepkit.lang.values``.

>>> from cepkit.runtime.events import Event
>>> from cepkit.lang.parser import parse_tree
>>> def access(node):      # binding: a dict var -> Event
...     var, attr = node.var, node.attr
...     return (lambda b: b[var].get(attr)), (lambda b: b[var].position if var in b else None)
>>> test = compile_condition(parse_tree("A a ; B b WHERE a.v / b.v < 2").where, access)
>>> test({"a": Event("A", 0, {"v": 1}), "b": Event("B", 1, {"v": 3})})
True
>>> test({"a": Event("A", 0, {"v": 1}), "b": Event("B", 1, {"v": 0})})    # 1 / 0 is null
False
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

from ..errors import EventError
from . import ast as A
from .values import arith, cannot_compare, compare, is_number, member, not_a_number, truthy

Reader = Callable[[object], object]  # binding -> value
Locator = Callable[[object], Optional[int]]  # binding -> position of the event read, or None
Access = Callable[[A.Expr], Tuple[Reader, Locator]]
Test = Callable[[object], bool]


def compile_condition(expr: A.Expr, access: Access) -> Test:
    """A closure ``binding -> bool`` for a condition (``and``/``or``/``not``, comparisons, ``IN``, or a bare
    value, which holds when it is neither null nor falsy)."""
    if isinstance(expr, A.BoolOp):
        parts = tuple(compile_condition(a, access) for a in expr.args)
        if len(parts) == 2:
            first, second = parts
            if expr.op == "and":
                return lambda b: first(b) and second(b)
            return lambda b: first(b) or second(b)
        if expr.op == "and":
            return lambda b: all(p(b) for p in parts)
        return lambda b: any(p(b) for p in parts)
    if isinstance(expr, A.BoolNot):
        inner = compile_condition(expr.arg, access)
        return lambda b: not inner(b)
    if isinstance(expr, A.Compare):
        return _compare(expr, access)
    if isinstance(expr, A.In):
        arg = compile_value(expr.arg, access)
        options = tuple(compile_value(v, access) for v in expr.values)

        return lambda b: member(arg(b), (o(b) for o in options))
    value = compile_value(expr, access)
    return lambda b: truthy(value(b))


def compile_value(expr: A.Expr, access: Access) -> Callable[[object], object]:
    """A closure ``binding -> value`` for a literal, an attribute, arithmetic, or a condition used as a
    value (a bool)."""
    if isinstance(expr, A.Literal):
        constant = expr.value
        return lambda b: constant
    if isinstance(expr, A.Duration):
        seconds = expr.seconds
        return lambda b: seconds
    if isinstance(expr, A.Neg):
        return _negate(expr, access)
    if isinstance(expr, A.Arith):
        return _arith(expr, access)
    if isinstance(expr, (A.Compare, A.In, A.BoolOp, A.BoolNot)):
        return compile_condition(expr, access)
    read, _ = access(expr)  # Attr, Prev; the accessor raises TypeError on what its engine lacks
    return read


def blame(expr: A.Expr, access: Access) -> Callable[[object], tuple]:
    """``binding -> (position, attribute)`` of the first event attribute ``expr`` reads that the binding
    binds, ``(-1, "?")`` if none: whom an ``EventError`` names."""
    refs = []
    for node in expr.walk():
        if isinstance(node, A.Prev):
            refs.append((access(node)[1], node.arg.attr))
        elif isinstance(node, A.Attr):
            refs.append((access(node)[1], node.attr))
    refs = tuple(refs)

    def where(b) -> tuple:
        for locate, attr in refs:
            position = locate(b)
            if position is not None:
                return position, attr
        return -1, "?"

    return where


def _compare(expr: A.Compare, access: Access) -> Test:
    left, right = compile_value(expr.left, access), compile_value(expr.right, access)
    op, where = expr.op, blame(expr, access)

    def compared(b):
        x, y = left(b), right(b)
        try:
            return compare(op, x, y)
        except TypeError:
            raise EventError(*where(b), cannot_compare(op, x, y)) from None

    return compared


def _negate(expr: A.Neg, access: Access):
    inner, where = compile_value(expr.arg, access), blame(expr.arg, access)

    def negate(b):
        value = inner(b)
        if value is None:
            return None
        if not is_number(value):
            raise EventError(*where(b), not_a_number(value))
        return -value

    return negate


def _arith(expr: A.Arith, access: Access):
    left, right = compile_value(expr.left, access), compile_value(expr.right, access)
    op = expr.op
    left_where, right_where = blame(expr.left, access), blame(expr.right, access)

    def computed(b):
        x, y = left(b), right(b)
        if x is None or y is None:
            return None
        if not is_number(x):
            raise EventError(*left_where(b), not_a_number(x))
        if not is_number(y):
            raise EventError(*right_where(b), not_a_number(y))
        return arith(op, x, y)

    return computed
