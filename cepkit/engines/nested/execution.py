"""Nested iterative execution ([LIU] §5.1.4): the outer query first, then each
sub-query over the constrained window its outer candidate gives it.

Per sub-stream (one per PARTITION BY key), events are numbered in logical order. When the event at index
``j`` arrives, it *triggers* the root: the outer candidates are the root's results ending at ``j`` inside
the window (``construct``: the WinSeq stacks, a result ending at each index kept once per operator, the
shared SEQ prefixes too). Each candidate is then validated top down (``valid``), with docs/language.md's
semantics (docs/language.md §2, §10.4, §10.11), which NEEL's Eqs 5.4-5.8 are:

- a ``!``/``EXISTS`` item of a SEQ looks strictly between the nearest positive items left and right of it;
  with none on one side, the bound comes from the enclosing SEQ's neighbours, then from the window
  ((last − w) on the left, (first + w) on the right); in an AND, from (last − w) to (first + w) of the AND's
  own events, clipped by the enclosing scope;
- the sub-query's results in that interval come from its sliding view (``views``); a result is a witness
  when it uses none of the match's own events and its own conditions and nested items hold with the
  enclosing bindings (the correlated predicates of [CSV] §1.1);
- a condition that mentions enclosing variables is checked here too.

Checks are three-valued (``cepkit.semantics.truth``): while a scope's right end lies past the events seen
so far, a candidate is *pending*; it is checked again on later events and reported once it holds, at the
latest when its window has passed or the stream is closed.
"""

from __future__ import annotations

import bisect
import math
from functools import lru_cache
from typing import Optional

import numpy as np

from ...lang.window import earliest_time as _earliest_time, latest_time as _latest_time
from ...runtime.match_record import Match
from ...runtime.stream import Stream

from ...runtime.reported_once import ReportedOnce
from ...semantics.conditions import holds
from ...semantics.substream import Scope
from ...semantics.truth import all3, any3, not3
from .operators import Leaf, Partial, Select, WinAnd, WinOr, WinSeq
from .summaries import Region, Summary
from .views import make_view

PUNCTUATION = "PUNCTUATION"
# a window's edges are found float by float (``cepkit.lang.window``): remembered per time, as every candidate
# of a window asks for the same few
earliest_time = lru_cache(maxsize=8192)(_earliest_time)
latest_time = lru_cache(maxsize=8192)(_latest_time)
KEYS_AS_COLUMNS = 1000  # PARTITION BY keys a batch run splits the Stream's columns into (more: Event objects)


class Suffix:
    """The items of an append-only list from index ``start`` on, read by their index in the whole list: the
    earlier ones were dropped once nothing could read them (a sub-stream's events before its window)."""

    __slots__ = ("items", "start")

    def __init__(self):
        self.items: list = []
        self.start = 0

    def __len__(self) -> int:
        return self.start + len(self.items)

    def __getitem__(self, index: int):
        if index < self.start:
            raise IndexError(f"index {index} was dropped (the list starts at {self.start})")
        return self.items[index - self.start]

    def append(self, item) -> None:
        self.items.append(item)

    def bisect_left(self, x) -> int:
        """``bisect.bisect_left`` over the kept items of a sorted list (at least ``start``)."""
        return self.start + bisect.bisect_left(self.items, x)

    def bisect_right(self, x) -> int:
        return self.start + bisect.bisect_right(self.items, x)

    def drop_before(self, index: int) -> None:
        cut = min(index, len(self)) - self.start
        if cut > 0:
            del self.items[:cut]
            self.start += cut


class _Events:
    """A ``Stream``'s events by index, made (all at once, by the stream) when one is first read."""

    __slots__ = ("stream",)

    def __init__(self, stream: Stream):
        self.stream = stream

    def __len__(self) -> int:
        return len(self.stream)

    def __getitem__(self, index):
        return self.stream.events[index]

    def __delitem__(self, index):
        raise TypeError("a batch run's events are not purged")


