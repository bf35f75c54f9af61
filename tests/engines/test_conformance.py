"""One conformance suite for every registered engine (STYLE.md, "How this applies to cepkit").

For each engine and each feature of the language (one small query per feature), the engine either
gives exactly the reference's matches, or refuses with a ``QueryError`` that names other engines able
to run the query. Where it runs, its incremental matcher ends with the batch result, never reports a
match before the match's last event, its plan survives pickling (Spark ships plans) and the input
events are left untouched.
"""
import copy
import pickle

import pandas as pd
import pytest

import cepkit
from cepkit.lang.query import FEATURES
from cepkit.runtime.events import Stream
from cepkit.runtime.registry import registered, select_engine

HIERARCHY = {"X": ["A", "C"]}
# The attribute hierarchy's example classifies values of v instead of types (LANGUAGE.md §7).
ATTRIBUTE_HIERARCHY = cepkit.Hierarchy({"low": [0, 1, 2]}, attribute="v")

# feature -> a small query that uses it (and as little else as possible)
EXAMPLES = {
    "sequence": "A a ; B b",
    "or": "A a OR B b",
    "and": "AND(A a, B b)",
    "kleene": "A+ a ; B b",
    "nested_kleene": "(A+ a ; B b)+ ; C c",
    "negation": "SEQ(A a, !B b, C c)",
    "exists": "SEQ(A a, EXISTS B b, C c)",
    "nested_negation": "SEQ(A a, !SEQ(B b, C c), A d)",
    "nesting": "(A a OR B b) ; C c",
    "unary_conditions": "A a FILTER a.v > 1",
    "binary_conditions": "A a ; B b FILTER a.v = b.v",
    "correlated_filters": "A a ; (B b FILTER b.v >= a.v)+ ; C c",
    "condition_items": "SEQ(A a, B b, a.id = b.id)",
    "kleene_conditions": "SEQ(A a, B+ b) WHERE prev(b.v) < b.v",
    "aggregates": "SEQ(A a, B+ b) WHERE count(b) > 1",
    "time_window": "A a ; B b WITHIN 3 s",
    "event_window": "A a ; B b WITHIN 3 EVENTS",
    "partition": "A a ; B b PARTITION BY id",
    "consume": "A a ; B b CONSUME BY ANY",
    "projection": "A a ; B b ; C c RETURN a, c",
    "any_type": "A a ; ANY x ; C c WITHIN 4 EVENTS",
    "hierarchy": "X a ; B b",
    "attribute_hierarchy": "A a ; B b FILTER b.v = 'low'",
    "strategy:STRICT": "SELECT STRICT * PATTERN A a ; B b",
    "strategy:PARTITION_STRICT": "SELECT PARTITION_STRICT * PATTERN A a ; B b PARTITION BY id",
    "strategy:NEXT": "SELECT NEXT * PATTERN A a ; B b",
    "strategy:LAST": "SELECT LAST * PATTERN A a ; B b",
    "strategy:MAX": "SELECT MAX * PATTERN A+ a ; B b",
    "strategy:STNM": "SELECT STNM * PATTERN SEQ(A a, B b) WITHIN 5 s",
    "strategy:ROBUST_STNM": "SELECT ROBUST_STNM * PATTERN SEQ({A a, C c}, {B b}) WITHIN 5 s",
    "nested_strategy": "NEXT(A a ; B b) ; C c",
}

EVENTS = [
    {"type": t, "ts": ts, "v": v, "id": i}
    for t, ts, v, i in [("A", 0, 1, 0), ("C", 1, 3, 1), ("A", 1, 2, 0), ("B", 2, 2, 1), ("B", 4, 0, 0),
                        ("C", 5, 4, 0), ("A", 6, 3, 1), ("B", 7, 5, 1), ("C", 7, 1, 1), ("B", 9, 3, 0),
                        ("C", 12, 2, 0)]
]


