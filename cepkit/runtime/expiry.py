"""When an incremental matcher may forget a PARTITION BY key (issue 15: bounded memory with many keys).

Under a time window of w, every match of a key holds events within w of each other, so once an event
more than w past a key's last event has been pushed (events in order), no later event of that key can
join anything the key holds: its state is exactly that of a key never seen, and is dropped. A key that
comes back starts afresh, as a new key would. Under ``WITHIN n EVENTS`` (or no window) a key is never
dropped: its next event, however late, may join its last events; each engine keeps a quiet key's state
bounded by its window (its engine's doc says what is kept).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Optional

import numpy as np


class KeyExpiry:
    """The keys seen, in the order of their last event (events arrive in time order, so that is also the
    order of their last times): the keys whose window has passed are at the front, found in O(1) each."""

    def __init__(self, window_seconds: Optional[float]):
        self.window = window_seconds
        self.last: OrderedDict = OrderedDict()  # key -> time of its last event

    def touch(self, key, time: float) -> None:
        """``key`` had an event at ``time``. Out of order (a late event) its last time stays the largest;
        keys are then only nearly in time order, and ``expired`` stops at the first live one, so a key
        may be dropped later than it could be, never earlier."""
        if self.window is not None:
            last = self.last.get(key)
            self.last[key] = time if last is None or time > last else last
            self.last.move_to_end(key)

    def touch_all(self, keys: list, times: list) -> None:
        """``touch`` of each key in turn (a micro-batch's keys in the order of their last event, at its time),
        without a method call per key."""
        if self.window is not None:
            last = self.last
            for key, time in zip(keys, times):
                held = last.pop(key, time)
                last[key] = time if time > held else held

    def expired(self, now: float) -> list:
        """The keys whose last event is more than the window (and the reference's float tolerance, and
        more) before ``now``; they are forgotten here too."""
        if self.window is None:
            return []
        horizon = window_horizon(now, self.window)
        out = []
        for key, time in self.last.items():
            if time >= horizon:
                break
            out.append(key)
        for key in out:
            del self.last[key]
        return out

    def __len__(self) -> int:
        return len(self.last)


def window_horizon(now, window: float):
    """The earliest time a match ending at ``now`` or later may hold, under a time window: ``now − w``, less
    the reference's float tolerance and more (so nothing a match may still need is ever forgotten).
    ``now`` is one time (a push: Python floats, no array made) or an array of times (a micro-batch's)."""
    scale = np.maximum(1.0, np.abs(now)) if isinstance(now, np.ndarray) else max(1.0, abs(now))
    return now - window - 1e-9 * scale
