"""Continuous Sliding Views: the results of a sub-query kept between outer candidates ([CSV] §3-6).

An outer candidate asks a sub-query for its results strictly inside a *query interval* (QI), the
constrained window its neighbours give it (Def 1; here as logical indices ``lo < i < hi``). A view answers
with every result of the sub-query lying wholly inside the QI; the modes differ in what they keep:

- ``None``: nothing; every lookup recomputes (NEEL's iterative nested execution, [LIU] §5.1.4, which rebuilds inner results per outer candidate);
- ``"a"`` (A-CSV, [CSV] §4): one result list and a ``right_bound``: every result ending at or before it is
  present. A QI reaching further expands the view to the QI's end, computing each new end index over the
  widest interval any QI can ask for (twice the window back), so some results are never used ([CSV] Ex 4);
- ``"p"`` (P-CSV, [CSV] §5): *view intervals*, each (lo, hi) holding every result inside it. A lookup scans
  every VI overlapping the QI; a QI sticking out on the right of a VI extends it by the new end indices
  only; otherwise the QI is computed from scratch and becomes a VI. Each result is stored once, under the
  first VI that produced it;
- ``"b"`` (B-CSV, [CSV] §6): P-CSV's structure, but before an outer trigger's candidates are checked their QIs
  are merged into maximal intervals (hulls), and only those are computed (``prepare``); VIs never overlap.

Results are those of the sub-query's positive structure (closed conditions applied); what depends on the
outer candidate (its bindings, its own events, deeper negations) is checked per lookup by the validation,
so a cached result serves every candidate. All modes give the same matches (tested). Counters:
``lookups``, ``hits`` (answered with no computation), ``partial`` (a view extended by new end indices),
``full`` (computed from scratch), ``computed`` (end indices computed).
"""

from __future__ import annotations

from typing import Callable, Optional

CACHING_MODES = (None, "a", "p", "b")


class View:
    """No caching: every lookup computes its QI (``compute(end, start)`` -> results ending at ``end`` with
    first >= ``start``)."""

    def __init__(self, compute: Callable, floor: Callable):
        self.compute = compute
        self.floor = floor  # end index -> the smallest start any QI may need for results ending there
        self.stats = {"lookups": 0, "hits": 0, "partial": 0, "full": 0, "computed": 0}

    def _ends(self, lo: int, hi: int, start: int) -> list:
        out = []
        for end in range(lo + 1, hi):
            self.stats["computed"] += 1
            out += self.compute(end, start)
        return out

    def prepare(self, intervals) -> None:
        """The QIs an outer trigger will look up (used by B-CSV)."""

    def lookup(self, lo: int, hi: int) -> list:
        self.stats["lookups"] += 1
        self.stats["full"] += 1
        return self._ends(lo, hi, lo + 1)

    def purge(self, before: int) -> None:
        """Forget results that start before index ``before`` (no QI can reach them any more)."""

    def size(self) -> int:
        return 0


class AggressiveView(View):
    """A-CSV: ``right_bound`` and every result ending at or before it, by end index."""

    def __init__(self, compute, floor):
        super().__init__(compute, floor)
        self.right_bound = -1
        self.by_end: dict = {}

    def lookup(self, lo, hi):
        self.stats["lookups"] += 1
        if hi - 1 > self.right_bound:
            self.stats["partial"] += 1
            for end in range(self.right_bound + 1, hi):
                self.stats["computed"] += 1
                self.by_end[end] = self.compute(end, self.floor(end))
            self.right_bound = hi - 1
        else:
            self.stats["hits"] += 1
        return _inside(self.by_end, lo, hi, lo + 1)

    def purge(self, before):
        """Results ending before ``before`` start before it: no QI needs them, so the view is complete up to
        ``before - 1`` without them (and never computes them over events the sub-stream has dropped)."""
        self.by_end = {end: rs for end, rs in self.by_end.items() if end >= before}
        self.right_bound = max(self.right_bound, before - 1)

    def size(self):
        return sum(map(len, self.by_end.values()))


