"""The RETURN keys an incremental matcher has reported (docs/language.md §10.2)."""

from __future__ import annotations

import collections
from typing import Optional

from .expiry import window_horizon


class ReportedOnce:
    """The RETURN keys an incremental matcher has reported, so that each (C, β) is reported once although
    several matches project to it (docs/language.md §10.2).

    Under a time window of w a key is forgotten once an event more than w past its report has been
    pushed: every match projecting to it holds its events, the earliest at or before the report, so no
    match completed or released from then on can (engines report a match at the latest at the first event
    past its window). Without a time window every key is kept.
    """

    def __init__(self, window_seconds: Optional[float] = None):
        self.window = window_seconds
        self.keys: dict = {}  # key -> time of its report
        self.order: collections.deque = collections.deque()  # (time, key) in report order

    def unreported(self, found: list, now: Optional[float]) -> list:
        """The matches of ``found`` not reported yet, remembered as reported at ``now`` (the pushed event's
        time; None at close); then what this push made impossible to report again is forgotten."""
        out = []
        for m in found:
            if m.key not in self.keys:
                self.keys[m.key] = now
                self.order.append((now, m.key))
                out.append(m)
        if self.window is not None and now is not None:
            horizon = window_horizon(now, self.window)
            while self.order and self.order[0][0] is not None and self.order[0][0] < horizon:
                del self.keys[self.order.popleft()[1]]
        return out

    def __len__(self) -> int:
        return len(self.keys)
