"""The columnar in-order run: SASE's stacks flattened into arrays, for ``StackPlan.run`` on a finite
stream in (ts, position) order (``disorder="reject"``; issue 5, "orders of magnitude on long streams").

The incremental matcher (``modes.InOrderMatcher``) pays Python for every event: it tests the event,
pushes it, purges the window and walks the stacks. A finite in-order stream is known at once, so this
run does the same work per *query item* instead of per event ([LIU] §2.3, same matches):

1. **Stacks.** Each positive slot's stack is the sorted array of the events that can take it (type
   test and unary conditions evaluated over whole columns, ``columns.Columns``); each negation store
   likewise. An in-order stream's index order *is* the logical order, so SASE's pointer ``x.ptr`` of
   an event is a ``searchsorted`` of its index in the previous stack.
2. **Partitions.** PARTITION BY sub-streams and the equality partition (``Program.hashed``) are group
   codes: every stack is sorted by ``group * M + index``, so one ``searchsorted`` finds the range of one
   group's instances for all partial matches at once. Local positions (``WITHIN n EVENTS``, STRICT) are
   ranks inside the sub-stream.
3. **Construction.** SASE's backward depth-first walk from each instance of the last slot
   (``Program.orders[n-1]``) becomes a breadth-first range join: all partial matches of one level are
   arrays of event indices, one per bound slot, extended at once by the range each one may take
   (``_extend``): below its successor's index, at or above the window's start (``x.ts >= last.ts - w``
   by ``lang.window``'s rule, a ``searchsorted`` of the times), and at or above the last negative event before the successor (a
   middle negation without correlated conditions: the "previous negative" of [LIU] §2.3's
   ``NS[X]`` check; a middle EXISTS bounds it from above the same way). Joins run as soon as their variables are bound, vectorized; correlated and
   edge negations count the negative events in their scope (docs/language.md §10.4) with two
   ``searchsorted`` per row, or test their conditions on every (row, negative event) pair.
4. **Results.** Matches are columns (``MatchArrays``) built once at the end, sorted by last position;
   ``emitted_at`` is when the incremental matcher would have emitted each one (a trailing negation waits
   for its scope to pass, a trailing EXISTS for its witness).

Anchors are processed in chunks of ``CHUNK`` so memory stays bounded by the partial matches of one chunk.

>>> import cepkit
>>> events = [{"type": "A", "ts": 1}, {"type": "C", "ts": 2}, {"type": "A", "ts": 3}, {"type": "B", "ts": 4}]
>>> plan = cepkit.engines.stack.StackEngine().compile(cepkit.parse("SEQ(A a, !C c, B b) WITHIN 5"))
>>> run = ColumnarRun(plan.program, cepkit.runtime.Stream.from_any(events))
>>> [(m.bindings, m.emitted_at) for m in run.matches()], run.info()
([({'a': 2, 'b': 3}, 3)], {'run': 'columnar', 'peak_state': 4, 'partial_matches': 1})
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ...lang import ast as A
from ...lang.window import first_fitting_all, past_fitting_all
from ...runtime.event_record import PUNCTUATION
from ...runtime.stream import Stream
from ...runtime.growing_array import GrowingArray
from ...runtime.match_arrays import AT_LAST, MatchArrays
from .columns import Columns

CHUNK = 8192  # anchors (instances of the last slot) extended together


class _Layout:
    """Where each event sits: its sub-stream, the previous event there (STRICT), the index bounds its
    window gives, and when a match starting at it would be released from a trailing negation. Bounds
    are computed for the events that start or end a match when asked, not for the whole stream."""

    def __init__(self, program, m: int, table: Columns):
        self.m, self.times = m, table.times
        self.w, self.n = program.window_time, program.window_events
        self.substream = np.zeros(m, dtype=np.int64)
        everything = np.arange(m) if program.partition_by else None
        for key in program.partition_by:  # one sub-stream per distinct key tuple; a null key is a key too
            codes = table.codes([(key, everything)])[0]
            codes[codes < 0] = codes.max(initial=-1) + 1
            self.substream = np.unique(self.substream * (codes.max(initial=0) + 1) + codes, return_inverse=True)[1]
            self.substream = self.substream.reshape(-1).astype(np.int64)
        self._grouped = None  # without PARTITION BY, the stream is its one sub-stream
        if program.partition_by:
            # order: events grouped by sub-stream, in order; rank: where each event sits in it; start/stop:
            # its sub-stream's range there (rank - start is the local position)
            order = np.argsort(self.substream, kind="stable")
            rank = np.empty(m, dtype=np.int64)
            rank[order] = everything
            sorted_groups = self.substream[order]
            start = np.searchsorted(sorted_groups, sorted_groups, "left")[rank]
            stop = np.searchsorted(sorted_groups, sorted_groups, "right")[rank]
            self._grouped = (order, rank, start, stop)

    def _local(self, index: np.ndarray) -> tuple:
        """(order, rank, start, stop) of the events ``index``: ``order`` maps ranks back to event indices
        (None: the identity)."""
        if self._grouped is None:
            return None, index, np.zeros(len(index), dtype=np.int64), np.full(len(index), self.m)
        order, rank, start, stop = self._grouped
        return order, rank[index], start[index], stop[index]

    @staticmethod
    def _event(order, rank):
        return rank if order is None else order[rank]

    def lo(self, last: np.ndarray) -> np.ndarray:
        """The lowest event index of the window of a match whose last event is each of ``last``: every
        event of the match, and of a leading negation's scope, lies at or above it."""
        w, n, times = self.w, self.n, self.times
        lo = first_fitting_all(times, times[last], w) if w is not None else np.zeros(len(last), np.int64)
        if n is not None:  # local position last - n + 1, as an event index
            order, rank, start, _ = self._local(last)
            lo = np.maximum(lo, self._event(order, np.maximum(rank - (n - 1), start)))
        return lo

    def hi(self, first: np.ndarray) -> np.ndarray:
        """The highest event index (inclusive) of the window of a match whose first event is each of
        ``first``: the end of a trailing negation's scope."""
        deadline, nth = self._ends(first)
        return np.minimum(deadline - 1, nth)

    def release(self, first: np.ndarray) -> np.ndarray:
        """When the incremental matcher releases a match waiting for a trailing negation (modes._Pending):
        after the first event whose ts passes the deadline, or after the n-th event of its sub-stream
        (``m``: at the end of the stream)."""
        return np.minimum(*self._ends(first))

    def _ends(self, first: np.ndarray) -> tuple:
        """(the first event past the time window, the n-th event of the sub-stream) from each of ``first``;
        ``m`` where there is none."""
        m, w, n, times = self.m, self.w, self.n, self.times
        deadline = past_fitting_all(times, times[first], w) if w is not None else np.full(len(first), m)
        nth = np.full(len(first), m)
        if n is not None:  # local position first + n - 1, as an event index
            order, rank, _, stop = self._local(first)
            ahead = rank + (n - 1)
            nth = np.where(ahead < stop, self._event(order, np.minimum(ahead, m - 1)), m)
        return deadline, nth

    @cached_property
    def previous(self) -> np.ndarray:
        """The previous event of each event's sub-stream, -1 for the first (STRICT)."""
        order, rank, start, _ = self._local(np.arange(self.m))
        return np.where(rank > start, self._event(order, np.maximum(rank - 1, 0)), -1)


