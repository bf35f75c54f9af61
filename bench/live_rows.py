"""Spark Structured Streaming's per-key work without Spark (``cepkit.spark.watermark``): this checkout's
``Live.rows`` and ``advance`` against another revision's ``watermark.py`` (default: fbbeba7, before the
rows came from the match arrays), in the same run.

The baseline module is read with ``git show REV:cepkit/spark/watermark.py`` and loaded as a module of
``cepkit.spark`` (so it runs on this checkout's engines and groups: only its own code differs). One key's
events (``end_to_end.frame_of``: types A-D uniform, one event per second, v in 0..99, a key ``id``) arrive
in micro-batches of ``--batch`` events, the watermark trailing the latest ts by 2 s, then a last watermark
past everything, as ``match_stream``'s stateful processor calls ``advance``. It times, in CPU seconds of
this process, best of ``--repeat``:

- **rows**: ``Live.rows`` alone over every call's matches (recorded once from a run, each repeat on fresh
  copies, so neither side reads ``Match`` objects an earlier call made);
- **advance**: every call of ``advance`` from the first micro-batch to the last (buffer, sort, matcher,
  rows, retention: one key's whole streaming work but Spark's own).

The frames both sides return are checked equal (``pandas.testing.assert_frame_equal``, dtypes included).

    python bench/live_rows.py                         # 100k events, 1k-event batches, automaton and stack
    python bench/live_rows.py --against main --events 20000
    python bench/live_rows.py --profile               # cProfile of advance (warm), A+;B, automaton
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.util
import pathlib
import pstats
import subprocess
import sys
import time

import numpy as np
import pandas as pd

import cepkit
import cepkit.spark.watermark as current
from cepkit.runtime.matches import Match, MatchList
from cepkit.spark.groups import POS, TS, EventColumns, GroupMatcher, plan_split
from end_to_end import frame_of

QUERIES = (("A;B;C W=10 s", "A a ; B b ; C c WITHIN 10 s"),
           ("A+;B W=10 s", "A+ a ; B b WITHIN 10 s"),
           ("(A|B);C W=10 s", "(A AS a OR B AS b) ; C c WITHIN 10 s"),
           ("A;B;C W=10 s by id", "A a ; B b ; C c WITHIN 10 s PARTITION BY id"))
COLUMNS = EventColumns(("v", "id"), "number")
DELAY_US = 2_000_000


def baseline(revision: str):
    """The revision's ``cepkit/spark/watermark.py`` as a module of this checkout's ``cepkit.spark``."""
    root = pathlib.Path(__file__).resolve().parent.parent
    source = subprocess.run(["git", "-C", str(root), "show", f"{revision}:cepkit/spark/watermark.py"],
                            check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("cepkit.spark._baseline_watermark", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "cepkit.spark"
    sys.modules[spec.name] = module         # (dataclasses look their module up)
    exec(compile(source, f"{revision}:cepkit/spark/watermark.py", "exec"), module.__dict__)
    return module


def key_frame(n: int) -> pd.DataFrame:
    frame = frame_of(n)
    frame["id"] = 7
    frame[TS] = frame["ts"]
    frame[POS] = np.arange(n, dtype=np.int64)
    frame[current.TIME] = (frame["ts"] * 1_000_000).astype("int64")
    return frame


def calls(frame: pd.DataFrame, batch: int) -> list:
    """(new rows, watermark) of each call: micro-batches, then a watermark past everything."""
    out = []
    for at in range(0, len(frame), batch):
        chunk = frame.iloc[at:at + batch]
        out.append((chunk, int(chunk[current.TIME].max()) - DELAY_US))
    return out + [(None, 2 ** 62)]


def streamed(module, matcher: GroupMatcher, frame: pd.DataFrame, batch: int, record=None) -> list:
    """Every call's output rows; ``record`` (a list) collects each call's (matches, events) for ``rows``."""
    horizon = module.Horizon.of(matcher.split)
    buffer, live, out = module.KeyBuffer(frame.iloc[:0].copy()), None, []
    original = module.Live.rows
    if record is not None:
        def rows(self, found, events):
            record.append((self, found, events))
            return original(self, found, events)
        module.Live.rows = rows
    try:
        for new, watermark in calls(frame, batch):
            found, buffer, _, live = module.advance(buffer, new, watermark, matcher, horizon, live)
            out.append(found)
    finally:
        module.Live.rows = original
    return out


def fresh(found):
    """The same matches (a result, or a list of results) with no ``Match`` object made yet."""
    if isinstance(found, MatchList):
        return MatchList(found.arrays.copy())
    return [fresh(f) for f in found] if found and not isinstance(found[0], Match) else found


def timed(fn, repeat: int) -> float:
    """The fastest of ``repeat`` runs in CPU seconds, each from a collected heap (no collection owed to an
    earlier run; the collection itself not timed)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def measure(old, query: str, engine: str, frame: pd.DataFrame, batch: int, repeat: int) -> dict:
    q = cepkit.parse(query)
    matcher = GroupMatcher(q, engine, {}, COLUMNS, plan_split(q))
    recorded = {current: [], old: []}
    mine = streamed(current, matcher, frame, batch, recorded[current])
    theirs = streamed(old, matcher, frame, batch, recorded[old])
    for a, b in zip(mine, theirs):
        pd.testing.assert_frame_equal(a, b)
    matches = sum(len(f) for f in mine)
    kinds = {type(found).__name__ for _, found, _ in recorded[old]}

    def rows_of(module):
        copies = [[(live, fresh(found), events) for live, found, events in recorded[module]] for _ in range(repeat)]

        def run():
            for live, found, events in copies.pop():
                module.Live.rows(live, found, events)
        return run
    rows_new, rows_old = timed(rows_of(current), repeat), timed(rows_of(old), repeat)
    advance_new = timed(lambda: streamed(current, matcher, frame, batch), repeat)
    advance_old = timed(lambda: streamed(old, matcher, frame, batch), repeat)
    return {"matches": matches, "found": "/".join(sorted(kinds)), "rows_old": rows_old, "rows_new": rows_new,
            "advance_old": advance_old, "advance_new": advance_new}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engines", nargs="+", default=["automaton", "stack"])
    parser.add_argument("--against", default="fbbeba7", help="the baseline revision of watermark.py")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    frame = key_frame(args.events)
    if args.profile:
        q = cepkit.parse(QUERIES[1][1])
        matcher = GroupMatcher(q, "automaton", {}, COLUMNS, plan_split(q))
        streamed(current, matcher, frame, args.batch)        # (compiles and warms up first)
        profile = cProfile.Profile()
        profile.runcall(streamed, current, matcher, frame, args.batch)
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        return
    old = baseline(args.against)
    print(f"{args.events} events, batches of {args.batch}, CPU s best of {args.repeat}; baseline {args.against}")
    print(f"{'query':22} {'engine':10} {'matches':>8} {'found':>10} {'rows old':>9} {'rows new':>9} {'x':>6} "
          f"{'adv old':>8} {'adv new':>8} {'x':>6}")
    for name, query in QUERIES:
        for engine in args.engines:
            try:
                cepkit.Matcher(query, engine=engine)
            except cepkit.QueryError:
                continue
            r = measure(old, query, engine, frame, args.batch, args.repeat)
            print(f"{name:22} {engine:10} {r['matches']:>8} {r['found']:>10} {r['rows_old']:>9.3f} "
                  f"{r['rows_new']:>9.3f} {r['rows_old'] / r['rows_new']:>6.1f} {r['advance_old']:>8.3f} "
                  f"{r['advance_new']:>8.3f} {r['advance_old'] / r['advance_new']:>6.1f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
