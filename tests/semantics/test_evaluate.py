"""The reference pipeline's clauses: windows, PARTITION BY, CONSUME BY, projection, types (docs/language.md §4, §10)."""

import pandas as pd
import pytest

import cepkit
from cepkit.semantics import evaluate


# ----------------------------------------------------------------------------- windows, docs/language.md §4 and §10.8
def test_time_window_is_inclusive_and_counts_seconds(reference, events):
    """WITHIN n unit: max ts − min ts <= n; a numeric ts counts seconds."""
    stream = events("A0 B60 B61")
    assert reference("A a ; B b WITHIN 1 min", stream) == [(0, 1)]
    assert reference("A a ; B b WITHIN 61 s", stream) == [(0, 1), (0, 2)]
    assert reference("A a ; B b WITHIN 60", stream) == [(0, 1)]  # unit-less: the ts's own scale


def test_event_window_counts_positions(reference, events):
    """docs/language.md §10.8: a match over n consecutive positions fits WITHIN n EVENTS and WITHIN n-1 (ts = position)."""
    stream = [{"type": t} for t in "AXB"]
    assert reference("A a ; B b WITHIN 3 EVENTS", stream) == [(0, 2)]
    assert reference("A a ; B b WITHIN 2 EVENTS", stream) == []
    assert reference("A a ; B b WITHIN 2", stream) == [(0, 2)]


def test_window_with_fractional_units(reference):
    """Milliseconds on datetime ts: rounding never breaks an inclusive bound ([SES] Fig. 1.3's 100 ms)."""
    start = pd.Timestamp("2013-07-01 09:32")
    stream = pd.DataFrame(
        {"type": ["A", "B", "B"], "ts": [start + pd.Timedelta(milliseconds=ms) for ms in (344, 444, 445)]}
    )
    assert reference("A a ; B b WITHIN 100 ms", stream) == [(0, 1)]


def test_unitless_window_on_datetimes_is_an_error():
    """docs/language.md §10.8: WITHIN n without a unit is a QueryError over datetime ts."""
    stream = pd.DataFrame({"type": ["A"], "ts": [pd.Timestamp("2020-01-01")]})
    with pytest.raises(cepkit.QueryError, match="needs a unit"):
        cepkit.match("A a WITHIN 5", stream, engine="reference")


def test_equal_timestamps_are_ordered_by_position(reference, events):
    """docs/language.md §10.1: sequence uses the logical order (ts, then position)."""
    assert reference("A a ; B b", events("B1 A1 B1")) == [(1, 2)]


# ----------------------------------------------------------------------------- partitions, docs/language.md §10.5
def test_partition_by_keeps_whole_stream_positions_and_null_keys(reference):
    stream = [{"type": "A", "k": 1}, {"type": "A"}, {"type": "B", "k": 2}, {"type": "B", "k": 1}, {"type": "B"}]
    assert reference("A a ; B b PARTITION BY k", stream) == [(0, 3), (1, 4)]


def test_event_windows_and_strict_count_sub_stream_positions(reference):
    """docs/language.md §10.5: under PARTITION BY, WITHIN n EVENTS and STRICT count positions of the sub-stream."""
    stream = [{"type": "A", "k": 1}, {"type": "X", "k": 2}, {"type": "X", "k": 2}, {"type": "B", "k": 1}]
    assert reference("A a ; B b WITHIN 2 EVENTS PARTITION BY k", stream) == [(0, 3)]
    assert reference("SELECT PARTITION_STRICT * FROM S WHERE A a ; B b PARTITION BY k", stream) == [(0, 3)]
    assert reference("A a ; B b", stream, strategy="STRICT") == []


def test_partition_strict_needs_partition_by():
    with pytest.raises(cepkit.QueryError, match="PARTITION BY"):
        cepkit.parse("SELECT PARTITION_STRICT * FROM S WHERE A a ; B b")


# ----------------------------------------------------------------------------- consumption, docs/language.md §4
def test_consume_by_any_drops_matches_overlapping_a_reported_one(reference, events):
    """CEL Table 2: after a match, partial matches are discarded; matches ending at the same position are not
    affected by each other."""
    stream = events("A0 A1 B2 B3 A4 B5")
    assert reference("A a ; B b", stream) == [(0, 2), (1, 2), (0, 3), (1, 3), (0, 5), (1, 5), (4, 5)]
    assert reference("A a ; B b CONSUME BY ANY", stream) == [(0, 2), (1, 2), (4, 5)]
    assert reference("A a ; B b CONSUME BY NONE", stream) == reference("A a ; B b", stream)


def test_consume_by_partition_is_per_key(reference):
    stream = [{"type": "A", "k": 1}, {"type": "A", "k": 2}, {"type": "B", "k": 1}, {"type": "B", "k": 2}]
    assert reference("A a ; B b PARTITION BY k CONSUME BY PARTITION", stream) == [(0, 2), (1, 3)]
    assert reference("A a ; B b PARTITION BY k CONSUME BY ANY", stream) == [(0, 2)]


# ----------------------------------------------------------------------------- projection
def test_return_projects_bindings_and_positions(events):
    found = cepkit.match("SEQ(A a, B b, C c) RETURN a, c", events("A0 B1 B2 C3"), engine="reference")
    assert found.positions() == [(0, 3)] and len(found) == 1 and found[0].bindings == {"a": 0, "c": 3}


