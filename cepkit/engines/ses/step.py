"""``SesMatcher``'s per-event step for ``cepkit.Matcher.pusher`` (issue 23): the kept events as growing
arrays, the kernel called only when an event closes a window that may hold a match.

A push of ``SesMatcher`` enters the event into its window's ``Entry`` deque and, when a window closes,
runs the SES automaton over it in Python. ``SesStep`` keeps the events the open windows hold (those some
variable's properties take, Thm 5.1, in arrival order) in a ``kept.KeptEvents`` per clock: the window
coordinate, the mask of the variables it fits, its window key's code (PARTITION BY, then X), its
position, and the join and chain keys (``conjuncts.key_columns``' rows, read from the event's values).
Under a time window (or none) there is one clock, and an event's coordinate is its time; under ``WITHIN
n EVENTS`` each PARTITION BY sub-stream is a clock of its own (``SesMatcher.clocks``), an event's
coordinate its sequence number there (punctuation is not counted and closes nothing). An event first
closes its clock's windows whose W[0] lies more than τ before it (any event, punctuation too under a
time window, as ``SesMatcher._expire`` does); when one of those W[0]s fits a variable of the first set
(5.2, else its window holds no match), one ``kernel.close_windows`` call runs them over the clock's kept
events, and their matches are this event's. The closed W[0]s leave the arrays (the later windows start
after them), so a clock holds at most a window span of events; it is compacted when half of them have
left, and forgotten (but for its count) when it has no open window.

It runs the plans the kernel runs (``batch.Layout``) whose join and chain keys are attributes (``x.v <
y.v``, not ``x.v + 1 < y.v``); an event whose key is not a number (the kernel would not take the stream)
hands its state back and pushes from then on. Before any other call reads the open windows (``push``,
``extend``, ``close``, another pusher) the step hands them to the matcher as its columnar tail
(``SesMatcher._tail``), and takes them back from there at its next event: at most a window span of
events per clock each way.
"""

from __future__ import annotations

import math

import numpy as np

from ...lang import ast as A
from ...lang.window import TimeLimit
from ...runtime.attribute_columns import hashable_key
from ...runtime.event_record import PUNCTUATION, _is_null, values_event
from ...runtime.match_record import output_order
from ...runtime.stream import Stream
from ..conjuncts import NotAKey, key_rows, key_value
from ..kept import KernelCall, KeptEvents, KeyCodes, Rows, pushed
from .kernel import STAT_EVALUATED, STAT_MAX_WINDOW, close_windows


def runs(plan) -> bool:
    """Whether ``SesStep`` runs ``plan`` (the module docstring)."""
    if plan.layout is None:
        return False
    exprs, _ = key_rows(plan.layout.joins, plan.layout.chains)
    return all(isinstance(expr, A.Attr) and expr.attr not in ("ts", "type") for expr in exprs)


class _Clock:
    """One clock's kept events, its open W[0]s (their indices, in order) and ``close_windows`` over them."""

    def __init__(self, step: "SesStep"):
        self.kept = KeptEvents(len(step.key_at))
        self.starts: list = []
        self.close = KernelCall(close_windows, self.kept, step.out, step.constants, step.code)


