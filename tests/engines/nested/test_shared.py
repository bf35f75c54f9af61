"""Shared execution, summaries, decorrelation and the Plan-Finder of the ``nested`` engine ([LIU] §5.3-5.6,
[CSV] Ex 3) against the reference evaluator, on random queries and the worked examples of [LIU] §5.3-5.6."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cepkit
from cepkit.engines.nested import NestedEngine
from cepkit.engines.nested.planner import StreamStats, choose_directions, shared_cost
from cepkit.engines.nested.summaries import _range_max
from cepkit.engines.nested.workload import match_workload
from cepkit.runtime.api import prepare
from strategies import assert_agrees, assert_matcher_agrees, nested_queries, shared_nested_queries, streams


def _events(labels: str, **attrs):
    """``"R1 W2 S3"`` -> events of types R, W, S at ts 1, 2, 3 (letters are types, digits ts)."""
    out = []
    for label in labels.split():
        kind = label.rstrip("0123456789")
        event = {"type": kind, "ts": int(label[len(kind) :])}
        event.update({k: v[len(out)] for k, v in attrs.items()})
        out.append(event)
    return out


@settings(max_examples=50, deadline=None)
@given(shared_nested_queries(), streams(max_size=10), st.sampled_from(["auto", "shared", "nested", "normal form"]))
def test_every_plan_gives_the_reference_matches(query, events, plan):
    """Shared execution, nested execution with summaries (decorrelated per value where correlated) and the
    normal form all give the reference's matches and bindings."""
    found = assert_agrees(query, events, "nested", plan=plan)
    assert found.info["plan"]["chosen"] in ("shared", "nested", "normal form (shared)", "normal form (nested)")


@settings(max_examples=25, deadline=None)
@given(shared_nested_queries(), streams(max_size=10, null_one_in=3))
def test_conditions_on_columns_treat_nulls_as_the_reference_does(query, events):
    """Shared execution tests conditions on several variables as columns: a null compares false."""
    try:
        cepkit.match(query, events, engine="reference")
    except cepkit.QueryError as error:  # an attribute no event carries: the same error from both
        with pytest.raises(cepkit.QueryError, match=re.escape(str(error).splitlines()[0][:40])):
            cepkit.match(query, events, engine="nested")
        return
    assert_agrees(query, events, "nested")


@settings(max_examples=40, deadline=None)
@given(nested_queries(), streams(max_size=8), st.sampled_from(["auto", "shared"]))
def test_the_planner_falls_back_exactly_on_any_nested_query(query, events, plan):
    assert_agrees(query, events, "nested", plan=plan)


@settings(max_examples=30, deadline=None)
@given(shared_nested_queries(), streams(max_size=10))
def test_the_incremental_matcher_with_summaries_reports_the_reference_matches(query, events):
    assert_matcher_agrees(query, events, "nested")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-1, 30), min_size=1, max_size=40), st.data())
def test_range_max_is_the_maximum_of_each_range(values, data):
    values = np.asarray(values, np.int64)
    n = len(values)
    lo = np.asarray(data.draw(st.lists(st.integers(-3, n), min_size=n, max_size=n)), np.int64)
    hi = np.asarray(data.draw(st.lists(st.integers(-1, n - 1), min_size=n, max_size=n)), np.int64)
    expected = [max(values[max(a, 0) : b + 1], default=-1) if max(a, 0) <= b else -1 for a, b in zip(lo, hi)]
    assert _range_max(values, lo, hi).tolist() == expected


def test_suffix_clustering_builds_a_common_suffix_once():
    """[LIU] Ex 28 (Fig 5.4): SEQ(R,W,S,D,C) and SEQ(O,W,S,D,C) share the stacks (W,S,D,C); construction
    runs right to left from C, so the shared suffix is built once and each query finishes its own prefix."""
    query = "OR(SEQ(R r, W w, S s, D d, C c), SEQ(O o, W w, S s, D d, C c)) WITHIN 30 s"
    events = _events("R1 O2 W5 S6 D8 C16 C17")
    found = assert_agrees(query, events, "nested", plan="shared")
    plan, cache = found.info["plan"], found.info["cache"]
    assert plan["chosen"] == "shared" and plan["directions"] == ["suffix", "suffix"]
    assert len(plan["groups"]) == 1 and len(plan["groups"][0]) == 2  # one cluster: both queries
    # the second query finds (W,S,D,C) built: 2 rows for each of the first's 5 columns, 2 for its own O
    assert cache["shared_hits"] == 1 and cache["rows_built"] == 5 * 2 + 2
    assert found.positions() == [(0, 2, 3, 4, 5), (1, 2, 3, 4, 5), (0, 2, 3, 4, 6), (1, 2, 3, 4, 6)]