class _Store:
    """A stack or negation store: event indices and their groups, sorted by ``group * stride + index``."""

    __slots__ = ("index", "group", "key", "stride", "grouped")

    def __init__(self, index: np.ndarray, group: np.ndarray, stride: int):
        self.grouped = bool(group.any())
        key = group * stride + index if self.grouped else index  # one group: the index is the key
        if len(key) > 1 and (key[1:] < key[:-1]).any():
            order = np.argsort(key, kind="stable")
            index, group, key = index[order], group[order], key[order]
        self.index, self.group, self.key, self.stride = index, group, key, stride

    def span(self, group, lo, hi) -> tuple:
        """(first, stop) into ``index`` per row: the instances of ``group`` with lo <= index <= hi."""
        base = group * self.stride
        first = np.searchsorted(self.key, base + lo, "left")
        return first, np.maximum(np.searchsorted(self.key, base + hi, "right"), first)

    def last_before(self, group, index) -> np.ndarray:
        """Per row, the largest index of ``group`` below ``index`` (-1 if none)."""
        if not len(self.key):
            return np.full(len(index), -1)
        base = group * self.stride
        k = np.maximum(np.searchsorted(self.key, base + index, "left") - 1, 0)
        below = (self.key[k] >= base) & (self.key[k] < base + index)
        return np.where(below, self.index[k], -1)


