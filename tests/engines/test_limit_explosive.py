"""LIMIT n on results too large to hold (docs/language.md §12): ``A+ a ; B b`` over 60 A's then a B has
2^60 - 1 matches, all completed by the B. Under LIMIT 100 every engine that runs it returns the first 100
in output order fast and in bounded memory, or refuses the query naming the engines that can; without a
LIMIT the result is refused before it is allocated (``cepkit.errors.ResultTooLarge``)."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.engines.automaton import evaluate
from cepkit.errors import QueryError, ResultTooLarge

EXPLOSIVE = "A+ a ; B b"


def a_then_b(n: int) -> pd.DataFrame:
    return pd.DataFrame({"type": ["A"] * n + ["B"], "ts": np.arange(n + 1, dtype=float)})


def test_the_automaton_takes_the_first_100_of_2_to_the_60_in_bounded_memory():
    """The first 100 are those of a smaller run's order: the B's list read from its first positions
    ((0, 1, ..., 59, 60), (0, ..., 58, 60), ...); the run holds a few MB, not 2^60 matches' room."""
    small = cepkit.match(EXPLOSIVE, a_then_b(10), engine="automaton").positions()
    tracemalloc.start()
    try:
        found = cepkit.match(EXPLOSIVE + " LIMIT 100", a_then_b(60), engine="automaton")
        rows = found.positions()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(rows) == 100 and found.info["stopped_early"]
    assert peak < 64 * 2**20, peak
    # the order of the 2^60: the smaller run's with 50 more A's in front (their positions shifted by 50)
    assert rows[0] == tuple(range(61)) and rows[1] == tuple(range(59)) + (60,)
    expected = [tuple(range(50)) + tuple(p + 50 for p in m[:-1]) + (60,) for m in small[:100]]
    assert rows == expected


def test_without_a_limit_the_result_is_refused_before_it_is_allocated():
    with pytest.raises(ResultTooLarge, match="more than 2\\^63 more matches") as refused:
        cepkit.match(EXPLOSIVE, a_then_b(70), engine="automaton").position_arrays()
    assert "add LIMIT n" in str(refused.value) and refused.value.limit is None


