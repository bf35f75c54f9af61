"""Streams as columns (issue 11) and the event checks of issue 15: every input form (dicts, Events, a
DataFrame, a pyarrow Table, categorical and string type columns, nullable dtypes) gives the same stream
and the same matches on every engine; every bad event is an EventError naming its position and field."""

import datetime as dt
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit import Event, EventError
from cepkit.runtime.attribute_columns import AttributeColumn
from cepkit.runtime.stream import Stream
from cepkit.runtime.registry import registered
from strategies import streams

ENGINES = [e.name for e in registered()]
QUERIES = [
    "A a ; B b",
    "A a FILTER a.v > 1",
    "A a ; B b FILTER a.v = b.v",
    "A a ; (B b FILTER b.v >= a.v)+ ; C c",
    "SEQ(A a, !B b, C c) WHERE a.id = c.id",
    "SEQ(A a, B+ b) WHERE prev(b.v) < b.v and count(b) > 1",
    "A a ; B b WITHIN 3 s",
    "A a ; B b WITHIN 3 EVENTS",
    "A a ; B b PARTITION BY id",
    "SELECT PARTITION_STRICT * PATTERN A a ; B b PARTITION BY id",
    "SELECT NEXT * PATTERN A a ; B b",
    "A a ; ANY x ; C c FILTER x.v < c.v WITHIN 4 EVENTS",
    "(A a OR B b) ; C c FILTER c.id IN (0, 2)",
]


def _forms(events: list) -> dict:
    """The same events as dicts, Events, a DataFrame and an Arrow table (null attributes left out)."""
    columns = sorted({k for e in events for k in e} - {"type", "ts"})
    rows = {
        "type": [e["type"] for e in events],
        "ts": [e["ts"] for e in events],
        **{c: [e.get(c) for e in events] for c in columns},
    }
    return {
        "dicts": events,
        "events": [Event(e["type"], e["ts"], {k: v for k, v in e.items() if k not in ("type", "ts")}) for e in events],
        "frame": pd.DataFrame(rows, columns=["type", "ts", *columns]),
        "categorical": pd.DataFrame({**rows, "type": pd.Categorical(rows["type"])}, columns=["type", "ts", *columns]),
        "arrow": pa.table(
            {
                "type": pa.array(rows["type"], pa.string()),
                "ts": pa.array(rows["ts"], pa.int64()),
                **{c: pa.array(rows[c], pa.int64()) for c in columns},
            }
        ),
    }


def _outcome(query, events, engine):
    try:
        return cepkit.match(query, events, engine=engine).positions()
    except cepkit.QueryError as err:
        return ("refused", str(err).splitlines()[0])


@st.composite
def streams_with_nulls(draw):
    events = draw(streams(max_size=8))
    for e in events:
        for attr in ("v", "id"):
            if draw(st.integers(0, 4)) == 0:
                del e[attr]
    return events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams_with_nulls(), st.sampled_from(QUERIES), st.sampled_from(ENGINES))
def test_every_input_form_gives_the_same_matches(events, query, engine):
    forms = _forms(events)
    expected = _outcome(query, events, engine)
    for name, form in forms.items():
        got = _outcome(query, form, engine)
        if isinstance(expected, tuple) and "unknown attribute" in expected[1] and name != "dicts":
            continue  # a DataFrame's column null in every row is a known attribute (docs/language.md §10.5)
        assert got == expected, (name, query, engine)


@settings(max_examples=40, deadline=None)
@given(streams_with_nulls())
def test_every_input_form_gives_the_same_events(events):
    seen = []
    for name, form in _forms(events).items():
        stream = Stream.from_any(form)
        seen.append([(e.type, e.ts, e.time, e.position, dict(e.attrs)) for e in stream])
        assert [stream[i] for i in range(len(stream))] == list(stream), name
        assert list(stream.types) == [e["type"] for e in events] and stream.times.tolist() == [
            float(e["ts"]) for e in events
        ]
    assert all(s == seen[0] for s in seen[1:])


