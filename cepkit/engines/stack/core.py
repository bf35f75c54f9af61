"""Stacks of one sub-stream, result construction, and the negation checks ([LIU] §2.3, §2.4).

A ``Core`` serves one PARTITION BY sub-stream (or the whole stream). Inside it, each value of the
equality partition (``program.hashed``) has a ``Partition``: one stack per positive slot and one store
per negation (a negation not tied to the equality class shares one store across partitions).

Construction is a depth-first walk from an *anchor* instance: forward through later stacks to the last
slot, then backward along the pointers to the first (``Program.orders``). In order the anchor is always
the new instance at the last slot and the walk is SASE's backward DFS; a late event (out-of-order modes)
anchors the walk wherever it was inserted. Joins and negation scopes are tested as soon as their
variables are bound; windows and STRICT prune the walk, since stacks are sorted by (ts, position).
"""

from __future__ import annotations

import math

from ...lang.window import fits_time
from .stacks import Instance, Stack

SWEEP_EVERY = 1024  # events between purges of partitions that saw no event (time windows)


class Partition:
    """The stacks and negation stores of one equality-partition value."""

    __slots__ = ("stacks", "negs")

    def __init__(self, n: int, shared: list):
        self.stacks = [Stack() for _ in range(n)]
        self.negs = [store if store is not None else Stack() for store in shared]

    def insert(self, slot: int, inst: Instance, ordered: bool) -> None:
        """Put an instance in its stack and set its pointer; a late one shifts the next stack's pointers."""
        stacks = self.stacks
        if slot > 0:
            inst.rip = stacks[slot - 1].end if ordered else stacks[slot - 1].count_before(inst.key)
        if ordered:
            stacks[slot].push(inst)
            return
        stacks[slot].insert(inst)
        if slot + 1 < len(stacks):
            nxt = stacks[slot + 1]
            for later in nxt.items[nxt.after(inst.key) :]:
                later.rip += 1

    def remove(self, slot: int, inst: Instance) -> None:
        """Take an instance out of the middle of its stack (conservative purge)."""
        stacks = self.stacks
        stacks[slot].remove(inst)
        if slot + 1 < len(stacks):
            nxt = stacks[slot + 1]
            for later in nxt.items[nxt.after(inst.key) :]:
                later.rip -= 1


