"""One conformance suite for every registered engine (CONTRIBUTING.md, "Tests").

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
from cepkit.runtime.stream import Stream
from cepkit.runtime.registry import registered
from cepkit.runtime.selection import select_engine

HIERARCHY = {"X": ["A", "C"]}
# The attribute hierarchy's example classifies values of v instead of types (docs/language.md §7).
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
    for t, ts, v, i in [
        ("A", 0, 1, 0),
        ("C", 1, 3, 1),
        ("A", 1, 2, 0),
        ("B", 2, 2, 1),
        ("B", 4, 0, 0),
        ("C", 5, 4, 0),
        ("A", 6, 3, 1),
        ("B", 7, 5, 1),
        ("C", 7, 1, 1),
        ("B", 9, 3, 0),
        ("C", 12, 2, 0),
    ]
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
        return  # the engine's compile rejects, e.g. binary conditions that PARTITION BY cannot express
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
@pytest.mark.parametrize("size", [1, 4])
def test_micro_batches_emit_what_pushes_emit(engine, query, size):
    """``Matcher.extend`` with DataFrames of ``size`` events: the same emissions (match and the event
    that emitted it, in order) as pushing the events one by one."""
    hierarchy = hierarchy_for(query)
    pushed = cepkit.Matcher(query, engine=engine, hierarchy=hierarchy)
    expected = [m for event in EVENTS for m in pushed.push(event)] + pushed.close()
    fed = cepkit.Matcher(query, engine=engine, hierarchy=hierarchy)
    frame = pd.DataFrame(EVENTS)
    got = [m for start in range(0, len(EVENTS), size) for m in fed.extend(frame.iloc[start : start + size])]
    got += fed.close()
    assert [(m.key, m.emitted_at) for m in got] == [(m.key, m.emitted_at) for m in expected]


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


# ----------------------------------------------------------------------------- out of order (issue 14)
# Every engine x out-of-order mode on random disordered streams: the net result equals the reference's over
# the arrivals (logical order, arrival positions) minus the events the mode had to drop, which it counts.
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cepkit.runtime.registry import DISORDER_MODES, get_engine  # noqa: E402
from cepkit.semantics import evaluate  # noqa: E402
from strategies import shuffled_arrivals, streams  # noqa: E402

OUT_OF_ORDER = [mode for mode in DISORDER_MODES if mode != "reject"]


def windowed(query: str) -> str:
    """``query`` with a time window (aggressive re-evaluates the windows a late event touches)."""
    if "WITHIN" in query:
        return query
    for clause in (" PARTITION BY", " CONSUME BY", " RETURN"):
        if clause in query:
            at = query.index(clause)
            return query[:at] + " WITHIN 4 s" + query[at:]
    return query + " WITHIN 4 s"


def _runnable_out_of_order(engine: str, mode: str) -> list:
    out = []
    for feature, query in sorted(EXAMPLES.items()):
        query = windowed(query) if mode == "aggressive" else query
        try:
            select_engine(
                cepkit.parse(query, hierarchy=hierarchy_for(query)),
                engine,
                {"disorder": mode, **({"k": 1} if mode == "kslack" else {})},
            )
        except cepkit.QueryError:
            continue
        out.append(query)
    return out


@st.composite
def disordered_streams(draw):
    """(arrivals, the largest delay in ts, whether delays were bounded): a random in-order stream of the
    examples' types, each event delayed by up to 2 places or arriving anywhere."""
    events = draw(streams(types=("A", "B", "C"), min_size=3, max_size=8))
    bounded = draw(st.booleans())
    arrived = shuffled_arrivals(events, draw, 2 if bounded else None)
    delay, clock = 0, float("-inf")
    for e in arrived:
        delay = max(delay, clock - e["ts"])
        clock = max(clock, e["ts"])
    return arrived, delay, bounded


