"""MATCH_RECOGNIZE on pandas: rows per second of ``cepkit.sql`` end to end (sort, DEFINE, matching,
MEASURES, the output DataFrame), beside baselines measured in the same run: pandas sorting the same
rows (the floor any engine pays) and the reference backtracking matcher (rows per second on a slice).

    python bench/match_recognize.py [--rows 1000000] [--keys 100]
    python bench/match_recognize.py --spark [--copies 1 4]   # the flights year: Spark local[2] beside cepkit.sql
    python bench/match_recognize.py --flink PY   # PyFlink's MATCH_RECOGNIZE (PY: a python with apache-flink)

CPU seconds of this process (``time.process_time``), best of 3: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

import cepkit
from cepkit.match_recognize import find, parse
from streams import best_of

QUERIES = {
    "V-shape A B+ C": """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
        MEASURES FIRST(A.ts) AS start_ts, LAST(B.price) AS low, C.price AS back, COUNT(B.*) AS falls
        PATTERN (A B+ C) DEFINE B AS price < PREV(price), C AS price > PREV(price) + 5)""",
    "sequence A B C": """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
        MEASURES A.ts AS a, C.ts AS c
        PATTERN (A B C) DEFINE A AS price > 105, B AS price < PREV(price), C AS price > PREV(price))""",
    "all rows, A B+": """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
        MEASURES MATCH_NUMBER() AS n, CLASSIFIER() AS var, RUNNING AVG(B.price) AS avg_b
        ALL ROWS PER MATCH PATTERN (A B+) DEFINE A AS price > 108, B AS price < PREV(price))""",
}


def rows(n: int, keys: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"id": rng.integers(0, keys, n), "ts": np.arange(n), "price": (100 + rng.normal(0, 5, n)).round(2)}
    )


FLIGHTS = """SELECT * FROM flights MATCH_RECOGNIZE (PARTITION BY origin ORDER BY ts
    MEASURES W.ts AS weather_at, W.type AS weather, COUNT(D.*) AS delayed, AVG(D.dep_delay) AS mean_delay
    PATTERN (W D{5,}) WITHIN INTERVAL '3' HOUR
    DEFINE W AS type IN ('FOG', 'STORM', 'SNOW'), D AS type = 'DELAYED_DEPARTURE')"""


def spark_side_by_side(copies: int = 1) -> None:
    """The flights year (weather and departures; ``copies`` times over, as ``flight_events(replicate=)``
    makes it), at rest in a Parquet file Spark reads and as the pandas frame ``cepkit.sql`` reads: Spark on
    local[2] against cepkit.sql in this process (one thread), best of 3 interleaved runs after a warm-up
    run of each (the first Spark job starts the Python workers), in wall clock (what a user waits) and in
    CPU seconds of the process tree (this process, the JVM, Spark's Python workers; on a shared machine a
    run's wall clock is partly its wait for a core). ``cepkit.spark.sql`` as a user calls it (the way it
    picks for this input named), then each of its ways forced: one task without a shuffle, shuffled by key,
    and on a table bucketed by the key (no shuffle, one call per key). Beside them, Spark's own floors for
    the same rows: the shuffle alone (no Python), the shuffle and the Arrow transfer to Python and back (a
    no-op ``mapInArrow``), and the same transfer in one task without a shuffle."""
    import tempfile

    import cepkit.spark
    from cepkit.spark.recognize import read_columns, small
    from spark import best_wall_and_cpu

    year = cepkit.datasets.flight_events(replicate=copies)
    frame = year[year.type.isin(["FOG", "STORM", "SNOW", "RAIN", "FAIR", "DELAYED_DEPARTURE", "ON_TIME_DEPARTURE"])]
    frame = frame.reset_index(drop=True)
    del year
    folder = tempfile.mkdtemp()
    spark = cepkit.spark.session(
        "local[2]", **{"spark.sql.warehouse.dir": f"{tempfile.gettempdir()}/cepkit-bench-warehouse"}
    )
    frame.to_parquet(f"{folder}/rows.parquet", index=False, coerce_timestamps="us", allow_truncated_timestamps=True)
    remote = spark.read.parquet(f"{folder}/rows.parquet")
    query = parse(FLIGHTS)
    read = remote.select(*[c for c in remote.columns if c in read_columns(query)])
    read.write.bucketBy(4, "origin").option("path", f"{folder}/bucketed").saveAsTable("flights_by_origin")
    bucketed = spark.table("flights_by_origin")
    way = "one task" if small(read) else "shuffled"

    def nothing(batches):
        for _ in batches:
            pass
        return iter(())

    runs = {
        "cepkit.sql (pandas, one thread)": lambda: cepkit.sql(query, frame),
        f"cepkit.spark.sql (picks: {way})": lambda: cepkit.spark.sql(query, remote).collect(),
        "cepkit.spark.sql, one task": lambda: cepkit.spark.sql(query, remote, one_task=True).collect(),
        "cepkit.spark.sql, shuffled by key": lambda: cepkit.spark.sql(query, remote, one_task=False).collect(),
        "cepkit.spark.sql, table bucketed by key": lambda: cepkit.spark.sql(query, bucketed, one_task=False).collect(),
        "floor: the shuffle alone": lambda: read.repartition("origin").count(),
        "floor: shuffle + Arrow to Python": lambda: (
            read.repartition("origin").mapInArrow(nothing, read.schema).collect()
        ),
        "floor: one task + Arrow to Python": lambda: read.coalesce(1).mapInArrow(nothing, read.schema).collect(),
    }
    for run in runs.values():  # warm-up: the JVM's first jobs, the workers' imports and kernels
        run()
    timed: dict = {name: [] for name in runs}
    for _ in range(3):  # interleaved, so that a busy moment of the machine does not fall on one run only
        for name, run in runs.items():
            timed[name].append(best_wall_and_cpu(1, run))
    figures = {
        name: (min(t[0] for t in times), min(t[1] for t in times), times[-1][2]) for name, times in timed.items()
    }
    spark.sql("DROP TABLE flights_by_origin")
    local_wall, local_cpu, local = figures["cepkit.sql (pandas, one thread)"]
    for name, (_, _, out) in figures.items():
        assert not name.startswith("cepkit.spark.sql") or len(out) == len(local), name
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{len(frame):,} rows ({copies} x the year), {len(local)} matches; Spark on local[2], rows read from "
        f"Parquet ({read_size(read) / 2**20:.1f} MB by Spark's estimate); load average {load} at the end"
    )
    print("| run | wall s | CPU s | wall / local | CPU / local |")
    print("|---|---|---|---|---|")
    for name, (wall, cpu, _) in figures.items():
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {wall / local_wall:.1f} | {cpu / local_cpu:.1f} |")


def read_size(frame) -> int:
    """Spark's estimate of ``frame``'s size in bytes (what ``cepkit.spark.recognize.small`` compares)."""
    return int(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())


# Flink takes no physical offsets (PREV) in DEFINE: the V-shape written with logical ones (LAST(B.price, 1),
# the B before), which means the same here since the rows of A B+ C are contiguous. DEFINE reads other
# variables' rows: the VM runs it with per-thread registers.
FLINK_QUERY = """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
    MEASURES FIRST(A.ts) AS start_ts, LAST(B.price) AS low, C.price AS back, COUNT(B.price) AS falls
    ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
    PATTERN (A B+ C)
    DEFINE B AS (LAST(B.price, 1) IS NULL AND B.price < A.price) OR B.price < LAST(B.price, 1),
           C AS C.price > LAST(B.price) + 5)"""

QUERIES["V-shape, logical offsets (Flink's)"] = FLINK_QUERY
# A running aggregate in DEFINE: the VM's registers hold B's count and sum so far.
QUERIES["V-shape, AVG(B.price) in DEFINE"] = """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
    MEASURES FIRST(A.ts) AS start_ts, LAST(B.price) AS low, C.price AS back, COUNT(B.*) AS falls
    PATTERN (A B+ C) DEFINE B AS price < PREV(price) AND AVG(B.price) > 95, C AS price > PREV(price) + 5)"""

FLINK_JOB = """
import sys, time
from pyflink.table import EnvironmentSettings, TableEnvironment
csv, out, query = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
env.get_config().set("parallelism.default", "1")
env.execute_sql(f\"\"\"CREATE TABLE t (id BIGINT, ts TIMESTAMP(3), price DOUBLE, WATERMARK FOR ts AS ts)
    WITH ('connector' = 'filesystem', 'path' = '{csv}', 'format' = 'csv')\"\"\")
start = time.perf_counter()
with env.execute_sql(query).collect() as rows, open(out, "w") as sink:
    for row in rows:
        sink.write(f"{row[0]},{row[1].isoformat(sep=' ')},{row[2]!r},{row[3]!r},{row[4]}\\n")
print(time.perf_counter() - start)
"""


def flink_side_by_side(python: str, n: int) -> None:
    """The same rows and query through PyFlink's MATCH_RECOGNIZE (a subprocess in its own environment:
    apache-flink pins its own pandas and pyarrow) and through ``cepkit.sql``: the rows out must be equal."""
    import subprocess
    import tempfile
    from pathlib import Path

    frame = rows(n, 20)
    frame["ts"] = pd.Timestamp("2024-01-01") + pd.to_timedelta(frame["ts"], unit="s")
    with tempfile.TemporaryDirectory() as tmp:
        csv, out, query = Path(tmp, "rows.csv"), Path(tmp, "flink.csv"), Path(tmp, "query.sql")
        frame.to_csv(csv, header=False, index=False, date_format="%Y-%m-%d %H:%M:%S")
        query.write_text(FLINK_QUERY)
        job = Path(tmp, "job.py")
        job.write_text(FLINK_JOB)
        start = time.perf_counter()
        done = subprocess.run([python, str(job), str(csv), str(out), str(query)], capture_output=True, text=True)
        flink_wall = time.perf_counter() - start
        if done.returncode:
            raise SystemExit(
                next((line for line in done.stderr.splitlines() if "Exception:" in line), done.stderr[-3000:])
            )
        flink_query_s = float(done.stdout.strip().splitlines()[-1])
        flink = pd.read_csv(out, names=["id", "start_ts", "low", "back", "falls"], parse_dates=["start_ts"])
    cepkit.sql(FLINK_QUERY, frame.head(1000))
    local_s, local = best_of(3, lambda: cepkit.sql(FLINK_QUERY, frame))
    key = ["id", "start_ts"]
    flink = flink.sort_values(key).reset_index(drop=True)
    local = local.sort_values(key).reset_index(drop=True)
    same = len(flink) == len(local) and all(
        np.allclose(flink[c].astype(float), local[c].astype(float))
        if c not in key[1:]
        else (flink[c].values == local[c].values).all()
        for c in flink.columns
    )
    print(
        "| rows | matches (Flink / cepkit) | same rows | PyFlink query s | PyFlink with JVM start s | "
        "cepkit.sql s | Flink / cepkit |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {n:,} | {len(flink):,} / {len(local):,} | {same} | {flink_query_s:.2f} | {flink_wall:.2f} | "
        f"{local_s:.3f} | {flink_query_s / local_s:.0f}x |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--slice", type=int, default=20_000, help="rows for the reference matcher")
    parser.add_argument("--spark", action="store_true", help="the flights year on Spark beside local")
    parser.add_argument(
        "--copies",
        type=int,
        nargs="+",
        default=[1],
        help="with --spark: the year this many times over (one table each)",
    )
    parser.add_argument("--flink", metavar="PYTHON", help="a python with apache-flink: PyFlink beside cepkit")
    args = parser.parse_args()
    if args.flink:
        flink_side_by_side(args.flink, min(args.rows, 50_000))
        return
    if args.spark:
        for copies in args.copies:
            spark_side_by_side(copies)
        return
    frame = rows(args.rows, args.keys)
    clock = time.process_time
    sort_s, _ = best_of(3, lambda: frame.sort_values(["id", "ts"], kind="stable"), clock)
    print(f"{args.rows:,} rows, {args.keys} keys; pandas sort_values(id, ts): {sort_s:.3f} s")
    print("| query | matches | output rows | cepkit.sql s | rows/s | sort / sql | vm / reference (per row) |")
    print("|---|---|---|---|---|---|---|")
    for name, text in QUERIES.items():
        cepkit.sql(text, frame.head(1000))  # compile the kernel once
        seconds, out = best_of(3, lambda: cepkit.sql(text, frame), clock)
        matched = find(parse(text), frame)
        part = frame.head(args.slice)
        ref_s, _ = best_of(1, lambda: find(parse(text), part, "reference"), clock)
        vm_s, _ = best_of(3, lambda: find(parse(text), part, "vm"), clock)
        print(
            f"| {name} | {len(matched):,} | {len(out):,} | {seconds:.3f} | {args.rows / seconds / 1e6:.2f} M | "
            f"{sort_s / seconds:.2f} | {ref_s / vm_s:.0f}x |"
        )


if __name__ == "__main__":
    main()
