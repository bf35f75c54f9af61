"""The Workbench's Run on a long stream against ``cepkit.match`` on the same engine (issue 21).

The baseline, measured in the same run, is what a notebook cell does: ``cepkit.match(query, stream,
engine=...).positions()`` over the stream the widget holds (converted once, as the widget converts it). The
widget's side is its own code path: ``Workbench.run()`` (the Run button's work: the query through
``widgets.execution.run_query`` in slices with progress, then the status, the timeline and the first page
of the results grid) and, apart, ``run_query`` alone (the engine part of it). Ratios are widget / baseline.

    python bench/workbench.py [--events 1000000] [--engines automaton stack] [--repeat 3]
    python bench/workbench.py --flights [--strategies]    # the user's path on the 690k-event flights year
    python bench/workbench.py --many-runs ALL NEXT LAST MAX --engines automaton rcep   # many live runs

``--flights`` first times the opening: ``cepkit.match`` (the baseline) and ``Workbench(events)`` on the flights
year's DataFrame, each in a new process (what a new kernel pays), CPU and wall seconds, then again in the
same process; then it times each step a user takes on ``cepkit.datasets.flights.flight_events()`` with the tour's
query, once each (wall and CPU seconds; the baseline is ``cepkit.match`` in the same run): the Workbench
made, Run, a match picked, the Automaton, Explain and Events tabs opened, one candidate explained, Why not?,
and with ``--strategies`` the Strategies tab (each strategy's run listed after the table, with its ratio to
ALL's, the Workbench's own run). ``--many-runs`` runs each strategy given on each engine (CPU seconds, after a warm-up run on 20,000 events;
the ratios to the first strategy on the same engine and path, and to the last engine's same strategy and
path).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd

import cepkit
from cepkit.widgets import Workbench
from cepkit.widgets.execution import as_stream, run_query

QUERY = "SEQ(A a, B b, C c) WITHIN 10 s"
TOUR_QUERY = """PATTERN (STORM AS w OR SNOW AS w OR FOG AS w) ; DELAYED_DEPARTURE AS d
WHERE d.dep_delay >= 60
WITHIN 3 hours
PARTITION BY origin"""


def events(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` events of types A..E, one every 0-2 s (datetimes), an attribute ``v``."""
    rng = np.random.default_rng(seed)
    seconds = np.cumsum(rng.integers(0, 3, n))
    return pd.DataFrame(
        {
            "type": rng.choice(list("ABCDE"), n),
            "ts": pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(seconds, unit="s"),
            "v": rng.integers(0, 100, n),
        }
    )


def best(repeat: int, call) -> tuple:
    """(best seconds of ``repeat`` calls, the last call's result)."""
    seconds, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = call()
        seconds = min(seconds, time.perf_counter() - started)
    return seconds, result


OPENERS = {
    "cepkit.match(events)": lambda events: cepkit.match(TOUR_QUERY, events).positions(),
    "Workbench(events)": lambda events: Workbench(events, query=TOUR_QUERY, tz="America/New_York"),
}  # a call a user makes on the flights DataFrame: the baseline, then the Workbench's opening


def open_call(name: str) -> None:
    """In this (new) process: the flights year loaded, then ``OPENERS[name]`` twice; JSON of its CPU and wall
    seconds the first time (with what a new kernel pays once: the grammar, numba's cache, the engines'
    modules, plotly's validators) and again."""
    events = cepkit.datasets.flights.flight_events()
    seconds = []
    for _ in range(2):
        wall, cpu = time.perf_counter(), time.process_time()
        OPENERS[name](events)
        seconds.append((time.process_time() - cpu, time.perf_counter() - wall))
    print(json.dumps(seconds))


def opening() -> pd.DataFrame:
    """Each of ``OPENERS`` in a process of its own (so each pays the once-per-kernel costs), one after the other."""
    rows = []
    for name in OPENERS:
        done = subprocess.run(
            [sys.executable, __file__, "--open-call", name], check=True, capture_output=True, text=True
        )
        (cpu, wall), (cpu_again, wall_again) = json.loads(done.stdout.splitlines()[-1])
        rows.append(
            {
                "call (new process)": name,
                "CPU s": round(cpu, 2),
                "wall s": round(wall, 2),
                "again: CPU s": round(cpu_again, 2),
                "again: wall s": round(wall_again, 2),
            }
        )
    table = pd.DataFrame(rows)
    table["CPU / match's"] = (table["CPU s"] / table["CPU s"].iloc[0]).round(2)
    table["again: CPU / match's"] = (table["again: CPU s"] / table["again: CPU s"].iloc[0]).round(2)
    return table


