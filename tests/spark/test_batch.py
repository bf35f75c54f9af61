"""``cepkit.spark.match`` gives the local positions and bindings: on the papers' worked examples, on random
queries over partitioned random streams, across time slices; bad input fails before any job runs."""

import datetime as dt
import uuid
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import cepkit
import cepkit.spark
from cepkit.datasets import cel_fire_sensors, neel_hospital, ses_chemo, ses_stocks
from cepkit.spark import OneGroupWarning
from cepkit.spark.batch import _number_events, _numbered_as_given
from cepkit.spark.frames import Layout
from cepkit.spark.groups import POS, TS, output_variables
from strategies import flat_seq_queries, streams, unary_queries

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

PHI1 = "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)"
PHI3 = "(H AS x ; (T AS y FILTER y.id = 1)+ ; H AS z) FILTER (x.hum < 30 and z.hum > 60 and x.id = 1 and z.id = 1)"
CHEMO_P1 = (
    "PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE c.PID = p.PID and p.PID = d.PID and d.PID = b.PID "
    "and prev(p.V) < p.V WITHIN 15 days"
)
STOCKS_P3 = (
    "PATTERN SEQ({GOOG s1}, {GOOG s2}, {GOOG+ s3}, {GOOG s4}) WHERE s1.P < s2.P and s2.P < s3.P and "
    "prev(s3.P) < s3.P and s1.V < s4.V and s2.V < s4.V and s3.V < s4.V WITHIN 100 ms"
)
R_Q1 = (
    "PATTERN SEQ(Recycle r, Wash w, !AND(Sharpen s, Disinfect d, s.roomID = d.roomID, s.id = r.id, "
    "d.id = r.id), Operate o, r.id = o.id, r.id = w.id) WITHIN 10 minutes"
)


@pytest.fixture(scope="session")
def same_as_local(spark, match_rows):
    """``same_as_local(query, events, ...)``: Spark's rows equal ``cepkit.match(...).to_pandas()`` (match ids,
    positions, bindings, in order); returns them."""

    def check(query, events: pd.DataFrame, engine="reference", slice_length=None, **kwargs) -> pd.DataFrame:
        local = cepkit.match(query, events, engine=engine, **kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OneGroupWarning)
            found = cepkit.spark.match(
                query, spark.createDataFrame(events), engine=engine, slice_length=slice_length, **kwargs
            ).toPandas()
        variables = list(output_variables(cepkit.parse(query)))
        assert list(found["match_id"]) == list(range(len(found)))
        expected = match_rows(local.to_pandas().reindex(columns=["positions", *variables]), variables)
        assert match_rows(found, variables) == expected, query
        return found

    return check


# ----------------------------------------------------------------------------- the papers' worked examples
def test_cel_phi1_and_phi3_as_one_group(spark, same_as_local):
    """[CEL] §2: ⟦φ1⟧(S) = {1,2}, {1,8}, {5,8}; ⟦φ3⟧(S) = {3,4,6,7}, {3,4,7}, {3,6,7} with y bound to a
    tuple; NXT(φ1) keeps {1,2}, {1,8}. Neither has PARTITION BY or WITHIN: one group, with a warning."""
    events = cel_fire_sensors()
    found = same_as_local(PHI1, events)
    assert [tuple(p) for p in found["positions"]] == [(1, 2), (1, 8), (5, 8)]
    found = same_as_local(PHI3, events)
    assert sorted(map(tuple, found["positions"])) == [(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)]
    assert sorted(map(tuple, found["y"])) == [(4,), (4, 6), (6,)]
    found = same_as_local(PHI1, events, strategy="NEXT")
    assert [tuple(p) for p in found["positions"]] == [(1, 2), (1, 8)]
    with pytest.warns(OneGroupWarning):
        cepkit.spark.match(PHI1, spark.createDataFrame(events), engine="reference")


