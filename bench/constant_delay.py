"""The automaton's constant-delay enumeration (``enumeration="constant-delay"``, [CEL] Algorithm 3's
claim; docs/automaton-engine.md, "Constant-delay enumeration"): the delay between consecutive outputs as
the matches grow from 10 to 100,000 events, the whole enumeration against the default ordered one, and
end to end.

**Delay.** Streams, n = 10 .. 100,000: no window, ``A+ a ; B b`` over A^n B and ``(A+ a ; B b)+ ; C c``
over (A A B)^(n/3) C, the last event completing 2^n (or so) matches, the i-th output of the walk about i
events long (so the first 100,000 outputs reach matches of ~n events); under a window (longer than the
stream), ``((A a ; B b) OR (C c ; D d)) ; E e`` over C A B D^n E, where each D joins runs started at the
C to the list holding the A's (the list that grew a spine of n unions before ``nodes._place``), and
``((A a ; B b) OR (C c ; D d) OR (F f ; G g)) ; E e`` over A C F G (B D)^(n/2) E (two sources older than
the list's latest, taking turns), n + 1 matches of 3 events. Algorithm 1 runs over the stream, then the
first 100,000 matches of the last event are enumerated one per ``nodes.cursor_fill`` call (one complex
event, left in the cursor's path), ``RUNS`` runs of that walk, each right after the walk's first ``WARM``
outputs untimed (the update leaves the newest nodes, where the walk starts, in the cache, which the
Python between runs does not).

*The clock.* The time-stamp counter (``llvm.readcyclecounter`` is ``rdtsc``; its period measured against
perf_counter over 0.3 s) read between two ``lfence`` around each call (``_cycles``: a call's loads are
counted in it, not in the next call nor between two calls). It does not advance every cycle: on the
machine of bench/README.md's run (an AMD EPYC KVM guest) it adds 26 units (a cycle of 2.6 GHz each) every
10 ns, ``rdtscp`` the same (``counter_step`` prints the step), and two fenced reads back to back differ by
2-3 steps. So each call's time is resolved below the step (``resolve``): its least run, refined by the
mean of its runs within one step of the least (a call of d ns reads k or k + 1 steps, k + 1 with the
probability of d's fraction of a step, the runs entering it at independent phases of the counter), never
less than the least run, the runs further above it left out (an interrupt, another process's eviction).
The first lines printed check it (``chain_check``): calls making k = 0 .. 32 dependent reads of the L1
cache lie on a line (~1.9 ns a read here) within a fraction of a ns, where the step would show as stairs
of 10 ns.

*The columns.* **first ns**: the first call (opening the walk and writing the first output whole: the
time to the first output, reported apart); **max ns**, **p99 ns**, **p99.9 ns**, **median ns**: the delay
between consecutive outputs, every later call's time less its writing: the positions it wrote (the part
of the path that differs from the previous match, counted on the trace, ``_trace``) times **ns/position**,
measured in the same run by a loop writing every position the walk writes, from the same nodes to the
same path slots in the same order, timed whole (``_copy``); **calls > 100 ns**: how many delays pass
100 ns; **most written**: the most positions one call wrote. Floors in the same run, resolved the same
way: **empty ns**, **empty max ns**, the median and maximum of the same loop around an empty call
(``_empty``: the counter's reads, the fences and a call), as many calls; **bare max ns**, **bare median
ns**, **bare at the slowest ns**: the same walk with no work per node (``_bare``: per call the same reads
and writes of the same memory in the same order, the nodes taken from the trace instead of chased), its
maximum, its median, and its time at the call where the cursor's delay is the largest: where that call
is slow because of the memory it touches, the bare walk is slow there too. **max steps**: union nodes and
pops per call beyond one per position written (the quantity the bound is about: at most the left
spine, ≤ 2), on the trace. The first line also gives the time of one read that misses the caches
(``memory_miss``), the third what a first touch of a 2 MB page costs a prefetch and a load once its
page-table entries have left the caches (``page_walk``). Where the slow calls sit (``_pages``): **2 MB
entries**, the calls that are the walk's first access to a 2 MB page of one of the arrays it reads or
writes (the arena's, the path, the stack); **of them near one**, how many of the calls over 100 ns come
at most ``NEAR`` calls before or after such a call (before: the call whose prefetch first touches the
page); **slowest call**, where the largest delay is; **huge pages %**, the share of the arena's and the cursor's resident memory the kernel backs with
transparent huge pages (``AnonHugePages``; none below 2 MB). The spreads printed under the table are the
largest row over the smallest, of the delays as measured (the empty call's time included) and of the
delays over the empty call (``net``).

**Total.** The whole enumeration of the last event's matches through ``Outputs.take`` (what a batch run
calls; buffers grown by a first take, best of ``REPEATS``), the cursor (``enumerate_cursor``) over the
default ordered enumeration, on the streams whose matches can all be written (up to ~1M positions: past
the caches both are bound by memory, 30-90 ms for 2.6M positions at n = 18 and as noisy).

**End to end.** ``cepkit.match(query, events, engine="automaton", enumeration=...).position_arrays()``,
best of 3, constant-delay over ordered (the cursor's rows are then ordered by ``Matches``).

A last table (``--update``): the update (Algorithm 1 over the stream, best of 5) per event with today's
kernel and with the kernel of ``--before`` (a git revision), on the windowed streams and on ``A a ; B b ;
C c WITHIN 10 s`` and ``1000 s`` over 200,000 uniform events (A-D, 10 per second); with ``--before``,
the delay table gets **steps before**, the steps over the arena that kernel makes. ``--spines``: the
longest left spine and the most nodes one event wrote over searches biased towards older runs
(``spine_search``), with ``--before`` the longest spine that kernel makes on the same streams.

    python bench/constant_delay.py            # n = 10 .. 100,000
    python bench/constant_delay.py --quick    # n = 10 .. 10,000
    python bench/constant_delay.py --update --before 85cd9a1   # the update against that kernel, one run
    python bench/constant_delay.py --spines --before 85cd9a1   # spines and nodes per event (~1 min)
    python bench/constant_delay.py --ab REV   # today's cursor_fill against REV's (ab), alternating
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

import cepkit
from cepkit.engines.automaton import evaluate
from cepkit.engines.automaton.nodes import HUGE_PAGE, UNION, cursor_fill, cursor_open, new_cursor, node_array
from cepkit.engines.compiled import prefetch
from cepkit.lang import parse
from cepkit.runtime.registry import get_engine
from cepkit.runtime.stream import Stream
from streams import best_of, source_at

OUTPUTS = 100_000  # matches timed per stream
REPEATS = 5  # runs of a whole enumeration (the least kept)
RUNS = 16  # runs of a timed walk (each call's least, refined by ``resolve``)
WARM = 1_000  # outputs walked untimed before each timed walk
NEAR = 256  # calls from the walk's first touch of a 2 MB page counted as "near one" (a few 4 KB pages of the arena)
NS_PER_CYCLE = 1.0  # measured by ``main`` (``_ns_per_cycle``)
STEP = 1  # the counter's step, in its units (``counter_step``, measured by ``main``)

WINDOWED = "((A a ; B b) OR (C c ; D d)) ; E e WITHIN 10000000 s"
ALTERNATING = "((A a ; B b) OR (C c ; D d) OR (F f ; G g)) ; E e WITHIN 10000000 s"
QUERIES = ("A+ a ; B b", "(A+ a ; B b)+ ; C c", WINDOWED, ALTERNATING)
# the streams whose matches are all written for the totals: 2^n − 1 matches of A+ a ; B b, (A A B)^(n/3) C
TOTALS = {QUERIES[0]: (10, 13, 16), QUERIES[1]: (10, 16, 19), WINDOWED: (10, 1_000, 100_000)}
TOTALS[ALTERNATING] = TOTALS[WINDOWED]


@intrinsic
def _cycles(typingctx):
    """The time-stamp counter (``llvm.readcyclecounter``: ``rdtsc``) between two ``lfence``: every
    instruction before it completes first, none after it starts before (a call's loads, a miss included,
    are counted in that call and not in the next, nor between the two reads)."""

    def codegen(context, builder, signature, args):
        fence = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.lfence"
        )
        read = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(64), []), "llvm.readcyclecounter"
        )
        builder.call(fence, [])
        now = builder.call(read, [])
        builder.call(fence, [])
        return now

    return types.int64(), codegen


@njit
def _read_cycles():
    return _cycles()


@njit
def _counter_steps(reads, steps):
    """The counter's increments: ``reads`` reads, each kept where it differs from the one before."""
    k, last = 0, _cycles()
    for _ in range(reads):
        now = _cycles()
        if now != last and k < steps.shape[0]:
            steps[k] = now - last
            k += 1
        last = now
    return k


