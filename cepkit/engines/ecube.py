"""The ``ecube`` engine: one query through the E-Cube machinery (digest 000a ch. 4).

The query joins a cube with its first concept drill-down (the first positive item whose concept, type
or attribute value, has children, refined to its first child). Chase then decides, by the cost model on
the stream, whether the query is computed from scratch or answered from the child's results
specific-to-general (the child's matches plus the deltas of the pointer pairs it does not cover, Eq 4.8);
``Matches.info`` says which. Either way the result is the query's own.

>>> import cepkit
>>> h = {"TX": ["D", "A"], "OK": ["T"]}
>>> events = [{"type": t, "ts": i} for i, t in enumerate(["D", "A", "T", "T"])]
>>> cepkit.match("SEQ(TX x, OK y)", events, hierarchy=h, engine="ecube").positions()
[(0, 2), (1, 2), (0, 3), (1, 3)]

Incremental use buffers the stream and answers at ``close()``: the plan needs the stream's statistics.
"""
from __future__ import annotations

from ..ecube import ECube, concept_drill_down, shape_of
from ..runtime.events import Stream
from ..runtime.registry import Engine, IncrementalPlan, Plan, register

QUERY = "query"


def first_drill_down(query):
    """The query with its first refinable concept replaced by that concept's first child, or None."""
    hierarchy = query.hierarchy
    if hierarchy is None:
        return None
    for position, item in enumerate(shape_of(query).items, 1):
        if hierarchy.attribute is None:
            concept = item.concept
        else:   # one attribute concept written on the item (x.loc = 'TX')
            concept = item.value_concepts[0] if len(item.value_concepts) == 1 else None
        if item.positive and concept is not None and hierarchy.children.get(concept):
            return concept_drill_down(query, [(concept, hierarchy.children[concept][0], position)])
    return None


class EcubePlan(Plan):
    """A query and its first drill-down in one cube; pickles as its query."""

    def __init__(self, engine: "EcubeEngine", query):
        self.query = query
        shape_of(query, lambda node, what: engine.unsupported(query, node, what))
        self._steps = []

    def __getstate__(self):
        return {"query": self.query}

    def __setstate__(self, state):
        self.__init__(EcubeEngine(), state["query"])

    def cube(self) -> ECube:
        queries = {QUERY: self.query}
        child = first_drill_down(self.query)
        if child is not None:
            queries["drill_down"] = child
        return ECube(queries, self.query.hierarchy)

    def run(self, stream) -> list:
        cube = self.cube()
        matches = cube.run(stream)[QUERY]
        self._steps = [str(s) for s in cube.last_plan.steps]
        return list(matches)

    def matcher(self) -> IncrementalPlan:
        return _BufferedMatcher(self)

    def info(self) -> dict:
        return {"plan": self._steps}


class _BufferedMatcher(IncrementalPlan):
    def __init__(self, plan: EcubePlan):
        self.plan = plan
        self.events: list = []

    def push(self, event) -> list:
        self.events.append(event)
        return []

    def close(self) -> list:
        return self.plan.run(Stream(self.events))


class EcubeEngine(Engine):
    name = "ecube"
    rank = 60
    description = ("E-Cube: the query with its concept drill-down in a cube; Chase chooses scratch or reuse of "
                   "the child's results (s→g); flat SEQ with negation, conditions, windows, hierarchies")
    features = frozenset({
        "sequence", "negation", "unary_conditions", "binary_conditions", "correlated_filters",
        "condition_items", "time_window", "event_window", "partition", "hierarchy", "attribute_hierarchy",
    })

    def compile(self, query, **options) -> EcubePlan:
        return EcubePlan(self, query)


register(EcubeEngine())