def hierarchy_for(query: str):
    return ATTRIBUTE_HIERARCHY if query == EXAMPLES["attribute_hierarchy"] else HIERARCHY


ENGINES = [e.name for e in registered() if e.name != "reference"]


def test_every_feature_has_an_example():
    assert set(EXAMPLES) == set(FEATURES)
    for feature, text in EXAMPLES.items():
        assert feature in cepkit.parse(text, hierarchy=hierarchy_for(text)).features, feature


def test_the_capability_matrix_lists_every_engine_and_feature():
    matrix = cepkit.engines()
    assert set(matrix.index) == {e.name for e in registered()}
    assert set(FEATURES) <= set(matrix.columns)
    assert matrix.loc["reference", list(FEATURES)].all()


def _run_or_refuse(engine, query):
    try:
        return cepkit.match(query, EVENTS, engine=engine, hierarchy=hierarchy_for(query))
    except cepkit.QueryError as err:
        assert err.engines, f"{engine} refused {query!r} without naming engines that can run it: {err}"
        assert engine not in err.engines and "reference" in err.engines, str(err)
        assert err.line is not None and "^" in str(err), f"no caret in: {err}"
        return None


@pytest.mark.parametrize("feature", sorted(EXAMPLES))
@pytest.mark.parametrize("engine", ENGINES)
def test_runs_like_the_reference_or_refuses_clearly(engine, feature):
    query = EXAMPLES[feature]
    got = _run_or_refuse(engine, query)
    if got is None:  # refused clearly (checked above); a declared feature may still be refused in a case
        return       # the engine's compile rejects, e.g. binary conditions that PARTITION BY cannot express
    expected = cepkit.match(query, EVENTS, engine="reference", hierarchy=hierarchy_for(query))
    assert got.engine == engine
    assert got.positions() == expected.positions(), query
    assert [m.key for m in got] == [m.key for m in expected], query


def _runnable(engine):
    for feature, query in sorted(EXAMPLES.items()):
        try:
            select_engine(cepkit.parse(query, hierarchy=hierarchy_for(query)), engine, {})
        except cepkit.QueryError:
            continue
        yield pytest.param(engine, query, id=f"{engine}-{feature}")


RUNNABLE = [p for e in ENGINES + ["reference"] for p in _runnable(e)]


@pytest.mark.parametrize("engine, query", RUNNABLE)
def test_matcher_reports_each_match_once_no_earlier_than_its_last_event(engine, query):
    matcher = cepkit.Matcher(query, engine=engine, hierarchy=hierarchy_for(query))
    reported = []
    for position, event in enumerate(EVENTS):
        for m in matcher.push(event):
            assert m.positions[-1] <= position, (m, position)
            reported.append(m.key)
    reported += [m.key for m in matcher.close()]
    batch = cepkit.match(query, EVENTS, engine=engine, hierarchy=hierarchy_for(query))
    assert sorted(reported) == sorted(m.key for m in batch)


@pytest.mark.parametrize("engine, query", RUNNABLE)
def test_plans_pickle_and_leave_events_untouched(engine, query):
    frame = pd.DataFrame(EVENTS)
    frame_before, events_before = frame.copy(), copy.deepcopy(EVENTS)
    _, plan = select_engine(cepkit.parse(query, hierarchy=hierarchy_for(query)), engine, {})
    clone = pickle.loads(pickle.dumps(plan))
    first = sorted(m.key for m in plan.run(Stream.from_any(frame)))
    assert sorted(m.key for m in clone.run(Stream.from_any(EVENTS))) == first
    pd.testing.assert_frame_equal(frame, frame_before)
    assert EVENTS == events_before


@pytest.mark.parametrize("engine", ENGINES + ["reference"])
def test_disordered_input_is_rejected_with_its_position(engine):
    events = [{"type": "A", "ts": 2}, {"type": "B", "ts": 1}]
    with pytest.raises(cepkit.EventError, match="position 1"):
        cepkit.match("A a ; B b", events, engine=engine)
