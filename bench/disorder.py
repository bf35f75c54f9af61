"""Out-of-order modes as disorder grows ([LIU] §3.4, §2.7): result latency, state size, throughput
and accuracy of K-slack, conservative and aggressive, against the in-order incremental matcher over the
sorted stream measured in the same run. Two parts: the stack engine's own modes over a grid of disorder
(``QUERY``), and every engine behind the out-of-order layer (``cepkit.runtime.disorder``) on a negation,
a Kleene query and an SES pattern (``WORKLOADS``; ``stack+layer`` is the stack's in-order matcher behind
the layer, the measurement behind docs/decisions.md's choice of the stack's own modes).

Streams: one event per second, types A-D, ``id`` in 0..9. A share ``p`` of the events (0-50%) is late,
each by a delay drawn uniformly up to ``D`` (1 to 10 windows); the arrival order sorts events by ts +
delay. K-slack and conservative get the exact bound of the stream (``k`` / ``max_delay`` = the largest
observed delay, so both are correct); aggressive gets it only to purge its state. ``kslack K=W`` shows
what a too-small slack loses.

Metrics: latency = stream time at output (largest ts arrived) minus the largest ts of the match,
for the matches of the final result (first emission), so it includes the network delay of late events;
wait = stream time at output minus stream time when the match's last event arrived (the delay the mode
itself adds: output time minus the arrival time of the match's last event); state = peak instances held (stacks, negation
stores, buffers, holding set); throughput = events/s, and its ratio to the in-order incremental matcher; lost / wrong =
final matches missing / not in the truth; ``-`` = retractions sent.

    python bench/disorder.py            # full grid, writes bench/disorder.png (about 4 minutes), then engines
    python bench/disorder.py --quick    # smaller streams and grid
    python bench/disorder.py --engines-only --events 3000   # only the engines behind the layer
    python bench/disorder.py --size     # at size: 1M synthetic events and the flights year (CPU seconds)

``--size`` runs ``cepkit.match`` on a DataFrame in arrival order, as a user would, and reads
``position_arrays()``: each mode's CPU seconds over the same engine's in-order run on the sorted frame, in
the same process (the in-order run first and last, the better kept). 1M synthetic events (one per second,
types A-D, ``id`` in 0..9, a share late by up to 2 windows) and the flights year (each event delayed by up
to an hour), every engine; aggressive on 1 % and 10 % late, for the engines in ``AGGRESSIVE_AT_SIZE``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import statistics
import time
import warnings

import numpy as np
import pandas as pd
from tqdm import tqdm

import cepkit
from cepkit.runtime import Matches, Stream
from cepkit.runtime.disorder import layered
from cepkit.runtime.registry import get_engine, registered
from cepkit.runtime.selection import select_engine
from streams import best_of

QUERY = "SEQ(A a, B b, !C c, D d) WHERE a.id = b.id and b.id = d.id and c.id = a.id WITHIN 10"
WINDOW = 10
HERE = pathlib.Path(__file__).resolve().parent


# (label, query, ids in the stream): every engine that runs the query is measured behind the layer
WORKLOADS = [
    ("negation", QUERY, 10),
    ("Kleene MAX", "SELECT MAX * PATTERN SEQ(A a, B+ b, C c) WITHIN 10 PARTITION BY id", 3),
    ("SES", "SEQ({A a, B b}, {C c}) WITHIN 10 PARTITION BY id", 3),
]


def disordered(n: int, late_share: float, max_delay: float, seed: int = 0, ids: int = 10) -> list:
    """Event dicts in arrival order: in-order ts, a share of them delayed by up to ``max_delay``."""
    rng = random.Random(seed)
    events = [{"type": rng.choice("ABCD"), "ts": i, "id": rng.randrange(ids)} for i in range(n)]
    arrival = [e["ts"] + (rng.uniform(0, max_delay) if rng.random() < late_share else 0) for e in events]
    return [events[i] for i in sorted(range(n), key=lambda i: (arrival[i], events[i]["ts"]))]


def observed_delay(arrived: list) -> float:
    clock, delay = float("-inf"), 0.0
    for e in arrived:
        delay = max(delay, clock - e["ts"])
        clock = max(clock, e["ts"])
    return delay


def in_order_incremental(query: str, engine: str, stream: Stream) -> list:
    """An engine's in-order incremental matcher over the sorted stream: the baseline of the (incremental)
    modes. ``cepkit.match`` in order may run a batch path instead (the stack's columnar run), not comparable."""
    matcher = select_engine(cepkit.parse(query), engine, {})[1].matcher()
    found = [m for event in stream for m in matcher.push(event)]
    return found + matcher.close()


def through_layer(query: str, engine: str, stream: Stream, **options) -> Matches:
    """``cepkit.match`` with the engine's in-order matcher behind the layer even where it has its own mode."""
    q = cepkit.parse(query)
    plan = layered(get_engine(engine), q, options["disorder"], options)
    found = plan.run(stream)
    return Matches(found, engine, q, deltas=plan.deltas(), info=plan.info())


def measure(
    stream: Stream, truth: set, clock: np.ndarray, repeat: int, query: str = QUERY, engine: str = "stack", **options
) -> dict:
    if engine == "stack+layer":
        run = lambda: through_layer(query, "stack", stream, **options)  # noqa: E731
    else:
        run = lambda: cepkit.match(query, stream, engine=engine, **options)  # noqa: E731
    seconds, found = best_of(repeat, run)
    net = {m.key for m in found}
    first_out = {}
    for d in found.deltas:
        if d.sign == "+":
            first_out.setdefault(d.key, d.emitted_at)
    times = stream.times
    latency = [clock[first_out[m.key]] - max(times[p] for p in m.positions) for m in found]
    wait = [clock[first_out[m.key]] - clock[max(m.positions)] for m in found]
    return {
        "throughput": len(stream) / seconds,
        "state": found.info["peak_state"],
        "latency": statistics.fmean(latency) if latency else 0.0,
        "wait": statistics.fmean(wait) if wait else 0.0,
        "p95": float(np.percentile(latency, 95)) if latency else 0.0,
        "lost": len(truth - net),
        "wrong": len(net - truth),
        "retractions": sum(d.sign == "-" for d in found.deltas),
    }


SIZE_QUERY = "SEQ(A a, B b, C c) WITHIN 10 PARTITION BY id"
YEAR_QUERY = "SEQ(FOG f, DELAYED_DEPARTURE d) WITHIN 2 h PARTITION BY origin"
SIZE_ENGINES = ("automaton", "stack", "rcep", "ses", "nested", "ecube")
# a trailing negation on the stack's own modes: conservative and aggressive still push event by event there
NEGATION_QUERY = "SEQ(A a, B b, !C c) WHERE a.id = b.id and c.id = a.id WITHIN 10"
AGGRESSIVE_AT_SIZE = ("automaton", "stack")  # the others' aggressive takes minutes per run at 1M


def synthetic_frame(n: int, late_share: float, max_delay: float, seed: int = 0) -> pd.DataFrame:
    """Events one per second in arrival order, a share of them delayed by up to ``max_delay``."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {"type": rng.choice(list("ABCD"), n), "ts": np.arange(n, dtype=float), "id": rng.integers(0, 10, n)}
    )
    arrival = frame["ts"].to_numpy() + np.where(rng.random(n) < late_share, rng.uniform(0, max_delay, n), 0.0)
    return frame.iloc[np.argsort(arrival, kind="stable")].reset_index(drop=True)


def year_frames(max_delay: pd.Timedelta, seed: int = 0) -> pd.DataFrame:
    """The flights year in arrival order, each event delayed by up to ``max_delay``."""
    from cepkit.datasets.flights import flight_events

    year = flight_events()
    rng = np.random.default_rng(seed)
    delay = pd.to_timedelta(rng.uniform(0, max_delay.total_seconds(), len(year)), unit="s")
    arrival = (pd.to_datetime(year["ts"]) + delay).to_numpy()
    return year.iloc[np.argsort(arrival, kind="stable")].reset_index(drop=True)


def cpu_run(query: str, frame, engine: str, **options) -> tuple:
    """(CPU seconds, matches, dropped, how the batch ran) of ``cepkit.match`` then ``position_arrays()``."""
    start = time.process_time()
    found = cepkit.match(query, frame, engine=engine, **options)
    found.position_arrays()
    seconds = time.process_time() - start
    return (
        seconds,
        len(found),
        len(found.info.get("dropped") or ()),
        found.info.get("layer_run", found.info.get("run", "")),
    )


def size_table(args) -> None:
    """Each mode's CPU time over the in-order run of the same engine in the same process, at size."""
    n = args.events or 1_000_000
    window = float(WINDOW)
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    workloads = []  # (stream, late share, query, arrived, bound, modes, engines)
    every = ("kslack", "conservative", "aggressive")
    for share, modes in ((0.01, every), (0.10, ("aggressive",))):
        arrived = synthetic_frame(n, share, 2 * window)
        workloads.append((f"{n // 1000}k synthetic", share, SIZE_QUERY, arrived, 2 * window, modes, SIZE_ENGINES))
        if share == 0.01:
            negation = (f"{n // 1000}k negation", share, NEGATION_QUERY, arrived, 2 * window, every, ("stack",))
    workloads.append(negation)
    year_arrived = year_frames(pd.Timedelta(hours=1))
    workloads.append(("flights year", 1.0, YEAR_QUERY, year_arrived, "1 h", ("kslack", "conservative"), SIZE_ENGINES))
    print(f"  synthetic: {SIZE_QUERY}  (late by up to 2 windows)")
    print(f"  negation: {NEGATION_QUERY}  (the 1 % late stream)")
    print(f"  flights year: {YEAR_QUERY}  (every event late by up to 1 h)")
    print(
        f"{'stream':16} {'late':>5} {'engine':10} {'mode':13} {'matches':>8} {'dropped':>7} {'CPU s':>7} "
        f"{'in order':>8} {'ratio':>6}  run"
    )
    for label, share, query, arrived, bound, modes, engines in workloads:
        # the same events in logical order: ts, then arrival (ties keep their arrival order, as the modes do)
        frame = arrived.sort_values("ts", kind="stable", ignore_index=True)
        for engine in engines:
            mine = [m for m in modes if m != "aggressive" or engine in AGGRESSIVE_AT_SIZE]
            if not mine:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cepkit.match(query, frame.iloc[:2000], engine=engine)  # compiled kernels, imports
            first = cpu_run(query, frame, engine)
            options = {"kslack": {"k": bound}, "conservative": {"max_delay": bound}, "aggressive": {"max_delay": bound}}
            measured = {mode: cpu_run(query, arrived, engine, disorder=mode, **options[mode]) for mode in mine}
            base = min(first[0], cpu_run(query, frame, engine)[0])
            for mode, (seconds, matches, dropped, run) in measured.items():
                assert dropped or matches == first[1], (label, engine, mode, matches, first[1])
                print(
                    f"{label:16} {share:5.2f} {engine:10} {mode:13} {matches:8d} {dropped:7d} {seconds:7.2f} "
                    f"{base:8.2f} {seconds / base:6.1f}  {run}",
                    flush=True,
                )
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--events", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (the best is kept)")
    parser.add_argument("--engines-only", action="store_true", help="only the engines behind the layer")
    parser.add_argument("--size", action="store_true", help="only the run at size (1M events, the flights year)")
    args = parser.parse_args()
    if args.size:
        size_table(args)
        return
    if not args.engines_only:
        stack_grid(args)
    engines_table(args.events or (2000 if args.quick else 4000), args.repeat)


