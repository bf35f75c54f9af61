"""The SES automaton's construction ([SES] Def 4.1, §4.3) and the brute force of Ex 4.8."""

import math

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from cepkit.engines.ses import SesAutomaton, permutation_automata


def test_p1_states_and_transitions_ex_4_4():
    """Ex 4.3/4.4: P1 = ⟨{c, p+, d}, {b}⟩ has the 9 states and the transitions Θ1..Θ17 in the thesis's order; the
    loops sit on every state holding p, and {c, p, d} (qf of N1 = qs of N2) carries both Θ16 and Θ17."""
    n = SesAutomaton.build([("c", "p", "d"), ("b",)], kleene={"p"})
    assert ["".join(sorted(q)) for q in n.states] == ["", "c", "d", "p", "cd", "cp", "dp", "cdp", "bcdp"]
    assert [("".join(sorted(t.source)), t.var) for t in n.transitions] == [
        ("", "c"),
        ("", "d"),
        ("", "p"),
        ("c", "d"),
        ("c", "p"),
        ("d", "c"),
        ("d", "p"),
        ("p", "c"),
        ("p", "d"),
        ("p", "p"),
        ("cd", "p"),
        ("cp", "d"),
        ("cp", "p"),
        ("dp", "c"),
        ("dp", "p"),
        ("cdp", "p"),
        ("cdp", "b"),
    ]
    assert [t.number for t in n.transitions] == list(range(1, 18))
    assert n.start == frozenset() and n.final == frozenset("cpdb")


def test_a_single_set_in_isolation_ex_4_2():
    """Ex 4.2: ⟨{b}⟩ alone has two states, ∅ and {b}, and the single transition (∅, b, Θ)."""
    n = SesAutomaton.build([("b",)], kleene=())
    assert n.states == (frozenset(), frozenset("b")) and [(t.source, t.var) for t in n.transitions] == [
        (frozenset(), "b")
    ]


set_shapes = st.lists(st.lists(st.booleans(), min_size=1, max_size=3), min_size=1, max_size=3)


def shape(kleene_flags):
    """Sets of fresh variable names and the Kleene ones, from one list of Kleene flags per set."""
    sets, kleene, counter = [], set(), 0
    for flags in kleene_flags:
        members = []
        for is_kleene in flags:
            name = f"v{counter}"
            counter += 1
            members.append(name)
            if is_kleene:
                kleene.add(name)
        sets.append(tuple(members))
    return sets, kleene


@settings(max_examples=40, deadline=None)
@given(set_shapes)
def test_size_of_the_automaton(kleene_flags):
    """[SES] §4.3: Σ 2^|Bi| − (k−1) states; each set contributes |Bi|·2^(|Bi|−1) forward edges and 2^(|Bi|−1) loops per
    v+; the paths from qs to qf (loops aside) are the Π|Bi|! permutations the brute force runs separately."""
    sets, kleene = shape(kleene_flags)
    n = SesAutomaton.build(sets, kleene)
    assert len(n.states) == sum(2 ** len(s) for s in sets) - (len(sets) - 1)
    expected_edges = sum(len(s) * 2 ** (len(s) - 1) + sum(v in kleene for v in s) * 2 ** (len(s) - 1) for s in sets)
    assert len(n.transitions) == expected_edges
    graph = nx.DiGraph((t.source, t.target) for t in n.transitions if not t.loop)
    permutations = math.prod(math.factorial(len(s)) for s in sets)
    assert sum(1 for _ in nx.all_simple_paths(graph, n.start, n.final)) == permutations
    assert len(permutation_automata(sets, kleene)) == permutations


def test_brute_force_of_ex_4_8():
    """Ex 4.8: ⟨{c,p,d},{b}⟩ expands into 6 sequences cdpb, cpdb, dcpb, dpcb, pcdb, pdcb (docs/references.md E13: the text prints
    the second as "c,p,c,b"); each chain lets p loop from its first binding until b."""
    chains = permutation_automata([("c", "p", "d"), ("b",)], kleene={"p"})
    assert sorted("".join(a.variables) for a in chains) == ["cdpb", "cpdb", "dcpb", "dpcb", "pcdb", "pdcb"]
    cpdb = next(a for a in chains if a.variables == ("c", "p", "d", "b"))
    assert [("".join(sorted(t.source)), t.var) for t in cpdb.transitions] == [
        ("", "c"),
        ("c", "p"),
        ("cp", "p"),
        ("cp", "d"),
        ("cdp", "p"),
        ("cdp", "b"),
    ]


def test_graph_for_views():
    """``to_networkx``: one node per state with its depth (bound variables) and label, one keyed edge per
    transition, loops included (what an automaton view draws)."""
    graph = SesAutomaton.build([("c", "p", "d"), ("b",)], kleene={"p"}).to_networkx()
    assert graph.number_of_nodes() == 9 and graph.number_of_edges() == 17
    assert graph.nodes[frozenset("cpd")]["depth"] == 3 and graph.nodes[frozenset()]["label"] == "∅"
    assert graph.nodes[frozenset("cpdb")]["final"] and graph.nodes[frozenset()]["start"]
    assert graph.edges[frozenset("p"), frozenset("p"), 10]["label"] == "δ10"
