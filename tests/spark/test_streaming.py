"""``cepkit.spark.match_stream`` over a file source in several micro-batches gives the matches of batch
``cepkit.spark.match`` on the same events; events later than the watermark are dropped and counted."""

import json

import numpy as np
import pandas as pd
import pytest

import cepkit
import cepkit.spark
from cepkit.spark.groups import output_variables

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

SCHEMA = "type string, ts double, position long, v long, id long"
QUERY = "SEQ(A a, !C c, B b) WHERE a.v <= b.v WITHIN 6 s PARTITION BY id"


def write_batch(folder, name, rows: pd.DataFrame):
    """A micro-batch: one JSON-lines file, written aside then renamed so Spark never reads half of it."""
    staging = folder / f".{name}.tmp"
    staging.write_text("".join(json.dumps(r) + "\n" for r in rows.to_dict("records")))
    staging.rename(folder / f"{name}.json")


def unordered(match_rows, frame: pd.DataFrame, variables) -> list:
    rows = match_rows(frame, variables)
    return sorted(zip(rows, frame["id"].tolist()), key=repr)


def test_stream_in_micro_batches_equals_batch(spark, tmp_path, match_rows, memory_sink):
    rng = np.random.default_rng(7)
    n, delay = 90, 4.0
    events = pd.DataFrame(
        {
            "type": rng.choice(list("ABC"), n),
            "ts": np.cumsum(rng.uniform(0.1, 1.5, n)).round(3),
            "position": np.arange(n),
            "v": rng.integers(0, 5, n),
            "id": rng.integers(0, 3, n),
        }
    )
    # Spark's watermark starts at 0 and drops rows at or before it: an event at ts 0 must still count.
    events.loc[0, "ts"] = 0.0
    # Arrival order: each event up to `delay` seconds late, so none falls behind the watermark ...
    arrival = events.iloc[np.argsort(events["ts"].to_numpy() + rng.uniform(0, delay, n), kind="stable")]
    # ... but for one, far behind it; and an event past everything moves the watermark beyond the last match.
    late = pd.DataFrame([{"type": "A", "ts": 1.0, "position": n + 1, "v": 0, "id": 0}])
    beyond = pd.DataFrame([{"type": "Z", "ts": float(events["ts"].max() + 100), "position": n, "v": 0, "id": 0}])
    source = tmp_path / "events"
    source.mkdir()
    stream = spark.readStream.schema(SCHEMA).json(str(source))
    found = cepkit.spark.match_stream(QUERY, stream, engine="reference", disorder="kslack", k=delay)
    query = memory_sink(found, "stream_matches")
    try:
        first, second, third = np.array_split(np.arange(n), 3)
        for name, rows in [
            ("0", arrival.iloc[first]),
            ("1", pd.concat([arrival.iloc[second], late])),
            ("2", pd.concat([arrival.iloc[third], beyond])),
        ]:
            write_batch(source, name, rows)
            query.processAllAvailable()
        streamed = spark.sql("select * from stream_matches").toPandas()
        assert cepkit.spark.late_events(query) == 1
    finally:
        query.stop()
    everything = pd.concat([events, beyond], ignore_index=True)
    batch = cepkit.spark.match(QUERY, spark.createDataFrame(everything), engine="reference").toPandas()
    variables = list(output_variables(cepkit.parse(QUERY)))
    assert len(batch) > 5
    assert unordered(match_rows, streamed, variables) == unordered(match_rows, batch, variables)
    for _, key_rows in streamed.groupby("id"):  # match ids count each key's matches
        assert sorted(key_rows["match_id"]) == list(range(len(key_rows)))


@pytest.mark.parametrize(
    "query, options, error, message",
    [
        ("SEQ(A a, B b) PARTITION BY id", {}, cepkit.QueryError, "needs WITHIN"),
        ("SEQ(A a, B b) WITHIN 5 s CONSUME BY ANY", {}, cepkit.QueryError, "CONSUME BY"),
        ("SEQ(A a, B b) WITHIN 5 s", {"disorder": "aggressive"}, ValueError, "append-only"),
        ("SEQ(A a, B b) WITHIN 5 s", {"disorder": "conservative"}, ValueError, "needs max_delay"),
        ("SEQ(A a, B b) WITHIN 5 s", {"disorder": "conservative", "max_delay": {"A": 5}}, ValueError, "add '\\*'"),
        ("SEQ(A a, B b) WITHIN 5 s", {"position": "seq"}, cepkit.EventError, "position column 'seq'"),
        ("SEQ(A a, B b) WITHIN 5 s", {"late": "keep"}, ValueError, "late= is 'drop' .* or 'side'"),
        ("SEQ(A kind, B b) WITHIN 5 s", {"late": "side"}, cepkit.QueryError, "'kind' would share its output column"),
    ],
)
def test_what_a_stream_cannot_do_is_said_before_it_starts(spark, tmp_path, query, options, error, message):
    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    with pytest.raises(error, match=message):
        cepkit.spark.match_stream(query, stream, engine="reference", **options)


