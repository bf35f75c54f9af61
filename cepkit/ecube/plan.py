"""The optimal evaluation order ([LIU] §4.3, Chase): a minimum spanning arborescence rooted at a
virtual query v0 over the graph of every way to compute each query.

The Chase graph has an edge v0 -> q (q from scratch) for every query and, for every lattice edge, a
general-to-specific edge and a specific-to-general edge when an exact strategy exists (``reuse.py``),
each weighted by the cost model. Edmonds' algorithm (``networkx.minimum_spanning_arborescence``) picks
each query's cheapest source so that the whole plan is cheapest, cycles included (Ex 10/11).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Optional

import networkx as nx

ROOT = "v0"


def chase(graph: nx.DiGraph, root: str = ROOT) -> nx.DiGraph:
    """The minimum spanning arborescence of ``graph`` (edge attribute ``cost``) rooted at ``root``.

    >>> g = nx.DiGraph([("v0", "q1", {"cost": 10}), ("v0", "q2", {"cost": 9}), ("q1", "q2", {"cost": 3}),
    ...                 ("q2", "q1", {"cost": 11})])
    >>> sorted(chase(g).edges)
    [('q1', 'q2'), ('v0', 'q1')]
    """
    if graph.in_degree(root):
        raise ValueError(f"the root {root!r} must have no incoming edge")
    # networkx turns a weight w into (2·max − min + 1 − w): beyond 2**53 the + 1 is lost, every weight becomes 0
    # and no edge is taken (a long chain's costs reach 1e16 and more; an overflowing one inf). Edmonds' choice
    # only depends on sums of weights, so it runs on the costs scaled into [0, 1] (inf and nan as the largest).
    # An edge dearer than its target's edge from the root is never in a minimum arborescence (swapping it for
    # the root's keeps a tree, v0 having no incoming edge): left out, Edmonds runs on what may pay, and not at
    # all when nothing does (a small stream, or queries with nothing to share).
    alone = {v: _finite(cost) for _, v, cost in graph.out_edges(root, data="cost")}
    kept = [(u, v) for u, v, cost in graph.edges(data="cost") if u == root or _finite(cost) <= alone.get(v, math.inf)]
    if all(u == root for u, _ in kept) and len(alone) == graph.number_of_nodes() - 1:
        tree = nx.DiGraph()
        tree.add_nodes_from(graph.nodes(data=True))
        tree.add_edges_from((root, v, graph.edges[root, v]) for v in alone)
        return tree
    graph = graph.edge_subgraph(kept).copy()
    cheapest = _cheapest_parents(graph, root)
    if cheapest is not None:  # no cycle among the cheapest incoming edges: they are the arborescence
        tree = nx.DiGraph()
        tree.add_nodes_from(graph.nodes(data=True))
        tree.add_edges_from((u, v, graph.edges[u, v]) for v, u in cheapest.items())
        return tree
    bounded = {(u, v): _finite(cost) for u, v, cost in graph.edges(data="cost")}
    top = max(bounded.values(), default=1.0) or 1.0
    scaled = graph.copy()
    nx.set_edge_attributes(scaled, {edge: cost / top for edge, cost in bounded.items()}, "chase_weight")
    return nx.minimum_spanning_arborescence(scaled, attr="chase_weight", preserve_attrs=True)


def _cheapest_parents(graph: nx.DiGraph, root: str) -> Optional[dict]:
    """Each node's cheapest incoming edge's source (ties: the root, then the earlier node), or None when
    those edges make a cycle (Edmonds then contracts it; without one they are the minimum arborescence)."""
    rank = {n: k for k, n in enumerate(graph.nodes)}
    rank[root] = -1
    parent = {}
    for v in graph.nodes:
        if v != root:
            parent[v] = min(graph.in_edges(v, data="cost"), key=lambda e: (_finite(e[2]), rank[e[0]]))[0]
    for v in parent:
        seen = set()
        while v != root:
            if v in seen:
                return None
            seen.add(v)
            v = parent[v]
    return parent


def _finite(cost: float) -> float:
    return cost if math.isfinite(cost) else sys.float_info.max


@dataclass(frozen=True)
class Step:
    """How one query is computed: from ``source`` (None: from scratch) by ``strategy`` at ``cost``."""

    query: str
    source: Optional[str]
    method: str
    direction: str  # "scratch", "g→s", "s→g" or "cached"
    cost: float
    strategy: object = None

    def __str__(self):
        where = "scratch" if self.source is None else f"{self.direction} from {self.source}"
        return f"{self.query}: {where} ({self.method}, cost {self.cost:.4g})"


@dataclass
class Plan:
    """A chosen evaluation order: the candidate ``graph`` (with v0), the arborescence ``tree``, the
    ``steps`` in evaluation order, the plan's ``cost`` and the ``scratch_cost`` of running every query
    alone (the state-of-the-art baseline of [LIU] §4.6)."""

    graph: nx.DiGraph
    tree: nx.DiGraph
    steps: list

    @property
    def order(self) -> list:
        return [s.query for s in self.steps]

    @property
    def cost(self) -> float:
        return sum(s.cost for s in self.steps)

    @property
    def scratch_cost(self) -> float:
        return sum(d["scratch"] for _, d in self.graph.nodes(data=True) if "scratch" in d)

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.query == name)

    def __str__(self):
        lines = [str(s) for s in self.steps]
        lines.append(f"total cost {self.cost:.4g} (each alone: {self.scratch_cost:.4g})")
        return "\n".join(lines)


def make_plan(graph: nx.DiGraph, order_key=None) -> Plan:
    """Run Chase on a candidate graph whose edges carry ``cost``, ``strategy``, ``method`` and
    ``direction``, and list the steps in a topological order of the arborescence (ties by
    ``order_key``, the queries' order of declaration)."""
    tree = chase(graph)
    order = [n for n in nx.lexicographical_topological_sort(tree, key=order_key) if n != ROOT]
    steps = []
    for name in order:
        ((source, _),) = tree.in_edges(name)
        data = tree.edges[source, name]
        steps.append(
            Step(
                name,
                None if source == ROOT else source,
                data["method"],
                data["direction"],
                data["cost"],
                data["strategy"],
            )
        )
    return Plan(graph, tree, steps)
