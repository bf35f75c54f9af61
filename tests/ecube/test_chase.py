"""Chase's Edmonds (``cepkit.ecube.plan._edmonds``) against networkx's minimum spanning arborescence on
random graphs: the same total cost, a spanning arborescence rooted at v0."""

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from cepkit.ecube.plan import ROOT, chase


@st.composite
def chase_graphs(draw):
    n = draw(st.integers(1, 7))
    nodes = [f"q{k}" for k in range(n)]
    graph = nx.DiGraph()
    for v in nodes:
        graph.add_edge(ROOT, v, cost=draw(st.integers(1, 60)))
    for u in nodes:
        for v in nodes:
            if u != v and draw(st.booleans()):
                graph.add_edge(u, v, cost=draw(st.integers(0, 60)))
    return graph


@settings(max_examples=300, deadline=None)
@given(chase_graphs())
def test_chase_is_a_minimum_spanning_arborescence(graph):
    tree = chase(graph)
    assert nx.is_arborescence(tree) and set(tree.nodes) == set(graph.nodes)
    assert all(graph.has_edge(u, v) for u, v in tree.edges)
    best = nx.minimum_spanning_arborescence(graph, attr="cost")
    assert sum(graph.edges[e]["cost"] for e in tree.edges) == sum(graph.edges[e]["cost"] for e in best.edges)
