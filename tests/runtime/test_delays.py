"""The delay options of the out-of-order modes, parsed once for the engines and for Spark streams."""

import datetime as dt
import math

import pytest

from cepkit.runtime.delays import delay_seconds, longest_delay, max_delay_option


@pytest.mark.parametrize("value, seconds", [(5, 5.0), (2.5, 2.5), ("2 min", 120.0), (dt.timedelta(hours=1), 3600.0)])
def test_a_delay_is_seconds(value, seconds):
    assert delay_seconds(value, "k") == seconds


@pytest.mark.parametrize(
    "value, error, words",
    [
        (-1, ValueError, "must not be negative"),
        (True, TypeError, "must be a number"),
        ("3 EVENTS", ValueError, "a time, not a number of events"),
        ([1], TypeError, "must be a number"),
    ],
)
def test_a_bad_delay_names_its_option(value, error, words):
    with pytest.raises(error, match=words):
        delay_seconds(value, "max_delay")


def test_per_type_bounds_and_the_longest():
    bounds = max_delay_option({"A": 5, "B": "2 min"})
    assert bounds == {"A": 5.0, "B": 120.0}
    assert longest_delay(bounds) == math.inf  # a type not named has no bound
    assert longest_delay(max_delay_option({"A": 5, "*": "10 s"})) == 10.0
    assert longest_delay(max_delay_option(7)) == 7.0


@pytest.mark.parametrize(
    "value, words",
    [
        ({}, "bounds no type"),
        ({"PUNCTUATION": 1}, "promises, not events"),
        ({3: 1}, "keys are event type names"),
        ({"A": -2}, r"max_delay\['A'\]"),
    ],
)
def test_a_bad_mapping_is_refused(value, words):
    with pytest.raises((TypeError, ValueError), match=words):
        max_delay_option(value)
