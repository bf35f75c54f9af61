"""Soak of ``cepkit.spark.match_stream``: many keys arriving and leaving over event time, Spark's own state
metrics per micro-batch (issue 25: the state store's size flat after the first windows).

``SEQ(A a, B b) WHERE a.v <= b.v WITHIN 10 s PARTITION BY id``, 100 events per second of event time, types
A-C at random. The keys live in a sliding population: at event i the live keys are
``[i * keys / events, i * keys / events + live)``, so over the run every one of ``keys`` keys arrives, gets
about ``events * live / keys / live``... events for a while, then never comes back; a key's state must go
once the watermark passes its last event by the window. The events are written to Parquet files up front,
``--batch`` events per file, read one file per micro-batch (``maxFilesPerTrigger=1``) into a file sink.

Printed per micro-batch (and written to ``--out`` as JSON lines as it goes, so a run stopped early still
says how far it got): events read, seconds, the state operator's ``numRowsTotal`` (keys with state),
``memoryUsedBytes`` and the RocksDB SST size (``customMetrics``), rows dropped by the watermark.

    nice -n 10 .venv/bin/python bench/spark_soak.py --events 10000000 --keys 1000000 --live 10000
    nice -n 10 .venv/bin/python bench/spark_soak.py --events 1000000 --keys 100000 --live 2000   # smaller
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import cepkit.spark

QUERY = "SEQ(A a, B b) WHERE a.v <= b.v WITHIN 10 s PARTITION BY id"


def write_events(folder: Path, events: int, keys: int, live: int, batch: int, seed: int) -> int:
    """The stream as Parquet files of ``batch`` events each, in order (ts = position / 100)."""
    rng = np.random.default_rng(seed)
    files = 0
    for start in range(0, events, batch):
        i = np.arange(start, min(start + batch, events))
        first_live = (i * (keys - live) // max(events - 1, 1)).astype(np.int64)
        frame = pd.DataFrame({"type": rng.choice(np.array(list("ABC")), len(i)), "ts": i / 100.0, "position": i,
                              "v": rng.integers(0, 5, len(i)), "id": first_live + rng.integers(0, live, len(i))})
        frame.to_parquet(folder / f"{files:06d}.parquet", index=False)
        files += 1
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--live", type=int, default=10_000, help="keys live at any moment")
    parser.add_argument("--batch", type=int, default=100_000, help="events per micro-batch")
    parser.add_argument("--engine", default="stack")
    parser.add_argument("--partitions", type=int, default=4, help="spark.sql.shuffle.partitions")
    parser.add_argument("--out", default="spark_soak.jsonl")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    spark = cepkit.spark.session("local[2]", **{"spark.sql.shuffle.partitions": str(args.partitions)})
    out = open(args.out, "w")
    with tempfile.TemporaryDirectory(prefix="cepkit-spark-soak-") as folder:
        root = Path(folder)
        (root / "source").mkdir()
        files = write_events(root / "source", args.events, args.keys, args.live, args.batch, args.seed)
        schema = "type string, ts double, position long, v long, id long"
        stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(root / "source"))
        found = cepkit.spark.match_stream(QUERY, stream, engine=args.engine, delay=1)
        query = (found.writeStream.format("parquet").option("path", str(root / "sink"))
                 .option("checkpointLocation", str(root / "checkpoint")).outputMode("append").start())
        started, last = time.perf_counter(), -1
        try:
            while query.isActive:
                for progress in query.recentProgress:
                    if progress.batchId <= last:
                        continue
                    last = progress.batchId
                    state = progress.stateOperators[0] if progress.stateOperators else None
                    custom = dict(state.customMetrics) if state is not None else {}
                    row = {"batch": progress.batchId, "rows": progress.numInputRows,
                           "seconds": round(progress.batchDuration / 1000, 2),
                           "elapsed": round(time.perf_counter() - started, 1),
                           "state_rows": state.numRowsTotal if state else None,
                           "state_mb": round(state.memoryUsedBytes / 2**20, 2) if state else None,
                           "sst_mb": round(custom["rocksdbSstFileSize"] / 2**20, 2)
                           if "rocksdbSstFileSize" in custom else None,
                           "late": state.numRowsDroppedByWatermark if state else None}
                    print(row, flush=True)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                progress = query.lastProgress
                if progress is not None and progress.batchId >= files and progress.numInputRows == 0:
                    break
                time.sleep(2)
        finally:
            query.stop()
        matches = spark.read.parquet(str(root / "sink")).count()
        summary = {"events": args.events, "keys": args.keys, "live": args.live, "matches": matches,
                   "seconds": round(time.perf_counter() - started, 1)}
        print(summary)
        out.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
