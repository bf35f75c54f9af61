"""How the stacks meet a stream: in order, and the three out-of-order modes ([LIU] ch. 3).

Each mode is an ``IncrementalPlan``: ``push`` takes the next arrival, ``close`` says the stream is
complete. Each emission is a ``Match`` with ``sign`` and ``emitted_at``; a batch run logs them
(``keep_log``: ``emissions``), an incremental matcher only returns them.

============  ==============================================================================  ============
mode          what it does                                                                   correctness
============  ==============================================================================  ============
``reject``    events arrive in (ts, position) order; a trailing negation waits for its scope  full
``kslack``    buffer events K behind the largest ts, release them in order to ``reject``      delayed
              ([LIU] §3.5); an event later than K is dropped and listed in ``dropped``
``conservative``  build at once, hold a match until every negation scope is complete          delayed
              ([LIU] §3.6.1): from ``max_delay`` (one bound, or one per type) or PUNCTUATION events;  unsorted
              purge by the window and Alg. 2; output only once safe
``aggressive``    emit at once; a late negative retracts (``-``) what it blocks, a late         convergent
              positive inserts (``+``); [LIU] §3.6.2
============  ==============================================================================  ============

Whatever the mode, once the stream is complete the net output equals the in-order result over the
stream sorted by (ts, position) (docs/language.md §6); K-slack only when K covers every delay.

A batch run (``StackPlan.run``) knows every arrival and gives these matchers' emissions from columns where
it can: K-slack as the columnar run over the released events (``runtime.disorder.release_schedule``),
conservative and aggressive without a negation, EXISTS or RETURN as the columnar run over the events kept,
each match emitted at its last event to arrive (late insertion builds it then, and nothing holds or
retracts it). The others replay the arrivals through these matchers.

Choices where [LIU] ch. 3 is silent (all of them in ``docs/stack-engine.md``):

- ``max_delay`` is one bound for every type (docs/language.md §6) or, an extension, a mapping from type (or
  concept, or ``"*"`` for the others) to its own bound (``cepkit.runtime.delays.MaxDelay``): a type the mapping does not
  bound is completed by punctuations only; a concept's bound is the largest of the types below it.
- Promises are checked: an event of type T with ts below ``clock - max_delay[T]``, or at or below a
  punctuation of its type, is dropped and its position listed in ``info()["dropped"]`` (never silently
  used for wrong output): the result is exact over the stream without it, the contract of K-slack, the
  out-of-order layer (``cepkit.runtime.disorder``) and Spark streams (docs/decisions.md).
- A punctuation ``of`` a concept covers every type below it; a negated concept is complete once it or
  an ancestor is punctuated; a punctuation ``of`` ``"*"`` covers every type; an ``ANY`` negation is guarded
  by ``max_delay`` (``"*"`` in a mapping) and by ``"*"`` punctuations.
- ``aggressive`` keeps its state until ``max_delay`` (optional) says a late event can no longer reach
  it ([LIU] §3.6.2's delay bound K); without it state grows with the stream.
- Under a time window and a ``max_delay`` the conservative and aggressive modes drop a PARTITION BY key
  once its last event is below their purge's reach (``forget_keys_after``), as the in-order mode does once
  its window has passed (``cepkit.runtime.expiry``); without a bound every key is kept.
- Under RETURN they count each projected key's live matches (first in emits it, last out retracts it); a key
  is forgotten once every type the query reads is complete past its earliest event plus the window
  (``forget_settled_keys``), as the in-order mode forgets a reported key a window later (``ReportedOnce``).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter

from ...lang.window import earliest_time, latest_time
from ...runtime.event_record import PUNCTUATION
from ...runtime.expiry import KeyExpiry, window_horizon
from ...runtime.match_record import Match
from ...runtime.reported_once import ReportedOnce
from ...runtime.registry import IncrementalPlan
from .core import SWEEP_EVERY, Core
from ...runtime.disorder import EmissionLog
from ...runtime.delays import MaxDelay, punctuated_type
from .purge import PurgeByGuarantees
from .batch import without_punctuation
from .step import SeqStep, step_refusal
from .tail import Tail, batch_matches, refusal, waiting_at_close


class StackMatcher(EmissionLog, IncrementalPlan):
    """What the modes share: cores per PARTITION BY key, and the log of emissions (for a batch run)."""

    ordered = True

    def __init__(self, program):
        self.program = program
        self.cores: dict = {}
        self.emitted = 0
        self.last_position = -1
        self.peak_state = 0
        self._arrivals = 0
        self._live: Counter = Counter()  # under RETURN: projected key -> matches emitted and not retracted
        self._live_by_time: list = []  # heap of (earliest projected ts, seq, key) of the keys in ``_live``
        self._live_seq = itertools.count()

    def key_of(self, event) -> tuple:
        return tuple(event.get(k) for k in self.program.partition_by)

    def core_of(self, event, key=None) -> Core:
        key = self.key_of(event) if key is None else key
        core = self.cores.get(key)
        if core is None:
            core = self.cores[key] = Core(self.program, self.ordered)
        return core

    def emit(self, chosen, sign: str = "+") -> list:
        """The emission of ``chosen`` (a one-element list), or none when it changes nothing: under RETURN
        several matches project onto one (C, β) (docs/language.md §4, §10.2: one entry per distinct (C, β)), which
        is emitted when its first match is and, in aggressive mode, retracted when its last one is."""
        found = self.program.to_match(chosen)
        if self.program.select is not None and not self.changes_output(found, sign, chosen):
            return []
        at = self.last_position if self.last_position >= 0 else None
        match = Match(found.positions, found.bindings, sign, at)
        self.emitted += 1
        if self.emissions is not None:
            self.emissions.append(match)
        return [match]

    def changes_output(self, found: Match, sign: str, chosen) -> bool:
        """Under RETURN: whether emitting ``found`` (the projection of the instances ``chosen``) changes the
        output (its key's first match in, or its last one out); counts the key's matches emitted and not
        retracted (a key at 0 is forgotten, and so is a settled one: ``forget_settled_keys``)."""
        key = found.key
        live = self._live.get(key, 0)
        if not live and sign == "+":
            select = self.program.select
            earliest = min((i.time for s, i in zip(self.program.slots, chosen) if s.var in select), default=math.inf)
            heapq.heappush(self._live_by_time, (earliest, next(self._live_seq), key))
        self._live[key] = live + (1 if sign == "+" else -1)
        if not self._live[key]:
            del self._live[key]
        return (sign == "+" and live <= 0) or (sign == "-" and live <= 1)

    def forget_settled_keys(self, settled: float) -> None:
        """Forget the RETURN keys no later arrival can emit or retract again, every type the query reads
        being complete through ``settled`` (no event of them at or below it is still to come).

        Every match projecting to a key holds the key's events, so its events lie within w after the key's
        earliest one, t: an arrival that builds such a match (a positive event), blocks or retracts one (a
        negative in its scope), or completes a held one's scopes has a ts at most t + w. Once ``settled``
        passes t + w (and the float tolerance) none is to come, and the mode has released what was held
        (callers call this after their release). Without a time window every key is kept."""
        window = self.program.window_time
        if window is None or settled == -math.inf:
            return
        horizon = window_horizon(settled, window)
        heap = self._live_by_time
        while heap and heap[0][0] < horizon:
            self._live.pop(heapq.heappop(heap)[2], None)

    def state_size(self) -> int:
        return sum(core.size() for core in self.cores.values())

    def _track(self, event) -> None:
        self.last_position = event.position
        self._arrivals += 1
        if self._arrivals % 64 == 0:
            self.peak_state = max(self.peak_state, self.state_size())

    def info(self) -> dict:
        return {
            "peak_state": max(self.peak_state, self.state_size()),
            "state": self.state_size(),
            "emissions": self.emitted,
        }


class _Pending:
    """A match waiting for its trailing scope: to pass without a negated event, and to hold a witness of
    each trailing EXISTS item (``missing`` lists those not yet seen)."""

    __slots__ = ("chosen", "deadline", "lpos_deadline", "alive", "missing")

    def __init__(self, chosen, deadline, lpos_deadline, missing):
        self.chosen = chosen
        self.deadline = deadline
        self.lpos_deadline = lpos_deadline
        self.alive = True
        self.missing = set(missing)


class InOrderMatcher(StackMatcher):
    """Events in (ts, position) order: SASE stacks with window purge, trailing negations wait (``reject``).
    Under a time window a key's core is dropped once its window has passed (``runtime.expiry``).

    A micro-batch (``extend``) runs as columns (``tail``: the columnar run over the events that can still
    matter and the batch), with exactly the pushes' result; the stacks are then rebuilt by the next
    ``push`` only. Event by event where that cannot be exact (``tail.refusal``: RETURN, no window) and in
    K-slack (its releases are not the arrivals)."""

    def __init__(self, program, batches: bool = True):
        super().__init__(program)
        self._start_over()
        self._now = -math.inf  # the time of the event being fed (the latest)
        # the events a micro-batch may need (None: batches go event by event)
        self._tail = Tail(program) if batches and refusal(program) is None else None
        self._step = None  # the ``SeqStep`` that holds the state (the stacks are then stale), or None

    def _start_over(self) -> None:
        """Empty stacks, nothing waiting: a new matcher's state."""
        self.cores = {}
        self._expiry = KeyExpiry(self.program.window_time)
        self._reported = ReportedOnce(self.program.window_time)  # under RETURN: keys emitted, a window's worth
        self._by_time: list = []  # (deadline ts, seq, pending) over all sub-streams
        self._by_lpos: dict = {}  # core -> [(deadline local position, seq, pending)]
        self._waiting: dict = {}  # core -> [pending] (a trailing negation may still block them)
        self._seq = itertools.count()

    def push(self, event) -> list:
        if event.type == PUNCTUATION:
            return []
        self._settle_step()
        if self._tail is not None and self._tail.stream is not None:
            self._resume()
        self._track(event)
        return self.feed(event)

    def step(self, columns: tuple):
        """``SeqStep`` for ``cepkit.Matcher.pusher`` on plain sequences under a time window; None for the
        others (``step.step_refusal``), the out-of-order modes and a batch run's log."""
        if type(self) is not InOrderMatcher or self.emissions is not None or self._tail is None:
            return None
        return SeqStep(self, columns) if step_refusal(self.program) is None else None

    def _take_over(self, step: SeqStep) -> None:
        """``step`` holds the state from now on: it is fed the events of the tail (the last window's), their
        matches discarded (emitted already), and the stacks are let go."""
        self._settle_step()
        tail = self._tail
        if tail.stream is not None:
            self._resume()
        events = list(tail.recent)
        self._start_over()
        tail.recent.clear()
        step.restart()
        for event in events:
            step.add(event.type, event.time, tuple(event.get(c) for c in step.columns), event.position, event)
        self._step = step

    def _settle_step(self) -> None:
        """The stacks back from a ``SeqStep``: a fresh state fed its recent events (the last window's),
        their matches discarded, as ``_resume`` rebuilds them from a tail (``step`` module docstring)."""
        step = self._step
        if step is None:
            return
        self._step = None
        events = step.events()
        self._start_over()
        self._tail.recent.clear()
        emitted = self.emitted
        for event in events:
            self.feed(event)
        self.emitted = emitted

    def extend(self, stream):
        """A micro-batch as columns (``tail``): what pushing its events returns, as a ``MatchList``."""
        self._settle_step()
        tail = self._tail
        if (
            tail is None
            or self.emissions is not None
            or stream.first_disorder(self._now) is not None
            or (tail.stream is not None and tail.stream.ts_is_datetime != stream.ts_is_datetime)
        ):
            return super().extend(stream)
        stream = without_punctuation(stream)
        if not len(stream):
            return []
        if tail.stream is None:  # the stacks are let go: the batch's matches come from the tail's columns
            self._start_over()
        found = batch_matches(self.program, tail, stream, self._now)
        self._now = max(self._now, float(stream.times[-1]))
        self.last_position = int(stream.position_of(len(stream) - 1))
        self.emitted += len(found)
        self.peak_state = max(self.peak_state, self.state_size())
        return found

    def _resume(self) -> None:
        """Rebuild the stacks after micro-batches: a fresh state fed the tail's events, their emissions
        discarded. Exact for everything still to come: every match emitted from now on (at a later event or
        at ``close``) has its events and scopes in the tail (``tail``'s module docstring), so the stacks hold
        every instance it needs; a match the replay emits or releases was emitted when its last event or its
        release came (by a batch or a push); a match left waiting after the replay has its events and scopes
        in the tail, so it waits in the pushes' state too, and was not emitted yet. Events before the tail
        only change matches emitted already, and keys whose window had passed (``KeyExpiry``)."""
        tail, emitted = self._tail, self.emitted
        events = tail.stream.events
        tail.stream = None
        self._start_over()
        for event in events:
            self._track(event)
            self.feed(event)
        self.emitted = emitted
        for waiting in self._waiting.values():
            for pending in waiting:
                if not tail.unreleased(pending.chosen[-1].event.position):
                    pending.alive = False

    def changes_output(self, found: Match, sign: str, chosen) -> bool:
        """In order nothing is retracted: a key is emitted once, remembered a time window (``ReportedOnce``)."""
        return bool(self._reported.unreported([found], self._now))

    def feed(self, event) -> list:
        """Process one event known to be in order (K-slack calls this with released events)."""
        program = self.program
        self._now = event.time
        out = self._release_by_time(event.time)
        for gone in self._expiry.expired(event.time):  # its waiting matches were released just above
            core = self.cores.pop(gone)
            self._waiting.pop(core, None)
            self._by_lpos.pop(core, None)
        key = self.key_of(event)
        if self._tail is not None:  # a later micro-batch may need it
            self._tail.keep(event, key)
        self._expiry.touch(key, event.time)
        core = self.core_of(event, key)
        lpos = core.next_lpos
        core.next_lpos += 1
        entries = core.negation_entries(event, lpos)
        for j, part, inst in entries:
            if program.negations[j].gap == program.n:
                out.extend(self._trailing_event(core, j, inst))
            core.store(j, part, inst)
        self._purge(core, event.time, lpos)
        for part, chosen in core.add_positive(event, lpos):
            if program.trailing:
                self._wait(core, chosen)
            else:
                out.extend(self.emit(chosen))
        out.extend(self._release_by_lpos(core, lpos))
        return out

    def _trailing_event(self, core, j: int, inst) -> list:
        """An event of trailing item ``j`` arrived: it blocks the waiting matches whose scope it falls in, or
        witnesses their EXISTS item; a match with only EXISTS items trailing is final once all are seen."""
        program, out = self.program, []
        exists = program.negations[j].exists
        final_when_seen = len(program.trailing_exists) == len(program.trailing)
        for pending in self._waiting.get(core, ()):
            if pending.alive and core.blocks(j, pending.chosen, inst):
                if not exists:
                    pending.alive = False
                    continue
                pending.missing.discard(j)
                if final_when_seen and not pending.missing:
                    out.extend(self._release(pending))
        return out

    def _wait(self, core, chosen) -> None:
        deadline, lpos_deadline = self.program.deadline(chosen)
        pending = _Pending(chosen, deadline, lpos_deadline, self.program.trailing_exists)
        waiting = self._waiting.setdefault(core, [])
        if len(waiting) % 64 == 63:  # drop released and blocked ones now and then
            waiting[:] = [p for p in waiting if p.alive]
        waiting.append(pending)
        if deadline < math.inf:
            heapq.heappush(self._by_time, (deadline, next(self._seq), pending))
        if lpos_deadline < math.inf:
            heapq.heappush(self._by_lpos.setdefault(core, []), (lpos_deadline, next(self._seq), pending))

    def _release(self, pending) -> list:
        """The scope is over (or the stream complete): emit the match unless blocked or lacking a witness."""
        if not pending.alive:
            return []
        pending.alive = False
        return [] if pending.missing else self.emit(pending.chosen)

    def _release_by_time(self, now: float) -> list:
        """An event later than a deadline proves, in order, that nothing else can fall in that scope."""
        out, heap = [], self._by_time
        while heap and heap[0][0] < now:
            out.extend(self._release(heapq.heappop(heap)[2]))
        return out

    def _release_by_lpos(self, core, lpos: int) -> list:
        out, heap = [], self._by_lpos.get(core)
        while heap and heap[0][0] <= lpos:
            out.extend(self._release(heapq.heappop(heap)[2]))
        return out

    def _purge(self, core: Core, now: float, lpos: int) -> None:
        program = self.program
        time_limit = window_horizon(now, program.window_time) if program.window_time is not None else None
        lpos_limit = lpos - program.window_events + 1 if program.window_events is not None else None
        if time_limit is None and lpos_limit is None:
            return
        if self._arrivals % SWEEP_EVERY == 0:
            for other in self.cores.values():
                other.sweep(time_limit, other.next_lpos - program.window_events if lpos_limit is not None else None)
            return
        core.sweep_touched(time_limit, lpos_limit)

    def close(self) -> list:
        """A finite stream is complete: trailing scopes are judged on the events that exist (docs/language.md §10.4)."""
        self._settle_step()
        tail = self._tail
        out = []
        if tail is not None and tail.stream is not None:  # after a micro-batch (nothing waits in the stacks)
            out = waiting_at_close(self.program, tail, self._now, self.last_position)
        for waiting in self._waiting.values():
            for pending in waiting:
                out.extend(self._release(pending))
        self._waiting.clear()
        self._by_time.clear()
        self._by_lpos.clear()
        if tail is not None:
            tail.closed_at = self.last_position  # what waited is out: never emitted again
        return out

    def state_size(self) -> int:
        """Instances in the stacks and matches waiting; after a micro-batch (the stacks let go) the events
        the tail keeps as columns."""
        self._settle_step()
        tail = self._tail
        kept = len(tail.stream) if tail is not None and tail.stream is not None else 0
        return super().state_size() + sum(p.alive for w in self._waiting.values() for p in w) + kept


class KSlackMatcher(InOrderMatcher):
    """K-slack ([LIU] §3.5): hold each event until the largest ts seen exceeds its ts by more than
    K, then feed the in-order stacks in (ts, position) order. An event arriving after a later one was
    released cannot be placed and is dropped (``dropped`` lists their positions)."""

    def __init__(self, program, k: float):
        super().__init__(program, batches=False)
        self.k = k
        self.clock = -math.inf
        self.buffer: list = []
        self.released = (-math.inf, -1)
        self.dropped: list = []

    def push(self, event) -> list:
        if event.type == PUNCTUATION:
            return []
        self._track(event)
        if (event.time, event.position) < self.released:
            self.dropped.append(event.position)
            return []
        self.clock = max(self.clock, event.time)
        heapq.heappush(self.buffer, ((event.time, event.position), event))
        out = []
        while self.buffer and self.buffer[0][0][0] < self.clock - self.k:
            out.extend(self._release_next())
        return out

    def _release_next(self) -> list:
        key, event = heapq.heappop(self.buffer)
        self.released = key
        return self.feed(event)

    def close(self) -> list:
        out = []
        while self.buffer:
            out.extend(self._release_next())
        return out + super().close()

    def state_size(self) -> int:
        return super().state_size() + len(self.buffer)

    def info(self) -> dict:
        return {**super().info(), "dropped": list(self.dropped)}


class _OutOfOrderMatcher(StackMatcher):
    """Late insertion into the stacks (no SASE pruning: a late event may need any instance)."""

    ordered = False

    def __init__(self, program, max_delay=None, hierarchy=None):
        super().__init__(program)
        self.max_delay = MaxDelay(max_delay, hierarchy)
        self.clock = -math.inf
        self.horizon = (-math.inf, -1)  # the largest key that has arrived
        self._expiry = KeyExpiry(None)  # a mode whose purge has a reach sets it (``forget_keys_after``)
        self.dropped: list = []  # arrival positions of the events that broke their promise
        # the types whose late events can change the output: positive or negated
        self.read_types = [slot.node.type for slot in program.slots] + [neg.atom.type for neg in program.negations]

    def forget_keys_after(self, reach: float) -> None:
        """Drop a PARTITION BY key's core once its last event is more than ``reach`` below the clock: the
        mode's purge would have emptied it (it drops instances ``reach`` below the clock), so the key's
        next event finds what a new core holds. Unbounded (no time window or no ``max_delay``): kept."""
        if self.program.window_time is not None and reach < math.inf:
            self._expiry = KeyExpiry(reach)

    def arrive(self, event):
        """Core, local position and lateness of an arriving event, and advances the clock; None when the
        event broke its ``max_delay`` promise (what it would change may be purged or emitted): dropped."""
        if event.time < self.clock - self.max_delay.of(event.type):
            self.dropped.append(event.position)
            return None
        late = (event.time, event.position) < self.horizon
        self.horizon = max(self.horizon, (event.time, event.position))
        self.clock = max(self.clock, event.time)
        for gone in self._expiry.expired(self.clock):
            if self.holds(self.cores[gone]):
                self._expiry.touch(gone, self.clock)
            else:
                self.forget(self.cores.pop(gone))
        key = self.key_of(event)
        self._expiry.touch(key, event.time)
        core = self.core_of(event, key)
        lpos = core.next_lpos
        core.next_lpos += 1
        return core, lpos, late

    def holds(self, core: Core) -> bool:
        """Whether ``core`` keeps something its purge does not drop (conservative: matches held)."""
        return False

    def info(self) -> dict:
        return {**super().info(), "dropped": list(self.dropped)}

    def forget(self, core: Core) -> None:
        """What the mode keeps per core, dropped with it."""

    def purge_below(self, core: Core, time_limit: float) -> None:
        """Drop instances with ts < ``time_limit`` where the event went, and everywhere now and then."""
        if time_limit == -math.inf:
            return
        if self._arrivals % SWEEP_EVERY == 0:
            for other in self.cores.values():
                other.sweep(time_limit, None)
        else:
            core.sweep_touched(time_limit, None)


class _Held:
    """A match in the conservative holding set; ``alive`` until emitted or blocked by a late negative."""

    __slots__ = ("chosen", "alive")

    def __init__(self, chosen):
        self.chosen = chosen
        self.alive = True


class ConservativeMatcher(_OutOfOrderMatcher):
    """Partial order guarantees ([LIU] §3.6.1): a match is output only once no late event can
    invalidate it, so the output is permanently valid but unsorted.

    The holding set is not rescanned when a guarantee advances: each held match waits in the heap of
    its first incomplete negation scope, keyed by the ts that negation's frontier must reach (the
    right neighbour's ts, or first ts + w for a trailing one: ``safe(r)`` of [LIU] §3.6.1). Frontiers only
    grow, so an advance pops the satisfied tops and moves each popped match on to its next incomplete
    scope, or emits it: every match passes through each heap at most once."""

    def __init__(self, program, max_delay=None, hierarchy=None):
        super().__init__(program, max_delay, hierarchy)
        self.guarantees = PurgeByGuarantees(program, hierarchy, self.max_delay)
        # a future match holds a future positive event, whose ts is at least clock - (its slot's bound)
        self.slot_delay = self.max_delay.worst(slot.node.type for slot in program.slots)
        self.held: dict = {}  # core -> [_Held]: the holding set
        self.waiting = [[] for _ in program.negations]  # per negation: heap of (required ts, seq, _Held)
        self._seq = itertools.count()
        if self.max_delay.bounded:
            self.forget_keys_after(self.slot_delay + (program.window_time or 0.0))  # ``purge_below``'s reach

    def holds(self, core: Core) -> bool:
        """A late negative of a key may still block the key's held matches: the core stays while any does."""
        return any(held.alive for held in self.held.get(core, ()))

    def forget(self, core: Core) -> None:
        self.held.pop(core, None)

    def push(self, event) -> list:
        self._track(event)
        if event.type == PUNCTUATION:
            self.guarantees.punctuate(punctuated_type(event), event.time)
            out = self._release_safe()
            self.guarantees.purge(self.cores.values(), self.clock)
            return out
        if event.time <= self.guarantees.frontier(event.type):  # a punctuation promised no such event
            self.dropped.append(event.position)
            return []
        arrived = self.arrive(event)
        if arrived is None:
            return []
        core, lpos, _ = arrived
        program = self.program
        for j, part, inst in core.negation_entries(event, lpos):
            for held in self.held.get(core, ()):
                if held.alive and core.blocks(j, held.chosen, inst):
                    held.alive = False
            core.store(j, part, inst)
        out = []
        for part, chosen in core.add_positive(event, lpos):
            out.extend(self._wait_or_emit(core, _Held(chosen)))
        if self.max_delay.bounded:
            out.extend(self._release_safe())
            if program.window_time is not None and self.slot_delay < math.inf:
                self.purge_below(core, window_horizon(self.clock - self.slot_delay, program.window_time))
        return out

    def required(self, j: int, chosen) -> float:
        """The ts through which negation ``j``'s type must be complete for ``chosen`` ([LIU] §3.6.1, docs/references.md E1):
        the right neighbour's ts for a leading or middle scope, first ts + w for a trailing one (inf
        without a window: it waits for the end of the stream)."""
        program = self.program
        if program.negations[j].gap == program.n:
            # a guarantee at first ts + W closes the scope (docs/references.md E1), as Algorithm 2's purge
            return chosen[0].time + program.window_time if program.window_time is not None else math.inf
        return chosen[program.negations[j].gap].time

    def complete(self, j: int, time: float) -> bool:
        """Is negation ``j``'s scope complete up to ``time`` (exclusive for leading and middle scopes,
        inclusive for a trailing one)?"""
        program, g = self.program, self.guarantees
        neg = program.negations[j]
        if neg.gap == program.n:
            return time < math.inf and g.complete_through(neg.atom.type, time, self.clock)
        return g.complete_before(neg.atom.type, time, self.clock)

    def _wait_or_emit(self, core, held: _Held, new: bool = True) -> list:
        """Queue ``held`` on its first incomplete negation scope, or emit it if every scope is complete."""
        for j in range(len(self.program.negations)):
            time = self.required(j, held.chosen)
            if not self.complete(j, time):
                if new:
                    waiting = self.held.setdefault(core, [])
                    if len(waiting) % 64 == 63:  # forget the emitted and blocked ones now and then
                        waiting[:] = [h for h in waiting if h.alive]
                    waiting.append(held)
                if time < math.inf:
                    heapq.heappush(self.waiting[j], (time, next(self._seq), held))
                return []
        held.alive = False
        return self.emit(held.chosen)

    def _release_safe(self) -> list:
        """Pop every scope the guarantees have just completed; frontiers do not move meanwhile, so a match
        queued again on a later negation is not yet complete there. Then every held match whose scopes are
        complete is out, so the RETURN keys settled by the guarantees may go."""
        out = []
        for j, heap in enumerate(self.waiting):
            while heap and self.complete(j, heap[0][0]):
                held = heapq.heappop(heap)[2]
                if held.alive:
                    out.extend(self._wait_or_emit(None, held, new=False))
        if self._live_by_time:
            self.forget_settled_keys(min(self.guarantees.through(t, self.clock) for t in self.read_types))
        return out

    def close(self) -> list:
        out = [m for waiting in self.held.values() for held in waiting if held.alive for m in self.emit(held.chosen)]
        self.held.clear()
        for heap in self.waiting:
            heap.clear()
        return out

    def state_size(self) -> int:
        return super().state_size() + sum(held.alive for waiting in self.held.values() for held in waiting)

    def info(self) -> dict:
        return {**super().info(), "purged": self.guarantees.purged}


class AggressiveMatcher(_OutOfOrderMatcher):
    """Compensation ([LIU] §3.6.2): every match is emitted as soon as it is built; a late negative
    event retracts (``-``) the emitted matches whose scope it falls in, a late positive one inserts
    (``+``) the matches it completes. Results are eventually valid; the net output converges."""

    retracts = True

    def __init__(self, program, max_delay=None, hierarchy=None):
        super().__init__(program, max_delay, hierarchy)
        self.reach_delay = self.max_delay.worst(self.read_types)
        self.forget_keys_after(self.reach_delay + 2 * (program.window_time or 0.0))  # ``purge_below``'s reach

    def push(self, event) -> list:
        if event.type == PUNCTUATION:
            self._track(event)
            return []
        self._track(event)
        arrived = self.arrive(event)
        if arrived is None:
            return []
        core, lpos, late = arrived
        program = self.program
        out, retracted = [], set()
        entries = core.negation_entries(event, lpos)
        for j, part, inst in entries:
            if late or program.negations[j].gap == program.n:
                for chosen in self._blocked(core, j, part, inst):
                    if chosen not in retracted:
                        retracted.add(chosen)
                        out.extend(self.emit(chosen, "-"))
        for j, part, inst in entries:
            core.store(j, part, inst)
        for _, chosen in core.add_positive(event, lpos):
            out.extend(self.emit(chosen))
        if self.reach_delay < math.inf:
            # A late event of the query's types has ts >= clock - (their largest max_delay); a match it
            # reaches lies within 2w of it ([LIU] §3.6.2).
            reach = 2 * program.window_time if program.window_time is not None else math.inf
            self.purge_below(core, window_horizon(self.clock - self.reach_delay, reach))
            if self._live_by_time:  # every read type is complete below clock - reach_delay
                self.forget_settled_keys(math.nextafter(self.clock - self.reach_delay, -math.inf))
        return out

    def _blocked(self, core: Core, j: int, part, inst) -> list:
        """The emitted, still valid matches that the negated ``inst`` falls in ([LIU] §3.6.2's spurious set:
        positive matches around it that no stored negative blocks yet)."""
        program = self.program
        neg = program.negations[j]
        w = program.window_time
        gap = neg.gap
        anchor = min(gap, program.n - 1)
        parts = [part] if part is not None else list(core.parts.values())
        found = []
        if gap == program.n:  # trailing: the last event precedes it, the first (so the last) is within w
            lo, hi = (earliest_time(w, inst.time) if w is not None else -math.inf, -1), inst.key
        else:  # leading or middle: the slot after the gap follows it within w
            lo, hi = inst.key, (latest_time(w, inst.time) if w is not None else math.inf, math.inf)
        for p in parts:
            for x in p.stacks[anchor].between(lo, hi):
                found.extend(core.construct(p, anchor, x, accept=lambda chosen, _: core.blocks(j, chosen, inst)))
        return found