def test_integer_columns_give_integers_and_nullable_columns_leave_nulls_out():
    frame = pd.DataFrame(
        {
            "type": ["A", "B"],
            "ts": [1, 2],
            "n": pd.array([3, None], dtype="Int64"),
            "b": pd.array([True, None], dtype="boolean"),
            "s": pd.array(["x", None], dtype="string"),
            "f": [0.5, np.nan],
        }
    )
    a, b = Stream.from_any(frame)
    assert a.attrs == {"n": 3, "b": True, "s": "x", "f": 0.5} and type(a.attrs["n"]) is int and type(a.ts) is int
    assert b.attrs == {} and b.ts == 2
    stream = Stream.from_any(frame)
    assert stream.column("n").kind == "num" and stream.column("s").kind == "str"
    assert stream.column("b").kind == "bool" and stream.column("absent").null.all()
    assert stream.attributes_of() == {"n", "b", "s", "f"} and stream.attributes_of(frozenset({"B"})) == set()


@pytest.mark.parametrize(
    "dtype", ["Int64", "UInt8", "Float64", "boolean", "int64[pyarrow]", "double[pyarrow]", "bool[pyarrow]"]
)
def test_nullable_numeric_columns_keep_their_nulls_and_values(dtype):
    """A nullable numeric column's nulls come from its mask (no Series made): the same as ``isna``, and the
    events leave them out."""
    values = (
        [True, None, False]
        if "bool" in dtype
        else [1.5, None, 2.5]
        if "Float" in dtype or "double" in dtype
        else [1, None, 2]
    )
    series = pd.Series(values, dtype=dtype)
    column = AttributeColumn.of_series(series)
    assert column.null.tolist() == series.isna().tolist() == [False, True, False]
    events = list(Stream.from_any(pd.DataFrame({"type": ["A"] * 3, "x": series})))
    assert [e.attrs for e in events] == [{"x": values[0]}, {}, {"x": values[2]}]
    assert [type(e.attrs["x"]) for e in (events[0], events[2])] == [type(values[0])] * 2


def test_type_columns_of_every_dtype():
    for types in (
        pd.Categorical(["A", "B", "A"]),
        pd.array(["A", "B", "A"], dtype="string"),
        pd.array(["A", "B", "A"], dtype="string[pyarrow]"),
        np.array(["A", "B", "A"]),
    ):
        stream = Stream.from_any(pd.DataFrame({"type": types}))
        assert list(stream.types) == ["A", "B", "A"] and stream.type_in({"A"}).tolist() == [True, False, True]
        assert cepkit.match("A a ; B b", pd.DataFrame({"type": types})).positions() == [(0, 1)]


def test_consecutive_positions_are_made_when_read():
    frame = pd.DataFrame({"type": ["A", "B", "A", "B"], "ts": [0.0, 1.0, 2.0, 3.0]}, index=[9, 8, 7, 6])
    stream = Stream.from_any(frame, first_position=5)
    assert "positions" not in stream.__dict__
    assert stream.position_of(np.array([3, 0])).tolist() == [8, 5] and stream[2].position == 7
    assert [e.ts for e in stream] == [0.0, 1.0, 2.0, 3.0]  # ts by place, whatever the index
    part = stream.take(np.array([1, 3]))
    assert "positions" not in stream.__dict__ and part.positions.tolist() == [6, 8]
    assert stream.positions.tolist() == [5, 6, 7, 8] and stream.position_of(1) == 6


def test_datetime_ts_of_every_form_give_the_same_matches():
    stamps = pd.to_datetime(["2013-01-01 00:00:00", "2013-01-01 00:00:02", "2013-01-01 00:00:09"])
    forms = [
        pd.DataFrame({"type": ["A", "B", "B"], "ts": stamps}),
        pd.DataFrame({"type": ["A", "B", "B"], "ts": stamps.tz_localize("Europe/Paris").tz_convert("UTC")}),
        pd.DataFrame({"type": ["A", "B", "B"], "ts": stamps.astype("datetime64[s]")}),
        [{"type": t, "ts": s.to_pydatetime()} for t, s in zip("ABB", stamps)],
        pa.table({"type": ["A", "B", "B"], "ts": pa.array(stamps)}),
    ]
    for form in forms:
        stream = Stream.from_any(form)
        assert stream.ts_is_datetime and (stream.times - stream.times[0]).tolist() == [0.0, 2.0, 9.0]
        for engine in ("automaton", "stack", "rcep", "reference"):
            assert cepkit.match("A a ; B b WITHIN 5 s", form, engine=engine).positions() == [(0, 1)]