class SubStream:
    """One partition's events in logical order, its operators' stacks and its sub-queries' views. Under a
    window only the events a later match or witness may still use are kept (``purge``): indices stay those
    of the whole sub-stream."""

    def __init__(self, run: "Execution"):
        self.run = run
        self.events = Suffix()
        self.times = Suffix()
        self.stacks: dict = {}  # (operator, end) -> (start, results): results ending at end, first >= start
        self.prefixes: dict = {}  # (prefix key, end) -> (start, results): shared SEQ prefixes (PreCache)
        self.views = {sub: make_view(run.caching, self._computer(sub), self.floor) for sub in run.subqueries}
        self.pending: list = []  # outer candidates waiting for an open scope
        self.summaries: dict = {}  # (sub-query, correlation values) -> Summary (``summaries``)
        self.stream: Optional[Stream] = None  # the batch Stream these events are, when they are all of it
        self.stats = {"prefix_hits": 0, "summary_lookups": 0}
        self.by_type: dict = {}  # type -> the indices of its events, sorted (``ends_of``)
        self.typed = 0  # events indexed in ``by_type`` so far

    # ------------------------------------------------------------------ windows (docs/language.md §4, §10.4)
    @property
    def n(self) -> int:
        return len(self.events)

    def type_mask(self, name: str, start: int, stop: int) -> np.ndarray:
        """Whether each of events start..stop-1 has type ``name`` (no hierarchy)."""
        if self.stream is not None:
            return self.stream.type_in((name,))[start:stop]
        return self.type_column(start, stop) == name

    def type_counts(self) -> dict:
        """type -> number of kept events."""
        if self.stream is not None:
            counts = np.bincount(self.stream.type_codes, minlength=len(self.stream.type_names))
            return {t: int(c) for t, c in zip(self.stream.type_names, counts) if c}
        names, counts = np.unique(self.type_column(self.events.start, self.n), return_counts=True)
        return dict(zip(names, counts.tolist()))

    def type_column(self, start: int, stop: int) -> np.ndarray:
        """The types of events start..stop-1 (an object array)."""
        if self.stream is not None:
            return self.stream.types[start:stop]
        return np.array([self.events[i].type for i in range(start, stop)], dtype=object)

    def position_column(self) -> np.ndarray:
        """Each kept event's position in the whole stream."""
        if self.stream is not None:
            return self.stream.position_of(np.arange(self.n))
        return np.asarray([e.position for e in self.events.items], np.int64)

    def earliest(self, last: int) -> int:
        """The smallest index i such that events i..last fit the window."""
        w = self.run.window
        if w is None:
            return 0
        if w.events:
            return max(0, math.floor(last - w.amount) + 1)
        return self.times.bisect_left(earliest_time(w.seconds, self.times[last]))

    def floor(self, end: int) -> int:
        """The smallest start a witness ending at ``end`` can have: every scope lies inside its outer match's
        window scope, which spans at most twice the window."""
        w = self.run.window
        if w is None:
            return 0
        if w.events:
            return max(0, end - 2 * math.ceil(w.amount))
        return self.times.bisect_left(earliest_time(w.seconds, earliest_time(w.seconds, self.times[end])))

    def window_scope(self, first: int, last: int) -> Scope:
        """The scope of a leading/trailing negation of a match spanning first..last: (last − w, first + w)."""
        w, n = self.run.window, self.n
        if w is None:
            return Scope(-1, n, not self.run.complete)
        if w.events:
            lo, hi = max(-1, math.floor(last - w.amount)), math.ceil(first + w.amount)
            return Scope(lo, hi) if hi <= n else Scope(lo, n, not self.run.complete)
        start = earliest_time(w.seconds, self.times[last])
        end = latest_time(w.seconds, self.times[first])
        lo = self.times.bisect_left(start) - 1
        hi = self.times.bisect_right(end)
        return Scope(lo, hi, not self.run.complete and not self.run.clock > end)

    # ------------------------------------------------------------------ positive construction (WinSeq/WinAnd/WinOr)
    def results(self, op, end: int, start: int) -> list:
        """The results of ``op`` whose last index is ``end`` and first index at least ``start``. Operators of
        the positive context keep them per end index: a later request with a later start filters them
        (interval containment, [LIU] §5.6), an earlier start recomputes."""
        if end < start:
            return []
        if not op.memo:
            return self._build(op, end, start)
        kept = self.stacks.get((op, end))
        if kept is not None and kept[0] <= start:
            return kept[1] if kept[0] == start else [r for r in kept[1] if r.first >= start]
        built = self._build(op, end, start)
        self.stacks[(op, end)] = (start, built)
        return built

    def _build(self, op, end, start) -> list:
        if isinstance(op, Leaf):
            event = self.events[end]
            if not self.run.type_matches(op.type, event.type):
                return []
            return [Partial(op, frozenset((end,)), {op.var: end} if op.var else {})]
        if isinstance(op, Select):
            inner = self.results(op.child, end, start)
            if op.closed:
                inner = [r for r in inner if holds(op.cond, r.bindings, self.events)]
            return [Partial(op, r.positions, r.bindings, (r,)) for r in inner]
        if isinstance(op, WinOr):
            return [
                Partial(op, r.positions, r.bindings, (r,)) for b in op.branches for r in self.results(b, end, start)
            ]
        if isinstance(op, WinSeq):
            return [_combine(op, chain) for chain in self._chains(op, len(op.parts) - 1, end, start)]
        if isinstance(op, WinAnd):
            return self._and(op, end, start)
        raise TypeError(f"unknown operator {op!r}")

    def _chains(self, op: WinSeq, k: int, end: int, start: int) -> list:
        """Results of the first k+1 positive items of ``op``, the last one ending at ``end``: the stack
        pointers of WinSeq walked depth first. Kept per (prefix, end): SEQs with a common prefix share it."""
        memo = op.memo
        if memo:
            kept = self.prefixes.get((op.prefixes[k], end))
            if kept is not None and kept[0] <= start:
                self.stats["prefix_hits"] += 1
                return kept[1] if kept[0] == start else [c for c in kept[1] if c[0].first >= start]
        chains = []
        gates = op.gates[k] if op.top and self.run.summarize else ()
        for r in self.results(op.parts[k], end, start):
            if k == 0:
                chains.append((r,))
                continue
            lowest, highest = start, r.first - 1
            for b in gates:  # a gap's !/EXISTS prunes here when its sub-query has a summary
                summary = self.summary(b.sub, {})
                if summary is None or self.run.shared[b.sub].refs:
                    continue
                latest = summary.latest(r.first, start)  # the latest first of a witness before r
                if b.negations % 2:
                    lowest = max(lowest, latest)
                else:
                    highest = min(highest, latest - 1)
            for before in reversed(self.ends_of(op.parts[k - 1], lowest, highest + 1)):
                chains += [c + (r,) for c in self._chains(op, k - 1, before, start)]
        if memo:
            self.prefixes[(op.prefixes[k], end)] = (start, chains)
        return chains

    def ends_of(self, op, start: int, end: int):
        """The end indices in [start, end) where ``op`` may have a result: for an atom of one type (under
        conditions too, no hierarchy) its events there, from an index by type; else every index."""
        while isinstance(op, Select):
            op = op.child
        if not isinstance(op, Leaf) or op.type is None or self.run.hierarchy is not None:
            return range(start, end)
        for i in range(max(self.typed, self.events.start), self.n):
            self.by_type.setdefault(self.events[i].type, Suffix()).append(i)
        self.typed = self.n
        found = self.by_type.get(op.type)
        if found is None:
            return ()
        a, b = found.bisect_left(start), found.bisect_left(end)
        return found.items[a - found.start : b - found.start]

    def _and(self, op: WinAnd, end: int, start: int) -> list:
        """WinAnd: one part ends at ``end``, the others anywhere in [start, end), on distinct events."""
        earlier = [[r for e in self.ends_of(p, start, end) for r in self.results(p, e, start)] for p in op.parts]
        out = []
        for k, part in enumerate(op.parts):
            for last in self.results(part, end, start):
                combos = [((last,), last.positions)]
                for j, options in enumerate(earlier):
                    if j == k:
                        continue
                    combos = [
                        (chosen + (r,), used | r.positions)
                        for chosen, used in combos
                        for r in options
                        if not r.positions & used
                    ]
                out += [_combine(op, _in_part_order(chosen, k)) for chosen, _ in combos]
        return out

    def _computer(self, sub):
        return lambda end, start: self.results(sub, end, start)

    # ------------------------------------------------------------------ validation (outer / inner sub-queries)
    def valid(self, r: Partial, env: dict, scope: Scope, own: frozenset):
        op = r.op
        if isinstance(op, Leaf):
            return True
        if isinstance(op, WinOr):
            return self.valid(r.parts[0], env, scope, own)
        if isinstance(op, Select):
            if not op.closed and not holds(op.cond, {**env, **r.bindings}, self.events):
                return False
            return self.valid(r.parts[0], env, scope, own)
        inner_env = {**env, **r.bindings}
        if isinstance(op, WinSeq):
            return self._valid_seq(op, r, inner_env, scope, own)
        and_scope = self.window_scope(r.first, r.last).meet(scope)
        return all3(
            [
                *(self.valid(p, inner_env, and_scope, own) for p in r.parts),
                *(self.boolean(b, and_scope, inner_env, own) for b in op.booleans),
            ]
        )

    def _valid_seq(self, op: WinSeq, r: Partial, env, scope: Scope, own):
        parts = r.parts

        def checks():
            for k, sides in op.part_sides:
                yield self.valid(parts[k], env, _between(parts, sides, scope), own)
            for b, sides in zip(op.booleans, op.boolean_sides):
                yield self.boolean(b, _between(parts, sides, scope), env, own)

        return all3(checks())

    def boolean(self, b, scope: Scope, env: dict, own: frozenset):
        """``!``/``EXISTS`` item ``b`` over ``scope``: whether (no) witness of its sub-query lies inside. With
        a summary: from it when none of the candidate's own events in the scope (an AND's) can be in a
        witness (``SubQuery.types``), else from the sub-query's columns over the scope without those events
        (``Region``); without one (or no columnar form), from its view, each witness validated with the
        enclosing bindings."""
        summary = self.summary(b.sub, env) if self.run.summarize else None
        if summary is not None:
            hi = min(scope.hi, self.n)
            inside = [p for p in own if scope.lo < p < hi]
            exists = None
            if not inside or not self._usable(self.run.shared[b.sub].types, inside):
                exists = summary.exists(scope.lo, hi)
            elif hi > scope.lo + 1:
                best = Region(self, scope.lo + 1, hi, tuple(inside)).best(summary.op)
                exists = None if best is None else bool((best >= 0).any())
            else:
                exists = False
            if exists is not None:
                self.stats["summary_lookups"] += 1
                found = True if exists else (None if scope.open else False)
                return not3(found) if b.negations % 2 else found

        def witnesses():
            for w in self.views[b.sub].lookup(scope.lo, min(scope.hi, self.n)):
                if not w.positions & own:
                    yield self.valid(w, env, scope, own | w.positions)
            if scope.open:
                yield None

        found = any3(witnesses())
        return not3(found) if b.negations % 2 else found

    def _usable(self, types: Optional[frozenset], inside: list) -> bool:
        """Whether one of the events ``inside`` has a type a sub-query's atoms name (None: ANY)."""
        if types is None:
            return True
        return any(self.run.type_matches(t, self.events[p].type) for p in inside for t in types)

    def summary(self, sub, env: dict) -> Optional[Summary]:
        """The summary of a sub-query (per distinct value of the enclosing attributes it reads), or None."""
        shared = self.run.shared.get(sub)
        if shared is None or shared.refs is None:
            return None
        key: tuple = (sub,)
        op = sub
        if shared.refs:
            if not all(r.var in env for r in shared.refs):
                return None
            values = tuple(self.events[env[r.var]].get(r.attr) for r in shared.refs)
            try:
                op = shared.op_for(values)
            except TypeError:  # an unhashable value
                return None
            if op is None:
                return None
            key = (sub, values)
        found = self.summaries.get(key)
        if found is None:
            found = self.summaries[key] = Summary(self, op)
        return found

    def scopes_of(self, r: Partial, scope: Scope) -> list:
        """(sub-query, lo, hi) of the root candidate's own ``!``/``EXISTS`` items (for B-CSV's hulls)."""
        op = r.op
        while isinstance(op, (Select, WinOr)):
            r = r.parts[0]
            op = r.op
        if isinstance(op, WinSeq):
            scopes = [(b.sub, _between(r.parts, sides, scope)) for b, sides in zip(op.booleans, op.boolean_sides)]
        elif isinstance(op, WinAnd):
            scopes = [(b.sub, self.window_scope(r.first, r.last).meet(scope)) for b in op.booleans]
        else:
            return []
        return [(sub, s.lo, min(self.n, s.hi)) for sub, s in scopes]

    # ------------------------------------------------------------------ triggers
    def trigger(self, end: int) -> list:
        """Outer candidates ending at ``end``: (candidate, truth) after validation (none unless the event's
        type can end a match: ``Execution.enders``)."""
        enders = self.run.enders
        if enders is not None and self.events[end].type not in enders:
            return []
        candidates = self.results(self.run.root, end, self.earliest(end))
        scopes = [self.window_scope(r.first, r.last) for r in candidates]
        if self.run.caching == "b":
            wanted: dict = {}
            for r, scope in zip(candidates, scopes):
                for sub, lo, hi in self.scopes_of(r, scope):
                    wanted.setdefault(sub, []).append((lo, hi))
            for sub, intervals in wanted.items():
                if self.run.shared[sub].refs is None:  # a summarised sub-query needs no view
                    self.views[sub].prepare(intervals)
        return [(r, self.valid(r, {}, scope, r.positions)) for r, scope in zip(candidates, scopes)]

    def recheck(self) -> list:
        """Pending candidates checked again: (candidate, truth). Under WITHIN they are few (one window's
        worth) and may hold as soon as a trailing EXISTS finds a witness; without WITHIN a scope closes only
        with the stream, so they wait for ``close()`` instead of being checked on every event."""
        if not (self.run.complete or self.run.window is not None):
            return []
        pending, self.pending = self.pending, []
        return [(r, self.valid(r, {}, self.window_scope(r.first, r.last), r.positions)) for r in pending]

    def purge(self, now: int) -> None:
        """Forget events, stacks, prefixes and view results no candidate triggered at ``now`` or later can use
        (they lie more than twice the window back, or before a pending candidate's reach)."""
        if self.run.window is None or not self.events:
            return
        before = self.floor(now)
        if self.pending:
            before = min(before, self.floor(min(r.first for r in self.pending)))
        self.stacks = {k: v for k, v in self.stacks.items() if k[1] >= before}
        self.prefixes = {k: v for k, v in self.prefixes.items() if k[1] >= before}
        for view in self.views.values():
            view.purge(before)
        for summary in self.summaries.values():
            summary.purge(before)
        self.summaries = {k: s for k, s in self.summaries.items() if s.covered > before}
        for indices in self.by_type.values():
            indices.drop_before(indices.bisect_left(before))
        self.events.drop_before(before)
        self.times.drop_before(before)


