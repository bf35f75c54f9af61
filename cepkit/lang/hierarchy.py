"""Concept hierarchies (E-Cube, LANGUAGE.md §7): a concept stands for its own type and every type below it."""
from __future__ import annotations

from functools import cached_property
from typing import Mapping, Optional, Sequence

import networkx as nx

from ..errors import QueryError


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
        return f"Hierarchy({self.children!r})"


def as_hierarchy(value) -> Optional[Hierarchy]:
    if value is None or isinstance(value, Hierarchy):
        return value
    return Hierarchy(value)
