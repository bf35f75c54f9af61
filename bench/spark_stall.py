"""What ``cepkit.spark.supervise`` costs, and how long a stalled batch takes to recover: real Spark, local[2].

Three runs of the same stream (``match_stream``, stack engine, file source read one file per micro-batch,
Spark's file sink with a checkpoint), each in a fresh folder, after a warm-up run that is not counted:

- ``plain``: the query started as is (``writer.start()``): the baseline;
- ``supervised``: started by ``supervise(writer, every=1)``, no stall: the cost of the looks;
- ``stalled``: supervised, with a step before the matching that blocks for ever on its first attempt at
  the second micro-batch (as a ``transformWithStateInPandas`` task whose state server went away does):
  the run takes ``stall_after`` more, plus the restart (stopping the query, starting it, its first batch).

Each run must commit exactly ``cepkit.match``'s matches (``equal``). Printed per run: wall clock, its ratio
to ``plain`` of the same run, restarts, matches; for ``stalled`` the restart's own cost (its wall clock
less ``supervised``'s and less the ``stall_after`` waited). Figures are the same run's (the machine is
shared): read the ratios, and the load printed with them.

    nice -n 10 .venv/bin/python bench/spark_stall.py [--events 4000 --keys 50 --files 4 --stall-after 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "spark"))
from recovery import QUERIES, SPARK_CONF, found_keys, make_events, settled  # noqa: E402
from test_stalled_stream import local_keys, stream_case  # noqa: E402

import cepkit.spark  # noqa: E402


def one_run(spark, root: Path, events, files: int, how: str, stall_after: float) -> dict:
    run, writer, _ = stream_case(spark, root, events, files, stall=how == "stalled")
    started = time.perf_counter()
    if how == "plain":
        query = writer.start()
    else:
        query = cepkit.spark.supervise(writer, stall_after=stall_after, every=1)
    try:
        query.processAllAvailable()
        settled(query)
    finally:
        query.stop()
    wall = time.perf_counter() - started
    committed = found_keys(spark.read.parquet(str(root / "sink")).toPandas(), "stack")
    truth = local_keys(run.events, QUERIES["stack"])
    return {
        "run": how,
        "wall": wall,
        "restarts": getattr(query, "restarts", 0),
        "matches": sum(committed.values()),
        "equal": committed == truth,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4000)
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--stall-after", type=float, default=20.0)
    args = parser.parse_args()
    spark = cepkit.spark.session("local[2]", **SPARK_CONF)
    events = make_events(args.events, args.keys, seed=7)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for how in ("warm-up", "plain", "supervised", "stalled"):
            row = one_run(
                spark, Path(folder) / how, events, args.files, how.replace("warm-up", "plain"), args.stall_after
            )
            if how != "warm-up":
                rows.append(row)
    spark.stop()
    base = {row["run"]: row["wall"] for row in rows}
    print(
        f"{args.events:,} events, {args.keys} keys, {args.files} micro-batches, stall_after {args.stall_after:g} s; "
        f"load {os.getloadavg()[0]:.1f} at the end"
    )
    print("| run | wall s | / plain | restarts | matches | equal |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(
            f"| {row['run']} | {row['wall']:.1f} | {row['wall'] / base['plain']:.2f} | {row['restarts']} "
            f"| {row['matches']:,} | {row['equal']} |"
        )
    restart = base["stalled"] - base["supervised"] - args.stall_after
    print(f"the restart itself (stalled - supervised - stall_after): {restart:.1f} s")
    if not all(row["equal"] for row in rows):
        raise SystemExit("a run did not commit exactly cepkit.match's matches")


if __name__ == "__main__":
    main()
