"""The public view of a compiled automaton, for people and widgets: ``cepkit.automaton(query)``.

It shows the CEA of [CEL] §6-7 (states, transitions labelled ``predicate / mark``), the determinized
states discovered so far, and Algorithm 1 stepped event by event: after each event, the runs active in
each state (as their partial complex events) and the matches completed. A run of the determinized
automaton in state S = {q1, q2, …} is active in every CEA state of S.

>>> import cepkit
>>> a = cepkit.automaton("H AS x ; (T AS y FILTER y.tmp > 40)+ ; H AS z")
>>> [(t.src, t.dst, t.predicate, t.mark) for t in a.transitions][:3]
[(0, 0, 'TRUE', '◦'), (0, 1, 'H', '•'), (1, 2, 'TRUE', '◦')]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import networkx as nx

from ...lang.query import parse
from ...runtime.stream import Stream
from ...runtime.registry import get_engine

PARTIALS_PER_STATE = 20  # partial matches listed per state in an AutomatonStep (``truncated`` says when cut)


@dataclass(frozen=True)
class Edge:
    """A transition ``src --predicate/mark--> dst``; ``var`` is the variable a • transition binds."""

    src: int
    dst: int
    predicate: str
    mark: str
    var: Optional[str] = None

    @property
    def label(self) -> str:
        return f"{self.predicate} / {self.mark}"


@dataclass(frozen=True)
class AutomatonStep:
    """The automaton after reading ``event`` (at ``position``): CEA state -> partial matches (position
    tuples; the empty tuple is a run that has marked nothing yet), at most ``PARTIALS_PER_STATE`` each
    (``truncated`` when some list was cut), and the matches the event completed."""

    position: int
    event: object
    active: dict
    truncated: bool
    matches: list = field(default_factory=list)


@dataclass(frozen=True)
class DetState:
    """A state of the lazily determinized automaton: the set of CEA states its runs are in."""

    id: int
    states: frozenset
    final: bool


@dataclass(frozen=True)
class DetEdge:
    """A discovered move: reading a letter (the non-TRUE predicates the event satisfies), mark ``◦`` or
    ``•x`` (binding x)."""

    src: int
    dst: int
    letter: str
    mark: str


class Automaton:
    """The compiled automaton of a query (see the module docstring)."""

    def __init__(self, query, plan):
        self.query = query
        self.plan = plan
        program = plan.program
        cea = program.cea
        self.states = list(range(cea.n_states))
        self.initial = cea.initial
        self.finals = set(cea.finals)
        self.transitions = [Edge(t.src, t.dst, str(t.guard), "•" if t.mark else "◦", t.var) for t in cea.transitions]

    def __repr__(self):
        return (
            f"Automaton({str(self.query)!r}: {len(self.states)} states, {len(self.transitions)} transitions, "
            f"{len(self.plan.program.det.subsets)} determinized so far)"
        )

    def to_networkx(self) -> nx.MultiDiGraph:
        """States with ``initial``/``final`` flags, transitions with ``predicate``, ``mark``, ``label``, ``var``."""
        graph = nx.MultiDiGraph()
        for s in self.states:
            graph.add_node(s, initial=s == self.initial, final=s in self.finals)
        for t in self.transitions:
            graph.add_edge(t.src, t.dst, predicate=t.predicate, mark=t.mark, label=t.label, var=t.var)
        return graph

    def steps(self, events):
        """One ``AutomatonStep`` per event of ``events`` (a DataFrame, dicts or Events), by the plan's matcher."""
        matcher = self.plan.matcher()
        for event in Stream.from_any(events).events:
            matches = matcher.push(event)
            active, truncated = matcher.active(PARTIALS_PER_STATE)
            yield AutomatonStep(event.position, event, active, truncated, matches)

    def determinized(self) -> tuple:
        """(states, moves) of the determinized automaton discovered so far (by ``steps`` and runs)."""
        det = self.plan.program.det
        names = {i: v for i, v in enumerate(self.plan.program.cea.variables)}
        states = [DetState(i, s, det.is_final(i)) for i, s in enumerate(det.subsets)]
        moves = []
        for (src, letter), (skip, marks) in det.moves.items():
            text = self._letter(letter)
            if skip >= 0:
                moves.append(DetEdge(src, skip, text, "◦"))
            moves += [DetEdge(src, dst, text, "•" + (names.get(var) or "")) for var, dst in marks]
        return states, moves

    def _letter(self, letter: int) -> str:
        cea = self.plan.program.cea
        guards = dict.fromkeys(
            str(cea.transitions[i].guard)
            for i in sorted(self.plan.program.letters.enabled[letter])
            if not cea.transitions[i].guard.is_true
        )
        return " | ".join(guards) or "(no predicate holds)"

    def info(self) -> dict:
        return self.plan.info()


def automaton(query, hierarchy=None) -> Automaton:
    """The automaton engine's compiled automaton for ``query`` ([CEL]), for drawing and inspection.

    Parameters
    ----------
    query : str or Query
        The query text (docs/language.md), or a parsed ``Query``.
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to.

    Returns
    -------
    Automaton
        Its ``states``, ``initial`` state, ``finals``, ``transitions`` (``Edge``s with their predicate,
        mark and variable) and ``to_networkx()``.

    Raises
    ------
    QueryError
        The query does not parse, or is outside the automaton's fragment (naming the engines that can
        run it).

    Examples
    --------
    >>> import cepkit
    >>> a = cepkit.automaton("A a ; B b")
    >>> len(a.states), a.initial, a.finals
    (4, 0, {3})
    """
    q = parse(query, hierarchy)
    return Automaton(q, get_engine("automaton").compile(q))
