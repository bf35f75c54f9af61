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
event, left in the cursor's path), the cycle counter read around each call (``llvm.readcyclecounter``,
its period measured against perf_counter over 0.3 s), each call's time the least of ``REPEATS`` runs (the
walk is the same each time; one run's maximum is the machine's preemption, milliseconds), each run
right after the walk's first ``WARM`` outputs untimed: the update leaves the newest nodes, where the walk
starts, in the cache, which the Python between runs does not (the whole walk untimed instead evicted
its start at n = 100,000: the first calls then missed in the cache, 150-470 ns). The counter ticks every
~10 ns on the machine of bench/README.md's run: most calls read 0 or 1 tick. **first ns**:
the first call (opening the walk and writing the first output whole: the time to the first output,
preprocessing in the constant-delay definition); **max ns**, **p99 ns**, **p99.9 ns**, **median ns**: the delay between
consecutive outputs, every later call's time less its writing (the positions it wrote, the part of the
path that differs from the previous match, times the time per position: the slope of a least-squares
line through the calls' times against their positions written; none where every call writes at most a
few); **calls > 100 ns**: how many of those delays pass 100 ns; **max steps**: union nodes and pops per call beyond one per position written (the quantity the
bound is about: at most the left spine, ≤ 2), counted on a separate walk (so that it does not bring the
timed walk's nodes into the cache).
**empty max ns**, **empty p99.9 ns**: the same loop around an empty call (``_empty``), as many calls, the
least of ``REPEATS`` runs each, in the same run: the floor the counter and the machine put under a call.
**numpy's max ns**, **numpy's calls > 100 ns**: the walk over copies of the arena and the cursor in numpy's
own allocations (``_numpy_pages``), as before ``nodes.node_array`` put them in huge pages. The first line
printed also gives the time of one read that misses the caches (``memory_miss``). Where the slow calls sit
(``_pages``): **2 MB entries**, the calls that are the walk's first access to a 2 MB page of one of the arrays
it reads or writes (the arena's, the path, the stack); **of them after one**, how many of the calls over
100 ns come at most ``NEAR`` calls after such a call; **huge pages %**, the share of the arena's and the
cursor's resident memory the kernel backs with transparent huge pages (``AnonHugePages``; none below 2 MB).

**Total.** The whole enumeration of the last event's matches through ``Outputs.take`` (what a batch run
calls; buffers grown by a first take, best of ``REPEATS``), the cursor (``enumerate_cursor``) over the
default ordered enumeration, on the streams whose matches can all be written (up to ~1M positions: past
the caches both are bound by memory, 30-90 ms for 2.6M positions at n = 18 and as noisy).

**End to end.** ``cepkit.match(query, events, engine="automaton", enumeration=...).position_arrays()``,
best of 3, constant-delay over ordered (the cursor's rows are then ordered by ``Matches``).

A last table (``--update``): the update (Algorithm 1 over the stream, best of 5) per event with today's
kernel and with the kernel of ``--before`` (a git revision: the last one before ``_place``), on the
windowed streams and on ``A a ; B b ; C c WITHIN 10 s`` over 200,000 uniform events (A-D, 10 per second);
with ``--before``, the delay table gets **steps before**, the steps over the arena that kernel makes.

    python bench/constant_delay.py            # n = 10 .. 100,000
    python bench/constant_delay.py --quick    # n = 10 .. 10,000
    python bench/constant_delay.py --spines   # the longest spine over random windowed streams (spine_search)
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
from cepkit.engines.automaton.nodes import HUGE_PAGE, UNION, cursor_fill, cursor_open, new_cursor
from cepkit.lang import parse
from cepkit.runtime.registry import get_engine
from cepkit.runtime.stream import Stream
from streams import best_of, source_at

OUTPUTS = 100_000  # matches timed per stream
REPEATS = 5
WARM = 1_000  # outputs walked untimed before each timed walk
NEAR = 256  # calls after the walk's first touch of a 2 MB page counted as "after one" (a few 4 KB pages of the arena)
NS_PER_CYCLE = 1.0  # measured by ``main`` (``_ns_per_cycle``)

WINDOWED = "((A a ; B b) OR (C c ; D d)) ; E e WITHIN 10000000 s"
ALTERNATING = "((A a ; B b) OR (C c ; D d) OR (F f ; G g)) ; E e WITHIN 10000000 s"
QUERIES = ("A+ a ; B b", "(A+ a ; B b)+ ; C c", WINDOWED, ALTERNATING)
# the streams whose matches are all written for the totals: 2^n − 1 matches of A+ a ; B b, (A A B)^(n/3) C
TOTALS = {QUERIES[0]: (10, 13, 16), QUERIES[1]: (10, 16, 19), WINDOWED: (10, 1_000, 100_000)}
TOTALS[ALTERNATING] = TOTALS[WINDOWED]


@intrinsic
def _cycles(typingctx):
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(64), []), "llvm.readcyclecounter"
        )
        return builder.call(fn, [])

    return types.int64(), codegen


