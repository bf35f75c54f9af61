"""``cepkit.spark.cube_stream``: an E-Cube over a streaming DataFrame, a streaming cube per PARTITION BY key in
Structured Streaming's state, gives every query the batch ``ECube``'s matches over the same events: events
shuffled within the watermark's delay across micro-batches, the query stopped and restarted from its
checkpoint mid-stream (kill-and-restart: tests/spark/test_recovery.py)."""

import json

import numpy as np
import pandas as pd
import pytest

import cepkit
import cepkit.spark
from cepkit.ecube.workloads import COMPANIES

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

SCHEMA = "type string, ts double, position long, id long"
QUERIES = {
    "general": "SEQ(Computer c, Finance f) WITHIN 6 PARTITION BY id",
    "child": "SEQ(INTC c, Finance f) WITHIN 6 PARTITION BY id",
    "longer": "SEQ(INTC c, Finance f, EFC e) WITHIN 6 PARTITION BY id",
    "negated": "SEQ(Computer c, !MSFT m, Finance f) WITHIN 6 PARTITION BY id",
    "trailing": "SEQ(Computer c, Finance f, !EFC e) WITHIN 6 PARTITION BY id",
}


def write_batch(folder, name, rows: pd.DataFrame):
    staging = folder / f".{name}.tmp"
    staging.write_text("".join(json.dumps(r) + "\n" for r in rows.to_dict("records")))
    staging.rename(folder / f"{name}.json")


def test_the_streaming_cube_equals_the_batch_cube_out_of_order_and_restarted(spark, tmp_path):
    rng = np.random.default_rng(3)
    n, delay = 240, 4.0
    events = pd.DataFrame(
        {
            "type": rng.choice(["DELL", "INTC", "MSFT", "QQQ", "FCF", "ROM", "EFC"], n),
            "ts": np.cumsum(rng.integers(0, 3, n)).astype(float),
            "position": np.arange(1000, 1000 + n),
            "id": rng.integers(0, 3, n),
        }
    )
    # each event up to 0.9 * delay late (none behind the watermark), one far behind it, one past everything
    arrival = events.iloc[np.argsort(events["ts"].to_numpy() + rng.uniform(0, 0.9 * delay, n), kind="stable")]
    late = pd.DataFrame([{"type": "INTC", "ts": 1.0, "position": 5000, "id": 0}])
    beyond = pd.DataFrame([{"type": "Z", "ts": float(events["ts"].max() + 100), "position": 4000, "id": 0}])
    parts = np.array_split(np.arange(n), 3)
    files = [
        arrival.iloc[parts[0]],
        pd.concat([arrival.iloc[parts[1]], late]),
        pd.concat([arrival.iloc[parts[2]], beyond]),
    ]
    source, sink = tmp_path / "events", tmp_path / "sink"
    source.mkdir()

    def start():
        found = cepkit.spark.cube_stream(
            cepkit.ECube(QUERIES, COMPANIES), spark.readStream.schema(SCHEMA).json(str(source)), delay=delay
        )
        writer = found.writeStream.format("parquet").outputMode("append")
        return writer.option("path", str(sink)).option("checkpointLocation", str(tmp_path / "checkpoint")).start()

    queries = [start()]
    try:
        for k, rows in enumerate(files):
            if k == 2:  # a restart from the checkpoint: the key cubes are rebuilt from the state store
                queries[-1].stop()
                queries.append(start())
            write_batch(source, str(k), rows)
            queries[-1].processAllAvailable()
        # each run of the query reports its own progress: the late event is counted by the one that saw it
        dropped = sum(cepkit.spark.late_events(q) for q in queries)
    finally:
        queries[-1].stop()
    assert dropped == 1
    streamed = spark.read.parquet(str(sink)).toPandas()
    everything = pd.concat([events, beyond], ignore_index=True)
    position = everything["position"].to_numpy()
    keys = everything.set_index("position")["id"]
    for name, matches in cepkit.ECube(QUERIES, COMPANIES).run(everything).items():
        expected = sorted(tuple(int(position[p]) for p in row) for row in matches.positions())
        rows = streamed[streamed["query"] == name]
        assert sorted(tuple(p) for p in rows["positions"]) == expected, name
        assert len(expected) > 3
        assert all(keys[row[0]] == key for row, key in zip(rows["positions"], rows["id"]))
    for _, ids in streamed.groupby("id")["match_id"]:  # counted per key, over the cube's queries
        assert sorted(ids) == list(range(len(ids)))


@pytest.mark.parametrize(
    "queries, message",
    [
        ({"a": "SEQ(INTC c, FCF f) WITHIN 6 PARTITION BY id", "b": "SEQ(INTC c, FCF f) WITHIN 6"}, "same PARTITION BY"),
        ({"a": "SEQ(INTC c, FCF f) PARTITION BY id"}, "needs WITHIN"),
        ({"a": "SEQ(INTC c, FCF f) WHERE c.price > 3 WITHIN 6 PARTITION BY id"}, "unknown attribute 'price'"),
    ],
)
def test_a_cube_the_stream_cannot_run_is_refused_before_it_starts(spark, tmp_path, queries, message):
    with pytest.raises(cepkit.QueryError, match=message):
        cepkit.spark.cube_stream(cepkit.ECube(queries, COMPANIES), spark.readStream.schema(SCHEMA).json(str(tmp_path)))
