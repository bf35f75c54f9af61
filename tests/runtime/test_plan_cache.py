"""``cepkit.match``'s plan cache: a repeated query is compiled once per thread, and what it hands out
gives exactly what a fresh compile gives, with no run state shared between calls."""

import threading

import numpy as np
import pandas as pd
import pytest

import cepkit
from cepkit.runtime import api

KLEENE = "(A AS a)+ ; B AS b WITHIN 5 s"


def frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"type": rng.choice(list("ABC"), n), "ts": np.arange(n, dtype=float), "v": rng.integers(0, 10, n)}
    )


@pytest.fixture(autouse=True)
def empty_cache():
    api.clear_plan_cache()
    yield
    api.clear_plan_cache()


@pytest.mark.parametrize("engine", ["automaton", "auto", "reference", "ses"])
@pytest.mark.parametrize(
    "text",
    [
        KLEENE,
        "A AS a ; (B AS b FILTER b.v < 5) ; C AS c WITHIN 4 s",
        "(A AS a)+ ; (B AS b)+ ; C AS c WITHIN 30 s PARTITION BY v",
    ],
)
def test_cached_calls_equal_a_fresh_compile(engine, text):
    found = 0
    for seed in range(3):
        events = frame(60, seed)
        fresh = cepkit.match(cepkit.parse(text), events, engine=engine)  # a Query: never cached
        first = cepkit.match(text, events, engine=engine)
        again = cepkit.match(text, events, engine=engine)
        assert fresh.positions() == first.positions() == again.positions()
        assert [m.bindings for m in fresh] == [m.bindings for m in again]
        assert fresh.engine == again.engine
        found += len(fresh)
    assert found > 0


def test_each_call_gets_its_own_plan_and_run_state():
    small, big = frame(30, 1), frame(3000, 2)
    cepkit.match(KLEENE, small, engine="automaton")
    kept = api._plan_cache.plans[(KLEENE, None, None, "automaton", ())]
    plans = [api._cached_plan((KLEENE, None, None, "automaton", ()))[2] for _ in range(2)]
    assert plans[0] is not plans[1] and kept[2] not in plans
    assert plans[0].program is plans[1].program is kept[2].program  # the compiled part is shared
    on_big = cepkit.match(KLEENE, big, engine="automaton")
    on_small = cepkit.match(KLEENE, small, engine="automaton")
    # each result keeps the facts of its own run, not the latest call's
    assert on_big.info["arena_nodes"] >= on_small.info["arena_nodes"]
    assert on_small.positions() == cepkit.match(cepkit.parse(KLEENE), small, engine="automaton").positions()
    assert on_big.positions() == cepkit.match(cepkit.parse(KLEENE), big, engine="automaton").positions()
    assert kept[2].last_run == {}  # the kept plan is never run


def test_a_cached_ses_plan_shares_its_automata_not_its_run():
    """The SES plan's fresh copy keeps the compiled automata and the kernel's layout (no compile on a
    repeated call), and each result its own run's window counts."""
    query = "SEQ({A a, B b}, C c) WHERE a.v < b.v WITHIN 5 s"
    small, big = frame(30, 1), frame(3000, 2)
    cepkit.match(query, small, engine="ses")
    kept = api._plan_cache.plans[(query, None, None, "ses", ())][2]
    plan = api._cached_plan((query, None, None, "ses", ()))[2]
    assert plan is not kept and plan.compiled is kept.compiled and plan.layout is kept.layout is not None
    on_big, on_small = cepkit.match(query, big, engine="ses"), cepkit.match(query, small, engine="ses")
    assert on_big.info["windows"] > on_small.info["windows"] and "windows" not in kept.info()
    assert on_big.positions() == cepkit.match(cepkit.parse(query), big, engine="ses").positions()


def test_matchers_of_a_cached_query_do_not_share_runs():
    events = frame(200, 3).to_dict("records")
    cepkit.match(KLEENE, frame(10, 0), engine="automaton")
    one, two = cepkit.Matcher(KLEENE, engine="automaton"), cepkit.Matcher(KLEENE, engine="automaton")
    for e in events[:100]:
        one.push(e)
    for e in events:
        two.push(e)
    assert [m.positions for m in two.matches] == cepkit.match(
        KLEENE, pd.DataFrame(events), engine="automaton"
    ).positions()
    assert [m.positions for m in one.matches] == cepkit.match(
        KLEENE, pd.DataFrame(events[:100]), engine="automaton"
    ).positions()


def test_the_cache_is_bounded_and_per_thread():
    events = frame(20, 0)
    for w in range(api.PLAN_CACHE_SIZE + 5):
        cepkit.match(f"A AS a ; B AS b WITHIN {w + 1} s", events, engine="automaton")
    assert len(api._plan_cache.plans) == api.PLAN_CACHE_SIZE
    assert ("A AS a ; B AS b WITHIN 1 s", None, None, "automaton", ()) not in api._plan_cache.plans
    seen = []
    worker = threading.Thread(target=lambda: seen.append(getattr(api._plan_cache, "plans", None)))
    worker.start()
    worker.join()
    assert seen == [None]


def test_uncacheable_calls_still_run():
    events = frame(50, 4)
    expected = cepkit.match(KLEENE, events, engine="automaton").positions()
    # a list option is unhashable: compiled every call
    assert api._cache_key(KLEENE, None, None, "automaton", {"disorder": ["x"]}) is None
    assert (
        cepkit.match(KLEENE, events, engine="automaton", disorder="conservative", max_delay="0 s").positions()
        == expected
    )
    assert (
        cepkit.match(KLEENE, events, engine="automaton", disorder="conservative", max_delay="0 s").positions()
        == expected
    )


def test_errors_are_not_cached():
    with pytest.raises(cepkit.QueryError):
        cepkit.match("A AS a ; ", frame(5, 0))
    with pytest.raises(cepkit.QueryError):
        cepkit.match("A AS a ; ", frame(5, 0))
    with pytest.raises(cepkit.QueryError, match="unknown attribute"):
        cepkit.match("A AS a FILTER a.nope > 1", frame(5, 0), engine="automaton")
    assert cepkit.match("A AS a FILTER a.v > 1", frame(5, 0), engine="automaton") is not None


def test_clear_plan_cache_compiles_again_and_keeps_results():
    events = frame(80, 5)
    before = cepkit.match(KLEENE, events, engine="automaton")
    kept = api._plan_cache.plans[(KLEENE, None, None, "automaton", ())]
    api.clear_plan_cache()
    assert getattr(api._plan_cache, "plans", None) is None
    after = cepkit.match(KLEENE, events, engine="automaton")
    again = api._plan_cache.plans[(KLEENE, None, None, "automaton", ())]
    assert again[2].program is not kept[2].program  # compiled anew, not the forgotten plan
    assert after.positions() == before.positions() and len(after) > 0
    api.clear_plan_cache()
    api.clear_plan_cache()  # clearing an empty cache is harmless
