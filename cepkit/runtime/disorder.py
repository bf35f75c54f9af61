"""One out-of-order layer for every engine with an incremental matcher (docs/language.md §6, [LIU] ch. 3).

An engine declares the out-of-order modes it supports (``Engine.disorder``); those it does not run itself
(``Engine.runs_disorder``) it runs behind this layer, which keeps the engine's own matcher in order:

- ``kslack`` (``k``) and ``conservative`` (``max_delay``, one bound or one per type, and PUNCTUATION
  events) are reorder buffers. An event is released once no event that may still arrive precedes it in
  logical order (ts, then arrival position): K-slack once the largest ts seen exceeds its ts by more than
  k ([LIU] §3.5); conservative once every type the query reads is complete through its ts, by its bound or by a
  punctuation ([LIU] §3.6.1). Released events feed the engine's matcher in that order. An event arriving after a
  later one was released cannot be placed: it is dropped and its position listed in ``info["dropped"]``,
  and the result is exactly the in-order result over the stream without it.
- ``aggressive`` ([LIU] §3.6.2, by [RCEP]'s recomputation) feeds in-order arrivals straight to the matcher, which
  emits what is final in order. A late event at ts t can only change the matches whose last event lies
  within w of t (every event and every negation scope of a match with last ts L lies in [L - w, L + w]);
  their events lie in [t - 2w, ...]. So the layer restarts the matcher on the stored events from t - 2w,
  keeps what it emits for matches ending at or after t - w, and compares that with what was emitted
  there: gone matches are retracted (``sign="-"``), new ones inserted. The restarted matcher carries on
  with the next arrivals. The window bounds the work, so a query without a time window (or with an
  EVENTS window, or CONSUME BY, whose decisions chain across the stream) is refused. ``max_delay``
  (optional) bounds the stored events; a late event whose stretch was already forgotten is dropped
  and counted.

The engine sees an in-order stream whose positions are release ranks (0, 1, 2...), so its strategies,
STRICT contiguity, EVENTS windows and CONSUME BY read logical order; the layer maps the matches back to
arrival positions. Every emission carries ``sign`` and ``emitted_at`` (the arrival position after which it
was output); a batch run logs them: ``plan.deltas()`` / ``Matches.deltas``, as for the stack's own modes.
``info`` has ``peak_state`` / ``state`` (events held by the layer: buffer, or stored stretch),
``emissions``, ``dropped`` and, for aggressive, ``replays`` and ``replayed`` (events re-fed).

A batch run (``LayeredPlan.run``) of K-slack or conservative knows the whole arrival sequence: the
release order, each event's release point and the dropped events come from running maxima and searches
over columns (``release_schedule``), the engine runs once over the released events as columns (its batch
path, release ranks as positions), and each match is emitted after the arrival that released the event at
whose push the engine emits it (``released_run``). It gives what feeding the layer event by event gives
(tests/runtime/test_disorder_columns.py); ``info["layer_run"]`` says which ran ("columns" or "events").
RETURN and LIMIT, and an engine whose batch run does not say when a match waiting for a negation or
EXISTS scope comes out, go event by event. Aggressive runs so where nothing is ever retracted
(``inserted_run``): the in-order result, each match emitted after its last event to arrive.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import math
from array import array
from collections import Counter

import numpy as np

from ..errors import QueryError
from ..lang import ast as A
from ..lang.query import Query
from .delays import MaxDelay, Punctuations, delay_seconds, max_delay_option, punctuated_type, type_hierarchy
from .event_record import PUNCTUATION, Event
from .expiry import window_horizon
from .match_arrays import AT_LAST, MatchArrays
from .match_record import Match
from .registry import IncrementalPlan, Plan, engines_supporting, get_engine, query_requirements

# Features under which an event of any type can change a match (contiguity, counted windows, ANY): with
# them the conservative buffer waits for every type, without them only for the types the query names.
EVERY_TYPE_COUNTS = ("any_type", "event_window", "strategy:STRICT", "strategy:PARTITION_STRICT", "nested_strategy")
_EVERYTHING = (math.inf, math.inf)


def delay_options(mode: str, k=None, max_delay=None) -> tuple:
    """``(k, max_delay)`` parsed for ``mode`` (``runtime.delays``); TypeError for a missing or misplaced one."""
    if mode == "kslack":
        if k is None:
            raise TypeError("disorder='kslack' needs k= (the slack, a number in the ts's scale or a duration)")
        k = delay_seconds(k, "k")
    elif k is not None:
        raise TypeError(f"k= is an option of disorder='kslack', not of {mode!r}")
    if max_delay is not None:
        if mode not in ("conservative", "aggressive"):
            raise TypeError(f"max_delay= is an option of disorder='conservative' or 'aggressive', not of {mode!r}")
        max_delay = max_delay_option(max_delay)
    return k, max_delay


def aggressive_refusal(query: Query):
    """``(node, what)`` when the stretch a late event touches is not bounded in time, else None."""
    if query.consume in ("ANY", "PARTITION"):
        return (
            query.features.get("consume", query.ast),
            "CONSUME BY with disorder='aggressive' (a late "
            "event would change which later matches are consumed, without bound)",
        )
    if query.window_seconds is None:
        node = query.within if query.within is not None else query.ast
        return (
            node,
            "disorder='aggressive' without a time window: a late event is re-evaluated over the "
            "windows it can touch (WITHIN n s bounds them; an EVENTS window or none does not)",
        )
    return None


def read_types(query: Query):
    """The type names (or concepts) whose events can change a match, or None when every type can."""
    if any(feature in query.features for feature in EVERY_TYPE_COUNTS):
        return None
    names = {atom.type for atom in query.ast.pattern.find_all(A.Atom)}
    return None if None in names else frozenset(names)


def layered(engine, query: Query, mode: str, options: dict) -> "LayeredPlan":
    """The plan of ``engine`` for ``query`` behind the layer in ``mode`` (``options`` as for ``match``)."""
    options = dict(options)
    options.pop("disorder", None)
    k, max_delay = delay_options(mode, options.pop("k", None), options.pop("max_delay", None))
    if mode == "aggressive":
        refusal = aggressive_refusal(query)
        if refusal is not None:
            others = [
                e.name
                for e in engines_supporting(query_requirements(query, {"disorder": mode}))
                if e.name != engine.name and e.runs_disorder(query, mode)
            ]
            node, what = refusal
            raise QueryError.at(node, f"engine {engine.name!r} does not support {what}", query.text, engines=others)
    return LayeredPlan(engine, query, mode, k, max_delay, options)


def _unprojected(query: Query) -> Query:
    """The query without RETURN: the aggressive layer compares whole matches and projects them itself."""
    return Query(dataclasses.replace(query.ast, select=None), query.text, query.hierarchy)


class EmissionLog:
    """The log of emissions an incremental matcher keeps for a batch run (``keep_log``), and the net result
    it gives; shared by this layer and the stack engine's own out-of-order matchers. A matcher fed an
    endless stream never asks for it, so its memory does not grow with the output."""

    retracts = False  # only an aggressive mode withdraws (and may re-insert) matches
    emissions = None  # every emission in order, once ``keep_log`` asked for it

    def keep_log(self):
        self.emissions = []
        return self

    def net(self) -> list:
        """The matches emitted and not retracted."""
        if not self.retracts:
            return list(self.emissions)
        count = Counter()
        for m in self.emissions:
            count[m.key] += 1 if m.sign == "+" else -1
        return [m for m in self.emissions if m.sign == "+" and count.pop(m.key, 0) > 0]


def replay(matcher: EmissionLog, stream) -> EmissionLog:
    """Feed a finite stream through an incremental matcher in arrival order, logging every emission."""
    matcher.keep_log()
    for event in stream:
        matcher.push(event)
    matcher.close()
    return matcher


class LayeredPlan(Plan):
    """An engine's in-order plan behind the out-of-order layer. Pickles as what it was compiled from."""

    def __init__(self, engine, query: Query, mode: str, k=None, max_delay=None, options=None):
        self.engine = engine
        self.query = query
        self.mode = mode
        self.k = k
        self.max_delay = max_delay
        self.options = dict(options or {})
        self.inner = engine.compile(query, **self.options)
        if mode == "aggressive" and query.select is not None:
            self.inner = engine.compile(_unprojected(query), **self.options)
        self._last = None
        self._at_close = None

    def __getstate__(self):
        return {
            "engine": self.engine.name,
            "query": self.query,
            "mode": self.mode,
            "k": self.k,
            "max_delay": self.max_delay,
            "options": self.options,
        }

    def __setstate__(self, state):
        state = dict(state)
        self.__init__(get_engine(state.pop("engine")), **state)

    def matcher(self) -> "Layer":
        return {"kslack": KSlackLayer, "conservative": ConservativeLayer, "aggressive": AggressiveLayer}[self.mode](
            self
        )

    def run(self, stream) -> list:
        """The net matches over a finite stream, fed through the layer in arrival order (``deltas()`` then
        lists every emission). K-slack and conservative run as columns where the emission of each match is
        known from its events (``released_run``): what feeding the layer event by event gives."""
        if self.columnar_refusal() is None and numbered_in_arrival_order(stream):
            if self.mode == "aggressive":
                self._last = inserted_run(self, stream)
            else:
                schedule = release_schedule(stream, self.mode, self.k, self.query, self.max_delay)
                self._last = released_run(
                    stream, schedule, self.inner.run, self.answers_at_close, self.waits_for_scopes()
                )
            if self._last is not None:
                return self._last.matches
        self._last = replay(self.matcher(), stream)
        return self._last.net()

    def answers_at_close(self) -> bool:
        """Whether the engine's matcher for this query emits only at close (``IncrementalPlan``)."""
        if self._at_close is None:
            self._at_close = bool(getattr(self.inner.matcher(), "answers_at_close", False))
        return self._at_close

    def columnar_refusal(self):
        """Why a batch run of this buffered mode goes event by event (None: it runs as columns,
        ``released_run``): RETURN emits a projection with its first match (the engine's run gives the
        projections only), LIMIT cuts the result in arrival order (the engine's run would cut in release
        order)."""
        if "projection" in self.query.features:
            return "RETURN"
        if self.query.ast.limit is not None:
            return "LIMIT"
        return None

    def waits_for_scopes(self) -> bool:
        """Whether a match may be emitted after its last event (a negation or EXISTS scope may trail it)."""
        return any(f in self.query.features for f in ("negation", "exists", "nested_negation"))

    def deltas(self) -> list:
        return list(self._last.emissions) if self._last is not None else []

    def info(self) -> dict:
        facts = {**self.inner.info(), "disorder": self.mode, "disorder_layer": True}
        if self._last is not None:
            facts.update(self._last.info())
        return facts


