"""The ``ecube`` engine: one query through the E-Cube machinery ([LIU] ch. 4).

The query joins a cube with its first concept drill-down (the first positive item whose concept, type
or attribute value, has children, refined to its first child). With ``reuse="children"`` (the default)
the query is answered from the child's results, specific-to-general ([LIU] §4.4.5, Eq 4.8): the child from
scratch, then its matches plus the delta queries of the pointer pairs it does not cover; a single query
costs about what it costs alone this way (``C(q) − C(child) + C(child)``), and every answer exercises the
reuse. ``reuse="plan"`` lets Chase choose by the cost model (for one query: from scratch). A query with no
concept to refine runs from scratch. ``Matches.info["plan"]`` lists what was computed, and how.

>>> import cepkit
>>> h = {"TX": ["D", "A"], "OK": ["T"]}
>>> events = [{"type": t, "ts": i} for i, t in enumerate(["D", "A", "T", "T"])]
>>> m = cepkit.match("SEQ(TX x, OK y)", events, hierarchy=h, engine="ecube")
>>> m.positions(), m.info["plan"]
([(0, 2), (1, 2), (0, 3), (1, 3)], ['drill_down: scratch', 'query: s→g from drill_down (union_concept)'])

Incremental use (``cepkit.Matcher``, Spark streaming) runs the plan over the kept events at each micro-batch
and reports each match once its last event is closed (``cepkit.ecube.incremental``); a query without a
window answers at ``close()``.
"""

from __future__ import annotations

import datetime

import numpy as np

from ..ecube import ECube, concept_drill_down, shape_of
from ..ecube.incremental import KeptEvents, Reach
from ..ecube.reuse import Executor
from ..runtime.match_list import MatchList
from ..runtime.matches import Matches
from ..runtime.stream import Stream
from ..runtime.registry import DISORDER_MODES, Engine, IncrementalPlan, Plan, register

QUERY, CHILD = "query", "drill_down"
REUSE = ("children", "plan")


def first_drill_down(query):
    """The query with its first refinable concept replaced by that concept's first child, or None."""
    hierarchy = query.hierarchy
    if hierarchy is None:
        return None
    for position, item in enumerate(shape_of(query).items, 1):
        if hierarchy.attribute is None:
            concept = item.concept
        else:  # one attribute concept written on the item (x.loc = 'TX')
            concept = item.value_concepts[0] if len(item.value_concepts) == 1 else None
        if item.positive and concept is not None and hierarchy.children.get(concept):
            return concept_drill_down(query, [(concept, hierarchy.children[concept][0], position)])
    return None


class EcubePlan(Plan):
    """A query and its first drill-down in one cube; pickles as its query and option."""

    def __init__(self, engine: "EcubeEngine", query, reuse: str = "children"):
        if reuse not in REUSE:
            raise ValueError(f"reuse must be one of {', '.join(REUSE)}, not {reuse!r}")
        self.query = query
        self.reuse = reuse
        shape_of(query, lambda node, what: engine.unsupported(query, node, what))
        self._steps = []
        self._cube = None

    def __getstate__(self):
        return {"query": self.query, "reuse": self.reuse}

    def __setstate__(self, state):
        self.__init__(EcubeEngine(), **state)

    def cube(self) -> ECube:
        """The query's cube, made once (its lattice, reuse strategies and compiled plans serve every run: an
        incremental matcher runs it at every micro-batch)."""
        if self._cube is None:
            queries = {QUERY: self.query}
            child = first_drill_down(self.query)
            if child is not None:
                queries[CHILD] = child
            self._cube = ECube(queries, self.query.hierarchy)
        return self._cube

    def run(self, stream) -> list:
        return list(self.matches(stream))

    def matches(self, stream, keep_plan: bool = False) -> Matches:
        """The query's ``Matches`` over ``stream`` (columns: no ``Match`` object made); ``keep_plan``: along the
        plan of the last run (the incremental matcher, run per micro-batch, plans once)."""
        cube = self.cube()
        if self.reuse == "children" and CHILD in cube.queries:
            cube.run(stream, only=[CHILD], directions=(), keep_plan=keep_plan)
            matches = cube.derive(QUERY, CHILD)
            self._steps = [
                f"{CHILD}: scratch",
                f"{QUERY}: {matches.info['direction']} from {CHILD} ({matches.info['method']})",
            ]
        else:
            matches = cube.run(stream, only=[QUERY], keep_plan=keep_plan)[QUERY]  # the drill-down if reused
            self._steps = [str(s) for s in cube.last_plan.steps if s.query in cube.results]
        return matches

    def matcher(self) -> IncrementalPlan:
        return _KeptMatcher(self)

    def info(self) -> dict:
        return {"plan": self._steps, "reuse": self.reuse}


