"""rcep engine benchmarks: the shapes of [RCEP] §3.8 at small scale, on seeded synthetic streams.

1. Window growth (Figs 3.11-3.13): the credit-card query Q2 (high selectivity, as written) and the stock
   inverted-V Q1, rcep against the best other engine that runs the query (``ses``: its automaton keeps
   partial matches, as SASE+/Flink do), as the window grows: throughput end to end (``cepkit.match`` on a
   DataFrame to ``.positions()``, CPU seconds, best of three) in events and in matches per second, next
   to the floor of the output (rcep's result written alone: its position arrays copied into fresh ones,
   and the tuples of ``.positions()`` made from them, the same code for every engine); "to arrays": the
   same to ``.position_arrays()``, the columns without a tuple per match, whose floor is the copy alone.
   Then the memory of each engine's ``Matcher`` (tracemalloc, events pushed one by one, matches dropped):
   what it keeps between pushes (rcep's trees, ses's partial matches) and its peak, a push's own matches
   included, and rcep's stored events. A run past its time budget is cut, as the thesis cuts competitors
   that stall: the engine then runs on a prefix of the stream (halved until it fits) and its rate is over
   that prefix.
2. Predicate selectivity (Fig 3.12 a/b): Q2 with a constant filter on ``a`` letting fewer and fewer
   triggers produce matches; the thesis's limitation: at low selectivity and small windows the fixed batch
   cost of recomputation loses.
3. Skip-till-next-match (the thesis's STN): Q1 and Q2 under ``SELECT STNM``, rcep's kernel
   (``kernel.next_match_walks``: every match walked forward from its first event) against rcep's matcher (each trigger recomputed
   and judged in Python: the path before the kernel ran STNM, timed as ``plan.run`` took it then: events
   pushed one by one, then ``close``, then ``.positions()``) and against ses's STNM, end to end.
4. Join methods (Fig 3.9): the hybrid join (Algorithm 2), the nested-loop join (NLJoin) and the Z-order
   region join (Algorithm 4) on dominated and independent data, 1-3 predicates between two relations (CPU
   seconds, best of three).

Every table prints ratios against a baseline measured in the same run.

    python bench/rcep.py            # the full run (a few minutes)
    python bench/rcep.py --quick    # small sizes, a smoke check
    python bench/rcep.py --stnm     # only the STNM table
    python bench/rcep.py --only window   # one section: window, selectivity, stnm or joins
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import time
import tracemalloc

import numpy as np
import pandas as pd
from tqdm import tqdm

import cepkit
from cepkit.engines.rcep.joins import hybrid_join, nested_join
from cepkit.engines.rcep.zorder import region_join
from cepkit.runtime import Stream
from cepkit.runtime.selection import select_engine


def cards(n: int, cards_: int = 20, seed: int = 0) -> pd.DataFrame:
    """R-CCD-like: one transaction a second over ``cards_`` cards, amounts uniform in 1..999."""
    rng = random.Random(seed)
    return pd.DataFrame(
        [{"type": "Card", "ts": i, "cardID": rng.randrange(cards_), "amount": rng.randrange(1, 1000)} for i in range(n)]
    )


def stocks(n: int, companies: int = 10, seed: int = 0) -> pd.DataFrame:
    """S-SD-like (the SASE+ generator's shape): one tick a second, each company's price a random walk."""
    rng = random.Random(seed)
    price, rows = [100.0] * companies, []
    for i in range(n):
        company = rng.randrange(companies)
        price[company] += rng.choice((-1, 1)) * rng.randrange(1, 4)
        rows.append({"type": "Stock", "ts": i, "company": company, "price": price[company]})
    return pd.DataFrame(rows)


def q2(window: int, threshold: int = 0) -> str:
    """Q2 ([RCEP] §3.2) as written; ``threshold`` > 0 adds the low-selectivity filter on a."""
    extra = f" and a.amount > {threshold}" if threshold else ""
    return (
        f"PATTERN SEQ(Card a, Card+ b) WHERE a.amount >= b.amount * 5 and prev(b.amount) > b.amount{extra} "
        f"WITHIN {window} PARTITION BY cardID"
    )


def q1(window: int, first: bool) -> str:
    """Q1 ([RCEP] §3.2), the inverted V: ``c.price < FIRST(b.price)``; with rising b the same as ``c.price <
    b.price`` for every b, the form the ses engine takes."""
    closing = "c.price < first(b).price" if first else "c.price < b.price"
    return (
        f"PATTERN SEQ(Stock a, Stock+ b, Stock c) WHERE a.price < b.price and prev(b.price) < b.price and "
        f"{closing} WITHIN {window} PARTITION BY company"
    )


def run(query: str, frame: pd.DataFrame, engine: str, budget: float, arrays: bool = False, **options) -> dict:
    """``cepkit.match(query, frame).positions()`` (``arrays``: ``.position_arrays()``, the same result as
    columns) in CPU seconds, best of three; past ``budget`` seconds the stream is halved until a run fits,
    and the rate is over that prefix ("cut")."""
    n = len(frame)
    while True:
        part = frame.iloc[:n]
        start = time.process_time()
        found = cepkit.match(query, part, engine=engine, **options)
        count = len(found.position_arrays()[0]) - 1 if arrays else len(found.positions())
        first = time.process_time() - start
        if first <= budget or n <= 100:
            break
        n //= 2
    repeats = 2 if first < budget / 4 else 0
    seconds = min([first] + [_timed(query, part, engine, arrays, options) for _ in range(repeats)])
    return {"rate": n / seconds, "seconds": seconds, "matches": count, "cut": n < len(frame), "info": found.info}


def _timed(query: str, frame: pd.DataFrame, engine: str, arrays: bool, options: dict) -> float:
    start = time.process_time()
    found = cepkit.match(query, frame, engine=engine, **options)
    found.position_arrays() if arrays else found.positions()
    return time.process_time() - start


def memory(query: str, frame: pd.DataFrame, engine: str, budget: float) -> dict:
    """What the engine's ``Matcher`` holds while events are pushed one by one and its matches dropped, as
    the thesis polls RSS (tracemalloc sees Python objects and numpy arrays): ``kept`` the most it holds
    between two pushes (after a garbage collection, every 25 events: its state, rcep's trees and ses's
    partial matches), ``peak`` the most at any moment (a push's own matches included: the largest
    trigger's, ``largest``), in MB; ``pushed`` the events pushed within ``budget`` CPU seconds."""
    _, plan = select_engine(cepkit.parse(query), engine, {})
    events = list(Stream.from_any(frame))  # the events exist before the count starts
    gc.collect()
    tracemalloc.start()
    base, kept, largest = tracemalloc.get_traced_memory()[0], 0, 0
    matcher, start = plan.matcher(), time.process_time()
    for i, event in enumerate(events):
        largest = max(largest, len(matcher.push(event)))
        if i % 25 == 24:
            gc.collect()
            kept = max(kept, tracemalloc.get_traced_memory()[0] - base)
        if time.process_time() - start > budget:
            break
    gc.collect()
    kept = max(kept, tracemalloc.get_traced_memory()[0] - base)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return {"kept": kept / 2**20, "peak": peak / 2**20, "largest": largest, "pushed": i + 1}


def output_floor(query: str, frame: pd.DataFrame) -> dict:
    """The cost of rcep's output alone, CPU seconds, best of three: ``arrays`` its position arrays written
    into fresh ones (offsets and positions: the memory any engine returning them writes), ``tuples`` that
    plus ``.positions()``'s tuples made from ready arrays (the same code for every engine)."""
    arrays = tuples = float("inf")
    for _ in range(3):
        found = cepkit.match(query, frame, engine="rcep")
        offsets, flat = found.position_arrays()
        start = time.process_time()
        written_offsets, written = np.empty_like(offsets), np.empty_like(flat)
        written_offsets[:], written[:] = offsets, flat
        middle = time.process_time()
        found.positions()
        end = time.process_time()
        arrays, tuples = min(arrays, middle - start), min(tuples, end - start)
    return {"arrays": arrays, "tuples": tuples}


def table(title: str, header: tuple, rows: list) -> None:
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(f"{c:.3g}" if isinstance(c, float) else str(c) for c in row) + " |")


def window_growth(quick: bool, bar) -> None:
    """Q2 over 20,000 transactions; Q1 over 3,000 ticks (its matches grow to 750,000 at 200 events)."""
    budget = 5.0 if quick else 20.0
    windows = (25, 50) if quick else (25, 50, 100, 200)
    for name, stream, text in (
        ("Q2 credit card", cards(600 if quick else 20000), lambda w: (q2(w), q2(w))),
        ("Q1 stock inverted V", stocks(600 if quick else 3000), lambda w: (q1(w, True), q1(w, False))),
    ):
        n = len(stream)
        rows, memory_rows = [], []
        for w in windows:
            rcep_query, other_query = text(w)
            mine = run(rcep_query, stream, "rcep", budget)
            other = run(other_query, stream, "ses", budget)
            mine_arrays = run(rcep_query, stream, "rcep", budget, arrays=True)
            other_arrays = run(other_query, stream, "ses", budget, arrays=True)
            floor = output_floor(rcep_query, stream)
            matches = mine["matches"]
            rows.append(
                (
                    w,
                    matches,
                    1e3 * mine["seconds"],
                    f"{mine['rate']:.0f}",
                    f"{mine['matches'] / mine['seconds']:.0f}",
                    f"{other['rate']:.0f}" + (" (cut)" if other["cut"] else ""),
                    f"{other['matches'] / other['seconds']:.0f}",
                    mine["rate"] / other["rate"],
                    1e3 * floor["tuples"],
                    mine["seconds"] / floor["tuples"],
                    1e3 * mine_arrays["seconds"],
                    mine_arrays["rate"] / other_arrays["rate"],
                    1e3 * floor["arrays"],
                    mine_arrays["seconds"] / floor["arrays"],
                )
            )
            bar.update(1)
            budget_memory = 2.0 if quick else 3.0
            kept = memory(rcep_query, stream, "rcep", budget_memory), memory(other_query, stream, "ses", budget_memory)
            memory_rows.append(
                (
                    w,
                    matches,
                    kept[0]["largest"],
                    f"{kept[0]['pushed']} / {kept[1]['pushed']}",
                    kept[0]["kept"],
                    kept[0]["peak"],
                    kept[1]["kept"],
                    kept[1]["peak"],
                    kept[1]["kept"] / kept[0]["kept"],
                    mine["info"].get("peak_stored", ""),
                )
            )
        table(
            f"{name}: {n} events, rcep vs ses as the window grows (events; CPU ms; speed-up = rcep / ses rate; "
            "floor: writing the result alone)",
            (
                "window",
                "matches",
                "rcep ms",
                "rcep ev/s",
                "rcep matches/s",
                "ses ev/s",
                "ses matches/s",
                "speed-up",
                "floor ms",
                "rcep / floor",
                "to arrays: rcep ms",
                "speed-up",
                "floor ms",
                "rcep / floor",
            ),
            rows,
        )
        table(
            f"{name}: memory of each engine's Matcher, events pushed one by one (MB; kept: between pushes, "
            "peak: a push's own matches included)",
            (
                "window",
                "matches",
                "largest trigger",
                "pushed rcep / ses",
                "rcep kept",
                "rcep peak",
                "ses kept",
                "ses peak",
                "ses/rcep kept",
                "rcep stored",
            ),
            memory_rows,
        )


def selectivity(quick: bool, bar) -> None:
    n, budget = (600, 5.0) if quick else (20000, 20.0)
    stream = cards(n)
    rows = []
    for w in (10, 100):
        for threshold in (0, 500, 900, 990):
            mine = run(q2(w, threshold), stream, "rcep", budget)
            other = run(q2(w, threshold), stream, "ses", budget)
            rows.append(
                (
                    w,
                    f"a.amount > {threshold}",
                    mine["matches"] / n,
                    f"{mine['rate']:.0f}",
                    f"{other['rate']:.0f}",
                    mine["rate"] / other["rate"],
                )
            )
            bar.update(1)
    table(
        f"Q2 selectivity (matches per event) at two windows, {n} events (ratio = rcep / ses)",
        ("window", "filter on a", "selectivity", "rcep ev/s", "ses ev/s", "speed-up"),
        rows,
    )


def run_pushed(query: str, frame: pd.DataFrame, budget: float) -> dict:
    """``run`` through rcep's matcher, event by event (the per-trigger Python path), CPU seconds, best of
    three, the stream halved past ``budget``."""
    _, plan = select_engine(cepkit.parse(query), "rcep", {})
    n = len(frame)
    while True:
        start = time.process_time()
        stream = Stream.from_any(frame.iloc[:n])
        matcher = plan.matcher()
        found = cepkit.Matches([m for event in stream for m in matcher.push(event)] + matcher.close(), "rcep")
        count = len(found.positions())
        first = time.process_time() - start
        if first <= budget or n <= 100:
            break
        n //= 2
    return {"rate": n / first, "matches": count, "cut": n < len(frame)}


def skip_till_next(quick: bool, bar) -> None:
    """Q1 (3,000 ticks) and Q2 (20,000 transactions) under STNM as the window grows."""
    budget = 5.0 if quick else 20.0
    windows = (25, 50) if quick else (25, 50, 100, 200)
    rows = []
    for name, stream, text in (
        ("Q2", cards(600 if quick else 20000), lambda w: (q2(w), q2(w))),
        ("Q1", stocks(600 if quick else 3000), lambda w: (q1(w, True), q1(w, False))),
    ):
        for w in windows:
            rcep_query, other_query = (f"SELECT STNM * {q}" for q in text(w))
            mine = run(rcep_query, stream, "rcep", budget)
            before = run_pushed(rcep_query, stream, budget)
            other = run(other_query, stream, "ses", budget)
            assert other["cut"] or before["cut"] or mine["matches"] == other["matches"] == before["matches"]
            rows.append(
                (
                    name,
                    w,
                    len(stream),
                    mine["matches"],
                    f"{mine['rate']:.0f}",
                    f"{before['rate']:.0f}" + (" (cut)" if before["cut"] else ""),
                    f"{other['rate']:.0f}" + (" (cut)" if other["cut"] else ""),
                    mine["rate"] / before["rate"],
                    mine["rate"] / other["rate"],
                )
            )
            bar.update(1)
    table(
        "STNM end to end to .positions(): rcep's kernel vs rcep per trigger (its matcher) and ses",
        (
            "query",
            "window",
            "events",
            "matches",
            "rcep ev/s",
            "per trigger ev/s",
            "ses ev/s",
            "vs per trigger",
            "vs ses",
        ),
        rows,
    )


def synthetic(n: int, dims: int, dominated: bool, seed: int = 0) -> tuple:
    """S-CD-like relations in time order: ``dominated`` puts every outer tuple below every inner tuple on
    each dimension (and earlier); independent draws both uniformly."""
    rng = np.random.default_rng(seed)
    outer, inner = rng.uniform(0, 1000, (n, dims)), rng.uniform(0, 1000, (n, dims))
    if dominated:
        outer, inner = np.sort(outer / 2, axis=0), np.sort(500 + inner / 2, axis=0)
    return outer, np.arange(n), inner, np.arange(n // 2, n + n // 2)


def join_all(method: str, dims: int, outer, outer_seq, inner, inner_seq) -> tuple:
    """(B, comparisons made) for ``outer[:, k] < inner[:, k]`` on every dimension k, inner after outer."""
    valid = np.ones(len(outer), dtype=bool)
    if method == "zorder":
        stats: dict = {}
        joined = region_join(
            ("<",) * (dims + 1),
            np.column_stack([outer_seq, outer]),
            valid,
            np.column_stack([inner_seq, inner]),
            valid,
            stats,
        )
        return joined, stats["tested"]
    join = hybrid_join if method == "hybrid" else nested_join
    joined, work = None, 0
    for k in range(dims):
        matrix, tested, _, _ = join("<", (outer[:, k], valid, outer_seq), (inner[:, k], valid, inner_seq))
        joined = matrix if joined is None else joined & matrix
        work += tested
    return joined, work


def join_methods(quick: bool, bar) -> None:
    sizes = (500, 1000) if quick else (1000, 2000, 4000)
    rows = []
    for dominated in (True, False):
        for dims in (1, 2, 3):
            for n in sizes:
                outer, outer_seq, inner, inner_seq = synthetic(n, dims, dominated)
                timings, work, bits = {}, {}, {}
                for method in ("nested", "hybrid", "zorder"):
                    best = float("inf")
                    for _ in range(3):  # best of three in CPU time: the machine is shared
                        start = time.process_time()
                        joined, work[method] = join_all(method, dims, outer, outer_seq, inner, inner_seq)
                        best = min(best, time.process_time() - start)
                    timings[method], bits[method] = best, int(joined.sum())
                assert bits["nested"] == bits["hybrid"] == bits["zorder"]
                rows.append(
                    (
                        "dominated" if dominated else "independent",
                        dims,
                        n,
                        timings["nested"] * 1e3,
                        timings["nested"] / timings["hybrid"],
                        timings["nested"] / timings["zorder"],
                        work["hybrid"] / max(1, work["nested"]),
                        work["zorder"] / max(1, work["nested"]),
                    )
                )
                bar.update(1)
    table(
        "Join methods, n x n tuples (speed-up and comparisons made, relative to the nested-loop join)",
        ("data", "predicates", "n", "nested ms", "hybrid speed-up", "zorder speed-up", "hybrid tests", "zorder tests"),
        rows,
    )


SECTIONS = ("window", "selectivity", "stnm", "joins")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke check")
    parser.add_argument("--stnm", action="store_true", help="only the STNM table (3.)")
    parser.add_argument("--only", choices=SECTIONS, help="only this section (1. to 4.)")
    args = parser.parse_args()
    quick = args.quick
    only = "stnm" if args.stnm else args.only
    for engine in ("rcep", "ses"):  # compile the numba kernels (each query shape's) before timing
        for query, frame in ((q2(10), cards(50)), (q2(10, 500), cards(50)), (q1(25, engine == "rcep"), stocks(50))):
            cepkit.match(query, frame, engine=engine).positions()
            cepkit.match(f"SELECT STNM * {query}", frame, engine=engine).positions()
    windows = 2 if quick else 4
    steps = {"window": 2 * windows, "selectivity": 8, "stnm": 2 * windows, "joins": 2 * 3 * (2 if quick else 3)}
    print(f"load average (1, 5, 15 min) at the start: {os.getloadavg()}")
    with tqdm(total=steps[only] if only else sum(steps.values()), desc="rcep bench") as bar:
        for section, function in zip(SECTIONS, (window_growth, selectivity, skip_till_next, join_methods)):
            if only in (None, section):
                function(quick, bar)
    print(f"\nload average (1, 5, 15 min) at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
