"""The user's own data as it comes (issue 26): columns named otherwise (``type=``, ``ts=``), text timestamps,
one table per event type (``from_frames``) and wide tables (``from_wide``), with one-line errors naming
the column."""

import datetime as dt
import warnings

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings

import cepkit
from cepkit.errors import ColumnError, EventError
from cepkit.runtime.stream import Stream
from strategies import streams

QUERY = "view v ; cart c ; buy b WITHIN 30 min PARTITION BY user_id"
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


def canonical(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.rename(columns={"event_name": "type", "event_time": "ts"})
    return out.assign(ts=pd.to_datetime(out["ts"], utc=True))


def test_match_reads_the_columns_it_is_told_and_the_text_times():
    expected = cepkit.match(QUERY, canonical(CLICKS))
    assert expected.positions() == [(0, 2, 4)]
    got = cepkit.match(QUERY, CLICKS, type="event_name", ts="event_time")
    assert [m.key for m in got] == [m.key for m in expected]
    records = CLICKS.to_dict("records")
    assert cepkit.match(QUERY, records, type="event_name", ts="event_time").positions() == [(0, 2, 4)]
    table = pa.Table.from_pandas(CLICKS)
    assert cepkit.match(QUERY, table, type="event_name", ts="event_time").positions() == [(0, 2, 4)]


def test_the_mapping_leaves_the_frame_as_it_was():
    before = CLICKS.copy()
    cepkit.match(QUERY, CLICKS, type="event_name", ts="event_time")
    pd.testing.assert_frame_equal(CLICKS, before)


def test_a_matcher_takes_the_same_mapping_pushed_or_in_batches():
    pushed = cepkit.Matcher(QUERY, type="event_name", ts="event_time")
    for record in CLICKS.to_dict("records"):
        pushed.push(record)
    pushed.close()
    batched = cepkit.Matcher(QUERY, type="event_name", ts="event_time")
    batched.extend(CLICKS.iloc[:3])
    batched.extend(CLICKS.iloc[3:])
    batched.close()
    assert [m.positions for m in pushed.matches] == [m.positions for m in batched.matches] == [(0, 2, 4)]


def test_a_missing_column_names_the_columns_and_the_likeliest():
    with pytest.raises(ColumnError) as err:
        cepkit.match(QUERY, CLICKS, type="event", ts="event_time")
    assert str(err.value) == (
        "column 'event': no column 'event' for type= (columns: 'event_name', 'event_time', "
        "'user_id'); did you mean 'event_name'?"
    )
    with pytest.raises(ColumnError, match="did you mean 'event_time'"):
        cepkit.match(QUERY, CLICKS, type="event_name", ts="Event_Time")
    with pytest.raises(ColumnError, match="pass type='event_name' to read the type from it"):
        cepkit.match(QUERY, CLICKS)


def test_two_likely_columns_are_ambiguous_and_a_mapped_column_cannot_leave_two():
    both = CLICKS.assign(activity=CLICKS["event_name"])
    with pytest.raises(ColumnError, match="'event_name' and 'activity' could each be it: pass type= to choose"):
        cepkit.match(QUERY, both)
    with pytest.raises(ColumnError, match="the data has a 'type' column and type='event_name' names another"):
        cepkit.match(QUERY, both.assign(type="view"), type="event_name", ts="event_time")
    with pytest.raises(EventError, match="the event has a 'type' field and type='event_name'"):
        cepkit.match(
            QUERY, [{"type": "view", "event_name": "view", "event_time": 0}], type="event_name", ts="event_time"
        )


def test_a_bad_text_time_is_one_line_naming_row_column_and_value():
    bad = CLICKS.assign(event_time=CLICKS["event_time"].where(CLICKS.index != 3, "yesterday"))
    with pytest.raises(EventError) as err:
        cepkit.match(QUERY, bad, type="event_name", ts="event_time")
    assert str(err.value) == ("event at position 3, field 'event_time': 'yesterday' is neither a number nor a datetime")
    assert err.value.__cause__ is None and (err.value.__context__ is None or err.value.__suppress_context__)
    numbers_then_date = pd.DataFrame({"type": ["A", "B"], "ts": ["5", "2024-01-01"]})
    with pytest.raises(EventError, match="position 1, field 'ts': '2024-01-01' is a datetime, but the ts of event 0"):
        cepkit.match("A a ; B b", numbers_then_date)


@pytest.mark.parametrize(
    "texts, expected",
    [
        (["2024-05-01T10:00:00Z", "2024-05-01T10:00:05Z"], [1714557600.0, 1714557605.0]),
        (["05/01/2024 10:00", "05/01/2024 10:00:05"], [1714557600.0, 1714557605.0]),
        (["1.5", "7"], [1.5, 7.0]),
    ],
)
def test_text_times_of_each_kind(texts, expected):
    found = cepkit.match("A a ; B b", pd.DataFrame({"type": ["A", "B"], "ts": texts}))
    assert found.positions() == [(0, 1)]
    assert Stream.from_any(pd.DataFrame({"type": ["A", "B"], "ts": texts})).times.tolist() == expected


def test_other_errors_about_the_time_name_the_users_column():
    late = CLICKS.iloc[[1, 0]]
    with pytest.raises(EventError, match="position 1, field 'event_time': the stream is out of order"):
        cepkit.match(QUERY, late, type="event_name", ts="event_time")
    with pytest.raises(EventError, match="position 0, field 'when': the text 'soon' is neither"):
        cepkit.Matcher("A a", ts="when").push({"type": "A", "when": "soon"})


# ----------------------------------------------------------------------------- several tables
def test_from_frames_orders_by_time_then_table_then_row():
    logins = pd.DataFrame({"at": [1, 5, 3], "user": ["ann", "bob", "cid"]})
    buys = pd.DataFrame({"at": [3, 0], "user": ["ann", "bob"], "amount": [9.5, 2.0]})
    joined = cepkit.from_frames({"Login": logins, "Buy": buys}, ts="at")
    assert joined[["type", "ts", "user"]].values.tolist() == [
        ["Buy", 0, "bob"],
        ["Login", 1, "ann"],
        ["Login", 3, "cid"],
        ["Buy", 3, "ann"],
        ["Login", 5, "bob"],
    ]
    assert joined["amount"].isna().tolist() == [False, True, True, False, True]
    per_table = cepkit.from_frames(
        {"Login": logins.rename(columns={"at": "t"}), "Buy": buys}, ts={"Login": "t", "Buy": "at"}
    )
    pd.testing.assert_frame_equal(per_table, joined)


def test_from_frames_errors():
    with pytest.raises(ColumnError, match=r"\(table 'Buy'\) no column 'at'"):
        cepkit.from_frames({"Buy": pd.DataFrame({"ts": [1]})}, ts="at")
    with pytest.raises(ColumnError, match="has its own 'type' column"):
        cepkit.from_frames({"Buy": pd.DataFrame({"ts": [1], "type": ["x"]})})
    with pytest.raises(ColumnError, match="some tables' times are dates and others' numbers"):
        cepkit.from_frames({"A": pd.DataFrame({"ts": [1]}), "B": pd.DataFrame({"ts": ["2024-01-01"]})})
    with pytest.raises(EventError, match=r"field 'ts': \(table 'B'\) 'x' is neither"):
        cepkit.from_frames({"B": pd.DataFrame({"ts": ["2024-01-01", "x"]})})


@settings(max_examples=40, deadline=None)
@given(events=streams(max_size=12))
def test_tables_split_by_type_join_back_into_the_same_matches(events):
    """Splitting an in-order stream into one table per type and joining it back gives the stream sorted by
    (ts, first appearance of the type, row): on a stream without ties, the same events in the same order."""
    frame = pd.DataFrame(events).drop_duplicates("ts")
    if frame.empty:
        return
    tables = {t: part.drop(columns="type") for t, part in frame.groupby("type", sort=False)}
    joined = cepkit.from_frames(tables)
    assert joined["ts"].is_monotonic_increasing and len(joined) == len(frame)
    expected = frame.reset_index(drop=True)[joined.columns]
    pd.testing.assert_frame_equal(joined, expected, check_dtype=False)
    query = "A a ; B b ; C c WITHIN 5 s"
    assert cepkit.match(query, joined).positions() == cepkit.match(query, expected).positions()


# ----------------------------------------------------------------------------- wide tables
def test_from_wide_makes_an_event_per_time_and_none_for_a_null():
    orders = pd.DataFrame(
        {
            "order": [1, 2, 3],
            "placed": ["2024-01-01 09:00", "2024-01-01 09:30", "2024-01-01 10:00"],
            "shipped": ["2024-01-02 09:00", None, "2024-01-01 10:00"],
            "city": ["Oslo", "Rome", "Kyiv"],
        }
    )
    events = cepkit.from_wide(orders, {"Placed": "placed", "Shipped": "shipped"})
    assert events[["type", "order", "city"]].values.tolist() == [
        ["Placed", 1, "Oslo"],
        ["Placed", 2, "Rome"],
        ["Placed", 3, "Kyiv"],
        ["Shipped", 3, "Kyiv"],
        ["Shipped", 1, "Oslo"],
    ]
    assert events["ts"].dt.tz is not None
    late = cepkit.match("Placed p ; Shipped s WITHIN 1 h PARTITION BY order", events)
    assert late.positions() == [(2, 3)]
    kept = cepkit.from_wide(orders, ["placed", "shipped"], keep=["order"])
    assert list(kept.columns) == ["type", "ts", "order"] and set(kept["type"]) == {"placed", "shipped"}


def test_from_wide_errors():
    orders = pd.DataFrame({"order": [1], "placed": [0.0]})
    with pytest.raises(ColumnError, match=r"\(events of type 'Shipped'\) no column 'shiped'"):
        cepkit.from_wide(orders, {"Placed": "placed", "Shipped": "shiped"})
    with pytest.raises(ColumnError, match="keep= names 'city'"):
        cepkit.from_wide(orders, ["placed"], keep=["city"])
    with pytest.raises(ColumnError, match="the table has a 'type' column"):
        cepkit.from_wide(orders.assign(type="x"), ["placed"])


def test_time_columns_of_two_kinds_are_refused():
    orders = pd.DataFrame({"a": [dt.datetime(2024, 1, 1)], "b": [3.0]})
    with pytest.raises(ColumnError, match="some time columns hold dates and others numbers"):
        cepkit.from_wide(orders, ["a", "b"])


def test_errors_show_times_and_values_as_the_user_wrote_them():
    """An out-of-order datetime printed ``Timestamp('2024-05-01 09:00:00+0000', tz='UTC')`` and a numeric
    type ``np.int64(1)``: pandas' and numpy's reprs, not the data."""
    frame = pd.DataFrame({"type": ["A", "B"], "ts": ["2024-05-01 10:00", "2024-05-01 09:00"]})
    with pytest.raises(EventError) as err:
        cepkit.match("SEQ(A a, B b)", frame)
    assert "ts 2024-05-01 09:00:00+00:00 comes after ts 2024-05-01 10:00:00+00:00 at position 0" in str(err.value)
    matcher = cepkit.Matcher("SEQ(A a, B b)")
    matcher.push({"type": "A", "ts": pd.Timestamp("2024-05-01 10:00", tz="UTC")})
    with pytest.raises(EventError, match=r"ts 2024-05-01 09:00:00\+00:00 is earlier"):
        matcher.push({"type": "B", "ts": pd.Timestamp("2024-05-01 09:00", tz="UTC")})
    with pytest.raises(
        EventError, match=r"position 0, field 'type': the type must be a non-null string, got 1 \(int64\)$"
    ):
        cepkit.match("SEQ(A a, B b)", pd.DataFrame({"type": [1, 2], "ts": [1, 2]}))


@pytest.mark.parametrize(
    "texts",
    [
        ["2013-01-01T01:00:00-05:00", "2013-03-10T03:00:00-04:00", None, "2013-03-10T03:00:00.25+00:00"],
        ["2024-05-01 10:00", "2024-05-01T10:00:05.123456789", "2024-05-02", "2024-05-02T11"],
        ["2024-05-01T10:00:05Z", "2024-05-01T10:00:05-0530"],
        ["2024-5-1 10:00", "2024-05-01 10:00:05"],  # not Arrow's ISO 8601: pandas reads them
        ["2024-5-1 10:00+02:00", "2024-05-01 10:00:05 -03:00"],
    ],
)
def test_text_times_read_fast_are_the_instants_pandas_reads(texts):
    """ISO 8601 text is read by Arrow's cast where it can (30x pandas' parser on the flights year written
    with offsets): the same instants as pandas, nulls kept, whatever the index."""
    from cepkit.runtime.columns import text_times

    column = pd.Series(texts, index=range(10, 10 + len(texts)), name="when")
    expected = pd.to_datetime(column, utc=True, format="ISO8601")
    pd.testing.assert_series_equal(text_times(column, "when"), expected)
    with pytest.raises(EventError, match="'2024-05-01' is a datetime, but the ts of event 0 is a number"):
        text_times(pd.Series(["1", "2024-05-01"]))


@pytest.mark.parametrize(
    "first, second", [("2024-05-01T10:00+02:00", "2024-05-01 10:00"), ("2024-05-01", "2024-5-1 10:00Z")]
)
def test_times_with_and_without_an_offset_in_one_column_are_an_error(first, second):
    """pandas read "2024-05-01 10:00" after "2024-05-01T10:00+02:00" in that value's offset, 08:00 UTC, and
    before it as 10:00 UTC: a time silently wrong by the order of the rows."""
    frame = pd.DataFrame({"type": ["A", "B"], "when": [first, second]})
    with pytest.raises(EventError, match=rf"position 1, field 'when': '{second}' has (a|no) UTC offset, but the ts"):
        cepkit.match("SEQ(A a, B b)", frame, ts="when")


def test_fields_take_and_label_the_users_own_type_and_ts_names():
    clicks = pd.DataFrame(
        {"event": ["view", "buy", "view"], "when": ["2024-05-01 10:00", "2024-05-01 10:02", "2024-05-01 10:03"]}
    )
    found = cepkit.match("view v ; buy b", clicks, type="event", ts="when")
    table = found.to_pandas(fields=["b.when", "v.event"])
    assert table["b.when"].tolist() == [pd.Timestamp("2024-05-01 10:02", tz="UTC")]
    assert table["v.event"].tolist() == ["view"]
    assert {"v.when", "b.when"} <= set(found.to_pandas(fields="all").columns)
    assert "b.when" in found.to_arrow(fields=["b.when"]).column_names
    assert found.to_pandas(fields=["b.ts"])["b.ts"].tolist() == table["b.when"].tolist()  # the library's name too
    with pytest.raises(cepkit.QueryError, match=r"the events have event, when; did you mean 'when'\?"):
        found.to_pandas(fields=["b.wen"])


@pytest.mark.parametrize(
    "events, position, says",
    [
        ([{"type": "A", "ts": 100}, {"type": "B"}], 1, "the event has no ts but the events before it have one"),
        ([{"type": "A"}, {"type": "B", "ts": 3}], 1, "the event has a ts but the events before it have none"),
    ],
)
def test_an_event_without_the_ts_the_others_have_is_named(events, position, says):
    """A dict without ts took its position as ts among events that had one: ``A@100 ; B`` matched with B at
    ts 1, and a Matcher said "ts 1 is earlier than an earlier event's" of a ts nobody wrote."""
    with pytest.raises(EventError, match=f"event at position {position}, field 'ts': {says}"):
        cepkit.match("A a ; B b", events)
    matcher = cepkit.Matcher("A a ; B b")
    matcher.push(events[0])
    with pytest.raises(EventError, match=f"event at position {position}, field 'ts': {says}"):
        matcher.push(events[1])
    assert cepkit.match("A a ; B b", [{"type": "A"}, {"type": "B"}]).positions() == [(0, 1)]  # none: positions


def test_an_attribute_no_event_of_the_type_has_is_an_error_when_the_type_has_none():
    """``b.x`` where the B events carry no attribute at all was let through (and matched nothing), while a B
    with other attributes got the error; the error names the closest attribute."""
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 2}]
    with pytest.raises(cepkit.QueryError, match="unknown attribute 'x' of 'b': events of type B have no attributes"):
        cepkit.match("A a ; B b WHERE b.x > 1", events)
    with pytest.raises(cepkit.QueryError, match="unknown attribute 'x' of 'b'"):
        cepkit.match("A a ; B b WHERE b.x > 1", pd.DataFrame(events))
    with pytest.raises(cepkit.QueryError, match="events of type B have amount; did you mean 'amount'"):
        cepkit.match("A a ; B b WHERE b.amout > 1", [{"type": "A", "ts": 1}, {"type": "B", "ts": 2, "amount": 3}])
    assert cepkit.match("A a ; C c WHERE c.x > 1", events).positions() == []  # no C at all: nothing to check


