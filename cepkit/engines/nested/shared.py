"""Shared execution: the whole query's matches as columns, built once per sub-stream ([LIU] §5.3).

Nested iterative execution builds each outer candidate and then asks each sub-query about it ([LIU] §5.1.4:
P1, candidates built and thrown away; P2, inner results rebuilt per candidate). Shared execution turns
both around when the query's top is a SEQ of single events (or an OR of such SEQs: a normal form's
disjuncts), each ``!``/``EXISTS`` a sub-query with a summary (``summaries``):

- every sub-query is computed once for the sub-stream (its ``reach`` column), whatever the candidates;
- the SEQ is built **right to left** as numpy columns ([LIU] §5.3, Ex 28's suffix clustering): the rows
  start at the last item's events, and each step joins the previous item's events that fit the window
  and the gap, where a gap's ``!X`` / ``EXISTS X`` is a bound on the row (``j >= reach_X[next - 1]`` /
  ``j < reach_X[next - 1]``), so a candidate the gap rules out is never built;
- SEQs that share a suffix (the same items and gaps from some item to the end, as the disjuncts of a
  normal form often do) build it once: the partial columns are kept per suffix and fanned out to each;
- a ``!``/``EXISTS`` before the first or after the last item is checked on the finished rows against the
  window scope (docs/language.md §10.4), again from its ``reach`` column; conditions on several of the
  SEQ's variables are checked per row.

The result is a ``MatchArrays``: no ``Match`` object is made unless someone reads one.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...lang import ast as A
from ...lang.values import NotVectorizable, condition_values
from ...lang.window import first_fitting_all, past_fitting_all
from ...runtime.match_arrays import AT_LAST, MatchArrays
from ...semantics.conditions import holds
from .operators import Select, WinOr, WinSeq
from .summaries import Region, _variable


def top_branches(root, shared: dict) -> tuple:
    """([(SEQ, conditions)], None) when the query can run shared: an OR (or one) of SEQs of single events,
    each under closed conditions, every ``!``/``EXISTS`` over a sub-query with a summary; else (None, why)."""
    out = []
    for op in root.branches if isinstance(root, WinOr) else (root,):
        conds = []
        while isinstance(op, Select) and op.closed:
            conds.append(op.cond)
            op = op.child
        if not isinstance(op, WinSeq):
            return None, "its top is not a SEQ (or an OR of SEQs)"
        if any(_variable(p) is False for p in op.parts):
            return None, "a positive item of its SEQ is not a single event"
        for b in op.booleans:
            refs = shared[b.sub].refs
            if refs is None:
                return None, (
                    "a !/EXISTS sub-query's results depend on their scope or the candidate (an edge "
                    "!/EXISTS or an AND's inside it)"
                )
            if refs:
                return None, (
                    f"a !/EXISTS sub-query is correlated ({', '.join(f'{r.var}.{r.attr}' for r in refs)}): "
                    "it is decorrelated per candidate value instead"
                )
        out.append((op, tuple(conds)))
    return out, None


class SharedRun:
    """One sub-stream's shared execution (its events all known: a batch run)."""

    def __init__(self, part):
        self.part = part
        run = part.run
        n = part.n
        self.n = n
        self.region = Region(part, 0, n)
        self.times = np.asarray(part.times.items, np.float64)
        self.index = np.arange(n, dtype=np.int64)
        w = run.window
        if w is None:
            self.earliest = np.zeros(n, np.int64)
        elif w.events:
            self.earliest = np.maximum(0, np.floor(self.index - w.amount).astype(np.int64) + 1)
        else:
            self.earliest = first_fitting_all(self.times, self.times, w.seconds)
        if w is None:
            self.latest = np.full(n, n - 1, np.int64)
        elif w.events:
            self.latest = np.minimum(n - 1, np.ceil(self.index + w.amount).astype(np.int64) - 1)
        else:
            self.latest = past_fitting_all(self.times, self.times, w.seconds) - 1
        self.reaches: dict = {}
        self.built: dict = {}  # (direction, items, gaps) -> columns: shared by SEQs with that suffix/prefix
        self.stats = {"shared_hits": 0, "rows_built": 0}

    def reach_before(self, sub, hi: np.ndarray) -> np.ndarray:
        """The latest first index of a witness of ``sub`` ending before each ``hi`` (-1: none)."""
        if sub not in self.reaches:
            summary = self.part.summary(sub, {})
            summary.latest(self.n, -1)  # covers every end index
            column = np.full(self.n + 1, -1, np.int64)
            column[1 + summary.start :] = summary.reach
            self.reaches[sub] = column
        return self.reaches[sub][hi]

    def suffix(self, seq: WinSeq, k: int) -> list:
        """Columns [p_k, ..., p_last] of the chains of items k..last of ``seq`` (gaps checked), built right
        to left from the last item's events."""
        key = ("suffix", seq.parts[k:], seq.gates[k + 1 :])
        if key in self.built:
            self.stats["shared_hits"] += 1
            return self.built[key]
        events = np.flatnonzero(self.region.mask(seq.parts[k]))
        if k == len(seq.parts) - 1:
            columns = [events]
        else:
            after = self.suffix(seq, k + 1)
            nxt, last = after[0], after[-1]
            lo, hi = self.earliest[last], nxt - 1
            for b in seq.gates[k + 1]:
                latest = self.reach_before(b.sub, nxt)
                if b.negations % 2:
                    lo = np.maximum(lo, latest)
                else:
                    hi = np.minimum(hi, latest - 1)
            start = np.searchsorted(events, lo, "left")
            stop = np.searchsorted(events, hi, "right")
            joined, rows = _join(events, start, stop)
            columns = [joined] + [c[rows] for c in after]
        return self._keep(key, columns)

    def prefix(self, seq: WinSeq, k: int) -> list:
        """Columns [p_0, ..., p_k] of the chains of items 0..k of ``seq`` (gaps checked), built left to
        right from the first item's events."""
        key = ("prefix", seq.parts[: k + 1], seq.gates[: k + 1])
        if key in self.built:
            self.stats["shared_hits"] += 1
            return self.built[key]
        events = np.flatnonzero(self.region.mask(seq.parts[k]))
        if k == 0:
            columns = [events]
        else:
            before = self.prefix(seq, k - 1)
            first, prev = before[0], before[-1]
            start = np.searchsorted(events, prev, "right")
            stop = np.searchsorted(events, self.latest[first], "right")
            for b in seq.gates[k]:
                # a witness before each candidate event; nondecreasing, so the events a row allows are a range
                cut = np.searchsorted(self.reach_before(b.sub, events), prev, "right")
                if b.negations % 2:
                    stop = np.minimum(stop, cut)
                else:
                    start = np.maximum(start, cut)
            last, rows = _join(events, start, stop)
            columns = [c[rows] for c in before] + [last]
        return self._keep(key, columns)

    def _keep(self, key, columns: list) -> list:
        self.stats["rows_built"] += len(columns[0])
        self.built[key] = columns
        return columns

    def rows(self, seq: WinSeq, conds: tuple, direction: str = "suffix") -> list:
        """The matches of one SEQ: its columns with the edge ``!``/``EXISTS`` and conditions checked."""
        columns = self.suffix(seq, 0) if direction == "suffix" else self.prefix(seq, len(seq.parts) - 1)
        first, last = columns[0], columns[-1]
        keep = np.ones(len(first), bool)
        at = seq.positions
        for b in seq.booleans:
            if at[0] < b.index < at[-1]:
                continue  # a gap: checked while building
            if b.index < at[0]:  # (last - w, first)
                lo, hi = self._window_lo(last), first
            else:  # (last, first + w)
                lo, hi = last, self._window_hi(first)
            found = (hi > lo + 1) & (self.reach_before(b.sub, np.maximum(hi, 0)) > lo)
            keep &= ~found if b.negations % 2 else found
        names = [_variable(p) for p in seq.parts]
        for cond in conds:
            if not keep.any():
                break
            at = dict(zip(names, columns))
            test = _column_test(cond, at, self.part.stream) if self.part.stream is not None else None
            if test is not None:
                keep &= test
                continue
            events = self.part.events
            for i in np.flatnonzero(keep):
                keep[i] = holds(cond, {v: int(c[i]) for v, c in at.items() if v}, events)
        return [c[keep] for c in columns]

    def _window_lo(self, last: np.ndarray) -> np.ndarray:
        w = self.part.run.window
        if w is None:
            return np.full(len(last), -1, np.int64)
        if w.events:
            return np.maximum(-1, np.floor(last - w.amount).astype(np.int64))
        return first_fitting_all(self.times, self.times[last], w.seconds) - 1

    def _window_hi(self, first: np.ndarray) -> np.ndarray:
        w = self.part.run.window
        if w is None:
            return np.full(len(first), self.n, np.int64)
        if w.events:
            return np.minimum(self.n, np.ceil(first + w.amount).astype(np.int64))
        return past_fitting_all(self.times, self.times[first], w.seconds)


