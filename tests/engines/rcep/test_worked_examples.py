"""The worked examples of [RCEP] (Fig. 2.4, Examples 2-4, Table B.1) and its running queries (§3.2), on the
``rcep`` engine.

The Z-order bit helpers, Z-regions and region dominance (Examples 5-6) are in ``test_zorder.py``; chapters 4-6 belong to the
DEBS challenges, outside the engine.
"""

import numpy as np
import pytest

import cepkit
from cepkit.datasets import rcep_water
from cepkit.engines.rcep import RcepPlan
from cepkit.engines.rcep.joins import hybrid_join, kleene_subsets
from cepkit.runtime.stream import Stream

WATER = (
    "PATTERN SEQ(Water+ b, Water c) WHERE b[i].vol > b[i-1].vol and count(b) >= 3 and c.pres <= 1 "
    "WITHIN 10 PARTITION BY region"
)


def last_recomputation(query, events):
    """The batch of the last trigger after pushing ``events`` through an rcep matcher."""
    matcher = RcepPlan(cepkit.parse(query)).matcher()
    for event in Stream.from_any(events):
        matcher.push(event)
    return matcher.last_recomputation


def names(found, stream):
    return [tuple(stream["e"].iloc[list(p)]) for p in found.positions()]


@pytest.fixture(scope="module")
def water():
    return rcep_water()


@pytest.fixture(scope="module")
def water_all(water):
    return cepkit.match(WATER, water, engine="rcep")


def test_t1_water_skip_till_any_match(water, water_all):
    """[RCEP] Fig. 2.4, counted here: under the explicit reading (>= 3 rising volumes in one region, then an event with
    pressure <= 1, window inclusive) STA gives 240 matches: 16 closing at e7, 54 at e15, 170 at e20; and
    it finds e16, e17, e19, e20, which STN misses. One trigger per closing event, nothing else kept."""
    closing = [water["e"].iloc[m.last] for m in water_all]
    assert len(water_all) == 240
    assert (closing.count("e7"), closing.count("e15"), closing.count("e20")) == (16, 54, 170)
    assert ("e16", "e17", "e19", "e20") in names(water_all, water)
    assert water_all.engine == "rcep" and water_all.info["triggers"] == 3
    assert water_all == cepkit.match(WATER, water, engine="reference")


def test_t1_strict_window(water):
    """[RCEP] Fig. 2.4, counted here: with a strict "< 10" window (integer ts: WITHIN 9), 141 matches."""
    assert len(cepkit.match(WATER.replace("WITHIN 10", "WITHIN 9"), water, engine="rcep")) == 141


def test_t1_contiguity(water):
    """[RCEP] Fig. 2.4: SC = e3..e7 (e0 would start it but the r2 event e1 is between); PC = e0, e3..e7 (the text's
    "except e2" is a typo for e1) and e11..e15 (e10 breaks e8, e9)."""
    strict = names(
        cepkit.match(WATER.replace(" PARTITION BY region", ""), water, engine="rcep", strategy="STRICT"), water
    )
    assert ("e3", "e4", "e5", "e6", "e7") in strict and not any("e0" in m for m in strict)
    partitioned = names(cepkit.match(WATER, water, engine="rcep", strategy="PARTITION_STRICT"), water)
    assert ("e0", "e3", "e4", "e5", "e6", "e7") in partitioned
    assert ("e11", "e12", "e13", "e14", "e15") in partitioned
    assert not any({"e8", "e9"} <= set(m) for m in partitioned)


def test_t1_skip_till_next_match(water, water_all):
    """[RCEP] Fig. 2.4: STN treats e10 as noise (e8, e9, e11..e15); e18 = 401 blocks e19 = 400, so STN misses
    e16, e17, e19, e20, which STA finds; (derived here) e20 completes e16, e17, e18 under STN."""
    stnm = cepkit.match(WATER, water, engine="rcep", strategy="STNM")
    assert stnm == cepkit.match(WATER, water, engine="reference", strategy="STNM")
    found = names(stnm, water)
    assert ("e8", "e9", "e11", "e12", "e13", "e14", "e15") in found
    assert ("e16", "e17", "e19", "e20") not in found and ("e16", "e17", "e18", "e20") in found
    assert ("e16", "e17", "e19", "e20") in names(water_all, water)


