"""The automaton engine ([CEL]) on the six queries of the CEL paper (Table 1), issue 7's targets.

Streams: uniformly random types A-D, one event per second (ts = position), ``v`` uniform in 0..99; the
filtered variant puts ``x.v < 10`` on every atom, so 10 % of the events are relevant. For each query,
window (10 s, 100 s, 1000 s) and variant it reports, on one core:

- **update ev/s**: ``plan.count`` over 1M events: letters, sub-streams and Algorithm 1 over the whole
  stream, the lists of completed matches counted but not enumerated (best of 3);
- **run ev/s** and **enum matches/s**: a full run, Algorithm 1 and the enumeration of every match into
  arrays; wide windows give billions of matches, so enumeration stops after 5M (``matches`` then ends
  with "+", and run ev/s is left out); enum matches/s = matches / (run time − update time);
- **arena MB** (the node arena at the end) and **peak MB** (tracemalloc's peak during ``count``);
- ratios measured in this run: **x bare loop**, update ev/s over a bare Python loop reading each event's
  type and v; **x brute force** (Q1), over the events/s of a brute-force Python counter of A;B;C matches
  (the issue's baseline) on the first 100k events; **x reference** (window 10 s), ``cepkit.match`` time of
  the reference over the automaton's on the first 2000 events (Match objects included).

    python bench/automaton.py            # full run (about 15 minutes on a shared 2-core machine)
    python bench/automaton.py --quick    # 100k events, windows 10 s and 1000 s
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections import deque

import numpy as np
import pandas as pd
from tqdm import tqdm

import cepkit
from cepkit.engines.automaton.evaluate import run_all
from cepkit.runtime.stream import Stream
from streams import best_of
from cepkit.runtime.registry import get_engine

QUERIES = {  # [CEL] §8, Table 1; ``atom(type, var)`` writes one (filtered) atom
    "Q1": lambda atom: f"{atom('A', 'a')} ; {atom('B', 'b')} ; {atom('C', 'c')}",
    "Q2": lambda atom: f"{atom('A', 'a')} ; {atom('B', 'b')} ; {atom('C', 'c')} ; {atom('D', 'd')}",
    "Q3": lambda atom: f"({atom('A', 'a')} OR {atom('B', 'b')} OR {atom('C', 'c')}) ; {atom('D', 'd')}",
    "Q4": lambda atom: f"({atom('A', 'a')})+ ; {atom('B', 'b')}",
    "Q5": lambda atom: f"({atom('A', 'a')})+ ; ({atom('B', 'b')})+ ; {atom('C', 'c')}",
    "Q6": lambda atom: f"(({atom('A', 'a')})+ ; {atom('B', 'b')})+ ; {atom('C', 'c')}",
}
NODE_BYTES = 8 + 4 + 4 + 4 + 8  # pos, var, left, right, start


def query_text(name: str, window: int, filtered: bool) -> str:
    def atom(t: str, var: str) -> str:
        return f"({t} AS {var} FILTER {var}.v < 10)" if filtered else f"{t} AS {var}"

    return f"{QUERIES[name](atom)} WITHIN {window} s"


def make_stream(n: int, seed: int = 0) -> Stream:
    rng = np.random.default_rng(seed)
    types = rng.choice(np.array(list("ABCD"), dtype=object), n)
    values = rng.integers(0, 100, n)
    return Stream.from_any(pd.DataFrame({"type": types, "ts": np.arange(n, dtype=float), "v": values}))


def bare_loop(stream: Stream) -> int:
    """The cheapest Python pass over the events: read each one's type and v."""
    hits = 0
    for e in stream.events:
        if e.type == "A" and e.attrs["v"] < 10:
            hits += 1
    return hits


def brute_force_abc(stream: Stream, window: float) -> int:
    """Counts A;B;C matches within the window by looking back over the events in it (the issue's
    "brute-force Python counter"): O(window²) per C event."""
    recent: deque = deque()
    count = 0
    for e in stream.events:
        while recent and e.time - recent[0].time > window:
            recent.popleft()
        if e.type == "C":
            a_seen = 0
            for r in recent:  # A before B before C: count (A, B) pairs in order
                if r.type == "A":
                    a_seen += 1
                elif r.type == "B":
                    count += a_seen
        recent.append(e)
    return count


