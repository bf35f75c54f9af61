"""A layered left-to-right layout for small directed graphs (automata), with no Graphviz binary.

The steps of Sugiyama et al.'s layered drawing, kept small:

1. *Cycle removal.* The back edges of a depth-first search from the source (and self-loops) are set
   aside, leaving a DAG; the drawing shows them as arcs running backwards.
2. *Layering.* Each node goes to the layer of its longest path from the source in that DAG, so every
   remaining edge points right and a chain of states reads left to right (breadth-first depth, as in
   STACK-NOTES §5, would put a state and its successor in one layer whenever a shortcut skips the first).
   Nodes the source does not reach form one last layer.
3. *Crossing reduction.* Inside each layer nodes are ordered by the barycenter of their neighbours in the
   adjacent layer, sweeping down and up a few times.
"""
from __future__ import annotations

import networkx as nx


def back_edges(graph: nx.DiGraph, source) -> set:
    """Edges ``(u, v)`` closing a cycle in a depth-first search from ``source`` (self-loops included).

    >>> sorted(back_edges(nx.DiGraph([(0, 1), (1, 2), (2, 1), (2, 2)]), 0))
    [(2, 1), (2, 2)]
    """
    on_path, done, found = set(), set(), set()
    stack = [(source, iter(graph.successors(source)))]
    on_path.add(source)
    while stack:
        node, successors = stack[-1]
        child = next(successors, None)
        if child is None:
            stack.pop()
            on_path.discard(node)
            done.add(node)
        elif child in on_path:
            found.add((node, child))
        elif child not in done:
            on_path.add(child)
            stack.append((child, iter(graph.successors(child))))
    return found


def layers(graph: nx.DiGraph, source) -> list:
    """Nodes grouped by their longest path from ``source`` once back edges are set aside; unreachable
    nodes form a last layer.

    >>> layers(nx.DiGraph([(0, 1), (0, 2), (1, 2), (2, 3), (3, 1), (4, 4)]), 0)
    [[0], [1], [2], [3], [4]]
    """
    reachable = nx.descendants(graph, source) | {source}
    closing = back_edges(graph, source)
    dag = nx.DiGraph((u, v) for u, v in graph.subgraph(reachable).edges() if (u, v) not in closing)
    dag.add_node(source)
    depth = {source: 0}
    for node in nx.topological_sort(dag):
        for child in dag.successors(node):
            depth[child] = max(depth.get(child, 0), depth[node] + 1)
    grouped = [[] for _ in range(max(depth.values()) + 1)]
    unreachable = []
    for node in graph.nodes:
        (grouped[depth[node]] if node in depth else unreachable).append(node)
    return grouped + ([unreachable] if unreachable else [])


def layered_layout(graph: nx.DiGraph, source, sweeps: int = 4) -> dict:
    """``{node: (x, y)}`` with x the layer and y the rank inside it, centred on 0, crossings reduced.

    >>> g = nx.DiGraph([("s", "b"), ("s", "a"), ("a", "t"), ("b", "t")])
    >>> layered_layout(g, "s")["t"]
    (2, 0.0)
    """
    ordered = layers(graph, source)
    neighbours = {n: (set(graph.predecessors(n)) | set(graph.successors(n))) - {n} for n in graph.nodes}
    for sweep in range(2 * sweeps):
        downward = sweep % 2 == 0
        indices = range(1, len(ordered)) if downward else range(len(ordered) - 2, -1, -1)
        for i in indices:
            fixed = {n: rank for rank, n in enumerate(ordered[i - 1 if downward else i + 1])}
            current = {n: rank for rank, n in enumerate(ordered[i])}
            ordered[i] = sorted(ordered[i], key=lambda n: (_barycenter(n, neighbours, fixed, current[n]), current[n]))
    return {n: (x, (len(layer) - 1) / 2 - rank) for x, layer in enumerate(ordered) for rank, n in enumerate(layer)}


def _barycenter(node, neighbours: dict, fixed: dict, current: int) -> float:
    ranks = [fixed[m] for m in neighbours[node] if m in fixed]
    return sum(ranks) / len(ranks) if ranks else current