@njit
def _read_cycles():
    return _cycles()


def _ns_per_cycle(seconds: float = 0.3) -> float:
    """The cycle counter's period, against perf_counter over ``seconds`` (converting each run's cycles by
    that run's own perf_counter, which also counts the call around the timed loop, made the 11 calls of
    n = 10 look 10-20x slower than they are)."""
    _read_cycles()
    start, c0 = time.perf_counter(), _read_cycles()
    while time.perf_counter() - start < seconds:
        pass
    return (time.perf_counter() - start) * 1e9 / (_read_cycles() - c0)


@njit
def _timed(arena, cursor, root, key, limit, cap, cycles, written, sizes):
    """Up to ``cap`` matches of ``root``, one per ``cursor_fill`` call (left in the path): per match the
    cycles of its call, the positions it wrote into the path and its size. Returns how many."""
    state = cursor[4]
    none, none_var, counts = np.empty(0, np.int64), np.empty(0, np.int32), np.zeros(2, np.int64)
    cursor_open(arena, cursor, root, key, limit)  # the walk's start untimed first (``WARM``)
    cursor_fill(arena, cursor, key, limit, WARM, False, 0, none, none_var, none, none, counts)
    t0 = _cycles()
    cursor_open(arena, cursor, root, key, limit)
    n = 0
    while n < cap:
        if cursor_fill(arena, cursor, key, limit, 1, False, 0, none, none_var, none, none, counts) == 0:
            break
        t1 = _cycles()
        cycles[n], written[n], sizes[n] = t1 - t0, state[2] - state[1], state[2]
        n += 1
        t0 = _cycles()
    return n


@njit
def _nothing(state):
    """The empty call ``_empty`` times: one read and one write of the cursor's state, as a call of
    ``cursor_fill`` does around its walk."""
    state[2] = state[0]
    return 1


@njit
def _empty(state, cap, cycles):
    """``_timed``'s loop with ``_nothing`` in place of ``cursor_fill``: the counter's reads, the loop and an
    empty call, ``cap`` times (the floor under the delays: what the machine adds to a call that does nothing)."""
    t0 = _cycles()
    for n in range(cap):
        _nothing(state)
        t1 = _cycles()
        cycles[n] = t1 - t0
        t0 = _cycles()
    return cap


