"""The input side of the user's path (issue 11, "Stream as columns"): ``cepkit.match(q, DataFrame).positions()``.

Streams as in bench/automaton.py: types A-D uniform, one event per second (ts = position), ``v`` uniform in
0..99. Two workloads, on one core:

- **A;B;C W=10 s**, 200k events, unfiltered (about 0.7 matches per event);
- **filtered**: the same query with ``x.v < 10`` on every atom (10 % of the events relevant), 1M events.

For each engine it prints events/s of ``Stream.from_any(frame)`` alone and of the whole call, and the
ratio to a baseline measured in this run: ``numpy pass``, one vectorized comparison over the frame's
columns (what an irrelevant row should cost). ``--profile ENGINE`` prints a cProfile of the filtered call.

    python bench/stream_columns.py               # automaton, stack, rcep (rcep on 1/10 of the events)
    python bench/stream_columns.py --profile automaton
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

import numpy as np
import pandas as pd

import cepkit
from cepkit.runtime.stream import Stream
from streams import best_of

UNFILTERED = "A a ; B b ; C c WITHIN 10 s"
FILTERED = "(A a FILTER a.v < 10) ; (B b FILTER b.v < 10) ; (C c FILTER c.v < 10) WITHIN 10 s"


def make_frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "type": rng.choice(np.array(list("ABCD"), dtype=object), n),
            "ts": np.arange(n, dtype=np.int64),
            "v": rng.integers(0, 100, n),
        }
    )


def numpy_pass(frame: pd.DataFrame) -> int:
    """The baseline: one vectorized comparison per column, as a filter over irrelevant rows should cost."""
    return int(np.count_nonzero((frame["type"].to_numpy() == "A") & (frame["v"].to_numpy() < 10)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", metavar="ENGINE", help="cProfile the filtered call on this engine")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the stream sizes")
    args = parser.parse_args()
    workloads = [
        ("A;B;C W=10 s", UNFILTERED, int(200_000 * args.scale)),
        ("10 % filter", FILTERED, int(1_000_000 * args.scale)),
    ]
    if args.profile:
        frame = make_frame(workloads[1][2])
        cepkit.match(FILTERED, frame.iloc[:1000], engine=args.profile).positions()
        profile = cProfile.Profile()
        profile.runcall(lambda: cepkit.match(FILTERED, frame, engine=args.profile).positions())
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
        return
    rows = []
    for label, query, n in workloads:
        frame = make_frame(n)
        base_s, _ = best_of(3, lambda: numpy_pass(frame))
        stream_s, _ = best_of(3, lambda: Stream.from_any(frame))
        for engine in ("automaton", "stack", "rcep"):
            part = frame if engine != "rcep" else frame.iloc[: n // 10]
            cepkit.match(query, part.iloc[:1000], engine=engine).positions()  # compile kernels first
            seconds, found = best_of(
                1 if engine == "rcep" else 2, lambda: cepkit.match(query, part, engine=engine).positions()
            )
            rows.append(
                {
                    "workload": label,
                    "engine": engine,
                    "events": len(part),
                    "matches": len(found),
                    "from_any ev/s": n / stream_s,
                    "match ev/s": len(part) / seconds,
                    "x numpy pass": (len(part) / seconds) / (n / base_s),
                }
            )
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:,.3f}" if v < 10 else f"{v:,.0f}"))


if __name__ == "__main__":
    main()
