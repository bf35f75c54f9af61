"""How condition values behave (docs/language.md §3 and §10), in one place for every evaluator.

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

COMPARE = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
           ">=": operator.ge}
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


def truthy(value) -> bool:
    """Whether a value used as a condition holds: not null and true in Python's sense (docs/language.md §10)."""
    return value is not None and bool(value)


def cannot_compare(op: str, a, b) -> str:
    """The message of the ``EventError`` for values that cannot be compared, the same in every engine."""
    return f"cannot compare {a!r} ({type(a).__name__}) {op} {b!r} ({type(b).__name__})"


def not_a_number(value) -> str:
    """The message of the ``EventError`` for arithmetic on a non-number, the same in every engine."""
    return f"expected a number, got {value!r} ({type(value).__name__})"
