"""The SES automaton of a query, stepped through one match window ([SES] §4.4, Fig 4.6).

``SesRun`` has the shape ``cepkit.widgets.AutomatonView`` draws: ``states``, ``initial``, ``finals``,
``transitions``, ``to_networkx()`` (every SES transition marks its event, •) and ``steps(events)``, which
runs SESExec (Alg 2) on the window ``events`` (W[0] is the first of them) and reports, after each event,
the partial matches of every active state and the matches that event completed.

>>> import cepkit
>>> run = SesRun("SELECT STNM * PATTERN SEQ({A a, B b}, C c) WITHIN 10")
>>> run.states
['∅', '{a}', '{b}', '{a,b}', '{a,b,c}']
>>> events = [{"type": t, "ts": i} for i, t in enumerate("BAC")]
>>> [(s.position, s.active, s.matches) for s in run.steps(events)][-1]
(2, {'{a,b,c}': [(0, 1, 2)]}, [(0, 1, 2)])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import networkx as nx

from ...lang.printer import pretty
from ...lang.query import parse
from ...runtime.stream import Stream
from ...runtime.registry import get_engine
from .execution import run_window
from .windows import Entry


@dataclass(frozen=True)
class SesStep:
    """The automaton after reading ``event`` (at ``position``): state -> partial matches (sorted position
    tuples), and the matches (position tuples) the event completed."""

    position: int
    event: object
    active: dict
    truncated: bool = False
    matches: list = field(default_factory=list)


def state_label(state) -> str:
    """``{c,p}`` as the thesis writes states (variables sorted), ``∅`` for the start."""
    return "{" + ",".join(sorted(state)) + "}" if state else "∅"


class SesRun:
    """A query's SES automaton for stepping, under the query's strategy (ALL or STNM; ROBUST_STNM, which
    backtracks, is stepped as STNM) or ``strategy``."""

    def __init__(self, query, hierarchy=None, strategy: Optional[str] = None):
        q = parse(query, hierarchy)
        q = q.with_strategy(strategy or ("STNM" if q.strategy == "ROBUST_STNM" else q.strategy))
        self.plan = get_engine("ses").compile(q, two_phase=False)
        automaton = self.plan.automaton
        self.states = [state_label(s) for s in automaton.states]
        self.initial = state_label(automaton.start)
        self.finals = {state_label(automaton.final)}
        self.transitions = automaton.transitions

    def condition(self, transition) -> str:
        """Θδ of a transition ([SES] §4.3): the conditions on its variable and the variables bound in its target."""
        index = self.plan.index
        target = sum(1 << index[v] for v in transition.target)
        var = index[transition.var]
        kept = [pretty(c.expr) for c in self.plan.conjuncts if var in c.variables and c.mask & ~target == 0]
        return " and ".join(kept) or "true"

    def to_networkx(self) -> nx.MultiDiGraph:
        graph = nx.MultiDiGraph()
        for state in self.states:
            graph.add_node(state, initial=state == self.initial, final=state in self.finals)
        for t in self.transitions:
            graph.add_edge(
                state_label(t.source),
                state_label(t.target),
                key=t.number,
                var=t.var,
                mark="•",
                predicate=f"{t.label} {t.var}",
                label=f"{t.label} = ({state_label(t.source)}, {t.var}, Θδ): {self.condition(t)}",
            )
        return graph

    def steps(self, events):
        """One ``SesStep`` per event of the window ``events`` (a DataFrame, dicts or Events)."""
        stream = Stream.from_any(events)
        window = [Entry(e, e.time, self.plan.vars_of(e)) for e in stream]
        if not window:
            return
        trace: list = []
        run_window(self.plan.compiled[0], window, keep_skips=self.plan.strategy == "ALL", trace=trace)
        after = dict(trace)  # A stops early once no instance is left
        names = self.plan.variables
        done = set()
        for c, entry in enumerate(window):
            active: dict = {}
            completed = []
            for state, binding in after.get(c, []):
                positions = tuple(sorted(e.position for events_ in binding for e in events_))
                label = state_label({names[v] for v in range(len(names)) if state >> v & 1})
                active.setdefault(label, []).append(positions)
                if label in self.finals and positions not in done:
                    done.add(positions)
                    completed.append(positions)
            yield SesStep(entry.event.position, entry.event, active, matches=completed)
