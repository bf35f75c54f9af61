"""How MatchTimeline scales: build time and the payload sent to the browser, aggregated vs drawing every event.

The baseline, measured in the same run, is the same timeline with aggregation off (``max_events`` = the
stream's length): every event its own marker. The ratios say what aggregation buys at each size.

    python bench/widgets_timeline.py [--sizes 1000 10000 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

import cepkit
from cepkit.widgets import MatchTimeline

TYPES = ("FAIR", "RAIN", "STORM", "DELAYED_DEPARTURE", "ON_TIME_DEPARTURE")
MATCHES = 300  # as many as the timeline draws by default


def stream(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "type": rng.choice(TYPES, n),
            "ts": np.cumsum(rng.integers(1, 60, n)),
            "origin": rng.choice(["EWR", "JFK", "LGA"], n),
            "dep_delay": rng.integers(-10, 200, n),
        }
    )


def matches(n: int) -> list:
    starts = np.linspace(0, n - 3, MATCHES).astype(int)
    return [cepkit.Match.of({"w": int(s), "d": int(s) + 2}) for s in starts]


def measure(events, found, max_events: int, repeat: int) -> tuple:
    """(best build seconds, figure JSON bytes)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        timeline = MatchTimeline(events, found, max_events=max_events)
        best = min(best, time.perf_counter() - started)
    return best, len(timeline.figure.to_json())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for n in tqdm(args.sizes, desc="stream sizes"):
        events, found = stream(n), matches(n)
        every_s, every_bytes = measure(events, found, n, args.repeat)
        binned_s, binned_bytes = measure(events, found, 2000, args.repeat)
        rows.append(
            {
                "events": n,
                "every event: s": round(every_s, 3),
                "every event: KB": every_bytes // 1024,
                "aggregated: s": round(binned_s, 3),
                "aggregated: KB": binned_bytes // 1024,
                "time ratio": round(every_s / binned_s, 2),
                "payload ratio": round(every_bytes / binned_bytes, 2),
            }
        )
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
