"""The ``ses`` engine against the reference evaluator on random set patterns and streams (hypothesis), and its
own evaluation paths against each other: two-phase on/off, backtracking vs all+pp (Thm 6.2), the SES
automaton vs the brute force of Ex 4.8, incremental vs batch, and a plan's pickle round trip."""

import copy
import pickle

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import assert_agrees, set_query_variants, streams

import cepkit
from cepkit.runtime.stream import Stream
from cepkit.runtime.registry import get_engine

SES_TYPES = ("C", "P", "D", "B")
events = streams(types=SES_TYPES, max_size=10, ids=2)
RANDOM = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@RANDOM
@given(
    set_query_variants(strategies=("ALL", "STNM", "ROBUST_STNM")),
    events,
    st.booleans(),
    st.sampled_from(["backtrack", "filter"]),
    st.booleans(),
)
def test_agrees_with_the_reference(query, stream, two_phase, robust, lookahead):
    """Same positions and bindings as the reference, whatever the evaluation path ([SES] ch. 5: the two-phase
    filter, partitions and candidates change nothing; [SES] §6.4: Algorithm 4, with or without the lookahead cut, and all+pp
    give the same RSTNM)."""
    assert_agrees(query, stream, "ses", two_phase=two_phase, robust=robust, lookahead=lookahead)


@RANDOM
@given(set_query_variants(strategies=("ALL",)), events)
def test_the_brute_force_finds_the_same_matches(query, stream):
    """Ex 4.8: the |B1|!···|Bk|! sequential automata together find exactly the SES automaton's matches."""
    ses = cepkit.match(query, stream, engine="ses")
    assert cepkit.match(query, stream, engine="ses", automaton="permutations") == ses


@RANDOM
@given(set_query_variants(), events)
def test_stnm_within_robust_stnm_within_all(query, stream):
    """Thm 6.1: Γ_stnm ⊆ Γ_rstnm ⊆ Γ."""
    keys = {
        s: {m.key for m in cepkit.match(query, stream, engine="ses", strategy=s)}
        for s in ("STNM", "ROBUST_STNM", "ALL")
    }
    assert keys["STNM"] <= keys["ROBUST_STNM"] <= keys["ALL"]


@RANDOM
@given(set_query_variants(strategies=("ALL", "STNM", "ROBUST_STNM")), events, st.data())
def test_incremental_agrees_with_batch(query, stream, data):
    """A ``Matcher`` fed a prefix and closed gives the batch result of that prefix; every match ``push``
    returns over the whole stream is final (part of the batch result); the events are not mutated."""
    cut = data.draw(st.integers(0, len(stream)))
    before = copy.deepcopy(stream)
    matcher = cepkit.Matcher(query, engine="ses")
    pushed = [m for event in stream[:cut] for m in matcher.push(event)]
    closed = matcher.close()
    assert sorted(m.key for m in pushed + closed) == sorted(
        m.key for m in cepkit.match(query, stream[:cut], engine="ses")
    )
    matcher = cepkit.Matcher(query, engine="ses")
    pushed = {m.key for event in stream for m in matcher.push(event)}
    assert pushed <= {m.key for m in cepkit.match(query, stream, engine="ses")}
    assert stream == before


@settings(max_examples=20, deadline=None)
@given(set_query_variants(strategies=("ALL", "STNM", "ROBUST_STNM")), events)
def test_plans_pickle(query, stream):
    """A plan travels by pickle (as Spark ships work) and runs the same afterwards."""
    plan = get_engine("ses").compile(cepkit.parse(query))
    again = pickle.loads(pickle.dumps(plan))
    run = Stream.from_any(stream)
    assert sorted(m.key for m in again.run(run)) == sorted(m.key for m in plan.run(run))


def test_matcher_reports_a_projected_match_once():
    """RETURN x2 projects the matches of the windows starting at 0 and at 1 onto the same (C, β) ({3},
    x2: 3): one match (docs/language.md §10.2), reported when the first window closes, not again by ``close``
    (found by differential fuzzing: the matcher reported it once per window)."""
    query = "PATTERN SEQ({C x0, C x1}, C x2) WITHIN 6 RETURN x2"
    events = [{"type": "C", "ts": t} for t in (1, 2, 7, 7, 8)]
    matcher = cepkit.Matcher(query, engine="ses")
    pushed = [m.key for e in events for m in matcher.push(e)] + [m.key for m in matcher.close()]
    assert sorted(pushed) == sorted(m.key for m in cepkit.match(query, events, engine="reference"))
    assert len(pushed) == 3
