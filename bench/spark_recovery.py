"""Kill-and-restart recovery of ``cepkit.spark.match_stream`` at length, and batch jobs with retried tasks:
every engine that streams, each out-of-order mode that streams, real Spark on local[2].

Per group of cases (one runner process, a streaming query per case over the same file source), the
runner is killed (SIGKILL of its process group, the JVM with it) ``--kills`` times, alternately right after
a batch commits and inside a batch, at batches drawn at random, then run to the end; each case's sink (a
file sink, or ``foreachBatch`` by batch id) must hold exactly batch ``cepkit.spark.match``'s matches: the
lost and duplicated counts are printed (both must be 0). Then ``cepkit.spark.match`` on local[2,3] with
every task of two stages failing on its first attempt, against a run without failures.

    nice -n 10 .venv/bin/python bench/spark_recovery.py [--events 10000 --keys 300 --files 12 --kills 8]

The harness is tests/spark/recovery.py (tests/spark/test_recovery.py runs a few kill points of it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "spark"))
from recovery import MODES, QUERIES, Run, make_events, match_keys  # noqa: E402

import cepkit.spark  # noqa: E402


def groups_of_cases(size: int, engines) -> list:
    """Every engine x mode, each case once, in groups of ``size`` queries per runner (local[2] runs them
    side by side); sinks alternate between the file sink and foreachBatch."""
    cases = [
        [engine, mode, "files" if i % 2 == 0 else "foreach"]
        for i, (engine, mode) in enumerate((e, m) for m in MODES for e in engines)
    ]
    return [cases[i : i + size] for i in range(0, len(cases), size)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=300)
    parser.add_argument("--files", type=int, default=12, help="micro-batches (one source file each)")
    parser.add_argument("--kills", type=int, default=4, help="kill points per group of cases")
    parser.add_argument("--groups", type=int, default=None, help="run only the first N groups")
    parser.add_argument("--group-size", type=int, default=2, help="streaming queries per runner process")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--engines",
        nargs="+",
        default=list(QUERIES),
        choices=list(QUERIES),
        help="the engines to run (default: all that stream)",
    )
    parser.add_argument("--no-batch", action="store_true", help="skip the batch retry check")
    args = parser.parse_args()

    spark = cepkit.spark.session("local[2]", **{"spark.sql.shuffle.partitions": "2"})
    rng = np.random.default_rng(args.seed)
    events = make_events(args.events, args.keys, args.seed)
    total_kills, rows = 0, []
    groups = groups_of_cases(args.group_size, args.engines)[: args.groups]
    with tempfile.TemporaryDirectory(prefix="cepkit-recovery-") as folder:
        for g, cases in enumerate(groups):
            run = Run(Path(folder) / f"group{g}", cases, max_crashes=20)
            run.root.mkdir(parents=True)
            run.prepare(events, files=args.files, seed=args.seed)
            batches = sorted(rng.choice(np.arange(1, args.files - 1), args.kills, replace=args.kills > args.files - 2))
            points = [("boundary" if i % 2 == 0 else "inside", int(b)) for i, b in enumerate(batches)]
            started = time.perf_counter()
            run.kill_and_restart(points, timeout=3600)
            seconds = time.perf_counter() - started
            total_kills += len(run.kills)
            for case in cases:
                query = QUERIES[case[0]]
                committed = match_keys(run.committed(spark, tuple(case)), query)
                truth = match_keys(
                    cepkit.spark.match(query, spark.createDataFrame(run.events), engine=case[0]).toPandas(), query
                )
                lost, extra = sum((truth - committed).values()), sum((committed - truth).values())
                rows.append(
                    {
                        "engine": case[0],
                        "mode": case[1],
                        "sink": case[2],
                        "matches": sum(truth.values()),
                        "kills": len(run.kills),
                        "crashes": run.crashes,
                        "lost": lost,
                        "duplicated": extra,
                        "group s": round(seconds),
                    }
                )
                print(rows[-1], flush=True)
            print("kill points:", run.kills, flush=True)
        table = pd.DataFrame(rows)
        print(table.to_markdown(index=False))
        print(
            f"\n{total_kills} kill-and-restart points; lost {table['lost'].sum()}, duplicated "
            f"{table['duplicated'].sum()}"
        )
        if not args.no_batch:
            run = Run(Path(folder) / "batch", [[engine, "reject", "-"] for engine in args.engines])
            run.root.mkdir(parents=True)
            run.prepare(events, files=2, seed=args.seed)
            with open(run.root / "batch.log", "wb") as log:
                code = run.start("batch", log=log).wait()
            if code != 0:
                print((run.root / "batch.log").read_text()[-3000:])
                raise SystemExit(code)
            results = json.loads((run.root / "results.json").read_text())
            print(pd.DataFrame(results).T.to_markdown())


if __name__ == "__main__":
    main()