def test_cel_phi1_partitioned_by_sensor(same_as_local):
    """φ1 with PARTITION BY id: one group per sensor; the key column comes back with each match."""
    found = same_as_local(PHI1 + " PARTITION BY id", cel_fire_sensors())
    assert list(found["id"]) == [0, 0, 0]


def test_ses_chemo_p1_over_date_slices(same_as_local):
    """[SES] Fig. 3.1 Ex 3.4 (11 matches) and Ex 3.5 (STNM, 3), datetime ts, 15-day window, slices of 4 days;
    the Kleene variable p is an array<long> column."""
    events = ses_chemo(3)
    found = same_as_local(CHEMO_P1, events, slice_length=4 * 86400)
    assert len(found) == 11
    assert len(same_as_local(CHEMO_P1, events, strategy="STNM", slice_length=4 * 86400)) == 3


def test_ses_stocks_p3_robust_stnm(same_as_local):
    """[SES] Fig. 6.1(a) Ex 6.5: robust skip-till-next-match (4 matches) looks at full matches after the
    candidate, so slices receive a window after their own part. Under ALL, docs/references.md E17: Def 3.2 gives
    11 matches where the thesis lists 9."""
    found = same_as_local(STOCKS_P3, ses_stocks(6), strategy="ROBUST_STNM", slice_length=0.05)
    assert len(found) == 4
    assert len(same_as_local(STOCKS_P3, ses_stocks(6), slice_length=0.05)) == 11


def test_neel_correlated_negated_and(same_as_local):
    """[CSV] Fig 2 (its Q1): the negated AND is checked over the window; engine="auto" on Spark picks
    the engine the local API picks."""
    events = neel_hospital("rq1")
    same_as_local(R_Q1, events)
    same_as_local(R_Q1, events, engine="auto")


# ----------------------------------------------------------------------------- random queries and streams
def frame_of(events: list) -> pd.DataFrame:
    return pd.DataFrame(events, columns=["type", "ts", "v", "id"])


@settings(max_examples=6, deadline=None)
@given(
    streams(min_size=1, max_size=24, ids=3),
    st.one_of(
        unary_queries(strategies=("ALL", "NEXT", "PARTITION_STRICT"), max_depth=2),
        flat_seq_queries(strategies=("ALL", "STNM")),
    ),
)
def test_random_queries_on_partitioned_streams(same_as_local, events, query):
    """Issue 3: Spark batch results equal local ``cepkit.match`` on random queries, one group per key."""
    assume("PARTITION BY" in query)
    same_as_local(query, frame_of(events))


@settings(max_examples=3, deadline=None)
@given(st.one_of(st.integers(1, 6), st.floats(0.5, 8)))
def test_time_slices_on_spark(same_as_local, length):
    """The slices cut by Spark (``F.floor`` on the same formula) give the local matches, whatever their size,
    also with every key of a PARTITION BY query in each slice."""
    rng = np.random.default_rng(3)
    events = frame_of(
        [
            {"type": t, "ts": int(ts), "v": int(v), "id": int(k)}
            for t, ts, v, k in zip(
                rng.choice(list("ABC"), 40),
                np.cumsum(rng.integers(0, 3, 40)),
                rng.integers(0, 5, 40),
                rng.integers(0, 3, 40),
            )
        ]
    )
    same_as_local("SEQ(A a, !C c, B b) WHERE a.v < b.v WITHIN 4", events, slice_length=length)
    same_as_local("SEQ(A a, B+ b) WITHIN 5 EVENTS", events, slice_length=length)
    found = same_as_local("SEQ(A a, !C c, B b) WITHIN 4 PARTITION BY id", events, slice_length=length)
    assert set(found["id"]) <= {0, 1, 2}


