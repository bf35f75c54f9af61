"""Float timestamps at a time window's exact edge: every engine decides "within" by ``cepkit.lang.window``'s
rule, as the reference does (docs/language.md §10 rule 8).

Timestamps on a float grid (ts = offset + i · step) and windows of k steps put many spans exactly at the
window's length, where ``t_j − t_i`` rounds a few ulps above or below ``w``.
"""

import math

import pytest
from hypothesis import given, settings, strategies as st

import cepkit
from cepkit.lang.window import earliest_time, fits_time, latest_time

QUERIES = [
    "SEQ(A a, B b) WITHIN {w}",
    "SEQ(A a, B b, C c) WITHIN {w}",
    "SEQ(A a, !C c, B b) WITHIN {w}",
    "SEQ(!C c, A a, B b) WITHIN {w}",
    "SEQ(A a, B b, !C c) WITHIN {w}",
    "SEQ(A+ a, B b) WITHIN {w}",
    "AND(A a, B b) WITHIN {w}",
    "SELECT STNM * PATTERN SEQ(A a, B b) WITHIN {w}",
    "SEQ(A a, B b) WITHIN {w} PARTITION BY id",
]
ENGINES = [e for e in cepkit.engines().index if e != "reference"]
STEPS = [0.002, 0.01, 0.1, 0.3, 0.7, 1 / 3]


@st.composite
def edge_cases(draw):
    """(query, events): ts on a grid of ``step``, one of ``QUERIES`` with a window of k steps written in
    seconds or ms."""
    step = draw(st.sampled_from(STEPS))
    k = draw(st.integers(1, 6))
    offset = draw(st.sampled_from([0.0, 1000.0, 12345.678]))
    ticks = sorted(draw(st.lists(st.integers(0, 3 * k), min_size=2, max_size=12)))
    events = [
        {"type": draw(st.sampled_from("ABC")), "ts": offset + i * step, "id": draw(st.integers(0, 1))} for i in ticks
    ]
    window = draw(st.sampled_from([repr(k * step), f"{k * step * 1000!r} ms"]))
    return draw(st.sampled_from(QUERIES)).format(w=window), events


def on_edge_cases(max_examples: int):
    """A test of every engine (the reference aside) on ``max_examples`` drawn ``edge_cases``."""

    def decorate(test):
        test = given(case=edge_cases())(settings(max_examples=max_examples, deadline=None)(test))
        return pytest.mark.parametrize("engine", ENGINES)(test)

    return decorate


def _runs(query, events, engine):
    try:
        return cepkit.match(query, events, engine=engine)
    except cepkit.QueryError as err:  # a feature the engine lacks: it names those that have it
        assert err.engines, str(err)
        return None


@on_edge_cases(max_examples=25)
def test_every_engine_decides_the_window_edge_as_the_reference(engine, case):
    query, events = case
    got = _runs(query, events, engine)
    if got is not None:
        expected = cepkit.match(query, events, engine="reference")
        assert got.positions() == expected.positions(), (engine, query, events)


@on_edge_cases(max_examples=12)
def test_every_matcher_decides_the_window_edge_as_the_reference(engine, case):
    query, events = case
    if _runs(query, events, engine) is None:
        return
    matcher = cepkit.Matcher(query, engine=engine)
    pushed = [m.key for e in events for m in matcher.push(e)] + [m.key for m in matcher.close()]
    expected = cepkit.match(query, events, engine="reference")
    assert sorted(pushed) == sorted(m.key for m in expected), (engine, query, events)


def test_the_known_case_finds_every_match():
    """``SEQ(L1 c, FCF f) WITHIN 20 ms`` with ts = i · 0.002: spans of 10 steps are in the window (the stack
    and ses missed those that round above 0.02, such as 13 · 0.002 − 3 · 0.002)."""
    kinds = ("L1", "X", "FCF", "X")
    events = [{"type": kinds[i % 4], "ts": i * 0.002} for i in range(400)]
    exact = sum(1 for i in range(0, 400, 4) for j in range(i + 2, min(400, i + 11), 4))
    found = {e: len(cepkit.match("SEQ(L1 c, FCF f) WITHIN 20 ms", events, engine=e)) for e in [*ENGINES, "reference"]}
    assert found == dict.fromkeys(found, exact)


@settings(max_examples=120, deadline=None)
@given(
    w=st.sampled_from([0.0, 0.002, 0.02, 1 / 3, 5.0, 1e5]),
    t=st.floats(-1e10, 1e10, allow_nan=False),
)
def test_the_window_bounds_are_where_the_rule_changes(w, t):
    first, last = earliest_time(w, t), latest_time(w, t)
    assert fits_time(w, first, t) and not fits_time(w, math.nextafter(first, -math.inf), t)
    assert fits_time(w, t, last) and not fits_time(w, t, math.nextafter(last, math.inf))
