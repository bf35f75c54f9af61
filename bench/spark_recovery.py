"""Kill-and-restart recovery of ``cepkit.spark.match_stream`` and ``cepkit.spark.cube_stream`` at length, and batch
jobs with retried tasks: every engine that streams and the cube (``ecube-cube``), each out-of-order mode that
streams, real Spark on local[2].

Per group of cases (one runner process, a streaming query per case over the same file source), the
runner is killed (SIGKILL of its process group, the JVM with it) ``--kills`` times, alternately right after
a batch commits and inside a batch, at batches drawn at random, then run to the end; each case's sink (a
file sink, or ``foreachBatch`` by batch id) must hold exactly batch ``cepkit.spark.match``'s matches: the
lost and duplicated counts are printed (both must be 0). Then ``cepkit.spark.match`` on local[2,3] with
every task of two stages failing on its first attempt, against a run without failures.

    nice -n 10 .venv/bin/python bench/spark_recovery.py [--events 10000 --keys 300 --files 12 --kills 8]
        [--summary rows.jsonl]          # each finished case appended; run again, it skips those
    .venv/bin/python bench/spark_recovery.py --table rows.jsonl     # bench/README.md's tables

The harness is tests/spark/recovery.py (tests/spark/test_recovery.py runs a few kill points of it).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "spark"))
from recovery import CUBE, MODES, QUERIES, STREAMS, Run, expected_keys, found_keys, make_events  # noqa: E402

import cepkit.spark  # noqa: E402


def groups_of_cases(size: int, engines, modes) -> list:
    """Every engine x mode, each case once, in groups of ``size`` queries per runner (local[2] runs them
    side by side). The i-th case is engine i mod len(engines) in mode i mod len(modes) (coprime counts
    cover every pair), so a group holds several modes and a stopped run has covered each; sinks alternate
    between the file sink and foreachBatch."""
    count = len(engines) * len(modes)
    if math.gcd(len(engines), len(modes)) != 1:
        pairs = [(e, m) for m in modes for e in engines]
    else:
        pairs = [(engines[i % len(engines)], modes[i % len(modes)]) for i in range(count)]
    cases = [[engine, mode, "files" if i % 2 == 0 else "foreach"] for i, (engine, mode) in enumerate(pairs)]
    return [cases[i : i + size] for i in range(0, len(cases), size)]


def revision() -> str:
    """The commit of the cepkit that runs (``git describe`` of its checkout), for the summary."""
    root = Path(cepkit.spark.__file__).resolve().parent.parent.parent
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


def record(summary, row: dict) -> None:
    """Print a finished case's row and append it to the summary (JSON lines): a stopped run keeps it."""
    print(row, flush=True)
    if summary:
        with open(summary, "a") as out:
            out.write(json.dumps(row) + "\n")


def markdown(frame: pd.DataFrame) -> str:
    """A frame as a markdown table (without pandas' optional tabulate)."""
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def table(summary) -> None:
    """The summary's rows as the markdown tables of bench/README.md."""
    rows = [json.loads(line) for line in Path(summary).read_text().splitlines() if line.strip()]
    streams = pd.DataFrame([r for r in rows if r.get("kind") == "stream"])
    if len(streams):
        columns = ["engine", "mode", "sink", "matches", "kills", "crashes", "lost", "duplicated", "group", "group s"]
        print(markdown(streams[columns]))
        kills = streams.drop_duplicates("group")["kills"].sum()
        print(
            f"\n{len(streams)} cases, {kills} kill-and-restart points; lost {streams['lost'].sum()}, "
            f"duplicated {streams['duplicated'].sum()}"
        )
    batches = pd.DataFrame([r for r in rows if r.get("kind") == "batch"])
    if len(batches):
        print(markdown(batches[["engine", "rows", "failures", "equal", "seconds"]]))


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
        default=STREAMS,
        choices=STREAMS,
        help=f"the engines to run (default: all that stream, and {CUBE!r}: cepkit.spark.cube_stream's cube)",
    )
    parser.add_argument(
        "--modes", nargs="+", default=list(MODES), choices=list(MODES), help="the out-of-order modes to run"
    )
    parser.add_argument("--no-batch", action="store_true", help="skip the batch retry check")
    parser.add_argument("--batch-only", action="store_true", help="only the batch retry check")
    parser.add_argument("--summary", help="append each finished case to this file (JSON lines)")
    parser.add_argument("--table", metavar="SUMMARY", help="print a summary's tables and exit")
    args = parser.parse_args()
    if args.table:
        table(args.table)
        return
    done = set()
    if args.summary and Path(args.summary).exists():  # a run started again skips what it recorded
        for line in Path(args.summary).read_text().splitlines():
            row = json.loads(line)
            done.add((row["kind"], row["engine"], row.get("mode")))

    spark = cepkit.spark.session("local[2]", **{"spark.sql.shuffle.partitions": "2"})
    rng = np.random.default_rng(args.seed)
    events = make_events(args.events, args.keys, args.seed)
    total_kills, rows = 0, []
    groups = [] if args.batch_only else groups_of_cases(args.group_size, args.engines, args.modes)[: args.groups]
    commit = revision()
    with tempfile.TemporaryDirectory(prefix="cepkit-recovery-") as folder:
        for g, cases in enumerate(groups):
            if all(("stream", engine, mode) in done for engine, mode, _ in cases):
                continue
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
                committed = found_keys(run.committed(spark, tuple(case)), case[0])
                truth = expected_keys(spark, run.events, case[0])
                lost, extra = sum((truth - committed).values()), sum((committed - truth).values())
                rows.append(
                    {
                        "kind": "stream",
                        "engine": case[0],
                        "mode": case[1],
                        "sink": case[2],
                        "matches": sum(truth.values()),
                        "kills": len(run.kills),
                        "crashes": run.crashes,
                        "lost": lost,
                        "duplicated": extra,
                        "group s": round(seconds),
                        "group": g,
                        "kill points": run.kills,
                        "events": args.events,
                        "keys": args.keys,
                        "files": args.files,
                        "revision": commit,
                    }
                )
                record(args.summary, rows[-1])
            print("kill points:", run.kills, flush=True)
        if rows:
            frame = pd.DataFrame(rows)
            print(markdown(frame.drop(columns=["kill points"])))
            print(
                f"\n{total_kills} kill-and-restart points; lost {frame['lost'].sum()}, duplicated "
                f"{frame['duplicated'].sum()}"
            )
        engines = [e for e in args.engines if e in QUERIES and ("batch", e, None) not in done]  # (no batch cube)
        if not args.no_batch and engines:
            run = Run(Path(folder) / "batch", [[engine, "reject", "-"] for engine in engines])
            run.root.mkdir(parents=True)
            run.prepare(events, files=2, seed=args.seed)
            started = time.perf_counter()
            with open(run.root / "batch.log", "wb") as log:
                code = run.start("batch", log=log).wait()
            if code != 0:
                print((run.root / "batch.log").read_text()[-3000:])
                raise SystemExit(code)
            seconds = round(time.perf_counter() - started)
            for engine, result in json.loads((run.root / "results.json").read_text()).items():
                record(
                    args.summary,
                    {"kind": "batch", "engine": engine, **result, "seconds": seconds, "revision": commit},
                )


if __name__ == "__main__":
    main()
