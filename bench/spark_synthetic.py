"""A synthetic stream of up to 100 M events through ``cepkit.spark.match`` on local[2], with bounded memory
(issue 25): events/s per core, the peak memory of the driver's JVM and of the Python workers.

The events are generated where they are read, by ``spark.range`` and hashes of each row's number (a type
of A-D, ``v`` in 0..99, a key ``k`` of ``--keys``, 1,000 events per second of event time): nothing is
materialized on the driver, and the input is read again by each job rather than checkpointed
(``cepkit.spark.batch.rereadable``). The matches are counted, not collected. ``--shuffle`` partitions
(default: one per million events) bound what one Python worker holds: a partition's events at once.

Before it, the same generator's first ``--check`` events are matched by Spark and by the local engine
(``cepkit.match``): the matches must be equal, and the local engine's events/s is the baseline.

    nice -n 10 .venv/bin/python bench/spark_synthetic.py --events 20000000                 # ~10 min here
    nice -n 10 .venv/bin/python bench/spark_synthetic.py --events 100000000 --driver-memory 2g   # the full run
"""

from __future__ import annotations

import argparse
import threading
import time

import psutil
from pyspark.sql import functions as F

import cepkit
import cepkit.spark

QUERY = "SEQ(A a, B b) WHERE a.v = b.v WITHIN 10 s PARTITION BY k"
RATE = 1000.0  # events per second of event time


def synthetic(spark, events: int, keys: int, partitions: int, seed: int = 1):
    """``events`` events as a Spark DataFrame generated per partition: ``type``, ``ts`` (seconds), ``v``, ``k``."""
    rows = spark.range(0, events, numPartitions=partitions)

    def draw(salt: int, n: int):
        return F.pmod(F.xxhash64(F.col("id"), F.lit(seed * 100 + salt)), F.lit(n))

    types = F.array(*[F.lit(t) for t in "ABCD"])
    return rows.select(
        F.element_at(types, (draw(1, 4) + 1).cast("int")).alias("type"),
        (F.col("id") / F.lit(RATE)).alias("ts"),
        draw(2, 100).alias("v"),
        draw(3, keys).alias("k"),
    )


class PeakMemory:
    """The peak resident memory of this process's JVM and of the Python workers (its descendants), sampled,
    and the CPU seconds they used (per process, its last sample; the machine is shared, so events per CPU
    second is the figure that does not depend on the load)."""

    def __init__(self, every: float = 0.5):
        self.jvm = self.workers = 0
        self._cpu: dict = {}
        self._before = self._cpu_now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(every,), daemon=True)
        self._thread.start()

    @staticmethod
    def _cpu_now() -> dict:
        found = {}
        for child in psutil.Process().children(recursive=True):
            try:
                times = child.cpu_times()
                found[child.pid] = times.user + times.system + times.children_user + times.children_system
            except psutil.Error:
                pass
        return found

    def _sample(self, every: float) -> None:
        me = psutil.Process()
        while not self._stop.wait(every):
            jvm = workers = 0
            for child in me.children(recursive=True):
                try:
                    rss = child.memory_info().rss
                    times = child.cpu_times()
                    self._cpu[child.pid] = times.user + times.system + times.children_user + times.children_system
                    if "java" in child.name():
                        jvm += rss
                    else:
                        workers += rss
                except psutil.Error:
                    pass
            self.jvm, self.workers = max(self.jvm, jvm), max(self.workers, workers)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def cpu(self) -> float:
        """CPU seconds of the sampled processes (the driver's Python, waiting, is left out)."""
        return sum(cpu - self._before.get(pid, 0.0) for pid, cpu in self._cpu.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument(
        "--shuffle", type=int, default=None, help="spark.sql.shuffle.partitions (default: events / 1M, at least 8)"
    )
    parser.add_argument("--driver-memory", default="2g", help="spark.driver.memory (local mode: the executor)")
    parser.add_argument("--check", type=int, default=1_000_000, help="events compared with the local engine")
    parser.add_argument("--engine", default="auto")
    args = parser.parse_args()

    shuffle = args.shuffle or max(8, args.events // 1_000_000)
    spark = cepkit.spark.session(
        "local[2]", **{"spark.sql.shuffle.partitions": str(shuffle), "spark.driver.memory": args.driver_memory}
    )
    cores = spark.sparkContext.defaultParallelism

    sample = synthetic(spark, args.check, args.keys, 2)
    frame = sample.toPandas()
    cepkit.match(QUERY, frame.head(10_000), engine=args.engine)  # compiles the engine: not measured
    start, start_cpu = time.perf_counter(), time.process_time()
    local = cepkit.match(QUERY, frame, engine=args.engine)
    local_s, local_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    found = cepkit.spark.match(QUERY, sample, engine=args.engine).toPandas()
    assert [tuple(p) for p in found["positions"]] == local.positions(), "Spark and the local engine differ"
    print(
        f"check: {args.check:,} events, {len(local):,} matches equal; local engine {local_s:.1f} s, "
        f"{args.check / local_s:,.0f} events/s",
        flush=True,
    )

    peak = PeakMemory()
    start = time.perf_counter()
    matches = cepkit.spark.match(
        QUERY, synthetic(spark, args.events, args.keys, max(cores, shuffle // 4)), engine=args.engine
    ).count()
    seconds = time.perf_counter() - start
    peak.stop()
    rate = args.events / seconds
    print(
        f"\n| events | keys | shuffle partitions | matches | seconds | events/s | events/s per core | CPU s | "
        f"events per CPU s | local events per CPU s (1 core) | peak JVM RSS | peak Python workers RSS |\n"
        f"|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        f"| {args.events:,} | {args.keys:,} | {shuffle} | {matches:,} | {seconds:.0f} | {rate:,.0f} | "
        f"{rate / cores:,.0f} | {peak.cpu:,.0f} | {args.events / peak.cpu:,.0f} | {args.check / local_cpu:,.0f} | "
        f"{peak.jvm / 2**30:.1f} GiB | {peak.workers / 2**30:.1f} GiB |"
    )
    spark.stop()


if __name__ == "__main__":
    main()
