"""The ``nested`` engine on the experiment shapes of [LIU] §5.5 and [CSV] §8: its plans against NEEL's
iterative nested execution.

A synthetic ticker stream (the inetats traces of [LIU] §5.5 are not available): one trade per second,
tickers drawn uniformly from ten symbols, so a 40 s window holds 40 trades as [LIU]'s 10 ms at 4,000 trades
per second does. Every row is one query on one stream, timed best of ``--repeat`` runs through
``cepkit.match`` in CPU seconds of the process (``time.process_time``: the machine is shared, the load
average is printed); ratios are against a baseline measured in the same run:

- [LIU] §5.5 (Figs 5.9-5.11): the number of negated children (1-3), the length of a child (2-4), the nesting
  depth (1-3). ``iter s`` = iterative nested execution (``caching=None``: every sub-query recomputed per
  candidate, the thesis's baseline); ``plan s`` = what the Plan-Finder chose (``plan``); ``nested s`` = the
  nested plan with summaries and B-CSV views; ``nf s`` = the normal form. Every plan's matches equal the
  reference's on the first ``n_ref`` events and each other's on the whole stream.
- [CSV] §8 (Figs R10a-c): a negated AND between positive neighbours, windows 100 / 500 / 1000 s; each
  caching mode against none, nested (views and summaries) and as the Plan-Finder runs it. Two shapes (the
  thesis does not give its query): [CSV]'s Q1 shape on 2,000 trades every 5 s among 30 symbols (sparse: 2
  candidates at 100 s, no overlap, nothing to cache), and the AND between MSFT and INTC alone on 10,000
  trades (the thesis's count) every 1.5 s among 30 symbols, whose candidates' windows overlap at 100 s,
  at 100 / 500 s only: its baseline grows faster than the window squared (candidates x scope x the AND's
  results), 22 CPU s at 500 s, past 4 CPU minutes at 1000 s. A run over 2 s is timed once.
  ``--csv`` runs only these rows.
- ``!``/``EXISTS`` items over an AND's scope (the candidate's own events inside it): the Plan-Finder's
  plan against the iterative baseline.
- Flat queries on ``nested`` against the ``stack`` engine; [LIU] §5.5's complex workload E1-E7
  (``match_workload``) against its queries run one by one.
- ``Matcher.extend`` of DataFrame micro-batches through the shared plan against pushing their events.
- ``--full``: 1,000,000 trades from a DataFrame, the Plan-Finder's plan, events per second end to end.

Run from the repository: ``python bench/nested.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import os
import random
import time

import numpy as np
import pandas as pd
from tqdm import tqdm

import cepkit
from cepkit.engines.nested.workload import match_workload
from cepkit.runtime import Stream

TICKERS = ("MSFT", "ORCL", "IPIX", "INTC", "RIMM", "AMAT", "YHOO", "DELL", "CSCO", "QQQ")
CHILDREN = ["!SEQ(RIMM r1, AMAT a1)", "!SEQ(YHOO y2, DELL d2)", "!SEQ(CSCO c3, QQQ q3)"]
WORKLOAD = [
    "SEQ(MSFT m, !IPIX x, ORCL o, INTC i)",
    "SEQ(MSFT m, !QQQ x, ORCL o, INTC i)",
    "SEQ(MSFT m, !RIMM x, ORCL o, INTC i)",
    "SEQ(RIMM r, DELL d, AMAT a, MSFT m, ORCL o)",
    "SEQ(IPIX p, DELL d, AMAT a, MSFT m, ORCL o)",
    "SEQ(CSCO c, !RIMM x, YHOO y, QQQ q)",
    "SEQ(CSCO c, !IPIX x, RIMM r, YHOO y, QQQ q)",
]


def ticker_stream(n: int, seed: int = 0, every: float = 1.0, others: int = 0) -> Stream:
    rng = random.Random(seed)
    symbols = TICKERS + tuple(f"X{k}" for k in range(others))
    return Stream.from_any(
        [{"type": rng.choice(symbols), "ts": i * every, "price": rng.randrange(100)} for i in range(n)]
    )


def children_query(k: int, window: int) -> str:
    """SEQ(MSFT, ORCL, IPIX, INTC) with k negated children in its gaps (Fig 5.9)."""
    outer = ["MSFT m", "ORCL o", "IPIX p", "INTC i"]
    items = [outer[0]]
    for gap in range(3):
        if gap < k:
            items.append(CHILDREN[gap])
        items.append(outer[gap + 1])
    return f"SEQ({', '.join(items)}) WITHIN {window} s"


def length_query(length: int, window: int) -> str:
    """SEQ(MSFT, !SEQ(RIMM, AMAT[, YHOO[, DELL]]), ORCL, INTC) (Fig 5.10)."""
    child = ", ".join(["RIMM r", "AMAT a", "YHOO y", "DELL d"][:length])
    return f"SEQ(MSFT m, !SEQ({child}), ORCL o, INTC i) WITHIN {window} s"


def depth_query(depth: int, window: int) -> str:
    """Negations nested ``depth`` deep inside SEQ(MSFT, …, ORCL, INTC) (Fig 5.11)."""
    inner = "!SEQ(YHOO y, DELL d)"
    for outer in [("RIMM r", "AMAT a"), ("IPIX p", "QQQ q")][: depth - 1]:
        inner = f"!SEQ({outer[0]}, {inner}, {outer[1]})"
    if depth == 1:
        inner = "!SEQ(IPIX p, QQQ q)"
    return f"SEQ(MSFT m, {inner}, ORCL o, INTC i) WITHIN {window} s"


def and_query(window) -> str:
    """[CSV]'s Q1 shape: a negated AND between two positive neighbours."""
    return f"SEQ(MSFT m, ORCL o, !AND(RIMM r, AMAT a, YHOO y), INTC i, QQQ q) WITHIN {window} s"


