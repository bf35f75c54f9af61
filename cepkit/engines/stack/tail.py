"""Micro-batches as columns for the in-order stack matcher (issue 11): what ``InOrderMatcher.extend`` keeps
between batches, and the run that gives a batch's matches.

The columnar run (``batch.ColumnarRun``) is built over a finite stream. An incremental matcher can use it on
a micro-batch because a match emitted during the batch only reads recent events. Let N be the latest ts
before the batch and w the time window:

- a match without a trailing item is emitted at its last event L (in the batch, L.ts >= N): its events lie
  at or after L.ts - w >= N - w, and so does a leading scope (from L.ts - w) or a middle one;
- a match waiting for a trailing negation is released by the first event past first.ts + w; one not
  released before the batch has first.ts >= N - w (no earlier event passed its deadline), its events and
  its trailing scope lie after that, and a leading scope reaches first.ts - w >= N - 2w at the earliest; a
  trailing EXISTS is emitted at its witness, at most w after the first event: the same bounds.

So the matcher keeps a **tail**: every event at or after N - w (N - 2w when a trailing item meets a
leading one), the window's float tolerance below that (``window_horizon``). The tail is a suffix of the
stream, so the run over (tail + batch) builds exactly the matches of the whole stream whose events and
scopes lie in it, with the same release points; the matches it emits during the batch are the rows whose
``emitted_at`` is a position of the batch (a match still waiting at the batch's end has -1: ``open_end``).
Under ``WITHIN n EVENTS`` the same holds with local positions: the last n - 1 events of each PARTITION BY
sub-stream, or 2(n - 1) (a match and its scopes read one sub-stream, and ranks inside the run's
sub-streams are the local positions up to a shift). Anchors (the last slot's events) before the batch are
skipped unless a trailing item makes their matches wait, and then only from N - w (the last n - 1 events
of their sub-stream) on.

Where this cannot be exact the batch goes event by event (``refusal``).
"""

from __future__ import annotations

from collections import deque
from itertools import chain
from operator import attrgetter
from typing import Optional

import numpy as np

from ...runtime.stream import Stream
from ...runtime.expiry import window_horizon
from ...runtime.match_list import MatchList
from ...runtime.match_record import Match
from .batch import ColumnarRun


def refusal(program) -> Optional[str]:
    """Why the in-order matcher takes ``program``'s micro-batches event by event, or None when it takes
    them as columns."""
    if program.select is not None:
        return "RETURN (each projected key is reported once, remembered across pushes)"
    if program.window_time is None and program.window_events is None:
        return "no window (every earlier event may still join a match)"
    return None