def numbered_in_arrival_order(stream) -> bool:
    """Whether the stream's positions increase with arrival and it has a ts column (the columnar run compares
    (ts, position) keys by ts and arrival, and hands the engine release ranks as positions)."""
    if getattr(stream, "_ts", None) is None:
        return False
    positions = stream.positions
    return bool(len(positions) < 2 or (positions[1:] > positions[:-1]).all())


def release_schedule(stream, mode: str, k=None, query=None, max_delay=None) -> tuple:
    """The buffered modes over a whole arrival sequence, as columns (``mode`` "kslack" with ``k``, or
    "conservative" with the ``query``'s read types and ``max_delay``): ``(released, release_at, dropped,
    peak)``. ``released`` are the indices of the events in the order the buffer releases them (by ts, then
    arrival: the released keys only grow, an event below the last released one being dropped), ``release_at``
    the arrival index after which each is released (``len(stream)``: at close), ``dropped`` the indices
    of the dropped events, ``peak`` the buffer's peak size (as ``_Buffer.release`` measures it).

    The bound after arrival i only grows: K-slack's is the largest ts so far (a running max) minus k, an
    event released once its ts is below it; conservative's the smallest over the types the query reads of
    max(largest ts − the type's delay bound, the type's punctuation frontier), an event released once its
    ts is at or below it. An event's release point is the first arrival from its own on where the bound
    passes it (a search over the running bound). An event is dropped when an earlier arrival released
    before it came has a larger ts (equal ts: the earlier arrival is the smaller key)."""
    n = len(stream)
    times = stream.times
    punct = stream.type_in({PUNCTUATION})
    events = ~punct
    clock = np.maximum.accumulate(np.where(events, times, -np.inf)) if n else np.zeros(0)
    if mode == "kslack":
        first = np.searchsorted(clock, times + k, side="right")  # clock - k > ts
        calls = events
    else:
        bound = conservative_bound(stream, query, max_delay, clock, punct)
        first = np.searchsorted(bound, times, side="left")  # bound >= ts
        calls = np.ones(n, bool)  # every arrival but a dropped event releases (punctuations too)
    at = np.maximum(first, np.arange(n))
    at[punct] = n
    # the largest ts released up to each arrival: an arrival below the one before it is dropped
    top = np.full(n + 1, -np.inf)
    np.maximum.at(top, at[events], times[events])
    top = np.maximum.accumulate(top[:n])
    dropped = events.copy()
    dropped[0:1] = False
    dropped[1:] &= times[1:] < top[:-1]
    kept = events & ~dropped
    calls = calls & ~dropped
    index = np.flatnonzero(kept)
    released = index[np.argsort(times[index], kind="stable")]
    release_at = at[released]
    peak = 0
    if calls.any():
        held = np.cumsum(kept) - np.r_[0, np.cumsum(np.bincount(release_at, minlength=n + 1))[: n - 1]]
        peak = int(held[calls].max())
    return released, release_at, np.flatnonzero(dropped), peak