def sorted_truth(query: str, engine: str, arrived: list, repeat: int) -> tuple:
    """(the stream, the sorted stream's order, the truth with arrival positions, in-order matcher ev/s)."""
    n = len(arrived)
    stream = Stream.from_any(arrived)
    order = sorted(range(n), key=lambda p: (stream.times[p], p))
    sorted_stream = Stream.from_any([arrived[p] for p in order])
    in_order = cepkit.match(query, sorted_stream, engine=engine)
    seconds, incremental = best_of(repeat, lambda: in_order_incremental(query, engine, sorted_stream))
    assert sorted(m.key for m in incremental) == sorted(m.key for m in in_order)
    truth = {
        (
            tuple(sorted(order[i] for i in m.positions)),
            tuple(
                sorted(
                    (v, tuple(order[i] for i in x) if isinstance(x, tuple) else order[x]) for v, x in m.bindings.items()
                )
            ),
        )
        for m in in_order
    }
    return stream, truth, n / seconds


def engines_table(n: int, repeat: int) -> None:
    """Each workload x every engine that runs it x each mode, a quarter of the events late by up to 1 or 5
    windows; ratio = throughput / that engine's in-order incremental matcher."""
    rows = []
    for label, query, ids in WORKLOADS:
        q = cepkit.parse(query)
        engines = []
        for engine in registered():
            try:
                select_engine(q, engine.name, {})
            except cepkit.QueryError:
                continue
            if engine.name != "reference":
                engines.append(engine.name)
        if "stack" in engines:
            engines.append("stack+layer")
        for windows in (1, 5):
            arrived = disordered(n, 0.25, windows * WINDOW, ids=ids)
            bound = observed_delay(arrived)
            for engine in tqdm(engines, desc=f"{label}, delay {windows} W"):
                stream, truth, base = sorted_truth(query, engine.split("+")[0], arrived, repeat)
                clock = np.maximum.accumulate(stream.times)
                for mode, options in {
                    "kslack": {"disorder": "kslack", "k": bound},
                    "conservative": {"disorder": "conservative", "max_delay": bound},
                    "aggressive": {"disorder": "aggressive", "max_delay": bound},
                }.items():
                    row = measure(stream, truth, clock, repeat, query, engine, **options)
                    rows.append(
                        {
                            "workload": label,
                            "engine": engine,
                            "delay_windows": windows,
                            "mode": mode,
                            "baseline": base,
                            "matches": len(truth),
                            **row,
                        }
                    )
    print(
        f"\n{n} events per stream, 25 % late by up to D windows; latency in stream seconds; "
        "ratio = throughput / the engine's in-order incremental matcher"
    )
    for label, query, _ in WORKLOADS:
        print(f"  {label}: {query}")
    print(
        f"{'workload':11} {'engine':12} {'D/W':>3} {'mode':13} {'matches':>7} {'latency':>8} {'wait':>6} "
        f"{'state':>6} {'ev/s':>8} {'in-order':>8} {'ratio':>6} {'lost':>5} {'wrong':>5} {'-':>5}"
    )
    for r in rows:
        print(
            f"{r['workload']:11} {r['engine']:12} {r['delay_windows']:3d} {r['mode']:13} {r['matches']:7d} "
            f"{r['latency']:8.1f} {r['wait']:6.1f} {r['state']:6d} {r['throughput']:8.0f} {r['baseline']:8.0f} "
            f"{r['throughput'] / r['baseline']:6.2f} {r['lost']:5d} {r['wrong']:5d} {r['retractions']:5d}"
        )