def reference_over(query, arrived, skip=()):
    """The reference's matches over ``arrived`` minus positions ``skip``, with arrival positions."""
    kept = [p for p in range(len(arrived)) if p not in skip]
    found = evaluate(query, [arrived[p] for p in kept], hierarchy=hierarchy_for(query))
    back = [
        (
            tuple(sorted(kept[i] for i in m.positions)),
            tuple(
                sorted(
                    (v, tuple(kept[i] for i in x) if isinstance(x, tuple) else kept[x]) for v, x in m.bindings.items()
                )
            ),
        )
        for m in found
    ]
    return sorted(back)


@pytest.mark.parametrize("mode", OUT_OF_ORDER)
@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_runs_every_out_of_order_mode_like_the_reference(engine, mode):
    assert mode in get_engine(engine).disorder and cepkit.engines().loc[engine, "disorder:" + mode]
    queries = _runnable_out_of_order(engine, mode)
    assert queries, f"{engine} runs no example query with disorder={mode!r}"

    @settings(max_examples=12, deadline=None)
    @given(st.sampled_from(queries), disordered_streams(), st.sampled_from(["exact", "short"]))
    def check(query, case, bound):
        arrived, delay, _ = case
        slack = delay if bound == "exact" else max(0, delay - 2)  # a short bound makes the mode drop events
        options = {
            "kslack": {"k": slack},
            "conservative": {"max_delay": slack},
            "aggressive": {"max_delay": slack} if bound == "short" else {},
        }[mode]
        got = cepkit.match(query, arrived, engine=engine, hierarchy=hierarchy_for(query), disorder=mode, **options)
        dropped = got.info.get("dropped", [])
        assert bound == "short" or dropped == [], (query, arrived)
        assert sorted(m.key for m in got) == reference_over(query, arrived, set(dropped)), (query, arrived, options)
        live = set()
        for d in got.deltas:  # never before its events arrived; a retraction withdraws a live match
            assert d.emitted_at is not None and d.emitted_at >= max(d.positions), d
            if d.sign == "+":
                assert d.key not in live
                live.add(d.key)
            else:
                assert mode == "aggressive" and d.key in live
                live.remove(d.key)
        assert sorted(live) == sorted(m.key for m in got)

    check()


@pytest.mark.parametrize("mode", OUT_OF_ORDER)
@pytest.mark.parametrize("engine", ENGINES)
def test_out_of_order_modes_stay_right_past_the_layers_trimming(engine, mode):
    """Long enough for the out-of-order layer to forget old ranks (more than 64 events older than two
    windows): the short streams above never reach it, and ecube once failed there."""
    queries = [
        q for q in map(windowed, _runnable_out_of_order(engine, mode)) if cepkit.parse(q).window_seconds is not None
    ][:6]

    @settings(max_examples=3, deadline=None)
    @given(st.sampled_from(queries), st.data())
    def check(query, data):
        events = data.draw(streams(types=("A", "B", "C"), min_size=150, max_size=170, ties=False))
        arrived = shuffled_arrivals(events, data.draw, 3)
        options = {"kslack": {"k": 12}, "conservative": {"max_delay": 12}, "aggressive": {}}[mode]
        got = cepkit.match(query, arrived, engine=engine, hierarchy=hierarchy_for(query), disorder=mode, **options)
        assert got.info.get("dropped", []) in ([], None)
        assert sorted(m.key for m in got) == reference_over(query, arrived), (query, arrived)

    check()


@pytest.mark.parametrize("engine", ENGINES)
def test_aggressive_without_a_time_window_is_refused_clearly(engine):
    query = "A a ; B b"
    if get_engine(engine).runs_disorder(cepkit.parse(query), "aggressive"):
        return  # the engine's own aggressive mode needs no window (the stack's compensation)
    events = [{"type": "B", "ts": 2}, {"type": "A", "ts": 1}]
    with pytest.raises(cepkit.QueryError, match="time window") as err:
        cepkit.match(query, events, engine=engine, disorder="aggressive")
    assert "^" in str(err.value) and "stack" in err.value.engines