def flights(strategies: bool) -> None:
    from cepkit.widgets.workbench import TABS

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(opening().to_string(index=False))
    events = cepkit.datasets.flights.flight_events()
    rows = []

    def step(name, call):
        wall, cpu = time.perf_counter(), time.process_time()
        result = call()
        rows.append(
            {"step": name, "wall s": round(time.perf_counter() - wall, 2), "CPU s": round(time.process_time() - cpu, 2)}
        )
        return result

    wb = step("Workbench(events)", lambda: Workbench(events, query=TOUR_QUERY, tz="America/New_York"))
    found = step("cepkit.match (baseline)", lambda: cepkit.match(TOUR_QUERY, wb.stream).positions())
    run = step("Run", wb.run)
    assert run.matches.positions() == found
    step("pick a match", lambda: setattr(wb, "selected", len(found) // 2))
    for tab in ("Automaton", "Explain", "Events"):
        step(f"{tab} tab", lambda: setattr(wb.tabs, "selected_index", TABS.index(tab)))
    view = wb.tabs.children[TABS.index("Explain")].children[0]
    step("explain one candidate", lambda: view.explain(run.matches[5].positions))
    misses = step("Why not?", view.show_near_misses)
    if strategies:

        def compare():
            wb.tabs.selected_index = TABS.index("Strategies")
            wb.strategy_compare.wait()

        step("Strategies tab", compare)
    print(f"{len(events):,} events, {len(found):,} matches; why_not: {misses.summary()}")
    plot = wb.timeline.plot
    print(
        f"the timeline's figure: {len(json.dumps(plot.figure)) / 1024:.0f} KB of JSON, sent as {len(plot.packed) / 1024:.0f} KB (gzipped)"
    )
    print(pd.DataFrame(rows).to_string(index=False))
    if strategies:
        compare = wb.strategy_compare
        print(
            "Strategies tab, each run (wall s): "
            + ", ".join(
                f"{s} {r.seconds:.2f} ({r.seconds / compare.runs['ALL'].seconds:.1f}x ALL; {r.engine}, {len(r.matches):,})"
                for s, r in compare.runs.items()
            )
            + "".join(f"; {s}: {e.reason.split(' (')[0]}" for s, e in compare.errors.items())
        )


def many_runs(n: int, strategies: list, engines: list) -> None:
    """``SEQ(A a, B b, C c) WITHIN 10 min`` under each of ``strategies`` over ``n`` events of which 3% are A,
    B or C (one every 0-2 s, so ~6 live starts per window): CPU seconds of ``cepkit.match`` and of
    ``run_query`` on each engine, every engine's matches checked against the first's."""
    rng = np.random.default_rng(0)
    types = rng.choice(list("DEFGHIJKLMNOPQRSTUVWXYZ"), n).astype(object)
    letters = rng.random(n) < 0.03
    types[letters] = rng.choice(list("ABC"), int(letters.sum()))
    seconds = np.cumsum(rng.integers(0, 3, n))
    frame = pd.DataFrame(
        {"type": types, "ts": pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(seconds, unit="s")}
    )
    stream, warm = as_stream(frame), as_stream(frame.head(20_000))
    rows = []
    for strategy in strategies:
        query = cepkit.parse("SEQ(A a, B b, C c) WITHIN 10 min").with_strategy(strategy)
        found = None
        for engine in engines:
            for path, call in (
                ("cepkit.match", lambda events: cepkit.match(query, events, engine=engine)),
                ("run_query", lambda events: run_query(query, events, engine, progress=lambda d, t: None).matches),
            ):
                call(warm)  # numba's compilation (or loading from its cache) is not what is measured
                cpu = time.process_time()
                positions = call(stream).positions()
                assert found is None or positions == found, "another engine or path found other matches"
                found = positions
                rows.append(
                    {
                        "strategy": strategy,
                        "engine": engine,
                        "path": path,
                        "matches": len(positions),
                        "CPU s": time.process_time() - cpu,
                    }
                )
    table = pd.DataFrame(rows)
    by = table.set_index(["strategy", "engine", "path"])["CPU s"]
    table[f"/ {strategies[0]}"] = [by[(strategies[0], e, p)] for e, p in zip(table.engine, table.path)]
    table[f"/ {strategies[0]}"] = (table["CPU s"] / table[f"/ {strategies[0]}"]).round(2)
    table[f"/ {engines[-1]}"] = (
        table["CPU s"] / [by[(s, engines[-1], p)] for s, p in zip(table.strategy, table.path)]
    ).round(2)
    table["CPU s"] = table["CPU s"].round(2)
    print(f"SEQ(A a, B b, C c) WITHIN 10 min over {n:,} events, {int(letters.sum()):,} of them A, B or C")
    print(table.to_string(index=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--engines", nargs="+", default=["automaton", "stack"])
    parser.add_argument("--query", default=QUERY)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--flights", action="store_true", help="the user's path on the flights year")
    parser.add_argument("--strategies", action="store_true", help="with --flights: the Strategies tab too")
    parser.add_argument(
        "--many-runs", metavar="STRATEGY", nargs="+", help="ALL, MAX, NEXT, ...: many live runs (3%% A/B/C)"
    )
    parser.add_argument("--open-call", choices=OPENERS, help=argparse.SUPPRESS)  # one of opening()'s processes
    args = parser.parse_args()
    if args.open_call:
        return open_call(args.open_call)
    if args.many_runs:
        return many_runs(args.events, args.many_runs, args.engines)
    if args.flights:
        return flights(args.strategies)
    frame = events(args.events)
    stream = as_stream(frame)
    rows = []
    for engine in args.engines:
        match_s, found = best(args.repeat, lambda: cepkit.match(args.query, stream, engine=engine).positions())
        query_s, run = best(args.repeat, lambda: run_query(args.query, stream, engine, progress=lambda d, t: None))
        assert run.matches.positions() == found and run.engine == engine, "the widget found other matches"
        workbench = Workbench(stream, query=args.query, engine=engine)
        run_s, _ = best(args.repeat, workbench.run)
        rows.append(
            {
                "engine": engine,
                "events": args.events,
                "matches": len(found),
                "cepkit.match s": round(match_s, 3),
                "run_query s": round(query_s, 3),
                "Workbench.run s": round(run_s, 3),
                "run_query / match": round(query_s / match_s, 2),
                "Workbench.run / match": round(run_s / match_s, 2),
            }
        )
    print(f"query: {args.query}")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
