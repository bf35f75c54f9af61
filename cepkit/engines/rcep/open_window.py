"""``RcepMatcher.extend``: a micro-batch through the batch kernel (``batch.run``), the events a later
trigger may still bind kept as columns from batch to batch (issue 23).

Between micro-batches the matcher keeps, instead of its per-key event trees, an ``OpenWindow``: a
``Stream`` of the kept events (their positions kept), the slots that take each one and, under
``WITHIN n EVENTS``, each one's sequence number in its PARTITION BY sub-stream. A batch is joined after
them (``Stream.followed_by``), the kernel lays the whole out and recomputes only the batch's triggers
(their windows reach back into the kept events), and the matches come out as ``MatchArrays`` in the order
the pushes emit them: trigger after trigger, each one's in output order (docs/language.md §10.2), every
match at its trigger. Then the kept events are cut to those a later trigger may bind:

- events some slot takes, other than a single (non-Kleene) last slot alone (a trigger: no later match
  uses it, as ``RcepMatcher`` pops it from its tree), except under STNM (it may block a later match);
- within the window of every later trigger: under ``WITHIN w`` a time at or after ``window_horizon`` of
  the latest time, under ``WITHIN n EVENTS`` one of its sub-stream's last n - 1 events; without a window,
  all of them (as the trees keep them);
- under STRICT and PARTITION_STRICT, only the run of such events that ends its sub-stream: an event no
  slot keeps breaks contiguity, so nothing before it is in a later match, and inside the run the kernel's
  grouped indices, which its contiguity test reads, step as the sequence numbers do.

Under STNM with a Kleene last slot the matches still waiting at a batch's end (their first event's
window open) are kept too, as rows (``pending``), with their events; the next batch judges them again.

A push after micro-batches moves the kept events into trees (``to_trees``), a micro-batch after pushes
takes the trees' live events (``of_trees``): at most a window of events per key.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...runtime.event_record import PUNCTUATION
from ...runtime.expiry import window_horizon
from ...runtime.stream import Stream
from ..conjuncts import counted_positions
from ..unary import StreamColumns
from .batch import accepted_by_slots


class OpenWindow:
    """The kept events as columns (module docstring); in a joined window (``joined``), the batch's events
    from ``first`` on. ``counts`` (``WITHIN n EVENTS`` only): PARTITION BY values -> events of that
    sub-stream so far, each event's ``seq`` counted from it (NaN for punctuation; None without it)."""

    def __init__(self, stream: Stream, accepted: np.ndarray, seq: Optional[np.ndarray], counts: Optional[dict]):
        self.stream = stream
        self.accepted = accepted
        self.seq = seq
        self.counts = counts
        self.first = 0
        # STNM with a Kleene last slot: the matches waiting for their first event's window to pass, as
        # (offsets, positions, slots) rows in trigger order (``batch._released_here``); None: none
        self.pending: Optional[tuple] = None

    @classmethod
    def empty(cls, plan, ts_is_datetime: bool = False) -> "OpenWindow":
        events = plan.window_events is not None
        return cls(
            Stream([], ts_is_datetime=ts_is_datetime),
            np.zeros((len(plan.slots), 0), dtype=bool),
            np.zeros(0) if events else None,
            {} if events else None,
        )

    def joined(self, plan, batch: Stream) -> Optional["OpenWindow"]:
        """The kept events followed by ``batch``; None when they cannot be joined (datetime ts after
        numeric ones: the pushes then raise what they raise)."""
        try:
            stream = self.stream.followed_by(batch)
        except ValueError:
            return None
        accepted = np.concatenate([self.accepted, accepted_by_slots(plan, batch, StreamColumns(batch))], axis=1)
        seq, counts = None, None
        if self.counts is not None:  # (a copy: this window stays as it was if the kernel cannot take the batch)
            counts = dict(self.counts)
            seq = np.concatenate([self.seq, counted_positions(batch, plan.query.partition_by, counts)])
        window = OpenWindow(stream, accepted, seq, counts)
        window.first = len(self.stream)
        window.pending = self.pending
        return window

    def kept(self, plan) -> "OpenWindow":
        """The events a later trigger may bind (module docstring), as the next batch's kept events."""
        stream, accepted = self.stream, self.accepted
        if not len(stream):
            return self
        keep = accepted[:-1].any(axis=0)
        if plan.slots[-1].kleene or plan.query.strategy == "STNM":  # (a past trigger may block under STNM)
            keep |= accepted[-1]
        if plan.window_seconds is not None:
            keep &= stream.times >= window_horizon(float(stream.times.max()), plan.window_seconds)
        codes = None
        if plan.window_events is not None or plan.strict:
            read = ~stream.type_in({PUNCTUATION})
            codes = np.where(read, stream.key_codes(plan.query.partition_by), -1)
            n_codes = int(codes.max(initial=0)) + 1
        if plan.window_events is not None:  # a sub-stream's last seq here is its last so far (module doc)
            seq = np.where(read, self.seq, -1).astype(np.int64)
            top = np.full(n_codes, -1, dtype=np.int64)
            np.maximum.at(top, codes[read], seq[read])
            keep &= read & (seq > top[np.maximum(codes, 0)] - int(np.ceil(plan.window_events)) + 1)
        if plan.strict:  # the run after each sub-stream's last event kept by no slot
            index = np.arange(len(stream))
            breaks = read & ~keep
            last_break = np.full(n_codes, -1, dtype=np.int64)
            np.maximum.at(last_break, codes[breaks], index[breaks])
            keep &= index > last_break[np.maximum(codes, 0)]
        if self.pending is not None:  # the waiting matches' events (all in the window but, under
            keep |= np.isin(stream.positions, self.pending[1])  # n EVENTS, a first one a step back)
        index = np.flatnonzero(keep)
        out = OpenWindow(
            stream.take(index),
            accepted[:, index],
            None if self.seq is None else self.seq[index],
            self.counts,
        )
        out.pending = self.pending
        return out

    @classmethod
    def of_trees(cls, plan, partitions: dict, ts_is_datetime: bool) -> "OpenWindow":
        """The live events of ``RcepMatcher``'s trees (``partitions``: key -> ``_Partition``), as kept
        events; under STRICT only each key's run of consecutive sequence numbers ending at its last event."""
        rows: dict = {}  # position -> (event, seq, slots taking it)
        events = plan.window_events is not None
        for part in partitions.values():
            run_from = 0
            if plan.strict:  # the longest run seq = count - 1, count - 2, ... among the live events
                live = set()
                for tree in part.trees:
                    live.update(tree.seq[tree.start : tree.size].tolist())
                run_from = part.count
                while run_from - 1 in live:
                    run_from -= 1
            for k, tree in enumerate(part.trees):
                for row in range(tree.start, tree.size):
                    seq = int(tree.seq[row])
                    if seq >= run_from:
                        event = tree.events[row]
                        rows.setdefault(event.position, (event, seq, set()))[2].add(k)
        ordered = [rows[p] for p in sorted(rows)]
        accepted = np.zeros((len(plan.slots), len(ordered)), dtype=bool)
        for i, (_, _, slots) in enumerate(ordered):
            accepted[list(slots), i] = True
        return cls(
            Stream([event for event, _, _ in ordered], ts_is_datetime=ts_is_datetime),
            accepted,
            np.array([seq for _, seq, _ in ordered], dtype=float) if events else None,
            {key: part.count for key, part in partitions.items()} if events else None,
        )

    def rows(self, plan) -> list:
        """(event, PARTITION BY key, sequence number, slots taking it) of each kept event, in order, for
        ``RcepMatcher``'s trees; the sequence numbers of a time window count each key's kept events (only
        their order and, under STRICT, their run matter there)."""
        out, counted = [], {}
        seq = None if self.seq is None else self.seq.astype(np.int64).tolist()
        for i, event in enumerate(self.stream):
            key = tuple(event.get(k) for k in plan.query.partition_by)
            if seq is None:
                counted[key] = number = counted.get(key, -1) + 1
            else:
                number = seq[i]
            out.append((event, key, number, np.flatnonzero(self.accepted[:, i]).tolist()))
        return out