def _end_types(op) -> Optional[frozenset]:
    """The types of the events a result of ``op`` can end with (None: any, an ANY atom)."""
    if isinstance(op, Leaf):
        return None if op.type is None else frozenset((op.type,))
    if isinstance(op, Select):
        return _end_types(op.child)
    if isinstance(op, WinSeq):
        return _end_types(op.parts[-1])
    found: frozenset = frozenset()
    for child in op.branches if isinstance(op, WinOr) else op.parts:
        types = _end_types(child)
        if types is None:
            return None
        found |= types
    return found


def _between(parts: tuple, sides: tuple, scope: Scope) -> Scope:
    """The scope of an item of a SEQ whose positive results are ``parts``: strictly between the nearest
    positive items on its left and right (``sides``: their part numbers, ``WinSeq.part_sides``), else the
    enclosing ``scope``'s bounds (docs/language.md §10.4)."""
    left, right = sides
    return Scope(
        scope.lo if left is None else parts[left].last,
        scope.hi if right is None else parts[right].first,
        scope.open if right is None else False,
    )


def _in_part_order(chosen: tuple, k: int) -> tuple:
    """The AND's parts in item order: ``chosen`` holds part k first, then the others in order."""
    others = list(chosen[1:])
    return tuple(others[:k]) + (chosen[0],) + tuple(others[k:])


