"""E-Cube at small scale: the shapes of [LIU] §4.6 (Fig 4.11-4.14), measured here.

Four methods over one seeded stream of stock trades (the company hierarchy of Fig 4.10):

- ``alone``: every query from scratch on the stack engine (the state of the art of [LIU] §4.6);
- ``top-down``: reuse only general-to-specific; ``bottom-up``: only specific-to-general;
- ``chase``: Chase chooses among all exact edges (the default of ``cepkit.ECube``).

Workloads, as in [LIU] §4.6: *pattern* (W1-W3: a shared ``SEQ(.., INTC, !MSFT, FCF)`` of length 3-5 and its
extensions by one ticker), *concept* (W4/W5: ``SEQ(Computer, Finance, Education)`` and its drill-downs), and
two scaling runs: the number of extensions (queries) and the depth of the hierarchy (a chain of concepts
above one ticker, each level a query); and the time Chase takes to plan the mixed workloads W7 and W8
(lattice, cost model and arborescence). Times are wall-clock seconds of ``ECube.run`` (building the
``Matches`` included), best of ``--repeat``, with each method's speed-up over ``alone`` measured in the same
run; "read" is the load-independent part: the events the engine was fed over all its runs
(``ECube.work``), as a share of what ``alone`` feeds it. Run from the repository::

    python bench/ecube.py [--events 4000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import random
import time

from tqdm import tqdm

import cepkit

METHODS = {"alone": (), "top-down": ("g→s",), "bottom-up": ("s→g",), "chase": ("g→s", "s→g")}
COMPANIES = {"Computer": ["DELL", "INTC", "MSFT"], "Finance": ["QQQ", "FCF", "ROM"],
             "Education": ["EFC", "ANAT", "OREL"]}
TICKERS = [t for kids in COMPANIES.values() for t in kids]
WINDOW = " WITHIN 20 ms"


def trades(n: int, seed: int = 0, tickers=TICKERS) -> list:
    """``n`` trades 2 ms apart (the paper replays 2000 tuples/s), tickers uniform, price 10..99."""
    rng = random.Random(seed)
    return [{"type": rng.choice(tickers), "ts": i * 0.002, "price": rng.randrange(10, 100)} for i in range(n)]


def pattern_workload(length: int, extensions=("ROM", "EFC", "ANAT", "OREL")) -> dict:
    """W1-W3: the shared SEQ(.., INTC, !MSFT, FCF) of ``length`` positives and one query per extension."""
    prefix = ["QQQ q", "DELL d"][: length - 2][::-1]
    shared = prefix + ["INTC i", "!MSFT m", "FCF f"]
    queries = {"shared": "SEQ(" + ", ".join(shared) + ")" + WINDOW}
    for ticker in extensions:
        queries[f"+{ticker}"] = "SEQ(" + ", ".join(shared + [f"{ticker} x"]) + ")" + WINDOW
    return queries


def concept_workload() -> dict:
    """W4/W5: q16 and its concept drill-downs."""
    return {"q16": "SEQ(Computer c, Finance f, Education e)" + WINDOW,
            "q17": "SEQ(Computer c, Finance f, EFC e)" + WINDOW,
            "q18": "SEQ(Computer c, QQQ f, EFC e)" + WINDOW}


def depth_workload(depth: int) -> tuple:
    """A chain of ``depth`` concepts L1 > L2 > ... > INTC (each level also holding one more ticker), and
    one query per level: SEQ(Lk c, FCF f)."""
    children = {f"L{k}": [f"L{k + 1}", TICKERS[(k + 3) % len(TICKERS)]] for k in range(1, depth)}
    children[f"L{depth}"] = ["INTC", "DELL"]
    queries = {f"L{k}": f"SEQ(L{k} c, FCF f)" + WINDOW for k in range(1, depth + 1)}
    return queries, children


def mixed_workloads() -> dict:
    """W7 and W8 of [LIU] §4.6 (RCM, unplaced in Fig 4.10, read as ROM; q19, printed as q18, left out)."""
    w7 = {"q20": "SEQ(DELL a, QQQ b, ANAT c)", "q21": "SEQ(DELL a, QQQ b, ANAT c, ROM d)",
          "q23": "SEQ(DELL a, QQQ b, ANAT c, OREL d)", "q24": "SEQ(DELL a, QQQ b, ANAT c, INTC d)",
          "q22": "SEQ(FCF x, DELL a, QQQ b, ANAT c)", "q25": "SEQ(DELL a, QQQ b, ANAT c, INTC d, EFC e)",
          "q26": "SEQ(Computer a, Finance b, ANAT c)", "q27": "SEQ(DELL a, Finance b, ANAT c)",
          "q28": "SEQ(QQQ x, DELL a, Finance b, ANAT c)", "q16": "SEQ(Computer a, Finance b, Education c)"}
    w8 = {"q16": "SEQ(Computer a, Finance b, Education c)", "q29": "SEQ(Computer a, Finance b, OREL c)",
          "q30": "SEQ(INTC a, QQQ b, Education c)", "q31": "SEQ(INTC a, QQQ b, EFC c)",
          "q32": "SEQ(MSFT x, INTC a, QQQ b, EFC c)", "q33": "SEQ(INTC a, QQQ b, EFC c, DELL d)",
          "q34": "SEQ(Computer a, ROM b, Education c)", "q35": "SEQ(Computer a, ROM b, ANAT c)",
          "q36": "SEQ(INTC a, ROM b, ANAT c)"}
    return {name: {q: text + WINDOW for q, text in w.items()} for name, w in (("W7", w7), ("W8", w8))}


def chase_times(events, repeat: int) -> list:
    """(workload, queries, lattice edges, candidate edges, ms to plan, the plan's reuse) for W7 and W8."""
    hierarchy, stats = cepkit.Hierarchy(COMPANIES), None
    rows = []
    for name, queries in mixed_workloads().items():
        cube = cepkit.ECube(queries, hierarchy)
        stats = stats or cepkit.ecube.Statistics.measure(events)
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            plan = cube.plan(statistics=stats)
            best = min(best, time.perf_counter() - start)
        reuse = ", ".join(f"{s.query}<-{s.source} ({s.direction})" for s in plan.steps if s.source)
        rows.append((name, len(queries), cube.graph.number_of_edges(), plan.graph.number_of_edges(), best * 1000,
                     reuse))
    return rows


def measure(queries: dict, hierarchy, events, repeat: int) -> dict:
    """method -> (best seconds, matches, events the engine read, plan summary)."""
    out = {}
    for method, directions in METHODS.items():
        best = float("inf")
        for _ in range(repeat):
            cube = cepkit.ECube(queries, hierarchy)
            start = time.perf_counter()
            results = cube.run(events, directions=directions)
            best = min(best, time.perf_counter() - start)
        steps = ", ".join(f"{s.query}<-{s.source}" for s in cube.last_plan.steps if s.source)
        out[method] = (best, sum(len(m) for m in results.values()), cube.work["events_read"],
                       steps or "all from scratch")
    counts = {m: n for m, (_, n, _, _) in out.items()}
    assert len(set(counts.values())) == 1, f"methods disagree on the results: {counts}"
    return out


def report(title: str, rows: list) -> None:
    print(f"\n### {title}\n")
    print("| workload | queries | matches | alone | top-down | bottom-up | chase | chase's reuse |")
    print("|---|---|---|---|---|---|---|---|")
    for label, n, result in rows:
        alone, read = result["alone"][0], result["alone"][2]
        cells = [f"{result[m][0]:.3f} s ({alone / result[m][0]:.1f}x), {result[m][2] / read:.2f} read"
                 for m in ("top-down", "bottom-up", "chase")]
        print(f"| {label} | {n} | {result['alone'][1]} | {alone:.3f} s, {read} read | " + " | ".join(cells)
              + f" | {result['chase'][3]} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    events = cepkit.runtime.Stream.from_any(trades(args.events))
    hierarchy = cepkit.Hierarchy(COMPANIES)
    jobs = ([("pattern", f"W{length - 2} (shared length {length})", pattern_workload(length), hierarchy)
             for length in (3, 4, 5)]
            + [("concept", "W4/W5 (q16, q17, q18)", concept_workload(), hierarchy)]
            + [("queries", f"shared length 3, {k} extensions", pattern_workload(3, TICKERS[:k]), hierarchy)
               for k in (1, 2, 4, 8)])
    for depth in (2, 4, 6):
        queries, children = depth_workload(depth)
        jobs.append(("depth", f"hierarchy depth {depth}", queries, cepkit.Hierarchy(children)))
    sections: dict = {}
    for section, label, queries, h in tqdm(jobs, desc="workloads"):
        sections.setdefault(section, []).append((label, len(queries), measure(queries, h, events, args.repeat)))
    print(f"\n{args.events} trades, 2 ms apart, window 20 ms; best of {args.repeat}; speed-up over alone in "
          "parentheses; events read by the engine as a share of alone's")
    titles = {"pattern": "Pattern workloads (Fig 4.11(a) / 4.13(a) shape)", "concept": "Concept workload (Fig 4.12(a))",
              "queries": "More queries (pattern, shared length 3)",
              "depth": "Deeper hierarchies (one query per level, concept chain)"}
    for section, rows in sections.items():
        report(titles[section], rows)
    print("\n### Chase on the mixed workloads (the text: 16 ms)\n")
    print("| workload | queries | lattice edges | Chase's candidate edges | plan (ms) | reuse chosen |")
    print("|---|---|---|---|---|---|")
    for name, n, lattice_edges, candidates, ms, reuse in chase_times(events, args.repeat):
        print(f"| {name} | {n} | {lattice_edges} | {candidates} | {ms:.0f} | {reuse} |")


if __name__ == "__main__":
    main()
