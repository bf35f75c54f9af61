"""The ``nested`` engine on the experiment shapes of [LIU] §5.5, at a small scale.

A synthetic ticker stream (the inetats traces of [LIU] §5.5 are not available): one trade per
second, tickers drawn uniformly from ten symbols. Every row is one query on one stream, timed best of
``--repeat`` runs; ratios are against a baseline measured in the same run:

- [LIU] §5.5 (Figs 5.9-5.11): the number of negated children (1-3), the length of a child (2-4) and the nesting
  depth (1-3) grow. ``ref/nested`` = reference time / nested time (on a shorter prefix: the reference is brute
  force), ``none/b`` = no caching / B-CSV, ``nested/nf`` = nested plan / normal form (``rewrite=True``, where
  the query has one).
- [CSV] §4.6 and §8 (Figs R10, R18-R21): the window grows (20, 40, 60 s) and the negated sub-query is an AND;
  each caching mode against no caching (``x none``), with the view's counters.

Run from the repository: ``python bench/nested.py`` (``--quick`` for a smoke run).
"""
from __future__ import annotations

import argparse
import random
import time

from tqdm import tqdm

import cepkit
from cepkit.runtime import Stream

TICKERS = ("MSFT", "ORCL", "IPIX", "INTC", "RIMM", "AMAT", "YHOO", "DELL", "CSCO", "QQQ")
CHILDREN = ["!SEQ(RIMM r1, AMAT a1)", "!SEQ(YHOO y2, DELL d2)", "!SEQ(CSCO c3, QQQ q3)"]


def ticker_stream(n: int, seed: int = 0) -> Stream:
    rng = random.Random(seed)
    return Stream.from_any([{"type": rng.choice(TICKERS), "ts": i, "price": rng.randrange(100)} for i in range(n)])


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
    for outer in [("RIMM r", "AMAT a"), ("IPIX p", "QQQ q")][:depth - 1]:
        inner = f"!SEQ({outer[0]}, {inner}, {outer[1]})"
    if depth == 1:
        inner = "!SEQ(IPIX p, QQQ q)"
    return f"SEQ(MSFT m, {inner}, ORCL o, INTC i) WITHIN {window} s"


def and_query(window: int) -> str:
    """[CSV]'s Q1 shape: a negated AND between two positive neighbours."""
    return f"SEQ(MSFT m, ORCL o, !AND(RIMM r, AMAT a, YHOO y), INTC i, QQQ q) WITHIN {window} s"


def timed(query, stream, repeat: int, **options):
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        found = cepkit.match(query, stream, **options)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, found


def neel_rows(stream, prefix, window, repeat, progress):
    rows = []
    shapes = [("children", k, children_query(k, window)) for k in (1, 2, 3)]
    shapes += [("child length", n, length_query(n, window)) for n in (2, 3, 4)]
    shapes += [("depth", d, depth_query(d, window)) for d in (1, 2, 3)]
    for shape, size, query in shapes:
        t_ref, ref = timed(query, prefix, 1, engine="reference")
        t_prefix, on_prefix = timed(query, prefix, repeat, engine="nested")
        assert on_prefix == ref, query
        t_b, b = timed(query, stream, repeat, engine="nested", caching="b")
        t_none, none = timed(query, stream, repeat, engine="nested", caching=None)
        t_nf, nf = timed(query, stream, repeat, engine="nested", rewrite=True)
        assert none == b == nf, query
        normal = nf.info["execution"] == "normal form"
        rows.append((shape, size, len(b), t_ref / t_prefix, t_b, t_none / t_b, (t_b / t_nf) if normal else None))
        progress.update()
    return rows


def csv_rows(stream, windows, repeat, progress):
    rows = []
    for window in windows:
        query = and_query(window)
        times, found = {}, {}
        for mode in (None, "a", "p", "b"):
            times[mode], found[mode] = timed(query, stream, repeat, engine="nested", caching=mode)
            progress.update()
        assert all(found[m] == found[None] for m in found), query
        for mode in (None, "a", "p", "b"):
            cache = found[mode].info["cache"]
            rows.append((window, str(mode), len(found[mode]), times[mode], times[None] / times[mode],
                         cache["computed"], cache["hits"], cache["view_size"]))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, n_csv, n_ref, windows = (600, 400, 150, (20, 40)) if args.quick else (4000, 1500, 400, (20, 40, 60))
    stream, prefix = ticker_stream(n), ticker_stream(n_ref)
    with tqdm(total=9 + 4 * len(windows), desc="runs") as progress:
        neel = neel_rows(stream, prefix, 40, args.repeat, progress)
        csv = csv_rows(ticker_stream(n_csv), windows, args.repeat, progress)
    print(f"\n[LIU] §5.5 shapes, window 40 s, {n} events (reference on the first {n_ref})")
    print(f"{'shape':<13} {'size':>4} {'matches':>7} {'ref/nested':>10} {'nested s':>9} {'none/b':>7} {'nested/nf':>9}")
    for shape, size, matches, ref_ratio, t_b, none_ratio, nf_ratio in neel:
        nf = f"{nf_ratio:8.1f}x" if nf_ratio is not None else "        –"
        print(f"{shape:<13} {size:>4} {matches:>7} {ref_ratio:>9.1f}x {t_b:>9.3f} {none_ratio:>6.1f}x {nf}")
    print(f"\n[CSV] §8 shape: {and_query('w')}, {n_csv} events")
    print(f"{'window':>6} {'caching':>7} {'matches':>7} {'seconds':>8} {'x none':>7} {'computed':>8} {'hits':>6} "
          f"{'view':>6}")
    for window, mode, matches, seconds, ratio, computed, hits, view in csv:
        print(f"{window:>6} {mode:>7} {matches:>7} {seconds:>8.3f} {ratio:>6.1f}x {computed:>8} {hits:>6} {view:>6}")


if __name__ == "__main__":
    main()