def conservative_bound(stream, query: Query, max_delay, clock: np.ndarray, punct: np.ndarray) -> np.ndarray:
    """Conservative's release bound after each arrival (``ConservativeLayer.bound``'s ts), as a column."""
    hierarchy = type_hierarchy(query)
    delays = MaxDelay(max_delay, hierarchy)
    closers = Punctuations(hierarchy)
    names = read_types(query)
    where = np.flatnonzero(punct)
    of = np.asarray([punctuated_type(e) for e in stream.take(where)], dtype=object)
    bound = np.full(len(clock), np.inf)
    for name in (None,) if names is None else names:
        closing = np.full(len(clock), -np.inf)
        mine = np.isin(of, list(closers.closers(name))) if len(where) else np.zeros(0, bool)
        closing[where[mine]] = stream.times[where[mine]]
        bound = np.minimum(bound, np.maximum(clock - delays.of(name), np.maximum.accumulate(closing)))
    return bound


def inserted_run(plan: LayeredPlan, stream):
    """Aggressive over a whole arrival sequence as columns, where no emission is ever retracted: a query
    without negation or EXISTS under ALL (a late event only adds matches), no event beyond ``max_delay``'s
    reach (none dropped), an engine that emits a match at its last event. Each replay then re-finds every
    live match of its stretch and adds those the late event completes, so every match of the in-order
    result is emitted once, after its last event to arrive (at close for an engine that answers there).
    None for the others (the layer runs event by event). ``info``: ``peak_state`` the stored events' peak
    (as the layer forgets them), ``replays`` and ``replayed`` 0 (nothing is re-fed)."""
    query = plan.query
    if plan.waits_for_scopes() or any(f.startswith("strategy:") or f == "nested_strategy" for f in query.features):
        return None
    layer = AggressiveLayer(plan)  # its reach and margins, not fed
    events = np.flatnonzero(~stream.type_in({PUNCTUATION}))
    times = stream.times[events]
    clock = np.maximum.accumulate(times) if len(times) else times
    before = np.r_[-np.inf, clock[:-1]]
    w = layer.window
    if layer.reach < math.inf and len(times):

        def low(t):  # what the layer compares with its forgotten bound: x - 2w - 2 margin(x), increasing
            return t - 2 * w - 2e-6 * np.maximum(np.maximum(1.0, w), np.abs(t))

        if (low(times[1:]) < low(before[1:]) - layer.reach).any():
            return None  # an event beyond the reach may be dropped, depending on what was forgotten when
    released = events[np.argsort(times, kind="stable")]
    found = plan.inner.run(stream.take(released).numbered(np.arange(len(released))))
    ranked = found if isinstance(found, MatchArrays) else MatchArrays.from_matches(list(found))
    if len(ranked) and ranked._emitted_at is not None:
        last_rank = np.maximum.reduceat(ranked.positions, ranked.offsets[:-1])
        told = ranked._emitted_at
        # emitted after its last event (a window closing later), or maybe at close (the last rank's)
        if (told != last_rank).any() or (told == len(released) - 1).any():
            return None
    if len(ranked) and plan.answers_at_close():
        matches = to_arrival(
            ranked, stream.position_of(released), np.full(len(ranked), stream.position_of(len(stream) - 1))
        )
    else:
        matches = to_arrival(ranked, stream.position_of(released), AT_LAST)
    peak = len(events) if layer.reach == math.inf or layer.at_close else _stored_peak(layer, times, clock)
    out = ReleasedRun(matches, np.argsort(matches.emitted_at, kind="stable"), np.zeros(0, np.int64), peak)
    out.facts = {"layer_run": "columns", "replays": 0, "replayed": 0}
    return out