def overlap_query(window) -> str:
    """The same negated AND under a less selective outer query (two positive items): on a trade every 1.5 s
    its candidates' windows overlap already at 100 s, where the Q1 shape on the sparse stream has 2."""
    return f"SEQ(MSFT m, !AND(RIMM r, AMAT a, YHOO y), INTC i) WITHIN {window} s"


def timed(query, stream, repeat: int, engine="nested", **options):
    best = None
    for _ in range(repeat):
        start = time.process_time()
        found = cepkit.match(query, stream, engine=engine, **options)
        elapsed = time.process_time() - start
        best = elapsed if best is None else min(best, elapsed)
        if elapsed > 2.0:  # one run: the noise is small against it (the dense [CSV] baselines, 15-70 s)
            break
    return best, found


def neel_rows(stream, prefix, window, repeat, progress):
    rows = []
    shapes = [("children", k, children_query(k, window)) for k in (1, 2, 3)]
    shapes += [("child length", n, length_query(n, window)) for n in (2, 3, 4)]
    shapes += [("depth", d, depth_query(d, window)) for d in (1, 2, 3)]
    for shape, size, query in shapes:
        ref = cepkit.match(query, prefix, engine="reference")
        for options in ({"caching": None}, {}, {"plan": "nested"}, {"plan": "normal form"}):
            assert cepkit.match(query, prefix, engine="nested", **options) == ref, (query, options)
        t_iter, it = timed(query, stream, repeat, caching=None)
        t_plan, auto = timed(query, stream, repeat)
        t_nested, nested = timed(query, stream, repeat, plan="nested")
        t_nf, nf = timed(query, stream, repeat, plan="normal form")
        assert it == auto == nested == nf, query
        normal = nf.info["execution"] == "normal form"
        rows.append(
            (shape, size, len(auto), t_iter, auto.info["plan"]["chosen"], t_plan, t_nested, t_nf if normal else None)
        )
        progress.update()
    return rows


