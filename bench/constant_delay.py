"""The automaton's constant-delay enumeration (``enumeration="constant-delay"``, [CEL] Algorithm 3's
claim; docs/automaton-engine.md, "Constant-delay enumeration"): the delay between consecutive outputs as
the matches grow 1,000-fold, without a window and under one.

Streams, n = 10 .. 100,000: no window, ``A+ a ; B b`` over A^n B and ``(A+ a ; B b)+ ; C c`` over
(A A B)^(n/3) C, the last event completing 2^n (or so) matches, the longest n + 1 events long; under a
window (longer than the stream), ``((A a ; B b) OR (C c ; D d)) ; E e`` over C A B D^n E, where each D
joins runs started at the C to the list holding the A's (the list that grew a spine of n unions before
``nodes._place``), and ``((A a ; B b) OR (C c ; D d) OR (F f ; G g)) ; E e`` over A C F G (B D)^(n/2) E
(two sources older than the list's latest, taking turns), n + 1 matches of 3 events. Algorithm 1 runs
over the stream (the update), then the first 100,000 matches of the last event are enumerated with
``nodes.cursor_next``, the cycle counter read around each call (``llvm.readcyclecounter``, converted to
ns by the perf_counter over the loop). A call writes the part of the path that differs from the previous
match (the first: all of it): the **delay** is the call's time less its writing (the positions it wrote
times the time per position, the slope of a least-squares line through every call's time against its
positions written; where every call writes at most a few, the windowed rows, the call's whole time),
reported as max and 99th percentile, each call's time the least of 5 runs (the walk
is the same each time; one run's maximum is the machine's preemption, milliseconds); **steps** counts the
union nodes and pops of each call beyond one per position written (the quantity the bound is about: at
most the left spine, ≤ 2), **steps before**: the same over the arena the kernel of ``--baseline`` (a
git revision: the last one before ``_place``) made. **total vs walk**: the cursor's time writing the
first *written* matches (up to 20M positions) over the engine's unordered depth-first walk (``_walk_back``,
the matcher's enumeration) capped at as many; **total vs ordered**: where the list holds no more matches
than those, the cursor writing them all (``Outputs.take``, buffers already grown) over the default
ordered enumeration writing the same; both measured in the same run. A second table: the update (Algorithm 1 over the stream, best of 5)
per event with today's kernel and with the baseline's, on the windowed streams and on ``A a ; B b ; C c
WITHIN 10 s`` over 200,000 uniform events (A-D, 10 per second).

    python bench/constant_delay.py            # n = 10 .. 100,000 (a few minutes)
    python bench/constant_delay.py --quick    # n = 10 .. 10,000
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

from cepkit.engines.automaton import evaluate
from cepkit.engines.automaton.nodes import (
    UNION,
    cursor_next,
    cursor_open,
    enumerate_cursor,
    enumerate_roots,
    forward_room,
    new_cursor,
)
from cepkit.lang import parse
from cepkit.runtime.registry import get_engine
from cepkit.runtime.stream import Stream
from streams import source_at

OUTPUTS = 100_000  # matches timed per stream
POSITIONS = 20_000_000  # positions written for the totals
REPEATS = 5
BASELINE = "c8157ee"  # main before ``nodes._place``: Union(a, b) grew a's spine whatever b's start

WINDOWED = "((A a ; B b) OR (C c ; D d)) ; E e WITHIN 10000000 s"
ALTERNATING = "((A a ; B b) OR (C c ; D d) OR (F f ; G g)) ; E e WITHIN 10000000 s"
QUERIES = ("A+ a ; B b", "(A+ a ; B b)+ ; C c", WINDOWED, ALTERNATING)


@intrinsic
def _cycles(typingctx):
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(64), []), "llvm.readcyclecounter"
        )
        return builder.call(fn, [])

    return types.int64(), codegen


@njit
def _timed(arena, cursor, root, key, limit, cap, cycles, written, steps):
    """Enumerate up to ``cap`` matches of ``root``; per match the cycles of its ``cursor_next``, the
    positions it wrote and its union nodes and pops beyond one per position written."""
    node_pos, node_left = arena[0], arena[2]
    stack_node, _, _, _, state = cursor
    cursor_open(arena, cursor, root, key, limit)
    n = 0
    while n < cap:
        # the steps this call will take, counted on a copy of the walk (not timed)
        sp = state[0]
        if sp == 0:
            break
        node = stack_node[sp - 1]
        unions = 0
        while node != 0:
            if node_pos[node] == UNION:
                unions += 1
            node = node_left[node]
        t0 = _cycles()
        size = cursor_next(arena, cursor, key, limit)
        t1 = _cycles()
        cycles[n], written[n] = t1 - t0, size - state[1]
        steps[n] = 1 + unions
        n += 1
    return n


def _types(query: str, n: int) -> list:
    if query == WINDOWED:
        return ["C", "A", "B"] + ["D"] * n + ["E"]
    if query == ALTERNATING:
        return ["A", "C", "F", "G"] + ["B", "D"] * max(1, n // 2) + ["E"]
    if query.startswith("A+"):
        return ["A"] * n + ["B"]
    return ["A", "A", "B"] * max(1, n // 3) + ["C"]


def _stream(types: list, per_second: float = 1.0) -> Stream:
    ts = np.arange(len(types), dtype=float) / per_second
    return Stream.from_any(pd.DataFrame({"type": types, "ts": ts}))


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


def baseline(revision: str):
    """``nodes.py`` and ``evaluate.py`` as of ``revision``, loaded as modules of the automaton package
    (``_baseline_nodes``, ``_baseline_evaluate``): the update before this change, in the same run."""
    folder = Path(tempfile.mkdtemp(prefix="cepkit-baseline-"))
    package = "cepkit.engines.automaton"
    for name in ("nodes", "evaluate"):
        text = source_at(revision, f"cepkit/engines/automaton/{name}.py")
        (folder / f"_baseline_{name}.py").write_text(text.replace("from .nodes import", "from ._baseline_nodes import"))
        spec = importlib.util.spec_from_file_location(f"{package}._baseline_{name}", folder / f"_baseline_{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules[f"{package}._baseline_evaluate"]


def _max_steps(evaluator) -> int:
    """The most union nodes and pops a call takes beyond one per position written, over the first
    ``OUTPUTS`` matches of the last list of matches."""
    arena, roots = evaluator.arena, evaluator.roots
    root, key, limit = int(roots.node[int(roots.n[0]) - 1]), float(roots.key[0]), float(roots.limit[0])
    cycles, written, steps = (np.empty(OUTPUTS, np.int64) for _ in range(3))
    got = _timed(arena, new_cursor(arena), root, key, limit, OUTPUTS, cycles, written, steps)
    return int((steps[:got] - written[:got]).max())


def measure(query: str, n: int, before) -> dict:
    types = _types(query, n)
    program = _program(query)
    evaluator = _update(evaluate, program, _stream(types))
    arena, roots = evaluator.arena, evaluator.roots
    root, key, limit = int(roots.node[int(roots.n[0]) - 1]), float(roots.key[0]), float(roots.limit[0])
    cursor = new_cursor(arena)
    runs = []
    for _ in range(REPEATS):  # per match the least disturbed of the runs: the walk is the same each time
        cycles, written, steps = (np.empty(OUTPUTS, np.int64) for _ in range(3))
        start = time.perf_counter()
        got = _timed(arena, cursor, root, key, limit, OUTPUTS, cycles, written, steps)
        elapsed = time.perf_counter() - start
        runs.append(cycles[:got] * (elapsed * 1e9 / max(1, cycles[:got].sum())))
    ns = np.min(runs, axis=0)
    written, steps = written[:got], steps[:got]
    # the time per position written: the slope of a call's time against the positions it wrote
    # (none where every call writes at most a few positions, the windowed rows: there a call's time is its delay)
    per_position = float(np.polyfit(written, ns, 1)[0]) if written.max() - written.min() >= 8 else 0.0
    delay = np.maximum(ns - per_position * written, 0.0)
    # the whole enumeration, writing every match: the cursor mode against the unordered depth-first walk
    # (``_walk_back``, the matcher's) capped at as many, and, when the list holds no more than those,
    # against the default ordered enumeration (which writes a list whole)
    positions, cap = _first_positions(arena, cursor, root, key, limit, got)
    cursor_time = _best(lambda: _write(enumerate_cursor, arena, root, key, limit, cap, positions, cursor))
    walk_time = _best(lambda: _write(enumerate_roots, arena, root, key, limit, cap, positions, None))
    whole = got < OUTPUTS and cap == got
    totals = [_enumeration_time(arena, roots, constant_delay) for constant_delay in (True, False)] if whole else None
    return {
        "query": query.replace(" WITHIN 10000000 s", " WITHIN w"),
        "n": n,
        "matches": got,
        "longest": int(_longest(arena, cursor, root, key, limit, got)),
        "max ns": round(float(delay.max()), 1),
        "p99 ns": round(float(np.percentile(delay, 99)), 1),
        "max steps": int((steps - written).max()),
        "steps before": _max_steps(_update(before, program, _stream(types))),
        "ns/position": round(per_position, 2),
        "written": cap,
        "total vs walk": round(cursor_time / walk_time, 2),
        "total vs ordered": round(totals[0] / totals[1], 2) if totals else "-",
    }


def _enumeration_time(arena, roots, constant_delay: bool) -> float:
    """Seconds to write the matches of the last list of matches (``Outputs.take``: the cursor, or the
    default ordered enumeration), best of 3, its buffers grown by a first take."""
    last = int(roots.n[0]) - 1
    one = evaluate.Roots(*(np.array(a[last : last + 1]) for a in roots[:4]), np.ones(1, np.int64))
    outputs = evaluate.Outputs(order=not constant_delay, constant_delay=constant_delay)
    best = float("inf")
    for _ in range(4):
        outputs.clear()
        one.n[0] = 1
        start = time.perf_counter()
        outputs.take(arena, one)
        best = min(best, time.perf_counter() - start)
    return best


def update_row(query: str, types: list, before, per_second: float = 1.0) -> dict:
    """Algorithm 1's time per event over ``types`` (matches counted, not enumerated; the kernel's inputs made
    before), today's kernel and the baseline's, best of 5 each."""
    program, stream = _program(query), _stream(types, per_second)
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


@njit
def _first_positions(arena, cursor, root, key, limit, cap):
    """(positions, matches) of the first matches up to ``cap`` or ``POSITIONS`` positions."""
    cursor_open(arena, cursor, root, key, limit)
    n = 0
    total = 0
    while n < cap:
        size = cursor_next(arena, cursor, key, limit)
        if size < 0 or total + size > POSITIONS:
            break
        total += size
        n += 1
    return total, n


@njit
def _longest(arena, cursor, root, key, limit, cap):
    cursor_open(arena, cursor, root, key, limit)
    longest = 0
    for _ in range(cap):
        size = cursor_next(arena, cursor, key, limit)
        if size < 0:
            break
        longest = max(longest, size)
    return longest


def _write(kernel, arena, root, key, limit, cap, positions, cursor):
    """The first ``cap`` matches (``positions`` in all) written as rows by ``kernel``."""
    out_pos, out_var = np.empty(positions, np.int64), np.empty(positions, np.int32)
    out_end, out_emit = np.empty(cap, np.int64), np.empty(cap, np.int64)
    counts = np.zeros(6, np.int64)
    args = (
        arena,
        np.array([root], np.int32),
        np.array([key]),
        np.array([limit]),
        np.zeros(1, np.int64),
        0,
        1,
        out_pos,
        out_var,
        out_end,
        out_emit,
        counts,
    )
    if cursor is not None:
        kernel(*args, cursor)
    else:
        spare = (np.empty(1, np.int64), np.empty(1, np.int32), np.empty(1, np.int64), np.empty(1, np.int64))
        kernel(*args, cap, False, spare, forward_room(0), False)
    return int(counts[1])


def _best(fn, k: int = 3) -> float:
    best = float("inf")
    for _ in range(k):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _print(table: pd.DataFrame) -> None:
    print("| " + " | ".join(table.columns) + " |\n|" + "---|" * len(table.columns))
    for row in table.itertuples(index=False):
        print("| " + " | ".join(f"{v:,}" if isinstance(v, (int, np.integer)) else str(v) for v in row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--baseline", default=BASELINE, help="git revision of the kernel to compare with")
    parser.add_argument("--update", action="store_true", help="only the update table")
    args = parser.parse_args()
    before = baseline(args.baseline)
    sizes = [10, 100, 1_000, 10_000] + ([] if args.quick else [100_000])
    table = pd.DataFrame([measure(q, n, before) for q in QUERIES for n in sizes] if not args.update else [])
    if args.update:
        table = pd.DataFrame(columns=["query"])
    else:
        _print(table)
    for query, part in table.groupby("query", sort=False):
        print(
            f"{query}: max delay spread {part['max ns'].max() / max(part['max ns'].min(), 1e-9):.2f}x, "
            f"p99 spread {part['p99 ns'].max() / max(part['p99 ns'].min(), 1e-9):.2f}x over matches of "
            f"{part['longest'].min()} to {part['longest'].max()} events"
        )
    n = sizes[-1]
    rng = np.random.default_rng(0)
    updates = [update_row(q, _types(q, n), before) for q in (WINDOWED, ALTERNATING)]
    updates.append(update_row("A a ; B b ; C c WITHIN 10 s", list(rng.choice(list("ABCD"), 200_000)), before, 10.0))
    print()
    _print(pd.DataFrame(updates))


if __name__ == "__main__":
    main()
