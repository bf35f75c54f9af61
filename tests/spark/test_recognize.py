"""MATCH_RECOGNIZE on Spark: the rows cepkit.sql gives locally, the schema known before any job, and
errors before any job."""

import numpy as np
import pandas as pd
import pytest

import cepkit
from cepkit.errors import QueryError

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

QUERY = """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
    MEASURES FIRST(A.ts) AS start_ts, LAST(B.price) AS low, COUNT(B.*) AS falls, CLASSIFIER() AS last_var,
             AVG(B.price) AS mean_b
    {rows} PATTERN (A B+ C?) DEFINE B AS price < PREV(price), C AS price > PREV(price) + 3)"""


def frame(n=600, keys=7, seed=1):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"id": rng.integers(0, keys, n), "ts": rng.permutation(n), "price": rng.integers(0, 20, n).astype(float)}
    )


def ordered(df, keys):
    return df.sort_values(keys, kind="stable").reset_index(drop=True)


def exchanges(df) -> int:
    return df._jdf.queryExecution().executedPlan().toString().count("Exchange")


def same_rows(local, remote, keys):
    assert list(remote.columns) == list(local.columns)
    local, remote = ordered(local, keys), ordered(remote, keys)
    assert len(local) > 20
    for name in local.columns:
        assert (
            local[name].astype(object).where(local[name].notna(), None).tolist()
            == remote[name].astype(object).where(remote[name].notna(), None).tolist()
        ), name


@pytest.mark.parametrize("rows", ["ONE ROW PER MATCH", "ALL ROWS PER MATCH WITH UNMATCHED ROWS"])
@pytest.mark.parametrize("one_task", [None, True, False])
def test_spark_gives_the_local_rows(spark, rows, one_task):
    """Every way the rows reach ``cepkit.sql`` gives its rows: a small input in one task without a shuffle
    (the default here: a few kB, under ``spark.sql.autoBroadcastJoinThreshold``), or shuffled by key."""
    data = frame()
    query = QUERY.format(rows=rows)
    remote = cepkit.spark.sql(query, spark.createDataFrame(data), one_task=one_task)
    assert exchanges(remote) == (1 if one_task is False else 0)
    same_rows(
        cepkit.sql(query, data), remote.toPandas(), ["id", "start_ts"] if rows.startswith("ONE") else ["id", "ts"]
    )


def test_rows_clustered_by_key_are_not_shuffled_again(spark, tmp_path):
    """A table bucketed by the PARTITION BY key, or a frame already repartitioned by it: matched where its
    rows lie, one group per key, without a second exchange."""
    data = frame(900, keys=9, seed=4)
    query = QUERY.format(rows="ONE ROW PER MATCH")
    local = cepkit.sql(query, data)
    repartitioned = spark.createDataFrame(data).repartition(3, "id")
    remote = cepkit.spark.sql(query, repartitioned, one_task=False)
    assert exchanges(remote) == exchanges(repartitioned) == 1
    same_rows(local, remote.toPandas(), ["id", "start_ts"])
    spark.createDataFrame(data).write.bucketBy(4, "id").option("path", str(tmp_path / "rows")).saveAsTable(
        "recognize_bucketed"
    )
    try:
        remote = cepkit.spark.sql(query, spark.table("recognize_bucketed"), one_task=False)
        assert exchanges(remote) == 0
        same_rows(local, remote.toPandas(), ["id", "start_ts"])
    finally:
        spark.sql("DROP TABLE recognize_bucketed")


@pytest.mark.parametrize("one_task", [None, False])
def test_timestamps_strings_and_nulls_keep_their_types(spark, one_task):
    """The output rows travel back as Arrow batches of the query's schema: a timestamp measure, a string,
    an integer count and a null average come out as ``cepkit.sql`` gives them."""
    rng = np.random.default_rng(2)
    n = 400
    data = pd.DataFrame(
        {
            "site": rng.choice(["JFK", "LGA", "EWR"], n),
            "ts": pd.Timestamp("2013-01-01", tz="UTC") + pd.to_timedelta(np.sort(rng.integers(0, 10**6, n)), "s"),
            "type": rng.choice(["FOG", "DELAYED", "ON_TIME"], n),
            "delay": np.where(rng.random(n) < 0.2, np.nan, rng.integers(0, 90, n)),
        }
    )
    query = """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY site ORDER BY ts
        MEASURES W.ts AS weather_at, W.type AS weather, COUNT(D.*) AS delayed, AVG(D.delay) AS mean_delay
        PATTERN (W D{2,}) WITHIN INTERVAL '1' DAY
        DEFINE W AS type = 'FOG', D AS type = 'DELAYED' AND (delay IS NULL OR AVG(D.delay) < 80))"""
    local = ordered(cepkit.sql(query, data), ["site", "weather_at"])
    remote = cepkit.spark.sql(query, spark.createDataFrame(data), one_task=one_task).toPandas()
    remote = ordered(remote, ["site", "weather_at"])
    assert len(local) > 5 and local["mean_delay"].isna().any()
    assert list(remote.columns) == list(local.columns)
    assert (remote["weather_at"].dt.tz_localize("UTC") == local["weather_at"]).all()
    for name in ["site", "weather", "delayed"]:
        assert remote[name].tolist() == local[name].tolist(), name
    assert np.allclose(remote["mean_delay"].astype(float), local["mean_delay"].astype(float), equal_nan=True)


