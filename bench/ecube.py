"""E-Cube: the workloads of [LIU] §4.6 (Fig 4.11-4.14), measured against each query alone through
``cepkit.match`` in the same run.

Methods, over one seeded stream of stock trades (the nine tickers of the company hierarchy, Fig 4.10):

- ``match``: every query alone through ``cepkit.match`` (its best engine, as a user calls it): the baseline;
- ``alone``: the cube with no reuse; ``top-down``: only general-to-specific reuse; ``bottom-up``: only
  specific-to-general; ``chase``: Chase chooses among all exact edges (the default of ``cepkit.ECube``).

Two densities. *Thesis density* (alone: ``--thesis-only``): trades 0.5 ms apart (the text replays 2,000 per second),
a 1 s window (integer ticks of 0.5 ms and ``WITHIN 2000``), W1-W3 (``SEQ(INTC a, !MSFT m, FCF b[, ROM e])`` and the longer shared prefixes) at several
stream lengths, with Chase's planning time and the peak memory of its run (tracemalloc) beside the bytes of
the results it keeps. Tickers are uniform here, so W2 and W3 grow combinatorially: they run at fewer
trades, and at the sizes whose rows alone outgrow memory their matches are counted (``count_matches``, a
prefix-sum pass per first event, checked against the engines' counts at every size that runs). *Small scale*: trades 2 ms apart, a 20 ms window, W1-W5 and two scaling runs (more extensions,
deeper hierarchies, the mixed W7 and W8), with every method; and Chase's planning time on the mixed workloads W7 and W8.

Times are CPU seconds of the process (``time.process_time``: the machine is shared) of ``ECube.run`` (the
``Matches`` included) and of the ``cepkit.match`` calls, best of ``--repeat``; the ratio is the baseline's
time over the method's (above 1: faster than each query alone). A fresh ``ECube`` per run: its planning is
inside its time. The skewed tape (``workloads.SKEWED``: large caps most, the workloads' small tickers 2-5 %
each) runs W1-W3 at 20,000 trades. ``--calibrate`` fits the fixed cost of an engine run
(``UnitCosts.C_eval``, ``cost.MEASURED``) on this machine. Run from the repository::

    python bench/ecube.py [--events 4000] [--repeat 3] [--thesis-only | --small-only | --calibrate]
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np

from tqdm import tqdm

import cepkit
from cepkit.ecube.cost import CostModel, Statistics, UnitCosts
from cepkit.ecube.reuse import Executor, ProjectPattern, UnionConcept, Via
from cepkit.ecube.shape import shape_of
from cepkit.runtime.stream import Stream
from cepkit.ecube.workloads import (
    COMPANIES,
    SKEWED,
    TICKERS,
    concept_workload,
    depth_workload,
    mixed_workloads,
    pattern_workload,
    trades,
)

METHODS = {"alone": (), "top-down": ("g→s",), "bottom-up": ("s→g",), "chase": ("g→s", "s→g")}


THESIS = {
    1: (("ROM", "EFC", "ANAT", "OREL"), (4000, 10000, 20000)),
    2: (("ROM", "OREL", "ANAT", "QQQ"), (1000, 2000, 4000)),
    3: (("ROM", "ANAT", "OREL", "EFC"), (250, 500, 1000)),
}
# Uniform tickers where the rows alone outgrow the machine: their matches counted, not built (``count_matches``)
COUNTED = {2: (10000, 20000), 3: (2000, 4000, 20000)}
SKEWED_TRADES = 20000
clock = time.process_time


def chase_times(events, repeat: int) -> list:
    """(workload, queries, lattice edges, candidate edges, ms to plan, the plan's reuse) for W7 and W8."""
    hierarchy, stats = cepkit.Hierarchy(COMPANIES), None
    rows = []
    for name, queries in mixed_workloads().items():
        cube = cepkit.ECube(queries, hierarchy)
        stats = stats or cepkit.ecube.Statistics.measure(events)
        best = float("inf")
        for _ in range(repeat):
            start = clock()
            plan = cube.plan(statistics=stats)
            best = min(best, clock() - start)
        reuse = ", ".join(f"{s.query}<-{s.source} ({s.direction})" for s in plan.steps if s.source)
        rows.append(
            (name, len(queries), cube.graph.number_of_edges(), plan.graph.number_of_edges(), best * 1000, reuse)
        )
    return rows


def alone_through_match(queries: dict, hierarchy, events, repeat: int) -> tuple:
    """(best seconds, matches) of every query alone through ``cepkit.match``."""
    best, found = float("inf"), 0
    for _ in range(repeat):
        start = clock()
        found = sum(len(cepkit.match(text, events, hierarchy=hierarchy)) for text in queries.values())
        best = min(best, clock() - start)
    return best, found


def measure(queries: dict, hierarchy, events, repeat: int, methods=METHODS) -> dict:
    """method -> (best seconds, matches, events the engine read, plan summary); "match" -> the baseline."""
    out = {"match": (*alone_through_match(queries, hierarchy, events, repeat), None, "")}
    for method in methods:
        directions = METHODS[method]
        best = float("inf")
        for _ in range(repeat):
            cube = cepkit.ECube(queries, hierarchy)
            start = clock()
            results = cube.run(events, directions=directions)
            best = min(best, clock() - start)
        steps = ", ".join(f"{s.query}<-{s.source}" for s in cube.last_plan.steps if s.source)
        out[method] = (
            best,
            sum(len(m) for m in results.values()),
            cube.work["events_read"],
            steps or "all from scratch",
        )
        del results, cube
    counts = {m: n for m, (_, n, _, _) in out.items()}
    assert len(set(counts.values())) == 1, f"methods disagree on the results: {counts}"
    return out


def planning_and_memory(queries: dict, hierarchy, events) -> tuple:
    """(ms Chase takes to plan, measuring included; peak MB of a Chase run; MB of the rows it keeps)."""
    cube = cepkit.ECube(queries, hierarchy)
    start = clock()
    cube.plan(events)
    planning = (clock() - start) * 1000
    cube = cepkit.ECube(queries, hierarchy)
    tracemalloc.start()
    results = cube.run(events)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    kept = sum(len(m) * len(cube.shapes[q].positives) * 8 for q, m in results.items())
    return planning, peak / 2**20, kept / 2**20


def report(title: str, rows: list, methods=("top-down", "bottom-up", "chase")) -> None:
    print(f"\n### {title}\n")
    print("| workload | queries | matches | each alone (cepkit.match) | " + " | ".join(methods) + " | chase's reuse |")
    print("|---" * (5 + len(methods)) + "|")
    for label, n, result in rows:
        base = result["match"][0]
        cells = [f"{result[m][0] * 1e3:.1f} ms ({base / result[m][0]:.1f}x)" for m in methods]
        print(
            f"| {label} | {n} | {result['match'][1]} | {base * 1e3:.1f} ms | "
            + " | ".join(cells)
            + f" | {result['chase'][3]} |"
        )


def thesis_density(repeat: int) -> None:
    hierarchy = cepkit.Hierarchy(COMPANIES)
    print("\n### Thesis density (Fig 4.11(a) / 4.13(a) workloads): 2,000 trades/s, 1 s window\n")
    print(
        "| workload | trades | matches | each alone (cepkit.match) | cube, no reuse | chase | Chase plans in "
        "| chase's peak memory / results kept |"
    )
    print("|---|---|---|---|---|---|---|---|")
    runs = [(w, n, None) for w, (_, sizes) in THESIS.items() for n in sizes]
    runs += [(w, SKEWED_TRADES, SKEWED) for w in THESIS]
    for workload, n, weights in tqdm(runs, desc="thesis density"):
        name = f"W{workload}" + (" skewed" if weights else "")
        queries = pattern_workload(workload, THESIS[workload][0], " WITHIN 2000")
        events = trades(n, gap=1, weights=weights)  # ticks of 0.5 ms
        result = measure(queries, hierarchy, events, repeat, methods=("alone", "chase"))
        counts = sum(count_matches(cepkit.parse(q, hierarchy), events, 2000) for q in queries.values())
        assert counts == result["match"][1], f"count_matches: {counts}, the engines: {result['match'][1]}"
        planning, peak, kept = planning_and_memory(queries, hierarchy, events)
        base = result["match"][0]
        print(
            f"| {name} | {n} | {result['match'][1]} | {base:.3f} s | "
            f"{result['alone'][0]:.3f} s ({base / result['alone'][0]:.1f}x) | "
            f"{result['chase'][0]:.3f} s ({base / result['chase'][0]:.1f}x) | {planning:.0f} ms | "
            f"{peak:.0f} MB / {kept:.0f} MB |",
            flush=True,
        )
    counted(hierarchy)


def count_matches(query, events, window: int) -> int:
    """The matches of a flat SEQ without conditions or leading and trailing negations (W1-W3), counted
    without building them: per event of the first item, one pass over its window of prefix sums (the
    partial matches ending at each event; a negated item between two positive ones restarts the sums)."""
    types, ts = events["type"].to_numpy(), events["ts"].to_numpy()
    steps, pending = [], []
    for item in shape_of(query).items:
        if item.positive:
            steps.append((np.isin(types, list(item.types)), [np.isin(types, list(n.types)) for n in pending]))
            pending = []
        else:
            pending.append(item)
    if pending or steps[0][1]:
        raise ValueError("count_matches counts flat SEQ without leading or trailing negations")
    ends = np.searchsorted(ts, ts + window, "right")
    total = 0
    for s in np.flatnonzero(steps[0][0]):
        e = ends[s]
        count = np.zeros(e - s, np.int64)
        count[0] = 1
        for accepts, negated in steps[1:]:
            sums = np.cumsum(count)
            before = np.concatenate([[0], sums[:-1]])  # partial matches ending strictly before each event
            if negated:  # ... and after the last negated event before it
                blocked = np.logical_or.reduce([n[s:e] for n in negated])
                last = np.maximum.accumulate(np.where(blocked, np.arange(e - s), -1))
                last = np.concatenate([[-1], last[:-1]])
                before = before - np.where(last >= 0, sums[np.maximum(last, 0)], 0)
            count = np.where(accepts[s:e], before, 0)
        total += int(count.sum())
    return total


def counted(hierarchy) -> None:
    """W2/W3 on uniform tickers at sizes whose rows alone outgrow memory: the matches counted, the bytes
    of the rows a cube (or each query alone) would have to hold."""
    print("\n### Uniform tickers past memory: the results' own size (counted, not built)\n")
    print("| workload | trades | matches | rows' bytes (int64 positions) |")
    print("|---|---|---|---|")
    for workload, sizes in COUNTED.items():
        queries = pattern_workload(workload, THESIS[workload][0], " WITHIN 2000")
        for n in sizes:
            events = trades(n, gap=1)
            parsed = {name: cepkit.parse(text, hierarchy) for name, text in queries.items()}
            found = {name: count_matches(q, events, 2000) for name, q in parsed.items()}
            size = sum(found[name] * len(shape_of(q).positives) * 8 for name, q in parsed.items())
            print(f"| W{workload} | {n} | {sum(found.values()):,} | {size / 2**30:,.1f} GB |", flush=True)


def calibrate(repeat: int) -> None:
    """Fit each engine run's CPU time as ``a + b·scratch_cost`` (Table 4.1's units) over the workloads'
    queries and helper queries at small scale; ``a / b`` is ``UnitCosts.C_eval`` in cost units."""
    points = []
    for events, workloads in (
        (
            trades(4000),
            [pattern_workload(1), concept_workload(), *mixed_workloads().values()],
        ),
        (trades(20000), [concept_workload()]),
    ):
        stream = Stream.from_any(events)
        model = CostModel(Statistics.measure(stream), UnitCosts())
        for queries in workloads + [depth_workload(d) for d in (2, 4)]:
            queries, children = queries if isinstance(queries, tuple) else (queries, COMPANIES)
            cube = cepkit.ECube(queries, cepkit.Hierarchy(children))
            compiled: dict = {}
            for shape in helper_shapes(cube):
                best = float("inf")
                for _ in range(repeat + 1):
                    executor = Executor(stream, "auto", compiled)
                    start = clock()
                    executor.evaluate(shape)
                    best = min(best, clock() - start)
                points.append((model.scratch_cost(shape), best))
    cost, seconds = np.asarray(points).T
    weight = 1 / seconds  # relative errors: the small runs, where the fixed cost shows, count as much
    a, b = np.linalg.lstsq(np.c_[np.ones_like(cost), cost] * weight[:, None], seconds * weight, rcond=None)[0]
    print(f"{len(points)} engine runs: {a * 1e6:.0f} µs + {b * 1e9:.0f} ns per cost unit; C_eval = {a / b:.0f}")


def helper_shapes(cube) -> set:
    """The cube's queries and every helper query its reuse strategies run (deltas)."""
    found = set(cube.shapes.values())

    def walk(strategy):
        if isinstance(strategy, UnionConcept):
            found.update(strategy.deltas)
        elif isinstance(strategy, ProjectPattern):
            found.add(strategy.delta)
        elif isinstance(strategy, Via):
            walk(strategy.first)
            walk(strategy.second)

    for _, _, strategy in cube.candidates(Statistics({}, 1, 1.0)).edges(data="strategy"):
        walk(strategy)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--thesis-only", action="store_true")
    parser.add_argument("--small-only", action="store_true")
    parser.add_argument("--calibrate", action="store_true")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.1f} (2 cores)", flush=True)
    if args.calibrate:
        calibrate(args.repeat)
        return
    if not args.small_only:
        thesis_density(args.repeat)
    if args.thesis_only:
        print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
        return
    events = trades(args.events)
    hierarchy = cepkit.Hierarchy(COMPANIES)
    jobs = (
        [("pattern", f"W{w} (shared length {w + 2})", pattern_workload(w), hierarchy) for w in (1, 2, 3)]
        + [("concept", "W4/W5 (q16, q17, q18)", concept_workload(), hierarchy)]
        + [
            ("queries", f"shared length 3, {k} extensions", pattern_workload(1, TICKERS[:k]), hierarchy)
            for k in (1, 2, 4, 8)
        ]
        + [("mixed", name, queries, hierarchy) for name, queries in mixed_workloads().items()]
    )
    for depth in (2, 4, 6):
        queries, children = depth_workload(depth)
        jobs.append(("depth", f"hierarchy depth {depth}", queries, cepkit.Hierarchy(children)))
    sections: dict = {}
    for section, label, queries, h in tqdm(jobs, desc="workloads"):
        sections.setdefault(section, []).append((label, len(queries), measure(queries, h, events, args.repeat)))
    print(
        f"\n{args.events} trades, 2 ms apart, window 20 ms; best of {args.repeat}; speed-up over each query "
        "alone through cepkit.match in parentheses"
    )
    titles = {
        "pattern": "Pattern workloads (Fig 4.11(a) / 4.13(a) shape)",
        "concept": "Concept workload (Fig 4.12(a))",
        "queries": "More queries (pattern, shared length 3)",
        "mixed": "Mixed workloads W7, W8",
        "depth": "Deeper hierarchies (one query per level, concept chain)",
    }
    for section, rows in sections.items():
        report(titles[section], rows)
    print("\n### Chase on the mixed workloads (the text: 16 ms)\n")
    print("| workload | queries | lattice edges | Chase's candidate edges | plan (ms) | reuse chosen |")
    print("|---|---|---|---|---|---|")
    for name, n, lattice_edges, candidates, ms, reuse in chase_times(events, args.repeat):
        print(f"| {name} | {n} | {lattice_edges} | {candidates} | {ms:.0f} | {reuse} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