def _stored_peak(layer: "AggressiveLayer", times: np.ndarray, clock: np.ndarray) -> int:
    """The aggressive layer's peak of stored events when it forgets (``AggressiveLayer.forget``): after each
    arrival it drops the stored events below its reach once they are more than 64 and half the store."""
    w, reach, margin = layer.window, layer.reach, layer.margin
    stored: list = []
    peak = 0
    for t, now in zip(times.tolist(), clock.tolist()):
        bisect.insort(stored, t)
        peak = max(peak, len(stored))
        m = margin(now)
        cut = bisect.bisect_left(stored, now - reach - w - m - w - m)
        if cut > 64 and cut * 2 > len(stored):
            del stored[:cut]
    return peak


def broken_promises(stream, query: Query, max_delay, punctuations: bool = True) -> np.ndarray:
    """Which events break a promise when they arrive, as a mask (the stack engine's own conservative and
    aggressive modes drop them): a ts below the largest ts so far (of the events kept) minus the type's
    ``max_delay``, or, with ``punctuations``, at or below a punctuation of its type that came first."""
    n = len(stream)
    hierarchy = type_hierarchy(query)
    delays = MaxDelay(max_delay, hierarchy)
    times, codes = stream.times, stream.type_codes
    punct = stream.type_in({PUNCTUATION})
    events = ~punct
    late = np.zeros(n, bool)
    where = np.flatnonzero(punct) if punctuations else np.zeros(0, np.int64)
    if len(where):
        of = np.asarray([punctuated_type(e) for e in stream.take(where)], dtype=object)
        closers = Punctuations(hierarchy)
        for code, name in enumerate(stream.type_names):
            mine = np.isin(of, list(closers.closers(name)))
            frontier = np.full(n, -np.inf)
            frontier[where[mine]] = times[where[mine]]
            frontier = np.r_[-np.inf, np.maximum.accumulate(frontier)[:-1]]  # before each arrival
            late |= events & (codes == code) & (times <= frontier)
    clock = np.maximum.accumulate(np.where(events & ~late, times, -np.inf)) if n else np.zeros(0)
    bound = np.asarray([delays.of(name) for name in stream.type_names], float)[codes] if n else np.zeros(0)
    before = np.r_[-np.inf, clock[:-1]] if n else clock
    return events & (late | (times < before - bound))


