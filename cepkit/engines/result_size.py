"""A result's size before an engine that enumerates every match makes it (docs/language.md §12).

ses and rcep enumerate every match of a Kleene ``+`` under ALL (their runs branch at each event of the
``+``) and LIMIT cuts after: over 60 A's then a B, ``A+ a ; B b`` has 2^60 - 1 matches, which they would
take years to list. Before such a run, the automaton counts the result list by list without enumerating
it (``AutomatonPlan.size``, milliseconds to seconds); a result beyond memory is refused as the automaton
refuses it (``cepkit.errors.check_room``), and under a LIMIT one past ``REACH`` matches is refused naming
the automaton, which takes only the first n. A query the automaton cannot run (a condition across
variables) is not counted."""

from __future__ import annotations

from ..errors import QueryError, check_room
from ..lang.query import Query
from ..runtime.registry import get_engine

REACH = 10**7  # matches an enumerating engine lists before a LIMIT cuts them (~10-30 s on ses and rcep)
BYTES_PER_MATCH = 28  # the least a match takes: its end and emit position (16) and one bound event (12)


def refuse_beyond_reach(query: Query, stream, engine: str) -> None:
    """Refuse, before ``engine`` runs it, a Kleene query under ALL whose result it cannot hold or, under a
    LIMIT, would enumerate far past the limit (``REACH``); nothing for other queries."""
    if not query.kleene_variables or query.strategy != "ALL":
        return
    try:
        plan = get_engine("automaton").compile(query)
    except QueryError:
        return
    size = plan.size(stream)
    limit = query.ast.limit
    if limit is None:
        check_room(size, size * BYTES_PER_MATCH if size >= 0 else -1)
    elif size < 0 or size > max(REACH, limit):
        many = f"{size:,}" if size >= 0 else "more than 2^63"
        raise QueryError.at(
            query.ast,
            f"engine {engine!r} lists every match before LIMIT {limit:,} keeps the first {limit:,}, and this "
            f"result has {many}: run it on an engine that stops at the limit",
            query.text,
            engines=("automaton",),
        )
