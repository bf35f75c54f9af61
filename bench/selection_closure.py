"""NEXT/LAST/MAX inside a pattern by [CEL] Theorem 4's closure (issue 24's targets), against the same pattern
without the selection and against the filtering plan it replaces.

Streams: uniformly random types A-D, one event per second, ``v`` in 0..99, ``id`` in 0..9. On one core,
CPU seconds (``time.process_time``, best of 3), ratios measured in this run:

- **update**: ``plan.count`` (letters, the trackers, Algorithm 1 over the whole stream, the lists of
  completed matches counted but not enumerated) over N events, for each query and its *baseline*, the
  same pattern with the selection removed; **x baseline** is the closure's time over the baseline's
  (target: at most 3). Under a top-level NEXT/LAST the row times a full run (``plan.run``: its per-event
  algorithm runs in Python), over N / 10 events.
- **output**: a full run (``plan.run``, every match enumerated into arrays) of a filtered query (every atom
  ``v < 10``) without a window, by the closure and by the filtering plan (the same query with a window
  longer than the stream, which the closure does not take: same matches). *enumerated* is what the
  filtering plan enumerates before dropping (the baseline's matches), *µs/match* the closure's (run −
  update) time per match it reports: flat as the stream and the output grow, i.e. linear in the output
  (the filtering plan only up to 8,000 events: what it enumerates grows as the cube of the stream).

    python bench/selection_closure.py           # about 5 minutes on a shared 2-core machine
    python bench/selection_closure.py --quick   # N = 100k
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import cepkit
from cepkit.runtime.registry import get_engine
from cepkit.runtime.stream import Stream
from streams import best_of

# (selection query, baseline: the same pattern without the selection); "*" rows were refused before
QUERIES = [
    ("NEXT(A a ; B b) ; C c", "A a ; B b ; C c"),
    ("LAST(A a ; B b) ; C c", "A a ; B b ; C c"),
    ("A a ; NEXT(B+ b ; C c) ; D d", "A a ; B+ b ; C c ; D d"),
    ("LAST(A a ; B b) ; C c PARTITION BY id", "A a ; B b ; C c PARTITION BY id"),
    ("MAX(A a ; B+ b) ; C c", "A a ; B+ b ; C c"),
    ("* (MAX(A a ; B+ b) ; C c)+", "(A a ; B+ b ; C c)+"),
    ("* (NEXT(A a ; B b) ; C c)+", "(A a ; B b ; C c)+"),
    ("* NEXT(LAST(A a ; B b) ; C c) ; D d", "A a ; B b ; C c ; D d"),
    ("* A x ; LAST((B b FILTER x.v > 50) OR C c) ; D d", "A x ; ((B b FILTER x.v > 50) OR C c) ; D d"),
    ("* NEXT(A a ; B b) ; C c CONSUME BY ANY", "A a ; B b ; C c CONSUME BY ANY"),
    ("* SELECT LAST * PATTERN NEXT(A a ; B b) ; C c", "SELECT LAST * PATTERN A a ; B b ; C c"),
]
OUTPUT = [
    "NEXT((A a FILTER a.v < 10) ; (B b FILTER b.v < 10)) ; (C c FILTER c.v < 10)",
    "(A a FILTER a.v < 10) ; LAST((B b FILTER b.v < 10) ; (C c FILTER c.v < 10))",
]
AUTOMATON = get_engine("automaton")


def make_stream(n: int, seed: int = 0) -> Stream:
    rng = np.random.default_rng(seed)
    return Stream.from_any(
        pd.DataFrame(
            {
                "type": rng.choice(np.array(list("ABCD"), dtype=object), n),
                "ts": np.arange(n, dtype=float),
                "v": rng.integers(0, 100, n),
                "id": rng.integers(0, 10, n),
            }
        )
    )


def plan_of(text: str):
    return AUTOMATON.compile(cepkit.parse(text))


def cpu(fn) -> tuple:
    return best_of(3, fn, clock=time.process_time)


def update_rows(n: int) -> list:
    stream = make_stream(n)
    short = make_stream(n // 10)
    rows = []
    for query, baseline in QUERIES:
        refused = query.startswith("* ")
        query = query.removeprefix("* ")
        events = short if "SELECT" in query else stream
        plan, base = plan_of(query), plan_of(baseline)
        # a top-level strategy's own algorithm runs in ``run`` (``count`` is Algorithm 1's update alone)
        step = (lambda p: p.run(events)) if "SELECT" in query else (lambda p: p.count(events))
        step(plan)  # warm: numba, the determinized table, the trackers' tables
        step(base)
        took, _ = cpu(lambda: step(plan))
        base_took, _ = cpu(lambda: step(base))
        info = plan.info()
        rows.append(
            {
                "query": query,
                "refused before": "yes" if refused else "",
                "events": len(events),
                "plan": info["nested_selection"],
                "tracker states": info.get("tracker_states", "-"),
                "update ev/s": f"{len(events) / took:,.0f}",
                "baseline ev/s": f"{len(events) / base_took:,.0f}",
                "x baseline": f"{took / base_took:.2f}",
            }
        )
        print(rows[-1], flush=True)
    return rows


def output_rows(sizes, filter_up_to: int) -> list:
    """The filtering plan only up to ``filter_up_to`` events: past it, what it enumerates grows as the cube
    of the stream."""
    rows = []
    for query in OUTPUT:
        for n in sizes:
            stream = make_stream(n, seed=1)
            closure = plan_of(query)
            assert closure.info()["nested_selection"] == "closure"
            closure.run(stream)  # warm
            update, _ = cpu(lambda: closure.count(stream))
            took, found = cpu(lambda: closure.run(stream))
            row = {"query": query, "events": n, "matches": len(found)}
            if n <= filter_up_to:
                filtering = plan_of(f"{query} WITHIN {10 * n} s")
                assert filtering.info()["nested_selection"] == "filter"
                filter_took, kept = cpu(lambda: filtering.run(stream))
                assert len(found) == len(kept)
                baseline = plan_of(query.replace("NEXT(", "(").replace("LAST(", "("))
                row |= {"enumerated by filter": len(baseline.run(stream)), "filter s": f"{filter_took:.3f}"}
            else:
                row |= {"enumerated by filter": "-", "filter s": "-"}
            row |= {
                "closure s": f"{took:.3f}",
                "x faster": f"{float(row['filter s']) / took:.0f}" if n <= filter_up_to else "-",
                # a run of a few milliseconds is within the clock's noise: no per-match figure
                "closure ns/match": f"{1e9 * (took - update) / len(found):.0f}" if took > 0.005 else "-",
            }
            rows.append(row)
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100k events for the update rows")
    args = parser.parse_args()
    n = 100_000 if args.quick else 1_000_000
    update = pd.DataFrame(update_rows(n))
    output = pd.DataFrame(output_rows((2_000, 8_000, 32_000, 128_000), filter_up_to=8_000))
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.max_colwidth", 80):
        print()
        print(update.to_string(index=False))
        print()
        print(output.to_string(index=False))


if __name__ == "__main__":
    main()