def test_a_common_prefix_is_built_left_to_right_once():
    """[LIU] Ex 27 (PreCache): SEQ(R,W,S,D,C) and SEQ(R,W,S,D,O) share the prefix SEQ(R,W,S,D): the
    Plan-Finder builds both left to right, the prefix once."""
    query = "OR(SEQ(R r, W w, S s, D d, C c), SEQ(R r, W w, S s, D d, O o)) WITHIN 30 s"
    events = _events("R1 W5 S6 D8 C16 O17 O20")
    found = assert_agrees(query, events, "nested")
    plan = found.info["plan"]
    assert plan["directions"] == ["prefix", "prefix"] and len(plan["groups"]) == 1
    assert found.info["cache"]["shared_hits"] == 1 and found.info["cache"]["rows_built"] == 5 + 2


def test_the_plan_finder_never_picks_a_dearer_grouping_than_either_uniform_one():
    """The search over directions (2^d, [LIU] §5.4's partitions bounded as docs/nested-engine.md explains)
    is exhaustive up to 10 SEQs and a descent beyond; its choice is never dearer than all-suffix or
    all-prefix."""
    ops = NestedEngine().compile(
        prepare(
            "OR(" + ", ".join(f"SEQ(A a, B b, C c{k}, {t} d)" for k, t in enumerate("ABCABCABCABCA")) + ") WITHIN 5 s"
        )
    )
    branches = ops.written.branches
    stats = StreamStats(1000, {"A": 0.5, "B": 0.3, "C": 0.2}, 20.0)
    for d in (3, 12):
        directions, cost = choose_directions(branches[:d], stats)
        assert len(directions) == d
        assert cost <= min(shared_cost(branches[:d], (x,) * d, stats) for x in ("suffix", "prefix")) + 1e-9


def test_decorrelation_summarises_once_per_distinct_value():
    """[LIU] §5.6 / [CSV] Ex 3: a sub-query correlated with r.id is computed once per distinct r.id (a
    summary per value) and joined back; values 10 and 25 give two."""
    query = "SEQ(Recycle r, !SEQ(Sharpen s, Disinfect d, s.id = r.id), Operate o) WITHIN 30 s"
    events = _events(
        "Recycle1 Recycle2 Sharpen3 Disinfect10 Operate11 Recycle12 Operate20", id=[10, 25, 10, 10, 10, 25, 10]
    )
    found = assert_agrees(query, events, "nested")
    assert found.info["plan"]["chosen"] == "nested" and "decorrelated" in found.info["plan"]["why"]
    matcher = cepkit.Matcher(query, engine="nested")
    for e in events:
        matcher.push(e)
    matcher.close()
    summaries = [key for part in matcher._inc.execution.parts.values() for key in part.summaries]
    assert sorted(values for _, values in summaries) == [(10,), (25,)]


def test_info_says_which_plan_ran_and_why():
    q1 = "SEQ(Recycle r, Washing w, !SEQ(Sharpening s, Disinfection d, Checking c), Operating o)"
    stream = cepkit.datasets.neel_hospital("q1_accept_no_disinfection")
    plan = cepkit.match(q1, stream, engine="nested").info["plan"]
    assert plan["chosen"] == "shared" and set(plan["costs"]) == {"shared", "nested"}
    assert plan["why"].startswith("estimated") and "nested" in plan["why"]
    plan = cepkit.match(q1, stream, engine="nested", caching=None).info["plan"]
    assert plan["chosen"] == "nested" and "baseline" in plan["why"]
    # a composite positive item: not shared as written, shared once rewritten (FR1 flattens it)
    q = "SEQ(Recycle r, SEQ(Washing w, !Checking c, Sharpening s), Operating o)"
    info = cepkit.match(q, cepkit.datasets.neel_hospital("q1_accept"), engine="nested").info
    assert "not a single event" in info["plan"]["why"] or info["plan"]["chosen"] == "normal form (shared)"
    with pytest.raises(ValueError, match="plan is one of"):
        cepkit.match(q1, stream, engine="nested", plan="fast")


