"""``SesMatcher``'s per-event step for ``cepkit.Matcher.pusher`` (issue 23): the kept events as growing
arrays, the kernel called only when an event closes a window that may hold a match.

A push of ``SesMatcher`` enters the event into its window's ``Entry`` deque and, when a window closes,
runs the SES automaton over it in Python. ``SesStep`` keeps the events the open windows hold (those some
variable's properties take, Thm 5.1, in arrival order) in preallocated numpy arrays: the time, the mask
of the variables it fits, its window key's code (PARTITION BY, then X), its position, and the join and
chain keys (``conjuncts.key_columns``' rows, read from the event's values). An event first closes the
windows whose W[0] lies more than τ before it (any event, punctuation too, as ``SesMatcher._expire``
does); when one of those W[0]s fits a variable of the first set (5.2, else its window holds no match),
one ``kernel.close_windows`` call runs them over the kept events, and their matches are this event's.
The closed W[0]s leave the arrays (the later windows start after them), so the arrays hold at most a
window span of events; they are compacted when half of them have left.

It runs the plans the kernel runs (``batch.Layout``) under a time window or none (``WITHIN n EVENTS``
keeps the push: its clocks are per sub-stream) whose join and chain keys are attributes (``x.v <
y.v``, not ``x.v + 1 < y.v``); an event whose key is not a number (the kernel would not take the stream)
hands its state back and pushes from then on. Before any other call reads the open windows
(``push``, ``extend``, ``close``, another pusher) the step hands them to the matcher as its columnar
tail (``SesMatcher._tail``), and takes them back from there at its next event: at most a window span of
events each way.
"""

from __future__ import annotations

import math

import numpy as np

from ...lang import ast as A
from ...lang.window import TimeLimit
from ...runtime.attribute_columns import hashable_key
from ...runtime.event_record import PUNCTUATION, _is_null, values_event, values_key
from ...runtime.match_record import output_order
from ...runtime.stream import Stream
from ..compiled import grow
from .kernel import STAT_EVALUATED, STAT_MAX_WINDOW, close_windows
from ..conjuncts import NotAKey, key_rows, key_value
from ..kept import kept_events, pushed, rows_as_matches, widened, write_keys

SIZE = 64