def _combine(op, parts: tuple) -> Partial:
    positions, bindings = frozenset(), {}
    for p in parts:
        positions |= p.positions
        bindings.update(p.bindings)
    return Partial(op, positions, bindings, parts)


class Execution:
    """The nested execution of one plan over one stream: its sub-streams, clock and emitted matches."""

    def __init__(self, plan, complete: bool):
        self.plan = plan
        self.root = plan.root
        self.subqueries = plan.subqueries
        self.shared = plan.shared
        self.caching = plan.caching
        self.summarize = plan.caching is not None
        self.window = plan.query.within
        self.partition_by = plan.query.partition_by
        self.select = plan.query.select
        self.hierarchy = plan.query.hierarchy
        self.enders = None if self.hierarchy is not None else _end_types(self.root)  # None: any type may end one
        self.complete = complete
        self.clock = -math.inf
        self.parts: dict = {}
        self.shared_stats: dict = {}  # counters of a shared run (``shared``)
        self.located: list = []  # a batch run's (sub-stream, index) per event (``add_all``)
        self.reported = ReportedOnce(plan.query.window_seconds)  # a match key is reported once

    def type_matches(self, pattern_type: Optional[str], event_type: str) -> bool:
        if pattern_type is None or pattern_type == event_type:
            return True
        h = self.hierarchy
        return h is not None and h.attribute is None and h.matches(pattern_type, event_type)

    def add(self, event) -> Optional[tuple]:
        """Append an event to its sub-stream: (sub-stream, its index), or None for a punctuation."""
        self.clock = max(self.clock, event.time)
        return self._place(event)

    def add_all(self, events) -> list:
        """``add`` for every event of a batch run, at once: [(sub-stream, index) or None]."""
        events = list(events)
        if not events:
            return []
        times = [e.time for e in events]
        self.clock = max(self.clock, max(times))
        if self.partition_by or self.parts or any(e.type == PUNCTUATION for e in events):
            return [self._place(e) for e in events]
        part = self.parts[()] = SubStream(self)
        part.events.items, part.times.items = events, times
        return [(part, i) for i in range(len(events))]

    def add_stream(self, stream: Stream) -> bool:
        """A batch run's whole ``Stream`` as sub-streams (one, or one per PARTITION BY key) whose columns the
        shared plan reads directly (their ``Event`` objects are made only if something asks for one); False
        with punctuations or more than ``KEYS_AS_COLUMNS`` keys: then ``add_all``."""
        if self.parts or not len(stream) or PUNCTUATION in stream.type_names:
            return False
        groups: list = [((), None)]
        if self.partition_by:
            codes = stream.key_codes(self.partition_by)
            if codes.max() >= KEYS_AS_COLUMNS:
                return False
            order = np.argsort(codes, kind="stable")
            cuts = np.flatnonzero(np.diff(codes[order])) + 1
            groups = [(("key", int(codes[rows[0]])), rows) for rows in np.split(order, cuts)]
        times = stream.times
        self.clock = max(self.clock, float(times.max()))
        for key, rows in groups:
            sub = stream if rows is None else stream.take(rows)
            part = self.parts[key] = SubStream(self)
            part.events.items, part.times.items, part.stream = _Events(sub), sub.times.tolist(), sub
        return True

    def _place(self, event) -> Optional[tuple]:
        if event.type == PUNCTUATION:
            return None
        key = tuple(event.get(k) for k in self.partition_by)
        part = self.parts.get(key)
        if part is None:
            part = self.parts[key] = SubStream(self)
        part.events.append(event)
        part.times.append(event.time)
        return part, part.n - 1

    def settle(self, part: SubStream, judged) -> list:
        """Matches from judged candidates; undecided ones wait in ``part.pending``."""
        found = []
        for r, truth in judged:
            if truth is None:
                part.pending.append(r)
            elif truth:
                match = self._match(part, r)
                if match is not None:
                    found.append(match)
        return self.reported.unreported(found, None if self.complete else self.clock)

    def _match(self, part: SubStream, r: Partial) -> Optional[Match]:
        events = part.events
        bindings = {v: events[i].position for v, i in r.bindings.items() if self.select is None or v in self.select}
        if self.select is None:
            positions = {events[i].position for i in r.positions}
        else:
            positions = set(bindings.values())
        if not positions:
            return None
        return Match(tuple(sorted(positions)), bindings)

    def stats(self) -> dict:
        totals = {
            "lookups": 0,
            "hits": 0,
            "partial": 0,
            "full": 0,
            "computed": 0,
            "view_size": 0,
            "prefix_hits": 0,
            "summary_lookups": 0,
            "summary_computed": 0,
        }
        totals.update(self.shared_stats)
        for part in self.parts.values():
            totals["prefix_hits"] += part.stats["prefix_hits"]
            totals["summary_lookups"] += part.stats["summary_lookups"]
            totals["summary_computed"] += sum(s.computed for s in part.summaries.values())
            for view in part.views.values():
                for k, v in view.stats.items():
                    totals[k] += v
                totals["view_size"] += view.size()
        return totals
