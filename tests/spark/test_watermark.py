"""The per-key buffers of ``match_stream`` (``cepkit.spark.watermark``), driven in pure pandas as Spark
drives them: micro-batches in a disordered arrival order, a watermark trailing the largest ts by the
allowed delay, then a last watermark past everything. The matches emitted along the way must be the
reference's matches of the sorted stream, each once, while the buffer keeps about one window of events."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.spark.groups import POS, TS, GroupMatcher, output_variables, plan_split, whole_history
from cepkit.spark.watermark import SEQ, TIME, Horizon, KeyBuffer, advance, check_arrivals
from strategies import flat_seq_queries, set_query_variants, streams, unary_queries

sys.path.insert(0, str(Path(__file__).parent))
from key_streams import Handle, WatermarkAt, COLUMNS, run_stream, stream_frame  # noqa: E402


def assert_stream_agrees(match_rows, query, events, jitter, batches, delay, engine="reference", restarts=()):
    q = cepkit.parse(query)
    assume(q.within is not None and not q.partition_by and not whole_history(q))
    if q.within.events:
        # A stream never ends: a match is final once the r events after it have come. Events of a type no
        # query names stand for them (they change no match of the finite stream).
        last = events[-1]["ts"]
        events = events + [{"type": "Z", "ts": last + 1, "v": 0, "id": 0}] * int(q.within.amount)
        jitter = np.concatenate([jitter, np.zeros(int(q.within.amount))])
    variables = list(output_variables(q))
    expected = match_rows(
        cepkit.match(query, events, engine="reference").to_pandas().reindex(columns=["positions", *variables]),
        variables,
    )
    got = match_rows(run_stream(query, events, jitter, batches, delay, engine, restarts), variables)
    assert sorted(got, key=repr) == sorted(expected, key=repr), query


@st.composite
def arrivals(draw, fragment):
    events = draw(streams(min_size=1, max_size=12, **({"types": ("C", "P", "D", "B")} if fragment == "ses" else {})))
    delay = draw(st.integers(0, 4))
    jitter = draw(st.lists(st.floats(0, delay), min_size=len(events), max_size=len(events)))
    return events, np.array(jitter), draw(st.integers(1, 5)), delay


@settings(max_examples=25, deadline=None)
@given(unary_queries(strategies=("ALL", "NEXT", "STRICT"), partition=False, max_depth=2), arrivals("cel"))
def test_streamed_matches_equal_batch_cel_fragment(match_rows, query, arrival):
    assert_stream_agrees(match_rows, query, *arrival)


@settings(max_examples=25, deadline=None)
@given(flat_seq_queries(strategies=("ALL", "STNM"), partition=False), arrivals("sase"))
def test_streamed_matches_equal_batch_with_negation(match_rows, query, arrival):
    """A trailing negation holds a match back until the watermark passes its first event plus the window
    (docs/language.md §10.4)."""
    assert_stream_agrees(match_rows, query, *arrival)


@settings(max_examples=20, deadline=None)
@given(set_query_variants(strategies=("ALL", "ROBUST_STNM")), arrivals("ses"))
def test_streamed_matches_equal_batch_ses_fragment(match_rows, query, arrival):
    assert_stream_agrees(match_rows, query, *arrival)


def test_a_match_waits_for_its_trailing_negation_scope():
    """SEQ(A a, B b, !C c) WITHIN 5: the match (0, 1) is final only once no C can come up to ts 0 + 5
    (docs/language.md §10.4); the timer asks to be called back when that may have changed."""
    events = [{"type": "A", "ts": 0, "v": 0, "id": 0}, {"type": "B", "ts": 1, "v": 0, "id": 0}]
    q = cepkit.parse("SEQ(A a, B b, !C c) WITHIN 5")
    split = plan_split(q)
    matcher, horizon = GroupMatcher(q, "reference", {}, COLUMNS, split), Horizon.of(split)
    frame = stream_frame(events)
    found, buffer, timer, live = advance(KeyBuffer(frame.iloc[:0]), frame, 3_000_000, matcher, horizon)
    # the matcher is closed once the watermark passes the last fed event by the window
    assert found.empty and timer == 1_000_000 + 5_000_000 + horizon.slack
    found, buffer, _, live = advance(buffer, None, 6_000_003, matcher, horizon, live)
    assert [list(p) for p in found["positions"]] == [[0, 1]] and live is None


def test_event_windows_keep_the_last_events_whatever_their_age():
    """WITHIN n EVENTS counts settled events of the key: the state holds the last r + w of them."""
    q = cepkit.parse("SEQ(A a, B b) WITHIN 3 EVENTS")
    split = plan_split(q)
    matcher, horizon = GroupMatcher(q, "reference", {}, COLUMNS, split), Horizon.of(split)
    frame = stream_frame([{"type": t, "ts": 100 * i, "v": 0, "id": 0} for i, t in enumerate("ABXXAB")])
    empty = frame.iloc[:0].copy()
    empty[SEQ] = pd.Series(dtype=float)
    found, buffer, _, _ = advance(KeyBuffer(empty), frame, 2**62, matcher, horizon)
    assert [list(p) for p in found["positions"]] == [[0, 1], [4, 5]]
    assert list(buffer.events[POS]) == [1, 2, 3, 4, 5] and buffer.settled == 6  # the last 2w + r + 1 (w = 2, r = 0)


def test_buffers_survive_the_state_store_round_trip():
    """A key's buffer (numpy columns, or pandas' extension arrays) written to and read from the state
    store's bytes: the same columns, dtypes, nulls and time zones."""
    frame = stream_frame([{"type": "A", "ts": 1.5, "v": 2, "id": None}, {"type": None, "ts": 2.0, "v": 3, "id": None}])
    frame["when"] = pd.Timestamp("2024-01-01")
    frame["local"] = pd.to_datetime(["2024-01-01 10:00", None]).tz_localize("Europe/Paris")
    frame["count"] = pd.array([1, None], dtype="Int64")
    frame["label"] = pd.array(["x", None], dtype="string")
    frame["flag"] = [True, None]
    buffer = KeyBuffer(frame, 7, 3, 2, 5)
    back = KeyBuffer.from_state(buffer.to_bytes(), 7, 3, 2, 5)
    pd.testing.assert_frame_equal(back.events, frame)
    assert (back.frontier, back.settled, back.emitted, back.fed) == (7, 3, 2, 5)