def stack_grid(args) -> None:
    """The stack engine's own modes over the grid of late shares and delays (and bench/disorder.png)."""
    n = args.events or (4000 if args.quick else 20000)
    shares = [0.0, 0.25, 0.5] if args.quick else [0.0, 0.1, 0.25, 0.5]
    delays = [1, 10] if args.quick else [1, 5, 10]  # in windows
    rows = []
    with tqdm(total=len(shares) * len(delays), desc="disorder grid") as bar:
        for windows in delays:
            for share in shares:
                arrived = disordered(n, share, windows * WINDOW)
                bound = observed_delay(arrived)
                stream, truth, base = sorted_truth(QUERY, "stack", arrived, args.repeat)
                clock = np.maximum.accumulate(stream.times)
                modes = {
                    "kslack K=bound": {"disorder": "kslack", "k": bound},
                    "kslack K=W": {"disorder": "kslack", "k": WINDOW},
                    "conservative": {"disorder": "conservative", "max_delay": bound},
                    "aggressive": {"disorder": "aggressive", "max_delay": bound},
                }
                for mode, options in modes.items():
                    row = measure(stream, truth, clock, args.repeat, **options)
                    rows.append(
                        {
                            "delay_windows": windows,
                            "late_share": share,
                            "mode": mode,
                            "bound": bound,
                            "baseline": base,
                            "matches": len(truth),
                            **row,
                        }
                    )
                bar.update()
    print(
        f"\n{QUERY}\n{n} events per stream; latency in stream seconds; ratio = throughput / in-order incremental matcher"
    )
    print(
        f"{'D/W':>4} {'late':>5} {'mode':16} {'latency':>8} {'p95':>7} {'wait':>6} {'state':>7} {'ev/s':>8} {'ratio':>6} "
        f"{'lost':>6} {'wrong':>6} {'-':>6}"
    )
    for r in rows:
        print(
            f"{r['delay_windows']:4d} {r['late_share']:5.2f} {r['mode']:16} {r['latency']:8.1f} {r['p95']:7.1f} {r['wait']:6.1f} "
            f"{r['state']:7d} {r['throughput']:8.0f} {r['throughput'] / r['baseline']:6.2f} {r['lost']:6d} "
            f"{r['wrong']:6d} {r['retractions']:6d}"
        )
    plot(rows, HERE / "disorder.png")