@settings(max_examples=25, deadline=None)
@given(
    st.lists(shared_nested_queries(windows=False, partition=False), min_size=1, max_size=3),
    streams(max_size=9),
    st.sampled_from(["b", None]),
)
def test_a_workload_gives_each_query_its_reference_matches(queries, events, caching):
    for query, found in zip(queries, match_workload(queries, events, caching=caching)):
        expected = cepkit.match(query, events, engine="reference")
        assert [m.key for m in found] == [m.key for m in expected], (query, events)


def test_the_complex_workload_shares_suffixes_across_queries():
    """[LIU] §5.5 (Fig 5.12): E1-E3 share the suffix (ORCL, INTC), E4-E5 (DELL, AMAT, MSFT, ORCL), E6-E7
    (YHOO, QQQ); each query's matches are the reference's, and the shared columns are built once."""
    workload = [
        "SEQ(MSFT m, !IPIX x, ORCL o, INTC i)",
        "SEQ(MSFT m, !QQQ x, ORCL o, INTC i)",
        "SEQ(MSFT m, !RIMM x, ORCL o, INTC i)",
        "SEQ(RIMM r, DELL d, AMAT a, MSFT m, ORCL o)",
        "SEQ(IPIX p, DELL d, AMAT a, MSFT m, ORCL o)",
        "SEQ(CSCO c, !RIMM x, YHOO y, QQQ q) RETURN c, y, q",
        "SEQ(CSCO c, !IPIX x, RIMM r, YHOO y, QQQ q) RETURN c, y, q",
    ]
    workload = [
        q.replace(")", ") WITHIN 8 s", 1) if "RETURN" not in q else q.replace(") RETURN", ") WITHIN 8 s RETURN")
        for q in workload
    ]
    rng = np.random.default_rng(5)
    tickers = ["MSFT", "ORCL", "IPIX", "INTC", "RIMM", "AMAT", "YHOO", "DELL", "CSCO", "QQQ"]
    # every ticker once per 10 events (equal shares: the Plan-Finder's choice does not hang on noise)
    events = [{"type": t, "ts": k} for k, t in enumerate(np.concatenate([rng.permutation(tickers) for _ in range(30)]))]
    found = match_workload(workload, events)
    for query, got in zip(workload, found):
        assert [m.key for m in got] == [m.key for m in cepkit.match(query, events, engine="reference")]
    plan = found[0].info["plan"]
    assert found[0].info["cache"]["shared_hits"] >= 4
    assert all(any(set(g) <= set(group) for group in plan["groups"]) for g in (["Q1", "Q2", "Q3"], ["Q4", "Q5"]))


def _trades(n: int, seed: int = 0) -> list:
    """[CSV] §8's stream: a trade every 5 s among 30 symbols (10 named, 20 others)."""
    rng = np.random.default_rng(seed)
    symbols = ["MSFT", "ORCL", "RIMM", "AMAT", "YHOO", "INTC", "QQQ", "DELL", "CSCO", "IPIX"]
    symbols += [f"X{k}" for k in range(20)]
    return [{"type": symbols[k], "ts": 5 * i} for i, k in enumerate(rng.integers(0, 30, n))]


@pytest.mark.parametrize("window, n, seed, mode", [(100, 1500, 1, None), (1000, 600, 0, "a")])
def test_the_plan_finder_chooses_the_caching_mode_by_reuse(window, n, seed, mode):
    """bench/nested.py's [CSV] rows: no caching is cheapest at the 100 s window (a couple of candidates, no
    view is reused), A-CSV where caching pays (1000 s: many candidates per window read one view)."""
    query = f"SEQ(MSFT m, ORCL o, !AND(RIMM r, AMAT a, YHOO y), INTC i, QQQ q) WITHIN {window} s"
    events = _trades(n, seed)
    found = assert_agrees(query, events, "nested", plan="nested")
    assert len(found) > 0
    caching = found.info["plan"]["caching"]
    assert caching["chosen"] == mode == found.info["caching"] and set(caching["costs"]) == {"A-CSV", "none"}
    assert f"caching {mode!r}" in caching["why"] and caching["why"] in found.info["plan"]["why"]
    assert (caching["costs"]["A-CSV"] < caching["costs"]["none"]) == (mode == "a")
    assert (found.info["cache"]["summary_lookups"] > 0) == (mode == "a")  # None: every lookup recomputed
    asked = cepkit.match(query, events, engine="nested", plan="nested", caching="b").info
    assert asked["caching"] == "b" and asked["plan"]["caching"]["why"] == "asked for (caching='b')"