def released_run(stream, schedule: tuple, run, at_close=lambda: False, waits: bool = False, close_at=None):
    """A buffered mode's batch run as columns, or None where it cannot tell the emissions (then the caller
    feeds its matcher event by event). ``schedule`` is ``release_schedule``'s; ``run`` the engine's batch
    run, given the released events numbered by release rank; the matches come back with arrival positions.
    A match is emitted after the arrival that released the event at whose push the engine emits it: its
    last event, or the one the engine's batch run names (``emitted_at``: a window or scope closing later);
    one emitted at the engine's close (or released there) after the last arrival (``close_at``: the
    position the caller's close reports; by default the last arrival's). ``at_close()``: the engine emits
    everything at close. ``waits``: a match may wait for a negation or EXISTS scope, so the engine's run
    must name every emission."""
    released, release_at, dropped, peak = schedule
    ranked = stream.take(released).numbered(np.arange(len(released)))
    found = run(ranked)
    ranked_matches = found if isinstance(found, MatchArrays) else MatchArrays.from_matches(list(found))
    n, m = len(stream), len(released)
    if len(ranked_matches):
        close_at = int(stream.position_of(n - 1)) if close_at is None else close_at
        at = np.r_[stream.position_of(np.arange(n)), close_at]  # arrival index (n: close) -> position
    if not len(ranked_matches):
        emitted = emission_rank = np.zeros(0, np.int64)
    elif at_close():
        emission_rank = np.full(len(ranked_matches), m, np.int64)
        emitted = np.full(len(ranked_matches), close_at, np.int64)
    else:
        last_rank = np.maximum.reduceat(ranked_matches.positions, ranked_matches.offsets[:-1])
        told = ranked_matches._emitted_at  # None: each at its last event
        if told is None:
            emission_rank = last_rank
        else:
            if (told < 0).any() and waits:
                return None
            emission_rank = np.where(told >= 0, told, last_rank)
        # the engine's last push and its close give the same rank, m - 1: they differ only when the last
        # ranked event was released before the last arrival (a dropped event or a punctuation after it)
        if release_at[m - 1] < n and at[release_at[m - 1]] != close_at:
            at_end = emission_rank == m - 1
            if at_end.any() and (waits or (last_rank[at_end] != m - 1).any()):
                return None
        emitted = at[release_at[emission_rank]]
    matches = to_arrival(ranked_matches, stream.position_of(released), emitted)
    return ReleasedRun(matches, np.argsort(emission_rank, kind="stable"), stream.position_of(dropped), peak)