def test_epoch_milliseconds_under_a_window_with_a_unit_warn():
    """Epoch ms counted as seconds made ``WITHIN 2 min`` span 120 ms of them and the match one minute apart
    was silently lost."""
    ms = pd.DataFrame({"type": ["A", "B"], "ts": [1714557600000, 1714557660000]})
    with pytest.warns(cepkit.errors.TimeScaleWarning, match=r"epoch milliseconds.*unit='ms'"):
        assert cepkit.match("A a ; B b WITHIN 2 min", ms).positions() == []
    datetimes = ms.assign(ts=pd.to_datetime(ms.ts, unit="ms", utc=True))
    assert cepkit.match("A a ; B b WITHIN 2 min", datetimes).positions() == [(0, 1)]
    with pytest.warns(cepkit.errors.TimeScaleWarning, match="epoch nanoseconds"):
        cepkit.match("A a ; B b WITHIN 2 min", ms.assign(ts=ms.ts * 1_000_000))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # seconds, a unit-less window, an EVENTS window: no warning
        cepkit.match("A a ; B b WITHIN 2 min", ms.assign(ts=ms.ts // 1000))
        cepkit.match("A a ; B b WITHIN 60000", ms)
        cepkit.match("A a ; B b WITHIN 2 EVENTS", ms)