def test_errors_come_before_any_job(spark):
    data = spark.createDataFrame(frame(20))
    with pytest.raises(
        QueryError, match="no column 'prise' in t; the columns are id, ts, price; did you mean 'price'\\?"
    ):
        cepkit.spark.sql(
            "SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts PATTERN (A) DEFINE A AS prise > 1)", data
        )
    with pytest.raises(QueryError, match="line 1, column"):
        cepkit.spark.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A B) DEFINE)", data)


def test_without_partition_by_one_group_warns(spark):
    data = frame(50, keys=1)
    query = (
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES COUNT(*) AS n PATTERN (A B+) "
        "DEFINE B AS price < PREV(price))"
    )
    with pytest.warns(cepkit.spark.OneGroupWarning):
        remote = cepkit.spark.sql(query, spark.createDataFrame(data))
    assert remote.toPandas()["n"].tolist() == cepkit.sql(query, data)["n"].tolist()


STREAM_QUERY = """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
    MEASURES FIRST(A.ts) AS start_ts, LAST(B.price) AS low, COUNT(B.*) AS falls, MATCH_NUMBER() AS n
    PATTERN (A B+ C) WITHIN INTERVAL '40' SECOND
    DEFINE B AS price < PREV(price), C AS price > PREV(price) + 3)"""


def test_a_stream_gives_the_rows_at_rest(spark, tmp_path, memory_sink):
    """Rows arrive as files, up to 5 s out of order within each; a row far past the rest moves the watermark
    beyond every window. The streamed rows are the batch query's rows (minus none: every attempt is closed)."""
    import json

    rng = np.random.default_rng(3)
    n = 400
    rows = pd.DataFrame(
        {
            "id": rng.integers(0, 4, n),
            "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(n) * 2, unit="s"),
            "price": rng.integers(0, 20, n).astype(float),
        }
    )
    beyond = pd.DataFrame({"id": [0], "ts": [rows.ts.max() + pd.Timedelta(hours=1)], "price": [0.0]})
    source = tmp_path / "rows"
    source.mkdir()
    arrival = rows.iloc[np.argsort(np.arange(n) * 2 + rng.uniform(0, 5, n), kind="stable")]
    for i, part in enumerate([*(arrival.iloc[c] for c in np.array_split(np.arange(n), 4)), beyond]):
        staging = source / f".{i}.tmp"
        staging.write_text(
            "".join(json.dumps({**r, "ts": r["ts"].isoformat()}) + "\n" for r in part.to_dict("records"))
        )
        staging.rename(source / f"{i}.json")
    stream = (
        spark.readStream.schema("id long, ts timestamp, price double").option("maxFilesPerTrigger", 1).json(str(source))
    )
    found = cepkit.spark.sql(STREAM_QUERY, stream, delay=5)
    query = memory_sink(found, "recognized", availableNow=True)
    query.awaitTermination(240)
    streamed = spark.sql("select * from recognized").toPandas()
    local = cepkit.sql(STREAM_QUERY, pd.concat([rows, beyond], ignore_index=True))
    assert len(local) > 10
    assert list(streamed.columns) == list(local.columns)
    keys = ["id", "n"]
    assert ordered(streamed, keys).to_dict("records") == ordered(local, keys).to_dict("records")


def test_a_stream_refuses_all_rows_per_match_before_it_starts(spark, tmp_path):
    stream = spark.readStream.schema("id long, ts timestamp, price double").json(str(tmp_path))
    with pytest.raises(QueryError, match="ONE ROW PER MATCH only"):
        cepkit.spark.sql(QUERY.format(rows="ALL ROWS PER MATCH"), stream)
