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
  chapter 3 and ``g_take^skip`` in chapter 4 ([RCEP] §3.7.3, "Fix one convention in our code");
* the join runs compiled (``_region_join``, numba, as the recomputation kernel); an address that would
  not fit 62 bits drops each coordinate's low bits: the Z-order only groups points into regions, and a
  region's corners are still its members' bounding box, so the join stays exact.
"""

from __future__ import annotations

import numpy as np

from ..compiled import OP_CODES, jit, phi

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
    cuts = _cut_regions(np.asarray(distances, dtype=np.int64), capacity).tolist()
    return [list(range(a, b)) for a, b in zip(cuts, cuts[1:])]


@jit
def _cut_regions(distances, capacity):
    """``z_regions`` as the region starts, in Z-order, then the number of points (an explicit stack)."""
    n = len(distances) + 1
    cuts = np.empty(n + 1, dtype=np.int64)
    count = 0
    stack_lo, stack_hi = np.empty(n + 1, dtype=np.int64), np.empty(n + 1, dtype=np.int64)
    pieces = np.empty(n + 1, dtype=np.int64)
    stack_lo[0], stack_hi[0], top = 0, n, 1
    while top:
        top -= 1
        lo, hi = stack_lo[top], stack_hi[top]
        if hi - lo <= capacity:
            cuts[count] = lo
            count += 1
            continue
        gap = distances[lo]
        for i in range(lo, hi - 1):
            gap = min(gap, distances[i])
        pieces[0], k = lo, 1
        for i in range(lo, hi - 1):
            if distances[i] == gap:
                pieces[k] = i + 1
                k += 1
        pieces[k] = hi
        for p in range(k - 1, -1, -1):  # the first piece on top: the regions come out in Z-order
            stack_lo[top], stack_hi[top] = pieces[p], pieces[p + 1]
            top += 1
    cuts[count] = n
    return cuts[: count + 1]


def dominance(ops, lower, upper, other_lower, other_upper) -> str:
    """ "full" (Lemma 1: every pair of points of the two boxes joins), "none" (Lemma 2 fails on some
    dimension: no pair joins) or "partial", for ``r φ_k r'`` on each dimension k."""
    codes = np.array([OP_CODES[op] for op in ops], dtype=np.int64)
    boxes = [np.asarray(corner, dtype=np.float64) for corner in (lower, upper, other_lower, other_upper)]
    return ("none", "partial", "full")[_dominance(codes, *boxes)]


@jit
def _dominance(ops, lower, upper, other_lower, other_upper):
    """``dominance`` as 0 (none), 1 (partial) or 2 (full), φ as ``OP_CODES``."""
    full = True
    for k in range(len(ops)):
        op, lo, hi, other_lo, other_hi = ops[k], lower[k], upper[k], other_lower[k], other_upper[k]
        if op >= 4:  # = and !=: full only between two single values, none when they cannot meet
            single = lo == hi and other_lo == other_hi
            holds = single and phi(op, lo, other_lo)
            if op == 4 and not (lo <= other_hi and other_lo <= hi):
                return 0
            if op == 5 and single and not holds:
                return 0
            full = full and holds
        elif op <= 1:  # < <=: the best pair is r's min against r''s max, the worst r's max against its min
            if not phi(op, lo, other_hi):
                return 0
            full = full and phi(op, hi, other_lo)
        else:  # > >=: the other way round
            if not phi(op, hi, other_lo):
                return 0
            full = full and phi(op, lo, other_hi)
    return 2 if full else 1