class ReleasedRun:
    """The result of ``released_run``, read as the layer's log is (``emissions``, ``info``)."""

    retracts = False

    def __init__(self, matches: MatchArrays, emission_order: np.ndarray, dropped: np.ndarray, peak: int):
        self.matches = matches
        self.emission_order = emission_order
        self.dropped = dropped
        self.peak_state = peak
        self.facts = {"layer_run": "columns"}  # how the run went, for ``info``

    @property
    def emissions(self) -> list:
        """Every emission in order: release rank of the match's last event, then the engine's order."""
        return list(self.matches.take(self.emission_order))

    def info(self) -> dict:
        return {
            "peak_state": self.peak_state,
            "state": 0,
            "emissions": len(self.matches),
            "dropped": self.dropped.tolist(),
            **self.facts,
        }


def to_arrival(ranked: MatchArrays, arrival: np.ndarray, emitted: np.ndarray) -> MatchArrays:
    """``ranked``'s rows with release ranks replaced by arrival positions: each row's positions sorted again,
    bindings kept in their order (a Kleene tuple lists its events in logical order, as the layer does)."""
    positions = arrival[ranked.positions]
    offsets = ranked.offsets
    if len(positions) > 1:
        down = np.flatnonzero(positions[1:] < positions[:-1]) + 1
        if len(down) and not np.isin(down, offsets).all():
            row = np.repeat(np.arange(len(ranked)), offsets[1:] - offsets[:-1])
            positions = positions[np.lexsort((positions, row))]
    bound = ranked.bound_positions
    bound = np.where(bound >= 0, arrival[np.maximum(bound, 0)], -1) if len(bound) else bound
    return MatchArrays(
        offsets,
        positions,
        ranked.bound_offsets,
        bound,
        ranked.bound_variables,
        ranked.names,
        ranked.kleene,
        emitted,
    )


class Layer(EmissionLog, IncrementalPlan):
    """What the modes share: the engine's matcher fed in logical order with release ranks as positions,
    the matches mapped back to arrival positions, the log of emissions."""

    def __init__(self, plan: LayeredPlan):
        self.plan = plan
        self.emitted = 0
        self.dropped: list = []
        self.last_position = -1
        self.peak_state = 0
        self.restart()

    def restart(self) -> None:
        """A fresh matcher of the engine, fed from rank 0."""
        self.inner = self.plan.inner.matcher()
        self.first_rank = 0  # the ranks below it were forgotten (``trim``)
        self.arrival = array("q")  # release rank - first_rank -> arrival position
        self.times = array("d")  # release rank - first_rank -> time

    def feed(self, event) -> list:
        """Give the matcher the next event in logical order; its matches as (Match, ts of the last event)."""
        rank = self.first_rank + len(self.arrival)
        self.arrival.append(event.position)
        self.times.append(event.time)
        found = self.restore(self.inner.push(Event(event.type, event.ts, event.attrs, rank, event.time)))
        self.trim(event.time)
        return found

    def trim(self, now: float) -> None:
        """Forget the ranks of events more than twice a time window before ``now``: from now on the matcher
        emits matches whose events are no earlier than now − w (it reports a match waiting for a trailing
        scope at the latest at the first event past its window). Done when they are half the arrays, so
        the cost per event is constant. Under an EVENTS window or none, a match may hold any earlier
        event of its key, and a matcher that answers only at close may name any event: every rank is kept."""
        w = self.plan.query.window_seconds
        if w is None or self.inner.answers_at_close:
            return
        cut = bisect.bisect_left(self.times, window_horizon(now, 2 * w))
        if cut > 64 and 2 * cut > len(self.times):
            del self.arrival[:cut], self.times[:cut]
            self.first_rank += cut

    def finish(self) -> list:
        return self.restore(self.inner.close())

    def restore(self, found: list) -> list:
        arrival, times, first, at = self.arrival, self.times, self.first_rank, self.emitted_at
        out = []
        for m in found:
            if m.positions and m.positions[0] < first:  # never expected: a negative index would be silently wrong
                raise RuntimeError(
                    f"the out-of-order layer forgot rank {m.positions[0]} of a match the engine "
                    f"emitted at arrival {at} (ranks below {first} were dropped)"
                )
            bindings = {
                v: tuple(arrival[p - first] for p in x) if isinstance(x, tuple) else arrival[x - first]
                for v, x in m.bindings.items()
            }
            out.append(
                (
                    Match(tuple(sorted(arrival[p - first] for p in m.positions)), bindings, m.sign, at),
                    max(times[p - first] for p in m.positions),
                )
            )
        return out

    @property
    def emitted_at(self):
        return self.last_position if self.last_position >= 0 else None

    def log(self, matches: list) -> list:
        self.emitted += len(matches)
        if self.emissions is not None:
            self.emissions.extend(matches)
        return matches

    def state_size(self) -> int:
        return 0

    def info(self) -> dict:
        return {
            "peak_state": max(self.peak_state, self.state_size()),
            "state": self.state_size(),
            "emissions": self.emitted,
            "dropped": list(self.dropped),
            "layer_run": "events",
        }


