"""The SES automaton N = (Q, Δ, qs, qf) of a set pattern ([SES] Def 4.1, §4.3).

A state is the set of variables bound so far; qs = ∅ and qf = all variables. Each set Bi is translated on
its own, one state per subset of its variables and, from each state q, one transition per variable
v ∉ q plus a self-loop per Kleene variable v+ ∈ q; the set automata are then concatenated (the accepting
state of N_i is the start state of N_(i+1), whose states are renamed q ∪ V_1..V_i). A path through a set's
automaton is one permutation of its variables, which is why one SES automaton does the work of the
|B1|!···|Bk|! sequential automata of the brute force (Ex 4.8), kept here as ``permutation_automata`` for
the benchmarks.

States and transitions are numbered as in the thesis (Ex 4.3, 4.4, 6.6): states by size, then by their
sorted variable names; within a state, transitions by variable name; sets left to right. For
P1 = ⟨{c, p+, d}, {b}⟩ that gives the 9 states and the 17 transitions Θ1..Θ17 of Fig 4.4.

The automaton is structure only; conditions are attached when a plan compiles it (``execution``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterable, Sequence

import networkx as nx


@dataclass(frozen=True)
class Transition:
    """δ = (q, v, Θδ): from state ``source``, bind the event to ``var`` (a self-loop when ``var`` ∈ q)."""

    number: int
    source: frozenset
    var: str

    @property
    def target(self) -> frozenset:
        return self.source | {self.var}

    @property
    def loop(self) -> bool:
        return self.var in self.source

    @property
    def label(self) -> str:
        return f"δ{self.number}"


def _subset_key(state: Iterable[str]) -> tuple:
    return (len(state), sorted(state))


class SesAutomaton:
    """States (frozensets of variable names) and numbered transitions of an SES automaton.

    >>> n = SesAutomaton.build([("c", "p", "d"), ("b",)], kleene={"p"})
    >>> len(n.states), len(n.transitions)
    (9, 17)
    >>> [(sorted(t.source), t.var) for t in n.transitions[-2:]]
    [(['c', 'd', 'p'], 'p'), (['c', 'd', 'p'], 'b')]
    """

    def __init__(self, variables: Sequence[str], states: Sequence[frozenset], transitions: Sequence[Transition]):
        self.variables = tuple(variables)
        self.states = tuple(states)
        self.transitions = tuple(transitions)
        self.start = frozenset()
        self.final = frozenset(self.variables)

    @classmethod
    def build(cls, sets: Sequence[Sequence[str]], kleene: Iterable[str]) -> "SesAutomaton":
        """The SES automaton of ⟨B1..Bk⟩: each set's power set automaton, concatenated left to right."""
        kleene = frozenset(kleene)
        states, moves, bound = [frozenset()], [], frozenset()
        for members in sets:
            subsets = sorted(
                (frozenset(c) for r in range(len(members) + 1) for c in itertools.combinations(members, r)),
                key=_subset_key,
            )
            for q in subsets:
                state = bound | q
                if q:
                    states.append(state)
                moves.extend((state, v) for v in sorted(members) if v not in q or v in kleene)
            bound |= frozenset(members)
        return cls([v for s in sets for v in s], states, _numbered(moves))

    @classmethod
    def chain(cls, orders: Sequence[Sequence[str]], kleene: Iterable[str]) -> "SesAutomaton":
        """The sequential automaton binding the variables in the given order, set by set (a path of
        ``build``'s automaton); a Kleene variable loops from its first binding until the next set starts."""
        kleene = frozenset(kleene)
        states, moves, bound = [frozenset()], [], frozenset()
        for order in orders:
            done = []
            for v in order:
                moves.extend((bound, w) for w in sorted(done) if w in kleene)
                moves.append((bound, v))
                bound = bound | {v}
                states.append(bound)
                done.append(v)
            moves.extend((bound, w) for w in sorted(done) if w in kleene)
        return cls([v for s in orders for v in s], states, _numbered(moves))

    def outgoing(self, state: frozenset) -> tuple:
        return tuple(t for t in self.transitions if t.source == state)

    def to_networkx(self) -> nx.MultiDiGraph:
        """States as nodes (``depth`` = number of bound variables, for ``multipartite_layout``), transitions
        as keyed edges carrying ``var``, ``number`` and ``label``."""
        graph = nx.MultiDiGraph()
        for state in self.states:
            graph.add_node(
                state,
                depth=len(state),
                label="".join(sorted(state)) or "∅",
                start=state == self.start,
                final=state == self.final,
            )
        for t in self.transitions:
            graph.add_edge(t.source, t.target, key=t.number, var=t.var, number=t.number, label=t.label)
        return graph

    def __repr__(self):
        return f"SesAutomaton({len(self.states)} states, {len(self.transitions)} transitions)"


def _numbered(moves) -> tuple:
    return tuple(Transition(i, source, var) for i, (source, var) in enumerate(moves, start=1))


def permutation_automata(sets: Sequence[Sequence[str]], kleene: Iterable[str]) -> list:
    """The brute force of Ex 4.8 / Fig 4.11: one sequential automaton per choice of a permutation of
    every set, |B1|!···|Bk|! in all. Under skip-till-any-match their matches together are exactly the SES
    automaton's, each found by one of them (the order of the variables' first events picks it).

    >>> [" ".join(a.variables) for a in permutation_automata([("c", "p", "d"), ("b",)], kleene={"p"})]
    ['c p d b', 'c d p b', 'p c d b', 'p d c b', 'd c p b', 'd p c b']
    """
    return [
        SesAutomaton.chain(orders, kleene) for orders in itertools.product(*(itertools.permutations(s) for s in sets))
    ]