@jit
def _regions(points, bits, capacity):
    """One side's points (rank-encoded, one row each) in Z-order and cut into Z-regions: (order, region
    starts then the number of points, each region's lower and upper corners). Addresses as
    ``interleave``, over the ``bits`` high bits of each coordinate that fit 62 bits together."""
    n, d = points.shape
    kept = min(bits, 62 // d)
    shift = bits - kept
    z = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for level in range(kept - 1, -1, -1):
            for k in range(d):
                z[i] = (z[i] << 1) | ((points[i, k] >> (level + shift)) & 1)
    order = np.argsort(z, kind="mergesort")
    distances = np.empty(max(n - 1, 0), dtype=np.int64)
    for i in range(n - 1):
        differ, length = z[order[i]] ^ z[order[i + 1]], 0
        while differ:
            differ >>= 1
            length += 1
        distances[i] = kept * d - length  # dis(): the leading bits the two addresses share
    cuts = _cut_regions(distances, capacity)
    lower = np.empty((len(cuts) - 1, d), dtype=np.int64)
    upper = np.empty((len(cuts) - 1, d), dtype=np.int64)
    for r in range(len(cuts) - 1):
        for k in range(d):
            lower[r, k], upper[r, k] = points[order[cuts[r]], k], points[order[cuts[r]], k]
        for i in range(cuts[r] + 1, cuts[r + 1]):
            for k in range(d):
                lower[r, k] = min(lower[r, k], points[order[i], k])
                upper[r, k] = max(upper[r, k], points[order[i], k])
    return order, cuts, lower, upper


@jit
def _narrow(block, key, column, op):
    """``block[j] &= φ(key, column[j])``: one branch-free loop per φ (the compiler vectorises it)."""
    if op == 0:
        for j in range(len(block)):
            block[j] &= key < column[j]
    elif op == 1:
        for j in range(len(block)):
            block[j] &= key <= column[j]
    elif op == 2:
        for j in range(len(block)):
            block[j] &= key > column[j]
    elif op == 3:
        for j in range(len(block)):
            block[j] &= key >= column[j]
    elif op == 4:
        for j in range(len(block)):
            block[j] &= key == column[j]
    else:
        for j in range(len(block)):
            block[j] &= key != column[j]


@jit
def _region_join(ops, outer, inner, bits, capacity):
    """Algorithm 4 over rank-encoded points (every row valid): (B, [full, partial, none, tested]). The
    inner points are copied in Z-order, one row per dimension, so that a partial block compares an outer
    point with a region's points in one loop per predicate."""
    joined = np.zeros((len(outer), len(inner)), dtype=np.bool_)
    counts = np.zeros(4, dtype=np.int64)
    outer_order, outer_cuts, outer_lower, outer_upper = _regions(outer, bits, capacity)
    inner_order, inner_cuts, inner_lower, inner_upper = _regions(inner, bits, capacity)
    d = len(ops)
    by_z = np.empty((d, len(inner)), dtype=np.int64)
    for j in range(len(inner)):
        for k in range(d):
            by_z[k, j] = inner[inner_order[j], k]
    block = np.empty(len(inner), dtype=np.bool_)
    for r in range(len(outer_cuts) - 1):
        for q in range(len(inner_cuts) - 1):
            kind = _dominance(ops, outer_lower[r], outer_upper[r], inner_lower[q], inner_upper[q])
            counts[2 - kind] += 1
            if kind == 0:
                continue
            lo, hi = inner_cuts[q], inner_cuts[q + 1]
            for i in range(outer_cuts[r], outer_cuts[r + 1]):
                u = outer_order[i]
                if kind == 2:  # setBits on the whole block
                    for j in range(lo, hi):
                        joined[u, inner_order[j]] = True
                    continue
                counts[3] += hi - lo
                tests = block[: hi - lo]
                tests[:] = True
                for k in range(d):
                    _narrow(tests, outer[u, k], by_z[k, lo:hi], ops[k])
                for j in range(hi - lo):
                    joined[u, inner_order[lo + j]] = tests[j]
    return joined, counts


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
    outer_rows, inner_rows = np.flatnonzero(outer_valid), np.flatnonzero(inner_valid)
    if not len(outer_rows) or not len(inner_rows):
        return np.zeros((n, m), dtype=bool)
    encoded = [rank_encode(outer[outer_rows, k], inner[inner_rows, k]) for k in range(len(ops))]
    found, counts = _region_join(
        np.array([OP_CODES[op] for op in ops], dtype=np.int64),
        np.stack([e[0] for e in encoded], axis=1).astype(np.int64),
        np.stack([e[1] for e in encoded], axis=1).astype(np.int64),
        max(e[2] for e in encoded),
        capacity,
    )
    for key, count in zip(("full", "partial", "none", "tested"), counts.tolist()):
        stats[key] += count
    if len(outer_rows) == n and len(inner_rows) == m:
        return found
    joined = np.zeros((n, m), dtype=bool)
    joined[np.ix_(outer_rows, inner_rows)] = found
    return joined
