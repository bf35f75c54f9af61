"""``cepkit.spark.cube_stream``: an E-Cube over a streaming DataFrame, per PARTITION BY key and micro-batch,
gives every query the batch ``ECube``'s matches over the same events."""

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


def test_the_streaming_cube_equals_the_batch_cube_per_key(spark, tmp_path):
    rng = np.random.default_rng(3)
    n = 240
    events = pd.DataFrame(
        {
            "type": rng.choice(["DELL", "INTC", "MSFT", "QQQ", "FCF", "ROM", "EFC"], n),
            "ts": np.cumsum(rng.integers(0, 3, n)).astype(float),
            "position": np.arange(1000, 1000 + n),
            "id": rng.integers(0, 3, n),
        }
    )
    cube = cepkit.ECube(QUERIES, COMPANIES)
    source = tmp_path / "events"
    source.mkdir()
    running = cepkit.spark.cube_stream(
        cube, spark.readStream.schema(SCHEMA).json(str(source)), checkpoint=str(tmp_path / "checkpoint")
    )
    try:
        for k, part in enumerate(np.array_split(np.arange(n), 3)):
            write_batch(source, str(k), events.iloc[part].sample(frac=1, random_state=k))  # shuffled in a batch
            running.query.processAllAvailable()
    finally:
        running.close()
    assert len(running.cubes) == 3 and running.batches >= 3
    streamed = running.frames()
    position = events["position"].to_numpy()
    for name, matches in cepkit.ECube(QUERIES, COMPANIES).run(events).items():
        expected = sorted(tuple(int(position[p]) for p in row) for row in matches.positions())
        assert sorted(streamed[name]["positions"]) == expected, name
        assert len(expected) > 3
        keys = events.set_index("position")["id"]
        assert all(keys[row[0]] == key for row, key in zip(streamed[name]["positions"], streamed[name]["id"]))


def test_queries_with_different_partitions_are_refused(spark, tmp_path):
    cube = cepkit.ECube({"a": "SEQ(INTC c, FCF f) WITHIN 6 PARTITION BY id", "b": "SEQ(INTC c, FCF f) WITHIN 6"})
    with pytest.raises(cepkit.QueryError, match="same PARTITION BY"):
        cepkit.spark.cube_stream(cube, spark.readStream.schema(SCHEMA).json(str(tmp_path)))