class Tail:
    """The events an in-order matcher keeps to take its next micro-batch as columns: ``recent`` (the
    pushed events, while the stacks are live) or ``stream`` (columns, after a batch: the stacks are then
    stale until a push rebuilds them)."""

    def __init__(self, program):
        self.program = program
        w, n = program.window_time, program.window_events
        doubled = bool(program.trailing) and any(neg.gap == 0 for neg in program.negations)
        self.reach = None if w is None else (2 * w if doubled else w)  # seconds kept before now
        self.events = None if n is None else (2 if doubled else 1) * (n - 1)  # events kept per sub-stream
        self.keyed = n is not None and bool(program.partition_by)  # EVENTS windows per key
        self.recent = {} if self.keyed else deque(maxlen=self.events)  # (per key) the pushed events
        self.stream: Optional[Stream] = None
        self.closed_at = None  # the last position when ``close`` was called (a push or batch may follow)

    def unreleased(self, last):
        """Whether a match whose last event is at position ``last`` (an int, or an array of them) was not
        released by a ``close`` already: a close releases (or drops) every match waiting then, the ones
        whose events had all come. The one place of that rule (``batch_matches``, ``waiting_at_close``,
        ``InOrderMatcher._resume``)."""
        return True if self.closed_at is None else last > self.closed_at

    def keep(self, event, key: tuple) -> None:
        """A pushed event (``key``: its PARTITION BY key) joins the tail; what is past the reach leaves it."""
        if self.keyed:
            recent = self.recent.get(key)
            if recent is None:
                recent = self.recent[key] = deque(maxlen=self.events)
            recent.append(event)
            return
        recent = self.recent
        recent.append(event)
        if self.reach is not None:
            horizon = window_horizon(event.time, self.reach)
            while recent[0].time < horizon:
                recent.popleft()

    def columns(self, ts_is_datetime: bool) -> Stream:
        """The tail as a Stream (its pushed events turned into columns the first time)."""
        if self.stream is None:
            recent = self.recent
            events = (
                sorted(chain.from_iterable(recent.values()), key=attrgetter("position")) if self.keyed else list(recent)
            )
            self.stream = Stream(events, ts_is_datetime)
            recent.clear()
        return self.stream

    def anchors(self, kept: Stream, batch: int, now: float) -> np.ndarray:
        """Which events of ``kept`` (the tail before a batch, ``now`` its latest ts) and the ``batch`` events
        after it may end a match emitted during the batch: the batch's, and the tail's whose matches may
        still wait for a trailing item."""
        program = self.program
        anchors = np.zeros(len(kept) + batch, dtype=bool)
        anchors[len(kept) :] = True
        if program.trailing and program.window_time is not None:
            anchors[np.searchsorted(kept.times, window_horizon(now, program.window_time), "left") :] = True
        elif program.trailing and self.keyed:
            anchors[: len(kept)] = kept.later_in_key(self.program.partition_by) < program.window_events - 1
        elif program.trailing:
            anchors[max(0, len(kept) - (program.window_events - 1)) :] = True
        return anchors

    def cut(self, stream: Stream, now: float) -> Stream:
        """What of ``stream`` (the tail and a batch, ``now`` the latest ts) the next batch may need."""
        if self.keyed:
            return stream.take(stream.later_in_key(self.program.partition_by) < self.events)
        if self.reach is not None:
            start = int(np.searchsorted(stream.times, window_horizon(now, self.reach), "left"))
        else:
            start = max(0, len(stream) - self.events)
        return stream.take(slice(start, None)) if start else stream


def batch_matches(program, tail: Tail, batch: Stream, now: float):
    """The matches emitted while ``batch`` (in order, no PUNCTUATION, not empty) is pushed after the tail
    (``now``: the latest ts before it): each event's in output order, event after event, as a
    ``MatchList`` (or []); the tail is cut for the next batch."""
    kept = tail.columns(batch.ts_is_datetime)
    both = kept.followed_by(batch)
    found = ColumnarRun(program, both, tail.anchors(kept, len(batch), now), open_end=True).matches()
    tail.stream = tail.cut(both, max(now, float(batch.times[-1])))
    if not len(found):
        return []
    if not program.trailing:  # emitted at their last event, all in the batch: in output order already
        return MatchList(found)
    at = found.emitted_at
    # not before the batch, nor still waiting (-1), nor released by a close already
    emitted = (at >= batch.position_of(0)) & tail.unreleased(found.positions[found.offsets[1:] - 1])
    rows = np.flatnonzero(emitted)
    return MatchList(found.take(rows[np.argsort(at[rows], kind="stable")])) if len(rows) else []


def waiting_at_close(program, tail: Tail, now: float, last_position: int) -> list:
    """The matches still waiting for a trailing negation when the stream ends after a batch, emitted at
    the last event (as ``InOrderMatcher.close`` releases them); a trailing EXISTS never waits then (it is
    emitted when its witness comes, or never)."""
    if len(program.trailing) == len(program.trailing_exists) or not len(tail.stream):
        return []
    found = ColumnarRun(program, tail.stream, tail.anchors(tail.stream, 0, now), open_end=True).matches()
    if not len(found):
        return []
    waiting = (found.emitted_at < 0) & tail.unreleased(found.positions[found.offsets[1:] - 1])
    waiting = found.take(np.flatnonzero(waiting))
    return [Match(m.positions, m.bindings, "+", last_position) for m in waiting]