class SesStep:
    """``SesMatcher.push`` for events given as values of ``columns`` (the module docstring)."""

    def __init__(self, matcher, columns: tuple):
        self.matcher = matcher
        plan = self.plan = matcher.plan
        layout = plan.layout
        self.columns = columns
        self.span = plan.span
        self.first_set = plan.first_set
        self.two_phase = plan.two_phase
        self.events_window = plan.events_window
        self.by_type: dict = {}  # type -> the variables it fits (no property conditions), or None
        self.typed = not any(plan._properties)
        at = {name: i for i, name in enumerate(columns)}
        exprs, ids = key_rows(layout.joins, layout.chains)
        self.key_names = [expr.attr for expr in exprs]
        self.key_at = [at.get(name) for name in self.key_names]
        # one key in the columns (a chain or a join on one attribute): read without a loop
        self.one_key = self.key_at[0] if len(self.key_at) == 1 else None
        self.partitioned = bool(plan.query.partition_by)
        self.x_at = [at.get(a) for a in plan.partition_attributes]
        self.keys = KeyCodes(plan.query.partition_by, columns)  # the PARTITION BY key's code: the window's without X
        self.codes: dict = {}  # with X: PARTITION BY key and X values -> the window key's code
        params = np.array(
            [
                plan.first_set,
                plan.two_phase,
                plan.strategy in (None, "ALL"),
                plan.strategy == "ROBUST_STNM",
                plan.lookahead,
                bool(plan.partition_attributes) or (self.partitioned and not self.events_window),  # codes differ
            ],
            dtype=np.int64,
        )
        joins = np.array([*layout.slots, ids[0], ids[1]], dtype=np.int64).reshape(5, len(layout.joins))
        chains = np.array([*layout.chain_slots, ids[2], ids[3]], dtype=np.int64).reshape(4, len(layout.chains))
        visible, kleene = set(plan.visible), plan.pattern.kleene
        self.out = Rows(
            [name if name in visible else None for name in plan.variables], [name in kleene for name in plan.variables]
        )
        bounds = np.zeros(3, dtype=np.int64)  # the call's lo, hi and n (``close_windows``)
        stats = np.zeros(3, dtype=np.int64)
        self._bounds, self._stats = memoryview(bounds), memoryview(stats)
        # ``close_windows``' arguments between the kept events and the rows' buffers
        self.constants = (bounds, float(self.span), params, layout.moves, layout.final, joins, chains, stats)
        self.code: list = [None]  # ``close_windows``' machine code, shared by the clocks
        self.finite = math.isfinite(self.span)
        self.limit = TimeLimit(self.span if self.finite and not self.events_window else 0.0)
        self.active = False
        self.usable = True
        self.opened = 0  # windows opened since ``counted``
        self._reset()

    # ------------------------------------------------------------------ state
    def _reset(self) -> None:
        self.one = _Clock(self)  # the clock of a time window (or none)
        self.clocks: dict = {}  # ``n EVENTS``: PARTITION BY key -> its clock, while it has open windows
        self.counts: dict = {}  # ``n EVENTS``: PARTITION BY key -> events of its sub-stream so far

    def _take_over(self) -> bool:
        """The matcher's open windows (its ``MatchWindow``s or columnar tail) into the arrays; False (and
        the step unusable) when a kept event's join or chain key is not a number the kernel takes."""
        m = self.matcher
        if m.stepping is not None:
            m.stepping.hand_back()
        if m.windows:
            m._to_columns(False)
        tail, coord = m._tail, m._tail_coord
        plan = self.plan
        kept = []
        if tail is not None:
            try:
                for event, at in zip(tail, coord.tolist()):
                    keys = [key_value(event.get(name)) for name in self.key_names]
                    clock = tuple(event.get(a) for a in plan.query.partition_by)
                    kept.append((event, at, plan.vars_of(event), self._code_of_event(event), keys, clock))
            except (NotAKey, TypeError):
                self.usable = False
                return False
        m._tail, m._tail_coord = None, np.zeros(0)
        self._reset()
        self.counts.update(m.substream)
        self.last_position, self.now = m.last_position, m._now
        for event, at, fits, code, keys, key in kept:
            clock = self._clock(key) if self.events_window else self.one
            if clock.starts or fits & self.first_set or not self.two_phase:
                self._keep(clock, event, at, fits, code, event.position, keys, count=False)
        m.stepping = self
        self.active = True
        return True

    def counted(self) -> None:
        """The windows opened and evaluated since the last call, and the largest evaluated, into the
        matcher's statistics (kept here between calls: the kernel adds to ``stats``)."""
        m, stats = self.matcher, self._stats
        m.opened += self.opened
        m.evaluated += stats[STAT_EVALUATED]
        m.max_window = max(m.max_window, stats[STAT_MAX_WINDOW])
        self.opened = stats[STAT_EVALUATED] = stats[STAT_MAX_WINDOW] = 0

    def hand_back(self) -> None:
        """The kept events to the matcher, as its columnar tail (``SesMatcher._tail``), and under ``n
        EVENTS`` the sub-streams' counts."""
        m = self.matcher
        self.counted()
        events: list = []
        coords = []
        for clock in self.clocks.values() if self.events_window else (self.one,):
            kept = clock.kept
            events += kept.events(self.columns, slice(kept.lo, kept.n))
            coords.append(kept.coord[kept.lo : kept.n])
        coord = np.concatenate(coords) if coords else np.zeros(0)
        if self.events_window and events:  # the clocks' events in arrival order
            order = np.argsort([e.position for e in events], kind="stable")
            events, coord = [events[i] for i in order.tolist()], coord[order]
        m._tail = Stream(events) if events else None
        m._tail_coord = coord.copy()
        m.substream.update(self.counts)
        m.last_position, m._now = self.last_position, self.now
        m.stepping = None
        self.active = False
        self._reset()

    def _clock(self, key: tuple) -> _Clock:
        clock = self.clocks.get(key)
        if clock is None:
            clock = self.clocks[key] = _Clock(self)
        return clock

    def _code_of_event(self, event) -> int:
        """The code of an Event's window key (``SesMatcher._enter``'s, as ``__call__`` reads values)."""
        plan = self.plan
        key = tuple(event.get(a) for a in plan.query.partition_by)
        if not self.x_at:
            return self.keys.code_of(key)
        return self.codes.setdefault(
            key + tuple(hashable_key(event.get(a)) for a in plan.partition_attributes), len(self.codes)
        )

    def _keep(self, clock: _Clock, row, coord: float, fits: int, code: int, position: int, keys, count=True) -> None:
        """Append a kept event to ``clock``: ``row`` an Event or (type, time, values, position), ``keys`` its
        key values (None: missing); ``count``: a new window for the matcher's statistics."""
        kept = clock.kept
        if kept.n == kept.size:
            self._room(clock)
        n = kept.n
        kept.append(row, coord, fits, code, position, keys)
        if fits & self.first_set or not self.two_phase:
            if not clock.starts:
                kept.lo = n
            clock.starts.append(n)
        if count:
            self.opened += 1

    def _room(self, clock: _Clock) -> None:
        """Room for one more event: the events before ``lo`` dropped, or the arrays doubled."""
        kept = clock.kept
        lo, n = kept.lo, kept.n
        if lo >= n // 2 and lo:
            kept.compact(slice(lo, n))
            clock.starts[:] = [s - lo for s in clock.starts]
        else:
            kept.grow()

    # ------------------------------------------------------------------ the step
    def __call__(self, type_: str, time: float, values, position: int) -> list:
        if not self.active:
            if not self.usable or not self._take_over():
                return self._push(type_, time, values, position)
        if type_ == PUNCTUATION:  # never kept nor counted; under a time window its time closes windows
            self.last_position = position
            if time > self.now:
                self.now = time
            one = self.one
            if self.events_window or not (one.starts and self.finite):
                return []
            return self._close_before(one, time, self.limit.at(time), position)
        fits = self.by_type.get(type_) if self.typed else None
        if fits is None:
            fits = self._fits(type_, time, values, position)
        keep = fits != 0 or not self.two_phase
        try:
            key, code = self.keys(type_, time, values) if self.partitioned else ((), 0)
            if keep:
                one = self.one_key
                if one is not None:
                    keys = (key_value(values[one]),)
                else:
                    keys = [None if i is None else key_value(values[i]) for i in self.key_at] if self.key_at else ()
                if self.x_at:
                    x = [None if i is None or _is_null(values[i]) else values[i] for i in self.x_at]
                    if None in x:  # a null on X joins nothing (``batch.Columns``)
                        keep = False
                    else:
                        window_key = key + tuple(map(hashable_key, x))
                        code = self.codes.get(window_key)
                        if code is None:
                            code = self.codes[window_key] = len(self.codes)
        except (NotAKey, TypeError):  # not a number the kernel takes, or an unhashable key
            self.usable = False
            self.hand_back()
            return self._push(type_, time, values, position)
        self.last_position = position
        if time > self.now:
            self.now = time
        opens = keep and (fits & self.first_set or not self.two_phase)
        if self.events_window:
            coord = self.counts.get(key, 0)
            self.counts[key] = coord + 1
            clock = self.clocks.get(key)
            if clock is None:
                if not opens:
                    return []
                clock = self.clocks[key] = _Clock(self)
            starts = clock.starts
            found = []
            if starts and coord - clock.kept._coord[starts[0]] > self.span:
                found = self._close_before(clock, coord, self.span, position)
            if keep and (starts or opens):  # (else in no open window)
                self._keep(clock, (type_, time, values, position), coord, fits, code, position, keys)
            elif not starts:
                del self.clocks[key]  # no open window: nothing kept
            return found
        clock = self.one
        starts = clock.starts
        found = []
        if starts and self.finite:
            limit = self.limit
            scale = time if time > 0.0 else -time  # (``TimeLimit.at`` without the call, within a binade)
            at = limit.limit if limit.low <= scale < limit.high else limit.at(time)
            if time - clock.kept._coord[starts[0]] > at:
                found = self._close_before(clock, time, at, position)
        if keep and (starts or opens):  # (else in no open window): ``_keep`` without the call
            kept = clock.kept
            if kept.n == kept.size:
                self._room(clock)
            n = kept.n
            kept.append((type_, time, values, position), time, fits, code, position, keys)
            if opens:
                if not starts:
                    kept.lo = n
                starts.append(n)
            self.opened += 1
        return found

    def _fits(self, type_: str, time: float, values, position: int) -> int:
        fits = self.plan.vars_of(values_event(self.columns, type_, time, values, position))
        if self.typed:
            self.by_type[type_] = fits
        return fits

    def _close_before(self, clock: _Clock, coord: float, limit: float, position: int) -> list:
        """Evaluate ``clock``'s windows an event at ``coord`` closes (those of the W[0]s more than ``limit``
        before it); their matches."""
        kept, starts = clock.kept, clock.starts
        times = kept._coord
        closed = 0
        while closed < len(starts) and coord - times[starts[closed]] > limit:
            closed += 1
        if not closed:
            return []
        hi = starts[closed - 1] + 1
        del starts[:closed]
        lo, n = kept.lo, kept.n
        kept.lo = starts[0] if starts else n
        bounds = self._bounds
        bounds[0], bounds[1], bounds[2] = lo, hi, n
        rows, cells, ties = clock.close()  # (rows in output order: by last position, then positions)
        if not rows:
            return []
        found = self.out.matches(rows, cells, position)
        # two rows with the same positions: duplicates (the brute force's automata), or ties the bindings break
        return output_order(found) if ties else found

    def _push(self, type_: str, time: float, values, position: int) -> list:
        return pushed(self.matcher, self.columns, type_, time, values, position)