def test_t2_range_queries_from_the_trigger():
    """[RCEP] Example 2: right-deep Q1, trigger c = (price 6, t 9), max price 18: b's range is [7, 18]
    (c.price < FIRST(b.price), b rising) and a's is [0, 17] (a.price < b.price, using max(b) = 18); the
    hits come out in time order."""
    q1 = (
        "SEQ(Stock a, Stock+ b, Stock c) WHERE a.price < b.price and prev(b.price) < b.price "
        "and c.price < first(b).price"
    )
    prices = [4, 10, 2, 18, 7, 6, 15, 17, 1, 6]
    candidates = last_recomputation(
        q1, [{"type": "Stock", "ts": t, "price": p} for t, p in enumerate(prices)]
    ).candidates()
    assert candidates["c"] == [9]
    assert candidates["b"] == [t for t in range(9) if 7 <= prices[t] <= 18] == [1, 3, 4, 6, 7]
    assert candidates["a"] == [t for t in range(7) if prices[t] <= 17] == [0, 1, 2, 4, 5, 6]


def test_t3_hybrid_join_trace():
    """[RCEP] Example 3 (values reconstructed): outer <(1,30) (2,25) (3,50) (4,40)>, inner <(5,22) (6,15) (7,21)>,
    φ = '>': (4,40) joins all three; (3,50) ⊢ (4,40): reuse; (2,25) does not dominate (3,50): rescan, joins
    all three; (1,30) ⊢ (2,25): reuse."""
    t = np.arange(1, 8)
    value = np.array([30.0, 25, 50, 40, 22, 15, 21])
    valid = np.ones(7, dtype=bool)
    joined, tested, reused, dominates = hybrid_join(">", (value[:4], valid[:4], t[:4]), (value[4:], valid[4:], t[4:]))
    assert joined.all()
    assert dominates.tolist() == [True, False, True, False]
    assert (tested, reused) == (6, 6)


def test_t3_the_thesis_bug_is_fixed():
    """docs/references.md E18: re-testing only up to the previous scan's start misses bits that fail for the
    successor but pass for the dominating event (φ = '>': e = 50, e'' = 40, inner 45)."""
    outer = (np.array([50.0, 40]), np.ones(2, dtype=bool), np.array([0, 1]))
    inner = (np.array([45.0]), np.ones(1, dtype=bool), np.array([2]))
    joined, _, _, dominates = hybrid_join(">", outer, inner)
    assert dominates[0] and joined[:, 0].tolist() == [True, False]


def test_t3_kleene_self_join_dag_and_chains():
    """[RCEP] Example 4: the self-join DAG (1,30)->{2,5,6,7}, (2,25)->{5,6,7}, (3,50)->{4,5,6,7},
    (4,40)->{5,6,7}, (5,22)->{6,7}; (derived here) 11 chains from (1,30) with at least one follower, 41 strictly
    decreasing non-empty subsequences (the DFS over chains has no duplicates to remove)."""
    stream = [
        {"type": "V", "ts": t, "value": v} for t, v in [(1, 30), (2, 25), (3, 50), (4, 40), (5, 22), (6, 15), (7, 21)]
    ]
    dag = last_recomputation("V+ b WHERE prev(b.value) > b.value", stream).dag("b")
    successors = {u + 1: sorted(v + 1 for v in dag.successors(u)) for u in dag.nodes if dag.out_degree(u)}
    assert successors == {1: [2, 5, 6, 7], 2: [5, 6, 7], 3: [4, 5, 6, 7], 4: [5, 6, 7], 5: [6, 7]}
    chains = "SEQ(V a, V+ b) WHERE a.ts = 1 and a.value > first(b).value and prev(b.value) > b.value"
    assert len(cepkit.match(chains, stream, engine="rcep")) == 11
    decreasing = cepkit.match("V+ b WHERE b[i].value < b[i-1].value", stream, engine="rcep")
    assert len(decreasing) == len(set(decreasing.positions())) == 41


