"""The compiled SES plan: Alg 1 (plain) or Alg 3 (two-phase) over the stream, A(P, W) per match window.

Every event gets a window coordinate: its time for ``WITHIN n unit`` (and without WITHIN, where the window
runs to the end of the stream), its position in its PARTITION BY sub-stream for ``WITHIN n EVENTS``. A
window's W[0] is evaluated once an event of the same clock arrives beyond W[0] + τ (any partition, for
time), or when the stream is closed; its matches are emitted then, by ``push`` or ``close``. With
``two_phase`` the windows are filtered, partitioned and pruned to candidates (``windows``); without it
every event opens a window over the whole (PARTITION BY) sub-stream, as in Alg 1.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Optional

import numpy as np
import pandas as pd

from ...lang import ast as A
from ..result_size import refuse_beyond_reach
from ...lang.printer import pretty
from ...lang.window import time_limit, time_limits
from ...runtime.attribute_columns import hashable_key
from ...runtime.event_record import PUNCTUATION
from ...runtime.stream import Stream
from ...runtime.match_arrays import MatchArrays
from ...runtime.match_list import MatchList
from ...runtime.match_record import Match
from ...runtime.reported_once import ReportedOnce
from ...runtime.row_arrays import spread
from ...runtime.registry import IncrementalPlan, Plan
from .automaton import SesAutomaton, permutation_automata
from ..conjuncts import counted_positions
from .batch import Columns, Layout, evaluate, run as columnar_run
from .conditions import Conjunct
from .execution import CompiledAutomaton, robust_by_filter, run_window, run_window_robust
from .pattern import HIDDEN, SetPattern
from .step import SesStep, runs as runs_step
from .windows import Entry, MatchWindow


class SesPlan(Plan):
    """A set pattern compiled for the ``ses`` engine.

    ``strategy`` is "ALL", "STNM" or "ROBUST_STNM"; ``robust`` chooses how ROBUST_STNM is found
    ("backtrack": Alg 4, with the ``lookahead`` cut unless it is False; "filter": all matches then Def 6.2);
    ``automaton`` "permutations" runs the brute force of Ex 4.8 instead of the SES automaton (ALL, or each
    permutation greedily under STNM: the engine's docstring).
    """

    def __init__(
        self,
        query,
        pattern: SetPattern,
        two_phase: bool = True,
        robust: str = "backtrack",
        automaton: str = "ses",
        lookahead: bool = True,
    ):
        self.query = query
        self.pattern = pattern
        self.strategy = query.strategy
        self.two_phase = two_phase
        self.robust = robust
        self.automaton_kind = automaton
        self.lookahead = lookahead
        self.variables = pattern.variables
        self.index = {v: i for i, v in enumerate(self.variables)}
        self.arity = len(self.variables)
        conjuncts = [
            Conjunct(c, self.index, pattern.kleene) for c in pattern.theta
        ]  # Θ ∪ Θ_eq⁺ (docs/references.md E11)
        self.satisfiable = all(c.holds(()) for c in conjuncts if not c.variables)
        self.conjuncts = conjuncts = [c for c in conjuncts if c.variables]
        self._types = [_type_test(pattern.atoms[v], query.hierarchy) for v in self.variables]
        self._properties = [tuple(c for c in conjuncts if c.property and c.variables == {i}) for i in range(self.arity)]
        self.automaton = SesAutomaton.build(pattern.sets, pattern.kleene)
        runs = permutation_automata(pattern.sets, pattern.kleene) if automaton == "permutations" else [self.automaton]
        self.compiled = [CompiledAutomaton(a, conjuncts, self.index) for a in runs]
        self.sets = [[self.index[v] for v in s] for s in pattern.sets]
        self.first_set = sum(1 << v for v in self.sets[0])
        window = pattern.window
        self.events_window = window is not None and window.events
        self.span = math.inf if window is None else (window.amount - 1 if window.events else window.seconds)
        # Θ_eq⁺ is part of every prefix test, so every strategy's windows are partitioned on X (docs/references.md E11, [SES] Def 5.3)
        self.partition_attributes = pattern.partition_attributes() if two_phase else ()
        self.select = None if query.select is None else tuple(dict.fromkeys(query.select))  # RETURN a, a: once
        self.visible = [v for v in self.variables if not v.startswith(HIDDEN)]
        self._last_info: dict = {}
        self.layout: Optional[Layout] = Layout.of(self)  # the columnar run's reading, None: it cannot take the plan

    def limits(self, coord):
        """The largest ``coord − W[0]`` of a window reaching an event at each of ``coord`` (an array, or one
        float): the window's span, with ``lang.window``'s float allowance for time windows."""
        if self.events_window or not math.isfinite(self.span):
            return np.full(len(coord), float(self.span)) if isinstance(coord, np.ndarray) else self.span
        if isinstance(coord, np.ndarray):
            return time_limits(self.span, coord)
        return time_limit(self.span, coord)

    def fresh(self) -> "SesPlan":
        """The same compiled automata, conditions and kernel layout, no run statistics (``cepkit.match``'s
        plan cache: a repeated query is neither parsed nor compiled again)."""
        plan = object.__new__(SesPlan)  # not copy.copy: it would go through __reduce__ and compile again
        plan.__dict__.update(self.__dict__, _last_info={})
        return plan

    def __reduce__(self):
        # Compiled conditions are closures: a plan travels (pickle, Spark) as what it was compiled from.
        return SesPlan, (self.query, self.pattern, self.two_phase, self.robust, self.automaton_kind, self.lookahead)

    # ------------------------------------------------------------------ events
    def vars_of(self, event) -> int:
        """The bit mask of variables whose properties Θ^p_v (type included) the event satisfies."""
        mask = 0
        for v in range(self.arity):
            if self._types[v](event.type) and all(c.holds_for_event(event, self.arity) for c in self._properties[v]):
                mask |= 1 << v
        return mask

    # ------------------------------------------------------------------ A(P, W)
    def evaluate(self, window: list) -> list:
        """A(P, W): the bindings of the matches starting at ``window[0]`` under the plan's strategy."""
        if self.strategy == "ROBUST_STNM":
            if self.robust == "backtrack":
                return run_window_robust(self.compiled[0], window, lookahead=self.lookahead)
            return robust_by_filter(run_window(self.compiled[0], window, keep_skips=True))
        keep_skips = self.strategy == "ALL"
        return [b for automaton in self.compiled for b in run_window(automaton, window, keep_skips)]

    def to_match(self, binding: tuple, emitted_at: int) -> Match:
        """A Match: bindings of the shown variables (projection, if any); positions of the kept ones
        (projection, or every variable, anonymous atoms included)."""
        shown = self.select if self.select is not None else self.visible
        kept = shown if self.select is not None else self.variables
        bindings = {}
        for name in shown:
            positions = tuple(e.position for e in binding[self.index[name]])
            bindings[name] = positions if name in self.pattern.kleene else positions[0]
        positions = tuple(sorted(e.position for name in kept for e in binding[self.index[name]]))
        return Match(positions, bindings, emitted_at=emitted_at)

    # ------------------------------------------------------------------ Plan
    def matcher(self) -> "SesMatcher":
        return SesMatcher(self)

    def match_windows(self, stream) -> pd.DataFrame:
        """Every match window of a run over ``stream`` (anything ``Stream.from_any`` takes, in order), in the
        order they were closed: its
        W[0] (``start``), its window key (PARTITION BY values, then X values), the positions it holds
        (after filtering, in the two-phase evaluation), whether A ran on it (a candidate), and
        the positions of the matches A found."""
        log: list = []
        matcher = SesMatcher(self, log)
        for event in Stream.from_any(stream):
            matcher.push(event)
        matcher.close()
        return pd.DataFrame(log, columns=["start", "key", "positions", "evaluated", "matches"])

    def to_arrays(self, batch: list) -> MatchArrays:
        """``to_match`` of every (bindings, emitted_at) of ``batch`` (no RETURN), as columns built one
        variable at a time: no ``Match``, no dict and no Python loop per match (with many matches, those and
        their conversion to columns were 40 % of a run)."""
        found = [b for bindings, _ in batch for b in bindings]
        emitted = np.repeat(np.array([at for _, at in batch], np.int64), [len(bindings) for bindings, _ in batch])
        n = len(found)
        shown = [self.index[v] for v in self.visible]
        kleene = [self.variables[v] in self.pattern.kleene for v in shown]
        bound = [_positions(found, v, k) for v, k in zip(shown, kleene)]
        hidden = [_positions(found, v, True) for v in range(self.arity) if v not in shown]
        # the bindings: per match, each shown variable's positions in turn (an empty Kleene tuple: one -1)
        entries = [np.maximum(lengths, 1) for lengths, _ in bound]
        bound_offsets = np.zeros(n + 1, np.int64)
        np.cumsum(np.sum(entries, axis=0) if entries else np.zeros(n, np.int64), out=bound_offsets[1:])
        bound_positions = np.full(bound_offsets[-1], -1, np.int64)
        bound_variables = np.empty(bound_offsets[-1], np.int64)
        before = bound_offsets[:-1].copy()  # where each match's next variable starts
        for k, ((lengths, flat), count) in enumerate(zip(bound, entries)):
            bound_variables[spread(before, count)] = k
            bound_positions[spread(before, lengths)] = flat
            before += count
        # the positions: every event of every variable, sorted within each match
        lengths = sum((lengths for lengths, _ in bound + hidden), np.zeros(n, np.int64))
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.concatenate([flat for _, flat in bound + hidden] + [np.zeros(0, np.int64)])
        rows = np.concatenate(
            [np.repeat(np.arange(n), lengths) for lengths, _ in bound + hidden] + [np.zeros(0, np.int64)]
        )
        stride = int(flat.max(initial=0)) + 1
        positions = np.sort(rows * stride + flat) - np.repeat(np.arange(n) * stride, lengths)
        return MatchArrays(
            offsets, positions, bound_offsets, bound_positions, bound_variables, self.visible, kleene, emitted
        )

    def run(self, stream):
        """The matches of ``stream``: as columns without RETURN (by the columnar run, ``batch``, when the
        query is all its kernel does, else ``to_arrays`` of the matcher's windows); with RETURN, ``Match``
        objects (the matcher reports each projection once)."""
        stream = Stream.from_any(stream)
        refuse_beyond_reach(self.query, stream, "ses")  # a result too large to list: said before
        found = columnar_run(self, stream)
        if found is not None:
            matches, self._last_info = found
            return matches
        matcher = SesMatcher(self, batch=[] if self.select is None else None)
        found = [m for event in stream for m in matcher.push(event)]
        found.extend(matcher.close())
        self._last_info = matcher.statistics()
        return found if matcher.batch is None else self.to_arrays(matcher.batch)

    def info(self) -> dict:
        """Automaton size, the partition attributes X, the added equalities, and window counts of the last
        ``run``: ``windows`` opened, ``evaluated`` (calls to A), ``max_window`` (largest |W| evaluated)."""
        return {
            "strategy": self.strategy,
            "states": len(self.automaton.states),
            "transitions": len(self.automaton.transitions),
            "automata": len(self.compiled),
            "two_phase": self.two_phase,
            "partition_attributes": self.partition_attributes,
            "closure": [pretty(c) for c in self.pattern.closure],
            **self._last_info,
        }


class SesMatcher(IncrementalPlan):
    """Incremental Alg 1 / Alg 3: ``push`` returns the matches of the windows the event completed.

    The open windows are held in one of two forms. ``push`` keeps them as ``MatchWindow``s of ``Entry``
    objects and runs A in Python when a window closes. ``extend`` (a micro-batch, when the plan is one the
    kernel runs: ``SesPlan.layout``) keeps them as columns: ``_tail``, a ``Stream`` of the kept events
    whose windows are still open, with their coordinates; the tail and the batch go through
    ``batch.evaluate`` together, which runs every window the batch closes in the kernel and leaves the
    still open ones as the next tail. Switching from one to the other converts the open windows (at most
    the events of one window span per window key)."""

    def __init__(self, plan: SesPlan, log: Optional[list] = None, batch: Optional[list] = None):
        self.plan = plan
        self.log = log  # if a list: one row per closed window (``SesPlan.match_windows``)
        self.batch = batch  # if a list: (bindings, emitted_at) per window, no Match (``run``)
        self.windows: dict = {}  # window key -> MatchWindow
        self.clocks: dict = {}  # clock -> heap of (W[0] coordinate, tie, window key)
        self.substream: dict = {}  # PARTITION BY key -> events seen (EVENTS coordinates)
        self._tie = itertools.count()
        self.last_position = -1
        self._now = -math.inf  # the latest time seen
        self._tail: Optional[Stream] = None  # the open windows as columns (``extend``), or None
        self.stepping = None  # the ``step.SesStep`` holding the open windows (``Matcher.pusher``), or None
        self._tail_coord = np.zeros(0)
        self.opened = self.evaluated = self.max_window = 0
        # RETURN keys already reported: the windows of two starts can hold matches that project to the same
        # (C, beta), one match (docs/language.md §10.2), reported once, when the first of those windows closes
        self.projected = None if plan.select is None else ReportedOnce(plan.query.window_seconds)

    def step(self, columns: tuple):
        """``step.SesStep`` for ``cepkit.Matcher.pusher`` when it runs the plan (``step.runs``), else None."""
        if self.log is not None or self.batch is not None or not runs_step(self.plan):
            return None
        return SesStep(self, columns)

    def push(self, event) -> list:
        if self.stepping is not None:
            self.stepping.hand_back()
        if self._tail is not None:
            self._to_windows()
        found = self._push(event)
        return found if self.projected is None else self.projected.unreported(found, event.time)

    def close(self) -> list:
        if self.stepping is not None:
            self.stepping.hand_back()
        if self._tail is not None:
            tail, coord = self._tail, self._tail_coord
            self._tail = None
            columns = Columns.of(self.plan, tail)
            if columns is not None:
                matches, info, _ = evaluate(self.plan, columns, coord, self.last_position)
                self._count(info)
                return _pushed_order(matches)
            self._to_windows(tail, coord)
        found = self._close()
        return found if self.projected is None else self.projected.unreported(found, None)

    def extend(self, stream):
        """A micro-batch as columns: the open windows (``_tail``) and the batch through the kernel
        (``batch.evaluate``), every window the batch closes evaluated there; the matches as a ``MatchList``
        in the order pushing the events one by one returns them. Event by event (``push``) when the plan
        or the batch is not one the kernel runs, for ``match_windows``' log, and out of time order."""
        plan = self.plan
        if self.stepping is not None:
            self.stepping.hand_back()
        if (
            plan.layout is None
            or self.log is not None
            or self.batch is not None
            or not len(stream)
            or stream.first_disorder(self._now) is not None
        ):
            return super().extend(stream)
        if self._tail is None:
            self._to_columns(stream.ts_is_datetime)
        tail, tail_coord = self._tail, self._tail_coord
        try:
            combined = tail.followed_by(stream)
        except ValueError:  # datetime ts after numeric ones: pushed, so the error is the push's
            return super().extend(stream)
        columns = Columns.of(plan, combined)
        if columns is None:
            return super().extend(stream)
        coord = combined.times
        if plan.events_window:
            coord = np.concatenate([tail_coord, counted_positions(stream, plan.query.partition_by, self.substream)])
        self.last_position = int(stream.position_of(np.array([len(stream) - 1]))[0])
        self._now = max(self._now, float(stream.times[-1]))
        matches, info, still_open = evaluate(plan, columns, coord, self.last_position, final=False)
        self.opened += int(np.count_nonzero(columns.kept >= len(tail)))
        self._count(info)
        self._tail, self._tail_coord = combined.take(still_open), coord[still_open]
        return MatchList(_pushed_order(matches))

    def _count(self, info: dict) -> None:
        self.evaluated += info["evaluated"]
        self.max_window = max(self.max_window, info["max_window"])

    def _to_columns(self, ts_is_datetime: bool) -> None:
        """The open windows' entries as the columnar tail (``extend``)."""
        entries = sorted(
            (e for window in self.windows.values() for e in window.entries), key=lambda e: e.event.position
        )
        self._tail = Stream([e.event for e in entries], ts_is_datetime=ts_is_datetime)
        self._tail_coord = np.array([e.coord for e in entries], dtype=float)
        self.windows.clear()
        self.clocks.clear()

    def _to_windows(self, tail: Optional[Stream] = None, coord=None) -> None:
        """The columnar tail back as ``MatchWindow``s (``push``)."""
        if tail is None:
            tail, coord = self._tail, self._tail_coord
        self._tail = None
        plan = self.plan
        for event, at in zip(tail, coord.tolist()):
            key = tuple(event.get(a) for a in plan.query.partition_by)
            self._enter(event, key, key if plan.events_window else None, at, plan.vars_of(event))

    def _push(self, event) -> list:
        plan = self.plan
        self.last_position = event.position
        self._now = max(self._now, event.time)
        if event.type == PUNCTUATION:  # never matched nor counted, as in the reference; its time
            return [] if plan.events_window else self._expire(None, event.time)  # still closes windows
        key = tuple(event.get(a) for a in plan.query.partition_by)
        if plan.events_window:
            clock, coord = key, self.substream.get(key, 0)
            self.substream[key] = coord + 1
        else:
            clock, coord = None, event.time
        found = self._expire(clock, coord)
        vars_ = plan.vars_of(event)
        if plan.two_phase and not vars_:
            return found  # filtered out (Thm 5.1)
        self._enter(event, key, clock, coord, vars_)
        self.opened += 1
        return found

    def _enter(self, event, key: tuple, clock, coord: float, vars_: int) -> None:
        """Append a kept event to its window (PARTITION BY ``key``, then its values of X)."""
        plan = self.plan
        window_key = key + tuple(hashable_key(event.get(a)) for a in plan.partition_attributes)
        window = self.windows.get((clock, window_key))
        if window is None:
            window = self.windows[(clock, window_key)] = MatchWindow(plan.sets, plan.first_set, plan.arity)
        window.append(Entry(event, coord, vars_))
        if len(window) == 1:
            self._schedule(clock, window_key, coord)

    def _close(self) -> list:
        found = []
        for (clock, window_key), window in self.windows.items():
            while len(window):
                found.extend(self._evaluate_front(window, window_key))
        self.windows.clear()
        self.clocks.clear()
        return found

    def statistics(self) -> dict:
        """Windows opened, windows evaluated (calls to A) and the largest window evaluated, so far."""
        if self.stepping is not None:
            self.stepping.counted()
        return {"windows": self.opened, "evaluated": self.evaluated, "max_window": self.max_window}

    def _schedule(self, clock, window_key, coord: float) -> None:
        """Remember when the window's current W[0] (at ``coord``) must be closed."""
        heapq.heappush(self.clocks.setdefault(clock, []), (coord, next(self._tie), window_key))

    def _expire(self, clock, coord) -> list:
        """Evaluate and dequeue every W[0] of this clock with coord - W[0] > τ."""
        found, heap, limit = [], self.clocks.get(clock), self.plan.limits(coord)
        while heap and coord - heap[0][0] > limit:
            _, _, window_key = heapq.heappop(heap)
            window = self.windows[(clock, window_key)]
            found.extend(self._evaluate_front(window, window_key))
            if len(window):
                self._schedule(clock, window_key, window.front.coord)
            else:  # nothing left of this key (and partition attributes): forget it, a new event opens anew
                del self.windows[(clock, window_key)]
        return found

    def _evaluate_front(self, window: MatchWindow, window_key: tuple) -> list:
        """Run A on the window of W[0] if it may hold a match, then dequeue W[0]."""
        plan = self.plan
        found = []
        candidate = plan.satisfiable and (window.candidate or not plan.two_phase)
        if candidate:
            entries = list(window.entries)
            self.evaluated += 1
            self.max_window = max(self.max_window, len(entries))
            bindings = plan.evaluate(entries)
            if self.batch is not None:
                self.batch.append((bindings, self.last_position))
            else:
                found = [plan.to_match(b, self.last_position) for b in bindings]
        if self.log is not None:
            self.log.append(
                {
                    "start": window.front.event.position,
                    "key": window_key,
                    "positions": [e.event.position for e in window.entries],
                    "evaluated": candidate,
                    "matches": [m.positions for m in found],
                }
            )
        window.popleft()
        return found


def _pushed_order(matches: MatchArrays) -> MatchArrays:
    """The matches in the order pushing their events returns them: by the event that emitted them, each
    event's in output order (docs/language.md §10.2)."""
    order, _ = matches.output_index()
    return matches.take(order[np.argsort(matches.emitted_at[order], kind="stable")])


def _positions(found: list, v: int, kleene: bool) -> tuple:
    """(per binding, how many positions variable ``v`` has; those positions, flat): a single variable
    keeps its first event, as ``SesPlan.to_match`` does."""
    if not kleene:
        return np.ones(len(found), np.int64), np.fromiter((b[v][0].position for b in found), np.int64, len(found))
    lists = [b[v] for b in found]
    lengths = np.fromiter(map(len, lists), np.int64, len(found))
    return lengths, np.fromiter((e.position for events in lists for e in events), np.int64, int(lengths.sum()))


def _type_test(atom: A.Atom, hierarchy):
    """Which event types the atom takes: any (ANY), or its type and the concepts below it (docs/language.md §7;
    a hierarchy over an attribute does not classify types, as in the reference)."""
    if atom.type is None:
        return lambda t: True
    by_type = hierarchy is not None and hierarchy.attribute is None
    return (hierarchy.covers(atom.type) if by_type else frozenset({atom.type})).__contains__
