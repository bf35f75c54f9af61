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
    # An edge dearer than its target's edge from the root is never in a minimum arborescence (swapping it for
    # the root's keeps a tree, v0 having no incoming edge): left out, Edmonds runs on what may pay.
    alone = {v: _finite(cost) for _, v, cost in graph.out_edges(root, data="cost")}
    kept = [(u, v) for u, v, cost in graph.edges(data="cost") if u == root or _finite(cost) <= alone.get(v, math.inf)]
    edges = [(u, v, _finite(graph.edges[u, v]["cost"]), (u, v)) for u, v in kept]
    tree = nx.DiGraph()
    tree.add_nodes_from(graph.nodes(data=True))
    tree.add_edges_from((u, v, graph.edges[u, v]) for u, v in _edmonds(edges, root))
    return tree


def _edmonds(edges: list, root) -> list:
    """Chu-Liu/Edmonds: the (u, v) keys of a minimum spanning arborescence of ``edges`` ((u, v, weight, key)
    each) rooted at ``root``. Each node takes its cheapest incoming edge (ties: the first listed); a cycle
    among those is contracted into one node, whose incoming edges cost what they save over the cycle's
    own, and the rest solved recursively. Ours rather than networkx's ``minimum_spanning_arborescence``,
    which copies the graph several times: 1-2 ms for a ten-query cube, as much as a small stream's
    run, and Chase runs at every ``run`` and every batch of a streaming cube (tests/ecube check both agree)."""
    cheapest: dict = {}
    for edge in edges:
        u, v, w, _ = edge
        if v != root and u != v and (v not in cheapest or w < cheapest[v][2]):
            cheapest[v] = edge
    cycle, done = None, {root}
    for start in cheapest:
        path, v = [], start
        while v not in done and v not in path:
            path.append(v)
            v = cheapest[v][0]
        if v in path:
            cycle = path[path.index(v) :]
            break
        done.update(path)
    if cycle is None:
        return [edge[3] for edge in cheapest.values()]
    members, node = set(cycle), ("cycle", len(edges), id(cycle))
    contracted, entering = [], {}
    for u, v, w, key in edges:
        if v in members and u not in members:
            contracted.append((u, node, w - cheapest[v][2], key))
            entering[key] = v
        elif u in members and v not in members:
            contracted.append((node, v, w, key))
        elif v not in members:
            contracted.append((u, v, w, key))
    chosen = _edmonds(contracted, root)
    (into,) = [entering[key] for key in chosen if key in entering]
    return chosen + [cheapest[v][3] for v in cycle if v != into]


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
