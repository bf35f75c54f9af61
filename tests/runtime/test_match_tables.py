"""Matches as tables with the bound events' attributes (``to_pandas(fields=...)``, ``to_arrow``,
``cepkit.runtime.match_tables``): nulls, Kleene lists, datetimes, unknown fields named."""

import datetime as dt

import pandas as pd
import pyarrow as pa
import pytest

import cepkit
from cepkit import QueryError

EVENTS = pd.DataFrame(
    {
        "type": ["A", "B", "B", "C", "A", "B", "C"],
        "ts": pd.to_datetime(
            [
                "2024-01-01 00:00:00",
                "2024-01-01 00:00:01",
                "2024-01-01 00:00:02",
                "2024-01-01 00:00:03",
                "2024-01-01 00:00:04",
                "2024-01-01 00:00:05",
                "2024-01-01 00:00:06",
            ]
        ),
        "v": [1.0, 2.0, None, 4.0, 5.0, 6.0, 7.0],
        "name": ["x", None, "y", "z", "w", "u", "t"],
    }
)


def test_fields_gather_the_bound_events_attributes_with_nulls_kleene_and_datetimes():
    m = cepkit.match("A a ; B+ b ; C c WITHIN 10 s", EVENTS, engine="automaton")
    table = m.to_pandas(fields=["a.v", "b.v", "c.ts", "b.name"])
    for row in table.itertuples(index=False):
        a, b, c = row.a, row.b, row.c
        assert row._5 == EVENTS.v[a]
        assert row._7 == EVENTS.ts[c] and isinstance(row._7, pd.Timestamp)
        assert [x if x == x else None for x in getattr(row, "_6")] == [
            None if pd.isna(EVENTS.v[p]) else EVENTS.v[p] for p in b
        ]
        assert row._8 == [EVENTS.name[p] for p in b]
    assert list(table.columns[-4:]) == ["a.v", "b.v", "c.ts", "b.name"]
    arrow = m.to_arrow(fields=["a.v", "b.v", "c.ts"])
    assert arrow.column("b.v").to_pylist() == [
        [None if pd.isna(EVENTS.v[p]) else EVENTS.v[p] for p in b] for b in table.b
    ]
    assert pa.types.is_timestamp(arrow.schema.field("c.ts").type)


def test_fields_all_lists_each_variables_attributes_and_unbound_is_null():
    m = cepkit.match("(A a OR B b) ; C c", EVENTS, engine="reference")
    table = m.to_pandas(fields="all")
    assert {"a.ts", "a.v", "a.name", "b.ts", "b.v", "b.name", "c.ts", "c.v", "c.name"} <= set(table.columns)
    assert "c.type" not in table.columns
    unbound = table[table.a.isna()]
    assert len(unbound) and unbound["a.v"].isna().all() and unbound["a.ts"].isna().all()


def test_an_unknown_field_names_what_exists():
    m = cepkit.match("A a ; C c", EVENTS)
    with pytest.raises(QueryError, match="bind a, c"):
        m.to_pandas(fields=["x.v"])
    with pytest.raises(QueryError, match="the events have type, ts, v, name"):
        m.to_pandas(fields=["a.speed"])
    with pytest.raises(QueryError, match="variable.attribute"):
        m.to_arrow(fields="v")


def test_empty_matches_and_a_stream_of_one_event():
    for events in (EVENTS.iloc[:1], EVENTS.iloc[:0]):
        m = cepkit.match("A a ; C c", events, engine="automaton")
        assert len(m) == 0 and m.positions() == [] and list(m) == []
        assert [a.tolist() for a in m.position_arrays()] == [[0], []]
        assert list(m.to_pandas(fields=["a.v"]).columns) == ["match_id", "positions", "a.v"]
        assert m.to_arrow().num_rows == 0
    one = cepkit.match("A a", EVENTS.iloc[:1], engine="stack")
    assert one.positions() == [(0,)] and one.to_pandas(fields="all")["a.v"].tolist() == [1.0]


def test_fields_from_dicts_without_ts():
    m = cepkit.match("A a ; B b", [{"type": "A", "x": 1}, {"type": "B", "when": dt.date(2024, 1, 1)}])
    assert m.to_pandas(fields=["a.ts", "a.x", "b.when"]).iloc[0][["a.ts", "a.x", "b.when"]].tolist() == [
        0,
        1,
        dt.date(2024, 1, 1),
    ]
