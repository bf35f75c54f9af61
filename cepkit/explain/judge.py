"""``cepkit.explain``: is this candidate a match, and why (or why not), clause by clause.

The verdict is the reference evaluator's (``cepkit.semantics``): the candidate is a match when the reference
reports it. The reasons come from the reference's own checks, run on the candidate's derivation with hooks
that tell which check failed and what it read:

1. partition: every event of the candidate has the same PARTITION BY key;
2. structure: the events bind the pattern's atoms (types, SEQ order, Kleene order). Without such a binding,
   relaxed derivations (types ignored, SEQ read as AND) say which event has the wrong type or comes in the
   wrong order;
3. phase 2 of the reference (``Checker``, exhaustive): each condition with the values it read, each
   negation with the event that violates it, each EXISTS with its witness, nested strategies; the window;
4. a candidate valid under ALL but not reported: the top-level strategy (the match preferred by NEXT/LAST/
   MAX, the skipped event under STRICT, the event STNM may not skip), CONSUME BY (the earlier match that
   consumed it), RETURN (what is reported instead).

On a large stream only the candidate's neighbourhood is evaluated: its partition and, under WITHIN, the
events within twice the window of it, which holds everything a verdict can depend on (negation scopes,
rivals with the same last event, skipped events), except under CONSUME BY, judged on the whole stream.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import replace
from typing import Mapping, Optional

import numpy as np
import pandas as pd

from ..errors import ResultTooLarge
from ..lang import ast as A
from ..lang.printer import pretty
from ..lang.query import Query, parse
from ..runtime.api import check_against_stream, quiet_match
from ..runtime.columns import as_events, renamed_fields
from ..runtime.event_record import PUNCTUATION
from ..runtime.stream import Stream
from ..semantics.conditions import holds, readings
from ..semantics.derivations import BudgetExhausted, Deriver, generating
from ..semantics.evaluate import Evaluation, SearchSpent
from ..semantics.stnm import STNM_STRATEGIES, ses_shape, stnm_blocker
from ..semantics.strategies import RANKED, beats
from ..semantics.substream import Substream
from ..semantics.validity import Checker
from .report import Explanation, Reason, clause_span, node_span, strategy_span

RULES = {  # why a ranked strategy prefers a rival (docs/language.md §5, [CEL] §4)
    "NEXT": "the earliest event where they differ, event {e}, is in {rival} (C ≤next C' iff min(C △ C') ∈ C)",
    "LAST": "the latest event where they differ, event {e}, is in {rival} (C ≤last C' iff max(C △ C') ∈ C)",
    "MAX": "{rival} contains every event of this one and more (MAX keeps the ⊆-maximal matches)",
}


def explain(
    query,
    events,
    candidate,
    strategy: Optional[str] = None,
    hierarchy=None,
    tz: Optional[str] = None,
    *,
    type: Optional[str] = None,
    ts: Optional[str] = None,
) -> Explanation:
    """Whether ``candidate`` is a match of ``query`` over ``events``, with the reasons clause by clause.

    Parameters
    ----------
    query : str or Query
        The query text, or a parsed ``Query``.
    events : DataFrame, pyarrow Table, iterable of dicts or Event, or Stream
        The events, as ``cepkit.match`` takes them.
    candidate : tuple of int or dict
        A tuple of positions, or bindings ``{"x": 1, "y": 8}`` (a list for a Kleene variable).
    strategy : str, optional
        A selection strategy overriding the query's own.
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to.
    tz : str, optional
        The time zone the reasons print datetime ts in (as given by default), e.g. a view's.
    type, ts : str, optional
        The columns holding each event's type and time when not ``type`` and ``ts`` (as ``cepkit.match``).

    Returns
    -------
    Explanation
        ``is_match``, and ``reasons``: each clause passed or failed, pointing into the query text.

    Raises
    ------
    QueryError
        The query does not parse, or names an attribute the events lack.
    ValueError
        The candidate names a position the stream lacks, or a variable the query lacks.

    See Also
    --------
    why_not : the near misses, when there is no candidate to ask about.

    Examples
    --------
    >>> import cepkit
    >>> phi1 = "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)"
    >>> e = cepkit.explain(phi1, cepkit.datasets.cel_fire_sensors(), (1, 5))
    >>> e.is_match, [r.message for r in e.reasons]
    (False, ['event 5 has type T; `H AS y` needs H'])
    """
    return Judge(query, events, strategy, hierarchy, tz, type=type, ts=ts).explain(candidate)


class Judge:
    """A query and a stream prepared for explaining many candidates (``why_not`` judges hundreds)."""

    def __init__(
        self,
        query,
        events,
        strategy: Optional[str] = None,
        hierarchy=None,
        tz: Optional[str] = None,
        *,
        type: Optional[str] = None,
        ts: Optional[str] = None,
    ):
        parsed = parse(query, hierarchy)  # its spans point into .text (with_strategy keeps the text too)
        self.text = parsed.text
        # LIMIT n is judged last, on the whole result (``_limited``): every other clause on the query without it
        self.limit = parsed.ast.limit
        if self.limit is not None:
            parsed = Query(replace(parsed.ast, limit=None), parsed.text, parsed.hierarchy)
        self.query = parsed.with_strategy(strategy) if strategy is not None else parsed
        self.strategy_given = strategy is not None
        with renamed_fields(type=type, ts=ts):
            self.stream = Stream.from_any(as_events(events, type=type, ts=ts))
        check_against_stream(self.query, self.stream)  # the user's query named in an error, not a relaxed one
        self.tz = tz
        self.evaluation = Evaluation(self.query)
        self.pattern = self.evaluation.pattern
        order = np.argsort(self.stream.times, kind="stable")  # logical order (docs/language.md §10.1)
        self._rank = np.empty(len(order), dtype=np.int64)
        self._rank[order] = np.arange(len(order))
        self.rank = _Ranks(self._rank)
        # key -> its positions in logical order (punctuations left out), from the columns: an Event is made
        # for each partition's first event only (690k events: 0.3 s, not minutes)
        kept = order[~self.stream.type_in(frozenset({PUNCTUATION}))[order]]
        codes = (
            self.stream.key_codes(self.query.partition_by)[kept]
            if self.query.partition_by
            else np.zeros(len(kept), dtype=np.int64)
        )
        grouped = kept[np.argsort(codes, kind="stable")]
        bounds = np.flatnonzero(np.diff(np.sort(codes, kind="stable"))) + 1
        self.partitions: dict = {}
        for members in np.split(grouped, bounds) if len(grouped) else []:
            self.partitions[self._key(self.stream[int(members[0])])] = members.tolist()
        self._times = {key: self.stream.times[members].tolist() for key, members in self.partitions.items()}

    def when(self, event) -> str:
        """An event's ts as the reasons print it: datetimes in ``tz`` when one is given."""
        if self.tz is None or not self.stream.ts_is_datetime:
            return str(event.ts)
        stamp = pd.Timestamp(event.ts)
        return str((stamp if stamp.tzinfo else stamp.tz_localize("UTC")).tz_convert(self.tz))

    # ------------------------------------------------------------------ entry
    def explain(self, candidate) -> Explanation:
        positions, bindings = self._normalized(candidate)
        punctuations = [p for p in positions if self.stream[p].type == PUNCTUATION]
        if punctuations:
            return self._verdict(
                positions,
                bindings,
                False,
                [
                    Reason(
                        "type",
                        f"event {punctuations[0]} is a PUNCTUATION event: punctuations are never matched",
                        None,
                        (punctuations[0],),
                    )
                ],
            )
        keys = {p: self._key(self.stream[p]) for p in positions}
        if len(set(keys.values())) > 1:  # and, read across partitions, do the events fit the pattern at all?
            misfits = _Case(self, positions, bindings, None).misfits()
            return self._verdict(positions, bindings, False, [self._partition_reason(keys), *misfits])
        case = _Case(self, positions, bindings, keys[positions[0]])
        return self._limited(case.explain())

    def _limited(self, explanation: Explanation) -> Explanation:
        """Under LIMIT n, a match of the query without it is one only among its first n in output order
        (docs/language.md §4): its rank is read from the whole result."""
        if self.limit is None or not explanation.is_match:
            return explanation
        positions = explanation.positions
        bindings = explanation.candidate if isinstance(explanation.candidate, Mapping) else None

        def rank_in(found) -> Optional[int]:
            return next(
                (
                    i
                    for i, m in enumerate(found)
                    if m.positions == positions and (bindings is None or _same_bindings(m.bindings, bindings))
                ),
                None,
            )

        # among the first n (a run that stops there), else ranked in the whole result when it fits in memory
        rank = rank_in(
            quiet_match(Query(replace(self.query.ast, limit=self.limit), self.text, self.query.hierarchy), self.stream)
        )
        if rank is None:
            try:
                rank = rank_in(quiet_match(self.query, self.stream))
            except ResultTooLarge:  # past the first n of a result too large to rank it in
                rank = None
        span = clause_span(self.text, "LIMIT")
        if rank is None:
            reason = Reason(
                "limit",
                f"it is not among the first {self.limit} in output order (the whole result is too large to "
                f"rank it in); LIMIT {self.limit} keeps the first {self.limit}",
                span,
                positions,
                {"rank": None, "limit": self.limit},
            )
            return replace(explanation, is_match=False, reasons=[*explanation.reasons, reason])
        if rank < self.limit:
            reason = Reason(
                "satisfied",
                f"it is match {rank + 1} in output order, LIMIT {self.limit} keeps it",
                span,
                positions,
                {"rank": rank + 1, "limit": self.limit},
            )
            return replace(explanation, reasons=[*explanation.reasons, reason])
        reason = Reason(
            "limit",
            f"it is match {rank + 1} in output order; LIMIT {self.limit} keeps the first {self.limit}",
            span,
            positions,
            {"rank": rank + 1, "limit": self.limit},
        )
        return replace(explanation, is_match=False, reasons=[*explanation.reasons, reason])

    def _normalized(self, candidate) -> tuple:
        """(sorted positions, bindings or None) of a candidate; ValueError for what cannot be one."""
        n = len(self.stream)
        if isinstance(candidate, Mapping):
            variables = set(self.query.variables)
            bindings = {}
            for var, value in candidate.items():
                if var not in variables:
                    raise ValueError(
                        f"the query has no variable {var!r} (its variables: {', '.join(sorted(variables))})"
                    )
                if isinstance(value, (list, tuple)):
                    if var not in self.query.kleene_variables:
                        raise ValueError(
                            f"{var!r} is not a Kleene variable: bind it to one position, not {list(value)}"
                        )
                    bindings[var] = tuple(int(p) for p in value)
                else:
                    bindings[var] = (int(value),) if var in self.query.kleene_variables else int(value)
            flat = [p for v in bindings.values() for p in (v if isinstance(v, tuple) else (v,))]
        else:
            bindings, flat = None, [int(p) for p in candidate]
        if not flat:
            raise ValueError("a candidate needs at least one position")
        for p in flat:
            if not 0 <= p < n:
                raise ValueError(f"position {p} is not in the stream ({n} events: 0 to {n - 1})")
        return tuple(sorted(set(flat))), bindings

    def _key(self, event) -> tuple:
        return tuple(event.get(k) for k in self.query.partition_by)

    def _partition_reason(self, keys: Mapping) -> Reason:
        by_key: dict = {}
        for p, key in keys.items():
            by_key.setdefault(key, p)
        (k1, p1), (k2, p2) = list(by_key.items())[:2]
        names = ", ".join(self.query.partition_by)
        show = lambda key: ", ".join(f"{a} = {_fmt(v)}" for a, v in zip(self.query.partition_by, key))
        return Reason(
            "partition",
            f"event {p1} has {show(k1)} but event {p2} has {show(k2)}: under PARTITION BY "
            f"{names} a match lies in one partition",
            clause_span(self.text, r"PARTITION\s+BY"),
            (p1, p2),
            {"keys": {p1: k1, p2: k2}},
        )

    def _verdict(self, positions, bindings, is_match, reasons) -> Explanation:
        return Explanation(self.text, bindings if bindings is not None else positions, positions, is_match, reasons)

    # ------------------------------------------------------------------ the reference on a neighbourhood
    def neighbourhood(self, positions: tuple, key: tuple) -> Stream:
        """The events a verdict on ``positions`` can depend on (see the module docstring), in arrival order
        with their positions."""
        if self.query.consume == "ANY":
            return self.stream
        members, within = self.partitions[key], self.query.within
        if within is not None and self.query.consume != "PARTITION":
            if within.events:
                where = [members.index(p) for p in positions]
                n = 2 * math.ceil(within.amount) + 1
                members = members[max(0, min(where) - n) : max(where) + n + 1]
            else:
                times, margin = self._times[key], 2 * within.seconds + 1
                lo = bisect.bisect_left(times, min(self.stream[p].time for p in positions) - margin)
                hi = bisect.bisect_right(times, max(self.stream[p].time for p in positions) + margin)
                members = members[lo:hi]
        return self.stream.take(np.sort(np.asarray(members, dtype=np.int64)))  # columns, keeping positions

    def variant(self, **clauses):
        """The query with some clauses replaced (``strategy``/``consume``/``select``), for the ladder ALL ->
        strategy -> CONSUME BY -> RETURN."""
        return Evaluation(parse(replace(self.query.ast, **clauses), self.query.hierarchy))


