"""Properties the reference's meaning must have, on random streams and queries (tests/strategies.py)."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.lang.printer import pretty
from strategies import flat_seq_queries, set_queries, streams, unary_queries


def keys(query, events, **kwargs):
    return {m.key for m in cepkit.match(query, events, engine="reference", **kwargs)}


@settings(max_examples=40, deadline=None)
@given(set_queries(max_sets=2, max_set_size=2), streams(types=("C", "P", "D", "B"), max_size=8))
def test_thm_6_1_stnm_within_robust_stnm_within_all(query, events):
    """[SES] §1.3, §6.2, Thm 6.1: Γ_stnm ⊆ Γ_rstnm ⊆ Γ."""
    stnm, robust, every = (keys(query, events, strategy=s) for s in ("STNM", "ROBUST_STNM", "ALL"))
    assert stnm <= robust <= every


@settings(max_examples=40, deadline=None)
@given(unary_queries(max_depth=2), streams(max_size=8))
def test_strategies_choose_among_all_matches(query, events):
    """[CEL] §4: every strategy filters the ALL matches; NEXT and LAST keep at most one C per position
    (Lemma 1: ≤next and ≤last are total orders)."""
    every = keys(query, events)
    for strategy in ("STRICT", "NEXT", "LAST", "MAX"):
        chosen = cepkit.match(query, events, engine="reference", strategy=strategy)
        assert {m.key for m in chosen} <= every
        if strategy in ("NEXT", "LAST"):
            lasts = [p[-1] for p in chosen.positions()]
            assert len(lasts) == len(set(lasts))


@settings(max_examples=40, deadline=None)
@given(flat_seq_queries(), streams(max_size=8))
def test_scoping_preserves_meaning(query, events):
    """Writing the scoped tree back as text (conditions where they are evaluated) gives the same matches."""
    parsed = cepkit.parse(query)
    rewritten = pretty(replace(parsed.ast, pattern=parsed.scoped, where=None))
    assert keys(rewritten, events) == keys(query, events)


@settings(max_examples=40, deadline=None)
@given(unary_queries(max_depth=2, partition=False, strategies=("ALL", "STRICT", "NEXT")), streams(max_size=8))
def test_partition_by_is_evaluation_per_key(query, events):
    """docs/language.md §4 and §10.5: PARTITION BY id is the union of the query over each id's sub-stream, positions mapped back."""
    partitioned = keys(f"{query} PARTITION BY id", events)
    union = set()
    for key in {e["id"] for e in events}:
        positions = [k for k, e in enumerate(events) if e["id"] == key]
        for m in cepkit.match(query, [events[k] for k in positions], engine="reference"):
            bindings = {
                v: tuple(positions[i] for i in p) if isinstance(p, tuple) else positions[p]
                for v, p in m.bindings.items()
            }
            union.add(cepkit.Match(tuple(positions[i] for i in m.positions), bindings).key)
    assert partitioned == union


@settings(max_examples=40, deadline=None)
@given(unary_queries(max_depth=2), streams(max_size=8), st.sampled_from(["ANY", "PARTITION"]))
def test_consumption_keeps_a_subset_with_no_overlap_across_positions(query, events, policy):
    """CONSUME BY: the kept matches are ALL matches, and none uses a position at or before the last position of
    a kept match ending earlier (in the same partition for PARTITION)."""
    if policy == "PARTITION" and "PARTITION BY" not in query:
        query += " PARTITION BY id"
    kept = cepkit.match(f"{query} CONSUME BY {policy}", events, engine="reference")
    assert {m.key for m in kept} <= keys(query, events)
    for m in kept:
        for earlier in kept:
            same = policy == "ANY" or events[m.positions[0]]["id"] == events[earlier.positions[0]]["id"]
            if same and earlier.last < m.last:
                assert m.positions[0] > earlier.last
