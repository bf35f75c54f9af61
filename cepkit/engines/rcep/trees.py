"""Event trees: the events of one variable over the window, the only state RCEP keeps ([RCEP] ch. 3).

The thesis keeps, per leaf ``E_i`` of the query tree, a B+tree keyed on the attribute value with the time
as payload ([RCEP] §3.6.1): a range query costs O(log n + c) and its c hits are then sorted by time, O(c log c).
Here a tree is a set of numpy columns in arrival order (arrival = time order in an in-order stream): the
sequence number, the time and one ``KeyColumn`` per join key. A range query is one vectorised comparison
over the window's slice; it reads n keys instead of log n nodes, at about a nanosecond each, and its hits
come out already in time order, so no sort is needed. In Python this wins over any per-node structure
until windows hold millions of events (docs/rcep-engine.md has the measurements).

Sliding windows follow the CPU-friendly method ([RCEP] §3.7.4): an expired event is not deleted when it expires;
a window start pointer hides it (the time predicate of the thesis) and the columns are compacted once
the expired prefix is as large as the live part, so memory stays within about twice the window, like the
two trees of the logarithmic method, and each event is moved O(1) times amortised.
"""

from __future__ import annotations

import numpy as np

from .keys import KeyColumn


class EventTree:
    """The events one slot may bind, in arrival order, with their keys.

    ``seq`` is the event's index in its (PARTITION BY) sub-stream, the order sequence, STRICT contiguity
    and ``WITHIN n EVENTS`` read; ``times`` its time in seconds. Rows ``start .. size-1`` are live.
    """

    def __init__(self, key_functions: dict, capacity: int = 64):
        self.key_functions = key_functions  # key name -> event -> value
        self.events: list = []
        self.seq = np.zeros(capacity, dtype=np.int64)
        self.times = np.zeros(capacity)
        self.keys = {name: KeyColumn(capacity) for name in key_functions}
        self.start = 0
        self.peak = 0

    @property
    def size(self) -> int:
        return len(self.events)

    @property
    def live(self) -> int:
        return self.size - self.start

    def insert(self, event, seq: int) -> None:
        """Append an event (step 1 of Algorithm 1: its local tests passed) and compute its keys once."""
        i = self.size
        if i >= len(self.seq):
            self.seq = np.resize(self.seq, 2 * i)
            self.times = np.resize(self.times, 2 * i)
        self.seq[i], self.times[i] = seq, event.time
        for name, fn in self.key_functions.items():
            self.keys[name].set(i, fn(event))
        self.events.append(event)
        self.peak = max(self.peak, self.live)

    def pop(self) -> None:
        """Remove the newest event (a trigger of a single last variable: no later match can use it)."""
        self.events.pop()

    def expire(self, min_time: float, min_seq: int) -> None:
        """Hide events older than the window (time below ``min_time`` or sequence below ``min_seq``), and
        compact once the hidden prefix is as large as the live part ([RCEP] §3.7.4, CPU-friendly)."""
        start, n = self.start, self.size
        if min_time > -np.inf:
            start += int(np.searchsorted(self.times[start:n], min_time, side="left"))
        if min_seq > 0:
            start += int(np.searchsorted(self.seq[start:n], min_seq, side="left"))
        self.start = start
        if self.start and self.start >= n - self.start:
            self._compact()

    def _compact(self) -> None:
        start, n = self.start, self.size
        live = n - start
        self.seq[:live] = self.seq[start:n]
        self.times[:live] = self.times[start:n]
        for column in self.keys.values():
            column.shift(start, n)
        del self.events[:start]
        self.start = 0

    def before(self, seq: int) -> int:
        """The row after the last live event with sequence number below ``seq``."""
        return self.start + int(np.searchsorted(self.seq[self.start : self.size], seq, side="left"))

    def rows(self, stop: int) -> np.ndarray:
        """Row numbers of the live events before row ``stop``, oldest first."""
        return np.arange(self.start, stop)

    def key(self, name: str, rows) -> tuple:
        """(values, valid) of key ``name`` at ``rows``."""
        column = self.keys[name]
        return column.values[rows], column.valid[rows]
