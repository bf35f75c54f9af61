"""Unary predicates of a complex event automaton and the letters they make (digest 004 §5).

Every transition of a CEA carries a unary predicate (a ``Guard``: a type test and a condition on the
event). The lazily determinized automaton reads, instead of an event, its **letter**: the bit vector of
the distinct tests the guards are made of, each test evaluated once per event (digest 004 §5 "[beyond,
from the prototype] evaluate every predicate once per event into a bit vector"). Over a batch the tests
are evaluated column-wise with numpy; conditions numpy cannot evaluate exactly as the language says
(strings against numbers, booleans, values used as conditions) fall back to the reference semantics,
``cepkit.semantics.conditions.holds``, event by event, so both paths give the same letters.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Number
from typing import Optional, Sequence

import numpy as np

from ...lang import ast as A
from ...lang.printer import _Printer
from ...lang.values import ARITH, COMPARE
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
    return cond.transform(lambda n: A.Attr(EVENT, n.attr, n.index) if isinstance(n, A.Attr) and n.var == var
                          else n)


class Alphabet:
    """The tests (bits) the guards are made of, and each guard's bit mask.

    A letter is an int whose bit ``i`` says whether test ``i`` holds of the event; a guard holds of an
    event iff ``letter & mask == mask``. The TRUE guard has mask 0.
    """

    def __init__(self, guards: Sequence[Guard]):
        self.tests: list = []            # ("type", frozenset) | ("cond", Expr)
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
        # evaluates a filter only on events bound to its variable): the type tests paired with it.
        self._scopes = {}
        for guard in guards:
            if guard.cond is not None:
                scope = self._scopes.setdefault(guard.cond, set())
                scope.add(guard.types)

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
    def letters_of(self, columns: "Columns") -> np.ndarray:
        """The letter of every event of a stream (its ``Columns``; uint64, Python ints past 63 tests),
        column-wise: the type tests once per distinct type, each condition once over its events."""
        stream = columns.stream
        n = len(stream)
        wide = len(self.tests) > 63
        codes, types = columns.type_codes
        by_type = [sum(1 << i for i, (kind, payload) in enumerate(self.tests) if kind == "type" and t in payload)
                   for t in types]
        letters = np.array(by_type, dtype=object if wide else np.uint64)[codes] if n else \
            np.zeros(0, dtype=object if wide else np.uint64)
        for i, (kind, payload) in enumerate(self.tests):
            if kind == "cond":
                scope = np.zeros(n, dtype=bool)
                for accepted in self._scopes[payload]:
                    scope |= True if accepted is None else columns.type_in(accepted)
                hit = self._condition(payload, columns, scope, stream)
                letters[hit] |= (1 << i) if wide else np.uint64(1 << i)
        return letters

    @staticmethod
    def _condition(cond, columns, scope, stream) -> np.ndarray:
        vector = vector_truth(cond, columns)
        if vector is not None:
            return vector & scope
        out = np.zeros(len(scope), dtype=bool)
        events = stream.events
        for i in np.flatnonzero(scope).tolist():
            out[i] = holds(cond, {EVENT: 0}, (events[i],))
        return out


def _tests_of(guard: Guard) -> list:
    tests = []
    if guard.types is not None:
        tests.append(("type", guard.types))
    if guard.cond is not None:
        tests.append(("cond", guard.cond))
    return tests


# ----------------------------------------------------------------------------- column-wise evaluation
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
        left, right = _vector_value(cond.left, columns), _vector_value(cond.right, columns)
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
        arg = _vector_value(cond.arg, columns)
        values = [_vector_value(v, columns) for v in cond.values]
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


def _vector_value(node, columns: Columns) -> Optional[tuple]:
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
        inner = _vector_value(node.arg, columns)
        if inner is None or inner[0] != "num":
            return None
        return "num", -inner[1], inner[2]
    if isinstance(node, A.Arith):
        left, right = _vector_value(node.left, columns), _vector_value(node.right, columns)
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
