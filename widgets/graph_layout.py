"""A layered left-to-right layout for small directed graphs (automata), with no Graphviz binary.

Layers are breadth-first distances from the source (STACK-NOTES §5: ``multipartite_layout`` by BFS depth
places layers but leaves crossings); inside each layer nodes are ordered by the barycenter heuristic of
Sugiyama et al., sweeping down and up a few times, which removes most crossings of the small automata a
query compiles to. Nodes the source does not reach go in one last layer.
"""
from __future__ import annotations

import networkx as nx


def layers(graph: nx.DiGraph, source) -> list:
    """Nodes grouped by breadth-first distance from ``source``; unreachable nodes form a last layer.

    >>> layers(nx.DiGraph([(0, 1), (0, 2), (1, 3), (4, 4)]), 0)
    [[0], [1, 2], [3], [4]]
    """
    depth = nx.single_source_shortest_path_length(graph, source)
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
