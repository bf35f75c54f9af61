"""``cepkit.spark.supervise``'s stall detection without Spark: a fake query (its last batch, whether a trigger
runs, its tasks finished) on a fake clock, looked at by ``Supervisor.check`` as its thread would. A batch whose
tasks keep finishing, or a query waiting for data, is not stalled; a running batch with nothing moving for
``stall_after`` is, and is restarted (each restart in a row doubling the wait, within ``max_restarts``);
Spark's worker time-out is restarted, any other failure is not. tests/spark/test_stalled_stream.py
stalls a real query."""

import pytest

from cepkit.spark.supervisor import StalledQueryWarning, Supervisor


class FakeQuery:
    def __init__(self, batch=None):
        self.batch = batch  # the last finished batch
        self.running = True  # a trigger runs
        self.isActive = True
        self.error = None
        self.stops = 0
        self.name = "q"

    @property
    def lastProgress(self):  # noqa: N802
        return None if self.batch is None else {"batchId": self.batch}

    @property
    def status(self):
        return {"isTriggerActive": self.running}

    def exception(self):
        return self.error

    def stop(self):
        self.stops += 1
        self.isActive = False

    def processAllAvailable(self):  # noqa: N802
        pass


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def supervised(stall_after=60.0, max_restarts=3, batch=None):
    started, clock, tasks = [], Clock(), {"done": 0}

    def start():
        started.append(FakeQuery(batch=started[-1].batch if started else batch))
        return started[-1]

    supervisor = Supervisor(
        start, stall_after=stall_after, max_restarts=max_restarts, clock=clock, tasks=lambda q: tasks["done"]
    )
    return supervisor.start(watch=False), started, clock, tasks


def look(supervisor, clock, seconds, step=5.0, every=None):
    """``check`` every ``step`` s for ``seconds``; how many restarts it made."""
    restarts, end = 0, clock.now + seconds
    while clock.now < end:
        clock.now += step
        if every is not None:
            every()
        restarts += supervisor.check()
    return restarts


def test_a_batch_whose_tasks_keep_finishing_is_not_stalled():
    supervisor, started, clock, tasks = supervised(stall_after=60, batch=3)

    def a_task_finishes():
        tasks["done"] += 1 if clock.now % 50 == 0 else 0  # a task every 50 s: under stall_after

    assert look(supervisor, clock, 600, every=a_task_finishes) == 0
    assert supervisor.restarts == 0 and len(started) == 1 and started[0].stops == 0


def test_a_query_waiting_for_data_is_not_stalled():
    supervisor, started, clock, _ = supervised(stall_after=60, batch=7)
    started[0].running = False  # no trigger runs: no data has arrived
    assert look(supervisor, clock, 1000) == 0 and supervisor.summary() == ""


def test_a_running_batch_without_progress_is_restarted_on_its_checkpoint():
    supervisor, started, clock, tasks = supervised(stall_after=60, batch=4)  # batch 5 runs, and nothing moves
    hooked = []
    supervisor.on_restart.append(lambda s: hooked.append((s.restarts, s.query)))
    with pytest.warns(StalledQueryWarning, match="batch 5 made no progress for 60 s"):
        assert look(supervisor, clock, 55) == 0 and look(supervisor, clock, 5) == 1
    assert started[0].stops == 1 and len(started) == 2 and supervisor.query is started[1]
    assert hooked == [(1, started[1])]  # after the new query started
    assert supervisor.restarts == 1 and supervisor.history[0].batch == 5 and supervisor.history[0].reason == "stalled"
    assert supervisor.summary() == "restarted 1× (last: batch 5 made no progress for 60 s)"
    assert supervisor.isActive and supervisor.exception() is None
    started[1].batch = 5  # the restarted query finishes the batch: the next stall waits stall_after again
    assert look(supervisor, clock, 55) == 0
    with pytest.warns(StalledQueryWarning):
        assert look(supervisor, clock, 10) == 1
    assert supervisor.history[1].batch == 6


def test_restarts_in_a_row_double_the_wait_and_are_bounded():
    supervisor, started, clock, _ = supervised(stall_after=60, max_restarts=2, batch=0)
    with pytest.warns(StalledQueryWarning) as caught:
        assert look(supervisor, clock, 60) == 1  # 60 s
        assert look(supervisor, clock, 115) == 0 and look(supervisor, clock, 5) == 1  # then 120 s
        assert look(supervisor, clock, 235) == 0 and look(supervisor, clock, 5) == 0  # 240 s: given up
    assert "gave up after 2 restarts in a row" in str(caught[-1].message)
    assert supervisor.restarts == 2 and len(started) == 3 and started[-1].stops == 1
    assert "gave up after 2 restarts in a row: batch 1 made no progress for 240 s" == supervisor.failed
    assert not supervisor.isActive and "gave up" in str(supervisor.exception())
    with pytest.raises(RuntimeError, match="gave up"):
        supervisor.processAllAvailable()


def test_stall_after_none_never_restarts_a_stall():
    supervisor, started, clock, _ = supervised(stall_after=None, batch=2)
    assert look(supervisor, clock, 10_000, step=100) == 0 and started[0].stops == 0


def test_spark_worker_time_out_is_restarted_any_other_failure_ends_the_watch():
    supervisor, started, clock, _ = supervised(batch=1)
    started[0].isActive = False
    started[0].error = RuntimeError("Python worker failed to connect back.\n at ...")
    with pytest.warns(StalledQueryWarning, match="batch 2 failed: Python worker failed to connect back"):
        assert supervisor.check()
    assert supervisor.restarts == 1 and supervisor.query is started[1]
    started[1].isActive, started[1].error = False, ValueError("EventError: a null ts at position 7")
    assert not supervisor.check() and supervisor.restarts == 1 and len(started) == 2
    assert supervisor.failed == "the query failed: EventError: a null ts at position 7"
    assert not supervisor.isActive and isinstance(supervisor.exception(), ValueError)


def test_a_stopped_supervisor_stops_its_query():
    supervisor, started, clock, _ = supervised()
    supervisor.stop()
    assert started[0].stops == 1 and not supervisor.isActive and supervisor.stopped
    assert look(supervisor, clock, 1000) == 0
