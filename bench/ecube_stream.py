"""The streaming cube (``ECube.stream(keep=False)``) over a long stream of trades: memory flat, throughput
against the batch cube in the same run.

W1 of [LIU] §4.6 (``SEQ(INTC i, !MSFT m, FCF f)`` and four extensions, plan chosen by Chase and adapted per
batch) at the small-scale density of bench/ecube.py (trades 2 ms apart, a 20 ms window), the stream made
batch by batch (numpy, seeded) so that nothing but the cube holds it; ``--thesis``: at the thesis's density
(trades 0.5 ms apart, a 1 s window: about 730 matches per trade). Every ``--every`` batches a line:
events so far, the process's resident memory (RSS), the events the cube keeps, the matches reported so far,
events per CPU second over the stream (``time.process_time``: the machine is shared). The baseline: the batch ``ECube.run`` over the first ``--baseline`` events, in the
same run (events/s); the ratio is the stream's events/s over it. ``--check`` compares, on the first batches,
the streaming matches with the batch cube's.

    python bench/ecube_stream.py --events 10000000 --batch 50000
    python bench/ecube_stream.py --events 10000000 --batch 50000 --thesis --baseline 100000
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

import cepkit
from cepkit.ecube.workloads import COMPANIES, TICKERS, WINDOW, pattern_workload


def trades_batch(k: int, size: int, gap: int) -> pd.DataFrame:
    """The ``k``-th batch of ``size`` trades (seeded by ``k``), ``gap`` ms apart, after the batches before."""
    rng = np.random.default_rng(k)
    return pd.DataFrame(
        {
            "type": pd.Categorical.from_codes(rng.integers(0, len(TICKERS), size), TICKERS),
            "ts": (np.arange(size, dtype=np.int64) + k * size) * gap,
            "price": rng.integers(10, 100, size),
        }
    )


def rows_of(matches) -> np.ndarray:
    """A flat SEQ's matches as an (n, k) array of positions (no Python object per match)."""
    arrays = matches.arrays
    return arrays.positions[arrays.offsets[0] : arrays.offsets[-1]].reshape(len(matches), -1)


def in_order(rows: np.ndarray) -> np.ndarray:
    return rows[np.lexsort(rows.T[::-1])]


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--every", type=int, default=20, help="print a line every this many batches")
    parser.add_argument("--baseline", type=int, default=500_000)
    parser.add_argument("--check", type=int, default=3, help="batches checked against the batch cube")
    parser.add_argument(
        "--thesis", action="store_true", help="the thesis's density: trades 0.5 ms apart, a 1 s window (2,000 ticks)"
    )
    args = parser.parse_args()
    hierarchy = cepkit.Hierarchy(COMPANIES)
    queries = pattern_workload(1, window=" WITHIN 2000" if args.thesis else WINDOW)
    gap = 1 if args.thesis else 2

    def batch_of(k: int, size: int):
        return trades_batch(k, size, gap)

    print(f"load average at the start: {os.getloadavg()[0]:.1f} (2 cores)")

    whole = pd.concat([batch_of(k, args.batch) for k in range(max(1, args.baseline // args.batch))], ignore_index=True)
    start = time.process_time()
    found = cepkit.ECube(queries, hierarchy).run(whole)
    batch_rate = len(whole) / (time.process_time() - start)
    print(
        f"baseline: batch ECube.run over {len(whole):,} events: {batch_rate:,.0f} events/s, "
        f"{sum(len(m) for m in found.values()):,} matches"
    )

    checked = pd.concat([batch_of(k, args.batch) for k in range(args.check)], ignore_index=True)
    expected = cepkit.ECube(queries, hierarchy).run(checked)
    del whole, found

    live = cepkit.ECube(queries, hierarchy).stream(keep=False)
    batches = args.events // args.batch
    reported = 0
    got: dict = {name: [] for name in queries}
    print("| events | RSS MB | kept events | matches so far | events/s | x batch cube |")
    print("|---|---|---|---|---|---|")
    start = time.process_time()
    for k in range(batches):
        new = live.extend(batch_of(k, args.batch))
        reported += sum(len(m) for m in new.values())
        if k < args.check:
            for name, m in new.items():
                got[name].append(rows_of(m))
            if k == args.check - 1:
                # the batch cube's matches whose last event is in the checked batches and final then
                # (W1's queries end with a positive item: final at their last event)
                for name in queries:
                    assert np.array_equal(in_order(np.concatenate(got[name])), in_order(rows_of(expected[name]))), name
                del got, expected
        if (k + 1) % args.every == 0 or k == batches - 1:
            rate = (k + 1) * args.batch / (time.process_time() - start)
            print(
                f"| {(k + 1) * args.batch:,} | {rss_mb():.0f} | {len(live.kept.stream):,} | {reported:,} | "
                f"{rate:,.0f} | {rate / batch_rate:.2f} |",
                flush=True,
            )
    reported += sum(len(m) for m in live.close().values())
    print(f"matches: {reported:,}; plan changes after the first: {live.replans}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
