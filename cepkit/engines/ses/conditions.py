"""The pattern's conditions Θ, compiled to closures over bound events ([SES] ch. 3; docs/language.md §3).

Θ is split on top-level ``and`` into conjuncts θ. A binding β maps each variable (by index) to the tuple of
its events in time order; a plain variable has one event. Following Def 3.2 and docs/language.md rule 6, each
comparison is quantified on its own: it must hold for **every** event of each Kleene variable it mentions
(every pair between two Kleene variables), and ``prev(v.A)`` / ``v[i-1].A`` ranges over the consecutive
pairs of v, so it holds vacuously while v has one event. Nothing is ever passed to ``eval``.

Two properties of a conjunct drive the automaton:

* **monotone** (anti-monotone, strictly): appending an event to a Kleene variable can only turn θ from
  true to false. Comparisons, and their ``and``/``or``, are; a ``not`` over a Kleene variable is not
  (``not (p.v > 3)`` means "some p.v <= 3", which a later event may make true). Monotone conjuncts prune
  automaton instances as soon as their variables are bound (the Θδ of [SES] §4.3); the others can only be judged
  on the finished binding and when deciding whether an event *blocks* a skip (Def 6.1).
* **property** (Θ^p_v): a conjunct on one variable without ``prev``. Monotone ones are necessary for every
  single event of v, so they filter events (Thm 5.1); they are *exact* per event unless a Kleene variable
  is combined with ``or`` (``p.v > 5 or p.v < 2`` means all above 5 or all below 2).
"""

from __future__ import annotations

import functools
import itertools
from typing import Callable, Mapping, Sequence

from ...lang import ast as A
from ...lang.compiled import compile_condition
from ...lang.printer import pretty
from ...runtime.event_record import Event

Binding = Sequence[tuple]  # var index -> tuple of Events (empty while unbound)


class _Leaf:
    """One comparison (or any non-boolean-operator expression used as a truth value), quantified over the
    events of the variables it mentions. ``slots[j]`` holds (previous event, event) of the j-th variable."""

    def __init__(self, expr: A.Expr, index: Mapping[str, int]):
        self.expr = expr
        names = list(A.variables_in(expr))
        self.vars = tuple(index[n] for n in names)
        slot = {n: j for j, n in enumerate(names)}
        self.uses_prev = frozenset(
            index[n.arg.var if isinstance(n, A.Prev) else n.var]
            for n in expr.walk()
            if isinstance(n, A.Prev) or (isinstance(n, A.Attr) and n.index == "i-1")
        )
        self._slot = slot

    @functools.cached_property
    def fn(self):
        """One assignment -> bool, compiled when first evaluated (a batch run in the kernel never is)."""
        return compile_condition(self.expr, _slots(self._slot))

    def _choices(self, events: tuple, var: int) -> list:
        if var in self.uses_prev:
            return [(events[k - 1], events[k]) for k in range(1, len(events))]
        return [(None, e) for e in events]

    def _all(self, choices: list) -> bool:
        """Whether every assignment (one slot from each list of choices) satisfies the leaf."""
        if all(len(c) == 1 for c in choices):  # the usual case: one event each, one assignment
            return self.fn(tuple(c[0] for c in choices))
        return all(self.fn(slots) for slots in itertools.product(*choices))

    def holds(self, binding: Binding) -> bool:
        """Every assignment of the mentioned variables' events satisfies the leaf."""
        return self._all([self._choices(binding[v], v) for v in self.vars])

    def holds_extended(self, binding: Binding, var: int) -> bool:
        """Like ``holds``, checking only the assignments that use the last event of ``var`` (just appended)."""
        choices = []
        for v in self.vars:
            events = binding[v]
            if v != var:
                choices.append(self._choices(events, v))
            elif v in self.uses_prev:
                choices.append([(events[-2], events[-1])] if len(events) > 1 else [])
            else:
                choices.append([(None, events[-1])])
        return self._all(choices)


def _slots(slot: Mapping[str, int]):
    """How ``cepkit.lang.compiled`` reads an attribute from the slots: ``v.A`` the event, ``prev(v.A)`` and
    ``v[i-1].A`` the previous event of the j-th variable's slot."""

    def access(expr: A.Expr) -> tuple:
        if not isinstance(expr, (A.Attr, A.Prev)):
            raise TypeError(f"not a value expression: {type(expr).__name__}")  # Agg: not SES
        ref = expr.arg if isinstance(expr, A.Prev) else expr
        j, attr, k = slot[ref.var], ref.attr, 0 if isinstance(expr, A.Prev) or ref.index == "i-1" else 1
        return (lambda s: s[j][k].get(attr)), (lambda s: s[j][k].position)

    return access


def _truth(expr: A.Expr, index: Mapping[str, int], leaves: list) -> Callable[[Binding], bool]:
    """The truth of a condition over a binding: and/or/not over quantified leaves (rule 6)."""
    if isinstance(expr, A.BoolOp):
        parts = [_truth(a, index, leaves) for a in expr.args]
        combine = all if expr.op == "and" else any
        return lambda b: combine(p(b) for p in parts)
    if isinstance(expr, A.BoolNot):
        part = _truth(expr.arg, index, leaves)
        return lambda b: not part(b)
    leaf = _Leaf(expr, index)
    leaves.append(leaf)
    return leaf.holds


class Conjunct:
    """One conjunct θ of Θ over the pattern's variables (``index``: name -> position in the binding).

    >>> from cepkit import parse
    >>> theta = Conjunct(parse("SEQ(P+ p, B b) WHERE prev(p.v) < p.v").where, {"p": 0, "b": 1}, {"p"})
    >>> p = [Event("P", 0, {"v": v}) for v in (1, 3, 2)]
    >>> theta.holds(((p[0],), ())), theta.holds(((p[0], p[1]), ())), theta.holds((tuple(p), ()))
    (True, True, False)
    """

    def __init__(self, expr: A.Expr, index: Mapping[str, int], kleene: frozenset):
        self.expr = expr
        names = A.variables_in(expr)
        self.variables = frozenset(index[n] for n in names)
        self.mask = sum(1 << v for v in self.variables)
        kleene_here = {n for n in names if n in kleene}
        self.monotone = not any(set(A.variables_in(n.arg)) & kleene_here for n in expr.find_all(A.BoolNot))
        leaves: list = []
        self.holds = _truth(expr, index, leaves)
        self._leaf = leaves[0] if len(leaves) == 1 and leaves[0].expr is expr else None
        has_prev = any(leaf.uses_prev for leaf in leaves)
        self.property = len(self.variables) == 1 and not has_prev and self.monotone
        self.exact_property = self.property and not (kleene_here and any(n.op == "or" for n in expr.find_all(A.BoolOp)))

    def holds_extended(self, binding: Binding, var: int) -> bool:
        """θ on ``binding`` whose ``var`` just received its last event; earlier events were checked before."""
        if self._leaf is not None:
            return self._leaf.holds_extended(binding, var)
        return self.holds(binding)

    def holds_for_event(self, event: Event, arity: int) -> bool:
        """A property θ (one variable) on a single event bound to its variable."""
        (var,) = self.variables
        return self.holds(tuple((event,) if v == var else () for v in range(arity)))

    def __repr__(self):
        return f"Conjunct({pretty(self.expr)})"