def enumerate_first(program, stream: Stream, limit: int) -> tuple:
    """(seconds, matches, truncated) of a full run that stops enumerating after ``limit`` matches."""
    start = time.perf_counter()
    outputs = run_all(program, stream, limit=limit).outputs
    return time.perf_counter() - start, len(outputs), outputs.truncated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k events, windows 10 s and 1000 s")
    parser.add_argument("--max-matches", type=int, default=5_000_000, help="matches enumerated per run at most")
    args = parser.parse_args()
    n = 100_000 if args.quick else 1_000_000
    windows = (10, 1000) if args.quick else (10, 100, 1000)
    print(f"building a stream of {n:,} events ...", flush=True)
    stream = make_stream(n)
    prefix, short = stream[:2000], stream[:100_000]
    engine = get_engine("automaton")
    cepkit.match("A a ; B b", prefix, engine="automaton")  # compile the kernels before timing
    bare_s, _ = best_of(3, lambda: bare_loop(stream))
    bare_rate = n / bare_s
    rows = []
    configs = [(name, w, f) for name in QUERIES for f in (False, True) for w in windows]
    for name, window, filtered in tqdm(configs, desc="automaton bench"):
        text = query_text(name, window, filtered)
        plan = engine.compile(cepkit.parse(text))
        plan.count(prefix)
        update_s, _ = best_of(3, lambda: plan.count(stream))
        arena_bytes = plan.info()["arena_nodes"] * NODE_BYTES
        tracemalloc.start()
        plan.count(stream)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        run_s, matches, truncated = enumerate_first(plan.program, stream, args.max_matches)
        row = {
            "query": name,
            "filter": "10%" if filtered else "-",
            "window": window,
            "update ev/s": n / update_s,
            "x bare loop": (n / update_s) / bare_rate,
            "run ev/s": None if truncated else n / run_s,
            "matches": f"{matches:,}" + ("+" if truncated else ""),
            "enum matches/s": matches / (run_s - update_s) if matches >= 10_000 else None,
            "arena MB": arena_bytes / 1e6,
            "peak MB": peak / 1e6,
        }
        if name == "Q1" and not filtered:  # on at most 100k events: it is O(window) per event
            brute_s, brute_count = best_of(1, lambda: brute_force_abc(short, window))
            row["x brute force"] = (n / update_s) / (len(short) / brute_s)
            if not truncated and len(short) == n:  # every match enumerated: both count the same
                assert brute_count == matches, (brute_count, matches)
        if window == 10:
            ref_s, expected = best_of(1, lambda: cepkit.match(text, prefix, engine="reference"))
            auto_s, got = best_of(3, lambda: cepkit.match(text, prefix, engine="automaton"))
            assert got == expected
            row["x reference"] = ref_s / auto_s
        rows.append(row)
    table = pd.DataFrame(rows)
    print(f"\nbare Python loop: {bare_rate:,.0f} events/s over {n:,} events")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(
            table.to_string(
                index=False, float_format=lambda v: f"{v:,.1f}" if abs(v) < 100 else f"{v:,.0f}", na_rep="-"
            )
        )
    q1 = table[(table["query"] == "Q1") & (table["filter"] == "-")].set_index("window")["update ev/s"]
    print(f"\nQ1 update cost, window {windows[-1]} s vs {windows[0]} s: {q1[windows[0]] / q1[windows[-1]]:.2f}x slower")
    strategies(short if not args.quick else stream)


def strategies(stream: Stream) -> None:
    """Selection strategies ([CEL] §6-7, the paper's Figure 5): ``plan.run`` events/s, Match objects
    included, for Q1 and Q4 with a 10 s window; NEXT/LAST/MAX run their per-event algorithms in Python,
    ALL and STRICT the compiled kernel."""
    rows = []
    for name in ("Q1", "Q4"):
        for strategy in ("ALL", "STRICT", "NEXT", "LAST", "MAX"):
            query = cepkit.parse(query_text(name, 10, False)).with_strategy(strategy)
            plan = get_engine("automaton").compile(query)
            plan.run(stream[:1000])
            seconds, found = best_of(1, lambda: plan.run(stream))
            rows.append(
                {
                    "query": name,
                    "strategy": strategy,
                    "events": len(stream),
                    "matches": len(found),
                    "run ev/s": len(stream) / seconds,
                }
            )
    print(f"\nselection strategies, window 10 s, {len(stream):,} events")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:,.0f}"))


if __name__ == "__main__":
    main()
