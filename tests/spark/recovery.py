"""Recovery of ``cepkit.spark.match_stream`` and ``cepkit.spark.cube_stream`` after their process is killed, and of ``cepkit.spark.match`` after
failed tasks: real Spark, local. Used by tests/spark/test_recovery.py (a few kill points) and
bench/spark_recovery.py (20 and more).

Streams. ``Run.prepare`` writes a stream of events (many keys, each event up to ``0.9 * delay`` late, so
none is later than the watermark) as JSON files, one per micro-batch (``maxFilesPerTrigger=1``), and a
config. This file, run as a script (``python recovery.py stream CONFIG``), is the *runner*: one process, one
local Spark, a streaming query per case with its own checkpoint and sink, until every file is read. Sinks:
Spark's file sink (parquet; its ``_spark_metadata`` log commits each batch once) or ``foreachBatch``
writing each batch to a folder named by its batch id, overwritten when the batch runs again.
``Run.kill_and_restart`` starts the runner in a process group of its own and kills the group (the JVM with
it: SIGKILL, no shutdown) right after a batch commits or while one is running, then restarts it from the
checkpoints, as often as asked, and lets the last run finish. ``Run.committed`` reads what each sink
committed, to be compared with batch ``cepkit.spark.match`` over the same events.

Batches. ``python recovery.py batch CONFIG`` runs ``cepkit.spark.match`` on ``local[2,3]`` (a task may
fail 3 times) twice per case: as is, and with every task of the input's first stage and of the matching
stage failing on its first attempt (each failure leaves a marker file, so the retries are counted); it
writes whether the two results are equal, row for row.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

SCHEMA = "type string, ts double, position long, v long, id long"
NEGATION = "SEQ(A a, !C c, B b) WHERE a.v <= b.v WITHIN 4 s PARTITION BY id"
KLEENE = "SEQ(A a, B+ b, C c) WHERE a.v <= 2 WITHIN 3 s PARTITION BY id"
# The query each engine runs (the richest of the two its fragment has).
QUERIES = {
    "reference": NEGATION,
    "automaton": KLEENE,
    "stack": NEGATION,
    "ses": KLEENE,
    "rcep": KLEENE,
    "nested": NEGATION,
    "ecube": NEGATION,
}
# The cube ``cepkit.spark.cube_stream`` runs (case "ecube-cube"): five queries sharing PARTITION BY id, related
# by concept (X above A and C) and pattern refinements, two with negations (one trailing).
CUBE = "ecube-cube"
CUBE_HIERARCHY = {"X": ["A", "C"]}
CUBE_QUERIES = {
    "negation": NEGATION,
    "pair": "SEQ(A a, B b) WHERE a.v <= b.v WITHIN 4 s PARTITION BY id",
    "concept": "SEQ(X a, B b) WHERE a.v <= b.v WITHIN 4 s PARTITION BY id",
    "longer": "SEQ(A a, B b, C c) WHERE a.v <= b.v WITHIN 4 s PARTITION BY id",
    "trailing": "SEQ(A a, B b, !C c) WHERE a.v <= b.v WITHIN 4 s PARTITION BY id",
}
STREAMS = [*QUERIES, CUBE]  # what a case may run: an engine's match_stream, or the cube
DELAY = 2.0
# How each out-of-order mode that streams sets the watermark delay (``match_stream``).
MODES = {
    "reject": {"delay": DELAY},
    "kslack": {"disorder": "kslack", "k": DELAY},
    "conservative": {"disorder": "conservative", "max_delay": DELAY},
}
# Spark's own failures to start a Python worker in time: a runner that ends with one is restarted (within a
# run, ``cepkit.spark.supervise`` restarts the query that met one).
TRANSIENT = ("Python worker failed to connect back", "Timed out while waiting for the Python worker")
QUERY_RESTARTS = 10  # restarts in a row, per query and run of the runner
QUERY_RESTARTED = "[recovery] the supervisor restarted a query"
# A transformWithStateInPandas task can wait forever: its Python worker connects to the task's state server
# after the server's thread has ended, so neither side ever answers (seen once at load ~3: both connections
# queued unaccepted on the server's port, the task reading from Python, no error). The runner's queries are
# supervised (``cepkit.spark.supervise``): a batch without progress for QUERY_STALL_S is restarted on its
# checkpoint. Should that not help (a query that does not stop), no batch of any query moving for STALL_S
# while the runner lives kills the runner, which is restarted as at a kill point.
QUERY_STALL_S = 120
STALL_S = 240
SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}


def case_name(engine: str, mode: str, sink: str) -> str:
    return f"{engine}-{mode}-{sink}"


def match_keys(frame: pd.DataFrame, query: str) -> collections.Counter:
    """Each match of a matches frame (a sink's, or ``cepkit.spark.match``'s) as (positions, bindings, key),
    counted: a duplicate counts twice."""
    import cepkit
    from cepkit.spark.groups import output_variables

    def plain(value):
        if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
            return tuple(int(v) for v in value)
        return None if value is None or pd.isna(value) else int(value)

    variables = list(output_variables(cepkit.parse(query)))
    return collections.Counter(
        (plain(row["positions"]), tuple(plain(row[v]) for v in variables), int(row["id"]))
        for _, row in frame.iterrows()
    )


def found_keys(frame: pd.DataFrame, stream: str) -> collections.Counter:
    """``match_keys`` of a case's rows; for the cube, each match as (query, positions, key), counted."""
    if stream != CUBE:
        return match_keys(frame, QUERIES[stream])
    return collections.Counter(
        (name, tuple(int(p) for p in positions), int(key))
        for name, positions, key in zip(frame["query"], frame["positions"], frame["id"])
    )