class _Ranks:
    """position -> its place in logical order (what ``Judge.rank`` was as a dict), read from an array."""

    def __init__(self, ranks: np.ndarray):
        self._ranks = ranks

    def __getitem__(self, p) -> int:
        return int(self._ranks[p])

    def get(self, p, default=None):
        return int(self._ranks[p]) if 0 <= p < len(self._ranks) else default


class _Case:
    """One candidate being judged; with ``key=None``, its events alone, their partitions ignored (to say which
    types and order are wrong when the candidate spans partitions)."""

    def __init__(self, judge: Judge, positions: tuple, bindings, key: Optional[tuple]):
        self.judge, self.positions, self.bindings, self.key = judge, positions, bindings, key
        if key is None:
            self.local = Stream([judge.stream[p] for p in positions], judge.stream.ts_is_datetime)
        else:
            self.local = judge.neighbourhood(positions, key)
        order = sorted(
            (e for e in self.local if e.type != PUNCTUATION and (key is None or judge._key(e) == key)),
            key=lambda e: (e.time, e.position),
        )
        self.sub = Substream(order, judge.query.within, math.inf, True)
        self.index = {e.position: i for i, e in enumerate(order)}
        self._runs: dict = {}

    @property
    def text(self):
        return self.judge.text

    def explain(self) -> Explanation:
        try:
            return self._judged()
        except (BudgetExhausted, SearchSpent) as spent:  # the reference's search budget (docs/limits.md)
            return self._unfinished(spent.budget)

    def _judged(self) -> Explanation:
        matches = self.run()
        is_match = any(self._is_candidate(m) for m in matches)
        derivations = self._derivations()
        projected = []
        if not derivations and self.judge.query.select is not None:
            projected = self._projected_sources()
            derivations = [d for source in projected for d in self._derivations(source)]
        if not derivations:
            reasons = self._structure()
            return self._explanation(is_match, reasons, None)
        reported = [dict(m.bindings) for m in matches if m.positions == self.positions]
        if is_match and not projected and any(self._bindings(d) in reported for d in derivations):
            derivations = [d for d in derivations if self._bindings(d) in reported]  # the bindings reported
        judged = [(d, *self._phase2(d)) for d in derivations]
        d, truth, notes = min(judged, key=lambda j: (j[1] is not True, sum(r.failed for r in j[2])))
        reasons = list(notes)
        if truth is True:
            reasons += self._selection(d, is_match, projected)
        if is_match:
            reasons = [self._structure_satisfied(d), *reasons]
        return self._explanation(is_match, reasons, d)

    def _unfinished(self, budget: int) -> Explanation:
        """The verdict when the reference's matches around the candidate spend the search budget: its own
        derivations and clauses still decide it when one fails (not a match) or when nothing selects among
        the matches (ALL, no CONSUME BY, no RETURN: a match); otherwise it is undecided, and says so with the
        clauses it judged."""
        query = self.judge.query
        selection = [
            name
            for name, used in (
                (f"SELECT {query.strategy}", query.strategy != "ALL"),
                (f"CONSUME BY {query.consume}", query.consume not in (None, "NONE")),
                ("RETURN", query.select is not None),
            )
            if used
        ]
        spent = f"the reference evaluator's search budget ({budget:,} steps, docs/limits.md) was spent on "
        try:
            judged = [(d, *self._phase2(d)) for d in self._derivations()]
        except (BudgetExhausted, SearchSpent):
            stopped = spent + "the candidate's own derivations: nothing was judged"
            return Explanation(self.text, self.bindings or self.positions, self.positions, False, [], stopped)
        if not judged and query.select is None:
            return self._explanation(False, self._structure(), None)  # its events fit no derivation
        if judged:
            d, truth, notes = min(judged, key=lambda j: (j[1] is not True, sum(r.failed for r in j[2])))
            if truth is not True:
                return self._explanation(False, list(notes), d)
            if not selection:
                return self._explanation(True, [self._structure_satisfied(d), *notes], d)
            reasons = [r for r in [self._structure_satisfied(d), *notes] if not r.failed]
            candidate = self._bindings(d)
        else:
            reasons, candidate = [], self.bindings or self.positions
        stopped = (
            spent
            + "the matches around the candidate: "
            + ("its pattern, conditions and window hold (below), " if judged else "")
            + f"{' and '.join(selection)} was not judged"
        )
        return Explanation(self.text, candidate, self.positions, False, reasons, stopped)

    def _explanation(self, is_match, reasons, d) -> Explanation:
        shown = [r for r in reasons if r.kind == "satisfied"] if is_match else [r for r in reasons if r.failed]
        candidate = self.bindings if d is None else self._bindings(d)
        if candidate is None:
            candidate = self.positions
        if shown == [] and not is_match:  # cannot happen when the hooks agree with the reference: say so
            shown = [
                Reason(
                    "strategy",
                    "not reported by the reference evaluator, for a reason explain cannot "
                    "name (please report this query)",
                    None,
                )
            ]
        return Explanation(self.text, candidate, self.positions, is_match, shown)

    # ------------------------------------------------------------------ the reference's matches
    def run(self, **clauses) -> list:
        """The reference's matches of the query (or of a variant) on the neighbourhood."""
        key = tuple(sorted(clauses.items()))
        if key not in self._runs:
            evaluation = self.judge.variant(**clauses) if clauses else self.judge.evaluation
            self._runs[key] = evaluation.run(self.local)
        return self._runs[key]

    def _is_candidate(self, m) -> bool:
        if m.positions != self.positions:
            return False
        return self.bindings is None or dict(m.bindings) == self.bindings

    def _projected_sources(self) -> list:
        """Full matches (RETURN dropped) whose projection is the candidate."""
        select = self.judge.query.select
        out = []
        for m in self.run(select=None):
            kept = {v: b for v, b in m.bindings.items() if v in select}
            flat = tuple(sorted({p for b in kept.values() for p in (b if isinstance(b, tuple) else (b,))}))
            if flat == self.positions and (self.bindings is None or kept == self.bindings):
                out.append(m)
        return out

    # ------------------------------------------------------------------ derivations of the candidate
    def _derivations(self, source=None) -> list:
        """Derivations of the pattern using exactly the candidate's events (or a projected match's)."""
        positions = source.positions if source is not None else self.positions
        bindings = dict(source.bindings) if source is not None else self.bindings
        wanted = frozenset(self.index[p] for p in positions)
        deriver = _Restricted(self.sub, self.judge.query.hierarchy, wanted)
        out = []
        for d in deriver.derive(self.judge.pattern, min(wanted), max(wanted) + 1, windowed=False):
            if d.positions == wanted and (bindings is None or self._bindings(d) == bindings):
                out.append(d)
        return out

    def _bindings(self, d) -> dict:
        events = self.sub.events
        return {
            var: tuple(events[i].position for i in v) if isinstance(v, tuple) else events[v].position
            for var, v in d.bindings.items()
        }

    def _phase2(self, d) -> tuple:
        """(truth, reasons) of a derivation: phase 2 of the reference, with its hooks, and the window."""
        checker = _Recorder(self.sub, _Unfiltered(self.sub, self.judge.query.hierarchy), self)
        truth = checker.judge(d)
        reasons = checker.reasons
        window = self._window(d)
        if window is not None:
            reasons.append(window)
            truth = False if window.failed else truth
        return truth, reasons

    def _window(self, d) -> Optional[Reason]:
        within = self.judge.query.within
        if within is None:
            return None
        first, last = self.sub.events[d.first], self.sub.events[d.last]
        span = node_span(within, self.text)
        fits = self.sub.fits(d.first, d.last)
        written = self.text[span[0] : span[1]] if span else pretty_window(within)
        if within.events:
            count = d.last - d.first + 1
            where = "sub-stream (partition)" if self.judge.query.partition_by else "stream"
            message = (
                f"the match spans {count} consecutive events of the {where}, from event {first.position} to "
                f"event {last.position}: {'within' if fits else 'more than'} {written}"
            )
            values = {"span": count, "limit": within.amount}
        else:
            seconds = last.time - first.time
            scale = within.seconds / within.amount if within.amount else 1.0
            unit = f" {within.unit}" if within.unit else ""
            message = (
                f"span {_fmt(round(seconds / scale, 3))}{unit} {'<=' if fits else '>'} {written}, from "
                f"event {first.position} at ts {self.judge.when(first)} to event {last.position} at ts "
                f"{self.judge.when(last)}"
            )
            values = {"span": seconds, "limit": within.seconds}
        if not fits:
            values["gap"] = min((values["span"] - values["limit"]) / max(values["limit"], 1.0), 1.0)
        return Reason("satisfied" if fits else "window", message, span, (first.position, last.position), values)

    # ------------------------------------------------------------------ structure: types and order
    def _structure_satisfied(self, d) -> Reason:
        atoms = []
        for var, value in self._bindings(d).items():
            shown = ", ".join(
                f"{p} ({self.judge.stream[p].type})" for p in (value if isinstance(value, tuple) else (value,))
            )
            atoms.append(f"{var} = event {shown}" if not isinstance(value, tuple) else f"{var} = events {shown}")
        return Reason(
            "satisfied",
            "the events bind the pattern in order: " + ("; ".join(atoms) or str(self.positions)),
            node_span(self.judge.query.pattern, self.text),
            self.positions,
        )

    def _structure(self) -> list:
        """Why the candidate's events bind no derivation of the pattern."""
        best = self.misfits()
        if best:
            return best
        what = "these bindings" if self.bindings is not None else f"the {len(self.positions)} events {self.positions}"
        return [
            Reason(
                "type",
                f"the pattern cannot bind {what}: no assignment of them to its event variables uses each event once",
                node_span(self.judge.query.pattern, self.text),
                self.positions,
            )
        ]

    def misfits(self) -> list:
        """The fewest type and order problems over the ways to assign the candidate's events to the pattern's
        variables (none when some assignment fits, or when there is no assignment at all)."""
        if self.bindings is not None:
            assignments = [
                {
                    var: tuple(self.index[p] for p in v) if isinstance(v, tuple) else self.index[v]
                    for var, v in self.bindings.items()
                }
            ]
        else:
            wanted = frozenset(self.index[p] for p in self.positions)
            relaxed = _Relaxed(self.sub, self.judge.query.hierarchy, wanted) if len(wanted) <= 12 else None
            found = relaxed.derive(self.judge.pattern, min(wanted), max(wanted) + 1, windowed=False) if relaxed else []
            assignments = [d.bindings for d in found if d.positions == wanted][:200]
        return min((self._misfits(assignment) for assignment in assignments), key=len, default=[])

    def _misfits(self, assignment: Mapping) -> list:
        """Type and order problems of an assignment var -> logical index (tuple for a Kleene variable)."""
        events, reasons = self.sub.events, []
        deriver = Deriver(self.sub, self.judge.query.hierarchy)
        for atom in _positive_atoms(self.judge.pattern):
            value = assignment.get(atom.var) if atom.var else None
            for i in value if isinstance(value, tuple) else () if value is None else (value,):
                if not deriver.type_matches(atom.type, events[i].type):
                    below = " or a type below it" if self.judge.query.hierarchy is not None else ""
                    reasons.append(
                        Reason(
                            "type",
                            f"event {events[i].position} has type {events[i].type}; "
                            f"`{self._source(atom)}` needs {atom.type}{below}",
                            node_span(atom, self.text),
                            (events[i].position,),
                            {"type": events[i].type, "needs": atom.type},
                        )
                    )
        for var, value in assignment.items():
            if isinstance(value, tuple) and list(value) != sorted(set(value)):
                shown = tuple(events[i].position for i in value)
                reasons.append(
                    Reason(
                        "order",
                        f"the events of Kleene variable {var}, {shown}, are not in order",
                        node_span(self.judge.query.variables.get(var), self.text),
                        shown,
                    )
                )
        for seq in self.judge.pattern.find_all(A.Seq):
            items = generating(seq.items)
            spans = [self._indices(item, assignment) for item in items]
            for (left, l_idx), (right, r_idx) in zip(zip(items, spans), zip(items[1:], spans[1:])):
                if l_idx and r_idx and max(l_idx) >= min(r_idx):
                    lp, rp = events[max(l_idx)].position, events[min(r_idx)].position
                    reasons.append(
                        Reason(
                            "order",
                            f"`{self._source(left)}` (event {lp}) must come before "
                            f"`{self._source(right)}` (event {rp}) in the sequence",
                            node_span(seq, self.text),
                            (lp, rp),
                        )
                    )
        return reasons

    @staticmethod
    def _indices(item, assignment) -> list:
        out = []
        for atom in item.find_all(A.Atom):
            value = assignment.get(atom.var) if atom.var else None
            out += value if isinstance(value, tuple) else [] if value is None else [value]
        return out

    def _source(self, node) -> str:
        span = node_span(node, self.text)
        return self.text[span[0] : span[1]] if span else pretty(node)

    # ------------------------------------------------------------------ strategy, consume, return
    def _selection(self, d, is_match: bool, projected: list) -> list:
        """Reasons from the top-level strategy, CONSUME BY and RETURN for a candidate valid under ALL."""
        query = self.judge.query
        own = frozenset(self.sub.events[i].position for i in d.positions)
        bindings = self._bindings(d)
        member = lambda matches: any(set(m.positions) == own and dict(m.bindings) == bindings for m in matches)
        strategy, reasons = query.strategy, []
        span = None if self.judge.strategy_given else strategy_span(self.text, strategy)
        if strategy != "ALL":
            if not member(self.run(consume=None, select=None)):
                return [self._strategy_reason(d, strategy, span)]
            reasons.append(Reason("satisfied", f"{strategy} keeps it: no other match is preferred", span))
        if query.consume not in (None, "NONE"):
            consume_span = clause_span(self.text, r"CONSUME\s+BY")
            if not member(self.run(select=None)):
                return [self._consume_reason(d, consume_span)]
            reasons.append(
                Reason("satisfied", f"no earlier match consumes it (CONSUME BY {query.consume})", consume_span)
            )
        if query.select is not None:
            return_span = clause_span(self.text, "RETURN") or clause_span(self.text, "SELECT")
            kept = {v: b for v, b in bindings.items() if v in query.select}
            flat = tuple(sorted({p for b in kept.values() for p in (b if isinstance(b, tuple) else (b,))}))
            if is_match:
                reasons.append(
                    Reason(
                        "satisfied",
                        f"reported as {flat}: the projection on {', '.join(query.select)} "
                        f"of the match {tuple(sorted(own))}",
                        return_span,
                        flat,
                    )
                )
            elif not projected:
                reasons.append(
                    Reason(
                        "return",
                        f"a match, but projected: the query returns only "
                        f"{', '.join(query.select)}, so it is reported as {flat}",
                        return_span,
                        flat,
                        {"reported": flat},
                    )
                )
        return reasons

    def _strategy_reason(self, d, strategy: str, span) -> Reason:
        events = self.sub.events
        mine = frozenset(d.positions)
        show = lambda idx: tuple(sorted(events[i].position for i in idx))
        if strategy in ("STRICT", "PARTITION_STRICT"):
            gaps = [events[i].position for i in range(d.first, d.last + 1) if i not in mine]
            within = " of its partition" if self.judge.query.partition_by else ""
            return Reason(
                "strategy",
                f"valid under ALL, but {strategy} needs contiguous events{within}: event "
                f"{gaps[0]} lies between and is not part of the match",
                span,
                tuple(gaps),
                {"between": tuple(gaps)},
            )
        if strategy in RANKED:
            kept = set(m.positions for m in self.run(consume=None, select=None))
            rivals = self.run(strategy=None, consume=None, select=None)
            for rival in sorted(rivals, key=lambda m: m.positions not in kept):  # name the match it keeps
                if not all(p in self.index for p in rival.positions):
                    continue
                theirs = frozenset(self.index[p] for p in rival.positions)
                if max(theirs) == d.last and beats(strategy, theirs, mine):
                    difference = theirs ^ mine
                    e = events[min(difference) if strategy == "NEXT" else max(difference)].position
                    rule = RULES[strategy].format(e=e, rival=rival.positions)
                    return Reason(
                        "strategy",
                        f"valid under ALL, but {strategy} keeps {rival.positions} instead: both "
                        f"end at event {events[d.last].position}, and {rule}",
                        span,
                        rival.positions,
                        {"preferred": rival.positions},
                    )
        if strategy in STNM_STRATEGIES:
            deriver = Deriver(self.sub, self.judge.query.hierarchy)
            matches = self.judge.evaluation.valid_matches(self.sub, deriver)
            blocker = stnm_blocker(strategy, d, matches, self.sub, deriver.type_matches)
            if blocker is not None:
                e, extended = blocker
                shape = ses_shape(self.judge.pattern)
                prefix = {el.atom.var: show(idx) for el, idx in zip(shape.elements, extended) if idx}
                into = "a prefix of another match" if strategy == "ROBUST_STNM" else "a prefix of the pattern"
                rule = "Def 6.2" if strategy == "ROBUST_STNM" else "Def 6.1"
                return Reason(
                    "strategy",
                    f"valid under ALL, but {strategy} drops it: it skips event "
                    f"{events[e].position} ({events[e].type}), which extends the match's prefix "
                    f"into {into} ({prefix}); skip-till-next-match may not skip it "
                    f"([SES] {rule})",
                    span,
                    (events[e].position,),
                    {"skipped": events[e].position},
                )
        return Reason("strategy", f"valid under ALL, but not selected by {strategy}", span)

    def _consume_reason(self, d, span) -> Reason:
        rank = self.judge.rank
        first, last = (rank[self.sub.events[i].position] for i in (d.first, d.last))
        policy = self.judge.query.consume
        for earlier in self.run(select=None):
            ends = max(rank[p] for p in earlier.positions)
            same = policy == "ANY" or self.judge._key(self.judge.stream[earlier.positions[0]]) == self.key
            if first <= ends < last and same:
                end = max(earlier.positions, key=rank.get)
                return Reason(
                    "consume",
                    f"consumed: the earlier match {earlier.positions} ends at event {end}, "
                    f"inside this match's span, and CONSUME BY {policy} discards what it used",
                    span,
                    earlier.positions,
                    {"consumed_by": earlier.positions},
                )
        return Reason("consume", f"consumed by an earlier match (CONSUME BY {policy})", span)


