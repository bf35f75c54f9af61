"""The columnar run (``ses.batch``: every match window in one ``kernel.run_windows`` call) gives the matches,
bindings and emission positions of the event-by-event matcher and the reference's matches, with the SES
automaton and the brute force's permutation automata alike; its pure-Python twin (NUMBA_DISABLE_JIT=1,
the same functions uncompiled) gives the compiled kernel's, ROBUST_STNM's backtracking included."""

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import set_query_variants, streams
from twins import assert_twins_agree

import cepkit
from cepkit.runtime.stream import Stream
from cepkit.runtime.match_arrays import MatchArrays
from cepkit.runtime.selection import select_engine


def _both(query: str, events, **options) -> tuple:
    """(the plan, its run, the matcher's matches with their emission positions, the run's), sorted."""
    _, plan = select_engine(cepkit.parse(query), "ses", options)
    stream = Stream.from_any(events)
    found = plan.run(stream)
    matcher = plan.matcher()
    pushed = [m for event in stream for m in matcher.push(event)] + matcher.close()
    return plan, found, sorted((m.key, m.emitted_at) for m in pushed), sorted((m.key, m.emitted_at) for m in found)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    set_query_variants(strategies=("ALL", "STNM", "ROBUST_STNM")),
    streams(types=("C", "P", "D", "B"), max_size=12, ids=2),
    st.booleans(),
)
def test_columnar_run_agrees_with_the_matcher_and_the_reference(query, events, lookahead):
    """ROBUST_STNM included: the kernel's backtracking (``kernel._robust``) against the matcher's
    (``execution.run_window_robust``), with and without the lookahead cut."""
    plan, found, pushed, columnar = _both(query, events, lookahead=lookahead)
    assert columnar == pushed
    assert sorted(m.key for m in found) == sorted(m.key for m in cepkit.match(query, events, engine="reference"))
    if plan.layout is not None:
        assert isinstance(found, MatchArrays) and "evaluated" in plan.info()


def _chemo(n: int, patients: int, seed: int = 4) -> list:
    rng = random.Random(seed)
    return [
        {"type": rng.choice("CPDB"), "ts": i * 1800.0, "PID": rng.randrange(patients), "V": rng.randrange(50)}
        for i in range(n)
    ]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(set_query_variants(strategies=("STNM",)), streams(types=("C", "P", "D", "B"), max_size=12, ids=2))
def test_brute_force_under_stnm_runs_each_permutation_greedily(query, events):
    """[SES] Fig. 4.12's baseline under STNM: each permutation's automaton greedy on its own, in the kernel
    as in the matcher; its matches include the SES automaton's STNM matches (the event a greedy set run
    takes next is the first that fires any transition, which is also the first its permutation takes)."""
    plan, found, pushed, columnar = _both(query, events, automaton="permutations")
    assert columnar == pushed
    ses = {m.key for m in cepkit.match(query, events, engine="ses")}
    assert ses <= {m.key for m in found}


@pytest.mark.parametrize(
    "strategy, automaton",
    [("ALL", "ses"), ("STNM", "ses"), ("ROBUST_STNM", "ses"), ("ALL", "permutations"), ("STNM", "permutations")],
)
def test_set_queries_at_size(automaton, strategy):
    """Sets with a Kleene variable, a chain and joins, partitioned on X by Θ's equalities, over a few
    thousand events: the kernel finds what the matcher finds, emitted where the matcher emits them."""
    events = _chemo(3000, 5)
    query = (
        f"SELECT {strategy} * PATTERN SEQ({{C c, P+ p, D d}}, {{B b}}) WHERE c.PID = p.PID and "
        "p.PID = d.PID and d.PID = b.PID and prev(p.V) < p.V and c.V < b.V WITHIN 1 days"
    )
    plan, found, pushed, columnar = _both(query, events, automaton=automaton)
    assert isinstance(found, MatchArrays) and len(found) > 20
    assert columnar == pushed


TWIN_QUERIES = [
    "A a ; B b ; C c WITHIN 4 s",
    "SEQ({A a, B+ b}, C c) WHERE a.v < b.v and prev(b.v) <= b.v and a.id = c.id WITHIN 6 s",
    "SEQ({A a, B b, D d}, C c) WHERE a.id = b.id and b.id = c.id and c.id = d.id WITHIN 8 EVENTS",
    "SEQ(A+ a, B b) WHERE b.v > a.v * 2 - 3 WITHIN 3 s PARTITION BY id",
    "SELECT STNM * PATTERN SEQ({A a, B+ b, D d}, C c) WHERE prev(b.v) < b.v and a.id = d.id WITHIN 6 s",
    "SELECT ROBUST_STNM * PATTERN SEQ({A a, B+ b}, {C c, D+ d}) WHERE prev(b.v) < b.v and a.v < c.v WITHIN 5 s",
    "SELECT ROBUST_STNM * PATTERN SEQ(A a, B+ b, C c) WHERE prev(b.v) < b.v and b.v < c.v WITHIN 8 EVENTS",
]


def test_python_twin_gives_the_compiled_kernels_matches():
    assert_twins_agree("ses", "cepkit.engines.ses.kernel", "run_windows", TWIN_QUERIES)
