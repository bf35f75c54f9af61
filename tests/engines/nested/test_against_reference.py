"""The ``nested`` engine against the reference evaluator on random NEEL queries (``nested_queries``: SEQ / AND /
OR at any depth, ``!`` and EXISTS over composites, correlated predicates, windows, PARTITION BY) and random
streams: every caching mode, the normal form, and the incremental matcher give the reference's matches."""

import pytest
from hypothesis import given, settings, strategies as st

import cepkit
from cepkit.engines import nested as nested_engine
from strategies import assert_agrees, nested_queries, streams


@settings(max_examples=60, deadline=None)
@given(nested_queries(), streams(max_size=8), st.sampled_from(["a", "p", "b", None]))
def test_every_caching_mode_gives_the_reference_matches(query, events, caching):
    """Every caching mode gives the uncached nested baseline's results ([CSV] §3) — and the reference's."""
    assert_agrees(query, events, "nested", caching=caching)


@settings(max_examples=40, deadline=None)
@given(nested_queries(), streams(max_size=8))
def test_the_normal_form_gives_the_reference_matches(query, events):
    """``rewrite=True`` runs the NEEL normal form when it exists and keeps every match ([LIU] §5.2)."""
    found = assert_agrees(query, events, "nested", rewrite=True)
    assert found.info["execution"] in ("nested", "normal form")


@settings(max_examples=40, deadline=None)
@given(nested_queries(), streams(max_size=8), st.sampled_from(["a", "p", "b", None]))
def test_the_matcher_reports_the_reference_matches_never_early(query, events, caching):
    matcher = cepkit.Matcher(query, engine="nested", caching=caching)
    reported = []
    for position, event in enumerate(events):
        for m in matcher.push(event):
            assert m.positions[-1] <= position and m.emitted_at == position
            reported.append(m.key)
    reported += [m.key for m in matcher.close()]
    assert sorted(reported) == sorted(m.key for m in cepkit.match(query, events, engine="reference"))


@pytest.mark.parametrize("caching", ["a", "p", "b", None])
def test_purging_keeps_long_windowed_streams_exact(monkeypatch, caching):
    """The matcher forgets stacks and view results no candidate can reach any more (here after every push)."""
    monkeypatch.setattr(nested_engine, "PURGE_EVERY", 1)
    query = "SEQ(A a, !SEQ(B b, C c), A d, EXISTS C e) WITHIN 4 s"
    types = "ABCACBAACBCAABCCAB" * 3
    events = [{"type": t, "ts": k} for k, t in enumerate(types)]
    matcher = cepkit.Matcher(query, engine="nested", caching=caching)
    reported = [m.key for e in events for m in matcher.push(e)] + [m.key for m in matcher.close()]
    assert sorted(reported) == sorted(m.key for m in cepkit.match(query, events, engine="reference"))
    stacks = [part.stacks for part in matcher._inc.execution.parts.values()][0]
    # kept: twice the window back from the oldest match still waiting for its trailing scope (one window)
    assert min(end for _, end in stacks) >= len(events) - 1 - 4 * 4
