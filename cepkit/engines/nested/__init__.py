"""The ``nested`` engine: NEEL nested queries, run shared, nested or through their normal form ([LIU] ch. 5:
§5.1.3-5.1.4, §5.3-5.6; [CSV]).

Nested SEQ / AND / OR with ``!`` and EXISTS over atoms or composites at any depth, windows, predicates
(correlated with enclosing variables too), PARTITION BY, RETURN, ANY and concept hierarchies:

>>> import cepkit
>>> q = "SEQ(Recycle r, Washing w, !SEQ(Sharpening s, Disinfection d, Checking c), Operating o)"
>>> events = [{"type": t, "ts": ts} for t, ts in [("Recycle", 1), ("Washing", 2), ("Sharpening", 3),
...           ("Checking", 4), ("Operating", 5)]]
>>> m = cepkit.match(q, events, engine="nested")
>>> m.positions(), m.info["execution"], m.info["plan"]["directions"]
([(0, 1, 4)], 'shared', ['suffix'])

Options:

- ``plan``: ``"auto"`` (default: the Plan-Finder, ``planner``, picks the cheapest on the stream's
  statistics), ``"shared"`` (every sub-query once as a column, the SEQs built as columns: ``shared``),
  ``"nested"`` (nested iterative execution, each candidate checked against its sub-queries) or
  ``"normal form"`` (``cepkit.rewrite``'s DNF, run shared or nested, where it exists and keeps every
  match). ``Matches.info["plan"]`` says which ran and why, with the estimates, each SEQ's direction and
  the groups of SEQs that share their construction.
- ``caching``: how a nested plan keeps a sub-query's results between outer candidates: ``"auto"`` (the
  default: the Plan-Finder picks A-CSV where the views are reused across enough outer candidates, else no
  caching, and says why in ``info["plan"]["caching"]``), ``"b"`` (B-CSV: the query intervals of one
  trigger merged and computed once), ``"a"`` (A-CSV), ``"p"`` (P-CSV); a sub-query with a summary
  (``summaries``) is answered from it in every mode. ``None`` is NEEL's iterative baseline: every sub-query
  recomputed per candidate, no summary, no sharing. All give the same matches; ``Matches.info["cache"]``
  counts lookups, hits, computations, summary lookups, shared columns.
- ``rewrite``: ``True`` is ``plan="normal form"``. ``Matches.info["rewrite"]`` gives the rewriting.

A ``Matcher`` reports a match at its last event when every scope it reads is closed; a match waiting for a
trailing ``!``/EXISTS scope is reported once an event past its window arrives (time after first + w, or
index first + n for ``n EVENTS``), or at ``close()``; without WITHIN, at ``close()``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from operator import attrgetter
from typing import Optional

import numpy as np

from ...lang import ast as A
from ...lang.rewrite import rewrite as neel_rewrite
from ...runtime.expiry import KeyExpiry, window_horizon
from ...runtime.match_list import MatchList
from ...runtime.stream import Stream
from ...runtime.registry import DISORDER_MODES, Engine, IncrementalPlan, Plan, register
from .execution import PUNCTUATION, Execution
from .operators import PlanBuilder
from .planner import (
    CACHED,
    Choice,
    StreamStats,
    choose_caching,
    choose_directions,
    groups_of,
    label,
    nested_cost,
    shared_fixed_cost,
)
from .shared import run_shared, top_branches
from .summaries import SubQuery
from .views import CACHING_MODES

__all__ = ["NestedEngine", "NestedPlan"]

EMISSION = (
    "a Matcher reports a match at its last event when no scope it reads is open; one waiting for a "
    "trailing !/EXISTS once that scope decides (at the latest when an event past its window arrives), "
    "or at close(); without WITHIN at close()"
)
PURGE_EVERY = 64  # triggers (or pushes) between two purges of the stacks and views
MIN_BATCH = 32  # smaller micro-batches are pushed event by event: a shared run costs ~1-2 ms, a push ~0.1 ms


PLANS = ("auto", "shared", "nested", "normal form")
AUTO = "auto"  # caching chosen by the Plan-Finder (``planner.choose_caching``)


class Form:
    """One form of the query (as written, or its normal form) compiled to NEEL operators (``operators``),
    with its sub-queries' summaries (``summaries``) and, where it has them, its shared SEQs (``shared``)."""

    def __init__(self, query, caching):
        self.query = query
        self.caching = CACHED if caching == AUTO else caching
        builder = PlanBuilder()
        self.root = builder.build(query.scoped)
        builder.mark_top(self.root)
        self.subqueries = tuple(builder.subqueries)
        self.shared = {sub: SubQuery(sub, builder.nodes[sub]) for sub in self.subqueries}
        self.branches, self.not_shared = top_branches(self.root, self.shared)
        if caching is None:
            self.branches, self.not_shared = None, "caching=None asks for NEEL's iterative baseline"

    def with_caching(self, mode) -> "Form":
        """The same compiled form run nested with another caching mode."""
        form = object.__new__(Form)
        form.__dict__.update(self.__dict__)
        form.caching = mode
        return form


