"""Z-order helpers and the region-dominance join ([RCEP] §3.7, §4.3, Examples 5-6)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cepkit.engines.rcep.zorder import dis, dominance, extract, interleave, region_join, z_regions, z_less
from cepkit.lang.values import COMPARE

OPS = ["<", "<=", ">", ">=", "=", "!="]


def test_t5_bit_helpers():
    """[RCEP] §3.7 and §4.3: Dis(10110001, 10111010) = 4; chapter 3's g_2^1(110011) = 10 (take 1, skip 2); chapter 4's
    g_2^1(101101) = 1010 (take 2, skip 1); h(011000, 011011) = 4; 001010 < 001110 compared without
    interleaving (App. B.4)."""
    assert dis(0b10110001, 0b10111010, 8) == 4
    assert extract(0b110011, 6, take=1, skip=2) == 0b10
    assert extract(0b101101, 6, take=2, skip=1) == 0b1010
    assert dis(0b011000, 0b011011, 6) == 4
    first, second = (0b011, 0b000), (0b011, 0b010)  # the two points of 001010 and 001110
    assert (interleave(first, 3), interleave(second, 3)) == (0b001010, 0b001110)
    assert z_less(first, second) and not z_less(second, first)


def test_t6_z_region_scan():
    """[RCEP] Example 5: Dis z1-z2 = 0, z2-z3 = 2, z4-z5 = 0, z5-z6 = z6-z7 = 2 (the others lost, chosen
    consistently), leaves of three: regions {z1}, {z2, z3, z4}, {z5, z6, z7}, {z8, z9, z10}; every point
    in exactly one region, in Z-order."""
    distances = [0, 2, 2, 0, 2, 2, 1, 3, 3]
    assert z_regions(distances, capacity=3) == [[0], [1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert z_regions(distances, capacity=10) == [list(range(10))]
    assert [i for region in z_regions(distances, capacity=1) for i in region] == list(range(10))


def test_t7_region_dominance():
    """[RCEP] Example 6 (synthetic boxes): a.price < b.price and a.time > b.time; r3 dominates r2 fully
    (lower prices, later times); r3 ~ r4 and r1 ~ r4 only partially; r2 against r1 not at all."""
    ops = ("<", ">")
    box = {"r1": ((10, 0), (30, 20)), "r2": ((50, 0), (60, 10)), "r3": ((20, 40), (40, 50)), "r4": ((25, 15), (70, 45))}
    assert dominance(ops, *box["r3"], *box["r2"]) == "full"
    assert dominance(ops, *box["r3"], *box["r4"]) == "partial"
    assert dominance(ops, *box["r1"], *box["r4"]) == "partial"
    assert dominance(ops, *box["r2"], *box["r1"]) == "none"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 63), st.integers(0, 63), st.integers(0, 63)), min_size=2, max_size=2))
def test_z_less_is_the_order_of_interleaved_addresses(points):
    p, q = points
    assert z_less(p, q) == (interleave(p, 6) < interleave(q, 6))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(OPS), min_size=1, max_size=3), st.data())
def test_region_join_is_the_pairwise_join(ops, data):
    """Theorem 1: setting full blocks, skipping dominated-out blocks and joining the rest pair by pair gives
    exactly the pairwise join, on any values (negative, fractional, repeated, null)."""
    d = len(ops)
    values = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.5]))
    outer = np.array(data.draw(st.lists(st.lists(values, min_size=d, max_size=d), min_size=1, max_size=12)), float)
    inner = np.array(data.draw(st.lists(st.lists(values, min_size=d, max_size=d), min_size=1, max_size=12)), float)
    outer_valid = np.array(data.draw(st.lists(st.booleans(), min_size=len(outer), max_size=len(outer))))
    inner_valid = np.ones(len(inner), dtype=bool)
    stats = {}
    capacity = data.draw(st.sampled_from([1, 2, 4, 64]))
    joined = region_join(tuple(ops), outer, outer_valid, inner, inner_valid, stats, capacity)
    expected = outer_valid[:, None] & inner_valid[None, :]
    for k, op in enumerate(ops):
        expected &= COMPARE[op](outer[:, k][:, None], inner[:, k][None, :])
    assert (joined == expected).all()
    assert stats["tested"] <= expected.size


def test_dominated_data_is_decided_by_blocks():
    """[RCEP] §3.7.3 cost: on dominated data (every a below every b, and earlier) whole blocks are set at once and no
    pair is tested one by one."""
    outer = np.array([[t, p] for t, p in zip(range(0, 40), range(100, 140))], float)
    inner = np.array([[t, p] for t, p in zip(range(64, 104), range(500, 540))], float)
    stats = {}
    joined = region_join(("<", "<"), outer, np.ones(40, bool), inner, np.ones(40, bool), stats)
    assert joined.all() and stats["tested"] == 0 and stats["full"] > 0
