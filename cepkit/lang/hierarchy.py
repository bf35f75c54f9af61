"""Concept hierarchies (E-Cube, docs/language.md §7): a concept stands for its own type and every type below it.

A hierarchy with ``attribute=`` classifies the values of that attribute instead of event types (room <
floor < building): a comparison ``x.loc = 'TX'`` (or ``IN``, or ``!=``) with a concept of the hierarchy
holds when the value is the concept or any value below it (docs/decisions.md, "Attribute hierarchies").
``expand_attribute_concepts`` rewrites such comparisons into plain ones, so evaluators need no new rule.
"""

from __future__ import annotations

from functools import cached_property
from typing import Mapping, Optional, Sequence

import networkx as nx

from ..errors import QueryError
from . import ast as A


class Hierarchy:
    """``Hierarchy({"Stock": ["Tech", "Energy"], "Tech": ["IBM", "MSFT"]})``.

    ``attribute`` names the attribute the hierarchy classifies (None: the event type).
    """

    def __init__(self, children: Mapping[str, Sequence[str]], attribute: Optional[str] = None):
        self.children = {k: tuple(v) for k, v in children.items()}
        self.attribute = attribute
        graph = nx.DiGraph()
        for parent, kids in self.children.items():
            graph.add_node(parent)
            graph.add_edges_from((parent, kid) for kid in kids)
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            cycle = None
        if cycle:
            path = " -> ".join([cycle[0][0]] + [v for _, v in cycle])
            raise QueryError(f"the hierarchy has a cycle: {path}")
        self.graph = graph

    @cached_property
    def _below(self) -> dict:
        return {c: frozenset({c} | nx.descendants(self.graph, c)) for c in self.graph.nodes}

    def covers(self, concept: str) -> frozenset:
        """Every type name a pattern type ``concept`` matches (the concept itself included)."""
        return self._below.get(concept, frozenset({concept}))

    def matches(self, concept: str, event_type: str) -> bool:
        return event_type == concept or event_type in self._below.get(concept, ())

    def parents(self, concept: str) -> tuple:
        return tuple(self.graph.predecessors(concept)) if concept in self.graph else ()

    def __eq__(self, other):
        return isinstance(other, Hierarchy) and (self.children, self.attribute) == (other.children, other.attribute)

    def __hash__(self):
        return hash((tuple(sorted(self.children.items())), self.attribute))

    def __repr__(self):
        if self.attribute is not None:
            return f"Hierarchy({self.children!r}, attribute={self.attribute!r})"
        return f"Hierarchy({self.children!r})"


def attribute_concepts(node, hierarchy: Optional[Hierarchy]) -> list:
    """The comparisons under ``node`` that name a concept of ``hierarchy``'s attribute (empty for a type
    hierarchy): each one means "the value is below that concept"."""
    if hierarchy is None or hierarchy.attribute is None:
        return []
    return [n for n in node.walk() if concept_comparison(n, hierarchy) is not None]


def concept_comparison(node, hierarchy: Optional[Hierarchy], leaves: bool = False):
    """(attribute operand, concept names, negated) when ``node`` compares the hierarchy's attribute with
    concepts (``x.loc = 'TX'``, ``'TX' = x.loc``, ``x.loc != 'TX'``, ``x.loc IN ('TX', 'OK')``), else None.
    With ``leaves``, values the hierarchy names without children count as (one-value) concepts too."""
    if hierarchy is None or hierarchy.attribute is None:
        return None

    def is_attr(e):
        return isinstance(e, A.Attr) and e.attr == hierarchy.attribute

    def is_concept(e):
        if not isinstance(e, A.Literal) or isinstance(e.value, (bool, type(None))):
            return False
        return len(hierarchy.covers(e.value)) > 1 or (leaves and e.value in hierarchy.graph)

    if isinstance(node, A.Compare) and node.op in ("=", "!="):
        for attr, other in ((node.left, node.right), (node.right, node.left)):
            if is_attr(attr) and is_concept(other):
                return attr, (other.value,), node.op == "!="
    if (
        isinstance(node, A.In)
        and is_attr(node.arg)
        and any(is_concept(v) for v in node.values)
        and all(isinstance(v, A.Literal) for v in node.values)
    ):
        return node.arg, tuple(v.value for v in node.values), False
    return None


def expand_attribute_concepts(node, hierarchy: Optional[Hierarchy]):
    """``node`` with every attribute-concept comparison spelled out over the values below the concepts:
    ``x.loc = 'TX'`` becomes ``x.loc IN ('TX', 'Dallas', ...)``, and ``x.loc != 'TX'`` a conjunction of
    ``!=`` (one per value, so a null stays false and a Kleene variable is still quantified per event).

    >>> h = Hierarchy({"TX": ["Dallas", "Austin"]}, attribute="loc")
    >>> from cepkit.lang import pretty
    >>> from cepkit.lang.parser import parse_tree
    >>> pretty(expand_attribute_concepts(parse_tree("A a WHERE a.loc = 'TX'").where, h))
    "a.loc IN ('Austin', 'Dallas', 'TX')"
    """
    if hierarchy is None or hierarchy.attribute is None:
        return node

    def expand(n):
        found = concept_comparison(n, hierarchy)
        if found is None:
            return n
        attr, concepts, negated = found
        values = sorted(set().union(*(hierarchy.covers(c) for c in concepts)), key=lambda v: (str(type(v)), v))
        if negated:
            return A.conjoin(A.Compare("!=", attr, A.Literal(v), span=n.span) for v in values)
        return A.In(attr, tuple(A.Literal(v) for v in values), span=n.span)

    return node.transform(expand)


def as_hierarchy(value) -> Optional[Hierarchy]:
    if value is None or isinstance(value, Hierarchy):
        return value
    return Hierarchy(value)