class NestedPlan(Plan):
    """A query compiled to NEEL operators, possibly through its normal form; ``run`` lets the Plan-Finder
    (``planner``) choose between shared execution, nested execution and the normal form. Pickles."""

    def __init__(self, query, plan="auto", caching=AUTO, rewrite=False):
        self.original = query
        self.plan = "normal form" if rewrite and plan == "auto" else plan
        self.caching = caching
        self.rewrite = rewrite
        self.written = Form(query, caching)
        self.rewriting = None
        self.normal = None  # the normal form's Form, where it exists and keeps every match
        if self.plan == "normal form" or (self.plan == "auto" and self.written.branches is None and caching):
            self.rewriting = neel_rewrite(query)
            if self.rewriting.normal and self.rewriting.exact:
                self.normal = Form(self.rewriting.result, caching)
        self._unrun()

    def _unrun(self) -> None:
        self.form = self.normal if self.plan == "normal form" and self.normal is not None else self.written
        self.query = self.form.query
        self.choice = Choice("nested", "not run yet")
        self._last = None

    def fresh(self) -> "NestedPlan":
        """The same compiled forms (operators, summaries' analysis, rewriting), no run state."""
        plan = object.__new__(NestedPlan)
        plan.__dict__.update(self.__dict__)
        plan._unrun()
        return plan

    @property
    def subqueries(self) -> tuple:
        return self.form.subqueries

    def __getstate__(self):
        return {"query": self.original, "plan": self.plan, "caching": self.caching, "rewrite": self.rewrite}

    def __setstate__(self, state):
        self.__init__(**state)

    def _choose(self, execution) -> tuple:
        """(form, Choice): the Plan-Finder's pick for this stream (``planner``), and a nested run's caching
        mode where ``caching`` was left to it."""
        stats = StreamStats.of(execution)
        form, choice = self._choose_plan(stats)
        if choice.directions:
            return form, choice
        if self.caching != AUTO:
            choice.caching = {"chosen": self.caching, "why": f"asked for (caching={self.caching!r})"}
            return form, choice
        mode, why, costs = choose_caching(form.root, len(form.subqueries), stats)
        choice.caching = {"chosen": mode, "why": why, "costs": costs}
        choice.why += "; " + why
        return (form if mode == form.caching else form.with_caching(mode)), choice

    def _choose_plan(self, stats: StreamStats) -> tuple:
        """(form, Choice): shared, nested or the normal form, the cheapest on ``stats``."""
        written, normal = self.written, self.normal
        if self.caching is None:
            form = normal if self.plan == "normal form" and normal is not None else written
            return form, Choice(
                "normal form (nested)" if form is normal else "nested",
                "caching=None: NEEL's iterative nested execution, every sub-query recomputed "
                "per candidate (the baseline)",
            )
        if self.plan == "nested":
            return written, Choice("nested", "asked for (plan='nested')")
        costs, options = {}, {}
        forms = [("", written)]
        if normal is not None and self.plan in ("auto", "normal form"):
            forms.append(("normal form ", normal))
        for prefix, form in forms:
            if form.branches is not None:
                directions, build = choose_directions(form.branches, stats)
                cost = shared_fixed_cost(form.root, form.shared, stats) + build
                options[prefix + "(shared)" if prefix else "shared"] = (form, directions)
                costs[prefix + "(shared)" if prefix else "shared"] = round(cost)
            if not (prefix and form.branches is not None):
                name = prefix + "(nested)" if prefix else "nested"
                options[name] = (form, None)
                costs[name] = round(nested_cost(form.root, form.shared, stats, summarised=True))
        allowed = {
            k: v
            for k, v in costs.items()
            if self.plan == "auto"
            or (self.plan == "shared" and k == "shared")
            or (self.plan == "normal form" and k.startswith("normal form"))
        }
        if not allowed:  # plan='shared' where it is impossible, or a normal form that does not exist
            allowed = {k: v for k, v in costs.items() if k == "nested"}
        best = min(allowed, key=allowed.get)
        form, directions = options[best]
        others = ", ".join(f"{k} {v:,} µs" for k, v in sorted(costs.items(), key=lambda kv: kv[1]) if k != best)
        why = [f"estimated {costs[best]:,} µs" + (f" against {others}" if others else "")]
        if self.plan not in ("auto",) and not best.startswith(self.plan.split()[0]):
            why.insert(
                0,
                f"plan={self.plan!r} cannot run: "
                f"{written.not_shared or (self.rewriting.reason if self.rewriting else '')}",
            )
        if form.branches is None or directions is None:
            why.append(f"not shared: {form.not_shared}" if form.not_shared else "nested is cheaper here")
        choice = Choice(best, "; ".join(why), costs)
        if directions is not None:
            names = [label(seq) for seq, _ in form.branches]
            choice.directions = list(directions)
            choice.groups = groups_of(form.branches, directions, names)
        return form, choice

    @staticmethod
    def _execution(form, stream, columns: bool) -> Execution:
        """A batch execution with every event added (as the Stream's columns where ``columns``)."""
        execution = Execution(form, complete=True)
        if not (columns and isinstance(stream, Stream) and execution.add_stream(stream)):
            execution.located = execution.add_all(stream)
        return execution

    def run(self, stream):
        execution = self._execution(self.written, stream, columns=self.written.branches is not None)
        form, self.choice = self._choose(execution)
        self.form, self.query = form, form.query
        shared = bool(self.choice.directions)
        if form is not self.written or not shared and any(p.stream is not None for p in execution.parts.values()):
            execution = self._execution(form, stream, columns=shared)
        self._last = execution
        if shared:
            found, execution.shared_stats = run_shared(execution, form.branches, self.choice.directions)
            return found
        located = execution.located
        found = []
        for k, (part, end) in enumerate(filter(None, located)):
            found += execution.settle(part, part.trigger(end))
            if k % PURGE_EVERY == PURGE_EVERY - 1:
                part.purge(end)
        return found

    def matcher(self) -> IncrementalPlan:
        refusal = columnar_refusal(self)
        self.choice = Choice(
            "normal form (nested)" if self.form is self.normal else "nested",
            "an incremental Matcher runs nested on pushes (shared execution needs the whole stream); "
            + (
                f"its micro-batches go event by event ({refusal})"
                if refusal
                else "Matcher.extend runs a micro-batch shared over the last window's events and the batch"
            ),
        )
        why = "asked for" if self.caching != AUTO else "a Matcher has no stream to estimate on: A-CSV"
        self.choice.caching = {"chosen": self.form.caching, "why": why}
        return NestedMatcher(self)

    def info(self) -> dict:
        normal = self.form is self.normal and self.normal is not None
        facts = {
            "execution": "normal form" if normal else "shared" if self.choice.directions else "nested",
            "plan": self.choice.as_dict(),
            "caching": self.form.caching,
            "subqueries": len(self.subqueries),
            "emits": EMISSION,
        }
        if self.rewriting is not None:
            r = self.rewriting
            facts["rewrite"] = {
                "normal_form": r.normal_form,
                "steps": [s.rule for s in r.steps],
                "exact": r.exact,
                "reason": r.reason
                if not r.normal
                else None
                if r.exact
                else "a step does not keep every match under WITHIN (NPDR4/NPDR7)",
            }
        else:
            facts["rewrite"] = None
        if self._last is not None:
            facts["cache"] = self._last.stats()
        return facts


