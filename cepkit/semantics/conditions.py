"""Conditions, evaluated by walking their tree (docs/language.md §3 and §10.6; never Python ``eval``).

An environment maps each variable to a logical index of the stream, or, for a variable of a ``+`` seen
outside its iteration, to the tuple of its indices in order. The rules:

- ``and``/``or``/``not`` combine *predicates*; every other condition (a comparison, ``IN``, a bare
  value) is one predicate, and each predicate that mentions a Kleene variable is quantified on its own:
  ``b.v > 5`` holds when it holds for every event of b; with two Kleene variables, for every pair (SES
  Def 3.2); ``prev(b.v) < b.v`` and SASE's ``b[i].v > b[i-1].v`` for every consecutive pair (SES
  ``prev``, RCEP ``NEXT``), vacuously when b has one event. ``b.v > 5 or b.v < 2`` thus means "all above
  5, or all below 2".
- ``first(b).v``, ``last(b).v`` and ``b[k].v`` (1-based) pick one event; an index past the end is null.
  A single (non-Kleene) variable is a sequence of one event for these forms.
- ``count(b)``, ``sum/avg/min/max(b.v)`` aggregate over b; as in SQL, null values are skipped (count
  counts events), and an aggregate over only nulls is null.
- A null or missing attribute, a variable the match does not bind (another OR branch), or a division by
  zero makes the value null, and a comparison with a null is false (two-valued: ``not`` of it is true).
- Durations are seconds; ``x.ts`` is the event's time in seconds; ``x.type`` its type.
- Ordering values that cannot be ordered (a string against a number) is an ``EventError`` naming the
  event and attribute.
"""

from __future__ import annotations

import itertools
from typing import Mapping, Optional, Sequence

from ..errors import EventError
from ..lang import ast as A
from ..lang.values import arith, cannot_compare, compare, is_number, member, not_a_number, truthy


def holds(cond: A.Expr, env: Mapping, events: Sequence) -> bool:
    """Whether ``cond`` holds for the bindings ``env`` (var -> index or tuple of indices into ``events``).

    >>> from cepkit.runtime.events import Event
    >>> from cepkit.lang.parser import parse_tree
    >>> rising = parse_tree("A a WHERE prev(a.v) < a.v").where
    >>> holds(rising, {"a": (0, 1, 2)}, [Event("A", attrs={"v": v}) for v in (1, 2, 3)])
    True
    """
    if isinstance(cond, A.BoolOp):
        test = all if cond.op == "and" else any
        return test(holds(arg, env, events) for arg in cond.args)
    if isinstance(cond, A.BoolNot):
        return not holds(cond.arg, env, events)
    return _Predicate(cond, env, events).holds()


def bound_conditions_hold(conditions, env: Mapping, events: Sequence) -> bool:
    """Whether every ``(cond, per_event)`` whose variables ``env`` binds holds: the test of a partial match
    (STNM's judge). ``per_event`` names the Kleene variable of a condition written inside its ``+``, which
    must hold for each of its events; ``None`` for a condition over the whole bindings."""
    for cond, per_event in conditions:
        if not set(A.variables_in(cond)) <= env.keys():
            continue
        if per_event is None:
            if not holds(cond, env, events):
                return False
        elif not all(holds(cond, {**env, per_event: i}, events) for i in env[per_event]):
            return False
    return True


def readings(cond: A.Expr, env: Mapping, events: Sequence) -> list:
    """What ``cond`` reads, for explaining its verdict (``cepkit.explain``): ``(node, value, index)`` for each
    attribute, ``prev`` and aggregate, ``index`` the logical index of the event read (None for an aggregate or
    an unbound variable). A predicate over Kleene variables is read at the first combination of their events
    where it fails (the last one when it holds); an and/or/not at each Kleene variable's first event."""
    predicate = _Predicate(cond, env, events)
    if not isinstance(cond, (A.BoolOp, A.BoolNot)):
        predicate.holds()  # leaves ``focus`` at the first failing combination
    out = []

    def visit(node):
        if isinstance(node, (A.Attr, A.Prev)):
            ref, index = (node.arg, "i-1") if isinstance(node, A.Prev) else (node, node.index)
            try:
                i = predicate._event(ref.var, index)
            except (KeyError, IndexError):  # prev of a Kleene variable's only event
                i = None
            out.append((node, None if i is None else events[i].get(ref.attr), i))
        elif isinstance(node, A.Agg):
            out.append((node, predicate._aggregate(node), None))
        else:
            for child in node.children():
                visit(child)

    visit(cond)
    return out