@pytest.mark.parametrize("engine", ENGINES)
def test_one_event_and_no_event(engine):
    empty = pd.DataFrame(
        {"type": pd.Series([], dtype=object), "ts": pd.Series([], dtype=float), "v": pd.Series([], dtype=float)}
    )
    assert cepkit.match("A a FILTER a.v > 1", empty, engine=engine).positions() == []
    assert cepkit.match("A a", pd.DataFrame({"type": []}), engine=engine).positions() == []
    one = pd.DataFrame({"type": ["A"], "ts": [3.5], "v": [2]})
    assert cepkit.match("A a FILTER a.v > 1", one, engine=engine).positions() == [(0,)]
    assert len(Stream.from_any(one)) == 1 and Stream.from_any(one)[0].time == 3.5


def test_the_lazy_view_is_built_once_and_slices_keep_positions():
    stream = Stream.from_any([{"type": "A", "ts": i, "v": i} for i in range(5)])
    assert "events" not in stream.__dict__ and stream[-1].attrs == {"v": 4}
    assert stream[1] is not stream[1]  # built on demand until someone iterates
    events = list(stream)
    assert stream[1] is stream.events[1] and events == stream.events
    part = stream.take(np.array([1, 3]))
    assert [e.position for e in part] == [1, 3] and part.positions.tolist() == [1, 3]
    assert [e.position for e in stream[3:]] == [3, 4]
    later = Stream.from_any(pd.DataFrame({"type": ["A", "B"], "ts": [0, 1]}), first_position=10)
    assert [e.position for e in later] == [10, 11] and later[0].ts == 0


@settings(max_examples=80, deadline=None)
@given(
    streams_with_nulls(),
    streams_with_nulls(),
    st.sampled_from(["dicts", "frame", "arrow", "categorical"]),
    st.sampled_from(["dicts", "frame", "arrow", "categorical"]),
    st.integers(0, 3),
    st.integers(0, 100),
)
def test_followed_by_joins_two_streams_keeping_positions_types_and_nulls(first, second, form, other_form, cut, gap):
    """The events of both, in turn, each at its own position, with its type, ts and attributes (a value
    compares as it did: an int read back as a float is the same number), whatever form each side came in."""
    head = Stream.from_any(_forms(first)[form]).take(slice(cut, None))
    tail = Stream.from_any(_forms(second)[other_form], first_position=len(first) + gap)
    joined = head.followed_by(tail)
    expected = list(head) + list(tail)
    assert [(e.type, e.ts, e.attrs, e.position, e.time) for e in joined] == [
        (e.type, e.ts, e.attrs, e.position, e.time) for e in expected
    ]
    assert joined.positions.tolist() == [e.position for e in expected]
    for name in ("v", "id"):
        assert joined.column(name).null.tolist() == [name not in e.attrs for e in expected]
    assert joined.type_in({"A"}).tolist() == [e.type == "A" for e in expected]


def test_followed_by_keeps_what_values_are():
    """A bool stays a bool beside numbers; two dtypes of numbers meet as exact floats; strings beside
    numbers are objects; datetime ts cannot follow numeric ones."""
    first = Stream.from_any(
        pd.DataFrame({"type": ["A", "B"], "ts": [0, 1], "flag": [True, False], "v": [1, 2], "s": ["x", "y"]})
    )
    second = Stream.from_any(
        pd.DataFrame({"type": ["B", "C"], "ts": [2, 3], "flag": [1, 0], "v": [2.5, None], "s": [1, 2]}),
        first_position=2,
    )
    joined = first.followed_by(second)
    assert [e.attrs["flag"] for e in joined] == [True, False, 1, 0]
    assert [type(e.attrs["flag"]) for e in joined] == [bool, bool, int, int]
    assert joined.column("v").kind == "num" and joined.column("v").null.tolist() == [False, False, False, True]
    assert [e.attrs.get("v") for e in joined] == [1, 2, 2.5, None]
    assert joined.column("s").kind == "other" and [e.attrs["s"] for e in joined] == ["x", "y", 1, 2]
    assert joined.type_names[:2] == ["A", "B"] and [e.type for e in joined] == ["A", "B", "B", "C"]
    assert first.followed_by(Stream.from_any([])) is first
    dated = Stream.from_any([{"type": "A", "ts": dt.datetime(2024, 1, 1)}], first_position=9)
    with pytest.raises(ValueError, match="datetime"):
        first.followed_by(dated)