STREAM_QUERIES = {  # per engine, a fragment it runs (each has a window: a stream needs one)
    "automaton": unary_queries(strategies=("ALL", "NEXT", "STRICT"), partition=False, max_depth=2),
    "stack": flat_seq_queries(strategies=("ALL", "STNM"), partition=False),
    "nested": flat_seq_queries(partition=False),
    "ecube": flat_seq_queries(partition=False),
    "ses": set_query_variants(),
    "rcep": unary_queries(partition=False, max_depth=2),
}


@pytest.mark.parametrize("engine", sorted(STREAM_QUERIES))
def test_every_engine_streams_incrementally_and_survives_a_lost_matcher(match_rows, engine):
    """The engine's own incremental matcher behind the watermark, once kept between calls and once lost
    before some calls (another worker, a restart): rebuilt from the buffer, it emits each match once."""

    @settings(max_examples=15, deadline=None)
    @given(STREAM_QUERIES[engine], arrivals("ses" if engine == "ses" else "cel"), st.sets(st.integers(0, 4)))
    def check(query, arrival, restarts):
        try:
            cepkit.runtime.selection.select_engine(cepkit.parse(query), engine, {})
        except cepkit.QueryError:
            return
        assert_stream_agrees(match_rows, query, *arrival, engine=engine, restarts=restarts)

    check()


