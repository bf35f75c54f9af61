"""``cepkit.spark.match(..., type=, ts=)``: a Spark DataFrame with its own column names and a string time gives
the local matches; a missing column or an unreadable time fails before any matching job, naming the column."""

import pandas as pd
import pytest

import cepkit
import cepkit.spark
from cepkit.errors import ColumnError

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

CLICKS = pd.DataFrame(
    {
        "event_name": ["view", "view", "cart", "cart", "buy", "buy"],
        "event_time": [
            "2024-05-01 10:00:00",
            "2024-05-01 10:01:00",
            "2024-05-01 10:05:00",
            "2024-05-01 10:06:00",
            "2024-05-01 10:20:00",
            "2024-05-01 11:00:00",
        ],
        "user_id": [1, 2, 1, 2, 1, 2],
    }
)
QUERY = "view v ; cart c ; buy b WITHIN 30 min PARTITION BY user_id"


def test_own_columns_and_string_times_give_the_local_matches(spark):
    local = cepkit.match(QUERY, CLICKS, type="event_name", ts="event_time").positions()
    found = cepkit.spark.match(QUERY, spark.createDataFrame(CLICKS), type="event_name", ts="event_time")
    assert [tuple(r.positions) for r in found.collect()] == local == [(0, 2, 4)]


def test_a_missing_column_or_a_bad_time_names_the_column(spark):
    frame = spark.createDataFrame(CLICKS)
    with pytest.raises(ColumnError, match="no column 'event' for type=.*did you mean 'event_name'"):
        cepkit.spark.match(QUERY, frame, type="event", ts="event_time")
    bad = spark.createDataFrame(CLICKS.assign(event_time=["2024-05-01 10:00:00", "soon", *CLICKS.event_time[2:]]))
    with pytest.raises(ColumnError, match="column 'event_time': 'soon' is neither a number nor a datetime"):
        cepkit.spark.match(QUERY, bad, type="event_name", ts="event_time")


def test_a_stream_with_its_own_columns_gives_the_batch_matches(spark, tmp_path, memory_sink):
    source = tmp_path / "events"
    source.mkdir()
    rows = CLICKS.assign(position=range(len(CLICKS)))
    (source / "0.json").write_text(rows.to_json(orient="records", lines=True))
    stream = spark.readStream.schema("event_name string, event_time string, user_id long, position long").json(
        str(source)
    )
    found = cepkit.spark.match_stream(QUERY, stream, type="event_name", ts="event_time", disorder="kslack", k=1)
    query = memory_sink(found, "own_columns")
    try:
        query.processAllAvailable()
        beyond = {"event_name": "view", "event_time": "2024-05-01 13:00:00", "user_id": 1, "position": 6}
        (source / "1.json").write_text(pd.DataFrame([beyond]).to_json(orient="records", lines=True))
        query.processAllAvailable()
        streamed = spark.sql("select positions from own_columns").toPandas()
    finally:
        query.stop()
    assert [tuple(p) for p in streamed["positions"]] == [(0, 2, 4)]