class NestedMatcher(IncrementalPlan):
    """Push events one by one: each triggers the root; candidates waiting for an open scope are checked
    again on every later event and reported once they hold.

    ``extend`` takes a micro-batch (a DataFrame, Table or Stream) as columns where the query can run shared
    (``columnar_refusal``): every match emitted during the batch ends in it, at its last event (no trailing
    ``!``/``EXISTS`` makes one wait), and reads only events at most a window before that, so the shared plan
    over the kept **tail** (the events from a window before the latest ts on, ``window_horizon``) followed
    by the batch builds every one of them, and the rows ending in the batch are exactly what pushing its
    events returns, in output order. The nested execution is then stale: the next push (or ``close``)
    rebuilds it from the tail, which holds every event a later match or scope may read; matches ending in
    the tail were emitted already and no candidate waits, so nothing is reported twice."""

    def __init__(self, plan: NestedPlan):
        self.form = plan.form
        self.window = plan.query.window_seconds
        self.execution = Execution(plan.form, complete=False)
        self.pushed = 0
        self.expiry = KeyExpiry(self.window)  # drops a key's sub-stream once its window passed
        self.refusal = columnar_refusal(plan)
        self.tail: Optional[Stream] = None  # after a micro-batch: the events still needed (the execution is stale)
        self.now = -math.inf  # the latest ts so far

    def push(self, event) -> list:
        if self.tail is not None:
            self._resume()
        self.now = max(self.now, event.time)
        execution = self.execution
        self._forget_quiet_keys(event.time)
        located = execution.add(event)
        if located is not None:
            self.expiry.touch(tuple(event.get(k) for k in execution.partition_by), event.time)
        out = []
        for part in execution.parts.values():
            if part.pending:
                out += execution.settle(part, part.recheck())
        if located is not None:
            part, end = located
            out += execution.settle(part, part.trigger(end))
        self.pushed += 1
        if self.pushed % PURGE_EVERY == 0:
            for part in execution.parts.values():
                part.purge(part.n - 1)
        return [replace(m, emitted_at=event.position) for m in out]

    def extend(self, stream):
        """A micro-batch through the shared plan over the tail and the batch (see the class), or pushed
        event by event where that is not exact (``refusal``, a PUNCTUATION, a batch out of order) or not
        faster (fewer than ``MIN_BATCH`` events)."""
        if (
            self.refusal is not None
            or len(stream) < MIN_BATCH
            or PUNCTUATION in stream.type_names
            or stream.first_disorder(self.now) is not None
            or (self.tail is not None and len(self.tail) and self.tail.ts_is_datetime != stream.ts_is_datetime)
        ):
            return super().extend(stream)
        if not len(stream):
            return []
        kept = self.tail if self.tail is not None else self._kept(stream.ts_is_datetime)
        both = kept.followed_by(stream)
        execution = NestedPlan._execution(self.form, both, columns=True)
        directions, _ = choose_directions(self.form.branches, StreamStats.of(execution))
        found, _ = run_shared(execution, self.form.branches, directions, at_last=True)
        self.now = max(self.now, float(stream.times[-1]))
        start = int(np.searchsorted(both.times, window_horizon(self.now, self.window), "left"))
        self.tail = both.take(slice(start, None)) if start else both
        if not len(found):
            return []
        order, _ = found.output_index()
        last = found.positions[found.offsets[1:] - 1]
        rows = order[last[order] >= int(stream.position_of(0))]
        return MatchList(found.take(rows)) if len(rows) else []

    def _kept(self, ts_is_datetime: bool) -> Stream:
        """The live execution's events from the horizon on, as columns (the tail of a first micro-batch)."""
        horizon = window_horizon(self.now, self.window)
        events = [e for part in self.execution.parts.values() for e in part.events.items if e.time >= horizon]
        return Stream(sorted(events, key=attrgetter("position")), ts_is_datetime)

    def _resume(self) -> None:
        """The nested execution rebuilt from the tail after micro-batches (its events added, nothing
        triggered: every match ending there was emitted by its batch)."""
        events, self.tail = self.tail.events, None
        self.execution = execution = Execution(self.form, complete=False)
        self.expiry = KeyExpiry(self.window)
        for event in events:
            if execution.add(event) is not None:
                self.expiry.touch(tuple(event.get(k) for k in execution.partition_by), event.time)
        execution.clock = self.now

    def _forget_quiet_keys(self, now: float) -> None:
        """Drop the sub-streams whose window has passed (before the event joins its own, which then starts
        afresh); one still holding a pending candidate (this push's recheck decides it) waits a window more."""
        parts = self.execution.parts
        for gone in self.expiry.expired(now):
            if parts[gone].pending:
                self.expiry.touch(gone, now)
            else:
                del parts[gone]

    def close(self) -> list:
        if self.tail is not None:
            self._resume()
        execution = self.execution
        execution.complete = True
        out = []
        for part in execution.parts.values():
            out += execution.settle(part, part.recheck())
        return out