def csv_rows(stream, prefix, shape, windows, repeat, progress):
    rows = []
    for window in windows:
        query = shape(window)
        ref = cepkit.match(query, prefix, engine="reference")
        assert all(cepkit.match(query, prefix, engine="nested", caching=m) == ref for m in (None, "b")), query
        times, found = {}, {}
        for mode in (None, "a", "p", "b"):
            times[mode, "nested"], found[mode] = timed(query, stream, repeat, caching=mode, plan="nested")
            if mode is None:  # the baseline, timed once per window (as the nested plan): dense, 20 s at 500 s
                times[mode, "plan"], auto = None, found[mode]
            else:
                times[mode, "plan"], auto = timed(query, stream, repeat, caching=mode)
            assert found[mode] == found[None] == auto, query
            progress.update()
        base = times[None, "nested"]
        for mode in (None, "a", "p", "b"):
            cache = found[mode].info["cache"]
            rows.append(
                (
                    window,
                    str(mode),
                    len(found[mode]),
                    times[mode, "nested"],
                    base / times[mode, "nested"],
                    times[mode, "plan"],
                    None if mode is None else base / times[mode, "plan"],
                    cache["computed"],
                    cache["summary_lookups"],
                )
            )
    return rows


AND_SCOPES = [
    "AND(MSFT m, ORCL o, !IPIX x) WITHIN 40 s",
    "AND(MSFT m, INTC i, !SEQ(ORCL x, RIMM r)) WITHIN 40 s",
    "AND(MSFT m, ORCL o, !ORCL x) WITHIN 20 s",
    "SEQ(MSFT m, AND(ORCL o, !SEQ(RIMM r, AMAT a), INTC i), QQQ q) WITHIN 40 s",
]


def and_rows(stream, prefix, repeat):
    """``!``/``EXISTS`` items whose scope holds the candidate's own events (an AND's): the Plan-Finder's
    plan (nested, lookups from summaries or the sub-query's columns) against the iterative baseline."""
    rows = []
    for query in AND_SCOPES:
        assert cepkit.match(query, prefix, engine="nested") == cepkit.match(query, prefix, engine="reference")
        t_iter, it = timed(query, stream, repeat, caching=None)
        t_plan, auto = timed(query, stream, repeat)
        assert it == auto, query
        cache = auto.info["cache"]
        rows.append(
            (query, len(auto), t_iter, t_plan, auto.info["caching"], cache["lookups"], cache["summary_lookups"])
        )
    return rows


def flat_rows(stream, repeat):
    rows = []
    for query in (
        "SEQ(MSFT m, ORCL o, IPIX p, INTC i) WITHIN 40 s",
        "SEQ(MSFT m, !IPIX x, ORCL o, INTC i) WITHIN 40 s",
        "SEQ(MSFT m, ORCL o, INTC i, m.price < o.price) WITHIN 40 s",
    ):
        t_stack, stack = timed(query, stream, repeat, engine="stack")
        t_nested, nested = timed(query, stream, repeat)
        assert stack == nested, query
        rows.append((query, len(nested), t_stack, t_nested, t_nested / t_stack, nested.info["plan"]["chosen"]))
    return rows


def workload_row(stream, big, window, repeat):
    """E1-E7: as a workload, one by one through the Plan-Finder, one by one iteratively (on ``stream``); the
    first two again on ``big``, where sharing outweighs the per-query overhead."""
    queries = [f"{q} WITHIN {window} s" for q in WORKLOAD]
    runs = {
        "workload": lambda s: match_workload(queries, s),
        "alone": lambda s: [cepkit.match(q, s, engine="nested") for q in queries],
        "iterative": lambda s: [cepkit.match(q, s, engine="nested", caching=None) for q in queries],
    }
    best, found = {}, {}
    for events, names in ((stream, runs), (big, ("workload", "alone"))):
        for name in names:
            for _ in range(repeat):
                start = time.process_time()
                found[name, len(events)] = runs[name](events)
                elapsed = time.process_time() - start
                best[name, len(events)] = min(best.get((name, len(events)), elapsed), elapsed)
    n, m = len(stream), len(big)
    assert found["workload", n] == found["alone", n] == found["iterative", n]
    assert found["workload", m] == found["alone", m]
    first = found["workload", n][0]
    return (
        sum(map(len, found["workload", n])),
        best["iterative", n],
        best["alone", n],
        best["workload", n],
        best["alone", m],
        best["workload", m],
        first.info["plan"]["groups"],
        first.info["cache"]["shared_hits"],
    )


