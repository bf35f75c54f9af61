"""Timed-out partial matches and funnels (cepkit.runtime.partial): worked examples by hand, the definition's
invariants, every able engine against the reference on random sequences (plain, with negations, with
iterations), ``match(..., partial=True)``, and clear refusals."""

import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.runtime.selection import select_engine
from cepkit.lang import ast as A
from cepkit.runtime.partial import partial_table, steps_of
from cepkit.runtime.stream import Stream
from strategies import TYPES, flat_seq_queries, streams, unary_conditions

FUNNEL = "PATTERN SEQ(Visit v, Signup s, Purchase p) WHERE s.ts - v.ts <= 10 min WITHIN 1 h PARTITION BY user"
# user 1 completes; 2 signs up too late for the 10 minutes; 3 signs up in time, buys after the hour;
# 4 and 5 only visit, and the stream ends inside their hours (open, not timed out)
EVENTS = pd.DataFrame(
    [
        ("Visit", 0, 1),
        ("Visit", 60, 2),
        ("Signup", 120, 1),
        ("Visit", 180, 3),
        ("Signup", 300, 3),
        ("Signup", 1500, 2),
        ("Purchase", 1800, 1),
        ("Purchase", 4000, 3),
        ("Visit", 4100, 4),
        ("Visit", 5900, 5),
    ],
    columns=["type", "ts", "user"],
)


def test_the_worked_funnel_by_hand():
    table = cepkit.partial_matches(FUNNEL, EVENTS)
    assert table.to_dict("records") == [
        {"start": 1, "step": 1, "stopped_before": "s", "v": 1, "s": None, "p": None, "timed_out": True},
        {"start": 3, "step": 2, "stopped_before": "p", "v": 3, "s": 4, "p": None, "timed_out": True},
        {"start": 8, "step": 1, "stopped_before": "s", "v": 8, "s": None, "p": None, "timed_out": False},
        {"start": 9, "step": 1, "stopped_before": "s", "v": 9, "s": None, "p": None, "timed_out": False},
    ]
    funnel = cepkit.funnel(FUNNEL, EVENTS)
    assert funnel[["variable", "type", "candidates"]].values.tolist() == [
        ["v", "Visit", 5],
        ["s", "Signup", 2],
        ["p", "Purchase", 1],
    ]
    assert funnel["share"].tolist() == [1.0, 0.4, 0.2]


def test_match_gives_them_with_its_matches_on_the_same_engine():
    for engine in ("stack", "reference"):
        found = cepkit.match(FUNNEL, EVENTS, engine=engine, partial=True)
        assert found.engine == engine and len(found) == 1
        pd.testing.assert_frame_equal(found.partial, cepkit.partial_matches(FUNNEL, EVENTS, engine="reference"))
    assert cepkit.match(FUNNEL, EVENTS).partial is None
    with pytest.raises(cepkit.QueryError, match="ALL strategy"):  # said before any run
        cepkit.match(FUNNEL, EVENTS, strategy="NEXT", partial=True)


def test_own_columns_work_here_too():
    mine = EVENTS.rename(columns={"type": "event", "ts": "at"})
    assert cepkit.partial_matches(FUNNEL, mine, type="event", ts="at").equals(cepkit.partial_matches(FUNNEL, EVENTS))


def positive_sequences():
    return flat_seq_queries(max_len=4, negation=False)


@st.composite
def kleene_sequences(draw, max_len=3):
    """``SEQ(T x0, U+ x1, ...)``: positive steps, some iterated (maybe filtering their own events), unary
    conditions, a join between two steps, a window, PARTITION BY id."""
    n = draw(st.integers(2, max_len))
    items, names = [], [f"x{i}" for i in range(n)]
    for var in names:
        atom = A.Atom(draw(st.sampled_from(TYPES)), var)
        if draw(st.booleans()):
            if draw(st.integers(0, 3)) == 0:
                atom = A.Filter(atom, draw(unary_conditions(var)))
            atom = A.Plus(atom)
        items.append(atom)
    conds = [draw(unary_conditions(v)) for v in names if draw(st.integers(0, 3)) == 0]
    if draw(st.booleans()):
        left, right = draw(st.permutations(names))[:2]
        conds.append(A.Compare(draw(st.sampled_from(["=", "<", ">"])), A.Attr(left, "v"), A.Attr(right, "v")))
    within = A.Window(draw(st.integers(1, 6)), draw(st.sampled_from([None, "EVENTS"]))) if draw(st.booleans()) else None
    return cepkit.pretty(
        A.QueryNode(
            pattern=A.Seq(tuple(items)),
            where=A.conjoin(conds),
            within=within,
            partition_by=("id",) if draw(st.booleans()) else (),
        )
    )