def counter_step() -> int:
    """The counter's step in its own units: the greatest common divisor of its frequent increments between
    two reads (it need not count every cycle: on this AMD guest it adds 26 every 10 ns, counted at the
    100 MHz reference clock; ``rdtscp`` reads the same counter)."""
    steps = np.zeros(100_000, np.int64)
    got = _counter_steps(200_000, steps)
    values, counts = np.unique(steps[:got], return_counts=True)
    return int(np.gcd.reduce(values[counts >= 0.01 * got]))


def _ns_per_cycle(seconds: float = 0.3) -> float:
    """The cycle counter's period, against perf_counter over ``seconds`` (converting each run's cycles by
    that run's own perf_counter, which also counts the call around the timed loop, made the 11 calls of
    n = 10 look 10-20x slower than they are)."""
    _read_cycles()
    start, c0 = time.perf_counter(), _read_cycles()
    while time.perf_counter() - start < seconds:
        pass
    return (time.perf_counter() - start) * 1e9 / (_read_cycles() - c0)


def resolve(runs: np.ndarray) -> np.ndarray:
    """ns per call from ``runs`` (runs x calls, in counter units): each call's least run, refined below the
    counter's step by the mean of its runs within one step of the least. A call of d ns reads k or k + 1
    steps, k + 1 with the probability of d's fraction of a step, since a run enters it at a phase of the
    counter independent of the other runs'; so that mean is d whatever d's fraction, and never less than
    the least (the runs further above it met something else: an interrupt, another process's eviction).
    ``chain_check`` shows the resolution."""
    least = runs.min(axis=0)
    near = runs <= least + STEP + STEP // 2  # (the counter's increments split in two now and then: 1 + 25)
    return np.where(near, runs, 0).sum(axis=0) / near.sum(axis=0) * NS_PER_CYCLE


def _timed_runs(kernel, args: tuple, calls: int, repeats: int = RUNS) -> np.ndarray:
    """ns per call of ``kernel(*args, cycles)`` (which times its calls into ``cycles`` and returns how many),
    ``repeats`` runs resolved by ``resolve``; the arrays made and written before the runs (no run faults in
    their pages between two calls)."""
    runs = np.zeros((repeats, calls), np.int64)
    got = calls
    for run in runs:
        got = kernel(*args, run)
    return resolve(runs[:, :got])


def _timer(fill):
    """``_timed`` over ``fill`` (``nodes.cursor_fill``, or a baseline's: ``--ab``)."""

    @njit
    def timed(arena, cursor, root, key, limit, cap, cycles):
        """Up to ``cap`` matches of ``root``, one per ``fill`` call (left in the path), the counter read
        around each call. Returns how many."""
        none, none_var, counts = np.empty(0, np.int64), np.empty(0, np.int32), np.zeros(2, np.int64)
        cursor_open(arena, cursor, root, key, limit)  # the walk's start untimed first (``WARM``)
        fill(arena, cursor, key, limit, WARM, False, 0, none, none_var, none, none, counts)
        cursor_open(arena, cursor, root, key, limit)
        n = 0
        while n < cap:
            t0 = _cycles()
            walked = fill(arena, cursor, key, limit, 1, False, 0, none, none_var, none, none, counts)
            cycles[n] = _cycles() - t0
            if walked == 0:
                break
            n += 1
        return n

    return timed


_timed = _timer(cursor_fill)


@njit
def _nothing(state, ring, steps):
    """The empty call (``steps`` = 0): one read and one write of the cursor's state, as a call of
    ``cursor_fill`` does around its walk; with ``steps``, that many dependent reads through ``ring`` (a cycle
    in the L1 cache: each waits for the one before) between them (``chain_check``)."""
    at = state[0] & (ring.shape[0] - 1)
    for _ in range(steps):
        at = ring[at]
    state[2] = at
    return 1


