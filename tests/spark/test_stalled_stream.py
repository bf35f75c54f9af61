"""A streaming query whose batch stalls is restarted by ``cepkit.spark.supervise`` on its checkpoint, and its
sink commits every match once; a writer without a checkpoint is refused before it starts.

The stall is injected: the events pass through a step that, on its first attempt at the second micro-batch
(a marker file is made then), blocks for ever, as a ``transformWithStateInPandas`` task whose state server
went away does (no progress, no error). After the restart the marker exists and the step lets the batch
through. The matches are compared with batch ``cepkit.spark.match`` on the same events, as
tests/spark/test_recovery.py compares a killed and restarted stream's."""

import sys
import time
from pathlib import Path

import pytest

import cepkit.spark

sys.path.insert(0, str(Path(__file__).parent))
from recovery import MODES, QUERIES, SCHEMA, Run, expected_keys, found_keys, make_events, settled  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

STALL_AFTER = 30  # seconds without progress: above a task's time here even at a load of 30


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


def test_a_stalled_batch_is_restarted_and_every_match_committed_once(spark, tmp_path):
    run = Run(tmp_path, [["stack", "reject", "files"]])
    run.prepare(make_events(600, 20, seed=11), files=3, seed=11)
    second = (tmp_path / "source" / "00001.json").read_text().splitlines()[0]
    position = int(second.split('"position": ')[1].split(",")[0])
    marker = tmp_path / "stalled-once"
    source = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "source"))
    blocked = source.mapInPandas(blocking_once(marker, position), source.schema)
    found = cepkit.spark.match_stream(QUERIES["stack"], blocked, engine="stack", **MODES["reject"])
    writer = (
        found.writeStream.outputMode("append")
        .format("parquet")
        .option("path", str(tmp_path / "sink"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
    )
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
    assert [r.batch for r in stalls][-1:] == [1], supervisor.history  # the second micro-batch stalled
    assert stalls[-1].waited >= STALL_AFTER and "made no progress" in supervisor.summary()
    assert supervisor.checkpoint.endswith("checkpoint") and not supervisor.failed
    committed = found_keys(spark.read.parquet(str(tmp_path / "sink")).toPandas(), "stack")
    truth = expected_keys(spark, run.events, "stack")
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