def pretty_window(within: A.Window) -> str:
    return f"WITHIN {within.amount:g} {within.unit or ''}".strip()


def _positive_atoms(pattern) -> list:
    """The atoms of a pattern outside negations and EXISTS."""
    out = []

    def walk(node):
        if isinstance(node, A.Atom):
            out.append(node)
        elif isinstance(node, (A.Not, A.Exists, A.Expr)):
            return
        else:
            for child in node.children():
                walk(child)

    walk(pattern)
    return out


def _gap(conjunct, read) -> float:
    """How far a false comparison is from holding, relative to its values (1 when it cannot be said): near
    misses that almost pass come first."""
    if not isinstance(conjunct, A.Compare):
        return 1.0
    seen = {id(node): value for node, value, _ in read}
    sides = [
        side.value if isinstance(side, A.Literal) else seen.get(id(side)) for side in (conjunct.left, conjunct.right)
    ]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in sides):
        return 1.0
    left, right = sides
    return min(abs(left - right) / max(abs(left), abs(right), 1.0), 1.0)


def _fmt(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value) if isinstance(value, str) else str(value)


# ----------------------------------------------------------------------------- the reference's hooks
class _Unfiltered(Deriver):
    """Phase 1 with every filter left to phase 2, so the recorder sees each condition."""

    def is_closed(self, node) -> bool:
        return False