class _Buffer(Layer):
    """A reorder buffer: events wait in a heap keyed by (ts, position) until ``bound()`` passes them."""

    def __init__(self, plan: LayeredPlan):
        super().__init__(plan)
        self.clock = -math.inf
        self.buffer: list = []
        self.released = (-math.inf, -1)

    def arrive(self, event) -> list:
        key = (event.time, event.position)
        if key < self.released:  # a later event was released already: this one cannot be placed
            self.dropped.append(event.position)
            return []
        self.clock = max(self.clock, event.time)
        heapq.heappush(self.buffer, (key, event))
        return self.release(self.bound())

    def release(self, bound: tuple) -> list:
        """Feed every buffered event with (ts, position) below ``bound``, in order."""
        out, buffer = [], self.buffer
        self.peak_state = max(self.peak_state, len(buffer))
        while buffer and buffer[0][0] < bound:
            key, event = heapq.heappop(buffer)
            self.released = key
            out += self.feed(event)
        return self.log([m for m, _ in out])

    def close(self) -> list:
        return self.release(_EVERYTHING) + self.log([m for m, _ in self.finish()])

    def state_size(self) -> int:
        return len(self.buffer)


class KSlackLayer(_Buffer):
    """K-slack ([LIU] §3.5): an event waits until the largest ts seen exceeds its ts by more than k."""

    def push(self, event) -> list:
        self.last_position = event.position
        return [] if event.type == PUNCTUATION else self.arrive(event)

    def bound(self) -> tuple:
        return (self.clock - self.plan.k, -math.inf)


class ConservativeLayer(_Buffer):
    """Conservative ([LIU] §3.6.1): an event waits until every type the query reads is complete through its ts,
    by ``max_delay`` (future events of type T have ts >= clock - max_delay[T]) or by a punctuation."""

    def __init__(self, plan: LayeredPlan):
        super().__init__(plan)
        hierarchy = type_hierarchy(plan.query)
        self.delays = MaxDelay(plan.max_delay, hierarchy)
        self.punctuations = Punctuations(hierarchy)
        names = read_types(plan.query)
        self.names = (None,) if names is None else tuple(names)

    def push(self, event) -> list:
        self.last_position = event.position
        if event.type == PUNCTUATION:
            self.punctuations.punctuate(punctuated_type(event), event.time)
            return self.release(self.bound())
        return self.arrive(event)

    def bound(self) -> tuple:
        complete = min(max(self.clock - self.delays.of(name), self.punctuations.frontier(name)) for name in self.names)
        return (complete, math.inf)


