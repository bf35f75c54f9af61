"""The ``reference`` engine: the reference evaluator behind the engine interface (rank 1000: ``auto``
picks it only when no other engine can run a query)."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ..lang.query import FEATURES, Query
from ..runtime.event_record import Event
from ..runtime.stream import Stream
from ..runtime.registry import Engine, IncrementalPlan, Plan, register
from .derivations import SEARCH_BUDGET
from .evaluate import Evaluation


class ReferencePlan(Plan):
    def __init__(self, query: Query, budget: Optional[int] = SEARCH_BUDGET):
        self.evaluation = Evaluation(query, budget)

    def run(self, stream) -> list:
        return self.evaluation.run(stream)

    def matcher(self) -> IncrementalPlan:
        return ReferenceMatcher(self.evaluation)


class ReferenceMatcher(IncrementalPlan):
    """Re-evaluates the whole prefix on every push and reports the matches that became final (see
    ``cepkit.semantics.evaluate``: a match waiting for a trailing negation/EXISTS scope is final once an
    event beyond its scope has arrived, or at ``close()``)."""

    def __init__(self, evaluation: Evaluation):
        self.evaluation = evaluation
        self.events: list = []
        self.reported: set = set()

    def push(self, event: Event) -> list:
        self.events.append(event)
        return self._new(complete=False)

    def close(self) -> list:
        return self._new(complete=True)

    def _new(self, complete: bool) -> list:
        found = self.evaluation.run(Stream(list(self.events)), complete)
        fresh = [m for m in found if m.key not in self.reported]
        self.reported.update(m.key for m in fresh)
        at = self.events[-1].position if self.events else None
        return [replace(m, emitted_at=at) for m in fresh]


class ReferenceEngine(Engine):
    name = "reference"
    rank = 1000
    features = frozenset(FEATURES)
    description = "brute-force denotational evaluator: the meaning of the language, the oracle for every engine"
    options = frozenset({"budget"})

    def compile(self, query: Query, budget: Optional[int] = SEARCH_BUDGET, **options) -> Plan:
        """``budget``: positions held in partial matches per partition before a QueryError (None: no limit;
        docs/limits.md)."""
        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
            raise ValueError(f"budget is a positive int or None, not {budget!r}")
        return ReferencePlan(query, budget)


register(ReferenceEngine())