class _Restricted(_Unfiltered):
    """Phase 1 over the candidate's events only."""

    def __init__(self, stream, hierarchy, allowed: frozenset):
        super().__init__(stream, hierarchy)
        self.allowed = allowed

    def visit_atom(self, node: A.Atom, lo, hi, windowed):
        return [d for d in super().visit_atom(node, lo, hi, windowed) if d.first in self.allowed]


class _Relaxed(_Restricted):
    """Phase 1 with types ignored and SEQ read as AND: some binding of the candidate's events to the atoms,
    to say which event has the wrong type or comes in the wrong order."""

    def type_matches(self, pattern_type, event_type) -> bool:
        return event_type != PUNCTUATION

    def visit_seq(self, node, lo, hi, windowed):
        return self._combinations(node, lo, hi, windowed, ordered=False)


class _Recorder(Checker):
    """Phase 2 of the reference, exhaustive, noting for the candidate's own derivation (not for witnesses or
    rivals) each condition with its values, each negation and EXISTS with its witness, each nested strategy."""

    exhaustive = True

    def __init__(self, stream, deriver, case: _Case):
        super().__init__(stream, deriver)
        self.case = case
        self.reasons: list = []
        self._own: set = set()
        self._frames: list = []

    def judge(self, d):
        self._own = {id(x) for x in _subtree(d)}
        return self.valid(d)

    @property
    def _recording(self) -> bool:
        return bool(self._frames) and self._frames[-1]

    def check(self, d, ctx):
        self._frames.append(id(d) in self._own)
        try:
            return super().check(d, ctx)
        finally:
            self._frames.pop()

    def _quietly(self, fn, *args):
        self._frames.append(False)
        try:
            return fn(*args)
        finally:
            self._frames.pop()

    def filter_holds(self, node: A.Filter, env: Mapping) -> bool:
        verdict = super().filter_holds(node, env)
        if self._recording:
            for conjunct in A.conjuncts(node.cond):
                self.reasons.append(self._condition(conjunct, env))
        return verdict

    def _condition(self, conjunct, env) -> Reason:
        events = self.stream.events
        ok = holds(conjunct, env, events)
        seen, values, where = [], {}, []
        read = readings(conjunct, env, events)
        for node, value, i in read:
            label = self.case._source(node)
            at = f" (event {events[i].position})" if i is not None else ""
            seen.append(f"{label} = {_fmt(value)}{at}")
            values[label] = value
            if i is not None:
                where.append(events[i].position)
        text = self.case._source(conjunct)
        message = f"`{text}` {'holds' if ok else 'is false'}" + (": " + ", ".join(seen) if seen else "")
        extra = {} if ok else {"gap": _gap(conjunct, read)}
        return Reason(
            "satisfied" if ok else "condition",
            message,
            node_span(conjunct, self.case.text),
            tuple(dict.fromkeys(where)),
            {**values, **extra},
        )

    def holds(self, item, scope, env, own):
        if not (self._recording and isinstance(item, (A.Not, A.Exists))):
            return super().holds(item, scope, env, own)
        truth = self._quietly(super().holds, item, scope, env, own)
        negated = isinstance(item, A.Not)
        witness = None
        if truth is (not negated) and isinstance(item.item, A.Pattern):
            witness = next(
                (w for w, t in self._quietly(lambda: list(self.witnesses(item.item, scope, env, own))) if t is True),
                None,
            )
        self.reasons.append(self._negation(item, truth, scope, witness))
        return truth

    def _negation(self, item, truth, scope, witness) -> Reason:
        events = self.stream.events
        where = " ".join(
            [
                f"after event {events[scope.lo].position}" if scope.lo >= 0 else "from the stream's start",
                f"and before event {events[scope.hi].position}" if scope.hi < len(events) else "up to the stream's end",
            ]
        )
        text = self.case._source(item)
        kind = "negation" if isinstance(item, A.Not) else "exists"
        span = node_span(item, self.case.text)
        if witness is not None:
            shown = ", ".join(
                f"event {events[i].position} ({self._attributes(item, i)})" for i in sorted(witness.positions)
            )
            positions = tuple(events[i].position for i in sorted(witness.positions))
            if kind == "negation":
                return Reason(
                    kind,
                    f"{shown} lies {where} and matches `{text}`: the negation is violated",
                    span,
                    positions,
                    {"witness": positions},
                )
            return Reason(
                "satisfied", f"{shown} lies {where} and witnesses `{text}`", span, positions, {"witness": positions}
            )
        if kind == "negation":
            return Reason("satisfied", f"no match of `{text}` lies {where}", span)
        return Reason(kind, f"no match of `{text}` lies {where}: EXISTS has no witness", span)

    def _attributes(self, item, i) -> str:
        """An event's type and the attributes the negated item's conditions read."""
        event = self.stream.events[i]
        names = dict.fromkeys(n.attr for n in item.walk() if isinstance(n, A.Attr))
        shown = [f"{a} = {_fmt(event.get(a))}" for a in names if a not in ("ts", "type")]
        return ", ".join([event.type, *shown])

    def visit_strategy(self, node, d, ctx):
        before = sum(r.failed for r in self.reasons)
        truth = super().visit_strategy(node, d, ctx)
        if self._recording and truth is False and sum(r.failed for r in self.reasons) == before:
            self.reasons.append(
                Reason(
                    "strategy",
                    f"`{self.case._source(node)}` drops this sub-match: another "
                    f"match of it is preferred in the same place",
                    node_span(node, self.case.text),
                )
            )
        return truth


def _subtree(d) -> list:
    out = [d]
    for part in d.parts:
        out += _subtree(part)
    return out


def _same_bindings(found: Mapping, given: Mapping) -> bool:
    """Whether a match's bindings are the candidate's (a Kleene variable's positions as a tuple in both)."""
    return {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in found.items()} == {
        k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in given.items()
    }