def floor(calls: int = OUTPUTS) -> tuple:
    """(max, 99.9th percentile) in ns of ``_empty``'s calls, each the least of ``REPEATS`` runs as the
    delays are: the same number of calls, in the same run."""
    state = np.zeros(3, np.int64)
    runs = []
    for _ in range(REPEATS):
        cycles = np.empty(calls, np.int64)
        _empty(state, calls, cycles)
        runs.append(cycles)
    ns = np.min(runs, axis=0)[1:] * NS_PER_CYCLE
    return float(ns.max()), float(np.percentile(ns, 99.9))


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
def _steps(arena, cursor, root, key, limit, cap, steps):
    """Per match, as ``_timed`` walks them, the union nodes and pops of its call beyond one per position it
    wrote (the left path from the pending child it pops)."""
    node_pos, node_left = arena[0], arena[2]
    stack_node, state = cursor[0], cursor[4]
    none, none_var, counts = np.empty(0, np.int64), np.empty(0, np.int32), np.zeros(2, np.int64)
    cursor_open(arena, cursor, root, key, limit)
    n = 0
    while n < cap and state[0] > 0:
        node = stack_node[state[0] - 1]
        unions = 0
        while node != 0:
            if node_pos[node] == UNION:
                unions += 1
            node = node_left[node]
        cursor_fill(arena, cursor, key, limit, 1, False, 0, none, none_var, none, none, counts)
        steps[n] = 1 + unions - (state[2] - state[1])
        n += 1
    return n


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


