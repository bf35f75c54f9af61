"""``cepkit.why_not``: the near misses of a query that has few or no matches, with their explanations.

A near miss is a candidate that fails few clauses. The search is bounded so it stays usable on real streams
(the tour's month of flights): candidates are the matches of *relaxed* queries, the query with one clause
dropped (a conjunct of a condition, a negation or EXISTS, the strategy, CONSUME BY) or the window widened by
``margin``, then two clauses, up to ``depth``. So a candidate's events always have the pattern's types and
order, and pass every condition but those dropped: "every unary condition but one" at depth 1. The relaxed
queries run on the fastest engine that supports them (``engine="auto"``); each candidate (at most ``budget``
of them, shared by the relaxations; a relaxation with more candidates than its share has them taken evenly
over the whole stream, not its first ones) is then judged by ``cepkit.explain``, the reference semantics. The answer's ``complete`` says
whether this bounded search saw every candidate it defines.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Optional

from ..errors import ResultTooLarge
from ..lang import ast as A
from ..lang.query import parse
from ..runtime.api import quiet_match, type_warnings
from .judge import Judge
from .report import NearMisses


def why_not(
    query,
    events,
    limit: int = 10,
    strategy: Optional[str] = None,
    hierarchy=None,
    margin: float = 0.5,
    depth: int = 2,
    budget: int = 300,
    tz: Optional[str] = None,
    *,
    type: Optional[str] = None,
    ts: Optional[str] = None,
) -> NearMisses:
    """The near misses of ``query`` over ``events``: up to ``limit`` ``Explanation``s, fewest failed clauses
    first (then those closest to passing: a comparison's values, a window's excess, relative), with ``.complete`` telling whether the bounded search was exhaustive.

    ``margin`` widens the window of the relaxed queries (0.5: half the window again); ``depth`` is the most
    clauses dropped at once; ``budget`` the most candidates judged.

    Parameters
    ----------
    query : str or Query
        The query text, or a parsed ``Query``.
    events : DataFrame, pyarrow Table, iterable of dicts or Event, or Stream
        The events, as ``cepkit.match`` takes them.
    limit : int, default 10
        The most near misses returned.
    strategy : str, optional
        A selection strategy overriding the query's own.
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to.
    margin : float, default 0.5
        How much the relaxed queries widen the window (0.5: half the window again).
    depth : int, default 2
        The most clauses dropped at once.
    budget : int, default 300
        The most candidates judged.
    tz : str, optional
        The time zone the reasons print datetime ts in (as given by default).
    type, ts : str, optional
        The columns holding each event's type and time when not ``type`` and ``ts`` (as ``cepkit.match``).

    Returns
    -------
    NearMisses
        A list of ``Explanation``, fewest failed clauses first, with ``complete``.

    Raises
    ------
    QueryError
        The query does not parse, or names an attribute the events lack.
    ValueError
        ``limit`` is below 1.

    See Also
    --------
    cepkit.explain : one candidate, clause by clause.

    Examples
    --------
    >>> import cepkit
    >>> misses = cepkit.why_not("SEQ(T x, H y) WHERE x.tmp > 44 and y.hum < 19 and x.id = y.id",
    ...                         cepkit.datasets.cel_fire_sensors(), limit=2)
    >>> [(m.positions, [r.kind for r in m.failures]) for m in misses], misses.complete
    ([((5, 8), ['condition']), ((1, 2), ['condition'])], True)
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    judge = Judge(query, events, strategy, hierarchy, tz, type=type, ts=ts)
    clauses = _clauses(judge.query) + ([("limit",)] if judge.limit is not None else [])
    try:
        found = {
            m.key for m in quiet_match(_relaxed(judge.query, (), margin), judge.stream)
        }  # its matches, unprojected
        if judge.limit is not None:  # the matches LIMIT leaves out are near misses (one clause failed)
            found -= {m.key for m in quiet_match(_relaxed(judge.query, (), 0.0), judge.stream)[judge.limit :]}
    except ResultTooLarge as err:  # said for why_not: a LIMIT does not shrink what it reads
        why = "why_not reads every match of the query and of its relaxations, under a LIMIT too"
        raise ResultTooLarge(err.matches, err.needed, err.available, judge.limit, why=why) from None
    seen: set = set()
    judged: list = []
    stopped = None
    deepest = min(depth, len(clauses))
    done = 0
    offered = 0  # candidates the relaxed queries found, when more than the budget let be judged
    undecided = 0  # candidates whose judgement spent the reference's search budget (``Explanation.stopped``)
    for k in range(1, deepest + 1):
        relaxations = list(itertools.combinations(clauses, k))
        found_k = [quiet_match(_relaxed(judge.query, dropped, margin), judge.stream) for dropped in relaxations]
        # the budget left is shared by the relaxations at this depth, what one with fewer candidates leaves going
        # to the others; a relaxation with more candidates than its share has them taken evenly over the whole
        # stream (output order is by position), not its first ones (the stream's first weeks)
        for candidates, share in zip(found_k, _shares([len(c) for c in found_k], max(budget - len(seen), 0))):
            picks = _spread(len(candidates), share)
            if len(picks) < len(candidates):
                offered += len(candidates)
            for i in picks:
                m = candidates[i]
                if m.key in found or m.key in seen:
                    continue
                seen.add(m.key)
                explanation = judge.explain(dict(m.bindings))
                if not explanation.decided:
                    undecided += 1
                elif not explanation.is_match:
                    judged.append(explanation)
        done = k
        if offered or sum(len(e.failures) <= k for e in judged) >= limit:
            break  # deeper relaxations only add candidates failing more than k clauses (or the budget is spent)
    judged.sort(key=lambda e: (len(e.failures), sum(r.values.get("gap", 1.0) for r in e.failures), e.positions))
    if offered:
        stopped = (
            f"the budget of {budget} candidates was spent: those judged were taken evenly over the whole "
            f"stream from {offered:,}"
        )
    complete = stopped is None and (done == len(clauses) or sum(len(e.failures) <= done for e in judged) >= limit)
    if stopped is None and not complete:
        stopped = f"only candidates failing at most {done} clause(s) were searched (depth={depth})"
    if undecided:
        left = f"{undecided:,} candidate(s) left undecided: the reference's search budget was spent on them"
        stopped, complete = (left if stopped is None else f"{stopped}; {left}"), False
    absent = type_warnings(judge.query, judge.stream, hierarchy)  # a misspelt type has no candidate at all
    return NearMisses(judged[:limit], complete, stopped, len(seen), judge.text, absent)