def _known(index: np.ndarray, codes: np.ndarray) -> tuple:
    """(indices, codes) without the nulls (code -1): a null never equals anything, so it joins nothing."""
    keep = codes >= 0
    return index[keep], codes[keep]


def _ranges(first: np.ndarray, stop: np.ndarray) -> tuple:
    """(row of each pair, index into the store of each pair) for the ranges first[r] <= i < stop[r]."""
    counts = stop - first
    rows = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    return rows, np.arange(len(rows)) - np.repeat(starts - first, counts)


class _Rows:
    """Partial matches, one per row: an event index per bound slot, the equality group, the sub-stream,
    and per trailing EXISTS item the index of its first witness (when the matcher would emit)."""

    __slots__ = ("slots", "group", "substream", "witness")

    def __init__(self, slots: dict, group: np.ndarray, substream: np.ndarray, witness=None):
        self.slots, self.group, self.substream, self.witness = slots, group, substream, witness or {}

    def __len__(self):
        return len(self.group)

    def take(self, which) -> "_Rows":
        """The rows ``which`` (a mask or row numbers, repeats allowed)."""
        return _Rows(
            {s: v[which] for s, v in self.slots.items()},
            self.group[which],
            self.substream[which],
            {j: v[which] for j, v in self.witness.items()},
        )