def _inside(by_end: dict, lo: int, hi: int, first_end: int):
    """The results of ``by_end`` strictly inside (lo, hi), ends from ``first_end`` on, lazily (a negation
    stops at its first witness)."""
    return (r for end in range(first_end, hi) for r in by_end.get(end, ()) if lo < r.first)


class ViewInterval:
    """P-CSV/B-CSV: every result with lo < first and last < hi is present (in this VI or an earlier one)."""

    __slots__ = ("lo", "hi", "by_end")

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi, self.by_end = lo, hi, {}

    def contains(self, lo, hi) -> bool:
        return self.lo <= lo and hi <= self.hi

    def overlaps(self, lo, hi) -> bool:
        return self.lo < hi and lo < self.hi

    @property
    def results(self) -> list:
        return [r for rs in self.by_end.values() for r in rs]


class PassiveView(View):
    """P-CSV: a list of view intervals; each result stored once (``seen``)."""

    def __init__(self, compute, floor):
        super().__init__(compute, floor)
        self.intervals: list = []
        self.seen: set = set()

    def _store(self, vi: ViewInterval, end: int, results) -> None:
        fresh = [r for r in results if r.key not in self.seen]
        self.seen.update(r.key for r in fresh)
        if fresh:
            vi.by_end.setdefault(end, []).extend(fresh)

    def _fill(self, vi: ViewInterval, ends, start: int) -> None:
        for end in ends:  # a result starting before floor(end) is in no QI (see ``floor``)
            self.stats["computed"] += 1
            self._store(vi, end, self.compute(end, max(start, self.floor(end))))

    def _materialize(self, lo: int, hi: int) -> bool:
        """Make (lo, hi) complete; True if nothing had to be computed."""
        if any(v.contains(lo, hi) for v in self.intervals):
            return True
        left = next((v for v in self.intervals if v.lo <= lo < v.hi < hi), None)
        if left is not None:  # sticks out on the right: compute the new end indices only
            self.stats["partial"] += 1
            self._fill(left, range(left.hi, hi), left.lo + 1)
            left.hi = hi
            return False
        self.stats["full"] += 1  # a left overhang cannot be patched (joins run right to left): from scratch
        vi = ViewInterval(lo, hi)
        self._fill(vi, range(lo + 1, hi), lo + 1)
        self.intervals.append(vi)
        return False

    def lookup(self, lo, hi):
        self.stats["lookups"] += 1
        if self._materialize(lo, hi):
            self.stats["hits"] += 1
        overlapping = [v for v in self.intervals if v.overlaps(lo, hi)]
        return (r for v in overlapping for r in _inside(v.by_end, lo, min(hi, v.hi), max(lo, v.lo) + 1))

    def purge(self, before):
        """Drop VIs wholly before ``before`` and, from the others, results starting before it: no later QI
        reaches them, so each VI stays complete from ``before - 1`` on (the purge [CSV] §5.4 leaves open)."""
        kept = []
        for v in self.intervals:
            old = [r for r in v.results if r.first < before]
            self.seen.difference_update(r.key for r in old)
            if v.hi > before:
                v.by_end = {end: [r for r in rs if r.first >= before] for end, rs in v.by_end.items() if end >= before}
                v.lo = max(v.lo, before - 1)
                kept.append(v)
        self.intervals = kept

    def size(self):
        return sum(len(v.results) for v in self.intervals)


class BalancedView(PassiveView):
    """B-CSV: the QIs of one outer trigger merged into hulls, each computed once before the lookups."""

    def prepare(self, intervals):
        hulls: list = []
        for lo, hi in sorted(intervals):
            if hulls and lo < hulls[-1][1]:
                hulls[-1][1] = max(hulls[-1][1], hi)
            else:
                hulls.append([lo, hi])
        for lo, hi in hulls:
            self._materialize(lo, hi)


def make_view(mode: Optional[str], compute: Callable, floor: Callable) -> View:
    if mode not in CACHING_MODES:
        raise ValueError(f"caching is one of 'a' (A-CSV), 'p' (P-CSV), 'b' (B-CSV) or None, not {mode!r}")
    return {None: View, "a": AggressiveView, "p": PassiveView, "b": BalancedView}[mode](compute, floor)
