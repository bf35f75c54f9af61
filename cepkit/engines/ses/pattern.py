"""A query read as an SES pattern P = (⟨B1..Bk⟩, Θ, τ) ([SES] ch. 3, Def 3.1).

The language writes it ``PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE ... WITHIN 15 days``. A ``SEQ`` item that
is a bare atom ``A a`` or ``A+ a`` is the singleton set ``{A a}``; a pattern that is a single set or atom is
a one-set sequence; nested ``SEQ`` items are flattened (sequencing is associative). Conditions may stand in
WHERE, in FILTERs around the sequence, a set or an atom, and as items of SEQ/sets: without negation they
are all one conjunction Θ. An atom without a variable is bound to a hidden one, so its event is part of the
match's positions but not of its bindings.

The transitive closure of Θ's equalities Θ_eq⁺ (docs/references.md E11, ``cepkit.lang.equalities``) is
added to Θ before compiling: with ``a.PID = b.PID`` and ``b.PID = c.PID`` it adds ``a.PID = c.PID``, and
``prev(p.PID) = p.PID`` for a Kleene p tied to another variable. These are implied by Θ, so Γ does not
change; under STNM and ROBUST_STNM they are part of the conditions each pattern prefix is judged on
(Def 6.1 / 6.2, as in the reference evaluator), so an event that disagrees with the prefix on an
attribute of X never blocks, and the windows of every strategy are partitioned on X (Def 5.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...lang import ast as A
from ...lang.equalities import partition_attributes, transitive_equalities

HIDDEN = "#"  # prefix of the variables given to anonymous atoms (never a valid name in the language)


class NotSesPattern(Exception):
    """Raised with the offending node and what the SES engine lacks; the engine turns it into a QueryError."""

    def __init__(self, node, what: str):
        super().__init__(what)
        self.node = node
        self.what = what


@dataclass(frozen=True)
class SetPattern:
    """P = (⟨B1..Bk⟩, Θ, τ): ``sets`` of variable names in pattern order, the Kleene variables, each
    variable's atom (its type), the conjuncts of Θ as written, the implied equalities Θ_eq⁺ − Θ (compiled
    with them: ``theta``) and the window."""

    sets: tuple
    kleene: frozenset
    atoms: dict
    conditions: tuple
    closure: tuple
    window: Optional[A.Window]

    @property
    def theta(self) -> tuple:
        """Θ ∪ Θ_eq⁺, what the engine compiles (docs/references.md E11)."""
        return self.conditions + self.closure

    @property
    def variables(self) -> tuple:
        """All variables, set by set, in pattern order (the binding's index order)."""
        return tuple(v for s in self.sets for v in s)

    def partition_attributes(self) -> tuple:
        """X of Def 5.3: the attributes A whose equalities ``v.A = w.A`` connect every variable (through
        Θ_eq⁺), so all events of a match agree on them. Empty for a single variable."""
        return partition_attributes(self.conditions, self.variables)

    @classmethod
    def from_query(cls, query) -> "SetPattern":
        """Read ``query`` as an SES pattern; raises ``NotSesPattern`` for anything outside the fragment."""
        conditions: list = list(A.conjuncts(query.where))
        reader = _Reader(conditions)
        sets = reader.sequence(query.pattern)
        for cond in conditions:
            _check_condition(cond)
        kleene = frozenset(reader.kleene)
        for cond in conditions:
            for node in cond.walk():
                if isinstance(node, A.Prev) and node.arg.var not in kleene:
                    raise NotSesPattern(node, f"prev() on {node.arg.var!r}, which is not a Kleene variable")
        closure = transitive_equalities(conditions, kleene)
        return cls(tuple(sets), kleene, reader.atoms, tuple(conditions), closure, query.within)


class _Reader:
    """Walks the pattern, collecting sets, atoms, Kleene variables and condition items."""

    def __init__(self, conditions: list):
        self.conditions = conditions
        self.atoms: dict = {}
        self.kleene: list = []

    def sequence(self, node) -> list:
        node = self.unfilter(node)
        if not isinstance(node, A.Seq):
            return [self.set_(node)]
        sets = []
        for item in map(self.unfilter, self.patterns(node.items)):
            sets.extend(self.sequence(item) if isinstance(item, A.Seq) else [self.set_(item)])
        return sets

    def set_(self, node) -> tuple:
        node = self.unfilter(node)
        if isinstance(node, A.And):
            return tuple(self.member(item) for item in self.patterns(node.items))
        return (self.member(node),)

    def patterns(self, items):
        """The items of a SEQ or set that are not conditions; condition items join Θ."""
        for item in items:
            if isinstance(item, A.Expr):
                self.conditions.extend(A.conjuncts(item))
            else:
                yield item

    def member(self, node) -> str:
        node = self.unfilter(node)
        kleene = isinstance(node, A.Plus)
        atom = node.pattern if kleene else node
        if not isinstance(atom, A.Atom):
            what = {
                A.Not: "negation",
                A.Exists: "EXISTS",
                A.Or: "OR",
                A.Strategy: "a nested strategy",
                A.Filter: "a FILTER inside an iteration",
            }.get(type(atom), "this nesting")
            if kleene and isinstance(atom, (A.Seq, A.And, A.Plus)):
                what = "iteration of a composite pattern (SES iterates single variables: T+ v)"
            raise NotSesPattern(atom, what)
        var = atom.var or f"{HIDDEN}{len(self.atoms)}"
        self.atoms[var] = atom
        if kleene:
            self.kleene.append(var)
        return var

    def unfilter(self, node):
        while isinstance(node, A.Filter):
            self.conditions.extend(A.conjuncts(node.cond))
            node = node.pattern
        return node


def _check_condition(cond) -> None:
    for node in cond.walk():
        if isinstance(node, A.Agg):
            raise NotSesPattern(node, "aggregates (SES conditions compare attributes and prev)")
        if isinstance(node, A.Attr) and node.index not in (None, "i", "i-1"):
            raise NotSesPattern(node, "first(), last() and b[k] (SES conditions use prev or b[i-1])")
        if isinstance(node, (A.Compare, A.In, A.Arith, A.Neg)):
            inner = next(node.find_all(A.BoolOp, A.BoolNot), None)
            if inner is not None:
                raise NotSesPattern(inner, "a condition used as a value")
