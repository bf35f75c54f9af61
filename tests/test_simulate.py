"""cepkit.simulate: seeded scenarios reproduce, their rates and distributions are what was asked, and the
injected disorder is bounded (the bound the conservative out-of-order mode relies on)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.simulate import Scenario, choice, constant, integers, lognormal, normal, uniform


def shop(seed=1, duration="2 h"):
    return (
        Scenario(seed=seed, duration=duration)
        .add("Login", rate="30/min", user=choice(range(50)))
        .add(
            "Purchase",
            rate=0.1,
            user=choice(range(50)),
            amount=lognormal(3, 1),
            channel=choice(["web", "app"], p=[0.8, 0.2]),
        )
    )


def test_the_same_seed_gives_the_same_stream_and_another_seed_another():
    assert shop(1).events().equals(shop(1).events())
    assert not shop(1).events().equals(shop(2).events())


def test_rates_match_within_poisson_error():
    events = shop(3, duration="10 h").events()
    counts = events["type"].value_counts()
    for name, expected in (("Login", 0.5 * 36000), ("Purchase", 0.1 * 36000)):
        assert abs(counts[name] - expected) < 5 * np.sqrt(expected), (name, counts[name], expected)


def test_attributes_follow_their_distributions_and_only_on_their_type():
    events = shop(4, duration="10 h").events()
    purchases, logins = events[events.type == "Purchase"], events[events.type == "Login"]
    assert purchases["amount"].gt(0).all() and abs(np.log(purchases["amount"]).mean() - 3) < 0.1
    assert logins["amount"].isna().all() and set(events["user"]) <= set(range(50))
    assert abs((purchases["channel"] == "web").mean() - 0.8) < 0.05


def test_in_order_without_disorder_and_on_the_clock():
    events = shop(5).events()
    assert events["ts"].is_monotonic_increasing
    assert events["ts"].min() >= 0 and events["ts"].max() < 7200
    dated = Scenario(seed=1, start="2024-05-01", duration="1 h").add("A", rate=1).events()
    assert str(dated["ts"].dt.tz) == "UTC" and dated["ts"].min() >= pd.Timestamp("2024-05-01", tz="UTC")


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), share=st.floats(0.01, 0.9), by=st.floats(0.1, 100))
def test_late_events_are_late_by_at_most_the_bound(seed, share, by):
    events = Scenario(seed=seed, duration=600).add("A", rate=2).add("B", rate=1).late(share, by=by).events()
    ts = events["ts"].to_numpy()
    lateness = np.maximum.accumulate(ts) - ts
    assert lateness.max() <= by + 1e-9
    assert sorted(ts.tolist()) == sorted(
        Scenario(seed=seed, duration=600).add("A", rate=2).add("B", rate=1).late(share, by=by).events()["ts"].tolist()
    )  # reproducible


def test_late_share_and_what_the_conservative_mode_makes_of_it():
    scenario = Scenario(seed=9, duration=3600).add("A", rate=1, id=integers(0, 5)).add("B", rate=1, id=integers(0, 5))
    ordered, disordered = scenario.events(), scenario.late(0.2, by=20).events()
    late = (np.maximum.accumulate(disordered["ts"].to_numpy()) > disordered["ts"].to_numpy()).mean()
    assert 0.05 < late < 0.3 and len(ordered) == len(disordered)
    query = "SEQ(A a, B b) WITHIN 5 s PARTITION BY id"
    expected = cepkit.match(query, ordered)
    got = cepkit.match(query, disordered, disorder="conservative", max_delay=20)
    assert sorted(map(tuple, (sorted(disordered["ts"].iloc[list(m.positions)]) for m in got))) == sorted(
        map(tuple, (sorted(ordered["ts"].iloc[list(m.positions)]) for m in expected))
    )


def test_ties_drops_and_bursts():
    base = Scenario(seed=11, duration=3600).add("A", rate=1).add("B", rate=0.5)
    tied = base.ties(0.3).events()["ts"]
    assert 0.2 < tied.duplicated().mean() < 0.4 and tied.is_monotonic_increasing
    assert abs(len(base.drop(0.25).events()) / len(base.events()) - 0.75) < 0.03
    bursty = base.burst("A", at="10 min", length="5 min", factor=20).events()
    window = bursty[(bursty.ts >= 600) & (bursty.ts < 900)]
    assert abs((window.type == "A").sum() - 20 * 300) < 5 * np.sqrt(6000)
    outside = bursty[bursty.ts >= 900]
    assert abs((outside.type == "A").sum() - 2700) < 5 * np.sqrt(2700)


def test_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="not '2 fortnights'"):
        Scenario(duration="2 fortnights")
    with pytest.raises(ValueError, match="like '6/min', not 'often'"):
        Scenario().add("A", rate="often")
    with pytest.raises(ValueError, match="no type 'C' in the scenario"):
        Scenario().add("A").burst("C", at=0, length=1)
    with pytest.raises(ValueError, match="no event types"):
        Scenario().events()
    with pytest.raises(ValueError, match="'ts' is not an attribute"):
        Scenario().add("A", ts=constant(1))
    with pytest.raises(ValueError, match="a share is between 0 and 1"):
        Scenario().add("A").drop(1.5)
    assert repr(normal(0, 1)) == "normal(0, 1)" and uniform(1, 2).draw(np.random.default_rng(0), 3).shape == (3,)


def test_the_errors_a_user_makes_say_what_to_write():
    """A list as an attribute failed in numpy ("could not broadcast input array from shape (3,)..."), p not
    summing to 1 and low > high only at the draw or never, "yesterday" in pandas' words, "10/hr" with no
    unit named; the units are the query language's ("5 mins" was refused)."""
    from cepkit.simulate import choice, integers, seconds

    with pytest.raises(ValueError, match=r"attribute 'v': a list is not one value; write choice\(\[1, 2, 3\]"):
        Scenario().add("A", v=[1, 2, 3])
    with pytest.raises(ValueError, match="sum to 1"):
        choice([1, 2], p=[0.5, 0.6])
    with pytest.raises(ValueError, match="needs low < high"):
        integers(5, 1)
    with pytest.raises(ValueError, match="start is a number of seconds, a datetime or text"):
        Scenario(start="yesterday")
    with pytest.raises(ValueError, match="not '10/hr'; did you mean 'hour'"):
        Scenario().add("A", rate="10/hr")
    assert seconds("5 mins") == 300 and seconds("2 secs") == 2
