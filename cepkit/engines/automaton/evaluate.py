"""Algorithm 1 (Evaluate) over the lazily determinized CEA, with windows, PARTITION BY and CONSUME BY.

Per event t at position j, every active deterministic state S with its list of runs (a node) moves
([CEL] §6-7, Algorithm 4 NDetEvaluate, which is Algorithm 1 with the lists as persistent nodes)::

    marked[δ(S, •x)] ∪= Ext(j, x, node)      for each variable x a • move of S binds
    rest[δ(S, ◦)]    ∪= node
    node(T) = Union(marked[T], rest[T]);  the complex events completed at j are marked[T], T final

The update costs O(active states) per event whatever the window, and the events ending at j are then
enumerated with output-linear delay (``nodes.enumerate_roots``). Runs whose every event starts before
the window are dropped as they are met (``now − start > limit``).

The kernel (``advance``) reads events as arrays: the letter of each event, its position, its window key
and limit. Events whose letter is ``none`` (they enable no • transition: irrelevant to the query) are not
passed at all: the next relevant event carries their count as its ``gap`` and the kernel skips them in
one move, as the none-letter step settles at once. Under PARTITION BY the events are processed partition
by partition (``reset`` starts a sub-stream), which keeps STRICT and EVENTS windows on sub-stream
indices as docs/language.md §10.5 says. The incremental matcher keeps each partition's runs in a slot of a
``RunsTable``, which the kernel loads at the partition's first event of a batch and stores after its
last: a micro-batch of many keys is one call, and a push is a batch of one event.

Decisions the spec leaves open, written down here:

- CONSUME BY ANY / PARTITION: after an event at which a match completes, every partial match (of the
  whole stream, or of that partition) is dropped; the matches completing at that event are all reported.
- A time window holds when ``last ts − first ts ≤ w`` up to the same float tolerance the reference uses.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Optional

import numpy as np
import pandas as pd

from ...errors import check_room
from ...lang.window import time_limit, time_limits
from ...runtime.event_record import PUNCTUATION
from .determinize import UNKNOWN
from . import kernel
from ..compiled import grow, jit
from .nodes import (
    BOTTOM,
    NONE,
    compact,
    count_roots,
    enumerate_cursor,
    enumerate_roots,
    forward_room,
    new_arena,
    new_cursor,
    put_ext,
    put_union,
    UNION,
    UNION_ROOM,
)

OK, MISS, ARENA_FULL, ROOTS_FULL, ENUMERATE = 0, 1, 2, 3, 4
ROOTS = 1 << 13  # completed lists of matches held before they are enumerated
BATCH = 1 << 18  # events read from a finite stream per batch of the kernel's inputs
ROOM = 1 << 10  # complex events a new ``Outputs`` has room for (4 positions each), before it grows

Batch = namedtuple("Batch", "pos letter key limit gap reset slot load")
Batch.__doc__ = (
    "Events for the kernel: position, letter, window key and limit, irrelevant events skipped "
    "just before (gap), whether a new sub-stream starts (reset); for a run with a ``RunsTable`` "
    "the slot of each event's sub-stream, and whether a sub-stream's runs are loaded from it at "
    "its reset (``load``) rather than started afresh (empty otherwise: ``UNKEYED``)."
)
Runs = namedtuple("Runs", "state node n")
Runs.__doc__ = "The active deterministic states and their lists of runs (nodes); ``n[0]`` are in use."
Stored = namedtuple("Stored", "state node n")
Stored.__doc__ = "Lists of runs of many sub-streams, one row (slot) each: ``state[s, :n[s]]``, ``node[s, :n[s]]``."
UNKEYED = (np.zeros(0, np.int64), np.zeros(0, bool))  # ``Batch.slot`` and ``load`` of a batch without slots
Roots = namedtuple("Roots", "node emit key limit n")
Roots.__doc__ = "Lists of complex events completed at ``emit``, waiting to be enumerated."
Scratch = namedtuple("Scratch", "marked rest touched new_state new_node")


def new_runs(capacity: int) -> Runs:
    runs = Runs(np.empty(capacity, np.int32), np.empty(capacity, np.int32), np.ones(1, np.int64))
    runs.state[0], runs.node[0] = 0, BOTTOM
    return runs


def _grown_runs(runs: Runs, capacity: int) -> Runs:
    """``runs`` with room for ``capacity`` states; a re-allocated list shares the old one's count ``n``,
    which identifies a list of runs across re-allocations."""
    if len(runs.state) >= capacity:
        return runs
    kernel.replaced()
    state, node = np.empty(capacity, np.int32), np.empty(capacity, np.int32)
    state[: len(runs.state)], node[: len(runs.node)] = runs.state, runs.node
    return Runs(state, node, runs.n)


# ----------------------------------------------------------------------------- the kernel
@jit(nrt=False)
def advance(table, batch, first, last, none, consume, runs, stored, arena, scratch, roots, collect, info):
    """Events ``first..last-1`` of ``batch``. Returns OK, or a status asking Python for help at event
    ``info[2]`` (MISS: fill δ(info[0], info[1]); ARENA_FULL: compact; ROOTS_FULL: enumerate); calling
    again from ``info[2]`` resumes where it stopped (``info[3]`` counts the event's finished phases:
    1 + the irrelevant events of its gap already skipped). ``info[4]`` counts completed lists of matches.

    ``runs`` are the runs being advanced. With ``stored`` (a ``RunsTable``'s), a keyed batch runs many
    sub-streams in one call (a micro-batch's PARTITION BY keys): at each reset the runs go back to the
    previous event's slot and the new sub-stream's are loaded from its slot (``load``) or start afresh;
    after the call's last event they go back to its slot. Without (None: a finite stream's run), numba
    compiles the event loop without those branches (it prunes ``is not None`` tests of an argument).

    Every step is all or nothing: nodes are made past ``used`` and committed at its end. All arrays are
    unpacked here, once: the loop then holds no references to count (numba would otherwise update
    reference counts at every event).
    """
    skip, move_start, move_count, move_var, move_dst, final, settled = table
    ev_pos, ev_letter, ev_key, ev_limit, ev_gap, ev_reset, ev_slot, ev_load = batch
    run_state, run_node, run_n = runs
    node_pos, node_var, node_left, node_right, node_start, node_used = arena
    marked, rest, touched, new_state, new_node = scratch
    root_node, root_emit, root_key, root_limit, root_n = roots
    capacity = node_pos.shape[0]
    used, n_runs, n_roots = node_used[0], run_n[0], root_n[0]
    status = OK
    i = first
    while i < last:
        if info[3] == 0:
            if ev_reset[i]:
                if stored is not None and i > first:
                    _store(run_state, run_node, n_runs, stored, ev_slot[i - 1])
                if stored is not None and ev_load[i]:
                    n_runs = _load(run_state, run_node, stored, ev_slot[i])
                else:
                    run_state[0], run_node[0], n_runs = 0, BOTTOM, 1
            info[3] = 1
        # this step reads an irrelevant event of the gap before event i, or event i itself
        in_gap = False
        if info[3] - 1 < ev_gap[i]:
            for k in range(n_runs):
                if not settled[run_state[k]]:
                    in_gap = True
                    break
        letter = none if in_gap else ev_letter[i]
        pos = -1 if in_gap else ev_pos[i]
        key, limit = ev_key[i], ev_limit[i]
        fresh = used  # nodes made by this step start here
        n_touched = 0
        emitted = 0
        for k in range(n_runs):
            state, node = run_state[k], run_node[k]
            if key - node_start[node] > limit:
                continue  # every run of this list starts before the window
            target = skip[state, letter]
            if target == UNKNOWN:
                info[0], info[1] = state, letter
                status = MISS
                break
            first_move = move_start[state, letter]
            for m in range(first_move, first_move + move_count[state, letter]):
                if fresh + 1 + UNION_ROOM > capacity:
                    status = ARENA_FULL
                    break
                dst = move_dst[m]
                # the runs of this list, marking the event as the move's variable
                extended = put_ext(
                    node_pos, node_var, node_left, node_right, node_start, fresh, pos, move_var[m], node, key
                )
                fresh += 1
                if marked[dst] == NONE:
                    if rest[dst] == NONE:
                        touched[n_touched] = dst
                        n_touched += 1
                    marked[dst] = extended
                else:
                    joined = put_union(  # (int32 node ids at each call: ``_place`` compiled once)
                        node_pos, node_var, node_left, node_right, node_start, fresh, marked[dst], np.int32(extended)
                    )
                    if joined == NONE:  # ``_place`` needs more room than ``UNION_ROOM``
                        status = ARENA_FULL
                        break
                    marked[dst], fresh = joined, joined + 1
            if status != OK:
                break
            if target >= 0:
                if rest[target] == NONE:
                    if marked[target] == NONE:
                        touched[n_touched] = target
                        n_touched += 1
                    rest[target] = node
                elif fresh + UNION_ROOM > capacity:
                    status = ARENA_FULL
                    break
                else:
                    joined = put_union(node_pos, node_var, node_left, node_right, node_start, fresh, rest[target], node)
                    if joined == NONE:
                        status = ARENA_FULL
                        break
                    rest[target], fresh = joined, joined + 1
        n_new = 0
        roots_before = n_roots
        if status == OK:
            for t in range(n_touched):
                state = touched[t]
                if marked[state] == NONE:
                    node = rest[state]
                elif rest[state] == NONE:
                    node = marked[state]
                elif fresh + UNION_ROOM > capacity:
                    status = ARENA_FULL
                    break
                else:
                    node = put_union(
                        node_pos, node_var, node_left, node_right, node_start, fresh, marked[state], rest[state]
                    )
                    if node == NONE:
                        status = ARENA_FULL
                        break
                    fresh = node + 1
                new_state[n_new], new_node[n_new] = state, node
                n_new += 1
                if final[state] and marked[state] != NONE:
                    emitted += 1
                    if collect:
                        if n_roots >= root_node.shape[0]:
                            status = ROOTS_FULL
                            break
                        root_node[n_roots], root_emit[n_roots] = marked[state], pos
                        root_key[n_roots], root_limit[n_roots] = key, limit
                        n_roots += 1
        for t in range(n_touched):
            marked[touched[t]] = NONE
            rest[touched[t]] = NONE
        if status != OK:
            n_roots = roots_before
            info[2] = i
            break
        used = fresh
        for k in range(n_new):
            run_state[k], run_node[k] = new_state[k], new_node[k]
        n_runs = n_new
        info[4] += emitted
        if in_gap:
            info[3] += 1
            continue
        if consume and emitted:
            run_state[0], run_node[0], n_runs = 0, BOTTOM, 1
        info[3] = 0
        i += 1
    if stored is not None and status == OK and last > first:
        _store(run_state, run_node, n_runs, stored, ev_slot[last - 1])
    node_used[0], run_n[0], root_n[0] = used, n_runs, n_roots
    return status


@jit(inline=True)
def advance_enumerate(
    table, batch, count, none, consume, runs, stored, arena, scratch, roots, info, out, counts, order
):
    """``advance`` over a keyed batch's events ``0..count-1``, then, when it returns OK, the complex events
    completed enumerated (``enumerate_roots``, each event's sorted with ``order``) and packed (``pack_outputs``) in the
    same call: ``out`` holds ``Outputs``' buffers, spare, forward room and packed row. The incremental
    matcher's held events (``plan._Stepper``): one compiled call per event that may complete a match
    instead of two, and one list for Python to read. Returns the packed length (0: nothing completed),
    or ``-status`` when ``advance`` needs Python (its roots then wait in ``roots``), or ``-ENUMERATE``
    when a buffer filled up (the roots not enumerated moved to the front of ``roots``, ``roots.n[0]``
    of them, for ``Outputs.take`` to grow the buffers and enumerate them)."""
    status = advance(table, batch, 0, count, none, consume, runs, stored, arena, scratch, roots, True, info)
    n = roots[4][0]
    if status != OK:
        return -status
    out_pos, out_var, out_end, out_emit, spare, forward, flat = out
    if n == 0:
        return pack_outputs(out_pos, out_var, out_end, out_emit, counts, flat) if counts[1] else 0
    node, emit, key, limit = roots[0], roots[1], roots[2], roots[3]
    done = enumerate_roots(
        arena,
        node,
        key,
        limit,
        emit,
        0,
        n,
        out_pos,
        out_var,
        out_end,
        out_emit,
        counts,
        0,
        order,
        spare,
        forward,
        False,
    )
    if done < n:
        for r in range(done, n):
            node[r - done], emit[r - done], key[r - done], limit[r - done] = node[r], emit[r], key[r], limit[r]
        roots[4][0] = n - done
        return -ENUMERATE
    roots[4][0] = 0
    return pack_outputs(out_pos, out_var, out_end, out_emit, counts, flat)


@jit
def pack_outputs(out_pos, out_var, out_end, out_emit, counts, flat):
    """The outputs' complex events into ``flat`` (room for two words per event and per position), each
    as its emit position, its length k, its k positions and its k variables; the outputs are emptied.
    Returns the length written: Python reads one list (``tolist`` of one slice) instead of four."""
    at, start = 0, 0
    for e in range(counts[1]):
        end = out_end[e]
        k = end - start
        flat[at], flat[at + 1] = out_emit[e], k
        for j in range(k):
            flat[at + 2 + j] = out_pos[start + j]
            flat[at + 2 + k + j] = out_var[start + j]
        at += 2 + 2 * k
        start = end
    counts[:] = 0
    return at


HELD = "table batch none consume runs stored arena scratch roots info out counts order"
if kernel.COMPILED:
    from numba.core import types as _types
    from numba.experimental import structref

    class _HeldType(_types.StructRef):
        def preprocess_fields(self, fields):
            return tuple((name, _types.unliteral(t)) for name, t in fields)

    structref.register(_HeldType)

    class Held(structref.StructRefProxy):
        """``advance_enumerate``'s arguments but the count, as one object (a numba structref): numba's
        wrapper unboxes one pointer per call instead of the ~58 arrays of the tuples (~3.5 µs a call)."""

    structref.define_constructor(Held, _HeldType, HELD.split())
    structref.define_boxing(_HeldType, Held)
else:  # pragma: no cover - the pure-Python run
    Held = namedtuple("Held", HELD)


@jit
def new_held(table, batch, none, consume, runs, stored, arena, scratch, roots, info, out, counts, order):
    """A ``Held`` of these arguments (made in compiled code: numba's proxy would compile its constructor
    in every process)."""
    return Held(table, batch, none, consume, runs, stored, arena, scratch, roots, info, out, counts, order)


@jit
def advance_held(held, count):
    """``advance_enumerate`` of the arguments ``held`` holds, over its batch's first ``count`` events."""
    return advance_enumerate(
        held.table,
        held.batch,
        count,
        held.none,
        held.consume,
        held.runs,
        held.stored,
        held.arena,
        held.scratch,
        held.roots,
        held.info,
        held.out,
        held.counts,
        held.order,
    )


@jit(inline=True)
def _store(run_state, run_node, n_runs, stored, slot):
    stored_state, stored_node, stored_n = stored
    for k in range(n_runs):
        stored_state[slot, k], stored_node[slot, k] = run_state[k], run_node[k]
    stored_n[slot] = n_runs


@jit(inline=True)
def _load(run_state, run_node, stored, slot):
    stored_state, stored_node, stored_n = stored
    n_runs = stored_n[slot]
    for k in range(n_runs):
        run_state[k], run_node[k] = stored_state[slot, k], stored_node[slot, k]
    return n_runs


# ----------------------------------------------------------------------------- inputs
def window_keys(window, sub_index: np.ndarray, times: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The window key of events, column-wise: zeros without a window, each event's index in its sub-stream
    (``sub_index``) under ``n EVENTS``, its time (``times[rows]``, gathered only then) under a time window."""
    if window is None:
        return np.zeros(len(sub_index))
    if window.events:
        return sub_index.astype(np.float64)
    return times[rows]


def window_limit(window, keys: np.ndarray) -> np.ndarray:
    """The largest ``key − start`` a complex event ending at each key may span: ``w`` with the float
    allowance of ``lang.window`` for time windows, ``n − 1`` positions for ``n EVENTS``, infinity without a
    window."""
    if window is None:
        return np.full(len(keys), np.inf)
    if window.events:
        return np.full(len(keys), float(math.ceil(window.amount) - 1))
    return time_limits(window.seconds, keys)


def window_limit_at(window, key: float) -> float:
    """``window_limit`` of one key in Python floats (the matcher's per-event path: no arrays to make)."""
    if window is None:
        return math.inf
    if window.events:
        return float(math.ceil(window.amount) - 1)
    return time_limit(window.seconds, key)


def partition_key(query, event) -> tuple:
    """The PARTITION BY key of an event (a missing attribute is the key None, docs/language.md §10.5)."""
    return tuple(event.get(k) for k in query.partition_by)


def partition_keys(query, stream, rows: np.ndarray) -> list:
    """``partition_key`` of the events at ``rows``, read from the stream's columns as ``Event.get`` reads an
    event ("ts" its time in seconds, a null attribute None). Not built on ``partition_key``: an ``Event`` per
    key costs ~3 µs, 30x this (a micro-batch with many keys asks for each of them)."""
    columns = []
    for name in query.partition_by:
        if name == "type":
            columns.append(stream.types[rows].tolist())
        elif name == "ts":
            columns.append(stream.times[rows].tolist())
        else:
            column = stream.column(name)
            values = column.values[rows].tolist()
            columns.append([None if null else v for v, null in zip(values, column.null[rows].tolist())])
    return list(zip(*columns))


class Inputs:
    """A finite stream prepared for the automaton: the letter of every event and its sub-stream.

    ``order`` lists the rows the automaton reads, sub-stream after sub-stream (one per PARTITION
    BY key, in order of first appearance), each in stream order (None: every event in stream order), and
    ``starts`` where each sub-stream begins in it; punctuation events are never read (docs/language.md §6)
    and take no place in a sub-stream. The kernel's events are made in ``batches`` of ``BATCH`` read
    events, their window keys and limits for the relevant events only.
    """

    def __init__(self, program, stream):
        self.stream = stream
        self.window = program.query.within
        punctuation = stream.type_in(frozenset({PUNCTUATION}))
        read = np.flatnonzero(~punctuation) if punctuation.any() else None
        groups = None
        if program.query.partition_by and len(stream):
            read = np.arange(len(stream)) if read is None else read
            groups = pd.factorize(stream.key_codes(program.query.partition_by)[read])[0]
        self.letter = program.letter_ids(stream, read, groups)
        program.table.ensure_letters(len(program.letters))
        if groups is not None:
            within = np.argsort(groups, kind="stable")
            self.order = read[within]
            sorted_groups = groups[within]
            self.starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
        else:
            self.order = read
            self.starts = np.zeros(min(len(stream) if read is None else len(read), 1), dtype=np.int64)
        self.length = len(stream) if self.order is None else len(self.order)

    def batches(self, none: Optional[int]):
        """The kernel's events in sub-stream order, ``BATCH`` read events at a time (a whole 10M-event
        stream's would take ~30 bytes per event at once); those reading the ``none`` letter are left out
        and counted in the next relevant event's gap."""
        previous = -1  # the last kept event, across batches
        for first in range(0, self.length, BATCH):
            last = min(first + BATCH, self.length)
            order = np.arange(first, last) if self.order is None else self.order[first:last]
            letter = self.letter[first:last] if self.order is None else self.letter[order]
            picked = np.flatnonzero(letter != none) if none is not None else np.arange(len(letter))
            if not len(picked):
                continue
            kept = picked + first  # indices into the whole order
            group_start = self.starts[np.searchsorted(self.starts, kept, "right") - 1]
            sub_index = kept - group_start  # the event's index in its sub-stream
            before = np.r_[previous, kept[:-1]]  # the kept event before each kept one
            previous = int(kept[-1])
            reset = before < group_start  # the first kept event of its sub-stream
            gap = np.where(reset, sub_index, kept - before - 1)
            rows = order[picked].astype(np.int64, copy=False)
            key = window_keys(self.window, sub_index, self.stream.times, rows)
            yield Batch(
                self.stream.position_of(rows),  # the events' positions, whatever the stream's numbering
                letter[picked].astype(np.int32, copy=False),
                key,
                window_limit(self.window, key),
                gap.astype(np.int64, copy=False),
                reset,
                *UNKEYED,
            )


# ----------------------------------------------------------------------------- outputs
class Outputs:
    """Enumerated complex events: positions and variables, flat, with each event's emit position.
    With a ``limit``, enumeration stops once that many are held (``truncated`` then says so). With
    ``order``, the events one event completed are sorted by their positions as they are written, so
    ``ordered`` tells ``Matches`` it need not sort them again (``MatchArrays.sorted_within_last``)."""

    def __init__(self, limit: Optional[int] = None, order: bool = True, constant_delay: bool = False):
        self.limit = limit
        self.order = order and not constant_delay
        # the constant-delay walk (``enumeration="constant-delay"``, ``nodes.cursor_fill``), unordered:
        # ``Matches`` sorts; ``_cursor_entry`` its machine code, found once as ``_entry`` is
        self.cursor = new_cursor(new_arena(1)) if constant_delay else None
        self._cursor_entry = None
        self.truncated = False
        self.pos = np.empty(4 * ROOM, np.int64)
        self.var = np.empty(4 * ROOM, np.int32)  # MatchArrays keeps int32 ids as they are: no conversion
        # each event's end, after a leading 0: the CSR offsets without a copy (the kernel writes ``end``)
        self.ends = np.zeros(1 + ROOM, np.int64)
        self.end = self.ends[1:]
        self.emits = np.empty(ROOM, np.int64)
        # positions, events, groups left unsorted, sorted groups after one ending later, that one's end, and
        # whether the backward walk last handed a group back
        self.counts = np.zeros(6, np.int64)
        self.spare = _spare(self.pos, self.end)
        self.flat = np.empty(2 * (len(self.pos) + len(self.emits)), np.int64)  # ``packed``'s room
        self._pack = None
        # sized by the arena at the first enumeration: the forward walk's room, and the backward walk's
        self.forward = forward_room(0)
        self._entry = None

    def __len__(self):
        return int(self.counts[1])

    @property
    def ordered(self) -> bool:
        """Whether every group of events ending at one position is in docs/language.md §10.2 order, with no
        two of them on the same positions."""
        return self.order and not self.counts[2]

    @property
    def in_order(self) -> bool:
        """``ordered``, and the groups come in order of their last position (no PARTITION BY, whose
        sub-streams come one after another): the events are in output order."""
        return self.ordered and not self.counts[3]

    def take(self, arena, roots: Roots, cap: int = 0) -> None:
        """Enumerate ``roots`` into the buffers (growing them) and empty ``roots``."""
        n_roots = int(roots.n[0])
        if len(self.forward.seen) < len(arena.pos):
            self.forward = forward_room(len(arena.pos))
            kernel.replaced()
        done = 0
        while done < n_roots and not self.truncated:
            done = self._enumerate(arena, roots, done, n_roots, self.counts, cap, self.order, False)
            after = int(self.counts[1])
            self.truncated = self.limit is not None and after >= self.limit
            if done < n_roots and not self.truncated:
                # count the room the rest needs and make it at once (growing by guesses copied the buffers
                # and walked part of the roots again at each step): per node unless each root is capped
                needed = np.zeros(6, np.int64)
                if cap:
                    self._enumerate(arena, roots, done, n_roots, needed, cap, False, True)
                elif self.limit is None:
                    count_roots(arena, roots.node, roots.key, roots.limit, roots.emit, done, n_roots, needed)
                elif self._first(arena, roots, done, n_roots, needed):
                    continue  # (truncated: the limit's share taken)
                used = int(self.counts[0])
                positions, events = used + int(needed[0]), after + int(needed[1])
                check_room(int(needed[1]), int(needed[0]) * 12 + int(needed[1]) * 16, self.limit)
                self.pos, self.var = _grown(self.pos, used, positions), _grown(self.var, used, positions)
                # ``end`` (ends after the leading 0) exactly as long as ``emits``: the kernel checks the room
                # by ``end`` and writes both (doubled separately, ``end`` outgrew ``emits`` by one slot, and a
                # later take wrote past ``emits``)
                self.emits = _grown(self.emits, after, events)
                self.ends = _grown(self.ends, 1 + after, 1 + len(self.emits))[: 1 + len(self.emits)]
                self.end = self.ends[1:]
                self.spare = _spare(self.pos, self.end)
                self.flat = np.empty(2 * (len(self.pos) + len(self.emits)), np.int64)
                kernel.replaced()
        roots.n[0] = 0

    def _first(self, arena, roots: Roots, done: int, n_roots: int, needed: np.ndarray) -> bool:
        """Under a LIMIT, the next group of ``roots`` (from ``done``: the lists one event completed) when it
        holds more complex events than the limit leaves room for: its first ones only (``first_matches``),
        appended, and True. Otherwise ``needed`` counts the group (the room to make for it) and False: a
        list of 2^60 matches costs its share of the limit, not room for every match."""
        emit = roots.emit[done]
        others = np.flatnonzero(roots.emit[done:n_roots] != emit)
        end = done + (int(others[0]) if len(others) else n_roots - done)
        count_roots(arena, roots.node, roots.key, roots.limit, roots.emit, done, end, needed)
        share = self.limit - len(self)
        if 0 <= needed[1] <= share and needed[0] >= 0:
            return False
        pos, var, ends, tied = first_matches(arena, roots.node, roots.key, roots.limit, done, end, share)
        if tied < 0:  # a path binds one position twice: counted as a whole (refused when beyond memory)
            return False
        used, after = int(self.counts[0]), len(self)
        self.pos, self.var = _grown(self.pos, used, used + len(pos)), _grown(self.var, used, used + len(pos))
        self.emits = _grown(self.emits, after, after + len(ends))
        self.ends = _grown(self.ends, 1 + after, 1 + len(self.emits))[: 1 + len(self.emits)]
        self.end = self.ends[1:]
        self.pos[used : used + len(pos)], self.var[used : used + len(pos)] = pos, var
        self.end[after : after + len(ends)], self.emits[after : after + len(ends)] = ends + used, emit
        self.counts[0], self.counts[1] = used + len(pos), after + len(ends)
        self.counts[2] += tied  # bindings order a tie: ``Matches`` sorts
        if len(pos) and pos[-1] < self.counts[4]:  # (as ``nodes._follow`` counts a group)
            self.counts[3] += 1
        self.counts[4] = pos[-1] if len(pos) else self.counts[4]
        self.spare = _spare(self.pos, self.end)
        self.flat = np.empty(2 * (len(self.pos) + len(self.emits)), np.int64)
        kernel.replaced()
        self.truncated = True
        return True

    def _enumerate(
        self, arena, roots: Roots, first: int, last: int, counts, cap: int, order: bool, count_only: bool
    ) -> int:
        """``nodes.enumerate_roots`` into the buffers, through its machine code for these argument types
        (found once: numba's dispatch types every argument on every call, the spare tuple included)."""
        if self.cursor is not None and not count_only:
            self.cursor = new_cursor(arena, self.cursor)
            args = (arena, roots.node, roots.key, roots.limit, roots.emit, first, last)
            args += (self.pos, self.var, self.end, self.emits, counts, self.cursor)
            if self._cursor_entry is None:
                self._cursor_entry = kernel.entry(enumerate_cursor, args)
            return self._cursor_entry(*args)
        args = (
            arena,
            roots.node,
            roots.key,
            roots.limit,
            roots.emit,
            first,
            last,
            self.pos,
            self.var,
            self.end,
            self.emits,
            counts,
            cap,
            order,
            self.spare,
            self.forward,
            count_only,
        )
        if self._entry is None:
            self._entry = kernel.entry(enumerate_roots, args)
        return self._entry(*args)

    def arrays(self) -> tuple:
        """(offsets, positions, variable ids, emit position per complex event): the events as CSR rows,
        views of the buffers (valid until the next ``clear``)."""
        n = len(self)
        offsets = self.ends[: n + 1]
        return offsets, self.pos[: offsets[-1]], self.var[: offsets[-1]], self.emits[:n]

    def clear(self) -> None:
        self.counts[:] = 0

    def packed(self) -> list:
        """The complex events held, as one list (``pack_outputs``: per event its emit position, its length k,
        its k positions, its k variables), and the outputs emptied: a push's few events read without the
        four arrays of ``arrays``."""
        if not self.counts[1]:
            return []
        args = (self.pos, self.var, self.end, self.emits, self.counts, self.flat)
        if self._pack is None:
            self._pack = kernel.entry(pack_outputs, args)
        return self.flat[: self._pack(*args)].tolist()


def _spare(pos: np.ndarray, end: np.ndarray) -> tuple:
    """Room to sort one group of events (positions, variables; two words per event), or for the forward
    walk's edges (at most one per position of the group): as large as the buffers, but only the largest
    group's part of it is ever written."""
    return np.empty_like(pos), np.empty(len(pos), np.int32), np.empty_like(end), np.empty_like(end)


def _grown(a: np.ndarray, used: int, size: int) -> np.ndarray:
    """``a[:used]`` copied into an array of at least ``size`` and twice ``a``'s length (memory never
    written costs nothing)."""
    b = np.empty(max(size, 2 * len(a)), a.dtype)
    b[:used] = a[:used]
    return b


# ----------------------------------------------------------------------------- the first matches of a list
@jit
def first_matches(arena, roots, keys, limits, first, last, want):
    """The first ``want`` complex events of the group ``roots[first:last]`` (the lists one event completed:
    one key and limit) in docs/language.md §10.2 order, without enumerating the rest: a LIMIT's share of a
    list of 2^60 matches. Returns (positions, variables, ends, tied): each event's positions ascending and
    their variables, flat, ``ends`` where each ends; at least ``want`` events (every binding of the last
    one's positions), all of them when fewer; ``tied`` 1 when two events share their positions (their
    bindings then order them: ``Matches`` sorts), -1 when a path binds one position twice (this walk does
    not order those: nothing returned).

    A match is a path from a root down to ⊥, read from its last position; the order compares first
    positions first, so the walk goes the other way: up from ⊥ through the parents of the group's part of
    the arena (the nodes its roots reach inside the window, [CEL] §6's lists as a DAG), a trie of position
    prefixes depth first, each level taking the smallest position after the one it took last among the
    Ext nodes above its members (through unions). A prefix whose members a root reaches through unions
    alone is a whole match, written before its extensions. Every node the roots reach leads up to a root,
    so no branch is a dead end; the window bounds the first position only (one key and limit per group).
    Memory: a few arrays of the arena's size and the prefix; time: the prefixes walked (the matches' lengths
    and the backtracking between ``want`` of them) times the unions above each."""
    node_pos, node_var, node_left, node_right, node_start, node_used = arena
    n = node_used[0]
    key, limit = keys[first], limits[first]
    # the group's part of the arena, and each node's parents in it (CSR: ``parents[offsets[v]:offsets[v+1]]``)
    seen = np.zeros(n, np.bool_)
    is_root = np.zeros(n, np.bool_)
    stack = np.empty(n + 1, np.int64)
    edge_child = np.empty(2 * n, np.int64)
    edge_parent = np.empty(2 * n, np.int64)
    sp, n_edges = 0, 0
    for r in range(first, last):
        root = roots[r]
        if key - node_start[root] > limit:
            continue
        is_root[root] = True
        if not seen[root]:
            seen[root] = True
            stack[sp] = root
            sp += 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        if node == BOTTOM:
            continue
        for side in range(2):
            if side == 0:
                child = node_left[node]
            elif node_pos[node] == UNION and key - node_start[node_right[node]] <= limit:
                child = node_right[node]
            else:
                break
            edge_child[n_edges], edge_parent[n_edges] = child, node
            n_edges += 1
            if not seen[child]:
                seen[child] = True
                stack[sp] = child
                sp += 1
    offsets = np.zeros(n + 1, np.int64)
    for e in range(n_edges):
        offsets[edge_child[e] + 1] += 1
    for v in range(n):
        offsets[v + 1] += offsets[v]
    fill = offsets[:n].copy()
    parents = np.empty(max(n_edges, 1), np.int64)
    for e in range(n_edges):
        parents[fill[edge_child[e]]] = edge_parent[e]
        fill[edge_child[e]] += 1
    # the trie: level d's members (Ext nodes at one position, each with its member one level down) are
    # ``member[level_start[d]:level_start[d + 1]]``; ``taken[d]`` the position level d took last (-1: none
    # yet, the level's first visit, when its matches are written)
    stamp = np.zeros(n, np.int64)
    visit = 0
    member = np.empty(64, np.int64)
    below = np.empty(64, np.int64)
    level_start = np.zeros(64, np.int64)
    taken = np.full(64, -1, np.int64)
    member[0], below[0] = BOTTOM, -1
    level_start[1] = 1
    depth = 0
    above = np.empty(64, np.int64)  # the Ext nodes just above the level's members (through unions)
    above_member = np.empty(64, np.int64)  # and the member each is above
    out_pos = np.empty(64, np.int64)
    out_var = np.empty(64, np.int32)
    ends = np.empty(16, np.int64)
    n_out, n_events, tied = 0, 0, 0
    while depth >= 0:
        first_visit = depth > 0 and taken[depth] < 0
        start, stop = level_start[depth], level_start[depth + 1]
        ends_at = np.empty(stop - start, np.int64)  # the members this prefix's matches end at
        matched, n_above = 0, 0
        for m in range(start, stop):
            visit += 1
            stack[0] = member[m]
            sp = 1
            ends_here = False  # a root reaches the member through unions alone: the prefix is a match
            while sp > 0:
                sp -= 1
                v = stack[sp]
                ends_here = ends_here or is_root[v]
                for k in range(offsets[v], offsets[v + 1]):
                    u = parents[k]
                    if node_pos[u] == UNION:
                        if stamp[u] != visit:
                            stamp[u] = visit
                            stack[sp] = u
                            sp += 1
                    elif depth > 0 and node_pos[u] <= node_pos[member[m]]:
                        return out_pos[:0], out_var[:0], ends[:0], -1  # one position bound twice
                    elif depth > 0 or key - node_start[u] <= limit:  # a first position inside the window
                        if n_above == above.shape[0]:
                            above, above_member = grow(above, 0), grow(above_member, 0)
                        above[n_above], above_member[n_above] = u, m
                        n_above += 1
            if not (first_visit and ends_here):
                continue
            if _same_bindings(member, below, node_var, m, depth, ends_at, matched):
                continue  # a match already written (two paths of one list)
            ends_at[matched] = m
            matched += 1
            if n_out + depth > out_pos.shape[0]:
                out_pos, out_var = grow(out_pos, n_out + depth), grow(out_var, n_out + depth)
            if n_events == ends.shape[0]:
                ends = grow(ends, 0)
            at = m
            for j in range(depth - 1, -1, -1):  # the member chain down to level 1, written from the end
                out_pos[n_out + j], out_var[n_out + j] = node_pos[member[at]], node_var[member[at]]
                at = below[at]
            n_out += depth
            ends[n_events] = n_out
            n_events += 1
        if matched > 1:
            tied = 1
        if n_events >= want:
            break
        # the smallest position after the one this level took last: the next level's members are there
        best = -1
        for i in range(n_above):
            p = node_pos[above[i]]
            if p > taken[depth] and (best < 0 or p < best):
                best = p
        if best < 0:  # every extension of this prefix written: back to the level below
            depth -= 1
            continue
        taken[depth] = best
        count = stop
        for i in range(n_above):
            if node_pos[above[i]] == best:
                if count == member.shape[0]:
                    member, below = grow(member, 0), grow(below, 0)
                member[count], below[count] = above[i], above_member[i]
                count += 1
        depth += 1
        if depth + 2 > level_start.shape[0]:
            level_start, taken = grow(level_start, 0), grow(taken, 0)
        level_start[depth + 1] = count
        taken[depth] = -1
    return out_pos[:n_out], out_var[:n_out], ends[:n_events], tied


@jit
def _same_bindings(member, below, node_var, m, depth, ends_at, matched):
    """Whether the match ending at member ``m`` binds its positions as one ending at ``ends_at[:matched]``
    does (same positions: one prefix)."""
    for i in range(matched):
        a, b = m, ends_at[i]
        same = True
        for _ in range(depth):
            if node_var[member[a]] != node_var[member[b]]:
                same = False
                break
            a, b = below[a], below[b]
        if same:
            return True
    return False


# ----------------------------------------------------------------------------- driving the kernel
class Evaluator:
    """Runs the kernel over batches of events for one or more lists of runs (one per partition key).
    ``order``: sort each event's matches as they are enumerated (``Outputs``), for a batch run's ``Matches``."""

    def __init__(self, program, collect: bool = True, limit: Optional[int] = None, order: bool = True):
        self.program = program
        self.table = program.table
        self.arena = new_arena()
        self.collect = collect
        # room for many completed lists before the kernel returns to enumerate them: each return costs a
        # call of each kernel (tens of µs of argument unboxing), at 256 a third of A;B;C's run
        # (with a ``limit``, at most that many: the kernel returns to have them enumerated, and stops once
        # the outputs hold ``limit`` complex events)
        size = ROOTS if limit is None else max(1, min(ROOTS, limit))
        self.roots = Roots(
            np.empty(size, np.int32), np.empty(size, np.int64), np.empty(size), np.empty(size), np.zeros(1, np.int64)
        )
        self.outputs = Outputs(limit, order, program.enumeration == "constant-delay")
        self.info = np.zeros(5, np.int64)
        self.stopped = False  # a LIMIT left events unread (``run_all``)
        self.scratch = self._scratch(self.table.skip.shape[0])
        self.consume = program.query.consume in ("ANY", "PARTITION")
        # the kernel's entry point for the types of ``_batch`` (the last batch seen; a new batch object
        # with the same ``kernel._signature`` uses it too) with or without a ``RunsTable``: every other
        # argument is made here with fixed types
        self._advance, self._batch, self._layout = None, None, None
        self._held = None  # ``run_held``'s batch, runs, count of replacements, entry point, arguments, out
        self._arrays = ()  # the arrays the ``Held`` holds (``_held_still``)
        self._entry = None  # (signature, ``advance_enumerate``'s entry point for it)

    @property
    def emitted(self) -> int:
        """How many lists of complex events have completed so far (update-only runs count, not enumerate)."""
        return int(self.info[4])

    @staticmethod
    def _scratch(n: int) -> Scratch:
        return Scratch(
            np.full(n, NONE, np.int32),
            np.full(n, NONE, np.int32),
            np.empty(n, np.int32),
            np.empty(n, np.int32),
            np.empty(n, np.int32),
        )

    def new_runs(self) -> Runs:
        return new_runs(len(self.scratch.marked))

    def _fit(self, runs: Runs, table: Optional["RunsTable"]) -> Runs:
        """Scratch, ``runs`` and ``table`` with room for every state of the automaton. The kernel writes a
        slot per state it touches without bounds checks, and the automaton may have grown since ``runs``
        was made: through another list of runs (another partition, an earlier run of the same plan) or a
        MISS."""
        rows = self.table.skip.shape[0]
        if rows > len(self.scratch.marked):
            self.scratch = self._scratch(rows)
            kernel.replaced()
        if table is not None and table.stored.state.shape[1] < rows:
            table.fit(rows)
        return _grown_runs(runs, rows)

    def run(
        self,
        batch: Batch,
        runs: Runs,
        table: Optional["RunsTable"] = None,
        lowers=None,
        count: Optional[int] = None,
        first: int = 0,
    ) -> Runs:
        """Feed ``batch``'s events (``first`` to ``count``; all by default) to ``runs`` and return them
        (re-allocated when the automaton grew). A keyed batch loads and stores its sub-streams' runs in
        ``table``, whose every slot compaction must keep: ``lowers()`` gives each slot's lowest live start key."""
        self.info[2], self.info[3] = first, 0
        return self._drive(batch, runs, table, lowers, len(batch.pos) if count is None else count, None)

    def run_held(self, batch: Batch, runs: Runs, table: "RunsTable", lowers, count: int) -> tuple:
        """``run``, ``finish`` and ``Outputs.packed`` for a caller that passes the same batch, runs and table
        call after call (the matcher's held events, ``plan._Stepper``): while no array of the call was
        replaced (the automaton, arena, scratch, runs, table and outputs grow by replacing them: checked
        when ``kernel.replacements`` moved), one compiled call (``advance_held``) with the previous call's
        arguments, held in one ``Held``; a status other than OK is answered as ``run`` does. Returns (the
        runs, the complex events completed as ``Outputs.packed`` returns them)."""
        held = self._held
        if (
            held is None
            or held[0] is not batch
            or held[1] is not runs
            or (held[2] != kernel.replacements[0] and not self._held_still(table))
        ):
            return self._hold(batch, runs, table, lowers, count)
        packed = held[3](held[4], count)
        if packed >= 0:
            return runs, held[5][:packed].tolist() if packed else []
        if packed != -ENUMERATE:
            self._held = None
            runs = self._drive(batch, runs, table, lowers, count, -packed)
        self.finish()
        return runs, self.outputs.packed()

    def _held_still(self, table: "RunsTable") -> bool:
        """Whether the arrays ``run_held`` holds are still the automaton's, the table's, this evaluator's and
        its outputs' (then it holds the count of replacements now)."""
        now = (a for group in self._arrays_of(table) for a in group)
        if any(a is not kept for a, kept in zip(now, self._arrays)):
            return False
        self._held[2] = kernel.replacements[0]
        return True

    def _arrays_of(self, table: "RunsTable") -> tuple:
        """The arrays of ``run_held``'s call that grow by being replaced, in the order ``advance_held`` takes
        them: the automaton's, the table's, the arena, scratch, and the outputs' (tuples of arrays)."""
        outputs = self.outputs
        out = (outputs.pos, outputs.var, outputs.end, outputs.emits, outputs.spare, outputs.forward, outputs.flat)
        return self.table.arrays, table.stored, self.arena, self.scratch, out

    def _hold(self, batch: Batch, runs: Runs, table: "RunsTable", lowers, count: int) -> tuple:
        """``run_held`` through ``run`` and ``finish``, and its arguments held for the next calls."""
        runs = self.run(batch, runs, table, lowers, count)
        self.finish()
        outputs = self.outputs
        det, stored, arena, scratch, out = arrays = self._arrays_of(table)
        args = (det, batch, _none(self.program), self.consume, runs, stored, arena, scratch, self.roots, self.info)
        args += (out, outputs.counts, outputs.order)
        state = new_held(*args)
        if self._entry is None or self._entry[0] != kernel._signature(args):
            self._entry = (kernel._signature(args), kernel.entry(advance_held, (state, count)))
        self._arrays = tuple(a for group in arrays for a in group)  # (``_held_still`` compares them one by one)
        self._held = [batch, runs, kernel.replacements[0], self._entry[1], state, memoryview(outputs.flat)]
        return runs, outputs.packed()

    def _drive(self, batch: Batch, runs: Runs, table, lowers, n: int, status) -> Runs:
        """The kernel over ``batch``'s events from ``info[2]`` (at its phase ``info[3]``) to ``n``, answering
        what it asks for; ``status``: the answer of a call already made from there (None: none yet)."""
        compacted_at = -1  # the event at which the arena last filled up
        runs = self._fit(runs, table)
        while True:
            if status is None:
                args = (
                    self.table.arrays,
                    batch,
                    int(self.info[2]),
                    n,
                    _none(self.program),
                    self.consume,
                    runs,
                    None if table is None else table.stored,
                    self.arena,
                    self.scratch,
                    self.roots,
                    self.collect,
                    self.info,
                )
                if self._batch is not batch:
                    layout = kernel._signature(batch), table is None
                    if layout != self._layout:  # (finding it again costs ~0.1 ms, a micro-batch's worth of work)
                        self._advance, self._layout = kernel.entry(advance, args), layout
                    self._batch = batch
                status = self._advance(*args)
            if status == OK:
                return runs
            i = int(self.info[2])
            if status == MISS:
                self.table.fill(int(self.info[0]), int(self.info[1]))
                runs = self._fit(runs, table)
            elif status == ROOTS_FULL:
                self.outputs.take(self.arena, self.roots)
                if self.outputs.truncated:  # LIMIT: the outputs hold enough, the events after are not read
                    return runs
            else:
                self.outputs.take(self.arena, self.roots)
                # Full again at the same event: one event needs more free nodes than compaction left, so
                # make the arena grow (otherwise the kernel and compaction would take turns forever).
                self.compact(
                    runs,
                    float(batch.key[i] - batch.limit[i]),
                    table,
                    None if table is None else lowers(),
                    min_free=len(self.arena.pos) if i == compacted_at else 0,
                )
                compacted_at = i
            status = None

    def compact(
        self, runs: Runs, lower: float, table: Optional["RunsTable"] = None, lowers=None, min_free: int = 0
    ) -> None:
        """Reclaim every node no run reaches inside its window: ``runs`` (lowest live start ``lower``) and
        each slot of ``table`` (``lowers``: one per slot); the arena grows until at least ``min_free`` nodes
        are free. A run whose every event starts before its window is dropped from its list: its node is
        gone (NONE), and the kernel must never read it (a NONE index would wrap around to the new arena's
        unwritten last slot)."""
        k = int(runs.n[0])
        roots, starts = [runs.node[:k]], [np.full(k, lower)]
        if table is not None:
            stored = table.stored
            slot, column = np.nonzero(np.arange(stored.state.shape[1]) < stored.n[:, None])  # slot by slot
            roots.append(stored.node[slot, column])
            starts.append(lowers[slot])
        self.arena, new_ids = compact(
            self.arena, np.concatenate(roots).astype(np.int32), np.concatenate(starts), min_free
        )
        kernel.replaced()
        kept = new_ids[:k] != NONE
        n_kept = int(np.count_nonzero(kept))
        runs.state[:n_kept] = runs.state[:k][kept]
        runs.node[:n_kept] = new_ids[:k][kept]
        runs.n[0] = n_kept
        if table is not None:
            ids = new_ids[k:]
            kept = ids != NONE
            states = stored.state[slot[kept], column[kept]]
            slot = slot[kept]
            n = np.bincount(slot, minlength=len(stored.n))
            column = np.arange(len(slot)) - (np.cumsum(n) - n)[slot]  # each kept run's place in its row
            stored.state[slot, column], stored.node[slot, column] = states, ids[kept]
            stored.n[:] = n

    def finish(self) -> None:
        self.outputs.take(self.arena, self.roots)


class RunsTable:
    """The lists of runs of an incremental matcher's sub-streams (one per PARTITION BY key), a slot each
    of one ``Stored``, which the kernel loads and stores itself (``advance``): a micro-batch runs all its
    keys in one kernel call, and a push loads and stores its key's slot the same way. A free slot holds no
    runs (``n`` 0), so compaction passes over it."""

    def __init__(self, columns: int):
        self.stored = Stored(np.empty((8, columns), np.int32), np.empty((8, columns), np.int32), np.zeros(8, np.int64))
        self.free = list(range(7, -1, -1))

    def take(self, count: int) -> list:
        """``count`` free slots, each holding the runs of a sub-stream that has not started (the initial
        state's)."""
        if len(self.free) < count:
            rows = len(self.stored.n)
            more = max(rows, count - len(self.free))
            grown = (np.concatenate([a, np.zeros((more, *a.shape[1:]), a.dtype)]) for a in self.stored)
            self.stored = type(self.stored)(*grown)  # (``strategies.GroupsTable``'s has other arrays)
            kernel.replaced()
            self.free[:0] = range(rows + more - 1, rows - 1, -1)
        slots = self.free[len(self.free) - count :]
        del self.free[len(self.free) - count :]
        self.restart(slots)
        return slots

    def release(self, slots: list) -> None:
        self.stored.n[_index(slots)] = 0
        self.free += slots

    def restart(self, slots) -> None:
        """``slots`` (a list or array) back to the runs of a sub-stream that has not started."""
        at = _index(slots)
        self.stored.state[at, 0], self.stored.node[at, 0], self.stored.n[at] = 0, BOTTOM, 1

    def fit(self, columns: int) -> None:
        """Room for ``columns`` runs per slot (one per state of the automaton; ``strategies.GroupsTable``'s:
        groups), more than it has."""
        *arrays, n = self.stored
        grown = [np.empty((len(n), columns, *a.shape[2:]), a.dtype) for a in arrays]
        for new, old in zip(grown, arrays):
            new[:, : old.shape[1]] = old
        self.stored = type(self.stored)(*grown, n)
        kernel.replaced()

    def runs(self, slot: int) -> tuple:
        """(the states, their nodes) of ``slot``'s runs."""
        k = int(self.stored.n[slot])
        return self.stored.state[slot, :k], self.stored.node[slot, :k]


def _index(slots):
    """``slots`` as an index: its one slot as an int when it has one (a push's new or dropped key: numpy
    indexes by an int ~4x faster than by a list)."""
    return int(slots[0]) if len(slots) == 1 else slots


def _none(program) -> int:
    none = program.letters.none
    return -1 if none is None else none


def run_all(program, stream, collect: bool = True, limit: Optional[int] = None) -> Evaluator:
    """Algorithm 1 over a whole finite stream (every partition in turn); the evaluator holds the outputs
    (when ``limit`` is given, those of the first events whose complex events number at least ``limit``, the
    events after them not read; all of them otherwise). Under PARTITION BY the limit holds per partition
    (the first n of the result are among the first n of each): a partition's events after its first n are
    not read, and the next partition's are (``stopped`` says whether any were left unread)."""
    inputs = Inputs(program, stream)
    evaluator = Evaluator(program, collect, limit)
    runs = evaluator.new_runs()
    partitioned = limit is not None and bool(program.query.partition_by)
    for batch in inputs.batches(program.letters.none):
        if not partitioned:
            runs = evaluator.run(batch, runs)
            if evaluator.outputs.truncated:
                break
            continue
        bounds = np.r_[np.flatnonzero(batch.reset), len(batch.pos)]
        if bounds[0] != 0:  # the batch opens in the partition the one before it ended in
            bounds = np.r_[0, bounds]
        for first, last in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            if batch.reset[first]:  # a new partition: the last one's lists enumerated, then its own n
                evaluator.finish()
                outputs = evaluator.outputs
                evaluator.stopped |= outputs.truncated
                outputs.limit, outputs.truncated = len(outputs) + limit, False
            if not evaluator.outputs.truncated:
                runs = evaluator.run(batch, runs, first=first, count=last)
    evaluator.finish()
    evaluator.stopped |= evaluator.outputs.truncated
    return evaluator


class _Counted(Outputs):
    """Outputs that count the complex events of each list (``count_roots``) instead of writing them."""

    def __init__(self):
        super().__init__()
        self.total = 0

    def take(self, arena, roots: Roots, cap: int = 0) -> None:
        n_roots = int(roots.n[0])
        if n_roots and self.total >= 0:
            counts = np.zeros(6, np.int64)
            count_roots(arena, roots.node, roots.key, roots.limit, roots.emit, 0, n_roots, counts)
            self.total = -1 if counts[1] < 0 or self.total + int(counts[1]) >= 2**63 else self.total + int(counts[1])
        roots.n[0] = 0


def count_all(program, stream) -> int:
    """How many complex events ``run_all`` enumerates over ``stream`` (no LIMIT), counted list by list
    without enumerating one; -1 past a 64-bit count."""
    evaluator = Evaluator(program)
    evaluator.outputs = counted = _Counted()
    runs = evaluator.new_runs()
    for batch in Inputs(program, stream).batches(program.letters.none):
        runs = evaluator.run(batch, runs)
    evaluator.finish()
    return counted.total


def partial_events(arena, nodes, lowers, cap: int) -> list:
    """The complex events of each node (partial matches, as position tuples) whose start key is at least
    its lower bound, at most ``cap`` per node."""
    n = len(nodes)
    roots = Roots(
        np.asarray(nodes, np.int32),
        np.arange(n, dtype=np.int64),
        np.zeros(n),
        -np.asarray(lowers, np.float64),
        np.array([n], np.int64),
    )
    outputs = Outputs(order=False)
    outputs.take(arena, roots, cap)
    per_node = [[] for _ in range(n)]
    offsets, positions, _, node_index = outputs.arrays()
    flat, bounds = positions.tolist(), offsets.tolist()
    for k, node in enumerate(node_index.tolist()):
        per_node[node].append(tuple(flat[bounds[k] : bounds[k + 1]]))
    return per_node
