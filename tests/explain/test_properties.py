"""``cepkit.explain`` against the reference, on random queries and streams: the verdict is "the candidate is
among the reference's matches" for every candidate of a small stream, and every reason it states is true
when checked again on the events."""

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import cel_queries, flat_seq_queries, kleene_queries, nested_queries, set_queries, streams

import cepkit
from cepkit.explain import KINDS
from cepkit.explain.near_misses import _clauses, _relaxed
from cepkit.lang import ast as A
from cepkit.runtime.stream import Stream

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))


def candidates(query, events, matches, size=3):
    """Every set of up to ``size`` positions, every match (Kleene matches may be larger) and every match of
    the query with all its conditions, negations, window, strategy and CONSUME BY dropped (the candidates
    with the right types in the right order, which fail the other clauses)."""
    positions = range(len(events))
    small = [c for k in range(1, size + 1) for c in itertools.combinations(positions, k)]
    parsed = cepkit.parse(query)
    bare = _relaxed(parsed, _clauses(parsed), margin=0.0)
    shaped = cepkit.match(bare, events, engine="reference").positions()
    return list(dict.fromkeys(small + [m.positions for m in matches] + shaped))


def check_verdicts(query, events, size=3):
    expected = cepkit.match(query, events, engine="reference")
    reported = {m.positions for m in expected}
    stream = Stream.from_any(events)
    parsed = cepkit.parse(query)
    for candidate in candidates(query, events, expected, size):
        explanation = cepkit.explain(query, events, candidate)
        assert explanation.is_match == (candidate in reported), (query, candidate, str(explanation))
        assert explanation.reasons, (query, candidate)
        if explanation.is_match:
            assert all(r.kind == "satisfied" for r in explanation.reasons)
        else:
            assert explanation.failures, (query, candidate)
        for reason in explanation.reasons:
            recheck(reason, explanation, stream, parsed, query, events)
    for m in expected:  # a candidate given as bindings
        assert cepkit.explain(query, events, dict(m.bindings)).is_match, (query, m)


def recheck(reason, explanation, stream, parsed, query, events):
    """A stated reason is true of the events."""
    assert reason.kind in KINDS
    assert reason.message
    if reason.span is not None:
        start, end = reason.span
        assert 0 <= start < end <= len(parsed.text)
    values = reason.values
    if (
        reason.kind in ("condition", "satisfied")
        and reason.events
        and "span" not in values
        and "witness" not in values
        and values
    ):
        # each value read from an attribute is that event's attribute
        for label, value in values.items():
            if "." in label and "(" not in label and "[" not in label:
                attr = label.split(".")[-1]
                assert any(stream[p].get(attr) == value for p in reason.events), (label, value, reason)
    if reason.kind == "window":
        first, last = reason.events
        if parsed.within.events:
            assert values["span"] >= parsed.within.amount
        else:
            assert stream[last].time - stream[first].time > parsed.within.seconds
            assert values["span"] == stream[last].time - stream[first].time
    if reason.kind == "type" and "needs" in values:
        (p,) = reason.events
        assert stream[p].type == values["type"] != values["needs"]
    if reason.kind == "negation":
        witness = values["witness"]
        assert not set(witness) & set(explanation.positions)
        negated_types = {a.type for n in parsed.ast.pattern.find_all(A.Not) for a in n.find_all(A.Atom)}
        assert {stream[p].type for p in witness} <= negated_types | {None} or None in negated_types
    if reason.kind == "partition":
        for p, key in values["keys"].items():
            assert tuple(stream[p].get(k) for k in parsed.partition_by) == key
    if reason.kind == "strategy" and "preferred" in values:
        rival = values["preferred"]
        unranked = cepkit.match(parsed.with_strategy(None), events, engine="reference").positions()
        assert rival in unranked and rival != explanation.positions
    if reason.kind == "strategy" and "between" in values:
        assert all(min(explanation.positions) < p < max(explanation.positions) for p in values["between"])
        assert not set(values["between"]) & set(explanation.positions)
    if reason.kind == "strategy" and "skipped" in values:
        assert values["skipped"] not in explanation.positions
    if reason.kind == "consume":
        assert (
            values["consumed_by"] in cepkit.match(query, events, engine="reference").positions()
            or parsed.select is not None
        )


@SETTINGS
@given(cel_queries(), streams(max_size=6))
def test_cel_queries(query, events):
    check_verdicts(query, events)


@SETTINGS
@given(flat_seq_queries(exists=True, strategies=("ALL", "STRICT", "NEXT")), streams(max_size=6))
def test_negation_queries(query, events):
    check_verdicts(query, events)


@SETTINGS
@given(
    set_queries(strategies=("ALL", "STNM", "ROBUST_STNM"), max_sets=2, max_set_size=2),
    streams(types=("C", "P", "D", "B"), max_size=6),
)
def test_stnm_queries(query, events):
    check_verdicts(query, events)


@SETTINGS
@given(kleene_queries(), streams(max_size=6))
def test_kleene_queries(query, events):
    check_verdicts(query, events)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(nested_queries(max_depth=2), streams(max_size=5))
def test_nested_queries(query, events):
    check_verdicts(query, events, size=2)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(flat_seq_queries(max_len=3), streams(max_size=8), st.data())
def test_why_not_near_misses_are_not_matches(query, events, data):
    misses = cepkit.why_not(query, events, limit=5)
    reported = set(cepkit.match(query, events, engine="reference").positions())
    counts = [len(m.failures) for m in misses]
    assert counts == sorted(counts)
    for miss in misses:
        assert not miss.is_match and miss.positions not in reported or cepkit.parse(query).select
        assert cepkit.explain(query, events, miss.candidate).is_match is False
