"""Multi-dimensional joins in Z-order: Z-addresses, Z-regions and the region-dominance batch join
([RCEP] §3.7.1-3.7.3: Def. 11, Lemmas 1-2, Theorem 1, Algorithm 4), with the bit helpers of [RCEP] §3.7 and §4.3.

When two variables are joined on several predicates at once (``a.price < b.price and a.vol > b.vol``),
each event is a point whose dimensions are its keys, plus its sequence number for the time order. Points
are sorted by their Z-address (the dimensions' bits interleaved, time first, so the order is time-major),
cut into *Z-regions* of points sharing an address prefix, and two regions are compared through their
corners: when every pair of points must join (Lemma 1) the whole block of bits is set at once; when none
can (Lemma 2 fails) the block is skipped; only the remaining blocks are joined pair by pair.

Choices (docs/rcep-engine.md):

* each dimension is rank-encoded first (dense ranks over both sides' values together): ranks keep every
  comparison ``< <= > >= = !=`` exactly and make all coordinates small non-negative integers, whatever the
  keys (floats, negative numbers);
* a region's corners are the per-dimension minimum and maximum of its members (its bounding box), which
  a prefix region's corners (prefix then 0s / 1s) contain: tighter, so more blocks are decided whole;
* one bit convention, ``extract(z, width, take, skip)``: the thesis writes it ``g_skip^take`` in
  chapter 3 and ``g_take^skip`` in chapter 4 ([RCEP] §3.7.3, "Fix one convention in our code").
"""

from __future__ import annotations

import numpy as np

from ...lang.values import COMPARE
from .keys import NUMPY_COMPARE

LEAF = 64
"""Points per Z-region at most (a leaf of the thesis's B+tree)."""

LEMMA_ONE = {
    "<": ("max", "min"),
    "<=": ("max", "min"),
    ">": ("min", "max"),
    ">=": ("min", "max"),
    "=": None,
    "!=": None,
}
"""φ -> (corner of r, corner of r') to test for full dominance (Lemma 1); Lemma 2 swaps the corners."""


def interleave(coordinates, bits: int) -> int:
    """The Z-address of a point: its coordinates' ``bits`` bits interleaved, the first dimension the most
    significant at every level ([RCEP] §3.7.2, ``Interleave(t, A_1, ...)``).

    >>> format(interleave((0b011, 0b000), 3), "06b"), format(interleave((0b011, 0b010), 3), "06b")
    ('001010', '001110')
    """
    z = 0
    for level in range(bits - 1, -1, -1):
        for x in coordinates:
            z = (z << 1) | ((int(x) >> level) & 1)
    return z


def dis(a: int, b: int, width: int) -> int:
    """``Dis(z_i, z_j)``: how many leading bits two ``width``-bit addresses share (also the MSB similarity
    ``h`` of Pi-CEP). [RCEP] §3.7 and §4.3:

    >>> dis(0b10110001, 0b10111010, 8), dis(0b011000, 0b011011, 6)
    (4, 4)
    """
    return width - (a ^ b).bit_length()


def extract(z: int, width: int, take: int, skip: int) -> int:
    """The bits of ``z`` (``width`` bits, from the most significant) read as: take ``take`` bits, skip
    ``skip`` bits, repeat. Chapter 3's ``g_2^1(110011) = 10`` is take 1, skip 2; chapter 4's
    ``g_2^1(101101) = 1010`` is take 2, skip 1 ([RCEP] §3.7 and §4.3):

    >>> format(extract(0b110011, 6, take=1, skip=2), "b"), format(extract(0b101101, 6, take=2, skip=1), "b")
    ('10', '1010')
    """
    out, position = 0, width
    while position > 0:
        for _ in range(min(take, position)):
            position -= 1
            out = (out << 1) | ((z >> position) & 1)
        position -= skip
    return out


def msb_less(a: int, b: int) -> bool:
    """``msb(a) < msb(b)`` without computing either (App. B.3): ``a < b and a < (a XOR b)``."""
    return a < b and a < (a ^ b)


def z_less(p, q) -> bool:
    """Whether point p comes before point q in Z-order, without interleaving (App. B.4, Algorithm 7): the
    dimension whose XOR has the highest set bit decides (the earlier dimension on a tie).

    >>> z_less((0b011, 0b000), (0b011, 0b010))     # 001010 < 001110 ([RCEP] §3.7 and §4.3)
    True
    """
    deciding, highest = 0, 0
    for k, (x, y) in enumerate(zip(p, q)):
        if msb_less(highest, x ^ y):
            deciding, highest = k, x ^ y
    return p[deciding] < q[deciding]


def z_regions(distances, capacity: int) -> list:
    """Z-regions of points sorted in Z-order, from the ``Dis`` of each point with the next ([RCEP] §3.7.2): a run
    of more than ``capacity`` points (a leaf) is cut wherever neighbours share the fewest leading bits
    (the thesis splits a full leaf at its largest gap), and each part again until all fit. Returns lists
    of indices. [RCEP] Example 5, leaves of three:

    >>> z_regions([0, 2, 2, 0, 2, 2, 1, 3, 3], capacity=3)
    [[0], [1, 2, 3], [4, 5, 6], [7, 8, 9]]
    """

    def split(lo: int, hi: int) -> list:  # points lo..hi-1; distances[i] is between i and i+1
        if hi - lo <= capacity:
            return [list(range(lo, hi))]
        gap = min(distances[lo : hi - 1])
        cuts = [lo] + [i + 1 for i in range(lo, hi - 1) if distances[i] == gap] + [hi]
        return [region for a, b in zip(cuts, cuts[1:]) for region in split(a, b)]

    return split(0, len(distances) + 1)