def _column_test(cond, at: dict, stream) -> Optional[np.ndarray]:
    """A condition over rows as one boolean column (``condition_values``: the value rules of
    docs/language.md over columns), where every attribute it reads is numeric; None where it is anything
    else (the rows are then checked one by one)."""

    def leaf(node: A.Attr) -> tuple:
        if node.var not in at or node.attr in ("ts", "type"):
            raise NotVectorizable
        column = stream.column(node.attr)
        if column.numbers is None:
            raise NotVectorizable
        rows = at[node.var]
        return column.numbers[rows], column.null[rows], True

    try:
        return condition_values(cond, leaf)
    except NotVectorizable:
        return None


def _join(events: np.ndarray, start: np.ndarray, stop: np.ndarray) -> tuple:
    """Each row r joined with ``events[start[r]:stop[r]]``: (the joined events, the row of each)."""
    counts = np.maximum(stop - start, 0)
    rows = np.repeat(np.arange(len(start)), counts)
    within = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    return events[start[rows] + within], rows


def run_shared(
    execution,
    branches: list,
    directions: Optional[list] = None,
    owners: Optional[list] = None,
    selects: Optional[list] = None,
    at_last: bool = False,
) -> tuple:
    """Every sub-stream's matches of ``branches`` (``top_branches``) as ``MatchArrays``, and counters: one
    for all, or, with ``owners`` (a query number per branch) and ``selects`` (each query's RETURN), a list
    with one per query (a workload: ``workload``). ``at_last``: each row's ``emitted_at`` is its last
    position (a micro-batch's matches, ``NestedMatcher.extend``)."""
    directions = directions or ["suffix"] * len(branches)
    owned = owners or [0] * len(branches)
    selects = selects or [execution.select]
    out = [_Rows() for _ in selects]
    stats = {"shared_hits": 0, "rows_built": 0}
    for part in execution.parts.values():
        if not part.n:
            continue
        shared = SharedRun(part)
        where = part.position_column()
        for (seq, conds), direction, owner in zip(branches, directions, owned):
            select = selects[owner]
            columns = shared.rows(seq, conds, direction)
            kept = [(c, _variable(p)) for c, p in zip(columns, seq.parts) if select is None or _variable(p) in select]
            out[owner].add(where, kept)
        for k in stats:
            stats[k] += shared.stats[k]
    found = [rows.arrays(at_last) for rows in out]
    return (found if owners else found[0]), stats