def expected_keys(spark, events: pd.DataFrame, stream: str) -> collections.Counter:
    """What a case must commit: batch ``cepkit.spark.match``'s matches over ``events``, or the batch
    ``ECube``'s for the cube (as ``found_keys``)."""
    import cepkit
    import cepkit.spark

    if stream != CUBE:
        found = cepkit.spark.match(QUERIES[stream], spark.createDataFrame(events), engine=stream).toPandas()
        return match_keys(found, QUERIES[stream])
    position, key = events["position"].to_numpy(), events["id"].to_numpy()
    return collections.Counter(
        (name, tuple(int(position[p]) for p in row), int(key[row[0]]))
        for name, matches in cepkit.ECube(CUBE_QUERIES, CUBE_HIERARCHY).run(events).items()
        for row in matches.positions()
    )


def make_events(n: int, keys: int, seed: int) -> pd.DataFrame:
    """``n`` events over ``keys`` keys, about one event per key and second, in logical order: ``position``
    is each event's rank by (ts, position), so batch positions are the stream's."""
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.uniform(0, n / keys, n)).round(3)
    return pd.DataFrame(
        {
            "type": rng.choice(list("ABC"), n),
            "ts": ts,
            "position": np.arange(n),
            "v": rng.integers(0, 5, n),
            "id": rng.integers(0, keys, n),
        }
    )


