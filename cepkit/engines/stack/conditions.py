"""Condition trees compiled to Python closures over a binding (variable -> ``Event``).

Conditions are never evaluated with ``eval``: each AST node becomes a small closure once, at compile
time, so the stacks' depth-first construction pays one call per test. Only the stack engine's fragment
is compiled (no Kleene indexing, ``prev`` or aggregates; the engine refuses those before we get here).

The compiler is ``cepkit.lang.compiled``, shared with the other engines; this module only says how an
attribute is read from a binding. The rules are the reference evaluator's: an attribute an event lacks is
null, arithmetic on null (or a division by zero) is null, a comparison with null is false (so is ``!=``),
``null IN (...)`` is false, and ``not`` of a false comparison is true. Ordering values that cannot be
ordered (a string with a number), or arithmetic on a non-number, is an ``EventError`` naming the event's
position and the attribute.

>>> from cepkit import parse
>>> from cepkit.runtime.events import Event
>>> test = compile_condition(parse("A a ; B b WHERE a.v + 1 < b.v").where)
>>> test({"a": Event("A", 0, {"v": 1}), "b": Event("B", 1, {"v": 3})})
True
>>> test({"a": Event("A", 0, {}), "b": Event("B", 1, {"v": 3})})
False
"""

from __future__ import annotations

from typing import Callable, Mapping

from ...lang import ast as A
from ...lang import compiled

Binding = Mapping[str, object]  # var -> cepkit.Event
Test = Callable[[Binding], bool]
Value = Callable[[Binding], object]


def compile_condition(expr: A.Expr) -> Test:
    """A closure ``binding -> bool`` for a condition (see the module docstring for nulls)."""
    return compiled.compile_condition(expr, _access)


def compile_value(expr: A.Expr) -> Value:
    """A closure ``binding -> value`` for an arithmetic expression, a literal or ``x.attr``."""
    return compiled.compile_value(expr, _access)


def _access(expr: A.Expr) -> tuple:
    """How ``x.attr`` is read from a binding, and the position of the event it reads (None: unbound)."""
    if not isinstance(expr, A.Attr):
        raise TypeError(f"cannot compile {type(expr).__name__} in the stack engine")
    var, attr = expr.var, expr.attr
    return (lambda b: b[var].get(attr)), (lambda b: b[var].position if var in b else None)
