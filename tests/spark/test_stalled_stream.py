"""A streaming query whose batch stalls is restarted by ``cepkit.spark.supervise`` on its checkpoint, and its
sink commits every match once; a writer without a checkpoint is refused before it starts.

The stall is injected: the events pass through a step that, on its first attempt at the second micro-batch
(a marker file is made then), blocks for ever, as a ``transformWithStateInPandas`` task whose state server
went away does (no progress, no error). After the restart the marker exists and the step lets the batch
through. The matches are compared with batch ``cepkit.spark.match`` on the same events, as
tests/spark/test_recovery.py compares a killed and restarted stream's."""

import collections
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import cepkit
import cepkit.spark
from cepkit.spark.groups import output_variables

sys.path.insert(0, str(Path(__file__).parent))
from recovery import MODES, QUERIES, SCHEMA, Run, found_keys, make_events, settled  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

# Seconds without progress. A first batch after a start can go ~30 s without a task finishing at a load of
# ~10 (Spark plans it with a driver-side Python worker, then starts the Python workers): a restart there is
# harmless (it is counted, the batch runs again, each restart in a row waits twice as long), so the test asks
# only that batch 1 stalled and was restarted; 12 s keeps the suite's wait for the injected stall short.
STALL_AFTER = 12


def local_keys(events, query: str) -> collections.Counter:
    """``cepkit.match``'s matches over ``events`` (whose positions are their row numbers) as
    ``recovery.match_keys`` counts a sink's: (positions, bindings, key)."""
    variables = list(output_variables(cepkit.parse(query)))
    key = events["id"].to_numpy()
    return collections.Counter(
        (tuple(m.positions), tuple(m.bindings[v] for v in variables), int(key[m.positions[0]]))
        for m in cepkit.match(query, events, engine="stack")
    )


def blocking_once(marker: Path, position: int):
    """A ``mapInPandas`` step that blocks for ever on the first batch holding ``position``, once."""

    def step(frames):
        for frame in frames:
            if (frame["position"] == position).any() and not marker.exists():
                marker.touch()
                while True:  # a task that neither progresses nor fails: killed when its query stops
                    time.sleep(1)
            yield frame

    return step


def stream_case(spark, root: Path, events, files: int, stall: bool) -> tuple:
    """(the recovery ``Run`` of ``events`` in ``files`` micro-batches under ``root``, the writer of its
    ``match_stream`` (stack) into a file sink with a checkpoint, the stall's marker): with ``stall``, the
    events pass ``blocking_once`` at the second micro-batch's first event."""
    run = Run(root, [["stack", "reject", "files"]])
    run.prepare(events, files=files, seed=11)
    marker = root / "stalled-once"
    source = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(root / "source"))
    if stall:
        second = (root / "source" / "00001.json").read_text().splitlines()[0]
        position = int(second.split('"position": ')[1].split(",")[0])
        source = source.mapInPandas(blocking_once(marker, position), source.schema)
    found = cepkit.spark.match_stream(QUERIES["stack"], source, engine="stack", **MODES["reject"])
    writer = (
        found.writeStream.outputMode("append")
        .format("parquet")
        .option("path", str(root / "sink"))
        .option("checkpointLocation", str(root / "checkpoint"))
    )
    return run, writer, marker


def test_a_stalled_batch_is_restarted_and_every_match_committed_once(spark, tmp_path):
    run, writer, marker = stream_case(spark, tmp_path, make_events(400, 20, seed=11), files=2, stall=True)
    restarted = []
    supervisor = cepkit.spark.supervise(
        writer, stall_after=STALL_AFTER, every=1, on_restart=lambda s: restarted.append(s.restarts)
    )
    try:
        supervisor.processAllAvailable()
        settled(supervisor)
    finally:
        supervisor.stop()
    assert marker.exists() and restarted and supervisor.restarts == restarted[-1]
    stalls = [r for r in supervisor.history if r.reason == "stalled"]
    assert 1 in [r.batch for r in stalls], supervisor.history  # the second micro-batch stalled
    assert all(r.waited >= STALL_AFTER for r in stalls) and "made no progress" in supervisor.summary()
    assert supervisor.checkpoint.endswith("checkpoint") and not supervisor.failed
    committed = found_keys(spark.read.parquet(str(tmp_path / "sink")).toPandas(), "stack")
    truth = local_keys(run.events, QUERIES["stack"])
    assert sum(truth.values()) > 20
    assert max(committed.values()) == 1, "a match committed twice"
    assert committed == truth, f"lost {sum((truth - committed).values())}, extra {sum((committed - truth).values())}"


def test_a_writer_without_a_checkpoint_is_refused_before_it_starts(spark, tmp_path):
    source = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    found = cepkit.spark.match_stream(QUERIES["stack"], source, engine="stack", delay=1)
    writer = found.writeStream.outputMode("append").format("parquet").option("path", str(tmp_path / "sink"))
    with pytest.raises(ValueError, match="has none: give the writer .option.'checkpointLocation'"):
        cepkit.spark.supervise(writer)
    assert not spark.streams.active


def test_a_live_view_restarts_its_stalled_query_and_says_so(spark, tmp_path):
    """``LiveView.from_spark`` starts both its queries (events, matches) supervised: the one that meets the
    blocked batch first is restarted on the view's own checkpoint, every match still arrives once, and the
    status line says which query restarted and why."""
    from widgets.live import LiveView

    events = make_events(200, 4, seed=13)
    query = "SEQ(A a, B b) WHERE a.v < b.v WITHIN 3 s PARTITION BY id"
    source = tmp_path / "events"
    source.mkdir()
    stream = spark.readStream.schema(SCHEMA).json(str(source))
    blocked = stream.mapInPandas(blocking_once(tmp_path / "stalled-once", 100), stream.schema)
    live = LiveView.from_spark(query, blocked, view={"last": 5, "sample": 3}, supervise={"stall_after": STALL_AFTER})
    checkpoint = live._own_checkpoint
    later = pd.DataFrame([{"type": "Z", "ts": 1000.0, "position": 200, "v": 0, "id": 0}])  # moves the watermark
    try:
        for number, batch in enumerate([events.iloc[:100], events.iloc[100:], later]):
            batch.to_json(source / f"{number}.json", orient="records", lines=True)
            for supervised in live.queries:
                supervised.processAllAvailable()
    finally:
        live.stop()
    expected = cepkit.match(query, events)
    assert live.match_count == len(expected) > 8
    assert {m.positions for _, m in (*live.latest, *live.earlier)} <= set(expected.positions())
    assert sum(q.restarts for q in live.queries) >= 1
    assert "query restarted 1×" in live.stats.value or "query restarted 2×" in live.stats.value, live.stats.value
    assert "made no progress for" in live.stats.value and not live.failed
    assert not Path(checkpoint).exists() and not any(q.isActive for q in live.queries)
