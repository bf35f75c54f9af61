"""LIMIT n over results too large to hold, as a user meets them (docs/language.md §12).

``A+ a ; B b LIMIT 100`` over 60 A's then a B (2^60 - 1 matches, all completed by the B) on every engine:
what each returns or raises, CPU and wall seconds and the peak of memory traced (tracemalloc: numpy's
and Python's allocations). On the flights year (690k events) Kleene queries with LIMIT 100 on the
automaton, against the same run's ``SEQ(FOG f, DELAYED_DEPARTURE d) WITHIN 2 h`` (the baseline: a small
result read whole). And the price of the count ses and rcep now make before a Kleene query under ALL
(``engines/result_size.py``): on 200k synthetic events, the count's CPU as a share of each engine's run.

It prints the load average at the start and the end: on a shared machine read the CPU column and ratios.

    nice -n 10 python bench/limit.py            # ~1 min of CPU; --quick: 50k synthetic events
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np
import pandas as pd

import cepkit
from cepkit.datasets.flights import flight_events
from cepkit.runtime.registry import get_engine

EXPLOSIVE = "A+ a ; B b LIMIT 100"
ENGINES = ["automaton", "stack", "ses", "rcep", "nested", "ecube", "reference"]
YEAR_BASELINE = "SEQ(FOG f, DELAYED_DEPARTURE d) WITHIN 2 h"
YEAR = [
    "DELAYED_DEPARTURE+ AS d LIMIT 100",
    "FOG AS f ; DELAYED_DEPARTURE+ AS d ; STORM AS s LIMIT 100",
    "FOG AS f ; DELAYED_DEPARTURE+ AS d ; STORM AS s WITHIN 1 day LIMIT 100",
    "FOG AS f ; DELAYED_DEPARTURE+ AS d ; STORM AS s WITHIN 1 day",
    "FOG AS w ; DELAYED_DEPARTURE+ AS d WHERE d.dep_delay >= 30 WITHIN 2 h PARTITION BY origin LIMIT 100",
    "FOG AS w ; DELAYED_DEPARTURE+ AS d WHERE d.dep_delay >= 30 WITHIN 2 h PARTITION BY origin",
]
GUARDED = "A a ; B+ b ; C c WITHIN 6 EVENTS"


def measured(call) -> tuple:
    """(outcome, CPU s, wall s, traced peak MB) of ``call()``: the rows found, or the error's class."""
    tracemalloc.start()
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        outcome = f"{len(call()):,} rows"
    except Exception as err:  # what the user meets
        outcome = type(err).__name__
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return outcome, cpu, wall, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50k synthetic events for the count's price")
    args = parser.parse_args()
    print(f"load at start: {os.getloadavg()[0]:.1f}")
    events = pd.DataFrame({"type": ["A"] * 60 + ["B"], "ts": np.arange(61, dtype=float)})
    for engine in ENGINES:  # warm: compile kernels and plans first
        measured(lambda: cepkit.match(EXPLOSIVE, events.iloc[50:], engine=engine).positions())
    print(f"\n{EXPLOSIVE!r} over 60 A's then a B (2^60 - 1 matches)")
    print(f"{'engine':<10} {'outcome':<14} {'CPU s':>7} {'wall s':>7} {'peak MB':>8}")
    for engine in ENGINES:
        outcome, cpu, wall, peak = measured(lambda: cepkit.match(EXPLOSIVE, events, engine=engine).positions())
        print(f"{engine:<10} {outcome:<14} {cpu:>7.3f} {wall:>7.3f} {peak:>8.1f}")

    year = flight_events()
    measured(lambda: cepkit.match(YEAR_BASELINE, year, engine="automaton").positions())
    base = measured(lambda: cepkit.match(YEAR_BASELINE, year, engine="automaton").positions())
    print(f"\nthe flights year ({len(year):,} events), automaton; baseline {YEAR_BASELINE!r}")
    print(f"{'query':<100} {'outcome':<16} {'CPU s':>7} {'wall s':>7} {'peak MB':>8} {'x base':>7}")
    for query in [YEAR_BASELINE] + YEAR:
        outcome, cpu, wall, peak = (
            base
            if query == YEAR_BASELINE
            else measured(lambda: cepkit.match(query, year, engine="automaton").positions())
        )
        print(f"{query:<100} {outcome:<16} {cpu:>7.3f} {wall:>7.3f} {peak:>8.1f} {cpu / base[1]:>7.2f}")

    n = 50_000 if args.quick else 200_000
    rng = np.random.default_rng(0)
    synthetic = pd.DataFrame({"type": rng.choice(list("ABCD"), n), "ts": np.arange(n, dtype=float)})
    query = cepkit.parse(GUARDED)
    size = get_engine("automaton").compile(query)
    size.size(synthetic.iloc[:100])  # warm
    _, count_cpu, _, _ = measured(lambda: range(size.size(synthetic)))
    print(f"\nthe count before a Kleene query under ALL: {GUARDED!r}, {n:,} events")
    print(f"{'engine':<10} {'outcome':<16} {'run CPU s':>10} {'count CPU s':>12} {'count/run':>10}")
    for engine in ("ses", "rcep"):
        cepkit.match(GUARDED, synthetic.iloc[:100], engine=engine)  # warm
        outcome, cpu, _, _ = measured(lambda: cepkit.match(GUARDED, synthetic, engine=engine).positions())
        print(f"{engine:<10} {outcome:<16} {cpu:>10.3f} {count_cpu:>12.3f} {count_cpu / cpu:>10.2f}")
    print(f"\nload at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