class ColumnarRun:
    """One compiled query (``Program``) over one finite in-order ``Stream`` (its PUNCTUATION events left
    out). ``info()``: ``peak_state`` is the instances held in stacks and stores, ``partial_matches`` the
    rows built during construction.

    An incremental matcher's micro-batch (``tail``) runs it over the end of the stream: ``anchors`` (a mask
    over the events) then says which events may end a match (the others' were emitted already), and
    ``open_end`` that the stream goes on: a match still waiting for its trailing scope at the end gets
    ``emitted_at`` -1 instead of the last event. (PUNCTUATION events are left out before the mask.)"""

    def __init__(self, program, stream: Stream, anchors=None, open_end: bool = False):
        self.program = program
        self.anchors, self.open_end = anchors, open_end
        self.stream = stream = without_punctuation(stream)
        self.table = Columns(stream)
        self.layout = _Layout(program, len(stream), self.table)
        self.stride = len(stream) + 1
        self.partial_matches = 0
        self.found: list = []
        # a middle negation (or EXISTS) without correlated conditions bounds the range of its left neighbour
        self.bounding = {
            j for j, neg in enumerate(program.negations) if 0 < neg.gap < program.n and neg.residual_cond is None
        }
        self._build_stores()

    # ------------------------------------------------------------------ stacks and stores
    def _candidates(self, types, var, cond) -> np.ndarray:
        """Indices of the events of ``types`` (None: any) passing the unary condition ``cond``."""
        if types is None:
            index = np.arange(len(self.stream))
        else:
            index = np.flatnonzero(self.stream.type_in(types))
        if cond is not None and len(index):
            index = index[self.table.test(cond, {var: index})]
        return index

    def _build_stores(self) -> None:
        program, substream = self.program, self.layout.substream
        slot_index = [self._candidates(s.types, s.var, s.cond) for s in program.slots]
        neg_index = [self._candidates(g.types, g.var, g.own) for g in program.negations]
        tied = [g.hash_attr is not None for g in program.negations]
        if program.hashed:
            # group = (sub-stream, value of the equality class), numbered densely; null joins nothing
            wanted = [(s.hash_attr, ix) for ix, s in zip(slot_index, program.slots)] + [
                (g.hash_attr, ix) for ix, g, t in zip(neg_index, program.negations, tied) if t
            ]
            codes = iter(self.table.codes(wanted))
            slot_classed = [_known(ix, next(codes)) for ix in slot_index]
            neg_classed = [_known(ix, next(codes)) if t else (ix, None) for ix, t in zip(neg_index, tied)]
            width = 1 + max(int(c.max(initial=0)) for _, c in slot_classed + neg_classed if c is not None)
            pairs = [(ix, substream[ix] * width + code) for ix, code in slot_classed + neg_classed if code is not None]
            dense = np.unique(np.concatenate([p for _, p in pairs])) if pairs else np.zeros(0, np.int64)
            slot_index = [ix for ix, _ in slot_classed]
            slot_groups = [np.searchsorted(dense, substream[ix] * width + code) for ix, code in slot_classed]
            neg_index = [ix for ix, _ in neg_classed]
            neg_groups = [
                np.searchsorted(dense, substream[ix] * width + code) if code is not None else substream[ix]
                for ix, code in neg_classed
            ]
        elif program.partition_by:
            slot_groups = [substream[ix] for ix in slot_index]
            neg_groups = [substream[ix] for ix in neg_index]
        else:  # one sub-stream: zeros, which take no memory until written (never)
            slot_groups = [np.zeros(len(ix), np.int64) for ix in slot_index]
            neg_groups = [np.zeros(len(ix), np.int64) for ix in neg_index]
        self.stacks = [_Store(ix, g, self.stride) for ix, g in zip(slot_index, slot_groups)]
        self.stores = [_Store(ix, g, self.stride) for ix, g in zip(neg_index, neg_groups)]
        self.peak_state = sum(len(s.index) for s in self.stacks) + sum(len(s.index) for s in self.stores)

    # ------------------------------------------------------------------ construction
    def matches(self) -> list:
        program = self.program
        n, steps = program.n, program.orders[program.n - 1]
        anchors = self.stacks[n - 1]
        index, group = anchors.index, anchors.group
        if self.anchors is not None:
            chosen = self.anchors[index]
            index, group = index[chosen], group[chosen]
        results = _Results(program, self.layout, self.stream, ordered=not anchors.grouped, open_end=self.open_end)
        for start in range(0, len(index), CHUNK):
            chunk = index[start : start + CHUNK]
            rows = _Rows({n - 1: chunk}, group[start : start + CHUNK], self.layout.substream[chunk])
            for k, step in enumerate(steps):
                if k:
                    rows = self._extend(rows, step.slot)
                    self.partial_matches += len(rows)
                rows = self._check(rows, step)
                if not len(rows):
                    break
            if len(rows) and program.strategy == "STNM":
                rows = self._skip_till_next_match(rows)
            if len(rows):
                results.add(rows)
        self.found = results.matches()
        # one run per ColumnarRun: its stacks and stores (an index per instance) are let go
        self.stacks = self.stores = self.table = self.layout = None
        return self.found

    def info(self) -> dict:
        return {"run": "columnar", "peak_state": self.peak_state, "partial_matches": self.partial_matches}

    def _binding(self, rows: _Rows) -> dict:
        """var -> event indices of the bound slots, for conditions."""
        slots = self.program.slots
        return {slots[s].var: v for s, v in rows.slots.items() if slots[s].var is not None}

    def _extend(self, rows: _Rows, slot: int) -> _Rows:
        """Bind ``slot`` (backward: slot + 1 is bound) to every instance its range allows."""
        program, layout = self.program, self.layout
        right = rows.slots[slot + 1]
        lo = layout.lo(rows.slots[program.n - 1])  # the window's start (0 without a window)
        hi = right - 1
        for j in self.bounding:
            neg = program.negations[j]
            if neg.gap == slot + 1:
                group = rows.group if neg.hash_attr is not None else rows.substream
                latest = self.stores[j].last_before(group, right)
                if neg.exists:  # below the last witness before ``right``
                    hi = np.minimum(hi, latest - 1)
                else:  # at or above the last negative event before ``right`` (it may be the neighbour)
                    lo = np.maximum(lo, latest)
        if program.strategy == "STRICT":  # exactly the previous event of the sub-stream
            previous = layout.previous[right]
            lo, hi = np.maximum(lo, previous), np.minimum(hi, previous)  # (-1, none: an empty range)
        stack = self.stacks[slot]
        first, stop = stack.span(rows.group, lo, hi)
        row_of, pick = _ranges(first, stop)
        extended = rows.take(row_of)
        extended.slots[slot] = stack.index[pick]
        return extended

    def _check(self, rows: _Rows, step) -> _Rows:
        """The joins and negations that become decidable at ``step`` (``Program.orders``)."""
        for join in step.joins:
            rows = rows.take(self.table.test(join.cond, self._binding(rows), len(rows)))
        for j in step.negations:
            if j not in self.bounding and len(rows):
                rows = rows.take(self._clear(rows, j))
        return rows

    def _clear(self, rows: _Rows, j: int) -> np.ndarray:
        """Per row: no event of negation ``j`` lies in its scope (docs/language.md §10.4) and satisfies its
        correlated conditions; for an EXISTS item, some event does (a trailing one notes the first in
        ``rows.witness``)."""
        program, layout = self.program, self.layout
        neg, store, chosen = program.negations[j], self.stores[j], rows.slots
        if neg.gap == 0:  # leading: from the window's start to the first event
            lo, hi = layout.lo(chosen[program.n - 1]), chosen[0] - 1
        elif neg.gap == program.n:  # trailing: from the last event to the window's end
            lo, hi = chosen[program.n - 1] + 1, layout.hi(chosen[0])
        else:  # middle: strictly between the neighbours
            lo, hi = chosen[neg.gap - 1] + 1, chosen[neg.gap] - 1
        group = rows.group if neg.hash_attr is not None else rows.substream
        first, stop = store.span(group, lo, hi)
        witness = self._first_satisfying(rows, first, stop, store, neg.var, neg.residual_cond)
        if not neg.exists:
            return witness < 0
        if neg.gap == program.n:
            rows.witness[j] = witness
        return witness >= 0

    def _first_satisfying(self, rows: _Rows, first, stop, store: _Store, var, cond) -> np.ndarray:
        """Per row, the first of the store's instances first[r] <= i < stop[r] that satisfies ``cond``
        (None: any) when bound to ``var``, as an event index; -1 if none does."""
        if not len(store.index):
            return np.full(len(rows), -1)
        if cond is None:
            return np.where(stop > first, store.index[np.minimum(first, len(store.index) - 1)], -1)
        row_of, pick = _ranges(first, stop)
        binding = {v: index[row_of] for v, index in self._binding(rows).items()}
        if var is not None:
            binding[var] = store.index[pick]
        hit = self.table.test(cond, binding, len(row_of))
        found = np.full(len(rows), -1)
        hit_rows, at = np.unique(row_of[hit], return_index=True)  # pairs are by row, then by index
        found[hit_rows] = store.index[pick[hit]][at]
        return found

    def _skip_till_next_match(self, rows: _Rows) -> _Rows:
        """SASE skip-till-next-match ([SES] Def 6.1, as ``Core.next_match_ok``): no instance of slot
        i+1 between the i-th and (i+1)-th events, within the window, extends the first i events."""
        program, layout = self.program, self.layout
        for i in range(program.n - 1):
            prefix = frozenset(range(i + 2))
            joins = [j.cond for j in program.prefix_joins if (i + 1) in j.slots and j.slots <= prefix]
            chosen = rows.slots
            lo, hi = chosen[i] + 1, np.minimum(chosen[i + 1] - 1, layout.hi(chosen[0]))
            store = self.stacks[i + 1]
            first, stop = store.span(rows.substream, lo, hi)
            rows = rows.take(
                self._first_satisfying(rows, first, stop, store, program.slots[i + 1].var, A.conjoin(joins)) < 0
            )
        return rows


