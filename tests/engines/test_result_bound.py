"""The window's bound on a result's size (cepkit/engines/result_size.py ``window_bound``): ses and rcep
skip the automaton's count before a Kleene run when the bound already fits, so the bound must never fall
below the true number of matches (the automaton's count, itself tested against the reference)."""

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.engines.result_size import window_bound
from cepkit.runtime.registry import get_engine
from cepkit.runtime.stream import Stream
from tests.strategies import streams, unary_queries


def true_count(query: cepkit.Query, events) -> int:
    return get_engine("automaton").compile(query).size(Stream.from_any(events))


@settings(max_examples=150, deadline=None)
@given(unary_queries(strategies=("ALL",)), streams(max_size=12))
def test_the_bound_is_never_below_the_count(text, events):
    query = cepkit.parse(text)
    bound = window_bound(query, Stream.from_any(events))
    if bound is not None:
        assert bound >= true_count(query, events), (text, events)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.sampled_from(["EVENTS", "s"]), streams(types=("A", "B"), min_size=1, max_size=9))
def test_under_and_as_well(w, unit, events):
    """AND's items take distinct events (the automaton runs no AND: the reference counts)."""
    query = cepkit.parse(f"AND(A+ a, SEQ(A+ b, B c)) WITHIN {w} {unit}")
    bound = window_bound(query, Stream.from_any(events))
    assert bound is not None and bound >= len(cepkit.match(query, events, engine="reference"))


def test_no_bound_without_a_window_or_with_nested_kleene():
    events = pd.DataFrame({"type": list("AAB"), "ts": [0.0, 1.0, 2.0]})
    for text in ("A+ a ; B b", "(A+ a ; B b)+ ; B c WITHIN 5 s"):
        assert window_bound(cepkit.parse(text), Stream.from_any(events)) is None


def test_a_sparse_window_skips_the_count_and_a_dense_one_does_not(monkeypatch):
    """One A or B a second: under 5 s the bound fits and ses runs without the count; over 60 A's it does
    not, and the count refuses the result under a LIMIT."""
    counted = []
    size = type(get_engine("automaton").compile(cepkit.parse("A a"))).size
    monkeypatch.setattr(
        type(get_engine("automaton").compile(cepkit.parse("A a"))),
        "size",
        lambda self, stream: counted.append(1) or size(self, stream),
    )
    sparse = pd.DataFrame({"type": list("ABCD") * 50, "ts": [float(i) for i in range(200)]})
    found = cepkit.match("A+ a ; B b WITHIN 5 s", sparse, engine="ses")
    assert len(found) == len(cepkit.match("A+ a ; B b WITHIN 5 s", sparse, engine="automaton")) and not counted
    dense = pd.DataFrame({"type": ["A"] * 60 + ["B"], "ts": [float(i) for i in range(61)]})
    try:
        cepkit.match("A+ a ; B b WITHIN 100 s LIMIT 5", dense, engine="ses")
    except cepkit.QueryError as e:
        assert "automaton" in str(e)
    else:
        raise AssertionError("2^60 matches under LIMIT 5 on ses: refused before the run")
    assert counted