def dominance(ops, lower, upper, other_lower, other_upper) -> str:
    """ "full" (Lemma 1: every pair of points of the two boxes joins), "none" (Lemma 2 fails on some
    dimension: no pair joins) or "partial", for ``r φ_k r'`` on each dimension k."""
    full = True
    for k, op in enumerate(ops):
        compare = COMPARE[op]
        corners = {"min": lower[k], "max": upper[k]}, {"min": other_lower[k], "max": other_upper[k]}
        if op in ("=", "!="):
            single = lower[k] == upper[k] and other_lower[k] == other_upper[k]
            overlap = lower[k] <= other_upper[k] and other_lower[k] <= upper[k]
            holds = single and compare(lower[k], other_lower[k])
            if op == "=" and not overlap:
                return "none"
            if op == "!=" and single and not holds:
                return "none"
            full = full and holds
            continue
        mine, theirs = LEMMA_ONE[op]
        if not compare(corners[0][theirs], corners[1][mine]):  # Lemma 2 fails: even the best pair fails
            return "none"
        full = full and bool(compare(corners[0][mine], corners[1][theirs]))
    return "full" if full else "partial"


def z_addresses(points: np.ndarray, bits: int) -> list:
    """``interleave`` of every row of an integer array, vectorised while the address fits 62 bits."""
    if bits * points.shape[1] > 62:
        return [interleave(p, bits) for p in points]
    z = np.zeros(len(points), dtype=np.int64)
    for level in range(bits - 1, -1, -1):
        for k in range(points.shape[1]):
            z = (z << 1) | ((points[:, k] >> level) & 1)
    return z.tolist()


def rank_encode(outer: np.ndarray, inner: np.ndarray) -> tuple:
    """Dense ranks of both sides' values of one dimension, together: comparisons are kept exactly."""
    values, ranks = np.unique(np.concatenate([outer, inner]), return_inverse=True)
    return ranks[: len(outer)], ranks[len(outer) :], max(1, int(len(values) - 1).bit_length())


def region_join(
    ops,
    outer: np.ndarray,
    outer_valid: np.ndarray,
    inner: np.ndarray,
    inner_valid: np.ndarray,
    stats: dict = None,
    capacity: int = LEAF,
) -> np.ndarray:
    """Algorithm 4: B[u, v] = every ``outer[u, k] ops[k] inner[v, k]`` (points as rows, one column per
    dimension, numbers; a row with a null never joins), over Z-regions of at most ``capacity`` points.
    ``stats`` (if given) counts region pairs "full", "partial", "none" and the pairs "tested" one by one.

    >>> ops = ("<", ">")     # a.price < b.price and a.time > b.time
    >>> a = np.array([[1., 9], [2, 8], [9, 1]]); b = np.array([[5., 5], [6, 4]])
    >>> region_join(ops, a, np.ones(3, bool), b, np.ones(2, bool)).astype(int).tolist()
    [[1, 1], [1, 1], [0, 0]]
    """
    stats = stats if stats is not None else {}
    for key in ("full", "partial", "none", "tested"):
        stats.setdefault(key, 0)
    n, m = len(outer), len(inner)
    joined = np.zeros((n, m), dtype=bool)
    outer_rows, inner_rows = np.flatnonzero(outer_valid), np.flatnonzero(inner_valid)
    if not len(outer_rows) or not len(inner_rows):
        return joined
    encoded = [rank_encode(outer[outer_rows, k], inner[inner_rows, k]) for k in range(len(ops))]
    bits = max(e[2] for e in encoded)
    width = bits * len(ops)
    sides = []
    for rows, index in ((outer_rows, 0), (inner_rows, 1)):
        points = np.stack([e[index] for e in encoded], axis=1).astype(np.int64)
        z = z_addresses(points, bits)
        order = sorted(range(len(rows)), key=z.__getitem__)
        distances = [dis(z[a], z[b], width) for a, b in zip(order, order[1:])]
        regions = [np.array([order[i] for i in region]) for region in z_regions(distances, capacity)]
        sides.append(
            [(rows[r], points[r].min(axis=0).tolist(), points[r].max(axis=0).tolist(), points[r]) for r in regions]
        )
    for rows, lower, upper, points in sides[0]:
        for other_rows, other_lower, other_upper, other_points in sides[1]:
            kind = dominance(ops, lower, upper, other_lower, other_upper)
            stats[kind] += 1
            if kind == "full":
                joined[np.ix_(rows, other_rows)] = True  # setBits on the whole block
            elif kind == "partial":
                block = np.ones((len(rows), len(other_rows)), dtype=bool)
                for k, op in enumerate(ops):
                    block &= NUMPY_COMPARE[op](points[:, k][:, None], other_points[:, k][None, :])
                joined[np.ix_(rows, other_rows)] = block
                stats["tested"] += block.size
    return joined