def baseline(revision: str):
    """``nodes.py`` and ``evaluate.py`` as of ``revision``, loaded as modules of the automaton package
    (``_baseline_nodes``, ``_baseline_evaluate``): the update before this change, in the same run."""
    folder = Path(tempfile.mkdtemp(prefix="cepkit-baseline-"))
    package = "cepkit.engines.automaton"
    for name in ("nodes", "evaluate"):
        text = source_at(revision, f"cepkit/engines/automaton/{name}.py")
        text = text.replace("from .nodes import", "from ._baseline_nodes import")
        # (``jit`` moved from the automaton's kernel module to ``engines.compiled`` since)
        (folder / f"_baseline_{name}.py").write_text(
            text.replace("from .kernel import jit", "from ..compiled import jit")
        )
        spec = importlib.util.spec_from_file_location(f"{package}._baseline_{name}", folder / f"_baseline_{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules[f"{package}._baseline_evaluate"]


def _max_steps(evaluator) -> int:
    root, key, limit = _last_list(evaluator)
    steps = np.empty(OUTPUTS, np.int64)
    got = _steps(evaluator.arena, new_cursor(evaluator.arena), root, key, limit, OUTPUTS, steps)
    return int(steps[:got].max())


def _delays(arena, root, key, limit, numpy_pages: bool = False) -> tuple:
    """(ns per call, match sizes, ns per position written, delays) of ``_timed``'s walk over ``arena``, each
    call's time the least of ``REPEATS`` runs (the walk is the same each time), the delays every call after
    the first less its writing. With ``numpy_pages``, over copies of the arena and the cursor in numpy's own
    allocations (``_numpy_pages``)."""
    cursor = new_cursor(arena)
    if numpy_pages:
        arena, cursor = _numpy_pages(arena), _numpy_pages(cursor)
    # the timing arrays made once and written before the runs: no run faults in their pages between two calls
    runs = np.zeros((REPEATS, OUTPUTS), np.int64)
    written, sizes = np.zeros(OUTPUTS, np.int64), np.zeros(OUTPUTS, np.int64)
    for run in runs:
        got = _timed(arena, cursor, root, key, limit, OUTPUTS, run, written, sizes)
    ns = np.min(runs[:, :got], axis=0) * NS_PER_CYCLE
    written, sizes = written[:got], sizes[:got]
    later, later_written = ns[1:], written[1:]
    # the time per position written: the slope of a call's time against the positions it wrote (none where
    # every call writes at most a few positions: there a call's time is its delay)
    spread = later_written.max() - later_written.min() if len(later) else 0
    per_position = max(0.0, float(np.polyfit(later_written, later, 1)[0])) if spread >= 8 else 0.0
    return ns, sizes, per_position, np.maximum(later - per_position * later_written, 0.0)


def _numpy_pages(arrays: tuple) -> tuple:
    """``arrays`` (an arena, a cursor) copied into numpy's own allocations, as before ``nodes.node_array``:
    malloc's 4 KB pages, and huge pages only on the 2 MB-aligned part of an array of 4 MiB or more (numpy
    marks those for them)."""
    return type(arrays)(*(np.array(a) for a in arrays))


def _pages(arena, root, key, limit, delay) -> tuple:
    """(how many calls of the walk first touch a 2 MB page, how many of the delays over 100 ns come at most
    ``NEAR`` calls after such a call, the share of the arena's and the walked cursor's memory in huge pages,
    ``_huge_share``): where the slow calls sit (docs/automaton-engine.md, "Measured")."""
    cursor = new_cursor(arena)
    bases = np.array([a.ctypes.data for a in (*arena[:5], *cursor[:4])], np.int64)
    entered = np.zeros(len(delay) + 1, np.bool_)
    got = _page_entries(arena, cursor, root, key, limit, len(entered), bases, entered)
    since = np.full(got, NEAR + 1)  # calls since the last entry (or more than NEAR)
    last = -NEAR - 1
    for call in range(got):
        last = call if entered[call] else last
        since[call] = call - last
    near = int(((delay > 100) & (since[1 : len(delay) + 1] <= NEAR)).sum())
    return int(entered[:got].sum()), near, _huge_share((*arena[:5], *cursor[:4]))


def measure(query: str, n: int, before) -> dict:
    types = _types(query, n)
    program = _program(query)
    evaluator = _update(evaluate, program, Stream.from_any(_frame(types)))
    arena = evaluator.arena
    root, key, limit = _last_list(evaluator)
    ns, sizes, per_position, delay = _delays(arena, root, key, limit)
    got = len(ns)
    floor_max, floor_tail = floor(got)
    small = _delays(arena, root, key, limit, numpy_pages=True)[3]
    entries, near, huge = _pages(arena, root, key, limit, delay)
    row = {
        "query": query.replace(" WITHIN 10000000 s", " WITHIN w"),
        "n": n,
        "matches": got,
        "longest": int(sizes.max()),
        "first ns": round(float(ns[0]), 1),
        "max ns": round(float(delay.max()), 1),
        "empty max ns": round(floor_max, 1),
        "p99 ns": round(float(np.percentile(delay, 99)), 1),
        "p99.9 ns": round(float(np.percentile(delay, 99.9)), 1),
        "empty p99.9 ns": round(floor_tail, 1),
        "median ns": round(float(np.median(delay)), 1),
        "calls > 100 ns": int((delay > 100).sum()),
        "2 MB entries": entries,
        "of them after one": near,
        "huge pages %": round(huge, 1) if huge == huge else "-",  # (NaN: no array of a huge page)
        "numpy's max ns": round(float(small.max()), 1),
        "numpy's calls > 100 ns": int((small > 100).sum()),
        "max steps": _max_steps(evaluator),
        "ns/position": round(per_position, 2),
    }
    if before is not None:
        row["steps before"] = _max_steps(_update(before, program, Stream.from_any(_frame(types))))
    return row


def _take_time(arena, root, key, limit, constant_delay: bool) -> tuple:
    """(seconds, positions) to write every match of one list (``Outputs.take``: the cursor, or the default
    ordered enumeration), best of ``REPEATS``, its buffers grown by a first take."""
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
    return {
        "query": query.replace(" WITHIN 10000000 s", " WITHIN w"),
        "stream": label,
        "constant-delay ms": round(times["constant-delay"] * 1e3, 2),
        "ordered ms": round(times["ordered"] * 1e3, 2),
        "ratio": round(times["constant-delay"] / times["ordered"], 2),
    }


def update_row(query: str, types: list, before, per_second: float = 1.0) -> dict:
    """Algorithm 1's time per event over ``types`` (matches counted, not enumerated; the kernel's inputs made
    before), today's kernel and the baseline's, best of 5 each."""
    program, stream = _program(query), Stream.from_any(_frame(types, per_second))
    times = []
    for module in (evaluate, before):
        batches = list(evaluate.Inputs(program, stream).batches(program.letters.none))
        best = float("inf")
        for _ in range(REPEATS):
            evaluator = module.Evaluator(program, collect=False)
            runs = evaluator.new_runs()
            start = time.perf_counter()
            for batch in batches:
                runs = evaluator.run(batch, runs)
            best = min(best, time.perf_counter() - start)
        times.append(best * 1e9 / len(types))
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


def spine_search(streams: int = 400, seed: int = 2) -> pd.DataFrame:
    """The longest left spine in the arena after Algorithm 1, over ``streams`` random streams per query of
    ``SEARCHED``, biased towards what makes ``_place`` fall back: bursts of newer sources (F G, H I
    repeated) between arrivals of older runs (docs/automaton-engine.md, "What is proved under a window")."""
    rng = np.random.default_rng(seed)
    rows = []
    for query in SEARCHED:
        program = get_engine("automaton").compile(parse(query)).program
        letters = sorted({c for c in query.split(" WITHIN")[0] if c.isupper() and c not in "OR"})
        worst, example = 0, ""
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
            arena = evaluate.run_all(program, Stream.from_any(_frame(types))).arena
            used = int(arena.used[0])
            unions = arena.pos[:used] == UNION
            longest = int((-1 - arena.var[:used][unions]).max()) if unions.any() else 0
            if longest > worst:
                worst, example = longest, "".join(types)
        rows.append(
            {"query": query, "streams": streams, "longest spine": worst, "first stream reaching it": example[:60]}
        )
    return pd.DataFrame(rows)


def _print(table: pd.DataFrame) -> None:
    print("| " + " | ".join(table.columns) + " |\n|" + "---|" * len(table.columns), flush=True)
    for row in table.itertuples(index=False):
        print("| " + " | ".join(f"{v:,}" if isinstance(v, (int, np.integer)) else str(v) for v in row) + " |")
    print(flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--before", help="git revision of the kernel to compare with (c8157ee: before _place)")
    parser.add_argument("--update", action="store_true", help="only the update table (needs --before)")
    parser.add_argument("--queries", type=int, nargs="*", help="indices into QUERIES (default: all)")
    parser.add_argument("--spines", action="store_true", help="only the search for long spines under a window")
    args = parser.parse_args()
    if args.spines:
        _print(spine_search())
        return
    if args.update and not args.before:
        parser.error("--update compares with the kernel of --before")
    before = baseline(args.before) if args.before else None
    global NS_PER_CYCLE
    NS_PER_CYCLE = _ns_per_cycle()
    print(f"cycle counter period: {NS_PER_CYCLE:.2f} ns; a read missing the caches: {memory_miss():.0f} ns\n")
    queries = [QUERIES[i] for i in args.queries] if args.queries is not None else list(QUERIES)
    if args.update:
        rng = np.random.default_rng(0)
        n = 100_000
        updates = [update_row(q, _types(q, n), before) for q in (WINDOWED, ALTERNATING)]
        uniform = list(rng.choice(list("ABCD"), 200_000))
        updates.append(update_row("A a ; B b ; C c WITHIN 10 s", uniform, before, 10.0))
        _print(pd.DataFrame(updates))
        return
    sizes = [10, 100, 1_000, 10_000] + ([] if args.quick else [100_000])
    table = pd.DataFrame([measure(q, n, before) for q in queries for n in sizes])
    _print(table)
    for query, part in table.groupby("query", sort=False):
        print(
            f"{query}: max delay spread {part['max ns'].max() / max(part['max ns'].min(), 1e-9):.2f}x, "
            f"p99 spread {part['p99 ns'].max() / max(part['p99 ns'].min(), 1e-9):.2f}x over matches of "
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
