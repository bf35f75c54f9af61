"""The transitive closure Θ_eq⁺ of a conjunction's equalities (docs/references.md E11, [SES] Def 5.3).

Θ_eq is the set of equalities ``v.A = w.B`` between attributes of two different variables. Their closure
Θ_eq⁺ adds every equality they imply: with ``a.PID = b.PID`` and ``b.PID = c.PID``, ``a.PID = c.PID``
(also through a Kleene variable, whose every event equals both sides), and, for a Kleene ``p`` tied to
another variable, ``prev(p.PID) = p.PID`` (all of p's events equal the other's value). A complete match
satisfies them whenever it satisfies Θ, so adding them changes no ALL result; what they change is the
judge of skip-till-next-match (Def 6.1 / 6.2), which tests *pattern prefixes* on the conditions among the
bound variables only: cepkit adds Θ_eq⁺ to Θ before compiling (docs/references.md E11), so that an event whose PID
differs from the prefix's never blocks, and STNM / ROBUST_STNM are partition-invariant. The reference
(``cepkit.semantics.stnm``) and the ``ses``, ``rcep`` and ``stack`` engines all take the closure from here.

The partition attributes X of Def 5.3 are the attributes A whose equalities connect every variable.
"""

from __future__ import annotations

from typing import Iterable, Optional

import networkx as nx

from . import ast as A


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


def attribute_equality(cond, variables=None) -> Optional[tuple]:
    """((var, attr), (var, attr)) for a plain equality between two different variables' attributes (both
    among ``variables``, when given)."""
    if (
        isinstance(cond, A.Compare)
        and cond.op == "="
        and isinstance(cond.left, A.Attr)
        and isinstance(cond.right, A.Attr)
        and cond.left.index is None
        and cond.right.index is None
        and cond.left.var != cond.right.var
        and (variables is None or (cond.left.var in variables and cond.right.var in variables))
    ):
        return (cond.left.var, cond.left.attr), (cond.right.var, cond.right.attr)
    return None


def equality_graph(conditions: Iterable, variables=None) -> nx.Graph:
    """The graph of Θ_eq: nodes (var, attr), an edge per written equality between two variables."""
    graph = nx.Graph()
    graph.add_edges_from(e for e in (attribute_equality(c, variables) for c in conditions) if e is not None)
    return graph


def transitive_equalities(conditions: Iterable, kleene=frozenset(), variables=None) -> tuple:
    """The equalities implied by ``conditions`` but missing from them (Θ_eq⁺ − Θ), in a stable order:
    between attributes of two variables, and ``prev(v.A) = v.A`` for a Kleene v equal to another variable.
    ``variables``, if given, are the variables a match binds: equalities with any other (a negated event)
    imply nothing about the match.

    >>> from cepkit import parse, pretty
    >>> q = parse("SEQ({A a, C+ c}, {B b}) WHERE a.PID = b.PID and b.PID = c.PID")
    >>> [pretty(e) for e in transitive_equalities(A.conjuncts(q.where), {"c"})]
    ['a.PID = c.PID', 'prev(c.PID) = c.PID']
    """
    conditions = tuple(conditions)
    variables = None if variables is None else frozenset(variables)
    graph = equality_graph(conditions, variables)
    present = {equality_link(c) for c in conditions}
    edges = [e for e in (attribute_equality(c, variables) for c in conditions) if e is not None]
    order = {node: i for i, node in enumerate(dict.fromkeys(n for e in edges for n in e))}
    added = []
    for component in sorted(nx.connected_components(graph), key=lambda c: min(map(order.__getitem__, c))):
        nodes = sorted(component, key=order.__getitem__)
        for i, left in enumerate(nodes):
            for right in nodes[i + 1 :]:
                if left[0] != right[0] and not graph.has_edge(left, right):
                    added.append(A.Compare("=", A.Attr(*left), A.Attr(*right)))
        for var, attr in nodes:
            if var in kleene and (attr, var, var) not in present:
                added.append(A.Compare("=", A.Prev(A.Attr(var, attr)), A.Attr(var, attr)))
    return tuple(added)


def partition_attributes(conditions: Iterable, variables) -> tuple:
    """X of Def 5.3: the attributes A whose equalities ``v.A = w.A`` connect every one of ``variables``
    (through Θ_eq⁺), so all events of a match agree on them. Empty for fewer than two variables."""
    names = tuple(variables)
    if len(names) < 2:
        return ()
    graph = equality_graph(conditions)
    found = []
    for attr in sorted({attr for _, attr in graph.nodes}):
        nodes = [(v, attr) for v in names]
        if (
            all(n in graph for n in nodes)
            and len({frozenset(nx.node_connected_component(graph, n)) for n in nodes}) == 1
        ):
            found.append(attr)
    return tuple(found)
