"""The in-order stack matcher's per-event step for ``cepkit.Matcher.pusher`` on plain sequences.

A flat SEQ of positive items without conditions, under a time window and the ALL strategy (``A a ; B b ;
C c WITHIN 10 s``, with or without PARTITION BY) needs of SASE's stacks ([LIU] §2.3) only each instance's
time, position and pointer: ``SeqStep`` keeps them as tuples in plain lists, one list per item but the
last (an instance there is only an anchor), and walks backward from each last-item event as
``Core.construct`` does. What ``InOrderMatcher.feed`` does per event beyond that (an ``Instance`` and an
``Event`` per event, the negation stores, the purge of every touched partition, the tail kept for
micro-batches) costs ~10 µs a push; this step ~1 µs.

The step and the matcher's own state take turns, through the events of the last window: the step
starts from the events the matcher's tail holds (``InOrderMatcher._take_over``), and any other call of
the matcher (``push``, ``extend``, ``close``, its state) first replays the step's recent events through
``feed``, their emissions discarded (``InOrderMatcher._settle_step``), as ``InOrderMatcher._resume``
replays a tail after micro-batches. Exact for the same reason: without negations every match is emitted
at its last event, and all its events lie within the window before it.

The matches are the stacks' (``Core.add_positive``, ``construct``, ``Program.to_match``): an event enters
every item its type fits, last item first, when the item before holds an instance (SASE); a match
through it spans at most the window (``latest − t > w`` ends the walk down a stack, as there). Each
event's matches are returned in output order (docs/language.md §10.2), as ``Matcher.push`` sorts them.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Optional

from ...lang.window import time_limit
from ...runtime.event_record import PUNCTUATION, values_event, values_key
from ...runtime.expiry import KeyExpiry
from ...runtime.match_record import Match


def step_refusal(program) -> Optional[str]:
    """Why ``SeqStep`` cannot run ``program`` (then the pusher builds an ``Event`` and pushes it), or None."""
    if program.negations or program.joins:
        return "negations or conditions across items"
    if any(slot.test is not None for slot in program.slots):
        return "conditions on an item"
    if program.strategy != "ALL" or program.select is not None or program.hashed:
        return "a strategy, RETURN or an equality partition"
    if program.window_time is None or program.window_events is not None:
        return "no time window"
    return None


class _Key:
    """One PARTITION BY key's stacks: per item but the last, its instances (time, position, pointer: the
    absolute count of the previous item's instances before it) and how many were purged below them."""

    __slots__ = ("stacks", "base")

    def __init__(self, n: int):
        self.stacks: list = [[] for _ in range(n - 1)]
        self.base = [0] * (n - 1)


def _purge(stack: list, base: list, item: int, limit: float) -> None:
    """Drop the instances of ``stack`` (item ``item``) older than ``limit``, counting them in ``base``."""
    cut = 1
    while cut < len(stack) and stack[cut][0] < limit:
        cut += 1
    del stack[:cut]
    base[item] += cut


