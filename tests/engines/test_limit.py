"""LIMIT n (issue 24): the first n matches in output order (docs/language.md §4), on every engine against the
reference, the automaton stopping its run early; the Matcher's first n emissions; explain and why_not."""

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.errors import QueryError
from cepkit.lang.printer import pretty
from cepkit.runtime.registry import registered
from tests.engines.test_conformance import EVENTS, EXAMPLES, hierarchy_for
from strategies import cel_queries, flat_seq_queries, kleene_queries, streams

ENGINES = sorted(e.name for e in registered() if e.name != "reference")


def runs(query, engine, hierarchy=None) -> bool:
    try:
        cepkit.Matcher(query, engine=engine, hierarchy=hierarchy)
    except QueryError:
        return False
    return True


def test_limit_parses_prints_and_reads_back():
    for text in (
        "SELECT NEXT * PATTERN A a ; B b WITHIN 3 s PARTITION BY id RETURN a LIMIT 5",
        "SELECT a FROM S WHERE A a ; B b WHERE a.v > 1 CONSUME BY ANY LIMIT 1",
        "A a limit 70000",
    ):
        q = cepkit.parse(text)
        assert q.ast.limit in (5, 1, 70000)
        assert cepkit.parse(pretty(q.ast)) == q
    for text, message, column in [
        ("A a LIMIT 0", "got 0", 11),
        ("A a LIMIT 2.5", "got 2.5", 11),
        ("A a LIMIT x", "expected a number", 11),
        ("A a LIMIT 2 WITHIN 3 s", "unexpected 'WITHIN'", 13),
    ]:
        with pytest.raises(QueryError, match=message) as err:
            cepkit.parse(text)
        assert err.value.column == column


def test_the_reference_keeps_the_first_n_in_output_order():
    """A;B over A B A B C B A B: (0,1) (0,3) (2,3) (0,5) ... in output order (docs/language.md §10.2)."""
    events = [{"type": t, "ts": i} for i, t in enumerate("ABABCBAB")]
    everything = cepkit.match("A a ; B b", events, engine="reference").positions()
    assert everything[:3] == [(0, 1), (0, 3), (2, 3)]
    for n in (1, 3, len(everything), len(everything) + 5):
        assert cepkit.match(f"A a ; B b LIMIT {n}", events, engine="reference").positions() == everything[:n]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("feature", sorted(EXAMPLES))
def test_every_engine_keeps_the_reference_first_n(engine, feature):
    base = EXAMPLES[feature]
    for n in (1, 2, 5):
        query = f"{base} LIMIT {n}"
        if not runs(query, engine, hierarchy_for(base)):
            pytest.skip(f"{engine} does not run {feature}")
        expected = cepkit.match(base, EVENTS, engine="reference", hierarchy=hierarchy_for(base))
        got = cepkit.match(query, EVENTS, engine=engine, hierarchy=hierarchy_for(base))
        assert [m.key for m in got] == [m.key for m in expected][:n], query


@settings(max_examples=120, deadline=None)
@given(st.one_of(cel_queries(), kleene_queries()), streams(max_size=14), st.integers(1, 6))
def test_the_automaton_keeps_the_reference_first_n(query, events, n):
    query = f"{query} LIMIT {n}"
    assume(runs(query, "automaton"))
    expected = cepkit.match(query, events, engine="reference")
    got = cepkit.match(query, events, engine="automaton")
    assert [m.key for m in got] == [m.key for m in expected], (query, events)


@settings(max_examples=60, deadline=None)
@given(flat_seq_queries(), streams(max_size=12), st.integers(1, 4))
def test_the_stack_keeps_the_reference_first_n(query, events, n):
    query = f"{query} LIMIT {n}"
    assume(runs(query, "stack"))
    expected = cepkit.match(query, events, engine="reference")
    assert [m.key for m in cepkit.match(query, events, engine="stack")] == [m.key for m in expected]


@pytest.mark.parametrize("query", ["A a ; B b ; C c WITHIN 10 s", "SELECT NEXT * PATTERN A a ; B b WITHIN 10 s"])
def test_the_automaton_stops_reading_once_it_holds_n(query):
    """100,000 events; LIMIT 5 reads the first few events only (``info["stopped_early"]``), with the same
    first five as without it."""
    events = [{"type": "ABCD"[i % 4], "ts": float(i)} for i in range(100_000)]
    whole = cepkit.match(query, events, engine="automaton")
    first = cepkit.match(query + " LIMIT 5", events, engine="automaton")
    assert first.info["stopped_early"] and not whole.info["stopped_early"]
    assert [m.key for m in first] == [m.key for m in whole][:5]
    assert first.info["arena_nodes"] <= whole.info["arena_nodes"]


def test_partition_by_and_return_apply_it_after_the_run():
    events = [{"type": t, "ts": i, "id": i % 2} for i, t in enumerate("AABBAB")]
    for query in ("A a ; B b PARTITION BY id", "A a ; B b RETURN b"):
        got = cepkit.match(query + " LIMIT 2", events, engine="automaton")
        assert got.info["stopped_early"] == ("PARTITION" in query)  # each partition read up to its first 2
        assert [m.key for m in got] == [m.key for m in cepkit.match(query, events, engine="reference")][:2]


@pytest.mark.parametrize("engine", ["automaton", "stack", "reference"])
def test_a_matcher_reports_its_first_n_emissions_then_nothing(engine):
    events = [{"type": t, "ts": i, "v": i} for i, t in enumerate("ABABCBAB")]
    matcher = cepkit.Matcher("A a ; B b LIMIT 3", engine=engine)
    out = [m.positions for e in events for m in matcher.push(e)] + [m.positions for m in matcher.close()]
    assert out == [(0, 1), (0, 3), (2, 3)]
    assert matcher.result().positions() == out
    pushed = cepkit.Matcher("A a ; B b LIMIT 3", engine=engine, keep=False)
    push = pushed.pusher(("type", "ts", "v"))
    assert [m.positions for e in events for m in push(e["type"], e["ts"], e["v"])] == out
    with pytest.raises(QueryError, match="aggressive"):
        cepkit.Matcher("A a ; B b LIMIT 3", engine=engine, disorder="aggressive", max_delay=1)


def test_explain_and_why_not_name_the_limit():
    events = [{"type": t, "ts": i} for i, t in enumerate("ABABCBAB")]
    query = "A a ; B b LIMIT 2"
    kept = cepkit.explain(query, events, (0, 3))
    assert kept.is_match and kept.reasons[-1].values == {"rank": 2, "limit": 2}
    cut = cepkit.explain(query, events, {"a": 2, "b": 3})
    assert not cut.is_match and [r.kind for r in cut.failures] == ["limit"]
    assert cut.failures[0].values == {"rank": 3, "limit": 2}
    assert cut.failures[0].span == (10, 17)  # "LIMIT 2"
    misses = cepkit.why_not(query, events, limit=10)
    assert misses.complete
    assert {m.positions for m in misses} == {m for m in cepkit.match("A a ; B b", events).positions()[2:]}
    assert all([r.kind for r in m.failures] == ["limit"] for m in misses)


def test_spark_refuses_limit_and_says_what_runs_it():
    from cepkit.runtime.api import prepare, refuse_limit

    with pytest.raises(QueryError, match="cepkit.match and cepkit.Matcher run it"):
        refuse_limit(prepare("A a ; B b LIMIT 2"), "cepkit.spark.match", "take .limit(n)")
