"""``cepkit.spark.Job`` (a Spark run with progress and Cancel), ``cepkit.spark.with_positions`` (events numbered
once, as ``match`` numbers them), and the Workbench on Spark (``widgets.on_spark``): the same matches as
``cepkit.match``, a result paged from Spark, a sampled timeline, a picked match explained, Cancel."""

import re
import threading
import time
import uuid
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import cepkit
import cepkit.spark

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

QUERY = "SEQ(A a, B b) WHERE a.v < b.v WITHIN 4 s PARTITION BY id"


def small_stream(n: int = 60, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "type": rng.choice(list("ABC"), n),
            "ts": np.sort(rng.integers(0, n // 2, n)).astype(float),
            "id": rng.integers(0, 3, n),
            "v": rng.integers(0, 10, n),
        }
    )


def slow_count(spark, seconds: int = 60):
    """A Spark job of ``seconds`` one-second tasks (two at a time on local[2])."""

    def slow(batches):
        for batch in batches:
            time.sleep(1)
            yield batch

    return lambda: spark.range(0, seconds, numPartitions=seconds).mapInPandas(slow, "id long").count()


def test_with_positions_numbers_events_as_match_does(spark):
    events = small_stream()
    shuffled = spark.createDataFrame(events.sample(frac=1, random_state=1).reset_index(names="position"))
    numbered = cepkit.spark.with_positions(shuffled).toPandas()
    assert numbered["position"].tolist() == list(range(len(events)))  # in logical order, numbered
    assert numbered.drop(columns="position").equals(events.astype(numbered.drop(columns="position").dtypes))
    found = cepkit.spark.match(QUERY, cepkit.spark.with_positions(shuffled)).toPandas()
    expected = cepkit.match(QUERY, events).positions()
    assert [tuple(map(int, p)) for p in found["positions"]] == expected and expected


def test_with_positions_numbers_a_local_frame_on_the_driver(spark):
    """A pandas frame (ties on ts kept in row order) is numbered without a Spark job, as ``match`` numbers it."""
    events = small_stream().sample(frac=1, random_state=2).reset_index(drop=True)
    group = f"with-positions-{uuid.uuid4().hex[:8]}"
    spark.sparkContext.setJobGroup(group, "with_positions")
    try:
        numbered = cepkit.spark.with_positions(events)
        jobs = spark.sparkContext.statusTracker().getJobIdsForGroup(group)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert jobs == []
    got = numbered.toPandas()
    expected = events.sort_values("ts", kind="stable", ignore_index=True)
    assert got["position"].tolist() == list(range(len(events)))
    assert got.drop(columns="position").equals(expected.astype(got.drop(columns="position").dtypes))
    found = cepkit.spark.match(QUERY, numbered).toPandas()
    assert [tuple(map(int, p)) for p in found["positions"]] == cepkit.match(QUERY, expected).positions()


def test_a_job_reports_progress_and_cancel_stops_it_within_5_s(spark):
    seen = []
    job = cepkit.spark.Job(
        lambda: cepkit.spark.match(QUERY, spark.createDataFrame(small_stream())).count(), spark, progress=seen.append
    )
    assert job.start().wait(120) == len(cepkit.match(QUERY, small_stream()))
    assert seen and seen[-1].total >= seen[-1].done > 0 and "Spark tasks done" in seen[-1].text

    job = cepkit.spark.Job(slow_count(spark), spark).start()
    deadline = time.monotonic() + 60
    while not spark.sparkContext.statusTracker().getJobIdsForGroup(job.tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    asked = time.monotonic()
    job.cancel()
    with pytest.raises(cepkit.spark.Cancelled):
        job.wait(5)
    assert time.monotonic() - asked < 5 and job.cancelled
    assert spark.range(3).count() == 3  # the session is still usable


class FlakyTracker:
    """A classic session's status tracker whose first ``failures`` reads raise (a py4j call failing under load):
    one job, one stage of 4 tasks, a task more done at each read."""

    def __init__(self, failures: int):
        self.failures, self.reads = failures, 0

    def getJobIdsForGroup(self, group):
        self.reads += 1
        if self.reads <= self.failures:
            raise RuntimeError("Answer from Java side is empty")
        return [0]

    def getJobInfo(self, job_id):
        return SimpleNamespace(stageIds=[7])

    def getStageInfo(self, stage_id):
        return SimpleNamespace(numCompletedTasks=min(self.reads - self.failures, 4), numTasks=4)


class ClassicSession:
    """What a ``Job`` calls on a classic session, without Spark."""

    def __init__(self, tracker):
        self.sparkContext = SimpleNamespace(
            statusTracker=lambda: tracker, setJobGroup=lambda *a, **k: None, setLocalProperty=lambda *a: None
        )

    def addTag(self, tag):
        pass

    def removeTag(self, tag):
        pass


def test_the_progress_poller_outlives_failed_reads_of_the_status_tracker():
    """A read of the tracker that raises once used to end the poller: the job then ran on without progress
    (the browser test's slow run showed none for 6 min). Now the next read is tried."""
    tracker = FlakyTracker(failures=3)
    seen = []
    done = threading.Event()

    def work():
        done.wait(30)
        return "result"

    job = cepkit.spark.Job(work, ClassicSession(tracker), progress=seen.append).start()
    deadline = time.monotonic() + 10
    while (not seen or seen[-1].done < 4) and time.monotonic() < deadline:
        time.sleep(0.05)
    done.set()
    assert job.wait(30) == "result"
    assert [p.done for p in seen] == [1, 2, 3, 4] and seen[-1] == cepkit.spark.Progress(4, 4, 1)
    assert job.poll_errors == 3 and "Java side" in str(job.poll_error)


def test_cancel_also_stops_the_jobs_work_starts_after_it(spark):
    """Cancel pressed between two Spark jobs of the same work (numbering, then matching): the later job is
    interrupted as it starts, not run to its end."""
    between = threading.Event()

    def two_jobs():
        spark.range(3).count()
        between.set()
        time.sleep(1)  # no Spark job runs now: the cancel finds nothing to interrupt yet
        return slow_count(spark)()

    job = cepkit.spark.Job(two_jobs, spark).start()
    assert between.wait(60)
    asked = time.monotonic()
    job.cancel()
    with pytest.raises(cepkit.spark.Cancelled):
        job.wait(10)
    assert time.monotonic() - asked < 6
    assert spark.range(3).count() == 3


def test_the_workbench_on_spark_pages_samples_and_explains(spark):
    from widgets import Workbench
    from widgets.on_spark import SparkWorkbench

    events = small_stream(200)
    local = cepkit.match(QUERY, events)
    wb = Workbench(spark.createDataFrame(events), query=QUERY, sample=5)
    assert isinstance(wb, SparkWorkbench) and not wb.run_button.disabled
    assert wb.run() == len(local) > 14
    assert f"{len(local)} matches" in wb.status.value
    columns = wb.grid.columns
    page = [row[columns.index("positions")] for row in wb.grid.rows]
    assert page == [", ".join(map(str, p)) for p in local.positions()[:10]]
    assert wb.grid.info() == f"rows 1–10 of {len(local)} matches"
    wb.fields = ["v"]
    column = wb.grid.columns.index("b.v")
    assert [row[column] for row in wb.grid.rows] == [str(events.v[m.bindings["b"]]) for m in list(local)[:10]]
    wb.selected = 12  # on the second page: the grid pages to it
    assert wb.grid.page == 1 and wb.grid.selected == 12
    wb.grid.search = "A"  # the whole result, fetched once
    assert wb.grid.total == len(local)
    wb.tabs.selected_index = 1  # Explain: the match's events fetched from Spark
    assert wb.explain_view.explanation.is_match
    frame, candidate, first = wb.match_events(12)
    assert [p + first for p in candidate] == list(local[12].positions)
    assert frame["v"].iloc[list(candidate)].tolist() == events["v"].iloc[list(local[12].positions)].tolist()
    assert len(wb.timeline.matches) == 5 and "a sample of 5 of" in wb.timeline.figure.layout.title.text
    assert wb._sample_ids[0] == 0 and wb._sample_ids[-1] == len(local) - 1  # across the whole result
    last = local[len(local) - 1]
    drawn = wb.timeline.stream.frame.iloc[list(wb.timeline.matches[-1].positions)]
    assert drawn["v"].tolist() == events["v"].iloc[list(last.positions)].tolist()
    # the sample is numbered as the whole result: match_ids and positions in the DataFrame's events
    assert wb.timeline.match_traces()[-1].name == f"match #{len(local) - 1}"
    assert f"position {last.positions[0]} ·" in wb.timeline.match_traces()[-1].hovertext[0]
    wb.editor.value = "SEQ(A a, B b) WHERE a.nope < 1"
    assert wb.run_button.disabled and "nope" in wb.diagnostics.value
    # the same code editor as the local Workbench: the DataFrame's types and columns complete, errors underlined
    assert {"A", "B"} <= set(wb.editor.types) and "v" in wb.editor.attributes["A"]
    assert [d["severity"] for d in wb.editor.diagnostics["items"]] == ["error"]
    wb.editor.value = "SEQ(A a, D b) WITHIN 4 s"  # runs, but the DataFrame has no D: said before Run
    assert "⚠" in wb.diagnostics.value and "D" in wb.diagnostics.value


class JobCounter:
    """The Spark jobs the calling thread starts, counted by a job group of its own (``since()``: those since
    the last call), and those of a ``cepkit.spark.Job`` (``of(job)``: its thread has its job tag as group)."""

    def __init__(self, spark):
        self.context, self.group, self.seen = spark.sparkContext, f"cepkit-views-{uuid.uuid4().hex}", 0
        self.context.setJobGroup(self.group, "the Workbench's views")

    def since(self) -> int:
        now = len(self.context.statusTracker().getJobIdsForGroup(self.group))
        counted, self.seen = now - self.seen, now
        return counted

    def of(self, job) -> int:
        return len(self.context.statusTracker().getJobIdsForGroup(job.tag))

    def close(self) -> None:
        self.context.setLocalProperty("spark.jobGroup.id", None)


def test_a_spark_run_matches_once_and_each_view_fetches_once(spark):
    """A Run is ``cepkit.spark.match``'s own jobs and one for the timeline's sample; the views then read its
    result (a local checkpoint: no matching again), a job for the rows they show and one for their events.
    It took 17 jobs and 2-4 a view: the grid fetched its first page twice (once for its column names), and
    each fetch sorted in Spark (an orderBy is a sort job more) the few rows it could sort in pandas."""
    from widgets import Workbench

    events = small_stream(200)
    counter = JobCounter(spark)
    try:
        cepkit.spark.match(QUERY, cepkit.spark.with_positions(spark.createDataFrame(events))).count()
        bare = counter.since()  # numbering, matching, counting: the floor of a Run
        wb = Workbench(spark.createDataFrame(events), query=QUERY, sample=5)
        counter.since()  # (the editor's one job: a row per type)
        assert wb.run() > 14
        assert counter.of(wb.job) == bare + 1  # + the timeline's sample
        assert counter.since() == 3  # the grid's first page (its matches, their events), the sample's events
        wb.selected = 12  # on the second page: fetched
        assert wb.grid.page == 1 and counter.since() == 2
        wb.tabs.selected_index = 1  # Explain: the match's positions, then the events of its span
        assert wb.explain_view.explanation.is_match and counter.since() == 2
        wb.grid.search = "A"  # the whole result, then its events
        assert wb.grid.total == len(cepkit.match(QUERY, events)) and counter.since() == 2
        wb.fields = ["v"]  # the page again, with the field
        assert "b.v" in wb.grid.columns and wb.grid.page == 1 and counter.since() == 2
    finally:
        counter.close()


def test_the_workbench_cancels_a_spark_run(spark, monkeypatch):
    from widgets import Workbench
    import widgets.on_spark as on_spark

    wb = Workbench(spark.createDataFrame(small_stream()), query=QUERY)
    monkeypatch.setattr(on_spark.SparkWorkbench, "_compute", lambda self, query, engine: slow_count(spark)())
    job = wb.run(wait=False)
    assert wb.run_button.disabled and wb.cancel_button.layout.display is None
    deadline = time.monotonic() + 60
    while not spark.sparkContext.statusTracker().getJobIdsForGroup(job.tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    wb.cancel()
    deadline = time.monotonic() + 5
    while "cancelled" not in wb.status.value and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "cancelled" in wb.status.value and wb.cancel_button.layout.display == "none"
    assert not wb.run_button.disabled

    def fails(self, query, engine):
        raise RuntimeError("Python worker failed to connect back.")

    monkeypatch.setattr(on_spark.SparkWorkbench, "_compute", fails)
    assert wb.run() is None  # a run that fails says so, and why
    assert "<b>failed</b> after" in wb.status.value and "connect back" in wb.status.value
    assert wb.progress_text.layout.display == "none" and not wb.run_button.disabled


def test_the_local_workbench_offers_spark_when_a_session_is_active(spark):
    from widgets import Workbench

    events = small_stream()
    wb = Workbench(events, query=QUERY, engine="spark")
    assert "spark" in wb.engine_picker.options
    run = wb.run()
    assert run.matches.positions() == cepkit.match(QUERY, events).positions() and len(run.matches)
    assert run.engine.startswith("spark") and "Spark" in run.note


def test_a_live_view_follows_a_structured_streaming_query(spark, tmp_path):
    from widgets.live import LiveView

    events = small_stream(120).assign(position=range(120))
    source = tmp_path / "events"
    source.mkdir()
    stream = spark.readStream.schema("type string, ts double, id long, v long, position long").json(str(source))
    live = LiveView.from_spark(QUERY, stream, view={"last": 5, "sample": 3})
    later = pd.DataFrame([{"type": "Z", "ts": 1000.0, "id": 0, "v": 0, "position": 120}])  # moves the watermark
    for number, batch in enumerate([events.iloc[:60], events.iloc[60:], later]):
        batch.to_json(source / f"{number}.json", orient="records", lines=True)
        for query in live.queries:
            query.processAllAvailable()
    live.stop()
    expected = cepkit.match(QUERY, events)
    assert live.match_count == len(expected) > 8 and live.batches >= 2
    assert {m.positions for _, m in (*live.latest, *live.earlier)} <= set(expected.positions())
    assert len(live.latest) == 5 and len(live.earlier) == 3 and len(live.timeline.matches) == 8
    # the watermark in the events' own unit (seconds here), as of the matches query's last finished batch
    shown = re.search(r"watermark (\d+(?:\.\d+)?) ·", live.stats.value)
    assert "stopped" in live.stats.value and shown and 0 < float(shown.group(1)) <= 1000
    assert not any(query.isActive for query in live.queries)
