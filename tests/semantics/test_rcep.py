"""RCEP's worked examples ([RCEP] Fig. 2.4, Examples 3-4) and Kleene conditions / aggregates (docs/language.md §3)."""

import pytest

import cepkit
from cepkit.datasets import rcep_water

WATER = (
    "PATTERN SEQ(Water+ b, Water c) WHERE b[i].vol > b[i-1].vol and count(b) >= 3 and c.pres <= 1 "
    "WITHIN 10 PARTITION BY region"
)


@pytest.fixture(scope="module")
def water_all():
    return cepkit.match(WATER, rcep_water(), engine="reference")


def names(found, stream):
    return [tuple(stream["e"].iloc[list(p)]) for p in found.positions()]


def test_water_skip_till_any_match_count(water_all):
    """[RCEP] Fig. 2.4, counted here: under the explicit reading (Kleene part >= 3 rising in one region, a closing
    event with pressure <= 1 after it, window inclusive), 240 matches: 16 closing at e7, 54 at e15, 170 at e20."""
    stream = rcep_water()
    closing = [stream["e"].iloc[m.last] for m in water_all]
    assert len(water_all) == 240
    assert (closing.count("e7"), closing.count("e15"), closing.count("e20")) == (16, 54, 170)


def test_water_strict_window_count():
    """[RCEP] Fig. 2.4, counted here: with a strict "< 10" window (integer ts: WITHIN 9), 141 matches."""
    assert len(cepkit.match(WATER.replace("WITHIN 10", "WITHIN 9"), rcep_water(), engine="reference")) == 141


def test_water_contiguity():
    """[RCEP] Fig. 2.4: SC = e3..e7 (e0 would start it but the r2 event e1 is between); PC = e0, e3..e7 and
    e11..e15 (e10 breaks e8, e9)."""
    stream = rcep_water()
    strict = names(
        cepkit.match(WATER.replace(" PARTITION BY region", ""), stream, engine="reference", strategy="STRICT"), stream
    )
    assert ("e3", "e4", "e5", "e6", "e7") in strict and not any("e0" in m for m in strict)
    partitioned = names(cepkit.match(WATER, stream, engine="reference", strategy="PARTITION_STRICT"), stream)
    assert ("e0", "e3", "e4", "e5", "e6", "e7") in partitioned
    assert ("e11", "e12", "e13", "e14", "e15") in partitioned
    assert not any({"e8", "e9"} <= set(m) for m in partitioned)


def test_water_skip_till_next_match(water_all):
    """[RCEP] Fig. 2.4: STN treats e10 as noise (e8, e9, e11..e15); e18 = 401 blocks e19 = 400, so STN misses
    e16, e17, e19, e20, which STA finds; (derived here) e20 completes e16, e17, e18 under STN."""
    stream = rcep_water()
    stnm = names(cepkit.match(WATER, stream, engine="reference", strategy="STNM"), stream)
    assert ("e8", "e9", "e11", "e12", "e13", "e14", "e15") in stnm
    assert ("e16", "e17", "e19", "e20") not in stnm and ("e16", "e17", "e18", "e20") in stnm
    assert ("e16", "e17", "e19", "e20") in names(water_all, stream)


def test_kleene_chains_of_the_hybrid_join_example(reference):
    """[RCEP] Examples 3-4 (values reconstructed): over (1,30) (2,25) (3,50) (4,40) (5,22) (6,15) (7,21), 11 decreasing chains
    start at (1,30) with at least one follower, and 41 strictly decreasing non-empty subsequences exist."""
    stream = [
        {"type": "V", "ts": t, "value": v} for t, v in [(1, 30), (2, 25), (3, 50), (4, 40), (5, 22), (6, 15), (7, 21)]
    ]
    chains = "SEQ(V a, V+ b) WHERE a.ts = 1 and a.value > first(b).value and prev(b.value) > b.value"
    assert len(reference(chains, stream)) == 11
    assert len(reference("V+ b WHERE b[i].value < b[i-1].value", stream)) == 41


def test_credit_card_query_q2(reference):
    """[RCEP] §3.2 Q2 as written (∀ semantics): a big ``a`` followed by shrinking ``b``s each at most a fifth
    of it: a.amount >= b.amount * 5 and b.amount > NEXT(b.amount)."""
    query = (
        "PATTERN SEQ(Card a, Card+ b) WHERE a.amount >= b.amount * 5 and prev(b.amount) > b.amount "
        "WITHIN 30 min PARTITION BY cardID"
    )
    stream = [
        {"type": "Card", "ts": 60 * k, "cardID": 1, "amount": amount} for k, amount in enumerate([500, 90, 80, 95, 70])
    ]
    found = reference(query, stream)
    assert len(found) == 9 and all(p[0] == 0 for p in found)  # only 500 is five times every follower
    assert (0, 1, 2, 4) in found and (0, 1, 3) not in found  # 90 > 80 > 70; 90 < 95 breaks the chain


def test_aggregates_first_and_indexed_access(reference, events):
    """docs/language.md §3 and §9: b[i] / b[i-1] on consecutive pairs, avg over the iteration, first/last/b[k]."""
    stream = events("A0 B1 B2 B3 C4", price=[10, 8, 12, 15, 0])
    rising = "SEQ(A a, B+ b, C c) WHERE b[i].price > b[i-1].price and avg(b.price) > a.price"
    assert reference(rising, stream) == [(0, 1, 2, 3, 4), (0, 1, 3, 4), (0, 2, 3, 4), (0, 2, 4), (0, 3, 4)]
    assert reference("SEQ(A a, B+ b, C c) WHERE count(b) = 2 and last(b).price = 15 and b[1].price < 10", stream) == [
        (0, 1, 3, 4)
    ]
    assert reference(
        "SEQ(A a, B+ b, C c) WHERE sum(b.price) = 35 and min(b.price) = 8 and max(b.price) = 15", stream
    ) == [(0, 1, 2, 3, 4)]


def test_each_comparison_is_quantified_on_its_own(reference, events):
    """docs/language.md §10.6: ``b.v > 5 or b.v < 2`` means all above 5, or all below 2."""
    stream = events("B0 B1", v=[9, 1])
    assert reference("B+ b WHERE b.v > 5 or b.v < 2", stream) == [(0,), (1,)]
    assert reference("(B b FILTER b.v > 5 or b.v < 2)+", stream) == [(0,), (0, 1), (1,)]