def test_a_bad_row_stops_the_stream_with_its_position_and_row(spark, tmp_path, memory_sink):
    """A row the schema cannot rule out (here a null ts) fails the stream in the worker that reads it: the
    StreamingQueryException's message carries cepkit's EventError (field, position, the row), not only
    the JVM's trace."""
    source = tmp_path / "events"
    source.mkdir()
    rows = pd.DataFrame({"type": ["A", "B", "B"], "ts": [1.0, None, 3.0], "position": [0, 1, 2], "v": 0, "id": 1})
    write_batch(source, "0", rows)
    stream = spark.readStream.schema(SCHEMA).json(str(source))
    query = memory_sink(cepkit.spark.match_stream(QUERY, stream, engine="reference"), "bad_rows")
    try:
        with pytest.raises(Exception) as caught:
            query.processAllAvailable()
    finally:
        query.stop()
    assert (
        "EventError: event at position 1, field 'ts': ts is missing (null or NaN) or not finite; the row: "
        "{type: 'B', v: 0, id: 1, ts: None, position: 1}"
    ) in str(caught.value)


def test_late_events_come_out_as_rows_with_the_watermark_they_missed(spark, tmp_path, match_rows, memory_sink):
    """``late="side"``: the events Spark would drop (``late="drop"`` counts them, on the same micro-batches)
    come out as rows of kind "late" with their key, type, ts, position and the watermark they missed: the
    largest event time of the earlier micro-batches less the delay (Spark keeps it in ms), the same one
    ``late="drop"`` applies; the matches are batch ``match`` over the events without them."""
    rng = np.random.default_rng(11)
    n, delay, batches = 120, 2.0, 4
    events = pd.DataFrame(
        {
            "type": rng.choice(list("ABC"), n),
            "ts": np.cumsum(rng.uniform(0.1, 1.0, n)).round(3),
            "position": np.arange(n),
            "v": rng.integers(0, 5, n),
            "id": rng.integers(0, 3, n),
        }
    )
    late = rng.random(n) < 0.1  # these arrive in the next micro-batch but one: often too late
    parts = np.array_split(np.arange(n), batches)
    arrival = [
        events.iloc[np.concatenate([p[~late[p]], parts[i - 2][late[parts[i - 2]]] if i >= 2 else []]).astype(int)]
        for i, p in enumerate(parts)
    ]
    arrival[-1] = pd.concat([arrival[-1], events.iloc[parts[-2][late[parts[-2]]]]])
    beyond = pd.DataFrame([{"type": "Z", "ts": float(events["ts"].max() + 100), "position": n, "v": 0, "id": 0}])
    arrival.append(beyond)  # moves the watermark past every match
    watermark, expected_late = 0, []
    for rows in arrival:  # Spark's rule: late when event time <= the watermark
        time_us = np.floor(rows["ts"].to_numpy() * 1e6).astype(np.int64) + 1
        expected_late += [
            (int(p), watermark / 1000) for p, t in zip(rows["position"], time_us) if t <= watermark * 1000
        ]
        watermark = max(watermark, int(time_us.max() // 1000) - int(delay * 1000))
    assert len(expected_late) >= 2
    source = tmp_path / "events"
    source.mkdir()
    stream = spark.readStream.schema(SCHEMA).json(str(source))
    queries = {
        mode: memory_sink(
            cepkit.spark.match_stream(QUERY, stream, engine="reference", delay=delay, late=mode), f"late_{mode}"
        )
        for mode in ("drop", "side")
    }
    try:
        for i, rows in enumerate(arrival):
            write_batch(source, str(i), rows)
            for query in queries.values():
                query.processAllAvailable()
        side = spark.sql("select * from late_side").toPandas()
        assert cepkit.spark.late_events(queries["drop"]) == len(expected_late)
        assert cepkit.spark.late_events(queries["side"]) == 0
        dropped_mode = spark.sql("select * from late_drop").toPandas()
    finally:
        for query in queries.values():
            query.stop()
    late_rows = side[side["kind"] == "late"]
    assert sorted(zip(late_rows["late_position"], late_rows["watermark"])) == sorted(expected_late)
    by_position = events.set_index("position")
    for _, row in late_rows.iterrows():
        event = by_position.loc[row["late_position"]]
        assert (row["late_type"], row["late_ts"], row["id"]) == (event["type"], event["ts"], event["id"])
        assert row["late_ts"] < row["watermark"] and pd.isna(row["match_id"])
    variables = list(output_variables(cepkit.parse(QUERY)))
    matches = side[side["kind"] == "match"]
    assert matches[["late_type", "late_ts", "late_position", "watermark"]].isna().all().all()
    on_time = pd.concat([events[~events["position"].isin([p for p, _ in expected_late])], beyond], ignore_index=True)
    batch = cepkit.spark.match(QUERY, spark.createDataFrame(on_time), engine="reference").toPandas()
    batch["positions"] = [[int(on_time["position"].iat[i]) for i in p] for p in batch["positions"]]
    for var in variables:
        batch[var] = [None if pd.isna(i) else int(on_time["position"].iat[int(i)]) for i in batch[var]]
    assert len(matches) > 5
    assert (
        unordered(match_rows, matches, variables)
        == unordered(match_rows, dropped_mode, variables)
        == unordered(match_rows, batch, variables)
    )
