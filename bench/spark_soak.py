"""Soak of ``cepkit.spark.match_stream``: many keys arriving and leaving over event time, Spark's own state
metrics per micro-batch (issue 25: the state store's size flat after the first windows).

``SEQ(A a, B b) WHERE a.v <= b.v WITHIN 10 s PARTITION BY id``, 100 events per second of event time, types
A-C at random. The keys live in a sliding population: at event i the live keys are ``[f, f + live)`` with
``f = i * (keys - live) / events``, so over the run every one of ``keys`` keys arrives, gets about
``events / keys`` events while it is live, then never comes back; a key's state must go once the watermark
passes its last event by the window. The events are written to Parquet files up front, ``--batch`` events
per file, read one file per micro-batch (``maxFilesPerTrigger=1``) into a file sink.

Printed per micro-batch (and written to ``--out`` as JSON lines as it goes, with all of Spark's
``customMetrics``, so a run stopped early still says how far it got): events read, seconds, the state
operator's ``numRowsTotal`` (keys with state), ``memoryUsedBytes`` and the RocksDB SST size, rows dropped by
the watermark. At the end (or from saved JSON lines with ``--table``), per quarter of the batches: events
read, seconds per batch, the state rows, RocksDB's memory and SST size, the block cache's hits and misses,
and whether each is flat after the first windows (the last quarter against the second).

    nice -n 10 .venv/bin/python bench/spark_soak.py                      # the full size: 10M events, 1M keys
    nice -n 10 .venv/bin/python bench/spark_soak.py --events 2000000 --keys 200000 --live 2000 --batch 50000
    .venv/bin/python bench/spark_soak.py --table spark_soak.jsonl          # the report of a saved run
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
            out.write(json.dumps(row | {"custom": custom}) + "\n")
            out.flush()
        if not active:
            return
        time.sleep(1)


def report(rows: list) -> None:
    """Per quarter of the batches (the first holds the first windows): the events read by its end, the
    seconds per batch, Spark's state metrics (the largest in the quarter, and at its last batch), and
    whether they stopped growing after the first windows: the last quarter's largest against the second
    quarter's. RocksDB's ``memoryUsedBytes`` is its memtables, table readers and block cache; the block
    cache hits and misses (``customMetrics``) say how much of it is a cache that fills up to its size."""
    rows = [r for r in rows if r.get("rows")]  # not the data-less batch after the last input
    if len(rows) < 8:
        return
    quarters = [rows[len(rows) * q // 4 : len(rows) * (q + 1) // 4] for q in range(4)]
    print(
        "\n| quarter | batches | events read | s/batch (median) | state rows (max / last) "
        "| memoryUsedBytes MB (max / last) | SST MB (max / last) | block cache hits / misses |"
        "\n|---|---|---|---|---|---|---|---|"
    )
    for q, part in enumerate(quarters):
        last = part[-1]
        read = sum(r["rows"] for r in rows[: rows.index(last) + 1])
        custom = [r.get("custom", {}) for r in part]
        hits = sum(c.get("rocksdbReadBlockCacheHitCount", 0) for c in custom)
        misses = sum(c.get("rocksdbReadBlockCacheMissCount", 0) for c in custom)
        print(
            f"| {q + 1} | {part[0]['batch']}-{last['batch']} | {read:,} | "
            f"{float(np.median([r['seconds'] for r in part])):.0f} | "
            f"{max(r['state_rows'] or 0 for r in part):,} / {last['state_rows'] or 0:,} | "
            f"{max(r['state_mb'] or 0 for r in part):.1f} / {last['state_mb'] or 0:.1f} | "
            f"{max(r['sst_mb'] or 0 for r in part):.1f} / {last['sst_mb'] or 0:.1f} | {hits:,} / {misses:,} |"
        )
    for name, field in [("state rows", "state_rows"), ("memoryUsedBytes MB", "state_mb"), ("SST MB", "sst_mb")]:
        # after the first windows: the last quarter's largest against the second's (compactions make the
        # SST size swing within a quarter, so the largest, not the last)
        second, fourth = (max(r[field] or 0 for r in quarters[q]) for q in (1, 3))
        verdict = "flat" if fourth <= 1.1 * second else "growing"
        print(f"{name}: at most {second:,} in the second quarter, {fourth:,} in the last ({verdict})")


def table(path: str) -> None:
    """The report of a saved run's JSON lines (a run stopped early included)."""
    with open(path) as lines:
        rows = [row for row in map(json.loads, lines) if "batch" in row]
    report(rows)
    done = [r for r in rows if r.get("rows")]
    print(f"{sum(r['rows'] for r in done):,} events in {len(done)} batches, {rows[-1]['elapsed']:,} s")


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
    parser.add_argument(
        "--block-cache-mb",
        type=int,
        default=None,
        help="RocksDB's block cache per state store instance (Spark's default: 8 MB)",
    )
    parser.add_argument("--out", default="spark_soak.jsonl")
    parser.add_argument("--table", metavar="JSONL", help="print the report of a saved run's JSON lines and exit")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.table:
        table(args.table)
        return

    conf = {"spark.sql.shuffle.partitions": str(args.partitions)}
    if args.write_buffer_mb:
        conf["spark.sql.streaming.stateStore.rocksdb.writeBufferSizeMB"] = str(args.write_buffer_mb)
    if args.block_cache_mb:
        conf["spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB"] = str(args.block_cache_mb)
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
        report(rows)
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