class _Predicate:
    """One predicate, quantified over the Kleene variables it mentions element-wise."""

    def __init__(self, expr: A.Expr, env: Mapping, events: Sequence):
        self.expr, self.env, self.events = expr, env, events
        self.focus: dict = {}  # quantified var -> index into its sequence, for the combination under test

    def holds(self) -> bool:
        modes = self._quantifiers()
        ranges = [range(1 if mode == "pairs" else 0, len(self._sequence(var))) for var, mode in modes]
        for choice in itertools.product(*ranges):
            self.focus = dict(zip((var for var, _ in modes), choice))
            if not truthy(self.value(self.expr)):
                return False
        return True

    def _quantifiers(self) -> list:
        """[(var, "each" | "pairs")] for the variables this predicate ranges over element by element."""
        modes: dict = {}

        def visit(node):
            if isinstance(node, A.Agg):
                return
            if isinstance(node, A.Prev) or (isinstance(node, A.Attr) and node.index == "i-1"):
                var = node.arg.var if isinstance(node, A.Prev) else node.var
                modes[var] = "pairs"
                return
            if isinstance(node, A.Attr) and node.index in (None, "i") and node.var in self.env:
                modes.setdefault(node.var, "each")
            for child in node.children():
                visit(child)

        visit(self.expr)
        return [(var, mode) for var, mode in modes.items() if var in self.env]

    def _sequence(self, var: str) -> tuple:
        value = self.env[var]
        return value if isinstance(value, tuple) else (value,)

    # ------------------------------------------------------------------ values
    def value(self, node):
        if isinstance(node, A.Literal):
            return node.value
        if isinstance(node, A.Duration):
            return node.seconds
        if isinstance(node, A.Attr):
            return self._attribute(node.var, node.attr, node.index)
        if isinstance(node, A.Prev):
            return self._attribute(node.arg.var, node.arg.attr, "i-1")
        if isinstance(node, A.Agg):
            return self._aggregate(node)
        if isinstance(node, A.Neg):
            value = self.value(node.arg)
            return None if value is None else -self._number(value, node.arg)
        if isinstance(node, A.Arith):
            return self._arith(node)
        if isinstance(node, A.Compare):
            return self._compare(node)
        if isinstance(node, A.In):
            return member(self.value(node.arg), (self.value(v) for v in node.values))
        if isinstance(node, (A.BoolOp, A.BoolNot)):
            return holds(node, self.env, self.events)  # a parenthesized condition used as a value
        raise TypeError(f"not a condition node: {node!r}")

    def _event(self, var: str, index) -> Optional[int]:
        """The logical index of the event of ``var`` the reference picks, or None."""
        if var not in self.env:
            return None
        seq = self._sequence(var)
        if index in (None, "i"):
            return seq[self.focus.get(var, 0)]
        if index == "i-1":
            return seq[self.focus[var] - 1]
        if index == "first":
            return seq[0]
        if index == "last":
            return seq[-1]
        return seq[index - 1] if 1 <= index <= len(seq) else None

    def _attribute(self, var: str, attr: str, index):
        i = self._event(var, index)
        return None if i is None else self.events[i].get(attr)

    def _aggregate(self, node: A.Agg):
        if node.var not in self.env:
            return None
        seq = self._sequence(node.var)
        if node.func == "count":
            return len(seq)
        values = [self.events[i].get(node.attr) for i in seq]
        values = [self._number(v, node, i) for v, i in zip(values, seq) if v is not None]
        if not values:
            return None
        if node.func == "sum":
            return sum(values)
        if node.func == "avg":
            return sum(values) / len(values)
        return min(values) if node.func == "min" else max(values)

    def _arith(self, node: A.Arith):
        left, right = self.value(node.left), self.value(node.right)
        if left is None or right is None:
            return None
        return arith(node.op, self._number(left, node.left), self._number(right, node.right))

    def _compare(self, node: A.Compare) -> bool:
        left, right = self.value(node.left), self.value(node.right)
        try:
            return compare(node.op, left, right)
        except TypeError:
            position, field = self._blame(node)
            raise EventError(position, field, cannot_compare(node.op, left, right)) from None

    def _number(self, value, node, index: Optional[int] = None):
        if is_number(value):
            return value
        if index is None:
            position, field = self._blame(node)
        else:
            position, field = self.events[index].position, getattr(node, "attr", None) or "?"
        raise EventError(position, field, not_a_number(value))

    def _blame(self, node) -> tuple:
        """(position, attribute) of the first event attribute ``node`` reads, for error messages."""
        for n in node.walk():
            ref = n.arg if isinstance(n, A.Prev) else n
            if isinstance(ref, A.Attr):
                i = self._event(ref.var, "i-1" if isinstance(n, A.Prev) else ref.index)
                if i is not None:
                    return self.events[i].position, ref.attr
        return -1, "?"
