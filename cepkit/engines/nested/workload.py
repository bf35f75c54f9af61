"""A workload of NEEL queries over one stream, sharing their construction ([LIU] §5.3-5.5).

``match_workload(queries, events)`` compiles every query with one ``PlanBuilder``, so identical sub-queries
are one operator and one summary for all of them; the queries that can run shared are planned together by
the Plan-Finder (``planner``): each SEQ's direction is chosen over the whole workload, and SEQs of different
queries with a common suffix (prefix) build it once and fan the rows out to each query ([LIU] Ex 28; the
complex workload E1-E7 of [LIU] §5.5, Fig 5.12). The others run alone, nested.

>>> from cepkit.engines.nested.workload import match_workload
>>> events = [{"type": t, "ts": k} for k, t in enumerate("RWSDCOWSDC")]
>>> found = match_workload(["SEQ(R r, W w, S s, D d, C c) WITHIN 9 s",
...                         "SEQ(O o, W w, S s, D d, C c) WITHIN 9 s"], events)
>>> [m.positions() for m in found]
[[(0, 1, 2, 3, 4), (0, 1, 2, 3, 9), (0, 1, 2, 8, 9), (0, 1, 7, 8, 9), (0, 6, 7, 8, 9)], [(5, 6, 7, 8, 9)]]
>>> found[0].info["plan"]["groups"]
[['Q1', 'Q2']]
"""

from __future__ import annotations

from functools import lru_cache

from ...lang.query import Query, parse
from ...runtime.columns import as_events
from ...runtime.matches import Matches
from ...runtime.stream import Stream
from .execution import Execution
from .operators import PlanBuilder
from .planner import StreamStats, choose_directions, groups_of
from .shared import run_shared, top_branches
from .summaries import SubQuery


class _Workload:
    """The queries compiled together: what ``Execution`` reads of a form (window, partition, sub-queries)."""

    def __init__(self, queries: list, caching):
        first = queries[0]
        for q in queries[1:]:
            if (q.within, q.partition_by, q.hierarchy) != (first.within, first.partition_by, first.hierarchy):
                raise ValueError(
                    "a workload's queries share one WITHIN, PARTITION BY and hierarchy "
                    f"({first.text!r} and {q.text!r} differ)"
                )
        self.queries, self.query, self.caching = queries, first, caching
        builder = PlanBuilder()
        self.roots = [builder.build(q.scoped) for q in queries]
        for root in self.roots:
            builder.mark_top(root)
        self.root = self.roots[0]
        self.subqueries = tuple(builder.subqueries)
        self.shared = {sub: SubQuery(sub, builder.nodes[sub]) for sub in self.subqueries}


@lru_cache(maxsize=16)
def _compiled(texts: tuple, caching) -> _Workload:
    """A workload given as query texts, compiled once (it holds no run state, as ``cepkit.match``'s plans)."""
    return _Workload([parse(t) for t in texts], caching)


def match_workload(queries, events, caching="b") -> list:
    """The ``Matches`` of each query over ``events`` (a DataFrame, Arrow table, dicts or a Stream), in order.
    ``info["plan"]`` (the same for every query run shared) gives the directions and the groups of queries
    that share construction, as ``Q1``, ``Q2``, ... by their place in ``queries``."""
    from . import NestedEngine  # the engine registers itself; compiled alone for the queries not shared

    if not queries:
        return []
    if all(isinstance(q, str) for q in queries):
        workload = _compiled(tuple(queries), caching)
        queries = workload.queries
    else:
        queries = [q if isinstance(q, Query) else parse(q) for q in queries]
        workload = _Workload(queries, caching)
    stream = events if isinstance(events, Stream) else Stream.from_any(as_events(events))
    branches, owners, alone = [], [], {}
    for k, (q, root) in enumerate(zip(queries, workload.roots)):
        found, why = top_branches(root, workload.shared)
        if found is None or caching is None:
            alone[k] = why or "caching=None"
            continue
        branches += found
        owners += [len(set(owners))] * len(found)
    shared_queries = [k for k in range(len(queries)) if k not in alone]
    results: dict = {}
    if branches:
        execution = Execution(workload, complete=True)
        if not execution.add_stream(stream):
            execution.add_all(stream)
        stats = StreamStats.of(execution)
        directions, cost = choose_directions(branches, stats)
        names = [f"Q{shared_queries[o] + 1}" for o in owners]
        groups = [sorted(set(g), key=lambda q: int(q[1:])) for g in groups_of(branches, directions, names)]
        found, counters = run_shared(
            execution, branches, list(directions), owners, [queries[k].select for k in shared_queries]
        )
        plan = {
            "chosen": "shared",
            "why": f"a workload of {len(shared_queries)} queries planned together, "
            f"estimated {round(cost):,} µs to build",
            "costs": {"shared": round(cost)},
            "directions": list(directions),
            "groups": groups,
        }
        for o, k in enumerate(shared_queries):
            results[k] = Matches(
                found[o],
                "nested",
                queries[k],
                info={"execution": "shared", "plan": plan, "cache": counters},
                stream=stream,
                limit=queries[k].ast.limit,
            )
    for k, why in alone.items():
        compiled = NestedEngine().compile(queries[k], caching=caching)
        found = compiled.run(stream)
        info = compiled.info()
        info["plan"]["why"] = f"not in the workload's shared plan: {why}; " + info["plan"]["why"]
        results[k] = Matches(found, "nested", queries[k], info=info, stream=stream, limit=queries[k].ast.limit)
    return [results[k] for k in range(len(queries))]