class _Results:
    """The matches of a ``ColumnarRun`` as ``MatchArrays``, by last position then positions, with
    ``emitted_at`` as the incremental matcher's. Each chunk's rows are put in that order and written
    out as they are made (``add``): the rows ending at one event come from one anchor, so one chunk.
    The chunks come in order of anchors, which is the order of last positions when the anchors are
    ``ordered`` (one group), and group by group otherwise (PARTITION BY, a hashed join): then the rows
    are put in order of last position at the end, as one sort of them all put them."""

    def __init__(self, program, layout: _Layout, stream: Stream, ordered: bool, open_end: bool = False):
        self.program, self.layout, self.stream, self.open_end = program, layout, stream, open_end
        select = program.select
        self.kept = [s for s, slot in enumerate(program.slots) if select is None or slot.var in select]
        self.named = [k for k, s in enumerate(self.kept) if program.slots[s].var is not None]
        self.positions = GrowingArray(np.int64)  # row after row, a position per kept slot
        # emitted at the last event, unless a trailing item makes it wait or RETURN leaves that one out
        self.emitted = GrowingArray(np.int64) if program.trailing or select is not None else None
        self.last = None if ordered else GrowingArray(np.int64)  # each row's last event

    def add(self, rows: _Rows) -> None:
        program, layout, n = self.program, self.layout, self.program.n
        if not self.kept:
            return
        chosen = rows.slots
        waiting = None
        if len(program.trailing) > len(program.trailing_exists):
            # a trailing negation: released once its scope has passed, or at the end of the stream
            emitted = layout.release(chosen[0])
            if self.open_end:
                waiting = emitted >= len(self.stream)
            emitted = np.minimum(emitted, len(self.stream) - 1)
        elif program.trailing:  # only EXISTS items trailing: final when the last of their witnesses arrives
            emitted = np.max([rows.witness[j] for j in program.trailing], axis=0)
        else:
            emitted = chosen[n - 1]
        order = np.lexsort([chosen[s] for s in range(n - 2, -1, -1)] + [chosen[n - 1]])
        row = np.stack([self.stream.position_of(chosen[s][order]) for s in self.kept], axis=1)
        self.positions.extend(row.reshape(-1))
        if self.emitted is not None:
            at = self.stream.position_of(emitted[order])
            self.emitted.extend(at if waiting is None else np.where(waiting[order], -1, at))
        if self.last is not None:
            self.last.extend(chosen[n - 1][order])

    def matches(self):
        program = self.program
        if not self.positions.used:
            return []  # (RETURN of negated variables only: every match projects to nothing, as in the reference)
        width, named = len(self.kept), self.named
        rows, at = self.positions.array.reshape(-1, width), AT_LAST if self.emitted is None else self.emitted.array
        if self.last is not None:
            order = np.argsort(self.last.array, kind="stable")
            rows, at = rows[order], at if self.emitted is None else at[order]
        if program.select is not None:  # equal projections are one match, emitted with the first of them
            _, first, group = np.unique(rows, axis=0, return_index=True, return_inverse=True)
            earliest = np.full(len(first), np.iinfo(np.int64).max)
            np.minimum.at(earliest, group.reshape(-1), at)
            first = np.sort(first)
            rows, at = rows[first], earliest[group.reshape(-1)[first]]
        n = len(rows)
        offsets, flat = np.arange(0, (n + 1) * width, width, dtype=np.int64), rows.reshape(-1)
        ids = np.arange(len(named), dtype=np.int32)
        names, kleene = [program.slots[self.kept[k]].var for k in named], np.zeros(len(named), bool)
        # the rows are in output order (each chunk sorted, groups by last position; see the class) and
        # distinct (each binds its own events to the slots in order), unless RETURN projected them
        if len(named) == width:  # every kept slot is named: the bindings are the positions
            return MatchArrays(
                offsets,
                flat,
                offsets,
                flat,
                None,
                names,
                kleene,
                at,
                sorted_within_last=program.select is None,
                groups_in_order=True,
                row_variables=ids,
            )
        return MatchArrays(
            offsets,
            flat,
            np.arange(n + 1, dtype=np.int64) * len(named),
            rows[:, named].reshape(-1),
            np.tile(ids, n),
            names,
            kleene,
            at,
            sorted_within_last=program.select is None,
            groups_in_order=True,
        )


def without_punctuation(stream: Stream) -> Stream:
    """``stream`` without its PUNCTUATION events (an in-order run has no use for them); itself when it has
    none."""
    if PUNCTUATION not in stream.type_names:
        return stream
    punctuation = stream.type_in({PUNCTUATION})
    return stream.take(~punctuation) if punctuation.any() else stream
