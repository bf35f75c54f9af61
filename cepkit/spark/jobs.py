"""Spark work that can be watched and stopped: ``Job`` runs a function (typically ``cepkit.spark.match``)
off the calling thread, under a job tag of its own, reports the progress of its Spark stages and cancels
them on request.

On Spark Connect, ``SparkSession.addTag`` tags every operation the job's thread starts and
``SparkSession.interruptTag`` cancels them; progress comes from Connect's progress handler (the server sends
it with every answer). On a classic session the thread's jobs also get a job group (a thread-local property,
like the tag): the status tracker finds the jobs by it, and ``cancelJobGroup`` cancels them (in PySpark
4.3 ``interruptTag`` finds no classic operation to interrupt under a tag added from a Python thread).

>>> job = cepkit.spark.Job(lambda: cepkit.spark.match(query, df).count(), progress=print)   # doctest: +SKIP
>>> job.start().wait()                                                                        # doctest: +SKIP
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Optional

POLL_S = 0.25  # how often the status tracker of a classic session is read


class Cancelled(Exception):
    """Raised by ``Job.wait`` when the job was cancelled."""


@dataclass(frozen=True)
class Progress:
    """Where a job stands: tasks of its stages done and known so far (a later stage adds to ``total``), and
    the stages known; ``text`` says it in words."""

    done: int
    total: int
    stages: int

    @property
    def text(self) -> str:
        return f"{self.done:,} of {self.total:,} Spark tasks done ({self.stages} stage{'s' * (self.stages != 1)})"


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (no SparkContext on the client)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def active_session():
    """The active SparkSession (classic or Connect), or None: never starts one."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    found = SparkSession.getActiveSession()
    if found is None:
        try:
            from pyspark.sql.connect.session import SparkSession as ConnectSession

            found = ConnectSession.getActiveSession()
        except ImportError:
            found = None
    return found