class _Rows:
    """Matches gathered as the CSR columns of a ``MatchArrays``."""

    def __init__(self):
        self.names: dict = {}
        self.offsets, self.positions, self.variables = [np.zeros(1, np.int64)], [], []
        self.total = 0

    def add(self, where: np.ndarray, kept: list) -> None:
        """Rows of one SEQ: ``kept`` = [(column of indices, variable)] for the positions it reports."""
        if not kept or not len(kept[0][0]):
            return
        width, count = len(kept), len(kept[0][0])
        self.positions.append(where[np.stack([c for c, _ in kept], axis=1)].ravel())
        ids = np.array([self.names.setdefault(v, len(self.names)) if v else -1 for _, v in kept], np.int64)
        self.variables.append(np.tile(ids, count))
        self.offsets.append(self.total + width * np.arange(1, count + 1, dtype=np.int64))
        self.total += width * count

    def arrays(self, at_last: bool = False) -> MatchArrays:
        if not self.positions:
            return MatchArrays.from_bindings(np.zeros(1, np.int64), [], [], [], [])
        return MatchArrays.from_bindings(
            np.concatenate(self.offsets),
            np.concatenate(self.positions),
            np.concatenate(self.variables),
            list(self.names),
            [False] * len(self.names),
            AT_LAST if at_last else None,
        )
