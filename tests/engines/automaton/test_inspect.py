"""``cepkit.automaton``: the public view of the compiled automaton the widgets draw and step."""

import networkx as nx
import pytest

import cepkit
from cepkit.datasets import cel_fire_sensors
from cepkit.engines.automaton.inspect import PARTIALS_PER_STATE
from cel_formulas import PHI1


def test_states_transitions_and_graph():
    a = cepkit.automaton(PHI1)
    assert a.states == list(range(len(a.states))) and a.initial == 0 and a.finals <= set(a.states)
    assert {t.mark for t in a.transitions} == {"•", "◦"}
    assert {t.predicate for t in a.transitions if t.mark == "•"} == {
        "T ∧ tmp > 40 and id = 0",
        "H ∧ hum < 25 and id = 0",
    }
    graph = a.to_networkx()
    assert isinstance(graph, nx.MultiDiGraph)
    assert graph.nodes[a.initial]["initial"] and all(graph.nodes[f]["final"] for f in a.finals)
    labels = {d["label"] for _, _, d in graph.edges(data=True)}
    assert "TRUE / ◦" in labels and all(set(d) >= {"predicate", "mark", "label"} for *_, d in graph.edges(data=True))


def test_steps_follow_the_matcher():
    """One Step per event; active runs are position tuples; matches are those the event completes."""
    a = cepkit.automaton(PHI1)
    steps = list(a.steps(cel_fire_sensors()))
    assert [s.position for s in steps] == list(range(9))
    assert [[m.positions for m in s.matches] for s in steps] == [[], [], [(1, 2)], [], [], [], [], [], [(1, 8), (5, 8)]]
    assert all(() in s.active[a.initial] for s in steps)  # the run that has marked nothing yet
    after_1 = {p for partial in steps[1].active.values() for p in partial}
    assert (1,) in after_1 and not steps[1].truncated


def test_long_partial_lists_are_cut_and_say_so():
    a = cepkit.automaton("A+ a ; B b")
    steps = list(a.steps([{"type": "A"}] * 8))
    assert steps[-1].truncated
    assert all(len(partial) <= PARTIALS_PER_STATE for partial in steps[-1].active.values())


def test_ranked_strategies_show_their_runs():
    a = cepkit.automaton(f"SELECT NEXT * PATTERN {PHI1}")
    steps = list(a.steps(cel_fire_sensors()))
    assert [[m.positions for m in s.matches] for s in steps][-1] == [(1, 8)]
    assert any(partial for s in steps for partial in s.active.values() if (1,) in partial)


def test_determinized_states_discovered_so_far():
    a = cepkit.automaton(PHI1)
    states, moves = a.determinized()
    assert [s.states for s in states] == [frozenset({a.initial})] and not moves
    list(a.steps(cel_fire_sensors()))
    states, moves = a.determinized()
    assert len(states) > 1 and any(s.final for s in states)
    assert {m.mark for m in moves} >= {"◦", "•x", "•y"}
    assert any("T ∧ tmp > 40" in m.letter for m in moves)
    assert a.info()["determinized_states"] == len(states)


def test_outside_the_fragment():
    with pytest.raises(cepkit.QueryError) as err:
        cepkit.automaton("SEQ(T x, !H h, T z)")
    assert "negation" in str(err.value) and "automaton" not in err.value.engines
