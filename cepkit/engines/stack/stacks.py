"""Active-instance stacks with pointers (SASE, [LIU] §2.3) that also accept late insertions
([LIU] §3.6.1: a late event is inserted into its stack in ts order and the later pointers move to it).

A ``Stack`` keeps instances sorted by their key ``(ts, arrival position)``: the logical order of
docs/language.md §10.1. Indices are *absolute*: the ``base`` instances purged from the bottom still count, so
a pointer never needs fixing when the window purges.

An instance's pointer ``rip`` (SASE's "most recent instance in the previous stack") is the absolute
count of instances in the previous stack that precede it; backward construction visits exactly
``prev[rip-1], prev[rip-2], ...``. In order, that is the previous stack's size when the instance was
pushed. A late insertion into stack i shifts by one the pointers of the later instances of stack i+1,
which is [LIU] §2.3's pointer update with integer pointers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right


class Instance:
    """An event held in a stack or a negation store: its key, local position and pointer."""

    __slots__ = ("event", "time", "key", "lpos", "rip")

    def __init__(self, event, lpos: int, rip: int = 0):
        self.event = event
        self.time = event.time
        self.key = (event.time, event.position)
        self.lpos = lpos  # position in the (PARTITION BY) sub-stream: EVENTS windows and STRICT count these
        self.rip = rip

    def __repr__(self):
        return f"{self.event.type}@{self.event.position}(rip={self.rip})"


class Stack:
    """Instances sorted by key; ``items[i]`` has absolute index ``base + i``."""

    __slots__ = ("items", "keys", "base")

    def __init__(self):
        self.items: list = []
        self.keys: list = []
        self.base = 0

    def __len__(self):
        return len(self.items)

    @property
    def end(self) -> int:
        """Absolute index one past the top."""
        return self.base + len(self.items)

    def push(self, inst: Instance) -> None:
        """In-order arrival: the instance goes on top."""
        self.items.append(inst)
        self.keys.append(inst.key)

    def insert(self, inst: Instance) -> int:
        """Late arrival: insert in key order; returns the local index."""
        i = bisect_right(self.keys, inst.key)
        self.items.insert(i, inst)
        self.keys.insert(i, inst.key)
        return i

    def count_before(self, key) -> int:
        """Absolute count of instances whose key is below ``key`` (a pointer)."""
        return self.base + bisect_left(self.keys, key)

    def span(self, lo, hi) -> tuple:
        """Local indices (i, j): ``items[i:j]`` are the instances with ``lo < key < hi``."""
        return bisect_right(self.keys, lo), bisect_left(self.keys, hi)

    def between(self, lo, hi) -> list:
        """The instances with ``lo < key < hi``."""
        i, j = self.span(lo, hi)
        return self.items[i:j]

    def after(self, key) -> int:
        """Local index of the first instance with a key above ``key``."""
        return bisect_right(self.keys, key)

    def purge_before_time(self, time: float) -> int:
        """Drop the instances with ts < ``time`` (the window purge); returns how many."""
        cut = bisect_left(self.keys, (time, -1))
        return self._cut(cut)

    def purge_before_lpos(self, lpos: int) -> int:
        """Drop the instances with local position < ``lpos`` (EVENTS windows; in-order streams only)."""
        cut = bisect_left(self.items, lpos, key=lambda inst: inst.lpos)
        return self._cut(cut)

    def remove(self, inst: Instance) -> None:
        """Drop one instance from anywhere (a conservative purge, [LIU] §3.6.1 Alg. 1-2); the caller
        shifts the next stack's pointers back, as for a late insertion."""
        i = bisect_left(self.keys, inst.key)
        del self.items[i]
        del self.keys[i]

    def _cut(self, cut: int) -> int:
        if cut:
            del self.items[:cut]
            del self.keys[:cut]
            self.base += cut
        return cut
