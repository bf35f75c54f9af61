"""Match windows and phase 1 of the two-phase evaluation ([SES] ch. 5, Alg 3).

A match window starts at an event W[0] and holds every later event at most τ after it (Def 4.3); each is
handed to A(P, W), the SES automaton, when its span is complete. Phase 1 calls A only for windows that
can hold a match:

* **filtered** windows (Thm 5.1): an event satisfying no variable's properties Θ^p_v is dropped;
* **partitioned** windows (Def 5.3): one window per value of the attributes X that Θ's equalities tie
  across all variables (``SetPattern.partition_attributes``);
* **candidate** windows (Thm 5.2): (5.1) at least as many events as variables, (5.2) W[0] fits a variable
  of B1, (5.3)/(5.4) every variable has an event, after events of every variable of the previous set. The
  last two are kept up to date by the summary statistics of Def 5.2 as bit vectors (Ex 5.9).
"""

from __future__ import annotations

from collections import deque
from typing import Optional, Sequence


class Entry:
    """An event in a match window: its window coordinate (time, or position in its sub-stream for an
    EVENTS window), the bit mask of variables whose properties it satisfies, and the counters it raised."""

    __slots__ = ("event", "coord", "vars", "raised")

    def __init__(self, event, coord: float, vars: int):
        self.event, self.coord, self.vars = event, coord, vars
        self.raised: tuple = ()

    def __repr__(self):
        return f"Entry({self.event.position}, vars={self.vars:b})"


class SummaryStatistics:
    """The counters S of Def 5.2 as bit vectors (Ex 5.9), with the counter fix of docs/references.md E12.

    ``counters[v]`` counts the window's events satisfying Θ^p_v that arrived while every variable of v's
    previous set had a non-zero counter. ``status`` has bit v set while counter v is zero, so the window
    meets (5.3) and (5.4) when ``status == 0``; ``previous[i]`` masks the variables of set i - 1.

    docs/references.md E12: the thesis decrements, on dequeue, every counter whose property the event satisfies, also
    those it never incremented: for ⟨{c, p+}, {b}⟩ and the window ⟨x1 B, x2 C, x3 P, x4 B⟩, dequeuing x1
    zeroes b's counter and the match {c/x2, p/x3, b/x4} is lost. Here each entry remembers the counters it
    raised, with their epoch: resetting a later set's counters (when a counter of an earlier set drops to
    zero) starts a new epoch, and a dequeue decrements only counters raised in the current epoch.
    """

    def __init__(self, sets: Sequence[Sequence[int]]):
        self.set_of = {v: i for i, members in enumerate(sets) for v in members}
        self.members = [sum(1 << v for v in members) for members in sets]
        self.previous = [0] + self.members[:-1]
        arity = len(self.set_of)
        self.counters = [0] * arity
        self.epochs = [0] * arity
        self.status = (1 << arity) - 1

    def add(self, entry: Entry) -> None:
        """Count a new event: cnt_v += 1 for each v it fits, if the previous set's counters are all > 0."""
        before, raised = self.status, []
        for v in _bits(entry.vars):
            if not before & self.previous[self.set_of[v]]:
                self.counters[v] += 1
                self.status &= ~(1 << v)
                raised.append((v, self.epochs[v]))
        entry.raised = tuple(raised)

    def remove(self, entry: Entry) -> None:
        """Uncount a dequeued event; a counter of set i dropping to zero resets every later set's."""
        for v, epoch in entry.raised:
            if epoch != self.epochs[v]:
                continue
            self.counters[v] -= 1
            if not self.counters[v]:
                self.status |= 1 << v
                for later in range(self.set_of[v] + 1, len(self.members)):
                    for w in _bits(self.members[later]):
                        self.counters[w] = 0
                        self.epochs[w] += 1
                    self.status |= self.members[later]

    @property
    def complete(self) -> bool:
        """(5.3) and (5.4) hold: every counter is > 0."""
        return self.status == 0

    def bits(self, mask: Optional[int] = None) -> str:
        """A bit vector as written in Ex 5.9, the first variable leftmost (default: ``status``)."""
        mask = self.status if mask is None else mask
        return "".join("1" if mask >> v & 1 else "0" for v in range(len(self.counters)))


def _bits(mask: int):
    v = 0
    while mask:
        if mask & 1:
            yield v
        mask >>= 1
        v += 1


class MatchWindow:
    """The events of one partition from the current W[0] on (a deque), with their summary statistics.

    ``first_set`` masks the variables of B1; ``arity`` is the number of variables m.
    """

    def __init__(self, sets: Sequence[Sequence[int]], first_set: int, arity: int):
        self.entries: deque = deque()
        self.stats = SummaryStatistics(sets)
        self.first_set = first_set
        self.arity = arity

    def __len__(self):
        return len(self.entries)

    def append(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.stats.add(entry)

    def popleft(self) -> Entry:
        entry = self.entries.popleft()
        self.stats.remove(entry)
        return entry

    @property
    def front(self) -> Optional[Entry]:
        return self.entries[0] if self.entries else None

    def conditions(self) -> tuple:
        """The necessary match conditions (5.1), (5.2), (5.3) and (5.4) of Thm 5.2 for the window as it
        stands; (5.3) is checked directly, (5.4) by the counters (which also imply (5.3), Thm 5.3)."""
        w = self.entries
        present = 0
        for entry in w:
            present |= entry.vars
        return (
            len(w) >= self.arity,
            bool(w) and bool(w[0].vars & self.first_set),
            present == (1 << self.arity) - 1,
            self.stats.complete,
        )

    @property
    def candidate(self) -> bool:
        """Whether A must run on this window: (5.1), (5.2) and all counters > 0."""
        return len(self.entries) >= self.arity and bool(self.entries[0].vars & self.first_set) and self.stats.complete
