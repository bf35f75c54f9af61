"""``RcepMatcher``'s per-event step for ``cepkit.Matcher.pusher`` (issue 23): the events a later trigger
may bind as growing arrays, the batch kernel called once per trigger.

A push of ``RcepMatcher`` inserts the event into its key's event trees and recomputes a trigger in Python
(~70-150 µs). ``RcepStep`` keeps the events some slot takes (not a single last slot alone: a trigger that
no later match uses) in a ``kept.KeptEvents``: the slots taking each one (a mask), its PARTITION BY
code, its window coordinate (its time, or under ``WITHIN n EVENTS`` its sequence number in its
sub-stream), its position and the join and chain keys (``conjuncts.key_columns``' rows, read from the
event's values). A trigger is appended and ``recompute_last`` lays the kept events out
(``kernel.layout``) and recomputes that trigger alone (``kernel.recompute``), in one compiled call; its
matches are the push's (NEXT, LAST and MAX chosen among them by ``kernel.ranked``). Under a time window
the events before the current one's window leave the arrays (no later trigger reaches them); under ``n
EVENTS`` those more than n - 1 behind their sub-stream's last leave when the arrays fill up. Under
STRICT and PARTITION_STRICT every read event is kept, a trigger too, so that the layout's grouped
indices step as the sub-stream's sequence numbers do (the kernel's contiguity test); the events before a
sub-stream's last one no slot keeps leave when the arrays fill up.

Under STNM with a single last variable the trigger's matches are final at once: ``recompute_last``
drops those an event between their events blocks (``kernel.skip_till_next``, with Θ_eq⁺'s keys among
the kept ones), and every trigger stays kept (it may block a later match).

It runs the queries ``batch.runs_columnar`` gives the kernel but STNM with a Kleene last variable (its
matches wait for later events), whose join and chain keys are attributes; an event whose key is not a
number hands the state back and pushes from then on. Before any other call reads the window
(``push``, ``extend``, ``close``, another pusher) the step hands its events to the matcher as an
``OpenWindow`` and takes them back at its next event: at most a window of events each way.
"""

from __future__ import annotations

import math

import numpy as np

from ...lang import ast as A
from ...lang.window import ULPS, TimeLimit, time_limit
from ...runtime.event_record import PUNCTUATION, values_event
from ...runtime.expiry import KeyExpiry
from ...runtime.match_record import output_order
from ...runtime.stream import Stream
from ..compiled import OP_CODES, jit
from ..conjuncts import NotAKey, key_rows, key_value
from ..kept import KernelCall, KeptEvents, KeyCodes, Rows, pushed, written
from .batch import runs_columnar
from .joins import TRANSITIVE
from .kernel import RANKED_CODES, layout, ranked, recompute, skip_till_next
from .open_window import OpenWindow


def runs(plan) -> bool:
    """Whether ``RcepStep`` runs ``plan`` (the module docstring)."""
    return (
        runs_columnar(plan)
        and (plan.skip_till_next is None or not plan.slots[-1].kleene)
        and all(
            isinstance(e, A.Attr) and e.attr not in ("ts", "type")
            for e in key_rows(plan.pattern.joins, plan.pattern.chains)[0]
        )
    )


