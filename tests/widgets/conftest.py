"""Shared fixtures for the widget tests: the farm-sensor stream of digest 004 §3 (Figure 1), and a small
hand-written CEA with the interface of ``cepkit.automaton`` (digest 004 §3, Figure 2) so the view is tested
on a known automaton: q0 -TRUE/◦-> q0, q0 -H/•-> q1, q1 -TRUE/◦-> q1, q1 -(T ∧ tmp > 40)/•-> q1,
q1 -H/•-> q2 (final). Its runs are simulated naively, one per (state, marked positions).
"""
from dataclasses import dataclass

import networkx as nx
import pytest


def farm_stream(first_type: str = "T") -> list:
    """Digest 004 §3, Figure 1: three farm sensors; the type of position 0 is not recoverable (T or H)."""
    types = [first_type, "T", "H", "H", "T", "T", "T", "H", "H"]
    ids = [2, 0, 0, 1, 1, 0, 1, 1, 0]
    values = [25, 45, 20, 25, 40, 42, 25, 70, 18]
    return [{"type": t, "ts": i, "id": n, ("tmp" if t == "T" else "hum"): v}
            for i, (t, n, v) in enumerate(zip(types, ids, values))]


@pytest.fixture
def farm():
    return farm_stream()


@pytest.fixture(params=["T", "H"])
def farm_either(request):
    """Both readings of Figure 1 (position 0 a T or an H): every paper output must be the same."""
    return farm_stream(request.param)


@dataclass(frozen=True)
class Transition:
    src: int
    dst: int
    predicate: str
    mark: str
    test: object


@dataclass(frozen=True)
class Step:
    position: int
    event: object
    active: dict
    truncated: bool
    matches: list


class Figure2Automaton:
    """The CEA of digest 004 §3, Figure 2: CEs that begin and end with an H and hold T events above 40."""
    states = [0, 1, 2]
    initial = 0
    finals = {2}
    transitions = [
        Transition(0, 0, "TRUE", "◦", lambda e: True),
        Transition(0, 1, "H", "•", lambda e: e.type == "H"),
        Transition(1, 1, "TRUE", "◦", lambda e: True),
        Transition(1, 1, "T ∧ tmp > 40", "•", lambda e: e.type == "T" and e.get("tmp", 0) > 40),
        Transition(1, 2, "H", "•", lambda e: e.type == "H"),
    ]

    def to_networkx(self) -> nx.MultiDiGraph:
        graph = nx.MultiDiGraph()
        for s in self.states:
            graph.add_node(s, initial=s == self.initial, final=s in self.finals)
        for t in self.transitions:
            graph.add_edge(t.src, t.dst, predicate=t.predicate, mark=t.mark, label=f"{t.predicate} / {t.mark}")
        return graph

    def steps(self, events):
        runs = {(self.initial, ())}
        for event in events:
            runs = {(t.dst, partial + ((event.position,) if t.mark == "•" else ()))
                    for state, partial in runs for t in self.transitions if t.src == state and t.test(event)}
            active = {}
            for state, partial in sorted(runs):
                active.setdefault(state, []).append(partial)
            done = sorted(p for s, p in runs if s in self.finals and p and p[-1] == event.position)
            yield Step(event.position, event, active, False, done)


@pytest.fixture
def figure2():
    return Figure2Automaton()
