"""Timed-out partial matches and funnels (cepkit.semantics.partial): a worked example by hand, the
definition's invariants, every engine against the reference on random sequences, and clear refusals."""
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings

import cepkit
from cepkit.runtime.selection import select_engine
from strategies import flat_seq_queries, streams

FUNNEL = "PATTERN SEQ(Visit v, Signup s, Purchase p) WHERE s.ts - v.ts <= 10 min WITHIN 1 h PARTITION BY user"
# user 1 completes; 2 signs up too late for the 10 minutes; 3 signs up in time, buys after the hour;
# 4 and 5 only visit, and the stream ends inside their hours (open, not timed out)
EVENTS = pd.DataFrame([
    ("Visit", 0, 1), ("Visit", 60, 2), ("Signup", 120, 1), ("Visit", 180, 3), ("Signup", 300, 3),
    ("Signup", 1500, 2), ("Purchase", 1800, 1), ("Purchase", 4000, 3), ("Visit", 4100, 4), ("Visit", 5900, 5)],
    columns=["type", "ts", "user"])


def test_the_worked_funnel_by_hand():
    table = cepkit.partial_matches(FUNNEL, EVENTS)
    assert table.to_dict("records") == [
        {"start": 1, "step": 1, "stopped_before": "s", "v": 1, "s": None, "p": None, "timed_out": True},
        {"start": 3, "step": 2, "stopped_before": "p", "v": 3, "s": 4, "p": None, "timed_out": True},
        {"start": 8, "step": 1, "stopped_before": "s", "v": 8, "s": None, "p": None, "timed_out": False},
        {"start": 9, "step": 1, "stopped_before": "s", "v": 9, "s": None, "p": None, "timed_out": False},
    ]
    funnel = cepkit.funnel(FUNNEL, EVENTS)
    assert funnel[["variable", "type", "candidates"]].values.tolist() == [["v", "Visit", 5], ["s", "Signup", 2],
                                                                         ["p", "Purchase", 1]]
    assert funnel["share"].tolist() == [1.0, 0.4, 0.2]


def test_own_columns_work_here_too():
    mine = EVENTS.rename(columns={"type": "event", "ts": "at"})
    assert cepkit.partial_matches(FUNNEL, mine, type="event", ts="at").equals(cepkit.partial_matches(FUNNEL, EVENTS))


def positive_sequences():
    return flat_seq_queries(max_len=4, negation=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(query=positive_sequences(), events=streams(max_size=9))
def test_every_engine_gives_the_references_partial_matches_and_funnel(query, events):
    assume(len(cepkit.parse(query).variables) >= 2)
    expected = cepkit.partial_matches(query, events, engine="reference")
    funnel = cepkit.funnel(query, events, engine="reference")
    for engine in ("automaton", "stack"):
        try:
            select_engine(cepkit.parse(query), engine, {})
        except cepkit.QueryError:
            continue        # a feature of the query this engine lacks
        pd.testing.assert_frame_equal(cepkit.partial_matches(query, events, engine=engine), expected)
        pd.testing.assert_frame_equal(cepkit.funnel(query, events, engine=engine), funnel)
    # the definition's invariants: candidates only shrink; each step's partials are the candidates that got
    # exactly that far; the last step's candidates are the distinct starts of the matches
    counts = funnel["candidates"].tolist()
    assert counts == sorted(counts, reverse=True)
    for k in range(1, len(counts)):
        assert (expected["step"] == k).sum() == counts[k - 1] - counts[k]
    assert counts[-1] == len({m.positions[0] for m in cepkit.match(query, events, engine="reference")})
    for row in expected.itertuples():
        assert row.start == getattr(row, cepkit.parse(query).ast.pattern.items[0].var)


@pytest.mark.parametrize("query, says", [
    ("A a ; B+ b ; C c", "partial matches need a sequence of positive steps"),
    ("SEQ(A a, !B b, C c)", "partial matches need a sequence of positive steps"),
    ("SELECT NEXT * PATTERN A a ; B b", "for the ALL strategy, not NEXT"),
    ("A a", "at least two steps"),
    ("A a ; B b CONSUME BY ANY", "not defined with CONSUME BY"),
])
def test_other_queries_are_refused_with_a_caret(query, says):
    with pytest.raises(cepkit.QueryError, match=says) as err:
        cepkit.partial_matches(query, [{"type": "A"}])
    assert err.value.line == 1 and "^" in str(err.value)