class Core:
    """One sub-stream: its equality partitions, its local positions and the construction algorithm.

    ``ordered`` is True when events arrive in (ts, position) order (the in-order and K-slack modes): stacks
    are then pushed, and an event enters stack i only if stack i-1 already holds an instance (SASE).
    """

    def __init__(self, program, ordered: bool):
        self.program = program
        self.ordered = ordered
        self.parts: dict = {}
        self.shared = [None if neg.hash_attr is not None else Stack() for neg in program.negations]
        self.next_lpos = 0
        self.touched: set = set()  # partitions that saw the current event: the ones to purge now

    def partition(self, value) -> Partition:
        part = self.parts.get(value)
        if part is None:
            part = self.parts[value] = Partition(self.program.n, self.shared)
        self.touched.add(value)
        return part

    # ------------------------------------------------------------------ arrivals
    def negation_entries(self, event, lpos: int) -> list:
        """(negation index, partition, instance) for every negation ``event`` may block; not yet stored."""
        program, out = self.program, []
        for j, neg in enumerate(program.negations):
            if not program.fits(neg.types, event) or (neg.test is not None and not neg.test({neg.var: event})):
                continue
            if neg.hash_attr is None:
                out.append((j, None, Instance(event, lpos)))
                continue
            value = event.get(neg.hash_attr)
            if value is not None:
                out.append((j, self.partition(value), Instance(event, lpos)))
        return out

    def store(self, j: int, part, inst: Instance) -> None:
        store = self.shared[j] if part is None else part.negs[j]
        if self.ordered:
            store.push(inst)
        else:
            store.insert(inst)

    def add_positive(self, event, lpos: int) -> list:
        """Insert ``event`` in every stack it fits (last slot first, so it never precedes itself) and
        construct the matches it completes: a list of (partition, instances by slot)."""
        program, found = self.program, []
        for slot in range(program.n - 1, -1, -1):
            spec = program.slots[slot]
            if not program.fits(spec.types, event):
                continue
            if spec.test is not None and not spec.test({spec.var: event}):
                continue
            if program.hashed:
                value = event.get(spec.hash_attr)
                if value is None:
                    continue  # a null never equals anything: it cannot join
                part = self.partition(value)
            else:
                part = self.partition(None)
            if self.ordered and slot > 0 and not part.stacks[slot - 1].items:
                continue  # SASE: nothing can precede it in this slot
            inst = Instance(event, lpos)
            part.insert(slot, inst, self.ordered)
            if self.ordered and slot < program.n - 1:
                continue  # in order, only an instance at the last slot completes matches
            found.extend((part, chosen) for chosen in self.construct(part, slot, inst))
        return found

    # ------------------------------------------------------------------ construction
    def construct(self, part: Partition, anchor: int, inst: Instance, accept=None) -> list:
        """Every match through ``inst`` at slot ``anchor`` that passes the joins, the window and the
        negation scopes known now; ``accept(chosen, binding)`` may reject more."""
        program = self.program
        steps = program.orders[anchor]
        slots, stacks = program.slots, part.stacks
        window, span = program.window_time, program.window_events
        strict = program.strategy == "STRICT"
        later = program.trailing_exists if self.ordered else ()  # in order, their witnesses are yet to come
        chosen = [None] * program.n
        binding = {}
        results = []

        def passes(step) -> bool:
            for join in step.joins:
                if not join.test(binding):
                    return False
            for j in step.negations:
                if j not in later and not self.clear(part, j, chosen, binding):
                    return False
            return True

        def visit(k: int, tmin: float, tmax: float, lmin: int, lmax: int) -> None:
            if k == len(steps):
                if (program.strategy != "STNM" or self.next_match_ok(part, chosen, binding)) and (
                    accept is None or accept(chosen, binding)
                ):
                    results.append(tuple(chosen))
                return
            step = steps[k]
            slot, var = step.slot, slots[step.slot].var
            stack = stacks[slot]
            items = stack.items
            if step.forward:  # later instances, oldest first
                source = chosen[slot - 1]
                indices = range(stack.after(source.key), len(items))
            else:  # SASE: from the pointer down to the bottom, newest first
                source = chosen[slot + 1]
                indices = range(source.rip - stack.base - 1, -1, -1)
            for index in indices:
                y = items[index]
                t, lp = y.time, y.lpos
                if window is not None and not (
                    fits_time(window, tmin, t) if step.forward else fits_time(window, t, tmax)
                ):
                    break
                if span is not None and (lp - lmin >= span if step.forward else lmax - lp >= span):
                    break
                if strict and lp != (source.lpos + 1 if step.forward else source.lpos - 1):
                    if (lp > source.lpos + 1) if step.forward else (lp < source.lpos - 1):
                        break
                    continue
                chosen[slot] = y
                if var is not None:
                    binding[var] = y.event
                if passes(step):
                    visit(k + 1, min(tmin, t), max(tmax, t), min(lmin, lp), max(lmax, lp))
            chosen[slot] = None

        first = steps[0]
        chosen[anchor] = inst
        if slots[anchor].var is not None:
            binding[slots[anchor].var] = inst.event
        if passes(first):
            visit(1, inst.time, inst.time, inst.lpos, inst.lpos)
        return results

    # ------------------------------------------------------------------ negation
    def clear(self, part: Partition, j: int, chosen, binding) -> bool:
        """True when no stored event of negation ``j`` lies in its scope for ``chosen`` (NEEL bounds), or,
        for an EXISTS item, when some does."""
        program = self.program
        neg = program.negations[j]
        store = part.negs[j]
        lo, hi, lo_l, hi_l = program.scope(neg, chosen)
        start, stop = store.span(lo, hi)
        if neg.residual is None and lo_l == -math.inf and hi_l == math.inf:
            return (start < stop) == neg.exists
        # the store is this partition's: the equalities of the equality partition hold already
        found = any(
            lo_l <= entry.lpos <= hi_l and self._correlated(neg, neg.residual, binding, entry)
            for entry in store.items[start:stop]
        )
        return found == neg.exists

    def blocks(self, j: int, chosen, entry: Instance) -> bool:
        """Does the stored ``entry`` fall in negation ``j``'s scope for ``chosen`` (and satisfy its
        conditions)? It then blocks a negation, or witnesses an EXISTS item."""
        program = self.program
        neg = program.negations[j]
        lo, hi, lo_l, hi_l = program.scope(neg, chosen)
        if not (lo < entry.key < hi and lo_l <= entry.lpos <= hi_l):
            return False
        return self._correlated(neg, neg.correlated, self.binding_of(chosen), entry)

    @staticmethod
    def _correlated(neg, test, binding, entry: Instance) -> bool:
        """``test`` (None: true) with the negated variable bound to ``entry``'s event."""
        if test is None:
            return True
        if neg.var is None:
            return test(binding)
        saved = binding.get(neg.var)
        binding[neg.var] = entry.event
        try:
            return test(binding)
        finally:
            if saved is None:
                del binding[neg.var]
            else:
                binding[neg.var] = saved

    def binding_of(self, chosen) -> dict:
        return {s.var: i.event for s, i in zip(self.program.slots, chosen) if s.var is not None}

    # ------------------------------------------------------------------ skip-till-next-match
    def next_match_ok(self, part: Partition, chosen, binding) -> bool:
        """SASE skip-till-next-match ([SES] Def 6.1 on a flat SEQ): no event between the i-th and
        (i+1)-th events of the match could have extended its first i events to slot i+1. The stack of
        slot i+1 holds every candidate (an event enters it whenever slot i has an instance before it)."""
        program = self.program
        first = chosen[0]
        window, span = program.window_time, program.window_events
        for i in range(program.n - 1):
            stack, spec = part.stacks[i + 1], program.slots[i + 1]
            prefix = frozenset(range(i + 2))
            joins = [j for j in program.prefix_joins if (i + 1) in j.slots and j.slots <= prefix]
            saved = binding.get(spec.var)
            try:
                for y in stack.between(chosen[i].key, chosen[i + 1].key):
                    if window is not None and not fits_time(window, first.time, y.time):
                        break
                    if span is not None and y.lpos - first.lpos >= span:
                        break
                    if spec.var is not None:
                        binding[spec.var] = y.event
                    if all(join.test(binding) for join in joins):
                        return False
            finally:
                if spec.var is not None:
                    binding[spec.var] = saved
        return True

    # ------------------------------------------------------------------ purge
    def purge(self, part: Partition, time_limit=None, lpos_limit=None) -> int:
        """Drop what no future match can use: instances below the window's reach."""
        dropped = 0
        for stack in part.stacks:
            dropped += self._purge_stack(stack, time_limit, lpos_limit)
        for store in part.negs:
            dropped += self._purge_stack(store, time_limit, lpos_limit)
        return dropped

    def sweep_touched(self, time_limit=None, lpos_limit=None) -> None:
        """Purge the partitions the current event reached, and the shared negation stores."""
        for value in self.touched:
            part = self.parts.get(value)
            if part is not None:
                self.purge(part, time_limit, lpos_limit)
        self.touched.clear()
        for store in self.shared:
            if store is not None:
                self._purge_stack(store, time_limit, lpos_limit)

    def sweep(self, time_limit=None, lpos_limit=None) -> None:
        """Purge every partition, and forget the empty ones."""
        self.touched.clear()
        for value, part in list(self.parts.items()):
            self.purge(part, time_limit, lpos_limit)
            if not any(part.stacks) and all(
                store is shared or not store for store, shared in zip(part.negs, self.shared)
            ):
                del self.parts[value]
        for store in self.shared:
            if store is not None:
                self._purge_stack(store, time_limit, lpos_limit)

    @staticmethod
    def _purge_stack(stack: Stack, time_limit, lpos_limit) -> int:
        dropped = 0
        if time_limit is not None and stack.items and stack.items[0].time < time_limit:
            dropped += stack.purge_before_time(time_limit)
        if lpos_limit is not None and stack.items and stack.items[0].lpos < lpos_limit:
            dropped += stack.purge_before_lpos(lpos_limit)
        return dropped

    def size(self) -> int:
        """Instances held (stacks and negation stores): the engine's state."""
        shared = sum(len(s) for s in self.shared if s is not None)
        own = sum(
            sum(len(s) for s in p.stacks) + sum(len(s) for s, sh in zip(p.negs, self.shared) if sh is None)
            for p in self.parts.values()
        )
        return shared + own
