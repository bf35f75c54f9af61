"""Joins into bitvectors: the hybrid join ([RCEP] §3.6.2, Algorithm 2, Algorithm 2) and the nested-loop join it is
measured against (NLJoin, [RCEP] §3.8), plus the bit helpers of the enumeration.

A join of an outer sequence E_i (earlier events) with an inner sequence E_j, both in time order, under
``outer φ inner`` gives one bitvector B_u per outer event u: bit v is set iff inner v comes after u and
φ(u.A, v.A). In the hybrid join, when u *dominates* its successor u+1 in E_i (φ(u.A, (u+1).A), φ
transitive), every inner event joined with u+1 also joins with u (Def. 10): B_u starts as a copy of
B_(u+1) and only the other bits are tested. This is Algorithm 2 corrected (docs/references.md E18): the thesis limits
the re-test to ``v <= start``, which misses bits that fail for u+1 but pass for u (docs/references.md E18).

The kernels run compiled by numba when it is installed (the ``fast`` extra) and as plain Python
otherwise; the same function either way. Keys that are not numbers (strings) take the nested-loop join
with the language's comparison, value by value.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from ..compiled import OP_CODES, jit, phi
from .keys import compare_arrays

TRANSITIVE = frozenset({"<", "<=", ">", ">=", "="})  # φ for which dominance carries over (Def. 10)


@jit
def _hybrid_kernel(outer_keys, outer_valid, outer_seq, inner_keys, inner_valid, inner_seq, op, transitive):
    n, m = len(outer_keys), len(inner_keys)
    joined = np.empty((n, m), dtype=np.bool_)  # hybrid_into clears both
    dominates = np.empty(n, dtype=np.bool_)
    tested, reused = hybrid_into(
        joined, dominates, outer_keys, outer_valid, outer_seq, inner_keys, inner_valid, inner_seq, op, transitive
    )
    return joined, tested, reused, dominates


@jit
def _compare_row(row, key, inner_keys, inner_valid, start, op):
    """``row[v]`` = inner v valid and φ(key, its key) for v from ``start`` on, False before; one loop per φ
    from index 0 of views (no branch inside and a loop from 0, so the compiler vectorises it: a loop from a
    variable start is not, ~8x slower); the comparisons made."""
    row[:start] = False
    out, keys, valid = row[start:], inner_keys[start:], inner_valid[start:]
    if op == 0:
        for v in range(len(out)):
            out[v] = valid[v] & (key < keys[v])
    elif op == 1:
        for v in range(len(out)):
            out[v] = valid[v] & (key <= keys[v])
    elif op == 2:
        for v in range(len(out)):
            out[v] = valid[v] & (key > keys[v])
    elif op == 3:
        for v in range(len(out)):
            out[v] = valid[v] & (key >= keys[v])
    elif op == 4:
        for v in range(len(out)):
            out[v] = valid[v] & (key == keys[v])
    else:
        for v in range(len(out)):
            out[v] = valid[v] & (key != keys[v])
    tested = 0
    for v in range(len(out)):
        tested += valid[v]
    return tested


@jit
def _reuse_row(row, successor, key, inner_keys, inner_valid, start, op):
    """``row`` from the row of a dominated successor (Def. 10): its bits kept, the others compared, for v
    from ``start`` on (False before, as in the successor); branch-free loops from 0 as ``_compare_row``
    (a set bit costs its copy, the others their test). Returns (tested, reused)."""
    row[:start] = False
    out, kept, keys, valid = row[start:], successor[start:], inner_keys[start:], inner_valid[start:]
    if op == 0:
        for v in range(len(out)):
            out[v] = kept[v] | (valid[v] & (key < keys[v]))
    elif op == 1:
        for v in range(len(out)):
            out[v] = kept[v] | (valid[v] & (key <= keys[v]))
    elif op == 2:
        for v in range(len(out)):
            out[v] = kept[v] | (valid[v] & (key > keys[v]))
    elif op == 3:
        for v in range(len(out)):
            out[v] = kept[v] | (valid[v] & (key >= keys[v]))
    else:
        for v in range(len(out)):
            out[v] = kept[v] | (valid[v] & (key == keys[v]))
    reused, tested = 0, 0
    for v in range(len(out)):
        reused += kept[v]
        tested += valid[v]
    return tested - reused, reused


@jit
def hybrid_into(
    joined, dominates, outer_keys, outer_valid, outer_seq, inner_keys, inner_valid, inner_seq, op, transitive
):
    """Algorithm 2 into ``joined`` (n x m) and ``dominates`` (n), every cell written: (tested, reused).
    Both sides in time order; each row compares the inner events after its outer event, from the first
    one (a binary search: the merge-style scan's stopping point), and a row that dominates its successor
    keeps the successor's bits instead of testing them. The recomputation kernel passes views of its
    scratch buffers (no allocation per trigger)."""
    n, m = len(outer_keys), len(inner_keys)
    dominates[:] = False
    tested = 0
    reused = 0
    for u in range(n - 1, -1, -1):
        if not outer_valid[u]:
            joined[u, :] = False  # a null key joins nothing
            continue
        lo, hi = 0, m  # the first inner event after u
        while lo < hi:
            mid = (lo + hi) // 2
            if inner_seq[mid] <= outer_seq[u]:
                lo = mid + 1
            else:
                hi = mid
        if (
            transitive and u < n - 1 and outer_valid[u + 1] and phi(op, outer_keys[u], outer_keys[u + 1])
        ):  # u dominates its successor: every inner event joining u + 1 (all after u) joins u
            dominates[u] = True
            more, copied = _reuse_row(joined[u], joined[u + 1], outer_keys[u], inner_keys, inner_valid, lo, op)
            tested += more
            reused += copied
        else:
            tested += _compare_row(joined[u], outer_keys[u], inner_keys, inner_valid, lo, op)
    return tested, reused


def hybrid_join(op: str, outer: tuple, inner: tuple, blame=None) -> tuple:
    """Algorithm 2: (B, tested, reused, dominates) with ``B[u, v]`` = inner v after outer u and φ(u, v).

    ``outer`` and ``inner`` are (keys, valid, seq) arrays in time order; ``tested`` counts comparisons
    made, ``reused`` bits copied from a dominated successor, ``dominates[u]`` tells whether row u was
    built from row u+1; ``blame`` as in ``nested_join``. [RCEP] Examples 3-4 (values reconstructed):

    >>> seq = np.arange(1, 8)
    >>> values = np.array([30., 25, 50, 40, 22, 15, 21]); valid = np.ones(7, bool)
    >>> B, tested, reused, dominates = hybrid_join(">", (values[:4], valid[:4], seq[:4]),
    ...                                             (values[4:], valid[4:], seq[4:]))
    >>> B.astype(int).tolist(), tested, reused, dominates.tolist()
    ([[1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1]], 6, 6, [True, False, True, False])
    """
    keys, valid, seq = outer
    inner_keys, inner_valid, inner_seq = inner
    if keys.dtype == object or inner_keys.dtype == object:
        return nested_join(op, outer, inner, blame)
    return _hybrid_kernel(
        keys.astype(np.float64),
        valid,
        seq,
        inner_keys.astype(np.float64),
        inner_valid,
        inner_seq,
        OP_CODES[op],
        op in TRANSITIVE,
    )


def nested_join(op: str, outer: tuple, inner: tuple, blame=None) -> tuple:
    """NLJoin, the baseline of [RCEP] §3.8: every pair compared (vectorised); same result as ``hybrid_join``.
    ``blame((u, v))`` names (position, attribute) for values that cannot be compared."""
    keys, valid, seq = outer
    inner_keys, inner_valid, inner_seq = inner
    after = inner_seq[None, :] > seq[:, None]
    joined = compare_arrays(op, keys[:, None], valid[:, None], inner_keys[None, :], inner_valid[None, :], blame) & after
    return joined, int(after.sum()), 0, np.zeros(len(keys), dtype=bool)


def column_bits(matrix: np.ndarray) -> list:
    """For each column v of a boolean matrix, the int whose bit u is ``matrix[u, v]``.

    >>> column_bits(np.array([[1, 0], [1, 1]], dtype=bool))
    [3, 2]
    """
    if matrix.shape[0] == 0:
        return [0] * matrix.shape[1]
    packed = np.packbits(matrix.T, axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def kleene_subsets(mask: int) -> Iterator[list]:
    """Algorithm 3 (App. B.1): every non-empty subset of the set bits of ``mask``, in time order, by
    counting i = 1 .. 2^b - 1; bit j of i selects the j-th set bit from the latest. [RCEP] Table B.1
    (Table B.1, over <b1, b2, b3>):

    >>> [[("b1", "b2", "b3")[k] for k in subset] for subset in kleene_subsets(0b111)]
    [['b3'], ['b2'], ['b2', 'b3'], ['b1'], ['b1', 'b3'], ['b1', 'b2'], ['b1', 'b2', 'b3']]
    """
    members = list(bits(mask))[::-1]  # latest first: bit 0 of the counter selects the latest event
    for i in range(1, 1 << len(members)):
        yield sorted(members[j] for j in bits(i))


def bits(mask: int) -> Iterator[int]:
    """The set bits of ``mask``, lowest first (Algorithm 3's NextSetBit).

    >>> list(bits(0b101100))
    [2, 3, 5]
    """
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low