def columnar_refusal(plan: NestedPlan) -> Optional[str]:
    """Why a Matcher of ``plan`` pushes a micro-batch's events one by one instead of running it shared
    (``NestedMatcher.extend``), or None."""
    form, query = plan.form, plan.query
    if plan.plan == "nested":
        return "plan='nested' asked for"
    if form.branches is None:
        return f"not shared: {form.not_shared}"
    if query.window_seconds is None:
        return "no time window (every earlier event may still join a match)"
    if query.select is not None:
        return "RETURN (a projected match is reported once, remembered across pushes)"
    for seq, _ in form.branches:
        if any(b.index > seq.positions[-1] for b in seq.booleans):
            return "a trailing !/EXISTS (its matches wait for the window to pass)"
    return None


class NestedEngine(Engine):
    name = "nested"
    rank = 50
    description = (
        "NEEL nested iterative execution: nested SEQ/AND/OR with ! and EXISTS at any depth, "
        "sub-queries over constrained windows with sliding-view caching (A-/P-/B-CSV), shared "
        "SEQ prefixes, optional rewriting to the NEEL normal form"
    )
    features = frozenset(
        {
            "sequence",
            "or",
            "and",
            "negation",
            "exists",
            "nested_negation",
            "nesting",
            "unary_conditions",
            "binary_conditions",
            "correlated_filters",
            "condition_items",
            "time_window",
            "event_window",
            "partition",
            "projection",
            "any_type",
            "hierarchy",
        }
    )
    options = frozenset({"plan", "caching", "rewrite"})
    disorder = frozenset(DISORDER_MODES)  # through cepkit.runtime.disorder

    def compile(self, query, plan="auto", caching=AUTO, rewrite=False) -> NestedPlan:
        if plan not in PLANS:
            raise ValueError(f"plan is one of {', '.join(map(repr, PLANS))}, not {plan!r}")
        if caching != AUTO and caching not in CACHING_MODES:
            raise ValueError(
                f"caching is one of 'auto' (chosen per query), 'a' (A-CSV), 'p' (P-CSV), 'b' (B-CSV) or None, "
                f"not {caching!r}"
            )
        if not isinstance(rewrite, bool):
            raise TypeError(f"rewrite is True or False, not {rewrite!r}")
        for node in query.scoped.walk():
            if isinstance(node, (A.Not, A.Exists)) and isinstance(node.item, A.Expr):
                raise self.unsupported(query, node, "a negated condition as an item")
            if isinstance(node, (A.Plus, A.Strategy)):
                raise self.unsupported(query, node, "iteration or nested selection strategies")
        return NestedPlan(query, plan, caching, rewrite)


register(NestedEngine())