def test_the_constructor_keeps_events_positions_and_times():
    events = [Event("A", 5, {"v": 1}, 7, 5.0), Event("B", 6, None, 9, 6.0)]
    stream = Stream(events)
    assert stream.positions.tolist() == [7, 9] and stream.times.tolist() == [5.0, 6.0]
    assert stream[0] is events[0] and stream.column("v").null.tolist() == [False, True]


BAD_EVENTS = [
    ([{"type": "A", "ts": 10**400}], 0, "ts"),
    ([{"type": "A", "ts": 1j}], 0, "ts"),
    ([{"type": "A", "ts": pd.NaT}], 0, "ts"),
    ([{"type": "A", "ts": np.datetime64("NaT")}], 0, "ts"),
    ([{"type": "A", "ts": 0}, {"type": "B", "ts": math.inf}], 1, "ts"),
    ([{"type": "A", "ts": 0}, {"type": "B", "ts": -math.inf}], 1, "ts"),
    ([{"type": "A", "ts": 0}, {"type": "B", "ts": math.nan}], 1, "ts"),
    ([{"type": "A", "ts": 0}, {"type": "B", "ts": dt.datetime(2020, 1, 1)}], 1, "ts"),
    ([{"type": "A", "ts": dt.datetime(2020, 1, 1)}, {"type": "B"}], 1, "ts"),
    ([{"type": "A", "ts": "soon"}], 0, "ts"),
    ([Event(5, 0)], 0, "type"),
    ([{"type": "A"}, Event("A", 0, 7)], 1, "attrs"),
    ([{"type": "A"}, 5], 1, "type"),
    (pd.DataFrame({"type": ["A", "B"], "ts": [0, np.inf]}), 1, "ts"),
    (pd.DataFrame({"type": ["A", "B"], "ts": [0, 1j]}), 0, "ts"),
    (pd.DataFrame({"type": ["A", "B"], "ts": [True, False]}), 0, "ts"),
    (pd.DataFrame({"type": ["A", "B"], "ts": pd.to_datetime(["2020-01-01", None])}), 1, "ts"),
    (pd.DataFrame({"type": ["A", "B"], "ts": pd.array([1, None], dtype="Int64")}), 1, "ts"),
    (pd.DataFrame({"type": ["A", "B"], "ts": [0, pd.Timestamp("2020-01-01")]}, dtype=object), 1, "ts"),
    (pd.DataFrame({"type": ["A", "B"], "ts": [0, 10**400]}, dtype=object), 1, "ts"),
    (pd.DataFrame([["A", "B", 0]], columns=["type", "type", "ts"]), 0, "type"),
    (pd.DataFrame([["A", 0, 1]], columns=["type", "ts", "ts"]), 0, "ts"),
    (pd.DataFrame({"type": pd.Categorical(["A", None])}), 1, "type"),
    (pd.DataFrame({"type": ["A", 3]}), 1, "type"),
    (pd.DataFrame({"type": pd.array(["A", None], dtype="string[pyarrow]")}), 1, "type"),
    (pd.DataFrame({"type": pd.array([1, 2], dtype="Int64")}), 0, "type"),
    (pa.table({"type": ["A", None]}), 1, "type"),
]