@dataclass
class Run:
    """A recovery run's folder: the source files, the config, and per case a checkpoint and a sink."""

    root: Path
    cases: list  # (engine, mode, sink) triples; sink is "files" or "foreach"
    events: pd.DataFrame = None
    kills: list = field(default_factory=list)  # (kind, batch it aimed at, seconds into the run)
    crashes: int = 0  # runs ended, or queries stopped, by a transient failure (``TRANSIENT``)
    max_crashes: int = 5

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    def prepare(self, events: pd.DataFrame, files: int, seed: int) -> None:
        """The source: ``events`` in a disordered arrival order, cut into ``files`` micro-batches, and a
        last event far past the others (it moves the watermark past every match)."""
        rng = np.random.default_rng(seed + 1)
        beyond = pd.DataFrame(
            [{"type": "Z", "ts": float(events["ts"].max() + 100), "position": len(events), "v": 0, "id": 0}]
        )
        self.events = pd.concat([events, beyond], ignore_index=True)
        arrival = events.iloc[
            np.argsort(events["ts"].to_numpy() + rng.uniform(0, 0.9 * DELAY, len(events)), kind="stable")
        ]
        source = self.root / "source"
        source.mkdir(parents=True, exist_ok=True)
        chunks = np.array_split(np.arange(len(arrival)), files)
        for i, chunk in enumerate(chunks):
            rows = arrival.iloc[chunk]
            if i == files - 1:
                rows = pd.concat([rows, beyond])
            staging = source / f".{i:05d}.tmp"
            staging.write_text("".join(json.dumps(r) + "\n" for r in rows.to_dict("records")))
            staging.rename(source / f"{i:05d}.json")
        self.config.write_text(json.dumps({"root": str(self.root), "cases": self.cases}))

    def checkpoint(self, case: tuple) -> Path:
        return self.root / case_name(*case) / "checkpoint"

    def sink(self, case: tuple) -> Path:
        return self.root / case_name(*case) / "sink"

    def progress(self) -> tuple:
        """The offsets and commits of every case's checkpoint: changes whenever any query moves."""
        return tuple(len(self.batches(tuple(case), log)) for case in self.cases for log in ("offsets", "commits"))

    def stalled(self, runner: subprocess.Popen, log_path: Path, seen: list) -> bool:
        """Whether no batch moved for ``STALL_S`` while ``runner`` lives (``seen``: [progress, since]); if so
        the runner is killed and the stall logged, within ``max_crashes``."""
        now = self.progress()
        if now != seen[0]:
            seen[:] = [now, time.monotonic()]
            return False
        if time.monotonic() - seen[1] < STALL_S or self.crashes >= self.max_crashes:
            return False
        os.killpg(runner.pid, signal.SIGKILL)
        runner.wait()
        with open(log_path, "a") as log:
            log.write(f"\n[recovery] no batch moved for {STALL_S} s (a stalled state server): restarting\n")
        self.crashes += 1
        seen[:] = [now, time.monotonic()]
        return True

    def batches(self, case: tuple, log: str) -> set:
        folder = self.checkpoint(case) / log
        return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.exists() else set()

    def start(self, mode: str = "stream", log=None) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, __file__, mode, str(self.config)],
            stdout=log or subprocess.DEVNULL,
            stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
            start_new_session=True,
            cwd=self.root,
        )

    def kill_and_restart(self, points: list, timeout: float = 1800) -> None:
        """For each point, ("boundary", b): kill once the watched case has committed batch b; ("inside", b):
        kill while batch b runs (its offsets written, its commit not yet), after a moment in it. The watched
        case is the first. Then one last run to the end. Raises if the runner fails on its own."""
        watched = tuple(self.cases[0])
        started = time.monotonic()
        log_path = self.root / "runner.log"
        for kind, batch in points:
            with open(log_path, "ab") as log:
                runner = self.start(log=log)
                seen = [self.progress(), time.monotonic()]
                try:
                    while True:
                        if self.stalled(runner, log_path, seen):
                            runner = self.start(log=log)
                        if runner.poll() is not None:
                            if not self._transient(log_path):
                                raise RuntimeError(
                                    f"the runner ended before the kill point {kind} {batch} "
                                    f"(exit {runner.returncode}): {tail(log_path)}"
                                )
                            self.crashes += 1  # a worker timed out under load: restart, as after a kill
                            runner = self.start(log=log)
                        committed, offered = self.batches(watched, "commits"), self.batches(watched, "offsets")
                        if kind == "boundary" and batch in committed:
                            break
                        if kind == "inside" and batch in offered and batch not in committed:
                            time.sleep(0.3)
                            break
                        if kind == "inside" and batch in committed:  # the batch went by: kill in the next
                            batch += 1
                        if time.monotonic() - started > timeout:
                            raise TimeoutError(f"no kill point {kind} {batch} within {timeout} s: {tail(log_path)}")
                        time.sleep(0.05)
                finally:
                    if runner.poll() is None:
                        os.killpg(runner.pid, signal.SIGKILL)
                    runner.wait()
            self.kills.append((kind, batch, round(time.monotonic() - started, 1)))
        while True:
            with open(log_path, "ab") as log:
                runner = self.start(log=log)
                seen = [self.progress(), time.monotonic()]
                try:
                    while runner.poll() is None:
                        if time.monotonic() - started > timeout:
                            raise TimeoutError(f"the last run did not end within {timeout} s: {tail(log_path)}")
                        if self.stalled(runner, log_path, seen):
                            runner = self.start(log=log)
                        time.sleep(0.5)
                    code = runner.returncode
                finally:
                    if runner.poll() is None:
                        os.killpg(runner.pid, signal.SIGKILL)
                        runner.wait()
            if code == 0:
                self.crashes += log_path.read_text(errors="replace").count(QUERY_RESTARTED)
                return
            if not self._transient(log_path):
                raise RuntimeError(f"the last run failed (exit {code}): {tail(log_path)}")
            self.crashes += 1

    def _transient(self, log_path: Path) -> bool:
        """Whether the runner's last failure is Spark's own time-out starting a Python worker (10 s, not
        settable; seen under a load of 15-20 on 2 cores), not cepkit's: the run restarts, as after a kill."""
        text = log_path.read_text(errors="replace")
        last = text[text.rfind("[recovery]") + 1 :]  # since the last restart
        if any(sign in last for sign in TRANSIENT) and self.crashes < self.max_crashes:
            with open(log_path, "a") as log:
                log.write("\n[recovery] a transient failure: restarting\n")
            return True
        return False

    def committed(self, spark, case: tuple) -> pd.DataFrame:
        """What the case's sink committed: the file sink through its metadata log, foreachBatch's folders."""
        return spark.read.parquet(str(self.sink(case))).toPandas()


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# ----------------------------------------------------------------------------- the runner (a process of its own)
def _stream(config: dict) -> None:
    import cepkit.spark

    spark = cepkit.spark.session("local[2]", **SPARK_CONF)
    root = Path(config["root"])

    def start(engine: str, mode: str, sink: str):
        folder = root / case_name(engine, mode, sink)
        source = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(root / "source"))
        if engine == CUBE:
            found = cepkit.spark.cube_stream(cepkit.ECube(CUBE_QUERIES, CUBE_HIERARCHY), source, **MODES[mode])
        else:
            found = cepkit.spark.match_stream(QUERIES[engine], source, engine=engine, **MODES[mode])
        writer = found.writeStream.outputMode("append").option("checkpointLocation", str(folder / "checkpoint"))
        if sink == "files":
            writer = writer.format("parquet").option("path", str(folder / "sink"))
        else:
            target = str(folder / "sink")

            def write(batch, batch_id, target=target):
                # idempotent by batch id: a batch run again after a failure overwrites its own folder
                batch.write.mode("overwrite").parquet(f"{target}/batch_id={batch_id}")

            writer = writer.foreachBatch(write)
        # Started by the product's supervisor: Spark's own time-out starting a Python worker (``TRANSIENT``)
        # and a stalled batch (``QUERY_STALL_S``) restart the query on its checkpoint, as a user's would be.
        return cepkit.spark.supervise(
            writer.queryName(case_name(engine, mode, sink).replace("-", "_")),
            stall_after=QUERY_STALL_S,
            max_restarts=QUERY_RESTARTS,
            every=2,
            on_restart=lambda supervisor: print(f"{QUERY_RESTARTED} ({supervisor.history[-1].reason})", flush=True),
        )

    queries = [(case, start(*case)) for case in config["cases"]]
    for _, query in queries:
        query.processAllAvailable()  # a restart by the supervisor continues on the new query
        settled(query)
    for _, query in queries:
        query.stop()
    spark.stop()


