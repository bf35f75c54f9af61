"""The E-Cube cost model ([LIU] §4.4, Table 4.1, Table 4.1, Eqs 4.2-4.9), with statistics measured on a stream
or given.

Symbols as in Table 4.1: ``|S_i|`` the events of item i in one window (``Rate·TW·P``), ``Pt`` the
time-order selectivity (1/2), ``P`` the selectivity of a condition, ``|R_q|`` the results of q, and the
unit costs ``C_type`` (a type check), ``C_access`` (visiting a stored instance), ``C_app`` (appending an
event to a stack) and ``C_ct`` (a timestamp comparison).

The text gives no formula for evaluating a query from scratch; ``scratch_cost`` is the stand-in the
cepkit uses its own estimate ([LIU] gives none): ``NumRE·C_app + Σ_k |R_k|·C_access``, where ``|R_k|`` counts the
partial matches of the first k positive items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from ..runtime.event_record import PUNCTUATION
from ..runtime.stream import Stream
from .shape import Item, Shape


@dataclass(frozen=True)
class UnitCosts:
    """Unit costs and default selectivities (Table 4.1)."""

    C_type: float = 0.25
    C_access: float = 1.0
    C_app: float = 1.0
    C_ct: float = 0.25
    Pt: float = 0.5  # time-order selectivity of a pair of items
    P: float = 0.5  # selectivity of one condition (the text's P(Ei, Ej), 1 without conditions)
    # Ours: the fixed cost of one engine evaluation (a query from scratch, a delta query, a re-check),
    # whatever its stream: the run's set-up, the stream's part, the rows. Table 4.1 has no such term (0);
    # ``ECube``'s default is ``MEASURED`` below, calibrated on a machine by ``bench/ecube.py --calibrate``.
    C_eval: float = 0.0


@dataclass
class Statistics:
    """What the cost model needs from a stream: events per type (and per attribute value), the stream's
    length and time span. ``Statistics.measure(stream)`` counts them; or give them for a what-if plan.

    >>> s = Statistics({"A": 10, "B": 5}, length=15, duration=30.0)
    >>> s.events_of(frozenset({"A", "B"}))
    15.0
    """

    type_counts: dict
    length: int
    duration: float
    attribute: Optional[str] = None
    value_counts: dict = field(default_factory=dict)  # (type, value) -> count, for the attribute

    @classmethod
    def measure(cls, stream, attribute: Optional[str] = None) -> "Statistics":
        """Count a ``Stream`` (or anything ``Stream.from_any`` takes) from its columns."""
        if not isinstance(stream, Stream):
            stream = Stream.from_any(stream)
        names = np.asarray(stream.type_names, dtype=object)
        real = (
            np.asarray([t != PUNCTUATION for t in stream.type_names], bool)[stream.type_codes]
            if len(stream)
            else np.zeros(0, bool)
        )
        codes = stream.type_codes[real]
        counts = np.bincount(codes, minlength=len(names))
        types = {names[k]: int(n) for k, n in enumerate(counts) if n}
        times = stream.times[real]
        duration = float(times.max() - times.min()) if len(times) else 0.0
        values = {}
        if attribute is not None and len(codes):
            column = stream.column(attribute).objects()[real]
            frame = pd.DataFrame({"t": names[codes], "v": column})
            values = {key: int(n) for key, n in frame.groupby(["t", "v"], dropna=False, sort=False).size().items()}
        return cls(types, int(len(codes)), duration, attribute, values)

    def events_of(self, types: frozenset, item: Optional[Item] = None) -> float:
        """Events an item accepts in the whole stream (its types, and its values when it has some)."""
        if item is None or self.attribute is None or (item.values is None and not item.excluded):
            return float(sum(self.type_counts.get(t, 0) for t in types))
        return float(
            sum(
                n
                for (t, v), n in self.value_counts.items()
                if t in types and (item.values is None or v in item.values) and v not in item.excluded
            )
        )

    def key(self) -> tuple:
        """What the cost model reads, hashable: equal for two measures of the same stream."""
        return (
            tuple(sorted(self.type_counts.items())),
            self.length,
            self.duration,
            self.attribute,
            tuple(sorted(self.value_counts.items(), key=repr)),
        )

    def scaled(self, event_type: str, factor: float) -> "Statistics":
        """These statistics with ``event_type``'s events multiplied by ``factor`` (a what-if rate).

        >>> Statistics({"A": 10, "B": 5}, 15, 30.0).scaled("A", 2.0).type_counts
        {'A': 20.0, 'B': 5}
        """
        counts = {t: n * factor if t == event_type else n for t, n in self.type_counts.items()}
        values = {(t, v): n * factor if t == event_type else n for (t, v), n in self.value_counts.items()}
        length = self.length + (factor - 1) * self.type_counts.get(event_type, 0)
        return Statistics(counts, length, self.duration, self.attribute, values)

    def drift(self, other: "Statistics") -> float:
        """How far ``other`` has moved from these statistics ([LIU] §4.5's trigger): the largest relative change of
        a type's share of the stream (a type unseen here counts from a share of one event).

        >>> round(Statistics({"A": 50, "B": 50}, 100, 100.0).drift(Statistics({"A": 80, "B": 20}, 100, 100.0)), 3)
        0.6
        """

        def share(stats, t):
            return stats.type_counts.get(t, 0) / stats.length if stats.length else 0.0

        floor = 1 / self.length if self.length else 1.0
        return max(
            (
                abs(share(other, t) - share(self, t)) / max(share(self, t), floor)
                for t in set(self.type_counts) | set(other.type_counts)
            ),
            default=0.0,
        )

    def window_fraction(self, shape: Shape) -> float:
        """The share of the stream one window holds (TW relative to the stream)."""
        within = shape.within
        if within is None or self.length == 0:
            return 1.0
        if within.events:
            return min(1.0, within.amount / self.length)
        return min(1.0, within.seconds / self.duration) if self.duration > 0 else 1.0


# Table 4.1's unit costs with the fixed cost of an evaluation measured (``bench/ecube.py --calibrate``: an
# engine run's time fitted as ``a + b·scratch_cost`` over the workloads' queries and deltas, C_eval = a / b)
MEASURED = UnitCosts(C_eval=1400.0)


class CostModel:
    """Estimates for shapes and reuse edges over given ``Statistics`` and ``UnitCosts`` (``CostModel.of``: one
    model per statistics and units, its estimates kept, for every cube planning over the same stream)."""

    @classmethod
    def of(cls, statistics: Statistics, units: UnitCosts) -> "CostModel":
        key = (statistics.key(), units)
        found = _MODELS.pop(key, None) or cls(statistics, units)
        _MODELS[key] = found  # most recently used last
        while len(_MODELS) > 16:
            del _MODELS[next(iter(_MODELS))]
        return found

    def __init__(self, statistics: Statistics, units: UnitCosts = UnitCosts()):
        self.stats = statistics
        self.units = units
        self._events: dict = {}  # item -> events (Chase's graph asks for each many times)
        self._partial: dict = {}  # shape -> partial matches
        self._scratch: dict = {}  # shape -> scratch cost

    def events(self, item: Item) -> float:
        found = self._events.get(item)
        if found is None:
            found = self._events[item] = self.stats.events_of(item.types, item)
        return found

    def in_window(self, shape: Shape, item: Item) -> float:
        """``|S_i|``: events of the item in one window."""
        return self.events(item) * self.stats.window_fraction(shape)

    def partial_matches(self, shape: Shape) -> list:
        """``|R_k|`` for k = 1..n: matches of the first k positive items ending anywhere in the stream
        (the last one anchors, each earlier one is among its window's ``|S_i|``, ordered with ``Pt``),
        thinned by the negations between them: none of ``|S_x|`` events may fall in the gap, each with
        probability ``Pt·Pt`` (Eq 4.3's ``1 − Pt(m,k)·Pt(k,n)`` per event)."""
        found = self._partial.get(shape)
        if found is None:
            found = self._partial[shape] = self._partial_matches(shape)
        return list(found)

    def _partial_matches(self, shape: Shape) -> list:
        u, out, earlier = self.units, [], 1.0
        positives = [shape.items[k] for k in shape.positives]
        negations_after = self._negations_by_gap(shape)
        for k, item in enumerate(positives):
            blocked = math.prod((1 - u.Pt * u.Pt) ** self.in_window(shape, neg) for neg in negations_after[k])
            out.append(self.events(item) * earlier * blocked)
            earlier *= self.in_window(shape, item) * u.Pt * blocked
        return out

    @staticmethod
    def _negations_by_gap(shape: Shape) -> list:
        """Negated items grouped by the positive item they precede (the last group takes the trailing ones)."""
        groups, current = [], []
        for item in shape.items:
            if item.positive:
                groups.append(current)
                current = []
            else:
                current.append(item)
        groups[-1].extend(current)
        return groups

    def results(self, shape: Shape) -> float:
        """``|R_q|``: the expected number of matches."""
        return self.partial_matches(shape)[-1] * self.units.P ** len(shape.conditions)

    def fixed(self, evaluations: int) -> float:
        """The fixed cost of ``evaluations`` engine runs (``UnitCosts.C_eval`` each)."""
        return evaluations * self.units.C_eval

    def scratch_cost(self, shape: Shape) -> float:
        """``C(q)`` (ours): every relevant event appended, every partial match visited."""
        found = self._scratch.get(shape)
        if found is None:
            u = self.units
            relevant = sum(self.events(item) for item in shape.items)
            found = self._scratch[shape] = relevant * u.C_app + sum(self.partial_matches(shape)) * u.C_access
        return found

    # ------------------------------------------------------------------ reuse edges ([LIU] §4.4)
    def filter_concept(self, general: Shape, specific: Shape, rechecked: list) -> float:
        """g→s concept, Eq 4.4 ``|R_qi|·C_type·len(qi)``, plus Eq 4.5 for a coarser negation: each
        result's gap is checked against the new negated types ``rechecked``."""
        u, r = self.units, self.results(general)
        cost = r * u.C_type * len(general.items)
        for item in rechecked:
            cost += self.events(item) * u.C_app + r * self.in_window(specific, item) * u.C_ct
        return cost

    def join_pattern(self, general: Shape, specific: Shape, added: list, extends: bool) -> float:
        """g→s pattern, Eqs 4.2-4.3 (ours where the text's join differs from what runs). ``extends``: each
        general result is read and repeated per fitting event of the one added item, so the cost is
        the results read and written, ``|R_qi|·C_access + |R_qj|·C_app``. Otherwise the specific query
        runs over the part of the stream the general results and the added and negated items cover (its
        scratch cost scaled by that part's share of its relevant events) and its matches are joined
        with the general results (each visited once)."""
        u, r = self.units, self.results(general)
        if extends:
            return r * u.C_access + self.results(specific) * u.C_app
        relevant = sum(self.events(item) for item in specific.items) or 1.0
        part = (
            r * len(general.positives)
            + sum(self.events(i) for i in added)
            + sum(self.events(i) for i in specific.items if not i.positive)
        )
        share = min(1.0, part / relevant)
        return self.scratch_cost(specific) * share + (r + self.results(specific)) * u.C_access

    def union_concept(self, general: Shape, specific: Shape, deltas: list) -> float:
        """s→g concept, Eq 4.8 ``C(qi) − C(qj)``: only the pointer pairs the child did not cover are
        walked (the delta queries), and the child's results are appended."""
        return sum(self.scratch_cost(d) for d in deltas) + self.results(specific) * self.units.C_app

    def project_pattern(self, general: Shape, specific: Shape, delta: Shape) -> float:
        """s→g pattern, Eq 4.7: every specific result is re-read and projected, and the general
        query's matches that the added item missed are computed (the delta, ``SEQ(.., !Em, ..)``)."""
        return self.results(specific) * self.units.C_type * len(specific.items) + self.scratch_cost(delta)


_MODELS: dict = {}  # (statistics' key, units) -> CostModel, the 16 most recently used (``CostModel.of``)