@njit
def _empty(state, ring, steps, cap, cycles):
    """``_timed``'s loop with ``_nothing`` in place of ``cursor_fill``, ``cap`` times: the floor under the
    delays (what the counter, the loop and a call that does nothing cost)."""
    for n in range(cap):
        t0 = _cycles()
        _nothing(state, ring, steps)
        cycles[n] = _cycles() - t0
    return cap


RING = np.roll(np.arange(64), 1)  # ``_nothing``'s cycle: 512 bytes


def chain_check(lengths=(0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32), calls: int = 20_000) -> str:
    """The resolution of ``resolve``: the median ns of calls of ``_nothing`` with k dependent reads of the L1
    cache (a few cycles each, under a step of the counter), a line through them and the largest distance
    from it. Were the counter's step showing through, the medians would sit on its multiples."""
    state = np.zeros(3, np.int64)
    medians = [float(np.median(_timed_runs(_empty, (state, RING, k, calls), calls))) for k in lengths]
    slope, intercept = np.polyfit(lengths, medians, 1)
    off = max(abs(m - (intercept + slope * k)) for k, m in zip(lengths, medians))
    shown = "/".join(f"{m:.1f}" for m in medians)
    return (
        f"k = {'/'.join(map(str, lengths))} dependent reads per call: {shown} ns "
        f"({slope:.2f} ns each, at most {off:.1f} ns off that line)"
    )


@njit
def _touch(buffer, lines, how, cycles):
    """Per line of ``lines`` (an index into ``buffer``), the counter around nothing (``how`` 0), a prefetch
    of it (1) or a load of it (2)."""
    total = 0
    for k in range(lines.shape[0]):
        t0 = _cycles()
        if how == 1:
            prefetch(buffer, lines[k])
        elif how == 2:
            total += buffer[lines[k]]
        cycles[k] = _cycles() - t0
    return total


@njit
def _sweep(buffer):
    total = 0
    for i in range(0, buffer.shape[0], 8):
        total += buffer[i]
    return total