def settled(query, timeout: float = 600) -> None:
    """Wait for the batch without data that follows the last file: ``processAllAvailable`` returns once the
    data is read, but the watermark moved by the last batch flushes the last matches only in the next one
    (a run stopped before it has not lost them: they come out when the query runs again). Settled when no
    batch runs and the last one, if any in this run, read no rows, twice a second apart."""
    deadline, calm = time.monotonic() + timeout, 0
    while calm < 2:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{query.name}: no batch without data within {timeout} s")
        progress = query.lastProgress
        idle = not query.status["isTriggerActive"] and (progress is None or progress["numInputRows"] == 0)
        calm = calm + 1 if idle else 0
        time.sleep(1)


def _batch(config: dict) -> None:
    """``cepkit.spark.match`` per case, as is and with first attempts failing; writes results.json."""
    import cepkit.spark
    import cepkit.spark.batch as batch_module
    from pyspark import TaskContext

    root = Path(config["root"])
    markers = root / "failures"
    markers.mkdir(exist_ok=True)
    spark = cepkit.spark.session("local[2,3]", **SPARK_CONF)
    events = spark.read.schema(SCHEMA).json(str(root / "source"))

    def fail_first(where: str):
        context = TaskContext.get()
        if context is not None and context.attemptNumber() == 0:
            (markers / f"{where}-{context.stageId()}-{context.partitionId()}").touch()
            raise RuntimeError(f"injected failure ({where}), first attempt")

    class FailingMatcher(batch_module.GroupMatcher):
        def arrow(self, schema):
            body = super().arrow(schema)

            def failing(batches):
                fail_first("matching")
                yield from body(batches)

            return failing

    def failing_input(batches):
        fail_first("input")
        yield from batches

    results = {}
    plain_matcher = batch_module.GroupMatcher
    for engine, mode, _ in config["cases"]:
        query = QUERIES[engine]
        expected = cepkit.spark.match(query, events, engine=engine).toPandas()
        batch_module.GroupMatcher = FailingMatcher
        try:
            before = len(list(markers.iterdir()))
            failing = events.mapInArrow(failing_input, events.schema)
            got = cepkit.spark.match(query, failing, engine=engine).toPandas()
        finally:
            batch_module.GroupMatcher = plain_matcher
        results[engine] = {
            "rows": len(got),
            "failures": len(list(markers.iterdir())) - before,
            "equal": got.to_json() == expected.to_json(),
        }
    (root / "results.json").write_text(json.dumps(results))
    spark.stop()


if __name__ == "__main__":
    what, path = sys.argv[1], sys.argv[2]
    {"stream": _stream, "batch": _batch}[what](json.loads(Path(path).read_text()))
