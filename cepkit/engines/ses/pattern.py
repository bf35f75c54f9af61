"""A query read as an SES pattern P = (⟨B1..Bk⟩, Θ, τ) (digest 002 §1, Def 3.1).

The language writes it ``PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE ... WITHIN 15 days``. A ``SEQ`` item that
is a bare atom ``A a`` or ``A+ a`` is the singleton set ``{A a}``; a pattern that is a single set or atom is
a one-set sequence; nested ``SEQ`` items are flattened (sequencing is associative). Conditions may stand in
WHERE, in FILTERs around the sequence, a set or an atom, and as items of SEQ/sets: without negation they
are all one conjunction Θ. An atom without a variable is bound to a hidden one, so its event is part of the
match's positions but not of its bindings.

The transitive closure of Θ's equalities Θ_eq⁺ (digest 002 §4.5 [impl]) is computed too: with ``a.PID =
b.PID`` and ``b.PID = c.PID`` it adds ``a.PID = c.PID``, and ``prev(p.PID) = p.PID`` for a Kleene p tied to
another variable. These are implied by Θ, so Γ does not change; the engine uses them to drop automaton
instances that can no longer complete and to find the partition attributes X of Def 5.3. They are *not*
added to Θ itself: skip-till-next-match judges each pattern prefix on the conditions written among its
own variables (Def 6.1, as the reference evaluator reads it), and an implied equality would change which
events block. Under STNM the windows are therefore partitioned only on the attributes where Θ as written
already stops every event with another value from extending a prefix (``SesPlan``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import networkx as nx

from ...lang import ast as A

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
    variable's atom (its type), the conjuncts of Θ as written, the implied equalities Θ_eq⁺ − Θ and the
    window."""
    sets: tuple
    kleene: frozenset
    atoms: dict
    conditions: tuple
    closure: tuple
    window: Optional[A.Window]

    @property
    def variables(self) -> tuple:
        """All variables, set by set, in pattern order (the binding's index order)."""
        return tuple(v for s in self.sets for v in s)

    def partition_attributes(self) -> tuple:
        """X of Def 5.3: the attributes A whose equalities ``v.A = w.A`` connect every variable (through
        Θ_eq⁺), so all events of a match agree on them. Empty for a single variable."""
        names = self.variables
        if len(names) < 2:
            return ()
        graph = _equality_graph(self.conditions)
        found = []
        for attr in sorted({attr for _, attr in graph.nodes}):
            nodes = [(v, attr) for v in names]
            if all(n in graph for n in nodes) and len({_component(graph, n) for n in nodes}) == 1:
                found.append(attr)
        return tuple(found)

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
            what = {A.Not: "negation", A.Exists: "EXISTS", A.Or: "OR", A.Strategy: "a nested strategy",
                    A.Filter: "a FILTER inside an iteration"}.get(type(atom), "this nesting")
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


# ----------------------------------------------------------------------------- Θ_eq⁺ (digest 002 §4.5)
def equality_link(cond) -> Optional[tuple]:
    """(attr, v, w) for ``v.A = w.A`` between two variables' same attribute, (attr, v, v) for
    ``prev(v.A) = v.A`` (either side, ``v[i-1]`` too); None for any other condition."""
    if not (isinstance(cond, A.Compare) and cond.op == "="):
        return None
    sides = []
    for side in (cond.left, cond.right):
        if isinstance(side, A.Prev):
            sides.append((side.arg.var, side.arg.attr, True))
        elif isinstance(side, A.Attr) and side.index in (None, "i", "i-1"):
            sides.append((side.var, side.attr, side.index == "i-1"))
        else:
            return None
    (v, a, v_prev), (w, b, w_prev) = sides
    if a == b and v == w and v_prev != w_prev:
        return a, v, v
    if a == b and v != w and not (v_prev or w_prev):
        return a, v, w
    return None


def _equality(cond) -> Optional[tuple]:
    """((var, attr), (var, attr)) for a plain equality between two different variables' attributes."""
    if (isinstance(cond, A.Compare) and cond.op == "=" and isinstance(cond.left, A.Attr)
            and isinstance(cond.right, A.Attr) and cond.left.index is None and cond.right.index is None
            and cond.left.var != cond.right.var):
        return (cond.left.var, cond.left.attr), (cond.right.var, cond.right.attr)
    return None


def _equality_graph(conditions) -> nx.Graph:
    graph = nx.Graph()
    graph.add_edges_from(e for e in map(_equality, conditions) if e is not None)
    return graph


def _component(graph: nx.Graph, node) -> frozenset:
    return frozenset(nx.node_connected_component(graph, node))


def transitive_equalities(conditions, kleene=frozenset()) -> tuple:
    """The equalities implied by ``conditions`` but missing from them (Θ_eq⁺ − Θ), in a stable order:
    between attributes of two variables, and ``prev(v.A) = v.A`` for a Kleene v equal to another variable.

    >>> from cepkit import parse, pretty
    >>> q = parse("SEQ({A a, C+ c}, {B b}) WHERE a.PID = b.PID and b.PID = c.PID")
    >>> [pretty(e) for e in transitive_equalities(A.conjuncts(q.where), {"c"})]
    ['a.PID = c.PID', 'prev(c.PID) = c.PID']
    """
    conditions = tuple(conditions)
    graph = _equality_graph(conditions)
    present = {equality_link(c) for c in conditions}
    order = {node: i for i, node in enumerate(n for e in map(_equality, conditions) if e for n in e)}
    added = []
    for component in nx.connected_components(graph):
        nodes = sorted(component, key=order.__getitem__)
        for i, left in enumerate(nodes):
            for right in nodes[i + 1:]:
                if left[0] != right[0] and not graph.has_edge(left, right):
                    added.append(A.Compare("=", A.Attr(*left), A.Attr(*right)))
        for var, attr in nodes:
            if var in kleene and (attr, var, var) not in present:
                added.append(A.Compare("=", A.Prev(A.Attr(var, attr)), A.Attr(var, attr)))
    return tuple(added)
