"""Partial order guarantees and the purges they allow ([LIU] §3.6.1, Definition 1, Alg. 1-2).

A guarantee says how far the stream of one type is complete. A PUNCTUATION ``of`` T at ts p promises
no more T (or types below concept T) with ts ≤ p; ``max_delay`` D promises, for every type, no more
events with ts < clock - D, and its per-type form D[T] the same for type T alone (``cepkit.runtime.delays.MaxDelay``:
a concept is complete when every type below it is). Both feed two questions:

- is a negation scope complete, so a held match is safe to output (``complete_before``/``_through``);
- can a stored instance never join a future match, so it may go (``purge``): an instance is purgeable
  when, for some slot before or after it, no stored instance can take that slot and no future one can
  (Alg. 2, run per slot, not per type name, as a repeated type needs; Alg. 1 is its case
  of one guarded slot, [LIU] Ex 4); and any instance below every positive slot's frontier minus the window
  is purgeable too.

Boundaries follow docs/references.md E1: a middle or leading scope needs the frontier at or above
the right neighbour's ts, a trailing one at or above (first ts + w) ([LIU] Ex 2 and 6); Alg. 2's forward test uses
``POG >= e.ts + W`` ([LIU] Ex 5).
"""

from __future__ import annotations

import math

from ...lang.window import earliest_time, latest_time
from ...runtime.delays import MaxDelay, Punctuations
from ...runtime.expiry import window_horizon


class PurgeByGuarantees:
    """The frontiers of one query's types, and the purges they justify."""

    def __init__(self, program, hierarchy, delays: MaxDelay):
        self.program = program
        self.delays = delays
        self.punctuations = Punctuations(hierarchy)
        self.punctuate = self.punctuations.punctuate
        self.frontier = self.punctuations.frontier
        self.purged = 0

    def complete_before(self, name, time: float, clock: float) -> bool:
        """No future event of type ``name`` can have ts < ``time``."""
        if clock - self.delays.of(name) >= time:
            return True
        return self.frontier(name) >= time

    def complete_through(self, name, time: float, clock: float) -> bool:
        """No future event of type ``name`` can have ts ≤ ``time``."""
        if clock - self.delays.of(name) > time:
            return True
        return self.frontier(name) >= time

    def through(self, name, clock: float) -> float:
        """The ts through which type ``name`` is complete: every future event of it has a larger ts."""
        delay = self.delays.of(name)
        by_delay = math.nextafter(clock - delay, -math.inf) if delay < math.inf else -math.inf
        return max(by_delay, self.frontier(name))

    def purge(self, cores, clock: float) -> None:
        """Drop every stored instance no future match can use (run when a guarantee advances)."""
        program = self.program
        w = program.window_time if program.window_time is not None else math.inf
        frontiers = [self.through(slot.node.type, clock) for slot in program.slots]
        floor = window_horizon(min(frontiers), w)
        for core in cores:
            if floor > -math.inf:
                core.sweep(floor, None)
            for part in list(core.parts.values()):
                for slot in range(program.n):
                    for inst in list(part.stacks[slot].items):
                        if self._purgeable(part, slot, inst, frontiers, w):
                            part.remove(slot, inst)
                            self.purged += 1

    def _purgeable(self, part, slot: int, inst, frontiers, w: float) -> bool:
        """Alg. 2 for one instance: walk the slots before it (backward) and after it (forward); a slot whose
        future is closed and whose stored candidates are all out of reach makes ``inst`` useless."""
        stacks = part.stacks
        finite = w < math.inf
        earliest = earliest_time(w, inst.time) if finite else -math.inf  # the window around ``inst``
        latest = latest_time(w, inst.time) if finite else math.inf
        upper = inst.key  # backward: slot s must precede ``upper``
        for s in range(slot - 1, -1, -1):
            if frontiers[s] >= upper[0]:  # no future slot-s event before ``upper``
                i, j = stacks[s].span((earliest, -1), upper)
                if i >= j:
                    return True
                upper = stacks[s].keys[j - 1]  # the latest candidate is the weakest bound
        lower = inst.key  # forward: slot s must follow ``lower``
        for s in range(slot + 1, len(stacks)):
            # no future slot-s event within the window: a guarantee at e.ts + W closes it (docs/references.md
            # E1), not waiting for the window's float allowance (``lang.window``)
            if frontiers[s] >= inst.time + w:
                i, j = stacks[s].span(lower, (latest, math.inf))
                if i >= j:
                    return True
                lower = stacks[s].keys[i]  # the earliest candidate is the weakest bound
        return False