def extend_rows(n: int, batches=(100, 1000, 10000)):
    """``Matcher.extend`` of DataFrame micro-batches: the shared plan over the kept window and each batch,
    against the same batches pushed event by event (``plan="nested"``, what every batch did before), events
    per CPU second; both emit the same matches as ``cepkit.match``."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {"type": rng.choice(TICKERS, n), "ts": np.arange(n, dtype=np.int64), "price": rng.integers(0, 100, n)}
    )
    rows = []
    for query in (children_query(2, 40), length_query(4, 40)):
        expected = sorted(m.key for m in cepkit.match(query, frame, engine="nested"))
        rates = {}
        for options, sizes in (({"plan": "nested"}, batches[1:2]), ({}, batches)):
            for size in sizes:
                matcher = cepkit.Matcher(query, engine="nested", keep=False, **options)
                start = time.process_time()
                found = [m.key for k in range(0, n, size) for m in matcher.extend(frame.iloc[k : k + size])]
                found += [m.key for m in matcher.close()]
                rates[options.get("plan", "shared"), size] = n / (time.process_time() - start)
                assert sorted(found) == expected, (query, options, size)
        pushed = rates["nested", batches[1]]
        rows.append((query, len(expected), pushed, [(size, rates["shared", size]) for size in batches]))
    return rows


def full_rows(n: int):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"type": rng.choice(TICKERS, n), "ts": np.arange(n, dtype=np.int64), "price": rng.integers(0, 100, n)}
    )
    rows = []
    for query in (children_query(3, 40), length_query(4, 40), depth_query(3, 40)):
        start = time.process_time()
        found = cepkit.match(query, frame, engine="nested")
        positions = found.positions()
        elapsed = time.process_time() - start
        rows.append((query, len(positions), elapsed, n / elapsed, found.info["plan"]["chosen"]))
    return rows


def print_csv(title, rows):
    print(f"\n[CSV] §8 shape: {title}")
    print(
        f"{'window':>6} {'caching':>7} {'matches':>7} {'nested s':>8} {'x none':>7} {'plan s':>7} {'x none':>7} "
        f"{'computed':>8} {'summary':>7}"
    )
    for window, mode, matches, t_nested, ratio, t_plan, ratio_plan, computed, summary in rows:
        plan = f"{'–':>7} {'–':>7}" if t_plan is None else f"{t_plan:>7.3f} {ratio_plan:>6.1f}x"
        print(f"{window:>6} {mode:>7} {matches:>7} {t_nested:>8.3f} {ratio:>6.1f}x {plan} {computed:>8} {summary:>7}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--full", action="store_true", help="also 1,000,000 trades end to end")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--csv", action="store_true", help="only the [CSV] §8 rows")
    args = parser.parse_args()
    n, n_csv, n_dense, n_ref, n_flat, windows = (
        (600, 400, 1000, 150, 2000, (100, 200)) if args.quick else (4000, 2000, 10000, 400, 20000, (100, 500, 1000))
    )
    stream, prefix = ticker_stream(n), ticker_stream(n_ref)
    print("load average at the start: " + " / ".join(f"{x:.1f}" for x in os.getloadavg()))
    with tqdm(total=(0 if args.csv else 9) + 4 * len(windows) + 8, desc="runs") as progress:
        neel = [] if args.csv else neel_rows(stream, prefix, 40, args.repeat, progress)
        sparse_stream, dense_stream = (ticker_stream(k, every=e, others=20) for k, e in ((n_csv, 5.0), (n_dense, 1.5)))
        csv = csv_rows(sparse_stream, sparse_stream[:n_ref], and_query, windows, args.repeat, progress)
        # not 1000 s: the baseline ran past 4 CPU minutes there (AND results per scope grow with its cube)
        dense = csv_rows(dense_stream, dense_stream[:n_ref], overlap_query, windows[:2], args.repeat, progress)
    print_csv(f"{and_query('w')}, {n_csv} trades every 5 s among 30 symbols (sparse: no overlap at 100 s)", csv)
    print_csv(f"{overlap_query('w')}, {n_dense} trades every 1.5 s among 30 symbols (overlap at 100 s)", dense)
    print("load average at the end: " + " / ".join(f"{x:.1f}" for x in os.getloadavg()))
    if args.csv:
        return
    ands = and_rows(stream, prefix, args.repeat)
    flat = flat_rows(ticker_stream(n_flat), args.repeat)
    workload = workload_row(stream, ticker_stream(10 * n_flat // 2, seed=1), 40, args.repeat)

    print(f"\n[LIU] §5.5 shapes, window 40 s, {n} events (every plan equals the reference on the first {n_ref})")
    print(
        f"{'shape':<13} {'size':>4} {'matches':>7} {'iter s':>7} {'plan':>21} {'plan s':>7} {'iter/plan':>9} "
        f"{'nested s':>8} {'iter/nested':>11} {'nf s':>7} {'iter/nf':>7}"
    )
    for shape, size, matches, t_iter, plan, t_plan, t_nested, t_nf in neel:
        nf = f"{t_nf:>7.3f} {t_iter / t_nf:>6.1f}x" if t_nf is not None else f"{'–':>7} {'–':>7}"
        print(
            f"{shape:<13} {size:>4} {matches:>7} {t_iter:>7.3f} {plan:>21} {t_plan:>7.3f} {t_iter / t_plan:>8.1f}x "
            f"{t_nested:>8.3f} {t_iter / t_nested:>10.1f}x {nf}"
        )
    children = [r[3] / r[5] for r in neel if r[0] == "children"]
    print(f"children: iter/plan {sum(children) / len(children):.1f}x on average")
    pairs = [(r[5], r[6]) for r in neel] + [(r[5], r[3]) for r in csv + dense if r[1] != "None"]  # None: no choice
    slower = sum(plan > nested for plan, nested in pairs)
    print(
        f"the Plan-Finder's plan against nested execution without sharing (plan='nested'), row by row: slower on "
        f"{slower} of {len(pairs)} rows, nested/plan {min(n / p for p, n in pairs):.1f}x at the least"
    )

    print(f"\n!/EXISTS over an AND's scope (the candidate's own events inside), {n} events")
    print(f"{'query':<75} {'matches':>7} {'iter s':>7} {'plan s':>7} {'iter/plan':>9} caching views summaries")
    for query, matches, t_iter, t_plan, caching, lookups, summary in ands:
        print(
            f"{query:<75} {matches:>7} {t_iter:>7.3f} {t_plan:>7.3f} {t_iter / t_plan:>8.1f}x {caching!s:>7} "
            f"{lookups:>5} {summary:>9}"
        )

    print(f"\nFlat queries, {n_flat} events: nested (its plan) against the stack engine")
    print(f"{'query':<62} {'matches':>7} {'stack s':>7} {'nested s':>8} {'nested/stack':>12} plan")
    for query, matches, t_stack, t_nested, ratio, plan in flat:
        print(f"{query:<62} {matches:>7} {t_stack:>7.3f} {t_nested:>8.3f} {ratio:>11.1f}x {plan}")

    matches, t_iter, t_alone, t_work, t_alone_big, t_work_big, groups, hits = workload
    print(f"\n[LIU] §5.5 complex workload E1-E7, window 40 s, {n} events: {matches} matches")
    print(
        f"iterative one by one {t_iter:.3f} s, Plan-Finder one by one {t_alone:.3f} s, workload {t_work:.3f} s: "
        f"{t_iter / t_work:.1f}x / {t_alone / t_work:.1f}x; groups {groups}, {hits} shared columns reused"
    )
    print(
        f"on {10 * n_flat // 2} events: one by one {t_alone_big:.3f} s, workload {t_work_big:.3f} s: "
        f"{t_alone_big / t_work_big:.1f}x"
    )

    print(f"\nMatcher.extend of DataFrame micro-batches, {n_flat} events: events per CPU second")
    for query, matches, pushed, shared in extend_rows(n_flat):
        cells = ", ".join(f"batches of {size}: {rate:,.0f} ({rate / pushed:.1f}x)" for size, rate in shared)
        print(f"{query}  {matches} matches\n  pushed event by event {pushed:,.0f}; shared {cells}")

    if args.full:
        print("\n1,000,000 trades from a DataFrame, cepkit.match(...).positions(), the Plan-Finder's plan")
        for query, matches, elapsed, rate, plan in full_rows(1_000_000):
            print(f"{query:<80} {matches:>8} {elapsed:>7.2f} s {rate:>10,.0f} ev/s {plan}")


if __name__ == "__main__":
    main()
