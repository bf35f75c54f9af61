"""A result's size before an engine that enumerates every match makes it (docs/language.md §12).

ses and rcep enumerate every match of a Kleene ``+`` under ALL (their runs branch at each event of the
``+``) and LIMIT cuts after: over 60 A's then a B, ``A+ a ; B b`` has 2^60 - 1 matches, which they would
take years to list. Before such a run, unless a bound from the window already rules it out
(``window_bound``: most windowed queries, at the cost of one search over the times), the automaton counts the result list by list without enumerating
it (``AutomatonPlan.size``, milliseconds to seconds); a result beyond memory is refused as the automaton
refuses it (``cepkit.errors.check_room``), and under a LIMIT one past ``REACH`` matches is refused naming
the automaton, which takes only the first n. A query the automaton cannot run (a condition across
variables) is not counted."""

from __future__ import annotations

import numpy as np

from ..errors import QueryError, check_room, memory_bytes
from ..lang import ast as A
from ..lang.query import Query
from ..runtime.registry import get_engine

REACH = 10**7  # matches an enumerating engine lists before a LIMIT cuts them (~10-30 s on ses and rcep)
BYTES_PER_MATCH = 28  # the least a match takes: its end and emit position (16) and one bound event (12)


def refuse_beyond_reach(query: Query, stream, engine: str) -> None:
    """Refuse, before ``engine`` runs it, a Kleene query under ALL whose result it cannot hold or, under a
    LIMIT, would enumerate far past the limit (``REACH``); nothing for other queries."""
    if not query.kleene_variables or query.strategy != "ALL" or _fits(window_bound(query, stream)):
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


def _fits(bound) -> bool:
    """Whether a ``window_bound`` keeps the result within ``REACH`` matches and memory."""
    return bound is not None and bound <= min(REACH, memory_bytes() // BYTES_PER_MATCH)


def window_bound(query: Query, stream):
    """An upper bound on the matches of ``query`` over ``stream`` under ALL from its window alone (a float;
    None where it gives none, or past 2^63). A match ending at an
    event labels each event of its window with one of the variables its type can take or leaves it out
    (AND's items take distinct events, docs/language.md §2), so at most the product of the window's
    events' label counts end there; summed over the events. Not for nested ``+`` (one labelling,
    several groupings) nor without a window."""
    within, n = query.ast.within, len(stream)
    plus = list(query.ast.pattern.find_all(A.Plus))
    if within is None or n == 0 or any(len(list(p.pattern.find_all(A.Plus))) for p in plus):
        return None
    times = np.asarray(stream.times, dtype=float)
    if within.events:
        first = np.maximum(np.arange(n) - int(within.amount) + 1, 0)
    elif np.all(times[1:] >= times[:-1]):
        w = within.seconds * (1 + 1e-9) + 1e-9 * max(1.0, float(np.abs(times).max()))  # the window's ulps
        first = np.searchsorted(times, times - w, side="left")
    else:
        return None
    atoms = [a for a in query.ast.pattern.find_all(A.Atom) if a.var is not None]
    if query.hierarchy is not None or any(a.type is None for a in atoms):  # any type may take any variable
        taking = np.full(len(stream.type_names), len(atoms))
    else:
        taking = np.array([sum(a.type == name for a in atoms) for name in stream.type_names])
    logs = np.concatenate([[0.0], np.cumsum(np.log(taking + 1.0)[stream.type_codes])])
    log_each = logs[1:] - logs[first]  # over the events from the window's first to each one
    if log_each.max() > 63 * np.log(2):
        return None
    return float(np.exp(log_each).sum())