def test_select_projection_keeps_kleene_tuples(events):
    found = cepkit.match("SELECT b FROM S WHERE A a ; B+ b", events("A0 B1 B2"), engine="reference")
    assert [m.bindings for m in found] == [{"b": (1,)}, {"b": (1, 2)}, {"b": (2,)}]


# ----------------------------------------------------------------------------- types and conditions
def test_any_and_hierarchy_concepts(reference, events):
    """docs/language.md §7 and §10.12: a concept matches its own type and every type below it, negated atoms included."""
    stream = events("IBM0 MSFT1 XOM2")
    hierarchy = {"Stock": ["Tech", "Energy"], "Tech": ["IBM", "MSFT"], "Energy": ["XOM"]}
    assert reference("Tech a ; Energy b", stream, hierarchy=hierarchy) == [(0, 2), (1, 2)]
    assert reference("SEQ(Stock a, !Tech t, Energy b)", stream, hierarchy=hierarchy) == [(1, 2)]
    assert reference("ANY a ; XOM b", stream) == [(0, 2), (1, 2)]


def test_missing_attributes_make_comparisons_false(reference):
    stream = [{"type": "A", "v": 1}, {"type": "A"}]
    assert reference("A a WHERE a.v = 1", stream) == [(0,)]
    assert reference("A a WHERE not a.v = 1", stream) == [(1,)]
    assert reference("A a WHERE a.v != 1", stream) == []


def test_durations_and_arithmetic_on_time(reference, events):
    assert reference("A a ; B b WHERE b.ts - a.ts >= 2 min", events("A0 B60 B120")) == [(0, 2)]
    assert reference("A a WHERE a.ts * 2 IN (0, 4)", events("A0 A1 A2")) == [(0,), (2,)]


def test_ordering_incomparable_values_names_the_event():
    with pytest.raises(cepkit.EventError) as err:
        cepkit.match("A a WHERE a.v > 5", [{"type": "A", "v": 1}, {"type": "A", "v": "x"}], engine="reference")
    assert (err.value.position, err.value.field) == (1, "v")


def test_query_text_is_never_evaluated_as_python(reference):
    """Conditions are trees: a string that looks like code is just a string."""
    assert reference("A a WHERE a.v = '__import__(\"os\")'", [{"type": "A", "v": '__import__("os")'}]) == [(0,)]


# ----------------------------------------------------------------------------- the evaluator itself
def test_evaluate_on_a_disordered_stream_gives_the_sorted_stream_s_matches():
    """docs/language.md §6: evaluate works in logical order and reports arrival positions (the ground truth of the
    out-of-order modes)."""
    arrivals = [{"type": "B", "ts": 5}, {"type": "A", "ts": 1}]
    assert [m.positions for m in evaluate("A a ; B b", arrivals)] == [(0, 1)]
    assert evaluate("A a ; B b", arrivals)[0].bindings == {"a": 1, "b": 0}


def test_engine_is_registered_with_every_feature():
    matrix = cepkit.engines()
    row = matrix.loc["reference"]
    assert row["rank"] == 1000 and all(row[f] for f in cepkit.lang.FEATURES)
    assert row["disorder:reject"] and not row["disorder:kslack"]


def test_plans_and_matchers_pickle(events):
    """docs/architecture.md: plans pickle (Spark ships them), incremental state included."""
    import pickle

    from cepkit.runtime import Stream, get_engine
    from cepkit.runtime.event_record import make_event

    plan = get_engine("reference").compile(cepkit.parse("SEQ(A a, !B b, C c) WITHIN 5 s"))
    stream = Stream.from_any(events("A0 C1 A2 B3 C4"))
    assert pickle.loads(pickle.dumps(plan)).run(stream) == plan.run(stream)
    matcher = plan.matcher()
    matcher.push(make_event({"type": "A", "ts": 0}, 0))
    copy = pickle.loads(pickle.dumps(matcher))
    assert [m.positions for m in copy.push(make_event({"type": "C", "ts": 1}, 1))] == [(0, 1)]


def test_events_are_never_mutated(events):
    stream = events("A0 B1 B2", v=[1, 2, 3])
    before = [dict(e) for e in stream]
    frame = pd.DataFrame(stream)
    cepkit.match("A a ; B+ b WHERE b.v > a.v", stream, engine="reference")
    cepkit.match("A a ; B+ b WHERE b.v > a.v", frame, engine="reference")
    assert stream == before and frame.equals(pd.DataFrame(before))


def test_a_kleene_variable_is_a_tuple_in_every_branch(events):
    """``A+ a OR B a``: where a branch binds the Kleene name to one event it is still a tuple, so each match
    has one (C, β) (the automaton's) and the matches sort (they did not: an int beside a tuple)."""
    stream = events("A0 B1 A2")
    found = cepkit.match("A+ AS a OR B AS a", stream, engine="reference")
    assert [(m.positions, m.bindings) for m in found] == [
        ((0,), {"a": (0,)}),
        ((1,), {"a": (1,)}),
        ((0, 2), {"a": (0, 2)}),
        ((2,), {"a": (2,)}),
    ]
    assert [m.key for m in found] == [m.key for m in cepkit.match("A+ AS a OR B AS a", stream, engine="automaton")]
    assert len(cepkit.match("A+ AS a OR A AS a", stream, engine="reference")) == 3
