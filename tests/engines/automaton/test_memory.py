"""Memory is bounded by the window, never by the stream (max-start pruning, from tECS and CORE, later work beyond [CEL]): on a
long stream the node arena of A;B;C WITHIN 10 s stays the same size whether the stream is 20k or 200k
events long, in a batch run and in the incremental matcher, for ALL and for NEXT."""

import numpy as np
import pandas as pd
import pytest

import cepkit
from cepkit.runtime.stream import Stream
from cepkit.runtime.registry import get_engine


def uniform_stream(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"type": rng.choice(list("ABCD"), n), "ts": np.arange(n, dtype=float), "id": rng.integers(0, 3, n)}
    )


@pytest.mark.parametrize("query", ["A a ; B b ; C c WITHIN 10 s", "A+ a ; B b WITHIN 10 EVENTS PARTITION BY id"])
def test_batch_memory_is_flat(query):
    plan = get_engine("automaton").compile(cepkit.parse(query))
    sizes = []
    for n in (20_000, 200_000):
        emitted = plan.count(uniform_stream(n))
        assert emitted > n // 100
        sizes.append(plan.info()["arena_nodes"])
    assert sizes[0] == sizes[1]


@pytest.mark.parametrize("strategy", [None, "NEXT"])
def test_matcher_memory_is_flat(strategy):
    query = cepkit.parse("A a ; B b ; C c WITHIN 10 s").with_strategy(strategy)
    matcher = get_engine("automaton").compile(query).matcher()
    events = Stream.from_any(uniform_stream(30_000)).events
    sizes = []
    for chunk in (events[:10_000], events[10_000:]):
        for event in chunk:
            matcher.push(event)
        sizes.append(matcher.arena_nodes)
    assert sizes[0] == sizes[1]


def test_a_result_beyond_the_machines_memory_is_refused_before_it_is_allocated():
    """``A+ a ; B b`` under ALL over 60 A's then a B has 2^60 - 1 matches: the enumeration counts the room it
    needs and says so (how many, how much, what shrinks it) instead of numpy's "Unable to allocate" of
    exabytes."""
    events = pd.DataFrame({"type": ["A"] * 60 + ["B"], "ts": np.arange(61, dtype=float)})
    with pytest.raises(cepkit.errors.ResultTooLarge, match="LIMIT n") as refused:
        cepkit.match("A+ a ; B b", events, engine="automaton").position_arrays()
    assert isinstance(refused.value, MemoryError) and refused.value.matches != 0
    assert refused.value.needed > refused.value.available
