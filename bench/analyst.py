"""A new analyst's path at full size, through the calls the README shows.

On the whole flights year (``cepkit.datasets.flight_events()``, 690k events) and on a 1M-event simulated
shop (``cepkit.simulate.Scenario``, three types, 5,000 users, one hour), it times what a user does:
load the events, ``cepkit.match(...)`` (warm: best of three, the plan cache on; each step after it best
of two, so that no step pays numba's compiling into a stale cache), ``.positions()``,
``.to_pandas()``, ``match(..., partial=True)`` (the timed-out partial matches), ``cepkit.funnel``,
``cepkit.explain`` of a candidate that is not a match, ``cepkit.why_not``, the Workbench from Python (a
first ``Workbench(events).run()`` with its construction, a second run, ``to_html``), and the command line
on a CSV with the user's own column names and times in a time zone (``cepkit match --type --ts --fields
all`` in a fresh process: import, read, match, print every matched event's values).

It prints, per step, CPU seconds (this process's, or the child's for the command line), wall seconds,
and the ratio of its CPU to the same run's ``cepkit.match`` of that stream's query (the baseline), with
the load average at the start and at the end: on a shared machine read the CPU column and the ratios.

    nice -n 10 python bench/analyst.py            # ~1-2 min of CPU; --quick: 200k simulated events
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cepkit
from cepkit import simulate

FLIGHTS_QUERY = (
    "SEQ(FOG f, DELAYED_DEPARTURE d) WHERE d.dep_delay > 30 WITHIN 2 h PARTITION BY origin"  # weather, then delay
)
SHOP_QUERY = "SEQ(view v, cart c, buy b) WHERE c.price > v.price WITHIN 2 min PARTITION BY user"


def timed(call, repeat: int = 1) -> tuple:
    """(result, best CPU seconds, its wall seconds) of ``repeat`` calls."""
    best = None
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        result = call()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if best is None or cpu < best[0]:
            best = (cpu, wall)
    return result, *best


def child_cpu(argv: list) -> tuple:
    """(CPU seconds of the child, wall seconds, its standard output) of a command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall, out


def shop(events: int):
    users = simulate.integers(1, 5000)
    per_second = events / 3600 / 280  # 200 views, 60 carts, 20 buys per 280 events
    return (
        simulate.Scenario(seed=1, duration=3600, start="2024-05-01 08:00")
        .add("view", f"{200 * per_second}/s", user=users, price=simulate.lognormal(3, 1))
        .add("cart", f"{60 * per_second}/s", user=users, price=simulate.lognormal(3, 1))
        .add("buy", f"{20 * per_second}/s", user=users)
    )


def run_stream(name: str, load, query: str, rows: list, csv_dir: Path) -> None:
    events, cpu, wall = timed(load)
    rows.append((name, f"load ({len(events):,} events)", cpu, wall, None, ""))
    cepkit.match(query, events)  # compiles (numba's cache) and keeps the plan: the calls below are warm
    found, base, wall = timed(lambda: cepkit.match(query, events), repeat=3)
    rows.append((name, "cepkit.match", base, wall, 1.0, f"{len(found):,} matches, {found.engine}"))

    def step(label, call, note=lambda r: ""):
        result, cpu, wall = timed(call, repeat=2)  # best of two: the first may compile (numba's cache)
        rows.append((name, label, cpu, wall, cpu / base, note(result)))
        return result

    step("match + .positions()", lambda: cepkit.match(query, events).positions())
    step("match + .to_pandas()", lambda: cepkit.match(query, events).to_pandas())
    step(
        "match(partial=True)",
        lambda: cepkit.match(query, events, partial=True),
        lambda r: f"{len(r.partial):,} partial matches",
    )
    step("cepkit.funnel", lambda: cepkit.funnel(query, events), lambda r: f"{r['candidates'].tolist()}")
    first = found[0].positions if len(found) else (0, 1)
    step(
        "cepkit.explain (not a match)",
        lambda: cepkit.explain(query, events, (first[0], first[-1] + 1)),
        lambda r: f"{len(r.failures)} reason(s)",
    )
    step("cepkit.why_not", lambda: cepkit.why_not(query, events, limit=3), lambda r: r.summary()[:60])
    # the Workbench from Python: a run (slices through a Matcher, the timeline, the grid), its report
    from cepkit.widgets import Workbench

    def first_run():
        workbench = Workbench(events, query=query)
        workbench.run()
        return workbench

    workbench = step("Workbench(events).run()", first_run, lambda wb: f"{len(wb.matches):,} matches")
    step("Workbench.run() again", workbench.run, lambda r: f"{len(r.matches):,} matches")
    with tempfile.TemporaryDirectory() as report_dir:
        step("Workbench.to_html()", lambda: workbench.to_html(Path(report_dir) / "report.html"))
    # the command line on the user's own file: own column names, times with a UTC offset
    own = events.rename(columns={"type": "Event", "ts": "When"})
    own["When"] = own["When"].dt.tz_convert("America/New_York").map(lambda t: t.isoformat())
    path = csv_dir / f"{name.split()[0]}.csv"
    own.to_csv(path, index=False)
    argv = [sys.executable, "-m", "cepkit", "match", query, "--events", str(path), "--type", "Event"]
    cpu, wall, out = child_cpu(argv + ["--ts", "When", "--format", "csv", "--fields", "all"])
    rows.append(
        (name, "cepkit match --fields all (CLI, CSV)", cpu, wall, cpu / base, f"{out.count(chr(10)) - 1:,} rows out")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200k simulated events, flights of January")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    rows: list = []
    months = [1] if args.quick else None
    n_shop = 200_000 if args.quick else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        run_stream(
            "flights year" if not args.quick else "flights January",
            lambda: cepkit.datasets.flight_events(months=months),
            FLIGHTS_QUERY,
            rows,
            Path(tmp),
        )
        run_stream(f"shop {n_shop:,}", shop(n_shop).events, SHOP_QUERY, rows, Path(tmp))
    print(f"load average {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print("| stream | step | CPU s | wall s | CPU / match | |")
    print("|---|---|---|---|---|---|")
    for name, label, cpu, wall, ratio, note in rows:
        print(f"| {name} | {label} | {cpu:.2f} | {wall:.2f} | {'' if ratio is None else f'{ratio:.1f}'} | {note} |")


if __name__ == "__main__":
    main()
