"""Selection strategies (docs/language.md §5; [CEL] §4).

Each strategy filters the ALL matches; it sees windowed, filtered matches (docs/language.md §10.3):

- ``STRICT``: C is an interval of logical indices of the (sub-)stream; under PARTITION BY this is
  ``PARTITION_STRICT``.
- ``NEXT`` (CEL NXT), ``LAST``, ``MAX``: C is compared against every match C' with the same last position,
  whatever its bindings (CEL ⟦φ⟧(S) ranges over all valuations). NEXT keeps C when C ≤next C' for all
  of them, with C1 ≤next C2 iff C1 = C2 or min(C1 △ C2) ∈ C1 (Lemma 1: a total order, so at most one C
  per position); LAST the same with max(C1 △ C2) ∈ C1; MAX keeps C when no C' is a strict superset.
"""

from __future__ import annotations

from typing import Iterable

RANKED = ("NEXT", "LAST", "MAX")


def beats(strategy: str, rival: frozenset, c: frozenset) -> bool:
    """Whether ``rival`` (with the same last position as ``c``) makes ``strategy`` drop ``c``.

    >>> beats("NEXT", frozenset({1, 8}), frozenset({5, 8})), beats("LAST", frozenset({5, 8}), frozenset({1, 8}))
    (True, True)
    """
    if rival == c:
        return False
    if strategy == "MAX":
        return rival > c
    difference = rival ^ c
    return (min(difference) if strategy == "NEXT" else max(difference)) in rival


def rank_better(strategy: str, d, rivals: Iterable) -> list:
    """The rivals (derivations ending where ``d`` ends) that beat ``d`` under NEXT, LAST or MAX."""
    return [r for r in rivals if beats(strategy, r.positions, d.positions)]


def is_interval(positions: frozenset) -> bool:
    """STRICT contiguity: every index between the first and the last is used."""
    return max(positions) - min(positions) + 1 == len(positions)
