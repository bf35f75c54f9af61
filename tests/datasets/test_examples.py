"""The papers' example streams (cepkit.datasets.examples): shape, provenance, and use as streams."""

import inspect
import re

import pandas as pd
import pytest

import cepkit
from cepkit.datasets import examples

STREAMS = {
    "cel_fire_sensors T": lambda: examples.cel_fire_sensors("T"),
    "cel_fire_sensors H": lambda: examples.cel_fire_sensors("H"),
    "ses_chemo 3": lambda: examples.ses_chemo(3),
    "ses_chemo 1": lambda: examples.ses_chemo(1),
    "ses_stocks 1": lambda: examples.ses_stocks(1),
    "ses_stocks 6": lambda: examples.ses_stocks(6),
    **{f"neel_hospital {n}": (lambda n=n: examples.neel_hospital(n)) for n in [*examples._HOSPITAL, "ex20", "rq1"]},
    "neel_predicate_scoping": examples.neel_predicate_scoping,
    **{f"ecube_example {n}": (lambda n=n: examples.ecube_example(n)) for n in examples._ECUBE},
    "rcep_water": examples.rcep_water,
}


@pytest.mark.parametrize("name", STREAMS)
def test_every_example_is_a_stream(name):
    frame = STREAMS[name]()
    assert isinstance(frame, pd.DataFrame) and {"type", "ts"} <= set(frame.columns) and len(frame)
    stream = cepkit.runtime.Stream.from_any(frame)
    assert len(stream) == len(frame)


def test_every_function_cites_its_source():
    for name, function in inspect.getmembers(examples, inspect.isfunction):
        if not name.startswith("_"):
            assert re.search(r"\[(CEL|LIU|CSV|SES|RCEP)\]", function.__doc__), name


@pytest.mark.parametrize(
    "call",
    [
        lambda: examples.cel_fire_sensors("X"),
        lambda: examples.ses_chemo(2),
        lambda: examples.ses_stocks(3),
        lambda: examples.neel_hospital("nope"),
        lambda: examples.ecube_example("we99"),
    ],
)
def test_unknown_variants_are_rejected(call):
    with pytest.raises(ValueError):
        call()


def test_position_zero_readings_differ_only_at_position_zero():
    """[CEL] §2: only the type (and so the value column) of position 0 differs."""
    t, h = examples.cel_fire_sensors("T"), examples.cel_fire_sensors("H")
    assert t.iloc[1:].equals(h.iloc[1:]) and (t.loc[0, "tmp"], h.loc[0, "hum"]) == (25, 25)


def test_streams_are_in_order_except_the_out_of_order_examples():
    """[LIU] Fig 3.1(a), (c), (d) (we9, we10, we13) arrive out of order; every other stream is in order."""
    for name, make in STREAMS.items():
        disordered = cepkit.runtime.Stream.from_any(make()).first_disorder() is not None
        assert disordered == (name in ("ecube_example we9", "ecube_example we10", "ecube_example we13")), name


def test_chemo_and_stock_times():
    """[SES] Figs 3.1 and 6.1(a): July dates, and "9:32:344" as 344 ms after 9:32."""
    assert examples.ses_chemo(3)["ts"].iloc[-1] == pd.Timestamp(2013, 7, 22)
    stocks = examples.ses_stocks(6)
    assert stocks["ts"].iloc[1] - stocks["ts"].iloc[0] == pd.Timedelta(milliseconds=13)