class AggressiveLayer(Layer):
    """Aggressive ([LIU] §3.6.2) by recomputation: see the module docstring."""

    retracts = True

    def __init__(self, plan: LayeredPlan):
        super().__init__(plan)
        query = plan.query
        self.window = query.window_seconds
        self.select = query.select
        hierarchy = type_hierarchy(query)
        self.delays = MaxDelay(plan.max_delay, hierarchy)
        names = read_types(query)
        self.reads = (
            None
            if names is None
            else frozenset().union(*(hierarchy.covers(n) if hierarchy is not None else {n} for n in names))
        )
        self.reach = self.delays.worst(names) if names is not None else self.delays.of(None)
        self.at_close = getattr(self.inner, "answers_at_close", False)
        self.keys: list = []  # the stored events' (ts, position), sorted
        self.events: list = []  # the stored events, in the same order
        self.forgotten = -math.inf  # events with ts below this were dropped from the store
        self.clock = -math.inf
        self.horizon = (-math.inf, -1)
        self.floor = -math.inf  # the matcher's matches ending before this lack their left context
        self.live: dict = {}  # whole-match key -> (Match, ts of its last event): emitted, not retracted
        self.shown: dict = {}  # under RETURN: projected key -> [live matches behind it, latest ts]
        self.replays = self.replayed = self.pushes = 0

    def margin(self, time: float) -> float:
        """Room for the engines' float tolerance on window bounds (a wider stretch never changes a result)."""
        return 1e-6 * max(1.0, self.window, abs(time))

    def push(self, event) -> list:
        self.last_position = event.position
        if event.type == PUNCTUATION:
            return []
        t = event.time
        if t - 2 * self.window - 2 * self.margin(t) < self.forgotten:  # its stretch is no longer stored
            self.dropped.append(event.position)
            return []
        key = (t, event.position)
        late = key < self.horizon
        at = bisect.bisect(self.keys, key)
        self.keys.insert(at, key)
        self.events.insert(at, event)
        self.horizon = max(self.horizon, key)
        self.clock = max(self.clock, t)
        self.pushes += 1
        self.peak_state = max(self.peak_state, len(self.events))
        if self.at_close:
            out = []
        elif not late:
            out = self.accept(self.feed(event))
        elif self.reads is not None and event.type not in self.reads:
            out = []  # no match can read it; the matcher never needs it either
        else:
            out = self.replay(t)
        self.forget()
        return self.log(out)

    def accept(self, found: list) -> list:
        out = []
        for m, last in found:
            if last >= self.floor and m.key not in self.live:
                self.live[m.key] = (m, last)
                out += self.show(m, "+", last)
        return out

    def replay(self, t: float) -> list:
        """Re-run the matcher over the stretch a late event at ``t`` touches; emit the difference."""
        margin = self.margin(t)
        self.floor = t - self.window - margin
        start = bisect.bisect_left(self.keys, (t - 2 * self.window - 2 * margin, -math.inf))
        self.restart()
        fresh = {}
        for event in self.events[start:]:
            for m, last in self.feed(event):
                if last >= self.floor:
                    fresh[m.key] = (m, last)
        self.replays += 1
        self.replayed += len(self.events) - start
        out = []
        for key in [key for key, (_, last) in self.live.items() if last >= self.floor and key not in fresh]:
            m, last = self.live.pop(key)
            out += self.show(m, "-", last)
        for key, (m, last) in fresh.items():
            if key not in self.live:
                self.live[key] = (m, last)
                out += self.show(m, "+", last)
        return out

    def show(self, m: Match, sign: str, last: float) -> list:
        """The emission of a whole match's change, projected under RETURN: a projected match is inserted
        with its first whole match and retracted with its last (docs/language.md §10.2)."""
        at = self.emitted_at
        if self.select is None:
            return [Match(m.positions, m.bindings, sign, at)]
        bindings = {v: x for v, x in m.bindings.items() if v in self.select}
        positions = tuple(sorted({p for x in bindings.values() for p in (x if isinstance(x, tuple) else (x,))}))
        if not positions:
            return []
        projected = Match(positions, bindings, sign, at)
        entry = self.shown.setdefault(projected.key, [0, last])
        entry[0] += 1 if sign == "+" else -1
        entry[1] = max(entry[1], last)
        changed = entry[0] == (1 if sign == "+" else 0)
        return [projected] if changed else []

    def forget(self) -> None:
        """With ``max_delay``, drop what no admissible late event can reach: stored events before the
        earliest stretch, and emitted matches no stretch can retract."""
        if self.reach == math.inf or self.at_close:
            return
        w, margin = self.window, self.margin(self.clock)
        oldest = self.clock - self.reach - w - margin  # the earliest floor of a future replay
        cut = bisect.bisect_left(self.keys, (oldest - w - margin, -math.inf))
        if cut > 64 and cut * 2 > len(self.keys):
            self.forgotten = oldest - w - margin
            del self.keys[:cut], self.events[:cut]
        if len(self.live) > 64 and self.pushes % 64 == 0:
            self.live = {k: v for k, v in self.live.items() if v[1] >= oldest}
            self.shown = {k: v for k, v in self.shown.items() if v[1] >= oldest - w}

    def close(self) -> list:
        if self.at_close:
            self.restart()
            for event in self.events:
                self.feed(event)
        return self.log(self.accept(self.finish()))

    def state_size(self) -> int:
        return len(self.events)

    def info(self) -> dict:
        return {**super().info(), "replays": self.replays, "replayed": self.replayed}
