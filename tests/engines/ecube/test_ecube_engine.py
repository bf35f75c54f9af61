"""The ``ecube`` engine: one query through the E-Cube machinery (the query and its first concept drill-down
in a cube, Chase choosing scratch or specific-to-general reuse)."""

import pickle

import numpy as np
import pandas as pd

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.engines.ecube import first_drill_down
from cepkit.runtime.registry import get_engine
from cepkit.runtime.stream import Stream

HIERARCHY = {"TX": ["D", "A", "G"], "OK": ["T"], "D": ["DBusStation", "DHospital"]}
PLACES = cepkit.Hierarchy({"TX": ["Dallas", "Austin"], "OK": ["Tulsa"]}, attribute="loc")


def test_the_engine_is_registered_with_its_rank_and_features():
    engine = get_engine("ecube")
    assert engine.rank == 60
    assert {"hierarchy", "attribute_hierarchy", "negation", "partition"} <= engine.features
    assert cepkit.engines().loc["ecube", "attribute_hierarchy"]


def test_a_concept_query_runs_with_its_drill_down():
    events = [{"type": t, "ts": i} for i, t in enumerate(["DHospital", "A", "T", "G", "T"])]
    got = cepkit.match("SEQ(TX x, OK y)", events, hierarchy=HIERARCHY, engine="ecube")
    assert got.engine == "ecube"
    assert (
        got.positions() == cepkit.match("SEQ(TX x, OK y)", events, hierarchy=HIERARCHY, engine="reference").positions()
    )
    assert len(got.info["plan"]) == 2  # the query and its drill-down SEQ(D x, OK y)
    assert str(first_drill_down(cepkit.parse("SEQ(TX x, OK y)", HIERARCHY))) == "D AS x ; OK AS y"


def test_attribute_hierarchies_run_on_the_stack_engine_through_ecube():
    events = [{"type": "Move", "loc": loc, "ts": i} for i, loc in enumerate(["Dallas", "Tulsa", "Austin", "Tulsa"])]
    query = "SEQ(Move a, Move b) WHERE a.loc = 'TX' and b.loc = 'OK'"
    got = cepkit.match(query, events, hierarchy=PLACES, engine="ecube")
    assert got.positions() == [(0, 1), (0, 3), (2, 3)]
    assert (
        first_drill_down(cepkit.parse(query, PLACES)).where
        == cepkit.parse("Move a ; Move b WHERE a.loc = 'Dallas' and b.loc = 'OK'").where
    )


@pytest.mark.parametrize(
    "query, what",
    [
        ("SEQ(A a, B+ b)", "kleene"),
        ("A a OR B b", "or"),
        ("SELECT STNM * PATTERN SEQ(A a, B b) WITHIN 5 s", "STNM"),
        ("SEQ(A a, ANY x)", "any_type"),
    ],
)
def test_queries_outside_the_fragment_are_refused_naming_engines(query, what):
    with pytest.raises(cepkit.QueryError, match=what) as err:
        cepkit.match(query, [{"type": "A"}], engine="ecube")
    assert "reference" in err.value.engines and "^" in str(err.value)