def check_against_the_reference(query, events):
    """Every able engine gives the reference's partial matches and funnel; the definition's invariants hold:
    every match of Q_{k+1} continues a match of Q_k (a prefix never asks more than the query), candidates
    only shrink, each step's partial matches are the candidates that got exactly that far, the last step's
    candidates are the distinct starts of the query's matches."""
    expected = cepkit.partial_matches(query, events, engine="reference")
    funnel = cepkit.funnel(query, events, engine="reference")
    for engine in ("automaton", "stack"):
        try:
            select_engine(cepkit.parse(query), engine, {})
        except cepkit.QueryError:
            continue  # a feature of the query this engine lacks
        pd.testing.assert_frame_equal(cepkit.partial_matches(query, events, engine=engine), expected)
        pd.testing.assert_frame_equal(cepkit.funnel(query, events, engine=engine), funnel)
    steps = steps_of(cepkit.parse(query))
    matched = [cepkit.match(prefix, events, engine="reference") for prefix in steps.prefixes]
    for k in range(1, len(matched)):
        names = [s.var for s in steps.steps[:k] if s.kind != "absence"]
        shorter = {tuple(m.bindings[v] for v in names) for m in matched[k - 1]}
        assert all(tuple(m.bindings[v] for v in names) in shorter for m in matched[k]), (k, query)
    # the table computed from each match's (positions, bindings), one by one, as the definition reads
    pairs = [
        [(m.positions, tuple(m.bindings[s.var] for s in steps.steps[:k] if s.kind != "absence")) for m in found]
        for k, found in enumerate(matched, start=1)
    ]
    times = Stream.from_any(events).times
    pd.testing.assert_frame_equal(partial_table(steps, pairs, times), expected)
    counts = funnel["candidates"].tolist()
    assert counts == sorted(counts, reverse=True)
    for k in range(1, len(counts)):
        assert (expected["step"] == k).sum() == counts[k - 1] - counts[k]
    first = steps.bound[0]
    starts = {
        m.bindings[first] if not isinstance(m.bindings[first], tuple) else m.bindings[first][0]
        for m in cepkit.match(query, events, engine="reference")
    }
    assert counts[-1] == len(starts)
    for row in expected.itertuples():
        at = getattr(row, first)
        assert row.start == (at[0] if isinstance(at, tuple) else at)
    return expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(query=positive_sequences(), events=streams(max_size=9))
def test_every_engine_gives_the_references_partial_matches_and_funnel(query, events):
    assume(len(cepkit.parse(query).variables) >= 2)
    check_against_the_reference(query, events)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(query=flat_seq_queries(max_len=4, negation=True), events=streams(max_size=9))
def test_with_negations_too(query, events):
    try:
        steps_of(cepkit.parse(query))
    except cepkit.QueryError:
        assume(False)  # one step only
    check_against_the_reference(query, events)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(query=kleene_sequences(), events=streams(max_size=7))
def test_with_iterations_too(query, events):
    check_against_the_reference(query, events)


def test_an_abandoned_cart_stops_at_its_absence_and_an_iteration_binds_its_events():
    cart = "SEQ(AddToCart a, Pay p, !Checkout c) WITHIN 30 min PARTITION BY user"
    events = pd.DataFrame(
        [
            ("AddToCart", 0, 1),
            ("Pay", 60, 1),
            ("Checkout", 120, 1),  # checked out
            ("AddToCart", 200, 2),
            ("Pay", 300, 2),  # abandoned: a match
            ("AddToCart", 400, 3),
        ],
        columns=["type", "ts", "user"],
    )  # never paid
    table = cepkit.partial_matches(cart, events)
    assert table[["start", "step", "stopped_before", "a", "p"]].astype(object).values.tolist() == [
        [0, 2, "c", 0, 1],
        [5, 1, "p", 5, pd.NA],
    ]
    assert "c" not in table.columns  # a negated variable binds nothing
    assert cepkit.funnel(cart, events)[["variable", "type", "candidates"]].values.tolist() == [
        ["a", "AddToCart", 3],
        ["p", "Pay", 2],
        ["c", "!Checkout", 1],
    ]
    rising = "SEQ(Low l, High+ h, Alarm x) WITHIN 10"
    events = [{"type": t, "ts": i} for i, t in enumerate(["Low", "High", "High", "Low", "Alarm", "Low"])]
    table = cepkit.partial_matches(rising, events)
    assert table.to_dict("records") == [
        {"start": 3, "step": 1, "stopped_before": "h", "l": 3, "h": None, "x": None, "timed_out": False},
        {"start": 5, "step": 1, "stopped_before": "h", "l": 5, "h": None, "x": None, "timed_out": False},
    ]
    assert cepkit.funnel(rising, events)["type"].tolist() == ["Low", "High+", "Alarm"]
    events[4]["type"] = "Low"  # no alarm: the first low reached its highs, (1,) the earliest
    assert cepkit.partial_matches(rising, events).iloc[0].to_dict() == {
        "start": 0,
        "step": 2,
        "stopped_before": "x",
        "l": 0,
        "h": (1,),
        "x": None,
        "timed_out": False,
    }


@pytest.mark.parametrize(
    "query, says",
    [
        ("A a ; (B b OR C c)", "partial matches need a sequence of steps"),
        ("SEQ(A a, !(B b ; C c), D d)", "partial matches need a sequence of steps"),
        ("SEQ(A a, (B b FILTER b.v > a.v)+, C c)", "iterations filter only their own variable"),
        ("SEQ(A a, EXISTS B b, C c)", "partial matches need a sequence of steps"),
        ("SELECT NEXT * PATTERN A a ; B b", "for the ALL strategy, not NEXT"),
        ("A a", "at least two steps"),
        ("A a ; B b CONSUME BY ANY", "not defined with CONSUME BY"),
    ],
)
def test_other_queries_are_refused_with_a_caret(query, says):
    with pytest.raises(cepkit.QueryError, match=says) as err:
        cepkit.partial_matches(query, [{"type": "A"}])
    assert err.value.line == 1 and "^" in str(err.value)
