"""The ``nested`` engine: NEEL nested iterative execution with sliding-view caching ([LIU] §5.1.3-5.1.4, §4, §6;
[LIU] ch. 5, [CSV]).

Nested SEQ / AND / OR with ``!`` and EXISTS over atoms or composites at any depth, windows, predicates
(correlated with enclosing variables too), PARTITION BY, RETURN, ANY and concept hierarchies:

>>> import cepkit
>>> q = "SEQ(Recycle r, Washing w, !SEQ(Sharpening s, Disinfection d, Checking c), Operating o)"
>>> events = [{"type": t, "ts": ts} for t, ts in [("Recycle", 1), ("Washing", 2), ("Sharpening", 3),
...           ("Checking", 4), ("Operating", 5)]]
>>> m = cepkit.match(q, events, engine="nested")
>>> m.positions(), m.info["execution"], m.info["caching"]
([(0, 1, 4)], 'nested', 'b')

Options:

- ``caching``: how a sub-query's results are kept between outer candidates: ``"b"`` (B-CSV, the default:
  the query intervals of one trigger merged and computed once, the best of [CSV] §8 in time and memory),
  ``"a"`` (A-CSV), ``"p"`` (P-CSV) or ``None`` (recompute per candidate, NEEL's baseline). All give the
  same matches; ``Matches.info["cache"]`` counts lookups, hits, partial and full computations.
- ``rewrite``: ``True`` runs the NEEL normal form (``cepkit.rewrite``, a DNF whose disjuncts share their
  SEQ prefixes, [LIU] §5.3) when the rewriting exists and keeps every match; otherwise, and by default, the
  nested plan runs. ``Matches.info["rewrite"]`` says which and why.

A ``Matcher`` reports a match at its last event when every scope it reads is closed; a match waiting for a
trailing ``!``/EXISTS scope is reported once an event past its window arrives (time after first + w, or
index first + n for ``n EVENTS``), or at ``close()``; without WITHIN, at ``close()``.
"""
from __future__ import annotations

from dataclasses import replace

from ...lang import ast as A
from ...lang.rewrite import rewrite as neel_rewrite
from ...runtime.expiry import KeyExpiry
from ...runtime.registry import DISORDER_MODES, Engine, IncrementalPlan, Plan, register
from .execution import Execution
from .operators import PlanBuilder
from .views import CACHING_MODES

__all__ = ["NestedEngine", "NestedPlan"]

EMISSION = ("a Matcher reports a match at its last event when no scope it reads is open; one waiting for a "
            "trailing !/EXISTS once that scope decides (at the latest when an event past its window arrives), "
            "or at close(); without WITHIN at close()")
PURGE_EVERY = 64   # triggers (or pushes) between two purges of the stacks and views


class NestedPlan(Plan):
    """A query compiled to NEEL operators (``operators``), possibly through its normal form. Pickles."""

    def __init__(self, query, caching="b", rewrite=False):
        self.original = query
        self.caching = caching
        self.rewrite = rewrite
        self.rewriting = neel_rewrite(query) if rewrite else None
        use_normal_form = self.rewriting is not None and self.rewriting.normal and self.rewriting.exact
        self.query = self.rewriting.result if use_normal_form else query
        builder = PlanBuilder()
        self.root = builder.build(self.query.scoped)
        self.subqueries = tuple(builder.subqueries)
        self._last = None

    def __getstate__(self):
        return {"query": self.original, "caching": self.caching, "rewrite": self.rewrite}

    def __setstate__(self, state):
        self.__init__(**state)

    def run(self, stream) -> list:
        execution = Execution(self, complete=True)
        located = [execution.add(event) for event in stream]
        found = []
        for k, (part, end) in enumerate(filter(None, located)):
            found += execution.settle(part, part.trigger(end))
            if k % PURGE_EVERY == PURGE_EVERY - 1:
                part.purge(end)
        self._last = execution
        return found

    def matcher(self) -> IncrementalPlan:
        return NestedMatcher(self)

    def info(self) -> dict:
        facts = {"execution": "normal form" if self.query is not self.original else "nested",
                 "caching": self.caching, "subqueries": len(self.subqueries), "emits": EMISSION}
        if self.rewriting is not None:
            r = self.rewriting
            facts["rewrite"] = {"normal_form": r.normal_form, "steps": [s.rule for s in r.steps], "exact": r.exact,
                                "reason": r.reason if not r.normal else None if r.exact
                                else "a step does not keep every match under WITHIN (NPDR4/NPDR7)"}
        else:
            facts["rewrite"] = None
        if self._last is not None:
            facts["cache"] = self._last.stats()
        return facts


class NestedMatcher(IncrementalPlan):
    """Push events one by one: each triggers the root; candidates waiting for an open scope are checked
    again on every later event and reported once they hold."""

    def __init__(self, plan: NestedPlan):
        self.execution = Execution(plan, complete=False)
        self.pushed = 0
        self.expiry = KeyExpiry(plan.query.window_seconds)   # drops a key's sub-stream once its window passed

    def push(self, event) -> list:
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
        execution = self.execution
        execution.complete = True
        out = []
        for part in execution.parts.values():
            out += execution.settle(part, part.recheck())
        return out


class NestedEngine(Engine):
    name = "nested"
    rank = 50
    description = ("NEEL nested iterative execution: nested SEQ/AND/OR with ! and EXISTS at any depth, "
                   "sub-queries over constrained windows with sliding-view caching (A-/P-/B-CSV), shared "
                   "SEQ prefixes, optional rewriting to the NEEL normal form")
    features = frozenset({
        "sequence", "or", "and", "negation", "exists", "nested_negation", "nesting", "unary_conditions",
        "binary_conditions", "correlated_filters", "condition_items", "time_window", "event_window",
        "partition", "projection", "any_type", "hierarchy",
    })
    options = frozenset({"caching", "rewrite"})
    disorder = frozenset(DISORDER_MODES)   # through cepkit.runtime.disorder

    def compile(self, query, caching="b", rewrite=False) -> NestedPlan:
        if caching not in CACHING_MODES:
            raise ValueError(f"caching is one of 'a' (A-CSV), 'p' (P-CSV), 'b' (B-CSV) or None, not {caching!r}")
        if not isinstance(rewrite, bool):
            raise TypeError(f"rewrite is True or False, not {rewrite!r}")
        for node in query.scoped.walk():
            if isinstance(node, (A.Not, A.Exists)) and isinstance(node.item, A.Expr):
                raise self.unsupported(query, node, "a negated condition as an item")
            if isinstance(node, (A.Plus, A.Strategy)):
                raise self.unsupported(query, node, "iteration or nested selection strategies")
        return NestedPlan(query, caching, rewrite)


register(NestedEngine())
