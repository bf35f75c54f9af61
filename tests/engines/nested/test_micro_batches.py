"""``Matcher.extend`` micro-batches through the shared plan (``NestedMatcher.extend``): what pushing every
event returns, batch after batch (each match once, at its last event, in output order), mixed with pushes
and a ``close``; and the reference's matches in all."""

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import cepkit
from cepkit.engines import nested as nested_engine
from cepkit.runtime.match_list import MatchList
from strategies import shared_nested_queries, streams


@pytest.fixture(autouse=True, scope="module")
def every_batch_as_columns():
    """Batches of any size take the shared path here (else those under ``MIN_BATCH`` are pushed)."""
    kept, nested_engine.MIN_BATCH = nested_engine.MIN_BATCH, 1
    yield
    nested_engine.MIN_BATCH = kept


def pushed(query, events) -> list:
    matcher = cepkit.Matcher(query, engine="nested")
    out = [(m.key, m.emitted_at) for e in events for m in matcher.push(e)]
    return out + [(m.key, m.emitted_at) for m in matcher.close()]


def in_batches(query, events, cuts, pushes=()) -> tuple:
    """(emissions, batches taken as columns): events cut at ``cuts``, the pieces starting at ``pushes``
    pushed one by one, the others extended as DataFrames."""
    matcher = cepkit.Matcher(query, engine="nested")
    out, columnar = [], 0
    bounds = [0, *sorted(set(cuts)), len(events)]
    for a, b in zip(bounds, bounds[1:]):
        if a == b:
            continue
        if a in pushes:
            out += [(m.key, m.emitted_at) for e in events[a:b] for m in matcher.push(e)]
            continue
        found = matcher.extend(pd.DataFrame(events[a:b]))
        columnar += isinstance(found, MatchList)
        out += [(m.key, m.emitted_at) for m in found]
    return out + [(m.key, m.emitted_at) for m in matcher.close()], columnar


def windowed(query: str) -> str:
    """``query`` under a time window (micro-batches run shared only then), before any PARTITION BY."""
    pattern, _, partition = query.partition(" PARTITION BY ")
    return pattern + " WITHIN 3 s" + (" PARTITION BY " + partition if partition else "")


@settings(max_examples=40, deadline=None)  # 600 passed once, by hand
@given(shared_nested_queries(windows=False).map(windowed), streams(min_size=1, max_size=14), st.data())
def test_micro_batches_emit_what_pushes_emit(query, events, data):
    n = len(events)
    cuts = data.draw(st.lists(st.integers(0, n), max_size=4))
    pushes = data.draw(st.sets(st.sampled_from([0, *cuts])))
    got, _ = in_batches(query, events, cuts, pushes)
    assert got == pushed(query, events), (query, cuts, pushes)
    assert sorted(k for k, _ in got) == sorted(m.key for m in cepkit.match(query, events, engine="reference"))


def test_a_shared_query_takes_its_batches_as_columns():
    query = "SEQ(A a, !SEQ(B b, C c), A d, B f) WITHIN 6 s PARTITION BY id"
    types = "ABCACBAACBCAABCCAB" * 4
    events = [{"type": t, "ts": k // 2, "id": k % 2} for k, t in enumerate(types)]
    got, columnar = in_batches(query, events, [5, 6, 30, 31, 50])
    assert columnar >= 3
    assert got == pushed(query, events) and got
    info = cepkit.Matcher(query, engine="nested")._plan.info()["plan"]
    assert "Matcher.extend runs a micro-batch shared" in info["why"]


def test_a_trailing_negation_goes_event_by_event():
    query = "SEQ(A a, B b, !C c) WITHIN 3 s"
    events = [{"type": t, "ts": k} for k, t in enumerate("ABCABAB")]
    got, columnar = in_batches(query, events, [3])
    assert columnar == 0 and got == pushed(query, events)
    assert "a trailing !/EXISTS" in cepkit.Matcher(query, engine="nested")._plan.info()["plan"]["why"]