KLEENE = [
    "A+ a ; B b",
    "A a ; B+ b ; C c",
    "(A a OR B a)+ ; C c",
    "A+ a ; A+ b ; B c",
    "ANY+ x ; C c WITHIN 5 EVENTS",
    "A+ a ; (B b OR C b) WITHIN 4",
    "(A a ; B+ b)+ ; C c",
    "(A a OR A b)+ ; B c",
    "A+ a ; B+ b",
    "(A+ a OR B+ b) ; C c",
    "A+ a ; B b PARTITION BY id",
    "A a ; B+ b ; C c WITHIN 6 EVENTS PARTITION BY id",
]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(KLEENE),
    st.lists(st.sampled_from("AAABBC"), min_size=1, max_size=13),
    st.integers(1, 12),
)
def test_the_automatons_first_n_of_a_large_list_are_the_references(monkeypatch_room, query, types, n):
    """With room for one match before the outputs grow, every list longer than the limit's share is read
    by ``first_matches``: the first n are the reference's, ties of positions (bindings order them) too."""
    events = [{"type": t, "ts": i, "id": i % 3 // 2} for i, t in enumerate(types)]
    limited = f"{query} LIMIT {n}"
    expected = cepkit.match(limited, events, engine="reference")
    assert [m.key for m in cepkit.match(limited, events, engine="automaton")] == [m.key for m in expected]


@pytest.fixture(scope="module")
def monkeypatch_room():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evaluate, "ROOM", 1)
        yield


def test_a_limit_the_automaton_applies_after_the_run_is_said_not_to_shrink_it():
    """With RETURN the automaton cuts after the run: the refusal says the LIMIT did not shrink it, instead
    of telling the user to add the LIMIT they wrote."""
    with pytest.raises(ResultTooLarge, match="LIMIT 5 does not shrink this run") as refused:
        cepkit.match(f"{EXPLOSIVE} RETURN b LIMIT 5", a_then_b(60), engine="automaton")
    assert refused.value.limit == 5 and "add LIMIT" not in str(refused.value)


def test_under_partition_by_each_partition_yields_its_first_n():
    """Two keys, each with 60 A's then a B: LIMIT 100 takes each partition's first 100 (the result's first
    100 are among them) and reads no further in a partition that holds them."""
    one = a_then_b(60)
    events = pd.concat([one.assign(id=0), one.assign(id=1, ts=one.ts + 0.5)]).sort_values("ts", kind="stable")
    found = cepkit.match(f"{EXPLOSIVE} PARTITION BY id LIMIT 100", events.reset_index(drop=True), engine="automaton")
    rows = found.positions()
    assert len(rows) == 100 and found.info["stopped_early"]
    assert rows[0] == tuple(range(0, 122, 2)) and rows[:2] == sorted(rows[:2])  # the key of the first B


def test_explain_under_a_limit_ranks_a_match_among_the_first_n_without_the_whole_result():
    """``cepkit.explain`` ranked a match in the whole result (2^60 matches here: refused); it now looks in
    the first n first, and past them says the match is left out without a rank."""
    events = a_then_b(60)
    past = cepkit.explain(EXPLOSIVE + " LIMIT 100", events, (0, 60))
    assert not past.is_match and past.failures[-1].kind == "limit"
    assert "not among the first 100" in past.failures[-1].message and past.failures[-1].values["rank"] is None
    tail = a_then_b(10)  # a result small enough to rank in: the rank is said
    kept = cepkit.explain(EXPLOSIVE + " LIMIT 3", tail, tuple(range(11)))
    assert kept.is_match and kept.reasons[-1].values == {"rank": 1, "limit": 3}
    left = cepkit.explain(EXPLOSIVE + " LIMIT 3", tail, (0, 10))
    assert not left.is_match and left.failures[-1].values["rank"] == 512


def test_why_not_says_a_limit_does_not_shrink_what_it_reads():
    with pytest.raises(ResultTooLarge, match="why_not reads every match") as refused:
        cepkit.why_not(EXPLOSIVE + " LIMIT 100", a_then_b(60))
    assert refused.value.limit == 100 and "add LIMIT" not in str(refused.value)


ENGINES = ["automaton", "stack", "ses", "rcep", "nested", "ecube", "reference"]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_takes_the_first_100_or_refuses_naming_the_engines_that_can(engine):
    """Under LIMIT 100, each engine returns the automaton's first 100 or refuses at once with an error that
    names an engine that runs the query: ses and rcep list every match before the cut (counted first:
    2^60), the stack, nested and ecube have no Kleene +, the reference's search budget is spent."""
    events = a_then_b(60)
    query = EXPLOSIVE + " LIMIT 100"
    if engine == "automaton":
        assert len(cepkit.match(query, events, engine=engine)) == 100
        return
    with pytest.raises(QueryError) as refused:
        cepkit.match(query, events, engine=engine)
    assert "automaton" in str(refused.value) and not isinstance(refused.value, MemoryError)


@pytest.mark.parametrize("engine", ["ses", "rcep"])
def test_the_enumerating_engines_refuse_a_result_too_large_before_running(engine):
    with pytest.raises(ResultTooLarge, match="add LIMIT n"):
        cepkit.match(EXPLOSIVE, a_then_b(60), engine=engine)
    small = a_then_b(12)  # 4,095 matches: listed, and cut by the LIMIT as before
    expected = cepkit.match(EXPLOSIVE + " LIMIT 100", small, engine="automaton").positions()
    assert cepkit.match(EXPLOSIVE + " LIMIT 100", small, engine=engine).positions() == expected


def test_a_match_the_matcher_emits_twice_counts_once_toward_the_limit():
    """Under LAST the automaton's matcher emitted (0,) twice at the first event: the replay under LIMIT 2
    stopped there, and ``Matches`` kept one row of the two the reference has (found by hypothesis)."""
    events = [{"type": "A", "ts": 0, "v": v} for v in (1, 1, 0)]
    query = "SELECT LAST * PATTERN (ANY AS x FILTER x.v != 0)+ WITHIN 1 LIMIT 2"
    expected = cepkit.match(query, events, engine="reference").positions()
    assert cepkit.match(query, events, engine="automaton").positions() == expected == [(0,), (0, 1)]
