"""Unary predicates of a complex event automaton and the letters they make ([CEL] §6-7).

Every transition of a CEA carries a unary predicate (a ``Guard``: a type test and a condition on the
event). The lazily determinized automaton reads, instead of an event, its **letter**: the bit vector of
the distinct tests the guards are made of, each test evaluated once per event ([CEL] §6-7 "[beyond,
from the prototype] evaluate every predicate once per event into a bit vector"). Over a batch the tests
are evaluated column-wise with numpy; conditions numpy cannot evaluate exactly as the language says
(strings against numbers, booleans, values used as conditions) fall back to the reference semantics,
``cepkit.semantics.conditions.holds``, event by event, so both paths give the same letters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ...lang import ast as A
from ...lang.printer import _Printer
from ..unary import StreamColumns, unary_truth
from ...semantics.conditions import holds

EVENT = "_event"  # the one variable of a guard's condition: the event the transition reads


@dataclass(frozen=True)
class Guard:
    """The unary predicate of a transition: ``type`` as written (None: any type), the event types it
    accepts (``types``; None: any) and a condition on the event (variable ``EVENT``; None: TRUE)."""

    type: Optional[str] = None
    types: Optional[frozenset] = None
    cond: Optional[A.Expr] = None

    @property
    def is_true(self) -> bool:
        return self.types is None and self.cond is None

    def __str__(self) -> str:
        """``T ∧ tmp > 40``, ``H``, ``TRUE``: the label the paper writes on a transition."""
        parts = ([self.type] if self.type is not None else []) + ([render(self.cond)] if self.cond else [])
        return " ∧ ".join(parts) or "TRUE"


class _EventPrinter(_Printer):
    """Prints a guard's condition with the event's attributes bare (``tmp > 40``), as in Figure 2."""

    def visit_attr(self, n: A.Attr):
        _, precedence = super().visit_attr(n)
        return n.attr, precedence


def render(cond: A.Expr) -> str:
    return _EventPrinter().cond(cond)


def on_event(cond: A.Expr, var: str) -> A.Expr:
    """``cond`` (about variable ``var`` only) rewritten about ``EVENT``, so equal tests on different
    variables share one bit."""
    return cond.transform(lambda n: A.Attr(EVENT, n.attr, n.index) if isinstance(n, A.Attr) and n.var == var else n)


class Alphabet:
    """The tests (bits) the guards are made of, and each guard's bit mask.

    A letter is an int whose bit ``i`` says whether test ``i`` holds of the event; a guard holds of an
    event iff ``letter & mask == mask``. The TRUE guard has mask 0.
    """

    def __init__(self, guards: Sequence[Guard]):
        self.tests: list = []  # ("type", frozenset) | ("cond", Expr)
        index: dict = {}
        self.masks: dict = {}
        for guard in guards:
            mask = 0
            for test in _tests_of(guard):
                if test not in index:
                    index[test] = len(self.tests)
                    self.tests.append(test)
                mask |= 1 << index[test]
            self.masks[guard] = mask
        # A condition is evaluated only on events some guard using it could accept (as the reference
        # evaluates a filter only on events bound to its variable): the type tests paired with it, and
        # their bits (None: some guard accepts any type), which tell the scope from a letter's type bits.
        self._scopes = {}
        self._scope_bits = {}
        for guard in guards:
            if guard.cond is not None:
                scope = self._scopes.setdefault(guard.cond, set())
                scope.add(guard.types)
                bits = self._scope_bits.get(guard.cond, 0)
                self._scope_bits[guard.cond] = (
                    None if bits is None or guard.types is None else bits | 1 << index[("type", guard.types)]
                )

    def __len__(self):
        return len(self.tests)

    def holds(self, guard: Guard, letter: int) -> bool:
        mask = self.masks[guard]
        return letter & mask == mask

    # ------------------------------------------------------------------ one event
    def letter_of(self, event) -> int:
        """The letter of one ``cepkit.Event`` (reference semantics for conditions)."""
        letter = 0
        for i, (kind, payload) in enumerate(self.tests):
            if kind == "type":
                hit = event.type in payload
            else:
                hit = self._in_scope(payload, event.type) and holds(payload, {EVENT: 0}, (event,))
            letter |= int(hit) << i
        return letter

    def _in_scope(self, cond, event_type) -> bool:
        return any(types is None or event_type in types for types in self._scopes[cond])

    # ------------------------------------------------------------------ a whole stream
    def letters_of(self, columns: "StreamColumns") -> np.ndarray:
        """The letter of every event of a stream (its ``StreamColumns``; the smallest unsigned integers that
        hold a bit per test, Python ints past 63 tests), column-wise: the type tests once per distinct
        type, each condition once over its events (those whose type bits a guard using it accepts)."""
        stream = columns.stream
        n = len(stream)
        dtype = next(
            (t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if len(self.tests) <= 8 * t().itemsize), object
        )
        codes, types = columns.type_codes
        by_type = [
            sum(1 << i for i, (kind, payload) in enumerate(self.tests) if kind == "type" and t in payload)
            for t in types
        ]
        letters = np.array(by_type, dtype=dtype)[codes] if n else np.zeros(0, dtype=dtype)
        for i, (kind, payload) in enumerate(self.tests):
            if kind == "cond":
                bits = self._scope_bits[payload]
                scope = (
                    np.ones(n, dtype=bool)
                    if bits is None
                    else np.asarray((letters & (bits if dtype is object else dtype(bits))) != 0, dtype=bool)
                )
                hit = self._condition(payload, columns, scope, stream)
                if dtype is object:
                    letters[hit] |= 1 << i
                else:  # (a shifted 0/1 column: no gather and scatter of the events that hit)
                    letters |= hit.astype(dtype) << dtype(i)
        return letters

    @staticmethod
    def _condition(cond, columns, scope, stream) -> np.ndarray:
        return unary_truth(cond, EVENT, columns, scope)


def _tests_of(guard: Guard) -> list:
    tests = []
    if guard.types is not None:
        tests.append(("type", guard.types))
    if guard.cond is not None:
        tests.append(("cond", guard.cond))
    return tests