def page_walk(pages: int = 32, sweep_mb: int = 256) -> str:
    """What a first touch of a 2 MB page costs when its translation and page-table entries have left the
    caches (a sweep over ``sweep_mb`` MB before each run), one line per huge page of a buffer in huge
    pages (``nodes.node_array``), in a shuffled order: the median and max ns of nothing, a prefetch and a
    load around the fenced counter, each the median of 5 runs; then the same over random lines of the
    buffer without the sweep, new ones in each run (lines past the caches, translations cached): there a
    prefetch costs little (the fence does not wait for its line), so what it costs after the sweep is
    its page walk."""
    buffer = node_array(pages * HUGE_PAGE // 8, np.int64)
    buffer[:] = 1
    other = node_array(sweep_mb * (1 << 20) // 8, np.int64)
    other[:] = 1
    rng = np.random.default_rng(1)
    firsts = rng.permutation(pages).astype(np.int64) * (HUGE_PAGE // 8) + 520  # (not a page's first line)
    shown = []
    for sweep in (True, False):
        for how, name in enumerate(("nothing", "a prefetch", "a load")):
            runs = np.zeros((5, pages if sweep else 4_096), np.int64)
            for run in runs:
                if sweep:
                    _sweep(other)
                lines = firsts if sweep else rng.integers(0, len(buffer), len(run)).astype(np.int64)  # (new ones)
                _touch(buffer, lines, how, run)
            ns = (np.median(runs, axis=0) if sweep else runs.ravel()) * NS_PER_CYCLE
            shown.append(f"{name} {np.median(ns):.0f}" + (f" (max {ns.max():.0f})" if sweep else ""))
    return (
        f"a first touch of a 2 MB page after a sweep of the caches: {', '.join(shown[:3])} ns; "
        f"a random line of {pages * 2} MB, translations cached: {', '.join(shown[3:])} ns (medians)"
    )


@njit
def _chase(order, loads):
    """``loads`` dependent reads through ``order`` (a random cycle), each waiting for the one before."""
    at = 0
    for _ in range(loads):
        at = order[at]
    return at


def memory_miss(megabytes: int = 256, loads: int = 200_000) -> float:
    """ns per read that misses the caches: a chase through a random cycle over ``megabytes`` of int64 (past
    the L3 cache and the TLB's reach with 4 KB pages), best of 3."""
    n = megabytes * (1 << 20) // 8
    cycle = np.random.default_rng(0).permutation(n)
    order = np.empty(n, np.int64)
    order[cycle] = np.roll(cycle, -1)
    _chase(order, 1_000)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        _chase(order, loads)
        best = min(best, time.perf_counter() - start)
    return best * 1e9 / loads


@njit
def _trace(arena, cursor, root, key, limit, cap, ids, slots, ends, written, sizes, steps):
    """The walk ``_timed`` times, call by call, into a trace: the nodes each call enters, in order, in
    ``ids[ends[k - 1]:ends[k]]``, with ``slots`` the index each writes (the stack's, where a union pushes its
    right child; the path's, where an Ext node writes its position; -1: none); per call the positions it
    wrote (``written``), the size of its match (``sizes``) and its ``steps``: union nodes and pops beyond
    one per position written (the quantity the bound is about: at most the left spine). With empty
    ``ids``, counts only. Returns (calls, nodes)."""
    node_pos, node_left, node_right, node_start = arena[0], arena[2], arena[3], arena[4]
    stack_node, stack_depth, path_pos, state = cursor[0], cursor[1], cursor[2], cursor[4]
    top = path_pos.shape[0] - 1
    keep = ids.shape[0] > 0
    unbounded = limit == np.inf
    cursor_open(arena, cursor, root, key, limit)
    sp, n, t = state[0], 0, 0
    while sp > 0 and n < cap:
        sp -= 1
        node, depth = stack_node[sp], stack_depth[sp]
        fresh, unions = depth, 0
        while node != 0:
            slot = -1
            if node_pos[node] == UNION:
                unions += 1
                right = node_right[node]
                if unbounded or key - node_start[right] <= limit:
                    stack_node[sp], stack_depth[sp] = right, depth
                    slot = sp
                    sp += 1
            else:
                slot = top - depth
                depth += 1
            if keep:
                ids[t], slots[t] = node, slot
            t += 1
            node = node_left[node]
        if keep:
            ends[n], written[n], sizes[n] = t, depth - fresh, depth
            steps[n] = 1 + unions - (depth - fresh)
        n += 1
    return n, t


@njit
def _bare(arena, cursor, ids, slots, ends, got, windowed, cycles):
    """The trace's walk with no work per node: per call, the same reads and writes of the same memory in
    the same order (each node's ``pos`` and ``left``; a union's ``right``, its ``start`` under a window, the
    stack slot it pushes; an Ext node's ``var`` and the path slot it writes), the nodes read from the trace
    instead of chased and nothing decided, the counter read around each call as ``_timed`` does. The
    call's part of the trace is copied to a small buffer between two calls, untimed (the trace's own pages
    are not the walk's memory). Where a call of the cursor is slow because of the memory it touches, this
    one is slow too."""
    node_pos, node_var, node_left, node_right, node_start, _ = arena
    stack_node, stack_depth, path_pos, path_var, state = cursor
    width, begin = 1, 0
    for k in range(got):
        width, begin = max(width, ends[k] - begin), ends[k]
    near_ids, near_slots = np.empty(width, np.int64), np.empty(width, np.int64)
    total = 0.0
    for timed in (False, True):  # the walk's first ``WARM`` calls untimed first, as ``_timed`` does
        begin = 0
        for k in range(got if timed else min(got, WARM)):
            m = ends[k] - begin
            near_ids[:m], near_slots[:m] = ids[begin : ends[k]], slots[begin : ends[k]]
            t0 = _cycles()
            for t in range(m):
                node, slot = near_ids[t], near_slots[t]
                pos = node_pos[node]
                if pos == UNION:
                    right = node_right[node]
                    if windowed:
                        total += node_start[right]
                    if slot >= 0:
                        stack_node[slot], stack_depth[slot] = right, t
                else:
                    path_pos[slot], path_var[slot] = pos, node_var[node]
                total += node_left[node]
            cycles[k] = _cycles() - t0
            begin = ends[k]
    state[2] = int(total)  # (kept: its reads are not optimised away)
    return got


@njit
def _copy(arena, cursor, ids, slots, length):
    """The counter over one loop writing every position the trace's walk writes, in its order, from the
    same Ext nodes to the same path slots: the time to write a position (``length`` entries of the trace)."""
    node_pos, node_var = arena[0], arena[1]
    path_pos, path_var = cursor[2], cursor[3]
    t0 = _cycles()
    for t in range(length):
        pos = node_pos[ids[t]]
        if pos != UNION:
            path_pos[slots[t]], path_var[slots[t]] = pos, node_var[ids[t]]
    return _cycles() - t0


@njit
def _page_entries(arena, cursor, root, key, limit, cap, bases, entered):
    """Per match, as ``_timed`` walks them: whether its call is the walk's first access to a 2 MB page
    (``HUGE_PAGE``, by address; ``bases``: the addresses of the arena's arrays then the cursor's) of one of
    the arrays it reads or writes. On a walk down the arena, where it enters the next huge page of one."""
    node_pos, node_var, node_left, node_right, node_start, _ = arena
    stack_node, stack_depth, path_pos, path_var, state = cursor
    sizes = (8, 4, 4, 4, 8, 4, 8, 8, 4)
    seen = np.zeros((9, node_pos.shape[0] * 8 // HUGE_PAGE + 2), np.bool_)
    top = path_pos.shape[0] - 1
    unbounded = limit == np.inf
    cursor_open(arena, cursor, root, key, limit)
    sp, n = state[0], 0
    touched = np.full(9, -1, np.int64)  # per array, the index of its access being checked (-1: none yet)
    while sp > 0 and n < cap:
        sp -= 1
        node, depth = stack_node[sp], stack_depth[sp]
        touched[5], touched[6] = sp, sp
        entered[n] = False
        while node != 0:
            touched[0], touched[2] = node, node
            if node_pos[node] == UNION:
                right = node_right[node]
                touched[3] = node
                if not unbounded:
                    touched[4] = right
                if unbounded or key - node_start[right] <= limit:
                    stack_node[sp], stack_depth[sp] = right, depth
                    touched[5], touched[6] = sp, sp
                    sp += 1
            else:
                touched[1], touched[7], touched[8] = node, top - depth, top - depth
                depth += 1
            for k in range(9):
                if touched[k] >= 0:
                    page = (bases[k] + touched[k] * sizes[k]) // HUGE_PAGE - bases[k] // HUGE_PAGE
                    entered[n] = entered[n] or not seen[k, page]
                    seen[k, page] = True
            node = node_left[node]
        n += 1
    return n


def _huge_share(arrays) -> float:
    """The share of the resident memory of the mappings holding ``arrays`` (those of a huge page or more)
    that the kernel backs with transparent huge pages (``AnonHugePages`` in /proc/self/smaps), or NaN."""
    wanted = [a.ctypes.data for a in arrays if a.nbytes >= HUGE_PAGE]
    rss = huge = 0
    try:
        blocks = Path("/proc/self/smaps").read_text().split("\n")
    except OSError:  # pragma: no cover - not Linux
        return float("nan")
    span, fields = None, {}
    for line in blocks + ["0-0 end"]:
        head = line.split(" ", 1)[0]
        if "-" in head and ":" not in head:
            if span and any(span[0] <= w < span[1] for w in wanted):
                rss, huge = rss + fields.get("Rss:", 0), huge + fields.get("AnonHugePages:", 0)
            lo, hi = head.split("-")
            span, fields = (int(lo, 16), int(hi, 16)), {}
        elif line.endswith(" kB"):
            name, value = line.split()[:2]
            fields[name] = int(value)
    return 100.0 * huge / rss if rss else float("nan")


def _types(query: str, n: int) -> list:
    if query == WINDOWED:
        return ["C", "A", "B"] + ["D"] * n + ["E"]
    if query == ALTERNATING:
        return ["A", "C", "F", "G"] + ["B", "D"] * max(1, n // 2) + ["E"]
    if query.startswith("A+"):
        return ["A"] * n + ["B"]
    return ["A", "A", "B"] * max(1, n // 3) + ["C"]


def _frame(types: list, per_second: float = 1.0) -> pd.DataFrame:
    return pd.DataFrame({"type": types, "ts": np.arange(len(types), dtype=float) / per_second})


def _program(query: str):
    return get_engine("automaton").compile(parse(query), enumeration="constant-delay").program


def _update(module, program, stream: Stream):
    """Algorithm 1 of ``module`` (today's ``evaluate`` or the baseline's) over the stream, the last event's
    lists of matches left unenumerated."""
    evaluator = module.Evaluator(program)
    runs = evaluator.new_runs()
    for batch in evaluate.Inputs(program, stream).batches(program.letters.none):  # the inputs: today's
        runs = evaluator.run(batch, runs)
    return evaluator


def _last_list(evaluator) -> tuple:
    roots = evaluator.roots
    last = int(roots.n[0]) - 1
    return int(roots.node[last]), float(roots.key[last]), float(roots.limit[last])


def baseline(revision, names=("nodes", "evaluate"), prefix: str = "_baseline_"):
    """``nodes.py`` and ``evaluate.py`` (``names``) as of ``revision`` (None: the working tree's), loaded as
    modules of the automaton package (``_baseline_nodes``, ``_baseline_evaluate``, or ``prefix``'s): the
    kernel before this change, in the same run. Returns the last one loaded. (In some processes a module
    loaded this way ran a whole list ~2x slower than the package's own, in others not: ``--ab`` loads both
    sides so.)"""
    folder = Path(tempfile.mkdtemp(prefix="cepkit-baseline-"))
    package = "cepkit.engines.automaton"
    for name in names:
        path = f"cepkit/engines/automaton/{name}.py"
        text = source_at(revision, path) if revision else (Path(__file__).resolve().parent.parent / path).read_text()
        text = text.replace("from .nodes import", f"from .{prefix}nodes import")
        # (``jit`` moved from the automaton's kernel module to ``engines.compiled`` since)
        (folder / f"{prefix}{name}.py").write_text(
            text.replace("from .kernel import jit", "from ..compiled import jit")
        )
        spec = importlib.util.spec_from_file_location(f"{package}.{prefix}{name}", folder / f"{prefix}{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules[f"{package}.{prefix}{names[-1]}"]


def trace(arena, root, key, limit) -> tuple:
    """``_trace``'s arrays (ids, slots, ends, written, sizes, steps) over the first ``OUTPUTS`` calls, and the
    number of calls."""
    calls, entered = _trace(arena, new_cursor(arena), root, key, limit, OUTPUTS, *([np.empty(0, np.int64)] * 6))
    arrays = (np.empty(entered, np.int64), np.empty(entered, np.int64), *(np.empty(calls, np.int64) for _ in range(4)))
    _trace(arena, new_cursor(arena), root, key, limit, OUTPUTS, *arrays)
    return arrays, calls


def _pages(arena, root, key, limit, delay) -> tuple:
    """(how many calls of the walk first touch a 2 MB page, how many of the delays over 100 ns come at most
    ``NEAR`` calls from such a call, before or after, the share of the arena's and the walked cursor's memory
    in huge pages, ``_huge_share``): where the slow calls sit (docs/automaton-engine.md, "Measured")."""
    cursor = new_cursor(arena)
    bases = np.array([a.ctypes.data for a in (*arena[:5], *cursor[:4])], np.int64)
    entered = np.zeros(len(delay) + 1, np.bool_)
    got = _page_entries(arena, cursor, root, key, limit, len(entered), bases, entered)
    entries = np.flatnonzero(entered[:got])
    calls = np.arange(got)
    after = np.searchsorted(entries, calls)  # the first entry at or after each call
    distance = np.minimum(
        np.abs(entries[np.minimum(after, len(entries) - 1)] - calls),
        np.abs(calls - entries[np.maximum(after - 1, 0)]),
    )
    near = int(((delay > 100) & (distance[1 : len(delay) + 1] <= NEAR)).sum())
    return int(entered[:got].sum()), near, _huge_share((*arena[:5], *cursor[:4]))


def measure(query: str, n: int, before) -> dict:
    types = _types(query, n)
    program = _program(query)
    evaluator = _update(evaluate, program, Stream.from_any(_frame(types)))
    arena = evaluator.arena
    root, key, limit = _last_list(evaluator)
    (ids, slots, ends, written, sizes, steps), got = trace(arena, root, key, limit)
    cursor = new_cursor(arena)
    ns = _timed_runs(_timed, (arena, cursor, root, key, limit, got), got)
    bare = _timed_runs(_bare, (arena, cursor, ids, slots, ends, got, limit != np.inf), got)
    empty = _timed_runs(_empty, (np.zeros(3, np.int64), RING, 0, got), got)
    positions = int(written.sum())
    per_position = min(_copy(arena, cursor, ids, slots, len(ids)) for _ in range(REPEATS)) * NS_PER_CYCLE / positions
    delay = np.maximum(ns[1:] - per_position * written[1:], 0.0)  # every call after the first, less its writing
    slowest = 1 + int(delay.argmax())
    entries, near, huge = _pages(arena, root, key, limit, delay)
    row = {
        "query": query.replace(" WITHIN 10000000 s", " WITHIN w"),
        "n": n,
        "matches": got,
        "longest": int(sizes.max()),
        "first ns": round(float(ns[0]), 1),
        "max ns": round(float(delay.max()), 1),
        "p99 ns": round(float(np.percentile(delay, 99)), 1),
        "p99.9 ns": round(float(np.percentile(delay, 99.9)), 1),
        "median ns": round(float(np.median(delay)), 1),
        "calls > 100 ns": int((delay > 100).sum()),
        "empty ns": round(float(np.median(empty)), 1),
        "empty max ns": round(float(empty.max()), 1),
        "bare max ns": round(float(bare[1:].max()), 1),
        "bare median ns": round(float(np.median(bare[1:])), 1),
        "bare at the slowest ns": round(float(bare[slowest]), 1),
        "most written": int(written[1:].max()),
        "ns/position": round(per_position, 2),
        "2 MB entries": entries,
        "of them near one": near,
        "slowest call": slowest,
        "huge pages %": round(huge, 1) if huge == huge else "-",  # (NaN: no array of a huge page)
        "max steps": int(steps.max()),
    }
    if before is not None:
        old = _update(before, program, Stream.from_any(_frame(types)))
        row["steps before"] = int(trace(old.arena, *_last_list(old))[0][5].max())
    return row


def ab_rows(query: str, n: int, nodes_now, nodes_before, rounds: int = 3) -> list:
    """Today's ``cursor_fill`` against ``nodes_before``'s (a revision's ``nodes``, ``--ab``) on the same
    arena, alternating ``rounds`` times in this process: per round and kernel the delay's max, p99 and
    median as ``measure`` reports them (writing subtracted) and the calls over 100 ns."""
    evaluator = _update(evaluate, _program(query), Stream.from_any(_frame(_types(query, n))))
    arena = evaluator.arena
    root, key, limit = _last_list(evaluator)
    (ids, slots, _, written, _, _), got = trace(arena, root, key, limit)
    cursor = new_cursor(arena)
    per_position = min(_copy(arena, cursor, ids, slots, len(ids)) for _ in range(REPEATS)) * NS_PER_CYCLE
    per_position /= int(written.sum())
    kernels = {"now": _timer(nodes_now.cursor_fill), "before": _timer(nodes_before.cursor_fill)}
    rows = []
    for r in range(rounds):
        for name, timed in kernels.items():
            ns = _timed_runs(timed, (arena, cursor, root, key, limit, got), got)
            delay = np.maximum(ns[1:] - per_position * written[1:], 0.0)
            rows.append(
                {
                    "query": query.replace(" WITHIN 10000000 s", " WITHIN w"),
                    "n": n,
                    "round": r,
                    "kernel": name,
                    "max ns": round(float(delay.max()), 1),
                    "p99 ns": round(float(np.percentile(delay, 99)), 1),
                    "median ns": round(float(np.median(delay)), 1),
                    "calls > 100 ns": int((delay > 100).sum()),
                    "slowest call": 1 + int(delay.argmax()),
                }
            )
    return rows


def ab_totals(query: str, n: int, nodes_now, nodes_before, rounds: int = 7) -> dict:
    """The whole enumeration of one list by ``enumerate_cursor``, today's and ``nodes_before``'s (``--ab``),
    into buffers made once, alternating ``rounds`` times: the least time of each."""
    evaluator = _update(evaluate, _program(query), Stream.from_any(_frame(_types(query, n))))
    arena = evaluator.arena
    root, key, limit = _last_list(evaluator)
    _, matches, positions = _take_time(arena, root, key, limit, True)
    roots, keys, limits = np.array([root], np.int32), np.array([key]), np.array([limit])
    outputs = (np.empty(positions, np.int64), np.empty(positions, np.int32), *(np.empty(matches, np.int64),) * 2)
    modules = {"now": nodes_now, "before": nodes_before}
    cursors = {name: module.new_cursor(arena) for name, module in modules.items()}
    best = {"now": float("inf"), "before": float("inf")}
    for r in range(rounds + 1):  # (the first round compiles and faults the cursors' pages in: not counted)
        for name, module in modules.items():
            counts, emits = np.zeros(2, np.int64), np.zeros(1, np.int64)
            start = time.perf_counter()
            module.enumerate_cursor(arena, roots, keys, limits, emits, 0, 1, *outputs, counts, cursors[name])
            if r > 0:
                best[name] = min(best[name], time.perf_counter() - start)
            assert counts[1] == matches
    return _against(query, {"n": n}, {"cursor ms now": best["now"], "cursor ms before": best["before"]}, 3)


def _against(query: str, where: dict, times: dict, digits: int) -> dict:
    """A row: the query, ``where`` (its stream), the two ``times`` (seconds) in ms, the first over the second."""
    (first, a), (second, b) = times.items()
    return {
        "query": query.replace(" WITHIN 10000000 s", " WITHIN w"),
        **where,
        first: round(a * 1e3, digits),
        second: round(b * 1e3, digits),
        "ratio": round(a / b, 2),
    }


def _take_time(arena, root, key, limit, constant_delay: bool) -> tuple:
    """(seconds, matches, positions) to write every match of one list (``Outputs.take``: the cursor, or the
    default ordered enumeration), best of ``REPEATS``, its buffers grown by a first take."""
    one = evaluate.Roots(
        np.array([root], np.int32), np.zeros(1, np.int64), np.array([key]), np.array([limit]), np.ones(1, np.int64)
    )
    outputs = evaluate.Outputs(order=not constant_delay, constant_delay=constant_delay)
    best = float("inf")
    for _ in range(REPEATS + 1):
        outputs.clear()
        one.n[0] = 1
        start = time.perf_counter()
        outputs.take(arena, one)
        best = min(best, time.perf_counter() - start)
    return best, len(outputs), int(outputs.counts[0])


def total_row(query: str, n: int) -> dict:
    evaluator = _update(evaluate, _program(query), Stream.from_any(_frame(_types(query, n))))
    root, key, limit = _last_list(evaluator)
    cursor, matches, positions = _take_time(evaluator.arena, root, key, limit, True)
    ordered, _, _ = _take_time(evaluator.arena, root, key, limit, False)
    return {
        "query": query.replace(" WITHIN 10000000 s", " WITHIN w"),
        "n": n,
        "matches": matches,
        "positions": positions,
        "cursor ms": round(cursor * 1e3, 3),
        "ordered ms": round(ordered * 1e3, 3),
        "ratio": round(cursor / ordered, 2),
    }


def end_to_end_row(query: str, events, label: str) -> dict:
    times = {}
    for mode in ("constant-delay", "ordered"):
        cepkit.match(query, events, engine="automaton", enumeration=mode).position_arrays()  # compiled, warm
        times[mode], _ = best_of(
            3, lambda: cepkit.match(query, events, engine="automaton", enumeration=mode).position_arrays()
        )
    return _against(query, {"stream": label}, {f"{mode} ms": times[mode] for mode in times}, 2)


def update_row(query: str, types: list, today, before, per_second: float = 1.0) -> dict:
    """Algorithm 1's time per event over ``types`` (matches counted, not enumerated; the kernel's inputs made
    before), ``today``'s kernel and the baseline's, both loaded by ``baseline`` (a module loaded so can run
    slower than the package's own), alternating, best of 5 each."""
    program, stream = _program(query), Stream.from_any(_frame(types, per_second))
    batches = list(evaluate.Inputs(program, stream).batches(program.letters.none))
    best = [float("inf"), float("inf")]
    for _ in range(REPEATS):
        for side, module in enumerate((today, before)):
            evaluator = module.Evaluator(program, collect=False)
            runs = evaluator.new_runs()
            start = time.perf_counter()
            for batch in batches:
                runs = evaluator.run(batch, runs)
            best[side] = min(best[side], time.perf_counter() - start)
    times = [b * 1e9 / len(types) for b in best]
    return {
        "query": query.replace(" WITHIN 10000000 s", " WITHIN w"),
        "events": len(types),
        "ns/event": round(times[0], 1),
        "ns/event before": round(times[1], 1),
        "ratio": round(times[0] / times[1], 2),
    }


SEARCHED = (  # windowed queries whose lists receive runs from several older sources (``--spines``)
    "((A a ; B b) OR (C c ; D d) OR (F f ; G g)) ; E e WITHIN 100000 s",
    "((A a ; B b) OR (C c ; D d) OR (F f ; G g) OR (H h ; I i)) ; E e WITHIN 100000 s",
    "((A a ; B b) OR (C c ; D d) OR (F f ; G g) OR (H h ; I i) OR (J j ; K k)) ; E e WITHIN 100000 s",
    "((A+ a ; B b) OR (C c ; D+ d) OR (F f ; G g)) ; E e WITHIN 100000 s",
    "((A a ; B b) OR (C c ; D d) OR (F f ; G g)) ; E e WITHIN 30 s",
    "(((A a ; B b) OR (C c ; D d)) ; (F f OR G g))+ ; E e WITHIN 50 s",
)


FAMILIES = (  # (query, stream): where the kernel before ``SPINE + 1`` grew spines past 3, and a deep descent
    # a spine of ~k/3 unions on H H G A E G^k A before (23 at k = 64); 3 now
    ("((((H v3 ; H v0 ; A+ v2) ; E+ v9) OR G v0))+ WITHIN 100000 s", "HHGAE" + "G" * 64 + "A"),
    # spines of 4 before; 3 now, but the second D's union goes down k − 3 unions of spine 3 (one event)
    (
        "(((B v1 OR (C v11 OR B+ v5 OR C v9) OR (D+ v9 OR D+ v8) OR (C v0)+) ; A v2) OR "
        "(((A v6)+ ; (B+ v8 OR D v1 OR C v11)) ; (B v9)+ ; D v3)) ; Z last WITHIN 100000 s",
        "ACBC" + "A" * 64 + "DD",
    ),
)


def _longest(arena) -> int:
    used = int(arena.used[0])
    unions = arena.pos[:used] == UNION
    return int((-1 - arena.var[:used][unions]).max()) if unions.any() else 0


def update_shape(module, program, types: str) -> tuple:
    """Algorithm 1 of ``module`` (today's ``evaluate`` or the baseline's) over ``types``, one event per
    second, one event per call: (the longest left spine in the arena, the most nodes one event wrote)."""
    evaluator = module.Evaluator(program, collect=False)
    runs = evaluator.new_runs()
    most = 0
    for batch in evaluate.Inputs(program, Stream.from_any(_frame(list(types)))).batches(program.letters.none):
        for i in range(len(batch.pos)):
            used = int(evaluator.arena.used[0])
            runs = evaluator.run(batch, runs, first=i, count=i + 1)
            most = max(most, int(evaluator.arena.used[0]) - used)
    return _longest(evaluator.arena), most


def _formula(rng: np.random.Generator, depth: int) -> str:
    """A random pattern over A-E whose atoms share the variables x, y, z, with ``+`` and OR at any depth."""
    if depth == 0 or rng.integers(4) == 0:
        return f"{'ABCDE'[rng.integers(5)]}{'+' if rng.integers(4) == 0 else ''} {'xyz'[rng.integers(3)]}"
    parts = [_formula(rng, depth - 1) for _ in range(int(rng.integers(2, 4)))]
    shape = int(rng.integers(5))
    return f"({parts[0]})+" if shape == 4 else "(" + (" ; " if shape < 2 else " OR ").join(parts) + ")"


def _climb(program, rng: np.random.Generator, letters: str, steps: int) -> tuple:
    """A stream grown by random edits kept when they do not lower (spine, nodes per event)."""
    stream = "".join(rng.choice(list(letters), int(rng.integers(10, 40))))
    best = update_shape(evaluate, program, stream)
    for _ in range(steps):
        at, pick = int(rng.integers(len(stream) + 1)), int(rng.integers(3))
        if pick == 0 and len(stream) > 3:
            edited = stream[:at] + stream[at + 1 :]
        elif pick == 1:
            edited = stream[:at] + str(rng.choice(list(letters))) + stream[at:]
        else:  # a burst: a piece of the stream repeated where it is
            piece = stream[at : at + int(rng.integers(1, 5))]
            edited = stream[:at] + piece * int(rng.integers(1, 5)) + stream[at:]
        if len(edited) > 200:
            continue
        shape = update_shape(evaluate, program, edited)
        if shape >= best:
            best, stream = shape, edited
    return best, stream


def spine_search(before=None, streams: int = 200, formulas: int = 24, steps: int = 80, seed: int = 2) -> pd.DataFrame:
    """The longest left spine in the arena (the bound: ``SPINE`` + 1 = 3) and the most nodes one event
    wrote (the update's work: ``_place``'s descent), over: ``streams`` random streams per query of
    ``SEARCHED``, biased towards older runs arriving under newer ones (bursts of newer sources, F G and
    H I repeated, between arrivals of older runs); the two ``FAMILIES``; and ``formulas`` random formulas
    with shared variables, each over a stream grown by ``steps`` random edits kept when they lengthen a
    spine or an event's work (a hill climb). With ``before`` (a baseline's ``evaluate``), the longest spine
    its kernel makes on the stream found."""
    rng = np.random.default_rng(seed)
    found = []  # (query, streams tried, (spine, nodes), stream)
    for query in SEARCHED:
        program = get_engine("automaton").compile(parse(query)).program
        letters = sorted({c for c in query.split(" WITHIN")[0] if c.isupper() and c not in "OR"})
        best, example = (0, 0), ""
        for _ in range(streams):
            types: list = []
            n = int(rng.integers(20, 200))
            while len(types) < n:
                pick = int(rng.integers(4))
                if pick == 0:
                    types.append(str(rng.choice(letters)))
                elif pick == 1:
                    types += [str(rng.choice(letters))] * int(rng.integers(1, 7))
                else:
                    types += list("FG" if pick == 2 else "HI") * int(rng.integers(1, 9))
            shape = update_shape(evaluate, program, "".join(types))
            if shape > best:
                best, example = shape, "".join(types)
        found.append((query, streams, best, example))
    for query, stream in FAMILIES:
        found.append(
            (query, 1, update_shape(evaluate, get_engine("automaton").compile(parse(query)).program, stream), stream)
        )
    climbed = []
    while len(climbed) < formulas:
        query = f"{_formula(rng, int(rng.integers(2, 5)))} WITHIN 100000 s"
        try:
            program = get_engine("automaton").compile(parse(query)).program
        except cepkit.QueryError:  # a variable bound twice in a sequence
            continue
        best, stream = _climb(program, rng, "ABCDE", steps)
        climbed.append((query, best, stream))
    # the random formulas: the ones that reached the longest spine and the most nodes per event
    for query, best, stream in {max(climbed, key=lambda c: c[1]), max(climbed, key=lambda c: c[1][::-1])}:
        found.append((query, formulas, best, stream))
    rows = []
    for query, tried, (longest, most), stream in found:
        row = {"query": query, "streams": tried, "longest spine": longest, "most nodes per event": most}
        if before is not None:
            program = get_engine("automaton").compile(parse(query)).program
            row["longest spine before"] = update_shape(before, program, stream)[0]
        row["stream"] = stream if len(stream) <= 60 else stream[:57] + "..."
        rows.append(row)
    return pd.DataFrame(rows)


def _print(table: pd.DataFrame) -> None:
    print("| " + " | ".join(table.columns) + " |\n|" + "---|" * len(table.columns), flush=True)
    for row in table.itertuples(index=False):
        print("| " + " | ".join(f"{v:,}" if isinstance(v, (int, np.integer)) else str(v) for v in row) + " |")
    print(flush=True)


def ab(nodes_now, nodes_before, args) -> None:
    """``--ab``: the delay and the whole enumeration with today's cursor and a revision's, alternating, both
    loaded the same way (``baseline``)."""
    global NS_PER_CYCLE, STEP
    NS_PER_CYCLE, STEP = _ns_per_cycle(), counter_step()
    print(f"{page_walk()}\n")
    queries = [QUERIES[i] for i in args.queries] if args.queries is not None else list(QUERIES)
    sizes = [10, 1_000] + ([10_000] if args.quick else [100_000])
    _print(pd.DataFrame([row for q in queries for n in sizes for row in ab_rows(q, n, nodes_now, nodes_before)]))
    _print(pd.DataFrame([ab_totals(q, n, nodes_now, nodes_before) for q in queries for n in TOTALS[q]]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--before", help="git revision of the kernel to compare with (c8157ee: before _place)")
    parser.add_argument("--update", action="store_true", help="only the update table (needs --before)")
    parser.add_argument("--queries", type=int, nargs="*", help="indices into QUERIES (default: all)")
    parser.add_argument(
        "--spines", action="store_true", help="only the search for long spines and deep descents under a window"
    )
    parser.add_argument("--ab", help="git revision whose cursor_fill to time against today's, alternating")
    args = parser.parse_args()
    before = baseline(args.before) if args.before else None
    if args.spines:
        _print(spine_search(before))
        return
    if args.update and not args.before:
        parser.error("--update compares with the kernel of --before")
    if args.ab:
        ab(baseline(None, ("nodes",), "_current_"), baseline(args.ab, ("nodes",)), args)
        return
    if args.update:  # with Q1's window scaling (bench/automaton.py): both kernels in one run
        today = baseline(None, ("nodes", "evaluate"), "_current_")
        updates = [update_row(q, _types(q, 100_000), today, before) for q in (WINDOWED, ALTERNATING)]
        uniform = list(np.random.default_rng(0).choice(list("ABCD"), 200_000))
        for window in ("10 s", "1000 s"):
            updates.append(update_row(f"A a ; B b ; C c WITHIN {window}", uniform, today, before, 10.0))
        _print(pd.DataFrame(updates))
        return
    global NS_PER_CYCLE, STEP
    NS_PER_CYCLE, STEP = _ns_per_cycle(), counter_step()
    print(
        f"cycle counter: {NS_PER_CYCLE:.2f} ns per unit, a step of {STEP} units ({STEP * NS_PER_CYCLE:.1f} ns); "
        f"a read missing the caches: {memory_miss():.0f} ns\nresolution: {chain_check()}\n{page_walk()}\n"
    )
    queries = [QUERIES[i] for i in args.queries] if args.queries is not None else list(QUERIES)
    sizes = [10, 100, 1_000, 10_000] + ([] if args.quick else [100_000])
    table = pd.DataFrame([measure(q, n, before) for q in queries for n in sizes])
    _print(table)
    for query, part in table.groupby("query", sort=False):
        spreads = []
        for column in ("max ns", "p99 ns"):
            net = part[column] - part["empty ns"]
            spreads.append(
                f"{column.split()[0]} {part[column].max() / part[column].min():.2f}x "
                f"(net {net.max() / max(net.min(), 0.1):.2f}x)"
            )
        print(
            f"{query}: spread {', '.join(spreads)} over matches of "
            f"{part['longest'].min():,} to {part['longest'].max():,} events"
        )
    print()
    _print(pd.DataFrame([total_row(q, n) for q in queries for n in TOTALS[q] if not args.quick or n <= 10_000]))
    rows = [
        end_to_end_row(QUERIES[0], _frame(_types(QUERIES[0], 16)), "A^16 B"),
        end_to_end_row(QUERIES[1], _frame(_types(QUERIES[1], 18)), "(A A B)^6 C"),
        end_to_end_row(WINDOWED, _frame(_types(WINDOWED, 100_000)), "C A B D^100000 E"),
    ]
    rng = np.random.default_rng(0)
    uniform = _frame(list(rng.choice(list("ABCD"), 200_000)))
    rows.append(end_to_end_row("A a ; B b ; C c WITHIN 10 s", uniform, "200,000 uniform A-D, 1/s"))
    _print(pd.DataFrame(rows))


if __name__ == "__main__":
    main()