class SeqStep:
    """``step(type, time, values, position)`` of ``InOrderMatcher.step``: the matches the event completes,
    in output order (module docstring)."""

    def __init__(self, matcher, columns: tuple):
        program = matcher.program
        self.matcher = matcher
        self.columns = columns
        self.n = program.n
        self.w = program.window_time
        self.slots = program.slots
        self.names = tuple(slot.var for slot in program.slots)
        self.items_of: dict = {}  # type -> the items it fits, last first
        self.key_of = values_key(
            [(name, columns.index(name) if name in columns else None) for name in program.partition_by]
        )
        self.keyed = bool(program.partition_by)
        self.keys: dict = {}  # PARTITION BY key -> _Key
        self.expiry = KeyExpiry(self.w)  # a key whose window has passed is forgotten, as ``feed`` forgets it
        self.oldest = -math.inf  # at most the oldest key's last time: the expiry is checked once it passes
        # the events of the last window, (type, time, values, position, Event or None), for the hand-back
        self.recent: deque = deque()

    def __call__(self, type_: str, time: float, values, position: int) -> list:
        m = self.matcher
        if type_ == PUNCTUATION:  # (``push`` reads none)
            return []
        if m._step is not self:
            m._take_over(self)
        m.last_position = position
        m._now = time
        m._arrivals += 1
        if m._arrivals % 64 == 0:
            m.peak_state = max(m.peak_state, self.size())
        found = self.add(type_, time, values, position, None)
        if found:
            m.emitted += len(found)
        return found

    def restart(self) -> None:
        """Hold nothing (the matcher's state is handed over next, ``InOrderMatcher._take_over``)."""
        self.keys.clear()
        self.recent.clear()
        self.expiry = KeyExpiry(self.w)
        self.oldest = -math.inf

    def add(self, type_: str, time: float, values, position: int, event) -> list:
        """The event into the stacks (``event``: its ``Event`` when it came from the matcher's tail); the
        matches it completes, in output order."""
        w = self.w
        # ``window_horizon(time, w)``, inline (a call costs a tenth of the step)
        horizon = time - w - 1e-9 * (time if time > 1.0 else (-time if time < -1.0 else 1.0))
        recent = self.recent
        recent.append((type_, time, values, position, event))
        while recent[0][1] < horizon:
            recent.popleft()
        last = self.expiry.last
        if self.oldest < horizon:  # (keys move to the end when touched: the oldest only grows)
            if last and next(iter(last.values())) < horizon:
                for gone in self.expiry.expired(time):
                    self.keys.pop(gone, None)
            self.oldest = next(iter(last.values())) if last else time  # (empty: this event's key comes next)
        if self.keyed:
            key = self.key_of(type_, time, values)
            last[key] = time  # (events in order: its latest)
            last.move_to_end(key)
        else:
            key = ()
            last[key] = time
        items = self.items_of.get(type_)
        if items is None:
            items = self._items(type_)
        if not items:
            return []
        state = self.keys.get(key)
        if state is None:
            state = self.keys[key] = _Key(self.n)
        stacks, base = state.stacks, state.base
        limit = horizon  # ``InOrderMatcher._purge``'s: an older instance joins nothing from now on
        last_item = self.n - 1
        found = []
        for item in items:
            if item:
                below = stacks[item - 1]
                if below and below[0][0] < limit:
                    _purge(below, base, item - 1, limit)
                if not below:
                    continue  # SASE: nothing can precede it in this item
                rip = base[item - 1] + len(below)
            else:
                rip = 0
            if item < last_item:
                stack = stacks[item]
                if stack and stack[0][0] < limit:
                    _purge(stack, base, item, limit)
                stack.append((time, position, rip))
            else:
                found = self._construct(state, rip, time, position)
        return found

    def _items(self, type_: str) -> tuple:
        """The items an event of ``type_`` fits, last first (``Program.fits``)."""
        items = self.items_of[type_] = tuple(
            i
            for i in range(self.n - 1, -1, -1)
            if type_ != PUNCTUATION and (self.slots[i].types is None or type_ in self.slots[i].types)
        )
        return items

    def _construct(self, state: _Key, rip: int, time: float, position: int) -> list:
        """The matches through a last-item event (``rip`` its pointer), as ``Match`` objects in output order."""
        rows: list = []
        if self.n > 1:
            self._down(state, self.n - 2, rip, time, time_limit(self.w, time), [position], rows)
        else:
            rows.append((position,))
        if not rows:
            return []
        rows.sort()
        names = self.names  # (the bindings dict made when first read: ``Match.named``, ``Match.grouped``)
        if None not in names:
            named = Match.named
            return [named(positions, names, position) for positions in rows]
        grouped, none = Match.grouped, frozenset()
        return [grouped(positions, names, none, position) for positions in rows]

    def _down(self, state: _Key, item: int, rip: int, latest: float, limit: float, tail: list, rows: list) -> None:
        """Every choice of items ``item``, ``item − 1``, ..., 0 below pointer ``rip`` within the window
        of ``latest`` (``limit``: its ``time_limit``), each row of positions (``tail``: the later items'
        positions) added to ``rows``."""
        stack = state.stacks[item]
        top = rip - state.base[item] - 1
        for index in range(top, -1, -1):
            t, p, below = stack[index]
            if latest - t > limit:
                break
            if item:
                self._down(state, item - 1, below, latest, limit, [p] + tail, rows)
            else:
                rows.append((p, *tail))

    def events(self) -> list:
        """The recent events as ``Event`` objects, in order (``InOrderMatcher._settle_step`` replays them)."""
        columns = self.columns
        return [
            event if event is not None else values_event(columns, type_, time, values, position)
            for type_, time, values, position, event in self.recent
        ]

    def size(self) -> int:
        """Instances held."""
        return sum(len(stack) for state in self.keys.values() for stack in state.stacks)