@jit
def recompute_last(
    events, bounds, n_slots, span, last_alone, strict, rank, joins, pairs, chains, kleene, hybrid, judged, out
):
    """The matches of event ``n - 1`` (a trigger) over the kept events [lo, n) (``events``: the arrays of
    a ``kept.KeptEvents``; ``bounds`` holds lo, n and the number of codes), as ``kernel.recompute`` finds them: the events laid
    out by ``kernel.layout`` (``coord`` their window coordinates, ``span`` the window: the limits are
    ``lang.window.time_limits``, none when infinite), that trigger alone recomputed, under ``strict``
    contiguity; ``rank`` >= 0: ``kernel.ranked``'s strategy among them. The rows are written into the
    ``out`` buffers (``kept.written``: (rows, cells), negative when they do not fit); returns (rows, cells, whether no two rows have the same positions).
    ``joins`` holds the rows left slot, right slot, operator, transitive, left key, right key, pair;
    ``pairs`` the pairs' left and right slots; ``chains`` slot, operator, transitive, previous key, current
    key; ``judged`` (STNM; empty otherwise) ``kernel.skip_till_next``'s joins and chains, Θ_eq⁺'s among
    them, as rows."""
    coord, mask, code, position, kval, kok = events
    lo, n, n_codes = bounds[0], bounds[1], bounds[2]
    accepted = np.empty((n_slots, n - lo), dtype=np.bool_)  # ``kernel.layout``'s slots per event
    for i in range(n - lo):
        for s in range(n_slots):
            accepted[s, i] = mask[lo + i] >> s & 1
    coord = coord[lo:n]
    if np.isfinite(span):
        limits = np.empty(n - lo)
        for i in range(n - lo):
            limits[i] = span + ULPS * np.spacing(max(max(abs(coord[i]), abs(span)), 1.0))
    else:
        limits = np.empty(0)
    events, window_lo, members, offsets, triggers, window_first, values, valid, _, _ = layout(
        code[lo:n], n_codes, accepted, coord, limits, -1, last_alone, kval[:, lo:n], kok[:, lo:n]
    )
    last = len(triggers) - 1
    grouped_positions = np.empty(len(events), dtype=np.int64)
    for g in range(len(events)):
        grouped_positions[g] = position[lo + events[g]]
    found, found_positions, cells, _, distinct = recompute(
        members,
        offsets,
        triggers[last:],
        np.ascontiguousarray(window_first[:, last:]),
        kleene,
        window_lo,
        grouped_positions,
        values,
        valid,
        joins[0],
        joins[1],
        joins[2],
        joins[3] != 0,
        joins[4],
        joins[5],
        joins[6],
        pairs[0],
        pairs[1],
        chains[0],
        chains[1],
        chains[2] != 0,
        chains[3],
        chains[4],
        hybrid,
        strict,
    )
    keep = ranked(found, found_positions, rank) if rank >= 0 else np.zeros(0, dtype=np.bool_)
    judged_joins, judged_chains = judged
    if judged_joins.shape[0] and len(found) > 1:  # STNM: a row an event between its events blocks is dropped
        grouped_of = np.empty(n - lo, dtype=np.int64)
        for g in range(len(events)):
            grouped_of[events[g]] = g
        grouped = np.empty(len(found_positions), dtype=np.int64)
        for c in range(len(found_positions)):
            grouped[c] = grouped_of[np.searchsorted(position[lo:n], found_positions[c])]
        keep = skip_till_next(
            found,
            found_positions,
            cells,
            grouped,
            members,
            offsets,
            kleene,
            window_lo,
            values,
            valid,
            (judged_joins[0], judged_joins[1], judged_joins[2], judged_joins[3], judged_joins[4]),
            (judged_chains[0], judged_chains[1], judged_chains[2], judged_chains[3]),
        )
    rows, cells_written = written(found, found_positions, cells, keep, found[:0], out)
    return rows, cells_written, distinct


