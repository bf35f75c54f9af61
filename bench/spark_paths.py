"""The user's paths through ``cepkit.spark`` at full size, beside the local run (``cepkit.match``) in the same
process: Spark jobs per call, wall and CPU seconds.

The flights year (``cepkit.datasets.flight_events()``, ~690k events) and one query (``--query``, one of
``bench/spark.py``.s written as text; default ``origin``) through:

- ``local``: ``cepkit.match(query, events).positions()`` (CPU: this process);
- ``match pandas``: ``cepkit.spark.match(query, events).toPandas()``, the pandas frame handed over;
- ``match parquet``: the same of ``spark.read.parquet`` of the year written once, in time order;
- ``match spark df``: the same of ``spark.createDataFrame(events)`` (a Spark DataFrame in memory);
- ``workbench run``: ``Workbench(spark.read.parquet(...), query=...).run()`` (``widgets.on_spark``: the
  events numbered by ``with_positions`` at the first run, the match, its count, the timeline's sample);
- ``stream 20 files``: ``cepkit.spark.match_stream`` over the year in 20 Parquet files, one a micro-batch
  (``availableNow``), the matches counted by ``foreachBatch``: every batch's jobs (the query's job group).

Each Spark row is one call after a warm-up (``--repeat`` keeps the best); CPU of the process tree (the
driver, the JVM, the Python workers); the match counts must equal the local one.
``MATCH_RECOGNIZE`` (``cepkit.spark.sql``) has its own bench: ``bench/match_recognize.py --spark``.

    nice -n 10 .venv/bin/python bench/spark_paths.py            # the table in bench/README.md
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cepkit  # noqa: E402
import cepkit.spark  # noqa: E402
from cepkit.datasets import flight_events  # noqa: E402
from spark import QUERIES, spark_session, tree_cpu  # noqa: E402


def measured(spark, fn, repeat: int) -> tuple:
    """(jobs, best wall s, best CPU s, result) of ``fn()``: jobs of a job group of its own plus those ``fn``
    returns the groups of (its result's second item, a list of job groups)."""
    context = spark.sparkContext
    best = None
    for run in range(repeat):
        group = f"paths-{time.monotonic_ns()}"
        context.setJobGroup(group, group)
        start, cpu = time.perf_counter(), tree_cpu()
        result, groups = fn()
        wall, cpu = time.perf_counter() - start, tree_cpu() - cpu
        context.setLocalProperty("spark.jobGroup.id", None)
        jobs = sum(len(context.statusTracker().getJobIdsForGroup(g)) for g in [group, *groups])
        if best is None or wall < best[1]:
            best = (jobs, wall, cpu, result)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--query", choices=[name for name, q in QUERIES.items() if isinstance(q, str)], default="origin"
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--files", type=int, default=20, help="files of the streamed year (default 20)")
    args = parser.parse_args()
    query = QUERIES[args.query]
    events = flight_events()
    start, cpu = time.perf_counter(), time.process_time()
    local = cepkit.match(query, events).positions()
    rows = [("local", 0, time.perf_counter() - start, time.process_time() - cpu, len(local))]

    spark = spark_session("auto")
    warnings.simplefilter("ignore", cepkit.spark.OneGroupWarning)
    with tempfile.TemporaryDirectory() as folder:
        year = str(Path(folder) / "year.parquet")
        events.to_parquet(year, index=False, coerce_timestamps="us")
        inputs = {
            "match pandas": lambda: events,
            "match parquet": lambda: spark.read.parquet(year),
            "match spark df": lambda: spark.createDataFrame(events),
        }
        for label, made in inputs.items():
            jobs, wall, spent, found = measured(
                spark, lambda: (cepkit.spark.match(query, made()).toPandas(), []), args.repeat
            )
            assert sorted(tuple(p) for p in found["positions"]) == sorted(local), label
            rows.append((label, jobs, wall, spent, len(found)))

        from cepkit.widgets import Workbench

        def workbench():
            wb = Workbench(spark.read.parquet(year), query=query)
            return wb.run(), [wb.job.tag]

        jobs, wall, spent, count = measured(spark, workbench, args.repeat)
        assert count == len(local), (count, len(local))
        rows.append(("workbench run", jobs, wall, spent, count))

        source = Path(folder) / "stream"
        source.mkdir()
        numbered = events.assign(position=range(len(events)))
        size = -(-len(events) // args.files)
        for i in range(args.files):
            numbered.iloc[i * size : (i + 1) * size].to_parquet(
                source / f"{i:03d}.parquet", index=False, coerce_timestamps="us"
            )
        schema = spark.read.parquet(str(source)).schema

        def stream():
            counts: list = []
            reader = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(source))
            found = cepkit.spark.match_stream(query, reader)
            checkpoint = tempfile.mkdtemp(dir=folder)
            running = (
                found.writeStream.foreachBatch(lambda df, _: counts.append(df.count()))
                .option("checkpointLocation", checkpoint)
                .trigger(availableNow=True)
                .start()
            )
            running.awaitTermination()
            return sum(counts), [str(running.runId)]

        jobs, wall, spent, count = measured(spark, stream, args.repeat)
        assert count == len(local), (count, len(local))
        rows.append((f"stream {args.files} files", jobs, wall, spent, count))

    print(f"\nload average {os.getloadavg()[0]:.1f}; query {args.query}; {len(events):,} events")
    local_wall, local_cpu = rows[0][2], rows[0][3]
    print(f"{'path':>16} {'jobs':>5} {'wall s':>7} {'/local':>7} {'CPU s':>7} {'/local':>7} {'matches':>8}")
    for label, jobs, wall, spent, count in rows:
        print(
            f"{label:>16} {jobs:>5} {wall:>7.2f} {wall / local_wall:>7.1f} {spent:>7.2f} "
            f"{spent / local_cpu:>7.1f} {count:>8,}"
        )


if __name__ == "__main__":
    main()