class _KeptMatcher(IncrementalPlan):
    """Micro-batches through the batch plan: each ``extend`` (or ``push``) runs it over the kept events and
    reports the matches whose last event closes (``cepkit.ecube.incremental``): final matches, each once, as
    soon as no later event can change them. Without a window nothing is final before ``close``."""

    def __init__(self, plan: EcubePlan):
        self.plan = plan
        self.kept = KeptEvents(Reach.of([plan.query]))
        shape = shape_of(plan.query)
        self._last = (shape.items[shape.positives[-1]], shape.attribute)  # what a match's last event fits
        # with no lookahead an event closes as it comes, so one no match can end at reports nothing: pushed,
        # it waits here (up to ``HELD`` events) and joins the kept events with the next push that may
        self._held: list = []
        self._holds = self.kept.reach is not None and self.kept.reach.lookahead == 0

    HELD = 1024

    @property
    def answers_at_close(self) -> bool:
        return self.kept.reach is None

    def push(self, event) -> list:
        if self._holds and not self._last[0].accepts(event, self._last[1]) and len(self._held) < self.HELD:
            self._held.append(event)
            return []
        events, self._held = self._held + [event], []
        return self.extend(Stream(events, isinstance(event.ts, datetime.datetime)))

    def _release(self) -> None:
        """The held events into the kept ones (they close as they come; none ends a match)."""
        if self._held:
            events, self._held = self._held, []
            self.extend(Stream(events, isinstance(events[0].ts, datetime.datetime)))

    def extend(self, stream):
        self._release()
        kept = self.kept.add(stream)
        found = self._report(kept, self._closing())
        self.kept.forget()
        return found

    def close(self) -> list:
        self._release()
        return self._report(self.kept.stream, self._closing(final=True))

    def _closing(self, final: bool = False) -> np.ndarray:
        (closing,) = self.kept.settle(final).values()  # one query: one lookahead
        return closing

    def _report(self, stream, closing: np.ndarray):
        """The matches over ``stream`` whose last event is at one of the ``closing`` positions, in output
        order (they close in that order)."""
        if len(closing):  # a match ends at an event its last positive item accepts: else no run is needed
            ends = Executor(stream).accepted(*self._last)
            closing = closing[ends[np.searchsorted(stream.positions, closing)]]
        if not len(closing):
            return []
        arrays = self.plan.matches(stream, keep_plan=True).arrays
        last = arrays.positions[arrays.offsets[1:] - 1]
        rows = np.flatnonzero(np.isin(last, closing))
        return MatchList(arrays.take(rows)) if len(rows) else []


class EcubeEngine(Engine):
    name = "ecube"
    rank = 60
    description = (
        "E-Cube: a concept query answered from its drill-down's results (s→g), or as Chase plans "
        "(reuse='plan'); flat SEQ with negation, conditions, windows, type and attribute hierarchies"
    )
    features = frozenset(
        {
            "sequence",
            "negation",
            "unary_conditions",
            "binary_conditions",
            "correlated_filters",
            "condition_items",
            "time_window",
            "event_window",
            "partition",
            "hierarchy",
            "attribute_hierarchy",
        }
    )
    options = frozenset({"reuse"})
    disorder = frozenset(DISORDER_MODES)  # through cepkit.runtime.disorder

    def compile(self, query, reuse: str = "children") -> EcubePlan:
        return EcubePlan(self, query, reuse)


register(EcubeEngine())
