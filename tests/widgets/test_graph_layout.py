"""The layered layout: back edges set aside, layers by longest path, crossings removed by barycenter sweeps."""

import itertools

import networkx as nx

from cepkit.widgets.graph_layout import back_edges, layered_layout, layers


def crossings(graph, positions) -> int:
    """Pairs of edges between the same two adjacent layers whose ends are in opposite orders."""
    edges = [(positions[u], positions[v]) for u, v in graph.edges if abs(positions[u][0] - positions[v][0]) == 1]
    edges = [(a, b) if a[0] < b[0] else (b, a) for a, b in edges]
    return sum(
        1 for (a, b), (c, d) in itertools.combinations(edges, 2) if a[0] == c[0] and (a[1] - c[1]) * (b[1] - d[1]) < 0
    )


def test_layers_are_longest_paths_and_unreachable_nodes_come_last():
    graph = nx.MultiDiGraph([(0, 0), (0, 1), (1, 1), (1, 2), (3, 2)])
    assert layers(graph, 0) == [[0], [1], [2], [3]]


def test_a_shortcut_does_not_pull_a_chain_into_one_layer():
    # ε-removal gives 0 -> 2 besides 0 -> 1 -> 2; 2 -> 1 closes a cycle and runs backwards
    graph = nx.MultiDiGraph([(0, 1), (0, 2), (1, 2), (2, 1), (2, 3)])
    assert back_edges(graph, 0) == {(2, 1)}
    assert layers(graph, 0) == [[0], [1], [2], [3]]
    positions = layered_layout(graph, 0)
    assert all(positions[v][0] > positions[u][0] for u, v in graph.edges() if (u, v) != (2, 1))


def test_barycenter_sweeps_remove_crossings():
    # two chains s->a->x and s->b->y, with node order arranged so the naive layout crosses
    graph = nx.DiGraph()
    graph.add_nodes_from(["s", "a", "b", "y", "x"])
    graph.add_edges_from([("s", "a"), ("s", "b"), ("a", "x"), ("b", "y")])
    naive = {n: (x, -rank) for x, layer in enumerate(layers(graph, "s")) for rank, n in enumerate(layer)}
    assert crossings(graph, naive) == 1
    assert crossings(graph, layered_layout(graph, "s")) == 0


def test_positions_are_centred_per_layer():
    graph = nx.DiGraph([(0, 1), (0, 2), (0, 3)])
    positions = layered_layout(graph, 0)
    assert positions[0] == (0, 0.0)
    assert sorted(y for n, (x, y) in positions.items() if x == 1) == [-1.0, 0.0, 1.0]


def test_labels_with_quotes_and_backslashes_reach_dot_literally():
    import pytest
    from cepkit.widgets.graph_layout import dot_available, dot_drawing, dot_source, layered_drawing

    nodes, edges = {"a": 'say "hi"', "b": "b\\n"}, [("a", "b", 'x.name = "A\\B"'), ("b", "a", "")]
    assert '"say \\"hi\\""' in dot_source(nodes, edges, "LR", 12) and '"b\\\\n"' in dot_source(nodes, edges, "LR", 12)
    for drawing in (
        layered_drawing(nodes, edges, "TB"),
        *([dot_drawing(nodes, edges, "TB")] if dot_available() else []),
    ):
        assert set(drawing.nodes) == {"a", "b"} and len(drawing.edges) == 2
        assert drawing.edges[0].label is not None and drawing.edges[1].label is None
        assert drawing.nodes["a"].y > drawing.nodes["b"].y  # top to bottom: a first
        assert all(0 <= n.x <= drawing.width and 0 <= n.y <= drawing.height for n in drawing.nodes.values())
    if not dot_available():
        pytest.skip("Graphviz dot is not installed: only the fallback was checked")
