"""A stream in micro-batches for E-Cube: the events kept between batches, and which matches are final.

E-Cube plans and reuses over a finite stream (``ECube.run``). Over an endless one, each micro-batch is
appended to the *kept* events and the batch machinery runs over them; of what it finds, a match is
reported once it is *final*, i.e. once no later event can change it, and each match once: the report
is the match's *last* event becoming *closed*. With ``w`` the window and ``r`` the lookahead (``w`` when an
item follows the last positive one: a trailing negation's scope reaches up to ``w`` past the match; else 0):

* time windows: an event closes once an event more than ``r`` after it (and the window's float
  tolerance, ``window_horizon``) has been fed, at once when ``r`` is 0; events arrive in time order, so the
  closed events are a prefix of the kept ones;
* ``WITHIN n EVENTS`` (``w = n - 1`` events, counted in each PARTITION BY sub-stream, docs/language.md §10.5):
  an event closes once ``r`` later events of its sub-stream have been fed.

A run over the kept events is exact for every match whose last event is not closed yet, and for the
matches of the events closing now: such a match and every scope deciding it (a leading negation from
``last - w``, a trailing one up to ``first + w``) lie at or after ``u - w``, ``u`` the earliest event not
closed before this batch. So the kept events are everything from ``u - w`` on (time), or the last
``w + r + 1`` events of each sub-stream (EVENTS); earlier events are forgotten. A match reported from one run
is never reported again: its last event is closed. ``complete_from`` tells from where the kept events
answer a new query exactly (a drill-down while the stream runs): the matches whose window starts there.

The rule "final when its last event is closed" is a function of the events fed, not of how they were
cut into batches, so a matcher rebuilt from the kept events of another (a Spark worker after a restart,
``cepkit.spark.watermark``) reports exactly what the first would have from then on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..runtime.expiry import window_horizon
from ..runtime.stream import Stream
from .shape import shape_of


def lookahead(query) -> float:
    """How long a match of ``query`` may wait after its last event: the window when an item follows the last
    positive one (a trailing negation), else 0 (seconds, or events under ``WITHIN n EVENTS``)."""
    if shape_of(query).items[-1].positive:
        return 0.0
    return float(query.within.amount - 1) if query.within.events else float(query.within.seconds)


@dataclass(frozen=True)
class Reach:
    """How far back a match looks (``window``, the largest) and how far ahead it waits (``lookaheads``, one
    per query: 0 or its window), for the queries of one stream: ``axis`` "time" (seconds) or "position"
    (events of a PARTITION BY sub-stream, ``keys``)."""

    axis: str
    window: float
    lookaheads: tuple
    keys: tuple = ()

    @property
    def lookahead(self) -> float:
        return max(self.lookaheads)

    @classmethod
    def of(cls, queries) -> Optional["Reach"]:
        """The reach covering every query; None when one has no window (a match may then hold any earlier
        event: nothing is final before the end) or when the queries mix time and EVENTS windows or EVENTS
        windows over different keys."""
        reaches = set()
        for query in queries:
            within = query.within
            if within is None:
                return None
            window = float(within.amount - 1) if within.events else float(within.seconds)
            axis = "position" if within.events else "time"
            reaches.add((axis, tuple(query.partition_by) if within.events else (), window, lookahead(query)))
        if not reaches or len({(axis, keys) for axis, keys, _, _ in reaches}) > 1:
            return None
        axis, keys = next(iter(reaches))[:2]
        return cls(axis, max(w for _, _, w, _ in reaches), tuple(sorted({r for _, _, _, r in reaches})), keys)


class KeptEvents:
    """The events a stream in micro-batches keeps (``stream``), and per kept event and lookahead whether it
    is closed (the matches ending there reported): see the module docstring. ``reach`` None keeps everything
    until ``close``."""

    def __init__(self, reach: Optional[Reach]):
        self.reach = reach
        self.stream: Optional[Stream] = None
        self.closed = {r: np.zeros(0, bool) for r in (reach.lookaheads if reach else (0.0,))}
        self.complete_from = -math.inf  # time axis: no event at or after this was forgotten

    def add(self, batch: Stream) -> Stream:
        """Append ``batch`` (in order after what was fed) to the kept events; return them."""
        if len(batch):
            self.stream = batch if self.stream is None or not len(self.stream) else self.stream.followed_by(batch)
            self.closed = {r: np.concatenate([c, np.zeros(len(batch), bool)]) for r, c in self.closed.items()}
        return self.stream if self.stream is not None else batch

    def settle(self, final: bool = False) -> dict:
        """Close what the events fed so far close (``final``: every event, the stream has ended); return,
        per lookahead, the positions of the events closed now, increasing."""
        out = {}
        for r, closed in self.closed.items():
            if self.stream is None or not len(self.stream):
                out[r] = np.zeros(0, np.int64)
                continue
            open_ = ~closed
            if final:
                closing = open_
            elif self.reach is None:
                closing = np.zeros(len(open_), bool)
            elif self.reach.axis == "time":
                times = self.stream.times
                closing = open_ & (times < window_horizon(float(times[-1]), r)) if r else open_
            else:
                closing = open_ & (self.stream.later_in_key(self.reach.keys) >= r)
            closed |= closing
            out[r] = self.stream.position_of(np.flatnonzero(closing))
        return out

    def forget(self) -> None:
        """Drop the kept events no later match or scope can read."""
        stream, reach = self.stream, self.reach
        if stream is None or reach is None or not len(stream):
            return
        if reach.axis == "time":
            times = stream.times
            open_ = np.flatnonzero(~self.closed[reach.lookahead])
            anchor = float(times[open_[0]] if len(open_) else times[-1])
            horizon = window_horizon(anchor, reach.window)
            start = int(np.searchsorted(times, horizon, "left"))
            if not start:
                return
            self.complete_from = max(self.complete_from, horizon)
            keep = slice(start, None)
        else:
            keep = self.stream.later_in_key(self.reach.keys) < reach.window + reach.lookahead + 1
            if keep.all():
                return
        self.stream = stream.take(keep)
        self.closed = {r: c[keep] for r, c in self.closed.items()}