def _shares(sizes: list, budget: int) -> list:
    """How many of each relaxation's ``sizes`` candidates to judge: ``budget`` shared evenly, the part a
    relaxation with fewer candidates leaves going to the others (max-min fair).

    >>> _shares([405, 0, 10, 2], 300), _shares([500, 500], 300), _shares([3, 4], 300)
    ([288, 0, 10, 2], [150, 150], [3, 4])
    """
    shares, left = [0] * len(sizes), budget
    for n, i in enumerate(sorted(range(len(sizes)), key=lambda i: sizes[i])):
        shares[i] = min(sizes[i], left // (len(sizes) - n))
        left -= shares[i]
    return shares


def _spread(n: int, most: int) -> list:
    """Indices of at most ``most`` of ``n`` candidates, evenly spaced from the first to the last (all when
    they fit).

    >>> _spread(5, 9), _spread(10, 4), _spread(10, 0)
    ([0, 1, 2, 3, 4], [0, 3, 6, 9], [])
    """
    if n <= most:
        return list(range(n))
    if most <= 0:
        return []
    return sorted({round(i * (n - 1) / max(most - 1, 1)) for i in range(most)})


# ----------------------------------------------------------------------------- relaxations
def _clauses(query) -> list:
    """What a relaxed query may drop: ("condition", conjunct), ("negation", item), ("window",),
    ("strategy",), ("consume",); ``why_not`` adds ("limit",) (the judge's query has no LIMIT: dropping it
    changes nothing there, and the matches past it are judged)."""
    out = []
    for node in query.scoped.walk():
        if isinstance(node, A.Filter):
            out += [("condition", c) for c in A.conjuncts(node.cond)]
        elif isinstance(node, (A.Not, A.Exists)):
            out.append(("negation", node))
    if query.within is not None:
        out.append(("window",))
    if query.strategy != "ALL":
        out.append(("strategy",))
    if query.consume not in (None, "NONE"):
        out.append(("consume",))
    return out


def _relaxed(query, dropped, margin: float):
    """The query without the ``dropped`` clauses, its window widened by ``margin`` when dropped, no RETURN
    (near misses are shown with all their bindings)."""
    nodes = {id(c[1]) for c in dropped if len(c) > 1}
    kinds = {c[0] for c in dropped}
    ast = query.ast
    values = dict(pattern=_without(query.scoped, nodes), where=None, select=None)
    if "window" in kinds:
        within = ast.within
        amount = math.ceil(within.amount * (1 + margin)) if within.events else within.amount * (1 + margin)
        values["within"] = A.Window(amount, within.unit)
    if "strategy" in kinds:
        values["strategy"] = None
    if "consume" in kinds:
        values["consume"] = None
    return parse(replace(ast, **values), query.hierarchy)


def _without(node, dropped: set):
    """``node`` with the conjuncts and negated items whose ids are in ``dropped`` removed."""
    if isinstance(node, A.Filter):
        inner = _without(node.pattern, dropped)
        kept = [c for c in A.conjuncts(node.cond) if id(c) not in dropped]
        return A.Filter(inner, A.conjoin(kept)) if kept else inner
    if isinstance(node, (A.Seq, A.And)):
        return type(node)(tuple(_without(i, dropped) for i in node.items if id(i) not in dropped))
    if isinstance(node, A.Or):
        return A.Or(tuple(_without(i, dropped) for i in node.items))
    if isinstance(node, A.Plus):
        return A.Plus(_without(node.pattern, dropped))
    if isinstance(node, A.Strategy):
        return A.Strategy(node.name, _without(node.pattern, dropped))
    if isinstance(node, (A.Not, A.Exists)):
        return type(node)(_without(node.item, dropped))
    return node