class Job:
    """``work()`` run in a thread of its own under a fresh job tag; ``progress(Progress)`` is called as its
    Spark tasks finish; ``cancel()`` interrupts every Spark operation it started.

    Parameters
    ----------
    work : callable
        What to run (it starts Spark jobs on ``spark``).
    spark : SparkSession, optional
        The session ``work`` runs on (the active one by default).
    progress : callable, optional
        Called with a ``Progress`` from a background thread (the status tracker's poller, or Spark Connect's
        progress handler) whenever the counts change.
    """

    def __init__(self, work: Callable[[], Any], spark=None, progress: Optional[Callable[[Progress], None]] = None):
        self.spark = spark if spark is not None else active_session()
        if self.spark is None:
            raise RuntimeError("no active Spark session: start one with cepkit.spark.session()")
        self.work, self.on_progress = work, progress
        self.tag = f"cepkit-{uuid.uuid4().hex[:12]}"
        self.result: Any = None
        self.error: Optional[BaseException] = None
        self.cancelled = False
        self.seconds: Optional[float] = None
        self._stages: dict = {}  # stage id -> (completed tasks, tasks)
        self._last: Optional[Progress] = None
        self.poll_errors = 0  # reads of the status tracker that failed (``_poll``), and the last one's error
        self.poll_error: Optional[BaseException] = None
        self._thread: Optional[threading.Thread] = None
        self._finished = threading.Event()

    # ------------------------------------------------------------------ public
    def start(self) -> "Job":
        """Start ``work`` in its thread (once); returns the job."""
        if self._thread is not None:
            raise RuntimeError("a Job starts once")
        self._thread = threading.Thread(target=self._run, name=self.tag, daemon=True)
        self._started = time.perf_counter()
        self._thread.start()
        if self.on_progress is not None and not is_connect(self.spark):
            threading.Thread(target=self._poll, name=self.tag + "-progress", daemon=True).start()
        return self

    def cancel(self) -> None:
        """Interrupt the job's Spark operations (its running tasks are killed); ``wait`` then raises
        ``Cancelled``. Does nothing once the job is done.

        Spark cancels only the operations running at the call, and ``work`` may be between two of them
        (numbering the events, then matching, then counting): the interrupt is repeated every
        ``POLL_S`` until ``work`` returns, so that no later operation of the job runs to its end."""
        if self.done or self.cancelled:
            return
        self.cancelled = True
        threading.Thread(target=self._interrupt_until_done, name=self.tag + "-cancel", daemon=True).start()

    @property
    def done(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout: Optional[float] = None):
        """``work()``'s result; raises its error, ``Cancelled`` when cancelled, TimeoutError after ``timeout``."""
        if self._thread is None:
            self.start()
        if not self._finished.wait(timeout):
            raise TimeoutError(f"the Spark job {self.tag} is still running after {timeout} s")
        if self.cancelled:
            raise Cancelled(f"the Spark job was cancelled after {self.seconds:.1f} s")
        if self.error is not None:
            raise self.error
        return self.result

    @property
    def progress(self) -> Optional[Progress]:
        """The last progress seen (None before the first report)."""
        return self._last

    # ------------------------------------------------------------------ internals
    def _run(self) -> None:
        connect = is_connect(self.spark)
        handler = self._connect_progress if connect and self.on_progress is not None else None
        try:
            self.spark.addTag(self.tag)
            if not connect:  # the status tracker finds jobs by group (a thread-local property, as the tag)
                self.spark.sparkContext.setJobGroup(self.tag, "cepkit", interruptOnCancel=True)
            if handler is not None:
                self.spark.registerProgressHandler(handler)
            self.result = self.work()
        except BaseException as error:  # noqa: BLE001 -- handed to wait(), which raises it
            self.error = error
        finally:
            if handler is not None:
                self.spark.removeProgressHandler(handler)
            try:
                self.spark.removeTag(self.tag)
                if not connect:
                    self.spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
            except Exception:  # noqa: BLE001 -- a stopped session: nothing left to untag
                pass
            self.seconds = time.perf_counter() - self._started
            self._finished.set()

    def _interrupt_until_done(self) -> None:
        while True:
            try:
                if is_connect(self.spark):
                    self.spark.interruptTag(self.tag)
                else:
                    self.spark.sparkContext.cancelJobGroup(self.tag)
            except Exception:  # noqa: BLE001 -- a stopped session: nothing left to interrupt
                return
            if self._finished.wait(POLL_S):
                return

    def _report(self) -> None:
        done = sum(c for c, _ in self._stages.values())
        total = sum(t for _, t in self._stages.values())
        now = Progress(done, total, len(self._stages))
        if now != self._last:
            self._last = now
            self.on_progress(now)

    def _poll(self) -> None:
        """Classic session: the tasks of the stages of the job group's jobs, read every ``POLL_S`` until the
        work returns. A read that fails (a py4j call under load, the tracker or the progress callback raising)
        is counted in ``poll_errors`` and the next one tried: it used to end the poller for good, and a job
        that went on running showed no progress at all. A stopped session ends the work, and so the poller."""
        while not self._finished.wait(POLL_S):
            try:
                tracker = self.spark.sparkContext.statusTracker()
                for job_id in tracker.getJobIdsForGroup(self.tag):
                    job = tracker.getJobInfo(job_id)
                    for stage_id in job.stageIds if job is not None else ():
                        stage = tracker.getStageInfo(stage_id)
                        if stage is not None:
                            self._stages[stage_id] = (stage.numCompletedTasks, stage.numTasks)
                self._report()
            except Exception as error:  # noqa: BLE001 -- kept, and the next read tried
                self.poll_errors += 1
                self.poll_error = error

    def _connect_progress(self, stages, inflight_tasks, operation_id, done) -> None:
        """Spark Connect's progress handler (called for the session's operations; only ours run meanwhile
        in a notebook)."""
        for stage in stages or ():
            self._stages[stage.stage_id] = (stage.num_completed_tasks, stage.num_tasks)
        self._report()
