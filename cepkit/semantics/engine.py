"""The ``reference`` engine: the reference evaluator behind the engine interface (rank 1000: ``auto``
picks it only when no other engine can run a query)."""
from __future__ import annotations

from dataclasses import replace

from ..lang.query import FEATURES, Query
from ..runtime.events import Event, Stream
from ..runtime.registry import Engine, IncrementalPlan, Plan, register
from .evaluate import Evaluation


class ReferencePlan(Plan):
    def __init__(self, query: Query):
        self.evaluation = Evaluation(query)

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

    def compile(self, query: Query, **options) -> Plan:
        return ReferencePlan(query)


register(ReferenceEngine())
