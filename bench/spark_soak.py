"""Soak of ``cepkit.spark.match_stream``: many keys arriving and leaving over event time, Spark's own state
metrics per micro-batch (issue 25: the state store's size flat after the first windows).

``SEQ(A a, B b) WHERE a.v <= b.v WITHIN 10 s PARTITION BY id``, 100 events per second of event time, types
A-C at random. The keys live in a sliding population: at event i the live keys are ``[f, f + live)`` with
``f = i * (keys - live) / events``, so over the run every one of ``keys`` keys arrives, gets about
``events / keys`` events while it is live, then never comes back; a key's state must go once the watermark
passes its last event by the window. The events are written to Parquet files up front, ``--batch`` events
per file, read one file per micro-batch (``maxFilesPerTrigger=1``) into a file sink.

Printed per micro-batch (and written to ``--out`` as JSON lines as it goes, so a run stopped early still
says how far it got): events read, seconds, the state operator's ``numRowsTotal`` (keys with state),
``memoryUsedBytes`` and the RocksDB SST size (``customMetrics``), rows dropped by the watermark. At the end,
the largest state per quarter of the batches, and the largest after the first quarter against the first's.

    nice -n 10 .venv/bin/python bench/spark_soak.py                      # the full size: 10M events, 1M keys
    nice -n 10 .venv/bin/python bench/spark_soak.py --events 2000000 --keys 200000 --live 2000 --batch 50000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.errors import StreamingQueryException

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "spark"))
from recovery import TRANSIENT  # noqa: E402

import cepkit.spark  # noqa: E402

QUERY = "SEQ(A a, B b) WHERE a.v <= b.v WITHIN 10 s PARTITION BY id"


def write_events(folder: Path, events: int, keys: int, live: int, batch: int, seed: int) -> int:
    """The stream as Parquet files of ``batch`` events each, in order (ts = position / 100); how many."""
    rng = np.random.default_rng(seed)
    files = 0
    for start in range(0, events, batch):
        i = np.arange(start, min(start + batch, events))
        first_live = (i * (keys - live) // max(events - 1, 1)).astype(np.int64)
        frame = pd.DataFrame(
            {
                "type": rng.choice(np.array(list("ABC")), len(i)),
                "ts": i / 100.0,
                "position": i,
                "v": rng.integers(0, 5, len(i)),
                "id": first_live + rng.integers(0, live, len(i)),
            }
        )
        frame.to_parquet(folder / f"{files:06d}.parquet", index=False)
        files += 1
    return files


def watch(query, rows: list, out, started: float) -> None:
    """Append a row per new micro-batch of ``query`` to ``rows`` (and print it, and write it to ``out``) until
    the query stops."""
    last = -1
    while True:
        active = query.isActive
        for progress in query.recentProgress:
            if progress.batchId <= last:
                continue
            last = progress.batchId
            state = progress.stateOperators[0] if progress.stateOperators else None
            custom = dict(state.customMetrics) if state is not None else {}
            row = {
                "batch": progress.batchId,
                "rows": progress.numInputRows,
                "seconds": round(progress.batchDuration / 1000, 2),
                "elapsed": round(time.perf_counter() - started, 1),
                "state_rows": state.numRowsTotal if state else None,
                "state_mb": round(state.memoryUsedBytes / 2**20, 2) if state else None,
                "sst_mb": round(custom["rocksdbSstFileSize"] / 2**20, 2) if "rocksdbSstFileSize" in custom else None,
                "late": state.numRowsDroppedByWatermark if state else None,
            }
            rows.append(row)
            print(row, flush=True)
            out.write(json.dumps(row) + "\n")
            out.flush()
        if not active:
            return
        time.sleep(1)


def report(rows: list) -> None:
    """The state at each quarter of the run (the first quarter holds the first windows), and whether it
    stopped growing: the last three quarters' largest state against the first quarter's."""
    if len(rows) < 8:
        return
    quarters = [rows[len(rows) * q // 4 : len(rows) * (q + 1) // 4] for q in range(4)]
    print(
        "\n| quarter of the batches | batches | state rows (max) | state memory MB (max) | RocksDB SST MB (max) |"
        "\n|---|---|---|---|---|"
    )
    for q, part in enumerate(quarters):
        print(
            f"| {q + 1} | {part[0]['batch']}-{part[-1]['batch']} | "
            f"{max(r['state_rows'] or 0 for r in part):,} | {max(r['state_mb'] or 0 for r in part):.1f} | "
            f"{max(r['sst_mb'] or 0 for r in part):.1f} |"
        )
    first = max(r["state_rows"] or 0 for r in quarters[0])
    later = max(r["state_rows"] or 0 for r in rows[len(rows) // 4 :])
    print(f"\nstate rows: at most {first:,} in the first quarter, {later:,} after it ({later / max(first, 1):.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--live", type=int, default=10_000, help="keys live at any moment")
    parser.add_argument("--batch", type=int, default=100_000, help="events per micro-batch")
    parser.add_argument("--engine", default="stack")
    parser.add_argument("--partitions", type=int, default=4, help="spark.sql.shuffle.partitions")
    parser.add_argument(
        "--write-buffer-mb",
        type=int,
        default=None,
        help="RocksDB's memtable size per column family (Spark's default: RocksDB's 64 MB); "
        "a small one shows the memtables' flushes within a short run",
    )
    parser.add_argument("--out", default="spark_soak.jsonl")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    conf = {"spark.sql.shuffle.partitions": str(args.partitions)}
    if args.write_buffer_mb:
        conf["spark.sql.streaming.stateStore.rocksdb.writeBufferSizeMB"] = str(args.write_buffer_mb)
    spark = cepkit.spark.session("local[2]", **conf)
    out = open(args.out, "w")
    with tempfile.TemporaryDirectory(prefix="cepkit-spark-soak-") as folder:
        root = Path(folder)
        (root / "source").mkdir()
        write_events(root / "source", args.events, args.keys, args.live, args.batch, args.seed)
        schema = "type string, ts double, position long, v long, id long"
        stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(root / "source"))
        found = cepkit.spark.match_stream(QUERY, stream, engine=args.engine, delay=1)
        started = time.perf_counter()
        rows: list = []
        restarts = 0
        while True:
            query = (
                found.writeStream.format("parquet")
                .option("path", str(root / "sink"))
                .option("checkpointLocation", str(root / "checkpoint"))
                .outputMode("append")
                .start()
            )
            watcher = threading.Thread(target=watch, args=(query, rows, out, started), daemon=True)
            watcher.start()
            try:
                query.processAllAvailable()  # every file read, and the no-data batch after the last
                break
            except StreamingQueryException as error:
                # Spark's own 10-s limit on a Python worker connecting back, under load: restart on the
                # checkpoint, as a production job's supervisor would
                if not any(sign in str(error) for sign in TRANSIENT) or restarts >= 20:
                    raise
                restarts += 1
                print(f"[soak] restart {restarts} on the checkpoint: {str(error).splitlines()[0][:160]}", flush=True)
            finally:
                query.stop()
                watcher.join()
        report(rows[:-1] if rows and not rows[-1]["rows"] else rows)
        matches = spark.read.parquet(str(root / "sink")).count()
        summary = {
            "events": args.events,
            "keys": args.keys,
            "live": args.live,
            "batches": len(rows),
            "restarts": restarts,
            "matches": matches,
            "seconds": round(time.perf_counter() - started, 1),
            "events/s": round(args.events / (time.perf_counter() - started)),
        }
        print(summary)
        out.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