def plot(rows: list, path: pathlib.Path) -> None:
    """Latency, peak state and throughput ratio against the late share, one column per delay bound."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    delays = sorted({r["delay_windows"] for r in rows})
    metrics = [
        ("latency", "mean latency (stream s)"),
        ("wait", "mean wait (stream s)"),
        ("state", "peak state (instances)"),
        ("ratio", "throughput / in-order"),
    ]
    fig = make_subplots(
        rows=len(metrics),
        cols=len(delays),
        shared_xaxes=True,
        column_titles=[f"delay up to {d} window(s)" for d in delays],
        row_titles=[label for _, label in metrics],
    )
    colors = {"kslack K=bound": "#1f77b4", "kslack K=W": "#aec7e8", "conservative": "#2ca02c", "aggressive": "#d62728"}
    for col, windows in enumerate(delays, start=1):
        for mode, color in colors.items():
            mine = [r for r in rows if r["delay_windows"] == windows and r["mode"] == mode]
            xs = [r["late_share"] for r in mine]
            values = {
                "latency": [r["latency"] for r in mine],
                "wait": [r["wait"] for r in mine],
                "state": [r["state"] for r in mine],
                "ratio": [r["throughput"] / r["baseline"] for r in mine],
            }
            for row, (key, _) in enumerate(metrics, start=1):
                fig.add_trace(
                    go.Scatter(
                        x=xs,
                        y=values[key],
                        name=mode,
                        legendgroup=mode,
                        mode="lines+markers",
                        line={"color": color},
                        showlegend=(row == 1 and col == 1),
                    ),
                    row=row,
                    col=col,
                )
    fig.update_xaxes(title_text="share of late events", row=len(metrics))
    fig.update_layout(
        title=f"stack engine out-of-order modes: {QUERY}",
        width=1200,
        height=1000,
        template="plotly_white",
        title_font_size=12,
    )
    fig.write_image(str(path))
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