def test_t3_t4_path_bitvector_and_bankers_table():
    """[RCEP] Example 4, Fig. B.1: the path bitvector 0100110 (bit = t) selects (2,25), (5,22), (6,15): 7 subsets; Table B.1
    over <b1, b2, b3> in counting order; Fig. B.1's 0100101 has 3 set bits, so 7 subsets too."""
    path = sum(1 << t for t in (2, 5, 6))
    assert list(kleene_subsets(path)) == [[6], [5], [5, 6], [2], [2, 6], [2, 5], [2, 5, 6]]
    table = [["b1", "b2", "b3"][k] for k in range(3)]
    assert [[table[k] for k in s] for s in kleene_subsets(0b111)] == [
        ["b3"],
        ["b2"],
        ["b2", "b3"],
        ["b1"],
        ["b1", "b3"],
        ["b1", "b2"],
        ["b1", "b2", "b3"],
    ]
    assert len(list(kleene_subsets(int("0100101", 2)))) == 7


def test_q2_credit_card_as_written():
    """[RCEP] §3.2 Q2 as written (∀ semantics): a big ``a`` followed by shrinking ``b``s, each
    at most a fifth of it."""
    query = (
        "PATTERN SEQ(Card a, Card+ b) WHERE a.amount >= b.amount * 5 and prev(b.amount) > b.amount "
        "WITHIN 30 min PARTITION BY cardID"
    )
    stream = [
        {"type": "Card", "ts": 60 * k, "cardID": card, "amount": amount}
        for k, (card, amount) in enumerate([(1, 500), (2, 900), (1, 90), (1, 80), (2, 100), (1, 95), (1, 70), (2, 150)])
    ]
    found = cepkit.match(query, stream, engine="rcep")
    assert found == cepkit.match(query, stream, engine="reference")
    assert (0, 2, 3, 6) in found.positions() and (0, 2, 5) not in found.positions()
    assert all(m.bindings["a"] in (0, 1) for m in found)


def test_q3_cardiac_with_a_constant_filter():
    """[RCEP] §3.2 Q3: a.rate*2 < b.rate for every b, rising rates, b passive, per person, 10 min."""
    query = (
        "PATTERN SEQ(Activity a, Activity+ b) WHERE a.rate * 2 < b.rate and b[i-1].rate < b[i].rate "
        "and b.kind = 'passive' WITHIN 10 min PARTITION BY personID"
    )
    stream = [
        {"type": "Activity", "ts": 30 * k, "personID": k % 2, "rate": rate, "kind": kind}
        for k, (rate, kind) in enumerate(
            [
                (40, "active"),
                (50, "active"),
                (90, "passive"),
                (95, "passive"),
                (100, "passive"),
                (99, "passive"),
                (120, "passive"),
                (130, "active"),
            ]
        )
    ]
    found = cepkit.match(query, stream, engine="rcep")
    assert len(found) > 0 and found == cepkit.match(query, stream, engine="reference")


def test_match_conditions_as_tightened_in_errata_e20():
    """docs/references.md E20: the thesis's condition 2 (each event of E_i has some later event in
    E_j) would let two Kleene variables interleave, and condition 3 bounds only adjacent gaps; here every
    event of a variable precedes every event of the next, and the whole match fits the window."""
    events = [{"type": t, "ts": ts} for t, ts in [("A", 0), ("B", 1), ("A", 2), ("B", 3)]]
    interleaved = cepkit.match("SEQ(A+ a, B+ b)", events, engine="rcep")
    assert (0, 1, 2, 3) not in interleaved.positions() and (0, 2, 3) in interleaved.positions()
    chain = [{"type": "A", "ts": 0}, {"type": "B", "ts": 4}, {"type": "C", "ts": 8}]
    assert cepkit.match("SEQ(A a, B b, C c) WITHIN 5", chain, engine="rcep").positions() == []  # gaps of 4 fit
    assert cepkit.match("SEQ(A a, B b, C c) WITHIN 8", chain, engine="rcep").positions() == [(0, 1, 2)]
