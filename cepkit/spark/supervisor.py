"""Supervised streaming queries: a micro-batch that stops making progress is stopped and its query started
again on the same checkpoint (``supervise``).

Why. A ``transformWithStateInPandas`` task (``match_stream``, ``cube_stream``, streaming ``sql``) can wait for
ever: its Python worker connects to the task's state server after the server's thread has ended, and neither
side ever answers or fails (Spark 4.x; rare, seen at a load of ~3 too). The query then shows no progress and
no error. Stopping it and starting it again on its checkpoint recovers with nothing lost or repeated (with a
replayable source and an idempotent sink, README "What a streaming job can rely on").

How a stall is told from a slow batch. The supervisor looks at the query every ``every`` seconds: its last
finished batch (``lastProgress``), whether a trigger is running (``status``) and, on a classic session, the
tasks finished so far by the jobs of the running batch (Spark's status tracker: a streaming query runs its
jobs in the job group named by its ``runId``). A batch is stalled when a trigger has been running for
``stall_after`` seconds with none of these moving: no batch finished, no job started, no task finished. A
long batch whose tasks keep finishing is not stalled; one task that runs longer than ``stall_after`` is, so
``stall_after`` must exceed the longest task (on Spark Connect, where the driver's status tracker is out
of reach, the longest batch). Each restart in a row without a batch finishing doubles the wait, so a batch
that is only slow gets its time; after ``max_restarts`` restarts in a row the supervisor gives up, stops the
query and says why (``failed``).

Polling, not a ``StreamingQueryListener``: a listener hears of batches that end, but a stall is the absence
of any event, so a clock must watch anyway; the status tracker's task counts are not a listener's events
either. One look costs a few driver calls (no job).

Spark's own time-out starting a driver-side Python worker ("Python worker failed to connect back", 10 s,
not settable; under heavy load) stops a query with that error: the supervisor starts it again too, within
the same bound.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import PurePath
from typing import Callable, Optional, Union

# The default: no progress for 5 minutes. The longest batches seen on the 2-core test machine under a load
# of 20-30 (``bench/spark_soak.py``, 200,000 events a batch) took ~100 s with two tasks each, so a task
# there runs ~100 s at most; 300 s is three times that. A restart that was not needed costs a batch run
# again (nothing lost or repeated), and the wait doubles after each restart in a row.
STALL_AFTER = 300.0
MAX_RESTARTS = 3  # in a row, without a batch finishing in between
STOP_TIMEOUT = 120.0  # the longest a stalled query's stop() may take before the supervisor gives up on it
# Spark's own failures to start a Python worker in time: the query stopped, and starting it again recovers.
TRANSIENT = ("Python worker failed to connect back", "Timed out while waiting for the Python worker")

log = logging.getLogger("cepkit.spark")


class StalledQueryWarning(UserWarning):
    """A supervised streaming query was restarted (a stalled batch, or Spark's worker time-out)."""


@dataclass(frozen=True)
class Restart:
    """One restart: the batch that was running, why, after how many seconds without progress, when."""

    batch: Optional[int]
    reason: str  # "stalled" or "failed"
    waited: float  # seconds without progress (stalled), or 0
    at: float  # time.time()
    detail: str = ""

    def __str__(self) -> str:
        what = "the first batch" if self.batch is None else f"batch {self.batch}"
        if self.reason == "stalled":
            return f"{what} made no progress for {self.waited:.0f} s"
        return f"{what} failed: {self.detail}"


def supervise(
    writer,
    *,
    path: Optional[str] = None,
    stall_after: Optional[float] = STALL_AFTER,
    max_restarts: int = MAX_RESTARTS,
    every: Optional[float] = None,
    on_restart: Optional[Callable] = None,
) -> "Supervisor":
    """Start a streaming query and restart it on its checkpoint whenever a batch stalls.

    Parameters
    ----------
    writer : pyspark.sql.streaming.DataStreamWriter or callable
        What starts the query: ``found.writeStream...`` with a ``checkpointLocation`` option (started with
        ``writer.start(path)``), or a function of no arguments that starts it and returns the
        ``StreamingQuery``, on the same checkpoint every time.
    path : str, optional
        The sink's path, passed to ``writer.start``.
    stall_after : float or None
        Seconds a running batch may go without progress (no task, job or batch finishing) before the query
        is restarted; ``None`` watches for nothing but Spark's worker time-out. It must exceed the
        longest task (the longest batch on Spark Connect). Each restart in a row doubles it.
    max_restarts : int
        Restarts in a row (no batch finishing in between) before the supervisor gives up and stops.
    every : float, optional
        Seconds between looks (by default a tenth of ``stall_after``, at most 10).
    on_restart : callable, optional
        Called with the ``Supervisor`` after each restart (from its thread).

    Returns
    -------
    Supervisor
        The running supervisor: ``query`` (the current ``StreamingQuery``), ``restarts``, ``history``,
        ``failed``; it answers ``isActive``, ``lastProgress``, ``status``, ``exception()``,
        ``processAllAvailable()``, ``awaitTermination()`` and ``stop()`` as a query does.

    Raises
    ------
    ValueError
        The query has no checkpoint to restart from: Spark would checkpoint into a temporary folder that a
        restart does not find, so the restarted query would start over (a file source reading every file
        again, Kafka from its ``startingOffsets``): matches repeated or lost.

    Examples
    --------
    >>> found = cepkit.spark.match_stream("SEQ(A a, B b) WITHIN 10 s PARTITION BY id", events, delay=5)  # doctest: +SKIP
    >>> writer = (found.writeStream.outputMode("append").format("parquet").option("path", "out/")      # doctest: +SKIP
    ...           .option("checkpointLocation", "ckpt/"))
    >>> running = cepkit.spark.supervise(writer)                                                       # doctest: +SKIP
    >>> running.restarts, running.history                                                             # doctest: +SKIP
    (0, [])
    """
    supervisor = Supervisor(
        writer, path=path, stall_after=stall_after, max_restarts=max_restarts, every=every, on_restart=on_restart
    )
    return supervisor.start()


class Supervisor:
    """A streaming query watched and restarted on its checkpoint when a batch stalls (see ``supervise``).

    ``start(watch=False)`` starts the query without the watching thread; ``check()`` is then one look (what
    the thread does every ``every`` seconds). ``clock`` and ``tasks`` (the query -> tasks finished by its
    running jobs, or None) are the module's defaults unless a test gives its own.
    """

    def __init__(
        self,
        writer,
        *,
        path: Optional[str] = None,
        stall_after: Optional[float] = STALL_AFTER,
        max_restarts: int = MAX_RESTARTS,
        every: Optional[float] = None,
        on_restart: Optional[Callable] = None,
        stop_timeout: float = STOP_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        tasks: Union[Callable, None, str] = "tracker",
    ):
        if stall_after is not None and stall_after <= 0:
            raise ValueError(f"stall_after is a number of seconds > 0 or None, not {stall_after!r}")
        if callable(writer) and not hasattr(writer, "start"):
            self._start_query = writer
            self.checkpoint: Optional[str] = None  # known once started, on a classic session
        else:
            self.checkpoint = checkpoint_of(writer)
            self._start_query = (lambda: writer.start(path)) if path is not None else writer.start
        self.stall_after = stall_after
        self.max_restarts = max_restarts
        self.every = every if every is not None else min(10.0, (stall_after or 100.0) / 10)
        self.on_restart = [on_restart] if on_restart else []
        self.stop_timeout = stop_timeout
        self.clock = clock
        self._tasks = tasks
        self.query = None
        self.history: list = []  # Restart, oldest first
        self.failed = ""  # why the supervisor gave up (it then stopped the query)
        self.stopped = False
        self._in_row = 0  # restarts since a batch last finished
        self._seen: tuple = (None, None)  # the last progress signature: (last batch, tasks)
        self._since = 0.0  # when it last changed
        self._lock = threading.RLock()
        self._done = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._root: Optional[str] = None  # where the first query checkpointed (classic sessions)

    # ------------------------------------------------------------------ starting and watching
    def start(self, watch: bool = True) -> "Supervisor":
        self.query = self._launch()
        self._seen, self._since = self._signature(self.query), self.clock()
        if watch:
            self._thread = threading.Thread(target=self._watch, name="cepkit.spark.supervise", daemon=True)
            self._thread.start()
        return self

    def _launch(self):
        query = self._start_query()
        root = _checkpoint_root(query)
        if root is not None:
            if PurePath(root).name.startswith("temporary-"):
                query.stop()
                raise ValueError(_NO_CHECKPOINT + f" (this query checkpointed into Spark's temporary {root})")
            if self._root is not None and root != self._root:
                query.stop()
                raise ValueError(f"the restarted query checkpoints into {root}, not {self._root}: it would start over")
            self._root = root
            self.checkpoint = self.checkpoint or root
        if self._tasks == "tracker":
            self._tasks = task_counter(query)
        return query

    def _watch(self) -> None:
        while not self._done.wait(self.every):
            try:
                self.check()
            except Exception as error:  # noqa: BLE001 - a look that failed (a py4j call under load): the next one
                log.debug("supervisor: a look failed: %s", error)

    def check(self) -> bool:
        """One look at the query; whether it was restarted."""
        with self._lock:
            if self._done.is_set():
                return False
            query = self.query
            if not query.isActive:
                return self._ended(query)
            signature = self._signature(query)
            now = self.clock()
            if signature != self._seen:
                if signature[0] != self._seen[0]:
                    self._in_row = 0  # a batch finished
                self._seen, self._since = signature, now
                return False
            if self.stall_after is None or not query.status.get("isTriggerActive"):
                self._since = now  # waiting for data (or not watching): not a stall
                return False
            waited = now - self._since
            if waited < self.stall_after * 2**self._in_row:
                return False
            return self._restart(Restart(_running_batch(query), "stalled", waited, time.time()))

    def _signature(self, query) -> tuple:
        progress = query.lastProgress
        batch = progress.get("batchId") if progress else None
        tasks = self._tasks(query) if callable(self._tasks) else None
        return (batch, tasks)

    def _ended(self, query) -> bool:
        """The query stopped on its own: Spark's worker time-out restarts it, anything else ends the watch."""
        error = query.exception()
        if error is None:
            self._finish("")
            return False
        text = str(error)
        first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
        if any(sign in text for sign in TRANSIENT):
            return self._restart(Restart(_running_batch(query), "failed", 0.0, time.time(), first))
        self._finish(f"the query failed: {first}")
        return False

    def _restart(self, why: Restart) -> bool:
        if self._in_row >= self.max_restarts:
            self._stop_query(self.query)
            self._finish(f"gave up after {self._in_row} restarts in a row: {why}")
            warnings.warn(f"cepkit.spark.supervise: {self.failed}", StalledQueryWarning, stacklevel=2)
            log.info("supervisor %s: %s", self.name, self.failed)
            return False
        self.history.append(why)
        self._in_row += 1
        message = f"restarting {self.name or 'the query'} on its checkpoint: {why} (restart {len(self.history)})"
        log.info("supervisor: %s", message)
        warnings.warn(f"cepkit.spark.supervise: {message}", StalledQueryWarning, stacklevel=2)
        if not self._stop_query(self.query):
            self._finish(f"{why}, and the query did not stop within {self.stop_timeout:.0f} s")
            return False
        try:
            self.query = self._launch()
        except Exception as error:  # noqa: BLE001 - said in ``failed``; the watch ends
            self._finish(f"{why}; starting it again failed: {error}")
            return False
        self._seen, self._since = self._signature(self.query), self.clock()
        for hook in self.on_restart:
            hook(self)
        return True

    def _stop_query(self, query) -> bool:
        """Stop ``query`` in a thread of its own; whether it stopped within ``stop_timeout``."""
        stopper = threading.Thread(target=query.stop, name="cepkit.spark.supervise.stop", daemon=True)
        stopper.start()
        stopper.join(self.stop_timeout)
        return not stopper.is_alive()

    def _finish(self, failed: str) -> None:
        self.failed = failed
        self._done.set()

    # ------------------------------------------------------------------ the query's own face
    @property
    def restarts(self) -> int:
        return len(self.history)

    @property
    def name(self):
        return self.query.name if self.query is not None else None

    @property
    def id(self):
        return self.query.id

    @property
    def runId(self):  # noqa: N802 - StreamingQuery's name
        return self.query.runId

    @property
    def isActive(self) -> bool:  # noqa: N802 - StreamingQuery's name
        """True while supervised: the query runs, or is being restarted."""
        return not self._done.is_set() and (self.query.isActive or self._lock_held())

    def _lock_held(self) -> bool:
        if self._lock.acquire(blocking=False):
            self._lock.release()
            return False
        return True

    @property
    def lastProgress(self):  # noqa: N802 - StreamingQuery's name
        return self.query.lastProgress

    @property
    def recentProgress(self):  # noqa: N802 - StreamingQuery's name
        return self.query.recentProgress

    @property
    def status(self) -> dict:
        return self.query.status

    def exception(self):
        """The query's own error, else a ``RuntimeError`` saying why the supervisor gave up, else None."""
        error = self.query.exception() if not self.query.isActive else None
        if error is None and self.failed:
            return RuntimeError(self.failed)
        return error

    def summary(self) -> str:
        """The restarts in a line ("" without any), for a status line."""
        if not self.history:
            return ""
        return f"restarted {self.restarts}× (last: {self.history[-1]})"

    def processAllAvailable(self) -> None:  # noqa: N802 - StreamingQuery's name
        """The current query's ``processAllAvailable``, again on the new query after a restart; raises if
        the supervisor gave up or the query failed."""
        while True:
            query = self.query
            try:
                query.processAllAvailable()
            except Exception:
                if self.query is query and not self._restarting(query):
                    raise
                continue
            if self.query is query and not self._restarting(query):
                if self.failed:
                    raise RuntimeError(self.failed)
                return

    def _restarting(self, query) -> bool:
        """Whether ``query`` stopped because the supervisor is restarting it (wait for the new one)."""
        if query.isActive or self._done.is_set():
            return False
        with self._lock:  # a restart in progress holds the lock: after it, ``self.query`` is the new one
            if self.query is query:
                self.check()  # it stopped on its own: a worker time-out is restarted now, else the watch ends
            return self.query is not query

    def awaitTermination(self, timeout: Optional[float] = None) -> bool:  # noqa: N802 - StreamingQuery's name
        """Wait until the supervision ends (the query stopped, failed, or given up); whether it did."""
        return self._done.wait(timeout)

    def stop(self) -> None:
        """Stop watching and stop the query."""
        with self._lock:
            self.stopped = True
            self._done.set()
            query = self.query
        if query is not None:
            query.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(self.every + 5)


_NO_CHECKPOINT = (
    "cepkit.spark.supervise restarts a query on its checkpoint, and this one has none: give the writer "
    ".option('checkpointLocation', folder) (a folder of its own, kept between runs). Without it Spark "
    "checkpoints into a temporary folder that a restart does not find, and the restarted query starts over: "
    "a file source reads every file again (matches repeated), Kafka starts from startingOffsets (matches lost)"
)


def checkpoint_of(writer) -> Optional[str]:
    """The checkpoint folder ``writer`` will use (its option, or the session's checkpoint root and the
    query's name); ValueError if it has none a restart would find again."""
    options, spark = _writer_options(writer)
    if options is None:  # a writer whose options cannot be read: checked once started (``_checkpoint_root``)
        return None
    folder = options.get("checkpointLocation") or options.get("checkpointlocation")
    if folder:
        return folder
    root = spark.conf.get("spark.sql.streaming.checkpointLocation", None) if spark is not None else None
    name = options.get("queryName") or options.get("queryname")
    if root and name:
        return str(PurePath(root) / name)
    raise ValueError(_NO_CHECKPOINT)


def _writer_options(writer) -> tuple:
    """(the options set on ``writer``, its session), or (None, None) where they cannot be read."""
    proto = getattr(writer, "_write_proto", None)  # Spark Connect
    if proto is not None:
        options = dict(proto.options)
        if proto.query_name:
            options["queryName"] = proto.query_name
        return options, getattr(writer, "_session", None)
    jwrite = getattr(writer, "_jwrite", None)  # classic: the JVM writer keeps them in a private field
    if jwrite is None:
        return None, None
    try:
        field = jwrite.getClass().getDeclaredField("extraOptions")
        field.setAccessible(True)
        scala_map = field.get(jwrite)
        options = {}
        for key in ("checkpointLocation", "queryName"):
            found = scala_map.get(key)
            if found.isDefined():
                options[key] = found.get()
        return options, writer._spark
    except Exception:  # noqa: BLE001 - another Spark's writer: checked once started instead
        return None, None


def _checkpoint_root(query) -> Optional[str]:
    """Where a started classic query checkpoints (None on Spark Connect, or if Spark does not say)."""
    try:
        return str(query._jsq.streamingQuery().resolvedCheckpointRoot())
    except Exception:  # noqa: BLE001 - Connect has no JVM object; a supervised fake query neither
        return None


def _running_batch(query) -> Optional[int]:
    """The batch that runs (or would run) next: one after the last finished, else 0."""
    progress = query.lastProgress
    return progress["batchId"] + 1 if progress else None


def task_counter(query) -> Optional[Callable]:
    """On a classic session: query -> the tasks finished (and failed) so far by the query's running jobs
    (Spark's status tracker; a streaming query runs its jobs in the job group of its ``runId``) and the
    number of jobs it ran. None on Spark Connect (no status tracker on the client)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if getattr(query, "_jsq", None) is None or context is None:  # Spark Connect, or a fake query
        return None
    tracker = context.statusTracker()

    def count(query) -> tuple:
        jobs = set(tracker.getJobIdsForGroup(str(query.runId)))
        done = 0
        for job in jobs & set(tracker.getActiveJobsIds()):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info is not None else ():
                stage_info = tracker.getStageInfo(stage)
                if stage_info is not None:
                    done += stage_info.numCompletedTasks + stage_info.numFailedTasks
        return (len(jobs), done)

    return count
