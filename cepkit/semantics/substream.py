"""The (sub-)stream a pattern is evaluated on, its window, and negation scopes (docs/language.md §4, §10.4-10.8).

The reference works on logical indices: the events of one partition (the whole stream without PARTITION
BY) sorted by (ts, position), numbered 0, 1, ... Under PARTITION BY, ``WITHIN n EVENTS``, STRICT and the
negation scopes therefore count positions of the sub-stream (docs/language.md §10.5).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Optional, Sequence

from ..lang import ast as A
from ..lang.window import first_fitting, fits_time, latest_time


@dataclass(frozen=True)
class Scope:
    """The logical indices strictly between ``lo`` and ``hi``; ``open`` when events yet to arrive may still
    fall inside it (its right end is the end of the stream so far)."""

    lo: int
    hi: int
    open: bool = False

    def meet(self, other: "Scope") -> "Scope":
        """The intersection of two scopes."""
        if self.hi != other.hi:
            right = self if self.hi < other.hi else other
            return Scope(max(self.lo, other.lo), right.hi, right.open)
        return Scope(max(self.lo, other.lo), self.hi, self.open and other.open)


class Substream:
    """Events in logical order, with the query's window.

    ``clock`` is the latest time seen on the whole stream so far: in an in-order stream no later event can
    have an earlier time, so a time scope ending before ``clock`` is closed. ``complete`` says that no event
    will ever come (batch evaluation, or ``Matcher.close``).
    """

    def __init__(self, events: Sequence, window: Optional[A.Window], clock: float, complete: bool):
        self.events = list(events)
        self.times = [e.time for e in self.events]
        self.window = window
        self.clock = clock
        self.complete = complete

    def __len__(self):
        return len(self.events)

    def fits(self, first: int, last: int) -> bool:
        """Whether events ``first``..``last`` fit the window: max t − min t ≤ w (``lang.window``'s rule for
        float times), or max − min index < n."""
        if self.window is None:
            return True
        if self.window.events:
            return last - first < self.window.amount
        return fits_time(self.window.seconds, self.times[first], self.times[last])

    def earliest(self, last: int) -> int:
        """The smallest index i such that events i..``last`` fit the window (0 without WITHIN)."""
        if self.window is None:
            return 0
        if self.window.events:
            return max(0, math.floor(last - self.window.amount) + 1)
        return first_fitting(self.times, self.times[last], self.window.seconds)

    def window_scope(self, first: int, last: int) -> Scope:
        """The scope of a leading or trailing negation of a match spanning ``first``..``last`` (docs/language.md §10.4):
        from (last − w) up to (first + w), the whole stream without WITHIN."""
        n = len(self.events)
        if self.window is None:
            return Scope(-1, n, not self.complete)
        if self.window.events:
            k = self.window.amount
            lo, hi = max(-1, math.floor(last - k)), math.ceil(first + k)
            return Scope(lo, hi) if hi <= n else Scope(lo, n, not self.complete)
        w, end = self.window.seconds, latest_time(self.window.seconds, self.times[first])
        lo = first_fitting(self.times, self.times[last], w) - 1
        hi = bisect.bisect_right(self.times, end)
        return Scope(lo, hi, not self.complete and not self.clock > end)