# ----------------------------------------------------------------------------- input forms
def test_timestamp_kinds_and_the_position_column(spark, match_rows):
    """ts as timestamp, timestamp without time zone (read as UTC) or date; equal ts ordered by ``position``."""
    base = dt.datetime(2024, 3, 31, 1, 0)
    local = pd.DataFrame({"type": ["A", "B", "A", "B"], "ts": [base + dt.timedelta(minutes=m) for m in (0, 1, 1, 3)]})
    query = "SEQ(A a, B b) WITHIN 2 min"
    expected = cepkit.match(query, local, engine="reference").positions()
    for kind in ("timestamp", "timestamp_ntz"):
        df = spark.createDataFrame(local).withColumn("ts", F.col("ts").cast(kind))
        found = cepkit.spark.match(query, df, engine="reference").toPandas()
        assert [tuple(p) for p in found["positions"]] == expected
    days = spark.createDataFrame(pd.DataFrame({"type": ["A", "B"], "ts": [dt.date(2024, 1, 1), dt.date(2024, 1, 3)]}))
    found = cepkit.spark.match("SEQ(A a, B b) WITHIN 2 days", days, engine="reference").toPandas()
    assert [tuple(p) for p in found["positions"]] == [(0, 1)]
    ties = spark.createDataFrame(pd.DataFrame({"type": ["B", "A"], "ts": [5, 5], "position": [1, 0]}))
    found = cepkit.spark.match("SEQ(A a, B b) WITHIN 1", ties, engine="reference").toPandas()
    assert match_rows(found, ["a", "b"]) == [((0, 1), (0, 1))]  # the A comes first: its position column is 0


def test_without_ts_positions_are_the_row_order(same_as_local):
    events = pd.DataFrame({"type": list("ABAB"), "v": [1, 2, 3, 4]})
    same_as_local("SEQ(A a, B b) WHERE a.v < b.v WITHIN 2 EVENTS", events)


def test_schema_of_the_matches(spark):
    df = spark.createDataFrame(
        frame_of([{"type": "A", "ts": 0, "v": 1, "id": 2}, {"type": "B", "ts": 1, "v": 1, "id": 2}])
    )
    found = cepkit.spark.match("SEQ(A a, B+ b) WITHIN 3 PARTITION BY id", df, engine="reference")
    assert found.schema.simpleString() == (
        "struct<match_id:bigint,positions:array<bigint>,a:bigint,b:array<bigint>,id:bigint>"
    )
    assert found.collect()[0].asDict() == {"match_id": 0, "positions": [0, 1], "a": 0, "b": [1], "id": 2}


def test_a_local_frame_is_handed_to_the_session(spark, match_rows):
    """A pandas DataFrame, a pyarrow Table or RecordBatch gives what its Spark DataFrame gives; other things
    are refused by name (a pandas frame used to fail on ``.schema``)."""
    import pyarrow as pa

    events = pd.DataFrame({"type": list("ABCAB"), "ts": [0.0, 1, 2, 3, 4], "v": [1, 2, 3, 4, 5]})
    query = "SEQ(A a, B b) WHERE a.v < b.v WITHIN 10"
    expected = match_rows(cepkit.spark.match(query, spark.createDataFrame(events)).toPandas(), ["a", "b"])
    assert expected == match_rows(cepkit.match(query, events).to_pandas(), ["a", "b"])
    table = pa.Table.from_pandas(events, preserve_index=False)
    for local in (events, table, table.to_batches()[0]):
        assert match_rows(cepkit.spark.match(query, local).toPandas(), ["a", "b"]) == expected
    with pytest.raises(TypeError, match="Spark DataFrame .* not list"):
        cepkit.spark.match(query, events.to_dict("records"))