@pytest.mark.parametrize("text, wait", [("SEQ(TX x, !D n, OK y) WITHIN 5", 0), ("SEQ(TX x, OK y, !D n) WITHIN 5", 5)])
def test_the_plan_pickles_and_the_matcher_reports_matches_once_final(text, wait):
    """The matcher reports a match as soon as no later event can change it: at its last event, or once an
    event is more than the window past it (a trailing negation); each once, all of the reference's."""
    query = cepkit.parse(text, HIERARCHY)
    events = [{"type": t, "ts": i} for i, t in enumerate(["A", "G", "T", "D", "T", "A", "T"] + ["A"] * 6)]
    plan = get_engine("ecube").compile(query)
    assert pickle.loads(pickle.dumps(plan)).query == query
    matcher = cepkit.Matcher(query, engine="ecube")
    reported = {}
    for i, e in enumerate(events):
        for m in matcher.push(e):
            assert m.key not in reported
            reported[m.key] = i
    expected = [m.key for m in cepkit.match(query, events, engine="reference")]
    assert sorted(reported) == sorted(expected) and len(expected) >= 3
    for (positions, _), at in reported.items():
        assert at == max(positions) + wait + (1 if wait else 0)
    assert matcher.close() == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["TX", "OK", "D", "A", "T", "!D", "!OK"]), min_size=1, max_size=3),
    st.lists(
        st.tuples(
            st.sampled_from(["DBusStation", "DHospital", "A", "G", "T", "TX", "OK"]),
            st.integers(0, 2),
            st.integers(0, 1),
        ),
        max_size=14,
    ),
    st.sampled_from([" WITHIN 3", " WITHIN 3 EVENTS", " WITHIN 2 PARTITION BY id", " WITHIN 3 EVENTS PARTITION BY id"]),
    st.lists(st.integers(1, 5), min_size=1, max_size=6),
    st.integers(0, 8),
)
def test_micro_batches_report_the_reference_s_matches_once_and_survive_a_rebuilt_matcher(
    items, events, window, cuts, rebuild_at
):
    """Events in micro-batches (``Matcher.extend``): every match reported once, no later one than the
    reference's; a matcher rebuilt from the last events of another (a Spark worker restarting from its
    state: fed again, what it reports then dropped) reports exactly what the first would have."""
    if all(i.startswith("!") for i in items):
        items = items + ["OK"]
    text = "SEQ(" + ", ".join(f"{i} x{k}" for k, i in enumerate(items)) + ")" + window
    stream = [{"type": t, "ts": float(k + gap), "id": key} for k, (t, gap, key) in enumerate(events)]
    for k in range(1, len(stream)):  # ts increase, with gaps
        stream[k]["ts"] = max(stream[k]["ts"], stream[k - 1]["ts"])
    expected = sorted(m.key for m in cepkit.match(text, stream, hierarchy=HIERARCHY, engine="reference"))
    whole = Stream.from_frame(pd.DataFrame(stream, columns=["type", "ts", "id"]))
    plan = get_engine("ecube").compile(cepkit.parse(text, HIERARCHY))
    bounds = [b for b in np.cumsum([0] + cuts * len(stream)) if b < len(stream)] + [len(stream)]
    matcher, got = plan.matcher(), []
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        if k == rebuild_at:  # a new matcher, fed again the last 12 events (more than 2 windows here)
            matcher = plan.matcher()
            matcher.extend(whole.take(slice(max(0, a - 12), a)))
        got += [m.key for m in matcher.extend(whole.take(slice(a, b)))]
    got += [m.key for m in matcher.close()]
    assert sorted(got) == expected


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["TX", "OK", "D", "A", "T", "!D", "!OK"]), min_size=1, max_size=3),
    st.lists(st.tuples(st.sampled_from(["DBusStation", "A", "G", "T", "TX", "OK"]), st.integers(0, 2)), max_size=16),
    st.sampled_from([" WITHIN 3", " WITHIN 3 EVENTS", " WITHIN 2 PARTITION BY id"]),
    st.integers(1, 4),
)
def test_pushed_events_report_each_match_at_its_last_event(items, events, window, held):
    """Pushed one by one: an event no match can end at waits in the matcher (up to ``HELD`` of them, here
    1-4) without a run; every match of the reference's is reported once, at its last event when no negation
    trails it, and the held events are part of every later run."""
    if all(i.startswith("!") for i in items):
        items = items + ["OK"]
    text = "SEQ(" + ", ".join(f"{i} x{k}" for k, i in enumerate(items)) + ")" + window
    stream = [{"type": t, "ts": k, "id": key} for k, (t, key) in enumerate(events)]
    expected = sorted(m.key for m in cepkit.match(text, stream, hierarchy=HIERARCHY, engine="reference"))
    matcher = cepkit.Matcher(text, engine="ecube", hierarchy=HIERARCHY)
    matcher._inc.HELD = held
    got = {}
    for k, event in enumerate(stream):
        for m in matcher.push(event):
            assert m.key not in got
            got[m.key] = k
    closed = [m.key for m in matcher.close()]
    assert sorted([*got, *closed]) == expected
    if not items[-1].startswith("!"):
        assert not closed and all(at == max(positions) for (positions, _), at in got.items())


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(["TX", "OK", "D", "A", "T", "!D", "!OK"]), min_size=1, max_size=3),
    st.lists(st.sampled_from(["DBusStation", "DHospital", "A", "G", "T", "TX", "OK"]), max_size=9),
    st.sampled_from(["", " WITHIN 4", " WITHIN 3 EVENTS"]),
)
def test_random_concept_queries_agree_with_the_reference(items, types, window):
    if not any(not i.startswith("!") for i in items):
        items = items + ["OK"]
    text = "SEQ(" + ", ".join(f"{i} x{k}" for k, i in enumerate(items)) + ")" + window
    events = [{"type": t, "ts": k} for k, t in enumerate(types)]
    expected = cepkit.match(text, events, hierarchy=HIERARCHY, engine="reference")
    got = cepkit.match(text, events, hierarchy=HIERARCHY, engine="ecube")
    assert [m.key for m in got] == [m.key for m in expected]


def test_reuse_children_answers_from_the_drill_down_and_plan_lets_chase_choose():
    events = [{"type": t, "ts": i} for i, t in enumerate(["DHospital", "T", "A", "T", "G", "DBusStation", "T"])]
    query = "SEQ(TX x, OK y) WITHIN 3"
    children = cepkit.match(query, events, hierarchy=HIERARCHY, engine="ecube")
    assert children.info["plan"] == ["drill_down: scratch", "query: s→g from drill_down (union_concept)"]
    planned = cepkit.match(query, events, hierarchy=HIERARCHY, engine="ecube", reuse="plan")
    assert planned.info["reuse"] == "plan" and planned.info["plan"][-1].startswith("query:")
    expected = cepkit.match(query, events, hierarchy=HIERARCHY, engine="reference")
    assert [m.key for m in children] == [m.key for m in planned] == [m.key for m in expected]
    with pytest.raises(ValueError, match="reuse must be"):
        cepkit.match(query, events, hierarchy=HIERARCHY, engine="ecube", reuse="always")


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(["Move", "Stop"]), min_size=1, max_size=3),
    st.lists(st.sampled_from([None, "TX", "OK", "Dallas", "Tulsa"]), min_size=3, max_size=3),
    st.lists(
        st.tuples(st.sampled_from(["Move", "Stop"]), st.sampled_from(["Dallas", "Austin", "Tulsa", "Paris"])),
        max_size=8,
    ),
    st.booleans(),
)
def test_random_attribute_concept_queries_agree_with_the_reference(types, places, events, negate_middle):
    items = [("!" if negate_middle and k == 1 and len(types) == 3 else "") + f"{t} x{k}" for k, t in enumerate(types)]
    conds = [f"x{k}.loc = '{p}'" for k, p in enumerate(places[: len(types)]) if p]
    text = "SEQ(" + ", ".join(items) + ")" + (" WHERE " + " and ".join(conds) if conds else "") + " WITHIN 4"
    stream = [{"type": t, "ts": k, "loc": loc} for k, (t, loc) in enumerate(events)]
    expected = cepkit.match(text, stream, hierarchy=PLACES, engine="reference")
    got = cepkit.match(text, stream, hierarchy=PLACES, engine="ecube")
    assert [m.key for m in got] == [m.key for m in expected]
