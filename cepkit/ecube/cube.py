"""``ECube``: a set of named queries over one hierarchy, planned and evaluated together ([LIU] ch. 4).

The design, in short:

- ``graph`` is the E-Cube lattice (Defs 3-4): an edge general -> specific per refinement;
- ``plan(events)`` measures the stream (or takes ``Statistics``), weighs every exact way to compute each
  query (``reuse.py``) with the cost model (``cost.py``) and runs Chase (``plan.py``);
- ``run(events)`` evaluates the plan and keeps every query's results;
- ``drill_down`` / ``roll_up`` add the refined / generalised query and answer it from the kept results:
  kept queries enter Chase at cost 0, so the new query is derived from the cheapest of them, or computed
  from scratch when that is cheaper or no exact reuse exists.

Every query's result is exactly what it gives alone (``cepkit.match``), whichever edges the plan takes.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping, Optional

import networkx as nx

from ..errors import QueryError
from ..lang.hierarchy import as_hierarchy
from ..lang.query import Query, parse
from ..runtime.api import check
from ..runtime.stream import Stream
from ..runtime.matches import Matches
from . import operations
from .cost import MEASURED, CostModel, Statistics, UnitCosts
from .lattice import lattice, refinement
from .plan import ROOT, Plan, make_plan
from .reuse import Executor, Scratch, offer_general_to_specific, offer_specific_to_general
from .shape import shape_of
from .streaming import StreamingCube

REUSE_DIRECTIONS = ("g→s", "s→g")


class ECube:
    """Named queries over one hierarchy, evaluated with reuse along the E-Cube lattice.

    Parameters
    ----------
    queries : mapping name -> query text or ``Query`` (a list is named q1, q2, ...)
    hierarchy : the concept hierarchy (of types, or of an attribute's values), or None
    engine : the engine that evaluates from scratch and the delta queries (``auto``: the one ``cepkit.match``
        would choose for each)
    units : the cost model's unit costs and default selectivities (default: Table 4.1's with the fixed cost
        of an engine run measured, ``cepkit.ecube.cost.MEASURED``)

    Examples
    --------
    >>> import cepkit
    >>> h = {"TX": ["D", "A"], "OK": ["T"]}
    >>> cube = cepkit.ECube({"q1": "SEQ(TX x, OK y)", "q2": "SEQ(D x, T y)"}, h)
    >>> list(cube.graph.edges(data="kind"))
    [('q1', 'q2', 'concept')]
    >>> events = [{"type": t, "ts": i} for i, t in enumerate(["D", "A", "T", "T"])]
    >>> {name: m.positions() for name, m in cube.run(events).items()}
    {'q1': [(0, 2), (1, 2), (0, 3), (1, 3)], 'q2': [(0, 2), (0, 3)]}
    """

    def __init__(self, queries, hierarchy=None, *, engine: str = "auto", units: UnitCosts = MEASURED):
        self.hierarchy = as_hierarchy(hierarchy)
        self.engine = engine
        self.units = units
        self.queries: dict = {}
        self.shapes: dict = {}
        self._graph: Optional[nx.DiGraph] = None
        self._compiled: dict = {}  # shape -> a compiled engine plan never run (``Executor``)
        self._rows: dict = {}  # name -> rows of the last run (kept results)
        self._executor: Optional[Executor] = None
        self.statistics: Optional[Statistics] = None
        self.last_plan: Optional[Plan] = None
        self._directions = REUSE_DIRECTIONS
        named = queries.items() if isinstance(queries, Mapping) else ((f"q{i}", q) for i, q in enumerate(queries, 1))
        for name, query in named:
            self.add(name, query)

    # ------------------------------------------------------------------ the lattice
    def add(self, name: str, query) -> Query:
        """Add a query to the cube (re-plans at the next ``plan``/``run``, [LIU] §4.5)."""
        if name in self.queries or name == ROOT:
            raise ValueError(f"the cube already has a query named {name!r}")
        parsed = _parsed(query, self.hierarchy) if isinstance(query, str) else parse(query, self.hierarchy)
        self.shapes[name] = shape_of(parsed)
        self.queries[name] = parsed
        self._graph = None
        return parsed

    @property
    def graph(self) -> nx.DiGraph:
        """The refinement relations: an edge general -> specific with ``kind`` concept, pattern or both."""
        if self._graph is None:
            self._graph = lattice(self.shapes)
        return self._graph

    # ------------------------------------------------------------------ planning
    def candidates(
        self, statistics: Statistics, directions=REUSE_DIRECTIONS, kept: bool = True, units: Optional[UnitCosts] = None
    ) -> nx.DiGraph:
        """Chase's graph: v0 -> q (scratch, or cost 0 for a kept result unless ``kept`` is False) and every
        exact reuse edge in ``directions`` ("g→s", "s→g"), each with ``cost``, ``method``, ``direction``,
        ``kind`` and the ``strategy`` object; costed with ``units`` (default: the cube's)."""
        model = CostModel.of(statistics, units or self.units)
        graph = nx.DiGraph()
        graph.add_node(ROOT)
        for name, shape in self.shapes.items():
            scratch = Scratch(shape)
            graph.add_node(name, scratch=scratch.cost(model), results=model.results(shape))
            if kept and name in self._rows:
                graph.add_edge(ROOT, name, cost=0.0, method="cached", direction="cached", kind=None, strategy=None)
            else:
                graph.add_edge(
                    ROOT,
                    name,
                    cost=scratch.cost(model),
                    method="scratch",
                    direction="scratch",
                    kind=None,
                    strategy=scratch,
                )
        for general, specific, data in self.graph.edges(data=True):
            g, s, ref = self.shapes[general], self.shapes[specific], data["refinement"]
            for source, target, strategy in (
                (general, specific, offer_general_to_specific(g, s, ref)),
                (specific, general, offer_specific_to_general(g, s, ref)),
            ):
                if strategy is not None and strategy.direction in directions:
                    graph.add_edge(
                        source,
                        target,
                        cost=strategy.cost(model),
                        method=strategy.method,
                        direction=strategy.direction,
                        kind=data["kind"],
                        strategy=strategy,
                    )
        return graph

    def plan(self, events=None, *, statistics: Optional[Statistics] = None, directions=REUSE_DIRECTIONS) -> Plan:
        """The optimal evaluation order for ``events`` (measured) or ``statistics`` (given).

        ``directions`` limits reuse: ``{"g→s"}`` is [LIU] §4.6's *top-down* method, ``{"s→g"}`` *bottom-up*,
        ``()`` every query alone (the state of the art of [LIU] §4.6); the default lets Chase choose."""
        if statistics is None:
            if events is None:
                if self.statistics is None:
                    raise ValueError("plan() needs events or statistics")
                statistics = self.statistics
            else:
                statistics = Statistics.measure(Stream.from_any(events), self._attribute)
        self._directions = tuple(directions)
        self.statistics = statistics  # what the plan was made for (adapt compares with it)
        self.last_plan = self._chase(self.candidates(statistics, directions))
        return self.last_plan

    def what_if(self, statistics: Statistics, units: Optional[UnitCosts] = None, directions=REUSE_DIRECTIONS) -> Plan:
        """The plan Chase would choose, every query from nothing kept, under other ``statistics`` and/or
        ``units`` (a cost-model explorer); the cube and its plan are unchanged."""
        return self._chase(self.candidates(statistics, directions, kept=False, units=units))

    def _chase(self, graph: nx.DiGraph) -> Plan:
        declared = {name: k for k, name in enumerate([ROOT, *self.shapes])}  # ties in declaration order
        return make_plan(graph, order_key=declared.__getitem__)

    def adapt(
        self, events=None, *, statistics: Optional[Statistics] = None, theta: float = 0.25, gamma: float = 0.1
    ) -> bool:
        """Plan adaptation ([LIU] §4.5): when the statistics of ``events`` (or the given ones) have drifted by more
        than ``theta`` from those the plan was made for (``Statistics.drift``), re-run Chase, and install the
        new plan only if it is predicted cheaper by more than ``gamma`` (relative), both plans costed on the
        new statistics. Returns True when the plan changed; ``run(events, keep_plan=True)`` then uses it."""
        if self.last_plan is None or self.statistics is None:
            raise ValueError("plan or run the cube first: adaptation compares with the current plan")
        if statistics is None:
            statistics = Statistics.measure(Stream.from_any(events), self._attribute)
        if self.statistics.drift(statistics) <= theta:
            return False
        graph = self.candidates(statistics, self._directions, kept=False)
        fresh = self._chase(graph)
        edges = [(s.source or ROOT, s.query) for s in self.last_plan.steps]
        if set(self.last_plan.order) == set(self.shapes) and all(e in graph.edges for e in edges):
            current = sum(graph.edges[e]["cost"] for e in edges)
            if current - fresh.cost <= gamma * current:
                return False
        self.last_plan, self.statistics = fresh, statistics
        return True

    @property
    def _attribute(self):
        return self.hierarchy.attribute if self.hierarchy is not None else None

    # ------------------------------------------------------------------ evaluation
    def run(
        self,
        events,
        *,
        statistics: Optional[Statistics] = None,
        directions=REUSE_DIRECTIONS,
        keep_plan: bool = False,
        only=None,
    ) -> dict:
        """Every query's matches over ``events`` (in order), evaluated along the plan (``directions`` as
        for ``plan``); the results are kept for ``drill_down`` / ``roll_up``. Returns name -> ``Matches``.

        By default the stream is measured and planned for; ``keep_plan`` evaluates the current plan instead
        (a stream processed in segments, with ``adapt`` deciding when the plan changes, [LIU] §4.5). ``only``
        names the queries wanted: just they and their sources in the plan are computed."""
        stream = events if isinstance(events, Stream) else Stream.from_any(events)
        stream.require_order()
        for query in self.queries.values():
            check(query, stream)
        self._rows = {}
        self._executor = Executor(stream, self.engine, self._compiled)
        plan = self.last_plan
        if (
            not keep_plan
            or plan is None
            or set(plan.order) != set(self.shapes)
            or any(s.direction == "cached" for s in plan.steps)
        ):
            self.statistics = statistics or Statistics.measure(stream, self._attribute)
            plan = self.plan(statistics=self.statistics, directions=directions)
        self._execute(plan, only)
        return self.results

    def _execute(self, plan: Plan, only=None) -> None:
        """Compute, in plan order, every query not kept yet (the sources come first); with ``only``, just
        those queries and what they are derived from."""
        needed = None if only is None else set(only).union(*(nx.ancestors(plan.tree, q) for q in only))
        for step in plan.steps:
            if step.query in self._rows or (needed is not None and step.query not in needed):
                continue
            rows = None if step.source is None else self._rows[step.source]
            self._rows[step.query] = step.strategy.run(self._executor, rows)

    @property
    def work(self) -> dict:
        """What the last ``run`` (and the operations since) asked of the engine: ``evaluations`` (engine
        runs, one per query from scratch, per delta query and per re-check) and ``events_read`` (events
        fed to it over all runs), a load-independent measure of what reuse saves."""
        if self._executor is None:
            return {"evaluations": 0, "events_read": 0}
        return {"evaluations": self._executor.evaluations, "events_read": self._executor.events_read}

    @property
    def rows(self) -> dict:
        """name -> the kept rows of each computed query: an (n, k) int64 array, one position per positive
        item, in output order (what ``results`` wraps as ``Matches``)."""
        return dict(self._rows)

    def resumed(self, stream: Stream, rows: dict) -> "ECube":
        """A copy of this cube (queries, plan, statistics) whose kept results over ``stream`` are ``rows``
        (name -> rows, as ``rows``): a streaming cube answers a drill-down over the stream so far with it."""
        other = ECube(self.queries, self.hierarchy, engine=self.engine, units=self.units)
        other._rows = dict(rows)
        other._executor = Executor(stream, self.engine, self._compiled)
        other.statistics, other.last_plan, other._directions = self.statistics, self.last_plan, self._directions
        return other

    def stream(self, *, keep: bool = True, theta: float = 0.25, gamma: float = 0.1) -> StreamingCube:
        """This cube over an endless stream in micro-batches: ``push`` / ``extend`` report each query's matches
        as they become final; ``keep=False`` for bounded memory (``cepkit.ecube.streaming``)."""
        return StreamingCube(self, keep=keep, theta=theta, gamma=gamma)

    @property
    def results(self) -> dict:
        """name -> ``Matches`` of the kept results."""
        return {name: self._matches(name) for name in self.shapes if name in self._rows}

    def _matches(self, name: str) -> Matches:
        shape, step = self.shapes[name], None
        if self.last_plan is not None and name in self.last_plan.order:
            step = self.last_plan.step(name)
        info = (
            {}
            if step is None
            else {"source": step.source, "method": step.method, "direction": step.direction, "cost": step.cost}
        )
        return Matches(
            shape.arrays_of(self._rows[name]),
            "ecube",
            self.queries[name],
            info=info,
            limit=self.queries[name].ast.limit,
        )

    def derive(self, target: str, source: str) -> Matches:
        """``target`` computed from the kept results of ``source`` along their lattice edge (g→s or
        s→g, whichever way they are related); QueryError when no exact reuse exists between them."""
        self._require_run()
        general, specific = (source, target) if self.graph.has_edge(source, target) else (target, source)
        if not self.graph.has_edge(general, specific):
            raise QueryError(f"{source} and {target} are not related in the E-Cube lattice")
        ref = refinement(self.shapes[general], self.shapes[specific])
        offer = offer_general_to_specific if general == source else offer_specific_to_general
        strategy = offer(self.shapes[general], self.shapes[specific], ref)
        if strategy is None:
            raise QueryError(f"no exact reuse computes {target} from {source} (reuse.py says when there is one)")
        rows = strategy.run(self._executor, self._rows[source])
        return Matches(
            self.shapes[target].arrays_of(rows),
            "ecube",
            self.queries[target],
            info={"source": source, "method": strategy.method, "direction": strategy.direction},
            limit=self.queries[target].ast.limit,
        )

    # ------------------------------------------------------------------ OLAP operations (Ex 9)
    def drill_down(self, name: str, *, concept=(), pattern=(), as_name: Optional[str] = None) -> Matches:
        """Refine query ``name`` (``concept``: (concept, finer, position) steps; ``pattern``: (item,
        position) insertions) and answer it from the kept results where the lattice allows."""
        return self._olap(
            name, (operations.concept_drill_down, concept), (operations.pattern_drill_down, pattern), as_name
        )

    def roll_up(self, name: str, *, concept=(), pattern=(), as_name: Optional[str] = None) -> Matches:
        """Generalise query ``name`` (``concept``: (concept, coarser, position) steps; ``pattern``: (item,
        position) removals) and answer it from the kept results where the lattice allows."""
        return self._olap(name, (operations.concept_roll_up, concept), (operations.pattern_roll_up, pattern), as_name)

    def _olap(self, name: str, concept_step: tuple, pattern_step: tuple, as_name: Optional[str]) -> Matches:
        """Apply the (operation, arguments) steps that have arguments to query ``name``, then answer it."""
        query = self.queries[name]
        for operation, arguments in (concept_step, pattern_step):
            if arguments:
                query = operation(query, arguments)
        return self._answer(name, query, as_name)

    def _answer(self, name: str, query: Query, as_name: Optional[str]) -> Matches:
        self._require_run()
        existing = next((n for n, q in self.queries.items() if q == query), None)
        if existing is None:
            existing = as_name or self._fresh_name(name)
            self.add(existing, query)
        if existing not in self._rows:  # new, or added since the run
            self._execute(self.plan(statistics=self.statistics, directions=self._directions))
        return self._matches(existing)

    def _fresh_name(self, base: str) -> str:
        k = 1
        while f"{base}.{k}" in self.queries:
            k += 1
        return f"{base}.{k}"

    def _require_run(self) -> None:
        if self._executor is None:
            raise ValueError("run the cube on a stream first: drill-down and roll-up reuse its results")

    def __repr__(self):
        return f"ECube({ {n: str(q) for n, q in self.queries.items()}!r})"


@lru_cache(maxsize=1024)
def _parsed(text: str, hierarchy) -> Query:
    """A query text parsed once per process and hierarchy, as refinements and offers are kept: a fresh cube
    over the same queries (a Spark key's, a bench's run) parses nothing."""
    return parse(text, hierarchy)