def _local_frames():
    """(name, frame, query, own columns): local frames the driver numbers, out of order and with ties."""
    rng = np.random.default_rng(7)
    n = 400
    ts = rng.integers(0, 120, n).astype(float)  # ties, out of order
    frame = pd.DataFrame(
        {
            "type": rng.choice(list("ABC"), n),
            "ts": ts,
            "id": rng.integers(0, 3, n),
            "v": rng.integers(0, 9, n),
            "unread": [1, "x"] * (n // 2),  # mixed kinds: Spark could not hold it, and the query never reads it
        }
    )
    when = pd.Timestamp("2024-03-01", tz="America/New_York") + pd.to_timedelta(ts, unit="s")
    query = "SEQ(A a, B b) WHERE a.v < b.v WITHIN 20 s PARTITION BY id"
    untimed = "SEQ(A a, B b) WHERE a.v < b.v WITHIN 20 EVENTS PARTITION BY id"
    return [
        ("float ts", frame, query, {}),
        ("int ts, a position column", frame.assign(ts=ts.astype(int), position=rng.integers(0, 5, n)), query, {}),
        ("tz-aware datetimes", frame.assign(ts=when), query, {}),
        ("naive datetimes, sorted", frame.assign(ts=when.tz_localize(None)).sort_values("ts"), query, {}),
        ("no ts", frame.drop(columns="ts"), untimed, {}),
        ("own columns", frame.rename(columns={"type": "kind", "ts": "time"}), query, {"type": "kind", "ts": "time"}),
        ("Arrow", frame.drop(columns="unread"), query, {}),
        ("a null type: Spark numbers it", frame.assign(type=frame["type"].where(frame.index != 5)), query, {}),
    ]


@pytest.mark.parametrize("name, frame, query, own", _local_frames(), ids=[case[0] for case in _local_frames()])
def test_a_local_frame_is_numbered_on_the_driver_as_spark_numbers_it(spark, match_rows, name, frame, query, own):
    """A local frame travels with the columns the query reads only, numbered on the driver (no numbering
    job): its matches are the local engine's on the frame in logical order (ts, the position column, the
    row order), as for a Spark DataFrame numbered by Spark (``same_as_local``); a frame the driver does not
    number (a null type here) fails as its Spark DataFrame does."""
    import pyarrow as pa

    read = [c for c in frame.columns if c != "unread"]
    given = pa.Table.from_pandas(frame, preserve_index=False) if name == "Arrow" else frame
    if frame[own.get("type", "type")].isna().any():
        with pytest.raises(cepkit.EventError) as numbered_by_spark:
            cepkit.spark.match(query, spark.createDataFrame(frame[read]), engine="stack", **own)
        with pytest.raises(cepkit.EventError) as local_frame:
            cepkit.spark.match(query, given, engine="stack", **own)
        assert str(local_frame.value) == str(numbered_by_spark.value)
        return
    order = [c for c in (own.get("ts", "ts"), "position") if c in frame.columns]
    in_order = frame.sort_values(order, kind="stable").reset_index(drop=True) if order else frame
    local = cepkit.match(query, in_order, engine="stack", **own)
    expected = match_rows(local.to_pandas(), ["a", "b"])
    assert len(expected) > 10
    found = cepkit.spark.match(query, given, engine="stack", **own).toPandas()
    assert match_rows(found, ["a", "b"]) == expected
    assert list(found["match_id"]) == list(range(len(found)))


def test_a_local_frame_costs_no_numbering_job(spark, monkeypatch):
    """Numbered on the driver, a local frame runs fewer jobs than its Spark DataFrame (whose order Spark
    checks in a job of its own), its columns the query does not read are never converted, and its Arrow
    batches become rows in the executors, not in a LocalRelation on the driver (however small)."""
    events = pd.DataFrame({"type": list("ABAB") * 50, "ts": np.arange(200.0), "id": 1, "big": "x" * 1000})
    query = "SEQ(A a, B b) WITHIN 5 PARTITION BY id"
    by_spark = len(jobs_run_by(spark, lambda: cepkit.spark.match(query, spark.createDataFrame(events)).count()))
    converted = []
    create = spark.createDataFrame
    threshold = "spark.sql.execution.arrow.localRelationThreshold"
    before = spark.conf.get(threshold)

    def recorded(frame):
        converted.append((list(frame.columns), spark.conf.get(threshold)))
        return create(frame)

    monkeypatch.setattr(spark, "createDataFrame", recorded)
    local = len(jobs_run_by(spark, lambda: cepkit.spark.match(query, events).count()))
    assert local < by_spark
    assert converted == [(["type", "ts", "id", POS], "0")]
    assert spark.conf.get(threshold) == before


def test_a_local_frame_is_matched_in_one_job_without_adaptive_execution(spark):
    """A local frame numbered on the driver and cut into time slices: one job (the matching, its matches
    counted), adaptive execution (which runs each shuffle's map stage as a job of its own) off meanwhile
    and restored after, also when match fails."""
    key = "spark.sql.adaptive.enabled"
    before = spark.conf.get(key)
    events = pd.DataFrame({"type": list("AB") * 100, "ts": np.arange(200.0), "id": np.arange(200) % 3})
    query = "SEQ(A a, B b) WITHIN 5 PARTITION BY id"
    assert len(jobs_run_by(spark, lambda: cepkit.spark.match(query, events, slice_length=20))) == 1
    assert spark.conf.get(key) == before
    with pytest.raises(cepkit.EventError):
        cepkit.spark.match(query, spark.createDataFrame([(None, 1.0, 1)], "type string, ts double, id long"))
    assert spark.conf.get(key) == before


# ----------------------------------------------------------------------------- errors before any job
def jobs_run_by(spark, call, group=None):
    """Run ``call`` in a job group of its own; return the ids of the Spark jobs started in that group."""
    group = group or f"cepkit-errors-{uuid.uuid4().hex}"  # a shared name would count earlier calls' jobs
    context = spark.sparkContext
    context.setJobGroup(group, "checks before any job")
    try:
        call()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    return context.statusTracker().getJobIdsForGroup(group)


def test_jobs_run_by_sees_the_jobs_a_call_starts(spark):
    """The control for the test below: a call that does run a job is seen."""
    df = spark.createDataFrame([("A", 1)], "type string, ts long")
    assert jobs_run_by(spark, df.count, group="cepkit-control") != []


@pytest.mark.parametrize(
    "columns, data, query, error, message",
    [
        ("kind string, ts long", [("A", 1)], "SEQ(A a, B b) WITHIN 2", cepkit.EventError, "no 'type' column"),
        ("type long, ts long", [(1, 1)], "SEQ(A a, B b) WITHIN 2", cepkit.EventError, "must hold strings"),
        (
            "type string, ts long, v long",
            [("A", 1, 1)],
            "SEQ(A a, B b) WHERE a.w > 1 WITHIN 2",
            cepkit.QueryError,
            "unknown attribute 'w' of 'a'",
        ),
        (
            "type string, ts long",
            [("A", 1)],
            "SEQ(A a, B b) WITHIN 2 PARTITION BY room",
            cepkit.QueryError,
            "unknown attribute 'room' in PARTITION BY",
        ),
        (
            "type string, ts timestamp",
            [("A", dt.datetime(2024, 1, 1))],
            "SEQ(A a, B b) WITHIN 2",
            cepkit.QueryError,
            "WITHIN needs a unit",
        ),
        ("type string, ts long", [("A", 1)], "SEQ(A a, B b)) WITHIN 2", cepkit.QueryError, "line 1, column"),
        # keys Spark cannot hash (maps, variants) or pandas cannot group (arrays, structs); a variant holds a type per row
        (
            "type string, ts long, id array<long>",
            [("A", 1, [1])],
            "SEQ(A a, B b) WITHIN 2 PARTITION BY id",
            cepkit.EventError,
            "column 'id' holds array<bigint>: a key must be",
        ),
        (
            "type string, ts long, id map<string,long>",
            [("A", 1, {"x": 1})],
            "SEQ(A a, B b) WITHIN 2 PARTITION BY id",
            cepkit.EventError,
            "column 'id' holds map<string,bigint>",
        ),
        (
            "type string, ts long, id struct<x:long>",
            [("A", 1, (1,))],
            "SEQ(A a, B b) WITHIN 2 PARTITION BY id",
            cepkit.EventError,
            "column 'id' holds struct<x:bigint>",
        ),
    ],
)
def test_bad_input_fails_before_any_job(spark, columns, data, query, error, message):
    """Issue 3: a DataFrame without ``type``, a ``ts`` of the wrong type, or a query that does not fit the
    columns gets a clear error before any Spark job runs."""
    df = spark.createDataFrame(data, columns)

    def call():
        with pytest.raises(error, match=message):
            cepkit.spark.match(query, df, engine="reference")

    assert jobs_run_by(spark, call) == []


def test_a_text_ts_that_is_no_time_is_named_with_its_value(spark):
    """Text in ``ts`` is read as times (ISO 8601, 'yyyy-MM-dd HH:mm:ss'); which rows fail only the data can
    say, so this check runs a job, and names the column and the first value that is neither."""
    df = spark.createDataFrame([("A", "2024-01-01 00:00:00"), ("B", "x")], "type string, ts string")
    with pytest.raises(cepkit.EventError, match="column 'ts': 'x' is neither a number nor a datetime"):
        cepkit.spark.match("SEQ(A a, B b) WITHIN 2", df, engine="reference")


@pytest.mark.parametrize(
    "query, message",
    [
        ("SEQ(A a, B b) WITHIN 2 PARTITION BY id", "column 'id' holds variant: a key must be"),
        ("SEQ(A a, B b) WHERE a.id = 1 WITHIN 2", "column 'id' is a variant .a type per row.: cast it"),
    ],
)
def test_a_variant_column_is_refused_before_any_job(spark, query, message):
    """A variant column (Spark 4) holds values of mixed types: as a key Spark cannot hash it, and the engines
    would compare its values as text; the error says to cast it."""
    df = spark.sql("""select 'A' as type, 1L as ts, parse_json('1') as id union all
                      select 'B', 2L, parse_json('"x"')""")

    def call():
        with pytest.raises(cepkit.EventError, match=message):
            cepkit.spark.match(query, df, engine="reference")

    assert jobs_run_by(spark, call) == []


def test_a_pandas_column_of_mixed_kinds_names_the_column_and_both_rows(spark):
    """Locally mixed values compare as Python objects; a Spark column holds one type, and createDataFrame
    would turn some into nulls: refused, before any job, with the first row of each kind."""
    events = pd.DataFrame({"type": list("ABAB"), "ts": [1.0, 2, 3, 4], "id": [1, 2, "x", None]})

    def call():
        with pytest.raises(cepkit.EventError) as caught:
            cepkit.spark.match("SEQ(A a, B b) WITHIN 5 PARTITION BY id", events, engine="reference")
        assert (caught.value.field, caught.value.position) == ("id", 2)
        assert "mixes number values (row 0: {type: 'A', ts: 1.0, id: 1})" in str(caught.value)
        assert "str values (row 2: {type: 'A', ts: 3.0, id: 'x'})" in str(caught.value)
        assert "astype(str)" in str(caught.value)

    assert jobs_run_by(spark, call) == []


def test_an_engine_without_the_feature_names_those_with_it(spark):
    df = spark.createDataFrame([("A", 1)], "type string, ts long")
    with pytest.raises(cepkit.QueryError, match="engines that support it: .*reference"):
        cepkit.spark.match("(A a ; B b)+ WITHIN 3", df, engine="stack")


@pytest.mark.parametrize(
    "rows, field, position, message",
    [
        (
            [("A", 1.0, 1), ("B", None, 2), ("B", float("nan"), 3)],
            "ts",
            0,
            "ts is missing (null), as in 1 other event(s); the row: {type: 'B', ts: None, id: 2}",
        ),
        (
            [("A", 1.0, 1), ("B", float("inf"), 2)],
            "ts",
            1,
            "ts must be finite, got inf; the row: {type: 'B', ts: inf, id: 2}",
        ),
        (
            [("A", 1.0, 1), (None, 2.0, 2)],
            "type",
            1,
            "needs a type (this one is null); the row: {type: None, ts: 2.0, id: 2}",
        ),
        # past the first of the numbering's range partitions: its offset is added
        (
            [(None if i in (700, 900) else "A", float(i), i) for i in range(1000)],
            "type",
            700,
            "the row: {type: None, ts: 700.0, id: 700}",
        ),
    ],
)
def test_null_type_or_ts_is_reported_with_its_position_and_row(spark, rows, field, position, message):
    """A bad value the schema cannot show is found by the numbering's job: the error names the field, the
    event's position in logical order and the row, with the columns the query reads."""
    df = spark.createDataFrame(rows, "type string, ts double, id long")
    with pytest.raises(cepkit.EventError) as caught:
        cepkit.spark.match("SEQ(A a, B b) WITHIN 2 PARTITION BY id", df, engine="reference")
    assert (caught.value.field, caught.value.position) == (field, position)
    assert message in str(caught.value)


# ----------------------------------------------------------------------------- numbering the events
@pytest.mark.parametrize("arrangement", ["sorted", "as drawn", "partitions swapped"])
@settings(max_examples=3, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["p", "q", "r", None])), min_size=1, max_size=14),
    st.booleans(),
)
def test_positions_are_ranks_in_logical_order_with_or_without_the_sort(spark, arrangement, rows, with_position):
    """The events' positions are their ranks by (ts, the position column, row order), whether the input
    was already in that order (numbered by its row numbers, after a check job) or not (globally sorted);
    the input comes in two Spark partitions, so the check also compares one partition's end with the
    next one's start."""
    frame = pd.DataFrame({"type": "A", "ts": [ts for ts, _ in rows], "position": [p for _, p in rows]})
    if arrangement == "sorted":
        frame = frame.sort_values(["ts", "position"], kind="stable", na_position="first")
    elif arrangement == "partitions swapped":
        frame = pd.concat([frame.iloc[len(frame) // 2 :], frame.iloc[: len(frame) // 2]])
    frame = frame.reset_index(drop=True)
    frame.insert(2, "row", range(len(frame)))
    if not with_position:
        frame = frame.drop(columns="position")
    order = ["ts", "position", "row"] if with_position else ["ts", "row"]
    expected = list(frame.sort_values(order, na_position="first")["row"])
    df = spark.createDataFrame(frame, "type string, ts long, row long" + (", position string" if with_position else ""))
    query = cepkit.parse("SEQ(A a, A b) WITHIN 2")
    layout = Layout.of(df.schema, query)
    numbered = _number_events(df, layout, None)[0].orderBy(POS).toPandas()
    assert list(numbered[POS]) == list(range(len(frame)))
    assert list(numbered["row"]) == expected
    in_order = frame.equals(frame.sort_values(order, na_position="first")) and not (
        with_position and frame["position"].isna().any()
    )
    events = df.withColumn("_cep_input", F.monotonically_increasing_id()).withColumn(TS, F.col("ts")).localCheckpoint()
    as_given = _numbered_as_given(events, layout.order() + [F.col("_cep_input")], F.lit(False))
    assert (as_given is not None) == in_order


@pytest.mark.parametrize("arrangement", ["sorted", "rows swapped", "files read out of order"])
def test_files_in_order_are_read_once_and_numbered_by_the_matching_job(spark, tmp_path, match_rows, arrangement):
    """A Parquet file in logical order, read in several Spark partitions, is matched on provisional
    positions while the matching job checks the order (no job of its own), the slices' extent from the
    footers: the same matches, Kleene arrays and fields as locally. Two rows out of order in one partition:
    the job's matches are dropped and the input sorted (one job more), the matches the same. Files that
    Spark reads out of order (the larger first) are sorted at once: the footers tell."""
    from cepkit.spark.batch import _file_extent

    rng = np.random.default_rng(5)
    n = 3000
    frame = pd.DataFrame(
        {
            "type": rng.choice(list("ABCD"), n),
            "ts": pd.to_datetime(np.sort(rng.integers(0, 6000, n)), unit="s", utc=True),
            "id": rng.integers(0, 3, n),
            "v": rng.integers(0, 9, n),
        }
    )
    if arrangement == "rows swapped":
        frame.iloc[[2000, 2600]] = frame.iloc[[2600, 2000]].to_numpy()
    if arrangement == "files read out of order":
        frame.iloc[:1000].to_parquet(tmp_path / "a.parquet", row_group_size=250, coerce_timestamps="us")
        frame.iloc[1000:].to_parquet(tmp_path / "b.parquet", row_group_size=250, coerce_timestamps="us")
    else:
        frame.to_parquet(tmp_path / "events.parquet", row_group_size=250, coerce_timestamps="us")
    query = "SEQ(A a, B+ b, C c) WHERE a.v < c.v WITHIN 40 s PARTITION BY id"
    local = cepkit.match(query, frame.sort_values("ts", kind="stable", ignore_index=True), engine="ses")
    wanted = ["b.v", "c.ts"]
    spark.conf.set("spark.sql.files.maxPartitionBytes", "8k")  # (several partitions, several row groups)
    group = f"read-once-{arrangement}"
    spark.sparkContext.setJobGroup(group, group)
    try:
        df = spark.read.parquet(str(tmp_path))
        assert df.rdd.getNumPartitions() > 2
        extent = _file_extent(df, Layout.of(df.schema, cepkit.parse(query)))
        assert (extent is None) == (arrangement == "files read out of order")
        jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
        found = cepkit.spark.match(query, df, engine="ses")
        jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(group)) - jobs
        fields = cepkit.spark.match(query, df, engine="ses", fields=wanted).toPandas()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert len(local) > 20
    assert match_rows(found.toPandas(), ["a", "b", "c"]) == match_rows(local.to_pandas(), ["a", "b", "c"])
    expected = local.to_pandas(fields=wanted)
    assert fields["b.v"].map(list).tolist() == expected["b.v"].map(list).tolist()
    assert pd.to_datetime(fields["c.ts"], utc=True).tolist() == expected["c.ts"].tolist()  # (session time: UTC)
    assert jobs == (1 if arrangement == "sorted" else 4)  # matching, or (a check or a match,) the sort's 3


@pytest.mark.parametrize("arrangement", ["sorted", "shuffled"])
def test_files_are_read_again_rather_than_checkpointed(spark, tmp_path, match_rows, arrangement):
    """Input read from files (or made by ``spark.range``) is read again by each job, not checkpointed
    (``rereadable``); its matches equal the local ones whether the file is in logical order (numbered as
    given) or the files are not (sorted). A local relation, a shuffle or a random column is checkpointed."""
    from cepkit.spark.batch import rereadable

    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {"type": rng.choice(list("ABC"), 600), "ts": rng.permutation(600) * 0.5, "id": rng.integers(0, 4, 600)}
    )
    if arrangement == "sorted":
        frame = frame.sort_values("ts").reset_index(drop=True)
        frame.to_parquet(tmp_path / "events.parquet")
    else:
        frame.iloc[:300].to_parquet(tmp_path / "a.parquet")
        frame.iloc[300:].to_parquet(tmp_path / "b.parquet")
    df = spark.read.parquet(str(tmp_path))
    assert rereadable(df) and rereadable(df.where("id > 0").select("type", "ts")) and rereadable(spark.range(3))
    assert not rereadable(spark.createDataFrame(frame))
    assert not rereadable(df.repartition(2)) and not rereadable(df.withColumn("r", F.rand()))
    query = "SEQ(A a, B b) WHERE a.id = b.id WITHIN 20 s"
    local = cepkit.match(query, frame.sort_values("ts").reset_index(drop=True), engine="stack")
    found = cepkit.spark.match(query, df, engine="stack").toPandas()
    assert len(local) > 20
    assert match_rows(found, ["a", "b"]) == match_rows(local.to_pandas(), ["a", "b"])
