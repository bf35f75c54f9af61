"""Soak: ``cepkit.Matcher(..., keep=False)`` over an endless stream, for every engine with an incremental
mode, with one PARTITION BY key and with 100,000 keys (issue 15: memory flat after warm-up, rate flat).

Query ``A a ; B b ; C c WITHIN 10 s PARTITION BY id``; events built on the fly and never kept: types A-D
uniformly at random, one per second (ts = position), ``id`` constant (one key) or changing every 10 events
through 100,000 keys (each comes back after 1M events, long after its window: a sensor or user id stream).
Each (engine, keys) runs in its own process, so each RSS is its own. Reported:

- **ev/s** over the events after warm-up (the first 10 %), and **first/last** the rates of the first and
  last fifths after warm-up (flat: close to 1);
- **x feed**: ev/s over the same-run *feed* baseline, a loop that builds each event and passes it through
  ``cepkit.runtime.event_record.make_event``, what any push costs before an engine sees it;
- **RSS MB** after warm-up and at the end, and the largest growth between them (psutil); then RSS at every
  tenth of the run after warm-up (memory over events, per engine).

    python bench/soak.py --quick                 # 200k events per run (a few minutes)
    python bench/soak.py --events 10000000       # the issue's 10M (hours for the slower engines)
    python bench/soak.py --engines automaton stack --keys 100000
    python bench/soak.py --disorder conservative  # the stack's own mode, the other engines' layer
    python bench/soak.py --one stack --events 10000000 --keys 1 --progress   # one run, samples as it goes
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np
import psutil

import cepkit
from cepkit.runtime.event_record import make_event

QUERY = "A a ; B b ; C c WITHIN 10 s PARTITION BY id"
ENGINES = ("automaton", "stack", "ses", "rcep", "nested")
CHUNK = 10_000
BURST = 10  # events in a row with the same key
SAMPLES = 20  # RSS samples after warm-up


def events(n: int, keys: int, seed: int = 0):
    """The stream, chunk by chunk: nothing of it outlives its chunk."""
    rng = np.random.default_rng(seed)
    types = np.array(list("ABCD"))
    for start in range(0, n, CHUNK):
        size = min(CHUNK, n - start)
        kinds = types[rng.integers(0, 4, size)].tolist()
        ids = ((np.arange(start, start + size) // BURST) % keys).tolist()
        for i, (t, k) in enumerate(zip(kinds, ids)):
            yield {"type": t, "ts": float(start + i), "id": k}


DELAY_OPTIONS = {"reject": {}, "kslack": {"k": 3}, "conservative": {"max_delay": 3}, "aggressive": {"max_delay": 3}}


def soak(engine: str, n: int, keys: int, disorder: str = "reject", progress: bool = False) -> dict:
    """Push the stream through one Matcher (engine "feed": make_event only); rates and RSS along the way
    (``progress``: each sample also as a JSON line on stderr, so a run cut short still tells its story)."""
    process = psutil.Process()
    push = (lambda e, i: make_event(e, i)) if engine == "feed" else None
    if push is None:
        options = {"disorder": disorder, **DELAY_OPTIONS[disorder]} if disorder != "reject" else {}
        matcher = cepkit.Matcher(QUERY, engine=engine, keep=False, **options)
        push = lambda e, i: matcher.push(e)  # noqa: E731
    warmup = n // 10
    marks = {warmup + (n - warmup) * k // SAMPLES for k in range(SAMPLES + 1)}
    times, rss, found = {}, {}, 0
    for i, event in enumerate(events(n, keys)):
        if i in marks:
            times[i], rss[i] = time.perf_counter(), process.memory_info().rss / 2**20
            if progress:
                print(
                    json.dumps({"engine": engine, "events": i, "seconds": times[i], "rss": rss[i], "matches": found}),
                    file=sys.stderr,
                    flush=True,
                )
        out = push(event, i)
        found += len(out) if isinstance(out, list) else 0
    if engine != "feed":
        found += len(matcher.close())  # what waits for its window (ses) comes out at the end
    times[n], rss[n] = time.perf_counter(), process.memory_info().rss / 2**20
    points = sorted(times)
    fifth = max(1, len(points) // 5)
    rate = lambda a, b: (b - a) / (times[b] - times[a])  # noqa: E731
    return {
        "engine": engine,
        "keys": keys,
        "events": n,
        "matches": found,
        "ev_s": rate(points[0], n),
        "first": rate(points[0], points[fifth]),
        "last": rate(points[-1 - fifth], n),
        "rss_warm": rss[points[0]],
        "rss_end": rss[n],
        "rss_growth": max(rss.values()) - rss[points[0]],
        "rss_over_events": [(i, rss[i]) for i in points],
    }


def run_one(engine: str, n: int, keys: int, disorder: str = "reject") -> dict:
    """One soak in a fresh process (its own RSS)."""
    done = subprocess.run(
        [sys.executable, __file__, "--one", engine, "--events", str(n), "--keys", str(keys), "--disorder", disorder],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--quick", action="store_true", help="200,000 events per run")
    parser.add_argument("--engines", nargs="+", default=list(ENGINES))
    parser.add_argument("--keys", type=int, nargs="+", default=[1, 100_000])
    parser.add_argument(
        "--disorder",
        default="reject",
        choices=sorted(DELAY_OPTIONS),
        help="an out-of-order mode (k / max_delay 3 s; the stream stays in order)",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="with --one: each RSS sample as a JSON line on stderr (watch a long soak, or cut it)",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    n = 200_000 if args.quick else args.events
    if args.one:
        print(json.dumps(soak(args.one, n, args.keys[0], args.disorder, args.progress)))
        return
    mode = "" if args.disorder == "reject" else f", disorder={args.disorder!r} {DELAY_OPTIONS[args.disorder]}"
    print(f"{QUERY!r}, {n:,} events per run, Matcher(keep=False){mode}", flush=True)
    header = (
        f"{'engine':<10} {'keys':>7} {'matches':>10} {'ev/s':>8} {'x feed':>7} {'first':>7} {'last':>7} "
        f"{'RSS warm':>9} {'RSS end':>8} {'growth':>7}"
    )
    print(header, flush=True)
    series = []
    for keys in args.keys:
        feed = run_one("feed", n, keys)
        for engine in args.engines:
            r = run_one(engine, n, keys, args.disorder)
            series.append(r)
            print(
                f"{engine:<10} {keys:>7,} {r['matches']:>10,} {r['ev_s']:>8,.0f} {r['ev_s'] / feed['ev_s']:>7.3f} "
                f"{r['first']:>7,.0f} {r['last']:>7,.0f} {r['rss_warm']:>9.1f} {r['rss_end']:>8.1f} "
                f"{r['rss_growth']:>7.1f}",
                flush=True,
            )
    print("\nRSS MB over events (after warm-up, every tenth of the run):", flush=True)
    for r in series:
        points = r["rss_over_events"][::2]
        if r is series[0]:
            print(f"{'engine':<10} {'keys':>7} " + " ".join(f"{i:>8,}" for i, _ in points), flush=True)
        print(f"{r['engine']:<10} {r['keys']:>7,} " + " ".join(f"{mb:>8.1f}" for _, mb in points), flush=True)


if __name__ == "__main__":
    main()