class RcepStep:
    """``RcepMatcher.push`` for events given as values of ``columns`` (the module docstring)."""

    def __init__(self, matcher, columns: tuple):
        self.matcher = matcher
        plan = self.plan = matcher.plan
        pattern, slots = plan.pattern, plan.slots
        self.columns = columns
        at = {name: i for i, name in enumerate(columns)}
        judge = plan.skip_till_next  # STNM (a single last variable: ``runs``), judged at the trigger
        judged_joins = pattern.joins + (judge.closure_joins if judge else ())
        judged_chains = pattern.chains + (judge.closure_chains if judge else ())
        exprs, ids = key_rows(judged_joins, judged_chains)
        self.key_names = [expr.attr for expr in exprs]
        self.key_at = [at.get(name) for name in self.key_names]
        self.keyed = bool(plan.query.partition_by)
        self.keys = KeyCodes(plan.query.partition_by, columns)
        self.events_window = plan.window_events is not None
        if plan.window_seconds is not None:
            self.span = float(plan.window_seconds)
        elif self.events_window:
            self.span = float(math.ceil(plan.window_events) - 1)
        else:
            self.span = math.inf
        self.timed = plan.window_seconds is not None
        self.strict = plan.strict  # every read event kept: contiguity reads a sub-stream's every event
        self.stnm = judge is not None  # every trigger kept: it may block a later match
        self.typed = not any(slot.local for slot in slots)
        self.by_type: dict = {}  # type -> the mask of the slots taking it (no local tests)
        n_slots = len(slots)
        self.last_bit = 1 << (n_slots - 1)
        self.keep_mask = (1 << n_slots) - 1 if slots[-1].kleene else self.last_bit - 1
        pairs: dict = {}
        for join in pattern.joins:
            pairs.setdefault((join.left_slot, join.right_slot), len(pairs))
        joins, n_joins = pattern.joins, len(pattern.joins)
        chains, n_chains = pattern.chains, len(pattern.chains)
        kleene = [slot.kleene for slot in slots]
        self.out = Rows([slot.var for slot in slots], kleene, ordered=True)  # (a row's slots ascend with its positions)
        self.bounds = np.zeros(3, dtype=np.int64)  # the call's lo, n and number of codes
        self._bounds = memoryview(self.bounds)
        self.constants = (  # ``recompute_last``'s arguments after ``bounds``
            n_slots,
            self.span,
            not slots[-1].kleene and not self.stnm,
            self.strict,
            RANKED_CODES.get(plan.query.strategy, -1),
            np.array(
                [
                    [j.left_slot for j in joins],
                    [j.right_slot for j in joins],
                    [OP_CODES[j.op] for j in joins],
                    [j.op in TRANSITIVE for j in joins],
                    ids[0][:n_joins],
                    ids[1][:n_joins],
                    [pairs[j.left_slot, j.right_slot] for j in joins],
                ],
                dtype=np.int64,
            ).reshape(7, len(joins)),
            np.array([[r for r, _ in pairs], [s for _, s in pairs]], dtype=np.int64).reshape(2, len(pairs)),
            np.array(
                [
                    [c.slot for c in chains],
                    [OP_CODES[c.op] for c in chains],
                    [c.op in TRANSITIVE for c in chains],
                    ids[2][:n_chains],
                    ids[3][:n_chains],
                ],
                dtype=np.int64,
            ).reshape(5, len(chains)),
            np.array(kleene, dtype=np.bool_),
            plan.join == "hybrid",
            (
                np.array(
                    [
                        [j.left_slot for j in judged_joins],
                        [j.right_slot for j in judged_joins],
                        [OP_CODES[j.op] for j in judged_joins],
                        ids[0],
                        ids[1],
                    ],
                    dtype=np.int64,
                ).reshape(5, len(judged_joins))
                if self.stnm
                else np.zeros((0, 0), dtype=np.int64),
                np.array(
                    [[c.slot for c in judged_chains], [OP_CODES[c.op] for c in judged_chains], ids[2], ids[3]],
                    dtype=np.int64,
                ).reshape(4, len(judged_chains))
                if self.stnm
                else np.zeros((0, 0), dtype=np.int64),
            ),
        )
        self.limit = TimeLimit(self.span if self.timed else 0.0)
        self.active = False
        self.usable = True
        self.kept = KeptEvents(len(self.key_at))
        self.kernel = KernelCall(recompute_last, self.kept, self.out, (self.bounds, *self.constants), [None])
        self._reset()

    # ------------------------------------------------------------------ state
    def _reset(self) -> None:
        self.kept.clear()
        self.keys.clear()
        if not self.keyed:
            self.keys.code_of(())  # (every event's key)
        self.counts: dict = {}  # PARTITION BY key -> events of its sub-stream so far (``n EVENTS``)

    def _take_over(self) -> bool:
        """The matcher's window (its trees, or its ``OpenWindow``) into the arrays; False (and the step
        unusable) when a kept event's join or chain key is not a number the kernel takes."""
        m = self.matcher
        if m.stepping is not None:
            m.stepping.hand_back()
        plan = self.plan
        window = m.window
        if window is None:
            window = OpenWindow.of_trees(plan, m.partitions, False)
        taken = []
        try:
            seq = None if window.seq is None else window.seq.tolist()
            for i, event in enumerate(window.stream):
                keys = [key_value(event.get(name)) for name in self.key_names]
                key = tuple(event.get(k) for k in plan.query.partition_by)
                hash(key)
                mask = sum(1 << int(s) for s in np.flatnonzero(window.accepted[:, i]))
                taken.append((event, key, event.time if seq is None else seq[i], mask, keys))
        except (NotAKey, TypeError):
            self.usable = False
            return False
        m.window = None
        m.partitions.clear()
        m.expiry = KeyExpiry(plan.window_seconds)
        self._reset()
        if window.counts is not None:
            self.counts.update(window.counts)
        self.now = m.latest
        kept = self.kept
        for event, key, coord, mask, keys in taken:
            code = self.keys.code_of(key)
            if kept.n == kept.size:
                self._room()
            kept.append(event, coord, mask, code, event.position, keys)
        m.stepping = self
        self.active = True
        return True

    def hand_back(self) -> None:
        """The kept events to the matcher, as its ``OpenWindow`` (under STRICT each sub-stream's run after
        its last event no slot keeps)."""
        m = self.matcher
        kept = self.kept
        index = self._live()
        slots = np.arange(len(self.plan.slots), dtype=np.int64)[:, None]
        m.window = OpenWindow(
            Stream(kept.events(self.columns, index)),
            (kept.mask[index][None, :] >> slots & 1).astype(bool),
            kept.coord[index].copy() if self.events_window else None,
            dict(self.counts) if self.events_window else None,
        )
        m.latest = max(m.latest, self.now)
        m.stats.stored = int(m.window.accepted.sum())
        m.stepping = None
        self.active = False
        self._reset()

    def _live(self) -> np.ndarray:
        """The kept events a later trigger may bind: within the window, and under STRICT after their
        sub-stream's last event no slot keeps (a trigger of a single last slot among them)."""
        kept = self.kept
        lo, n = kept.lo, kept.n
        keep = np.arange(lo, n)
        if self.events_window and n > lo:  # one of its sub-stream's last n - 1
            top = np.full(len(self.keys.codes), -1.0)
            np.maximum.at(top, kept.code[lo:n], kept.coord[lo:n])
            keep = keep[kept.coord[lo:n] >= top[kept.code[lo:n]] - self.span]
        elif self.timed:  # (triggers drop the events before their window; between them, here)
            keep = keep[self.now - kept.coord[lo:n] <= time_limit(self.span, self.now)]
        if self.strict and len(keep):
            breaks = kept.mask[keep] & self.keep_mask == 0
            last_break = np.full(len(self.keys.codes), -1, dtype=np.int64)
            np.maximum.at(last_break, kept.code[keep][breaks], keep[breaks])
            keep = keep[keep > last_break[kept.code[keep]]]
        return keep

    def _room(self) -> None:
        """Room for one more event: the events no later trigger reaches dropped (``_live``), or the arrays
        doubled."""
        kept = self.kept
        keep = self._live()
        if len(keep) <= kept.n // 2 and kept.n:
            kept.compact(keep)
        else:
            kept.grow()

    # ------------------------------------------------------------------ the step
    def __call__(self, type_: str, time: float, values, position: int) -> list:
        if not self.active:
            if not self.usable or not self._take_over():
                return self._push(type_, time, values, position)
        if time > self.now:
            self.now = time
        if type_ == PUNCTUATION:
            return []
        mask = self.by_type.get(type_) if self.typed else None
        if mask is None:
            mask = self._mask(type_, time, values, position)
        if not mask and not self.events_window and not self.strict:
            return []
        try:
            key, code = self.keys(type_, time, values) if self.keyed else ((), 0)
            keys = [None if i is None else key_value(values[i]) for i in self.key_at] if mask and self.key_at else ()
        except (NotAKey, TypeError):  # not a number the kernel takes, or an unhashable key
            self.usable = False
            self.hand_back()
            return self._push(type_, time, values, position)
        if self.events_window:
            coord = self.counts.get(key, 0)
            self.counts[key] = coord + 1
            if not mask and not self.strict:
                return []
        else:
            coord = time
        kept = self.kept
        if kept.n == kept.size:
            self._room()
        kept.append((type_, time, values, position), coord, mask, code, position, keys)
        if not mask & self.last_bit:
            return []
        found = self._trigger(time, position)
        if not mask & self.keep_mask and not self.strict and not self.stnm:
            kept.pop()  # a single last variable: the trigger is never needed again
        return found

    def _mask(self, type_: str, time: float, values, position: int) -> int:
        plan = self.plan
        event = values_event(self.columns, type_, time, values, position)
        mask = sum(1 << k for k in range(len(plan.slots)) if plan.accepts(k, event))
        if self.typed:
            self.by_type[type_] = mask
        return mask

    def _trigger(self, time: float, position: int) -> list:
        """The matches the last kept event (a trigger) ends."""
        kept = self.kept
        if self.timed:  # the events before this trigger's window: no later trigger reaches them either
            coord, lo, limit = kept._coord, kept.lo, self.limit.at(time)
            while time - coord[lo] > limit:
                lo += 1
            kept.lo = lo
        bounds = self._bounds
        bounds[0], bounds[1], bounds[2] = kept.lo, kept.n, len(self.keys.codes)
        rows, cells, distinct = self.kernel()
        stats = self.matcher.stats
        stats.triggers += 1
        if not rows:
            return []
        stats.matches += rows
        matches = self.out.matches(rows, cells, position)
        return matches if distinct else output_order(matches)

    def _push(self, type_: str, time: float, values, position: int) -> list:
        return pushed(self.matcher, self.columns, type_, time, values, position)
