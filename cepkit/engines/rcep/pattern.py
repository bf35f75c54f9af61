"""The RCEP reading of a query: a sequence of variables ``P = <p_1 .. p_k>`` and its predicates Θ
([RCEP] §3.4), each conjunct sorted into the role the recomputation gives it.

A pattern of the fragment is a SEQ (or ``;`` chain) of items ``T x`` and ``T+ x`` (``(T AS x FILTER c)+``
too: c then holds for each event of x), with conditions anywhere a FILTER, WHERE or condition item may put
them. Every conjunct of Θ lands in exactly one role:

``local``
    Θᶜ, a test on one event: a unary conjunct on a single variable, or on a Kleene variable a single
    comparison (quantified per event, docs/language.md §10.6). Step 1 of Algorithm 1: an event enters the
    event tree of every variable whose local tests it passes.
``join``
    Θᵛ (i), ``f(x) φ g(y)`` between two variables: one comparison whose sides each read one variable's
    own attributes. It must hold for every pair of their events (∀ semantics, [RCEP] §3.4), so it prunes by range
    queries ([RCEP] §3.6.1) and is computed by the hybrid join (Algorithm 2, [RCEP] §3.6.2).
``chain``
    Θᵛ (ii), ``f(prev(b)) φ g(b)`` (``prev(b.v) < b.v``, ``b[i].v > b[i-1].v``, RCEP's NEXT): every
    consecutive pair of b; computed as b's self-join, the "can-follow" DAG whose paths are the chains.

    A conjunct ``x.B φ first(b).A`` (or ``last``) is a join too when a chain on ``b.A`` orders b: if
    ``prev(b.A) < b.A``, first(b) is b's minimum, so ``c.price < first(b).price`` (Q1) holds exactly when c
    is below every b. This gives the thesis's range on b from the trigger c ([RCEP] Example 2).
``residual``
    everything else (aggregates, ``first``/``last``/``b[k]`` such as RCEP's FIRST, ``or``/``not`` over a
    Kleene variable, conjuncts on three variables): checked on each enumerated match (they depend on the
    chosen subset), by the language's own evaluator ``cepkit.semantics.conditions.holds``.
``per_event``
    a condition written inside an iteration that is none of the above (e.g. an ``or`` correlating the
    current event with another variable): checked for each event of the Kleene variable on each match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...lang import ast as A
from ..conjuncts import FLIP, Join, condition_role, is_plain


class NotRcepPattern(Exception):
    """A query outside the engine's fragment: ``node`` is the culprit, ``what`` says what it is."""

    def __init__(self, node, what: str):
        super().__init__(what)
        self.node, self.what = node, what


@dataclass(frozen=True)
class Slot:
    """One variable ``p_i`` of the sequence: its atom, whether it is Kleene (``T+ x``), its local tests
    and the per-event conditions written inside its iteration."""

    atom: A.Atom
    kleene: bool
    local: tuple = ()
    per_event: tuple = ()

    @property
    def var(self) -> Optional[str]:
        return self.atom.var


@dataclass(frozen=True)
class KleenePattern:
    """``P`` and Θ sorted into roles (module docstring)."""

    slots: tuple
    joins: tuple
    chains: tuple
    residual: tuple

    @property
    def variables(self) -> dict:
        return {s.var: k for k, s in enumerate(self.slots) if s.var is not None}

    @classmethod
    def from_query(cls, query) -> "KleenePattern":
        """Read ``query.scoped``; raises ``NotRcepPattern`` for anything outside the fragment."""
        reader = _Reader()
        reader.sequence(query.scoped)
        variables = {atom.var: k for k, (atom, _, _) in enumerate(reader.items) if atom.var is not None}
        kleene = {atom.var for atom, is_kleene, _ in reader.items if is_kleene and atom.var is not None}
        local = [[] for _ in reader.items]
        per_event = [[] for _ in reader.items]
        joins, chains, residual = [], [], []
        for cond in reader.conditions:
            role = condition_role(cond, variables, kleene)
            if role[0] == "local":
                local[variables[role[1]]].append(cond)
            elif role[0] == "join":
                joins.append(role[1])
            elif role[0] == "chain":
                chains.append(role[1])
            else:
                residual.append(cond)
        for cond in list(residual):  # FIRST / LAST on a monotone chain: a join after all ([RCEP] Example 2)
            join = _extreme_as_join(cond, variables, chains)
            if join is not None:
                residual.remove(cond)
                joins.append(join)
        for k, (atom, _, inner) in enumerate(reader.items):
            for cond in inner:  # written inside the iteration: about each event of the slot
                role = condition_role(cond, variables, kleene - {atom.var})
                if role[0] == "local":
                    local[variables[role[1]]].append(cond)
                elif role[0] == "join":
                    joins.append(role[1])
                else:
                    per_event[k].append(cond)
        slots = tuple(
            Slot(atom, is_kleene, tuple(local[k]), tuple(per_event[k]))
            for k, (atom, is_kleene, _) in enumerate(reader.items)
        )
        return cls(slots, tuple(joins), tuple(chains), tuple(residual))


