"""Per-event rate of ``cepkit.Matcher(keep=False)``: ``push`` one event at a time (a dict), ``pusher`` (one
event at a time as values of fixed columns: ``matcher.pusher(("type", "ts", "id"))``) and ``extend`` with
lists of 1,000 events, for one key without PARTITION BY, one key with it, and 1,000 keys (issue 15: the
automaton's incremental matcher was the slowest per push, Python around the kernel).

Query ``A a ; B b ; C c WITHIN 10 s`` (``PARTITION BY id`` in the keyed rows; then ``A+ a ; B b WITHIN 5
s``), types A-D uniformly at random, one per second; ``id`` changes every 10 events. The last rows are
the engines' own queries (``CHEMO`` for ses over bench/ses.py's chemo-like events, ``RISING`` for rcep,
the automaton as their baseline). ``x feed`` is the rate over a same-run loop that only passes
each event through ``cepkit.runtime.event_record.make_event`` (what any push costs before an engine sees it);
``cpu ev/s`` counts the process's CPU time instead of the wall clock (steadier on a shared machine);
``/push`` is the row's CPU rate over ``push``'s in the same run, ``/auto`` over the automaton pusher's on
the same stream in the same run (when the automaton is among the engines and runs the query); ``same``
says whether the matches equal
``cepkit.match``'s over the same events (positions and bindings, in output order: ses emits a match when
its first event's window closes, so its emissions come in another order). ``--repeat n``: each
rate is the best of n runs (a loaded machine slows some runs several-fold; ``same`` holds for all of them).
The load average is printed at the start and the end. After the warm-up the interpreter's own objects
(numba's, pandas': ~170k) are frozen out of the cyclic collector (``gc.freeze``, as ``cepkit.spark`` does in
its workers) and each run starts after a collection: a full collection traverses them all (50-150 ms on
this machine, a third of a row's run), and whether one falls inside a run otherwise decides the row.

    python bench/matcher.py                              # automaton, 50,000 events per row
    python bench/matcher.py --engines automaton stack --events 200000
    python bench/matcher.py --engines ses rcep           # their pushers: the kernel per closing window / trigger
    python bench/matcher.py --repeat 5                   # each rate the best of 5 runs (a loaded machine)
    python bench/matcher.py --profile                    # cProfile of the first engine's 1-key pusher row
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import time

import numpy as np

import cepkit
from cepkit.runtime.event_record import make_event
from cepkit.runtime.match_record import output_order
from ses import chemo_like

ONE = "A a ; B b ; C c WITHIN 10 s"
KEYED = ONE + " PARTITION BY id"
KLEENE = "A+ a ; B b WITHIN 5 s"
# each engine's own query: an SES set with a chain over a Kleene member by patient (bench/ses.py's P1 by
# PID, over its chemo-like events), a Kleene closure with a predicate across iterations (rcep)
CHEMO = "PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE prev(p.V) < p.V WITHIN 10 days PARTITION BY PID"
RISING = "A+ a ; B b WHERE a[i].v > a[i-1].v WITHIN 5 s"
# (label, query, keys, the engines it is for: None for all); keys 0: the chemo-like events
ROWS = (
    ("1 key", ONE, 1, None),
    ("1 key, PARTITION BY", KEYED, 1, None),
    ("1,000 keys", KEYED, 1000, None),
    ("A+;B, 1 key", KLEENE, 1, None),
    ("chemo-like by PID", CHEMO, 0, ("ses",)),
    ("A+;B a[i].v > a[i-1].v", RISING, 1, ("rcep", "automaton")),
)
EXTEND = 1000


def stream(n: int, keys: int) -> list:
    """Types A-D, one a second, ``id`` changing every 10 events over ``keys`` keys, ``v`` in 0..9; keys 0:
    bench/ses.py's chemo-like events of 20 patients (``PID``, ``V``)."""
    if not keys:
        return chemo_like(n, patients=20).frame.astype({"ts": float}).to_dict("records")
    rng = np.random.default_rng(0)
    kinds = np.array(list("ABCD"))[rng.integers(0, 4, n)].tolist()
    values = rng.integers(0, 10, n).tolist()
    return [{"type": t, "ts": float(i), "id": (i // 10) % keys, "v": v} for i, (t, v) in enumerate(zip(kinds, values))]


def rate(engine: str, query: str, events: list, call: str) -> tuple:
    """(events per wall second, per CPU second, matches) of one Matcher over ``events``; engine "feed":
    make_event only. Each starts after a collection (the module docstring)."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    if engine == "feed":
        for i, e in enumerate(events):
            make_event(e, i)
        return len(events) / (time.perf_counter() - start), len(events) / (time.process_time() - cpu), []
    matcher = cepkit.Matcher(query, engine=engine, keep=False)
    found: list = []
    if call == "extend":
        for at in range(0, len(events), EXTEND):
            found += matcher.extend(events[at : at + EXTEND])
    elif call == "pusher":
        columns = tuple(events[0])
        push = matcher.pusher(columns)
        for e in events:
            found += push(*[e[c] for c in columns])
    else:
        for e in events:
            found += matcher.push(e)
    found += matcher.close()
    return len(events) / (time.perf_counter() - start), len(events) / (time.process_time() - cpu), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--engines", nargs="+", default=["automaton"])
    parser.add_argument("--repeat", type=int, default=1, help="runs per row and call; the best is shown")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    warm = stream(2000, 1)
    for engine in args.engines:
        rate(engine, ONE, warm, "pusher")  # compile the kernels (numba) outside the timings
    gc.collect()
    gc.freeze()  # (the module docstring)
    if args.profile:
        events = stream(args.events, 1)
        cProfile.runctx(
            "rate(engine, ONE, events, 'pusher')",
            globals(),
            {"events": events, "engine": args.engines[0]},
            "/tmp/matcher.prof",
        )
        pstats.Stats("/tmp/matcher.prof").sort_stats("tottime").print_stats(25)
        return
    print(
        f"{args.events:,} events per row; Matcher(keep=False); best of {args.repeat}; "
        f"load average at the start {os.getloadavg()[0]:.1f} (2 cores)",
        flush=True,
    )
    print(
        f"{'engine':<10} {'stream':<22} {'call':<7} {'ev/s':>9} {'x feed':>7} {'cpu ev/s':>9} {'/push':>6} "
        f"{'/auto':>6} {'matches':>8} same",
        flush=True,
    )
    for label, query, keys, only in ROWS:
        events = stream(args.events, keys)
        feed, _, _ = rate("feed", query, events, "push")
        automaton = None  # the automaton pusher's CPU rate on this row, when measured
        for engine in sorted(args.engines, key=lambda e: e != "automaton"):
            if only is not None and engine not in only:
                continue
            try:
                expected = [(m.positions, m.bindings) for m in cepkit.match(query, events, engine=engine)]
            except cepkit.QueryError:  # (the stack runs no Kleene +)
                continue
            base = None
            for call in ("push", "pusher", "extend"):
                runs = [rate(engine, query, events, call) for _ in range(args.repeat)]
                r, cpu, found = max(run[0] for run in runs), max(run[1] for run in runs), runs[0][2]
                base = cpu if base is None else base
                if engine == "automaton" and call == "pusher":
                    automaton = cpu
                same = all([(m.positions, m.bindings) for m in output_order(run[2])] == expected for run in runs)
                versus = f"{cpu / automaton:>6.2f}" if automaton and call == "pusher" else f"{'-':>6}"
                print(
                    f"{engine:<10} {label:<22} {call:<7} {r:>9,.0f} {r / feed:>7.3f} {cpu:>9,.0f} {cpu / base:>6.2f} "
                    f"{versus} {len(found):>8,} {'yes' if same else 'NO'}",
                    flush=True,
                )
    print(f"load average at the end {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