def runs(plan) -> bool:
    """Whether ``SesStep`` runs ``plan`` (the module docstring)."""
    if plan.layout is None or plan.events_window:
        return False
    exprs, _ = key_rows(plan.layout.joins, plan.layout.chains)
    return all(isinstance(expr, A.Attr) and expr.attr not in ("ts", "type") for expr in exprs)


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
        self.by_type: dict = {}  # type -> the variables it fits (no property conditions), or None
        self.typed = not any(plan._properties)
        at = {name: i for i, name in enumerate(columns)}
        exprs, ids = key_rows(layout.joins, layout.chains)
        self.key_names = [expr.attr for expr in exprs]
        self.key_at = [at.get(name) for name in self.key_names]
        keyed = tuple(plan.query.partition_by) + tuple(plan.partition_attributes)
        self.x_at = [at.get(a) for a in plan.partition_attributes]
        self.partition_key = values_key([(name, at.get(name)) for name in plan.query.partition_by]) if keyed else None
        self.codes: dict = {}
        self.params = np.array(
            [
                plan.first_set,
                plan.two_phase,
                plan.strategy in (None, "ALL"),
                plan.strategy == "ROBUST_STNM",
                plan.lookahead,
                bool(keyed),
            ],
            dtype=np.int64,
        )
        self.moves, self.final = layout.moves, layout.final
        self.joins = np.array([*layout.slots, ids[0], ids[1]], dtype=np.int64).reshape(5, len(layout.joins))
        self.chains = np.array([*layout.chain_slots, ids[2], ids[3]], dtype=np.int64).reshape(4, len(layout.chains))
        names = plan.variables
        visible = set(plan.visible)
        kleene = plan.pattern.kleene
        self.names = [name if name in visible else None for name in names]
        self.kleene = [name in kleene for name in names]
        self.plain = all(name in visible and name not in kleene for name in names)
        self.finite = math.isfinite(self.span)
        self.limit = TimeLimit(self.span if self.finite else 0.0)
        self.permutations = plan.automaton_kind == "permutations"  # (a match may come from two automata)
        self.active = False
        self.usable = True
        self._reset(SIZE)

    # ------------------------------------------------------------------ state
    def _reset(self, size: int) -> None:
        self.coord = np.zeros(size)
        self.ints = np.zeros((3, size), dtype=np.int64)  # variable mask, window key code, position
        self.kval = np.zeros((len(self.key_at), size))
        self.kok = np.zeros((len(self.key_at), size), dtype=bool)
        self.rows: list = []  # per kept event: an Event, or (type, time, values, position)
        self.lo = self.n = 0
        self.starts: list = []  # the indices of the kept events that are a W[0] still open, in order

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
                    kept.append((event, at, plan.vars_of(event), self._code_of_event(event), keys))
            except (NotAKey, TypeError):
                self.usable = False
                return False
        m._tail, m._tail_coord = None, np.zeros(0)
        self._reset(SIZE)
        self.last_position, self.now = m.last_position, m._now
        for event, at, fits, code, keys in kept:
            if self.starts or fits & self.first_set or not self.two_phase:
                self._keep(event, at, fits, code, event.position, keys, count=False)
        m.stepping = self
        self.active = True
        return True

    def hand_back(self) -> None:
        """The kept events to the matcher, as its columnar tail (``SesMatcher._tail``)."""
        m = self.matcher
        lo, n = self.lo, self.n
        events = kept_events(self.columns, self.rows[lo:n])
        m._tail = Stream(events) if events else None
        m._tail_coord = self.coord[lo:n].copy()
        m.last_position, m._now = self.last_position, self.now
        m.stepping = None
        self.active = False
        self._reset(SIZE)

    def _code_of_event(self, event) -> int:
        """The code of an Event's window key (``SesMatcher._enter``'s, as ``__call__`` reads values)."""
        plan = self.plan
        key = tuple(event.get(a) for a in plan.query.partition_by) + tuple(
            hashable_key(event.get(a)) for a in plan.partition_attributes
        )
        return self.codes.setdefault(key, len(self.codes))

    def _keep(self, row, coord: float, fits: int, code: int, position: int, keys: list, count: bool = True) -> None:
        """Append a kept event: ``row`` an Event or (type, time, values, position), ``keys`` its key values
        (None: missing); ``count``: a new window for the matcher's statistics."""
        n = self.n
        if n == len(self.coord):
            self._room()
            n = self.n
        write_keys(self.kval, self.kok, n, keys)
        self.coord[n] = coord
        ints = self.ints
        ints[0, n], ints[1, n], ints[2, n] = fits, code, position
        self.rows.append(row)
        if fits & self.first_set or not self.two_phase:
            if not self.starts:
                self.lo = n
            self.starts.append(n)
        self.n = n + 1
        if count:
            self.matcher.opened += 1

    def _room(self) -> None:
        """Room for one more event: the events before ``lo`` dropped, or the arrays doubled."""
        lo, n = self.lo, self.n
        if lo >= n // 2 and lo:
            keep = n - lo
            self.coord[:keep] = self.coord[lo:n]
            self.ints[:, :keep] = self.ints[:, lo:n]
            self.kval[:, :keep] = self.kval[:, lo:n]
            self.kok[:, :keep] = self.kok[:, lo:n]
            del self.rows[:lo]
            self.starts = [s - lo for s in self.starts]
            self.lo, self.n = 0, keep
            return
        size = 2 * len(self.coord)
        self.coord = grow(self.coord, size)
        self.ints, self.kval, self.kok = (widened(a, n, size) for a in (self.ints, self.kval, self.kok))

    # ------------------------------------------------------------------ the step
    def __call__(self, type_: str, time: float, values, position: int) -> list:
        if not self.active:
            if not self.usable or not self._take_over():
                return self._push(type_, time, values, position)
        keep = False
        if type_ != PUNCTUATION:
            fits = self.by_type.get(type_) if self.typed else None
            if fits is None:
                fits = self._fits(type_, time, values, position)
            keep = fits != 0 or not self.two_phase
        if keep:
            try:
                keys = [None if i is None else key_value(values[i]) for i in self.key_at]
                code = 0
                if self.partition_key is not None:
                    x = [None if i is None or _is_null(values[i]) else values[i] for i in self.x_at]
                    if None in x:  # a null on X joins nothing (``batch.Columns``)
                        keep = False
                    else:
                        key = self.partition_key(type_, time, values) + tuple(map(hashable_key, x))
                        code = self.codes.get(key)
                        if code is None:
                            code = self.codes[key] = len(self.codes)
            except (NotAKey, TypeError):  # not a number the kernel takes, or an unhashable key
                self.usable = False
                self.hand_back()
                return self._push(type_, time, values, position)
        self.last_position = position
        if time > self.now:
            self.now = time
        found = []
        starts = self.starts
        if starts and self.finite:
            if time - self.coord[starts[0]] > self.limit.at(time):
                found = self._close(time, position)
        if keep and (starts or fits & self.first_set or not self.two_phase):  # (else in no open window)
            self._keep((type_, time, values, position), time, fits, code, position, keys)
        return found

    def _fits(self, type_: str, time: float, values, position: int) -> int:
        fits = self.plan.vars_of(values_event(self.columns, type_, time, values, position))
        if self.typed:
            self.by_type[type_] = fits
        return fits

    def _close(self, time: float, position: int) -> list:
        """Evaluate the windows this event closes (those of the W[0]s more than τ before it); their matches."""
        coord, starts, limit = self.coord, self.starts, self.limit.limit
        closed = 0
        while closed < len(starts) and time - coord[starts[closed]] > limit:
            closed += 1
        hi = starts[closed - 1] + 1
        del starts[:closed]
        lo, n = self.lo, self.n
        self.lo = starts[0] if starts else n
        offsets, positions, variables, _, stats = close_windows(
            coord,
            self.ints,
            self.kval,
            self.kok,
            lo,
            hi,
            n,
            float(self.span),
            self.params,
            self.moves,
            self.final,
            self.joins,
            self.chains,
        )
        m = self.matcher
        m.evaluated += int(stats[STAT_EVALUATED])
        m.max_window = max(m.max_window, int(stats[STAT_MAX_WINDOW]))
        if len(offsets) < 2:
            return []
        found = rows_as_matches(
            offsets.tolist(), positions.tolist(), variables.tolist(), self.names, self.kleene, self.plain, position
        )
        if len(found) > 1:  # output order (docs/language.md §10.2): by last position, then positions
            found.sort(key=_last_then_positions)
            if self.permutations or any(a.positions == b.positions for a, b in zip(found, found[1:])):
                return output_order(found)  # (duplicates, or ties broken by the bindings)
        return found

    def _push(self, type_: str, time: float, values, position: int) -> list:
        return pushed(self.matcher, self.columns, type_, time, values, position)


def _last_then_positions(match) -> tuple:
    return match.positions[-1], match.positions