class _Reader:
    """Flattens the pattern into ``items`` [(atom, kleene?, conditions inside the iteration)] and collects
    the conditions on whole matches."""

    def __init__(self):
        self.items: list = []
        self.conditions: list = []

    def sequence(self, node) -> None:
        node = self.unfilter(node)
        if isinstance(node, A.Seq):
            for item in node.items:
                if isinstance(item, A.Expr):
                    self.conditions.extend(A.conjuncts(item))
                elif isinstance(item, (A.Not, A.Exists)):
                    raise NotRcepPattern(item, "negation" if isinstance(item, A.Not) else "EXISTS")
                else:
                    self.sequence(item)
        elif isinstance(node, A.Plus):
            self.iteration(node)
        elif isinstance(node, A.Atom):
            self.items.append((node, False, ()))
        else:
            what = {A.Or: "OR", A.And: "AND (sets)", A.Strategy: "a nested selection strategy"}
            raise NotRcepPattern(node, what.get(type(node), type(node).__name__))

    def iteration(self, node: A.Plus) -> None:
        inner, body = [], node.pattern
        while isinstance(body, A.Filter):
            inner.extend(A.conjuncts(body.cond))
            body = body.pattern
        if not isinstance(body, A.Atom):
            raise NotRcepPattern(node, "iteration of a composite pattern (RCEP iterates one variable: T+ x)")
        self.items.append((body, True, tuple(inner)))

    def unfilter(self, node):
        while isinstance(node, A.Filter):
            self.conditions.extend(A.conjuncts(node.cond))
            node = node.pattern
        return node


def _extreme_as_join(cond: A.Expr, variables: dict, chains: list) -> Optional[Join]:
    """``x φ first(b).A`` / ``last(b).A`` as the join ``x φ b.A`` for every event of b, when a chain on
    ``b.A`` makes first/last b's minimum or maximum and φ points the ∀ way; else None."""
    if not isinstance(cond, A.Compare):
        return None
    for picked, other, op in ((cond.right, cond.left, cond.op), (cond.left, cond.right, FLIP[cond.op])):
        if not (isinstance(picked, A.Attr) and picked.index in ("first", "last") and is_plain(other)):
            continue
        others = A.variables_in(other)
        if len(others) != 1 or others[0] == picked.var:
            continue
        for chain in chains:
            if chain.slot != variables[picked.var] or not (
                _reads_only(chain.previous, picked.var, picked.attr)
                and _reads_only(chain.current, picked.var, picked.attr)
            ):
                continue
            if chain.op == "!=":
                continue  # orders nothing
            rising = chain.op in ("<", "<=")
            extreme = "min" if rising == (picked.index == "first") else "max"
            every = chain.op == "=" or op in (("<", "<=") if extreme == "min" else (">", ">="))
            if every:
                each = A.Attr(picked.var, picked.attr)
                i, j = variables[others[0]], variables[picked.var]
                if i < j:
                    return Join(i, j, op, other, each, cond)
                return Join(j, i, FLIP[op], each, other, cond)
    return None


def _reads_only(expr: A.Expr, var: str, attr: str) -> bool:
    """Whether ``expr`` is just ``var.attr`` (through ``prev`` or ``[i-1]`` for a previous side)."""
    ref = expr.arg if isinstance(expr, A.Prev) else expr
    return isinstance(ref, A.Attr) and ref.var == var and ref.attr == attr
