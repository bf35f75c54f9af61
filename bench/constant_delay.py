"""The automaton's constant-delay enumeration (``enumeration="constant-delay"``, [CEL] Algorithm 3's
claim; docs/automaton-engine.md, "Constant-delay enumeration"): the delay between consecutive outputs as
the matches grow from 10 to 100,000 events.

Streams: ``A+ a ; B b`` over A^n B, and ``(A+ a ; B b)+ ; C c`` over (A A B)^(n/3) C, n = 10 .. 100,000,
no window: the last event completes 2^n (or so) matches, the longest n + 1 events long. Algorithm 1 runs
over the stream (the update), then the first 100,000 matches of the last event are enumerated with
``nodes.cursor_next``, the cycle counter read around each call (``llvm.readcyclecounter``, converted to
ns by the perf_counter over the loop). A call writes the part of the path that differs from the previous
match (the first: all of it): the **delay** is the call's time less its writing (the positions it wrote
times the time per position, the slope of a least-squares line through every call's time against its
positions written), reported as max and 99th percentile, each call's time the least of 5 runs (the walk
is the same each time; one run's maximum is the machine's preemption, milliseconds); **steps** counts the union nodes and pops of each call
beyond one per position written (the quantity the bound is about: at most the left spine, ≤ 2).
**total vs walk**: the cursor's time for those matches over the engine's unordered depth-first walk
(``_walk_back``, the matcher's enumeration) capped at as many, measured in the same run.

    python bench/constant_delay.py            # n = 10 .. 100,000 (about 1 minute)
    python bench/constant_delay.py --quick    # n = 10 .. 10,000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from cepkit.engines.automaton.evaluate import Evaluator, Inputs
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

OUTPUTS = 100_000  # matches timed per stream
POSITIONS = 20_000_000  # positions written for the totals
REPEATS = 5


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


def _stream(query: str, n: int) -> Stream:
    if query.startswith("A+"):
        types_ = ["A"] * n + ["B"]
    else:
        types_ = ["A", "A", "B"] * max(1, n // 3) + ["C"]
    return Stream.from_any(pd.DataFrame({"type": types_, "ts": np.arange(len(types_), dtype=float)}))


def _update(query: str, stream: Stream):
    """Algorithm 1 over the stream, the last event's lists of matches left unenumerated."""
    program = get_engine("automaton").compile(parse(query), enumeration="constant-delay").program
    evaluator = Evaluator(program)
    runs = evaluator.new_runs()
    for batch in Inputs(program, stream).batches(program.letters.none):
        runs = evaluator.run(batch, runs)
    return evaluator


def measure(query: str, n: int) -> dict:
    stream = _stream(query, n)
    evaluator = _update(query, stream)
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
    per_position = float(np.polyfit(written, ns, 1)[0]) if written.max() > written.min() else 0.0
    delay = np.maximum(ns - per_position * written, 0.0)
    # the whole enumeration, writing every match: the cursor mode against the unordered walk
    positions, cap = _first_positions(arena, cursor, root, key, limit, got)
    cursor_time = _best(lambda: _write(enumerate_cursor, arena, root, key, limit, cap, positions, cursor))
    walk_time = _best(lambda: _write(enumerate_roots, arena, root, key, limit, cap, positions, None))
    return {
        "query": query,
        "n": n,
        "matches": got,
        "longest": int(_longest(arena, cursor, root, key, limit, got)),
        "max ns": round(float(delay.max()), 1),
        "p99 ns": round(float(np.percentile(delay, 99)), 1),
        "max steps": int((steps - written).max()),
        "ns/position": round(per_position, 2),
        "written": cap,
        "total vs walk": round(cursor_time / walk_time, 2),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = [10, 100, 1_000, 10_000] + ([] if args.quick else [100_000])
    rows = [measure(q, n) for q in ("A+ a ; B b", "(A+ a ; B b)+ ; C c") for n in sizes]
    table = pd.DataFrame(rows)
    header = "| " + " | ".join(table.columns) + " |"
    print(header + "\n|" + "---|" * len(table.columns))
    for row in table.itertuples(index=False):
        print("| " + " | ".join(f"{v:,}" if isinstance(v, (int, np.integer)) else str(v) for v in row) + " |")
    for query, part in table.groupby("query", sort=False):
        print(
            f"{query}: max delay spread {part['max ns'].max() / part['max ns'].min():.2f}x, "
            f"p99 spread {part['p99 ns'].max() / part['p99 ns'].min():.2f}x over matches of "
            f"{part['longest'].min()} to {part['longest'].max()} events"
        )


if __name__ == "__main__":
    main()