@pytest.mark.parametrize("events, position, field", BAD_EVENTS)
def test_bad_events_are_event_errors_naming_position_and_field(events, position, field):
    with pytest.raises(EventError) as err:
        cepkit.match("A a", events, engine="reference")
    assert (err.value.position, err.value.field) == (position, field), str(err.value)


def test_an_event_without_attributes_may_say_none():
    assert cepkit.match("A a", [Event("A", 0, None)]).positions() == [(0,)]
    assert cepkit.runtime.event_record.make_event(Event("A", 0, None), 3).attrs == {}


@pytest.mark.parametrize("engine", ["reference", "stack", "ecube", "rcep", "nested", "ses"])
def test_huge_integers_and_lists_compare_as_python_does(engine):
    huge = [
        {"type": "A", "ts": 0, "v": 10**400},
        {"type": "B", "ts": 1, "v": 1.5},
        {"type": "B", "ts": 2, "v": 10**401},
        {"type": "B", "ts": 3, "v": 10**400},
    ]
    lists = [{"type": "A", "ts": 0, "v": [1]}, {"type": "B", "ts": 1, "v": [1]}, {"type": "B", "ts": 2, "v": [2]}]
    for query, events in (
        ("SEQ(A a, B b) WHERE a.v < b.v", huge),
        ("SEQ(A a, B b) WHERE a.v = b.v", huge),
        ("SEQ(A a, B b) WHERE a.v = b.v", lists),
        ("SEQ(A a, B b) WHERE a.v < b.v", lists),
    ):
        expected = cepkit.match(query, events, engine="reference").positions()
        assert expected and cepkit.match(query, events, engine=engine).positions() == expected, query
    assert cepkit.match("SEQ(A a, B b) WHERE a.v > 5", huge, engine=engine).positions() == [(0, 1), (0, 2), (0, 3)]


@pytest.mark.parametrize("engine", ENGINES)
def test_unhashable_partition_values_are_event_errors(engine):
    events = [{"type": "A", "ts": 0, "k": 1}, {"type": "B", "ts": 1, "k": [1]}]
    with pytest.raises(EventError) as err:
        cepkit.match("A a ; B b PARTITION BY k", events, engine=engine)
    assert (err.value.position, err.value.field) == (1, "k")


def test_matcher_extend_takes_a_micro_batch_as_columns():
    query = "SEQ(A a, B b) WITHIN 5 s PARTITION BY id"
    events = [{"type": t, "ts": i, "id": i % 2} for i, t in enumerate("ABABBA")]
    one_by_one = cepkit.Matcher(query, engine="automaton")
    expected = [m.positions for e in events for m in one_by_one.push(e)]
    for batch in (pd.DataFrame, lambda rows: pa.Table.from_pylist(rows)):
        matcher = cepkit.Matcher(query, engine="automaton")
        got = [m.positions for m in matcher.extend(batch(events[:3]))]
        got += [m.positions for m in matcher.extend(batch(events[3:]))]
        assert got == expected
    matcher = cepkit.Matcher(query, engine="automaton")
    matcher.extend(pd.DataFrame(events[:3]))
    with pytest.raises(EventError) as err:
        matcher.extend(pd.DataFrame({"type": ["A", None], "ts": [9, 10], "id": [0, 0]}))
    assert (err.value.position, err.value.field) == (4, "type")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["A", "B", "C"]),
            st.one_of(st.none(), st.integers(0, 3)),
            st.one_of(st.none(), st.sampled_from(["x", "y"])),
        ),
        max_size=30,
    ),
    st.sampled_from([("v",), ("s",), ("type",), ("ts",), ("v", "s"), ("s", "type"), ("type", "v", "s")]),
)
def test_key_codes_number_keys_in_order_of_first_appearance(rows, names):
    events = [
        {"type": t, "ts": i // 2, **({} if v is None else {"v": v}), **({} if s is None else {"s": s})}
        for i, (t, v, s) in enumerate(rows)
    ]
    stream = Stream.from_any(events)
    expected: dict = {}
    keys = [tuple(e.get(name) for name in names) for e in events]
    want = [expected.setdefault(key, len(expected)) for key in keys]  # a missing value (None) is a key too
    assert stream.key_codes(names).tolist() == want