@pytest.mark.parametrize(
    "change, field, position, message",
    [
        (
            {"type": None},
            "type",
            2,
            "needs a type (this one is null); the row: {type: None, v: 1, id: 0, ts: 2.0, seq: 2}",
        ),
        ({TIME: None}, "ts", 2, "ts is missing (null or NaN) or not finite"),
        ({TIME: -1_000_000, TS: -1.0}, "ts", 2, "ts must be >= 0 (Spark's watermark starts at 0), got -1.0"),
        (
            {POS: None},
            "seq",
            None,
            "needs a position (this one is null); the row: {type: 'B', v: 1, id: 0, ts: 2.0, seq: None}",
        ),
    ],
)
def test_a_bad_arrival_is_named_with_its_row(change, field, position, message):
    """``match_stream``'s workers check each micro-batch before it touches the state: the first bad row
    by position (one without a position first) names the user's column and shows the row."""
    frame = stream_frame([{"type": t, "ts": float(i), "v": 1, "id": 0} for i, t in enumerate("ABBA")])
    frame = frame.astype({POS: "float64", TIME: "float64"})  # as Arrow hands nullable longs to pandas
    frame = frame.drop(columns="ts")  # the workers' rows: type, the attributes read, TS, POS, TIME
    names = {TS: "ts", POS: "seq"}
    check_arrivals(frame, names)
    for column, value in change.items():
        frame.loc[2, column] = value
    frame.loc[3, "type"] = None  # a later bad row is not the one named
    with pytest.raises(cepkit.EventError) as caught:
        check_arrivals(frame.iloc[::-1], names)
    assert (caught.value.field, caught.value.position) == (field, position)
    assert message in str(caught.value)


def test_late_side_rows_and_no_state_for_a_key_that_only_came_late():
    """``late="side"``'s processor: arrivals before the watermark come out as "late" rows with it, the
    others are matched; a key whose only arrivals are late gets no state (it would never be cleared)."""
    from cepkit.spark.streaming import _KeyMatcher

    q = cepkit.parse("SEQ(A a, B b) WITHIN 5 s PARTITION BY id")
    split = plan_split(q)
    matcher = GroupMatcher(q, "reference", {}, COLUMNS, split)
    columns = ["type", "v", "id", TS, POS, TIME]
    output = ["match_id", "positions", "a", "b", "id"]
    processor = _KeyMatcher(matcher, Horizon.of(split), columns, columns, output, {TS: "ts", POS: "position"}, True)
    processor.init(Handle())
    late_only = stream_frame([{"type": "A", "ts": 1.0, "v": 0, "id": 7}])[columns]
    rows = list(processor.handleInputRows((7,), [late_only], WatermarkAt(10_000)))
    assert processor.handle.value is None and processor.handle.timers == set()
    assert len(rows) == 1 and rows[0]["kind"].tolist() == ["late"]
    assert rows[0][["id", "late_type", "late_ts", "late_position", "watermark"]].values.tolist() == [
        [7, "A", 1.0, 0, 10.0]
    ]
    assert rows[0][["match_id", "positions", "a", "b"]].isna().all().all()
    mixed = stream_frame(
        [
            {"type": "A", "ts": 11.0, "v": 0, "id": 7},
            {"type": "B", "ts": 12.0, "v": 0, "id": 7},
            {"type": "B", "ts": 2.0, "v": 0, "id": 7},
        ]
    )[columns]
    rows = list(processor.handleInputRows((7,), [mixed], WatermarkAt(10_000)))
    assert [r["kind"].tolist() for r in rows] == [["late"]]  # the A and B wait for the watermark
    assert processor.handle.value is not None
    rows = list(processor.handleExpiredTimer((7,), WatermarkAt(20_000), None))
    assert [r["kind"].tolist() for r in rows] == [["match"]] and list(rows[0]["positions"].iloc[0]) == [0, 1]
