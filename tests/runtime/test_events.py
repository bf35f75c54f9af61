"""Streams from every accepted input, and bad events named by position and field (docs/language.md §1)."""

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from cepkit import Event, EventError
from cepkit.runtime.event_record import make_event
from cepkit.runtime.stream import Stream


def test_dataframe_rows_become_events_without_null_attributes():
    df = pd.DataFrame({"type": ["T", "H"], "ts": [1, 2], "tmp": [45.0, np.nan], "hum": [np.nan, 20.0]})
    s = Stream.from_any(df)
    assert [e.type for e in s] == ["T", "H"]
    assert s[0].attrs == {"tmp": 45.0} and s[1].attrs == {"hum": 20.0}
    assert s[1].position == 1 and s[1].time == 2.0 and not s.ts_is_datetime


def test_missing_ts_is_the_position():
    s = Stream.from_any(pd.DataFrame({"type": ["A", "B", "C"]}))
    assert list(s.times) == [0.0, 1.0, 2.0]
    assert [e.ts for e in Stream.from_any([{"type": "A"}, {"type": "B"}])] == [0, 1]


def test_datetime_ts_count_seconds():
    df = pd.DataFrame({"type": ["A", "B"], "ts": pd.to_datetime(["2013-01-01 00:00", "2013-01-01 00:10"])})
    s = Stream.from_any(df)
    assert s.ts_is_datetime and s.times[1] - s.times[0] == 600.0
    d = Stream.from_any([{"type": "A", "ts": dt.datetime(2013, 1, 1)}, {"type": "B", "ts": dt.datetime(2013, 1, 2)}])
    assert d.ts_is_datetime and d.times[1] - d.times[0] == 86400.0


def test_events_and_dicts_mix():
    s = Stream.from_any([Event("A", 5, {"v": 1}), {"type": "B", "ts": 6, "v": 2}])
    assert [(e.type, e.position, e.get("v"), e.get("ts")) for e in s] == [("A", 0, 1, 5.0), ("B", 1, 2, 6.0)]


@pytest.mark.parametrize(
    "events, position, field",
    [
        ([{"type": "A"}, {"ts": 3}], 1, "type"),
        ([{"type": "A"}, {"type": 7}], 1, "type"),
        ([{"type": "A", "ts": 1}, {"type": "B", "ts": "soon"}], 1, "ts"),
        ([{"type": "A", "ts": True}], 0, "ts"),
        (pd.DataFrame({"type": ["A", None]}), 1, "type"),
        (pd.DataFrame({"kind": ["A"]}), 0, "type"),
        (pd.DataFrame({"type": ["A", "B"], "ts": [1.0, np.nan]}), 1, "ts"),
    ],
)
def test_bad_events_name_position_and_field(events, position, field):
    with pytest.raises(EventError) as err:
        Stream.from_any(events)
    assert (err.value.position, err.value.field) == (position, field)
    assert f"position {position}" in str(err.value) and repr(field) in str(err.value)


def test_disorder_is_rejected_at_the_first_offending_position():
    s = Stream.from_any([{"type": "A", "ts": t} for t in (1, 3, 3, 2, 0)])
    assert s.first_disorder() == 3
    with pytest.raises(EventError, match="position 3"):
        s.require_order()
    assert s.logical_order() == [4, 0, 3, 1, 2]


def test_make_event_keeps_input_unmutated():
    raw = {"type": "A", "ts": 1, "v": 2}
    e = make_event(raw, 4)
    assert raw == {"type": "A", "ts": 1, "v": 2} and e.position == 4 and e["v"] == 2


def test_a_variable_of_several_or_branches_may_use_the_attributes_of_each_branch():
    import cepkit

    events = [{"type": "Checking", "insType": "scalpels"}, {"type": "Sharpening", "insID": 15}]
    q = "OR(Checking c FILTER c.insType = 'scalpels', Sharpening c FILTER c.insID = 15)"
    assert cepkit.match(q, events, engine="reference").positions() == [(0,), (1,)]
    with pytest.raises(cepkit.QueryError, match="unknown attribute 'insID' of 'c': events of type Checking") as err:
        cepkit.match("Checking c FILTER c.insID = 1", events)
    assert (err.value.line, err.value.column) == (1, 19) and "^^^^^^^" in str(err.value)
