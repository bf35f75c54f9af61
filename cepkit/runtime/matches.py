"""Match results: ``Match`` (positions and bindings) and ``Matches`` (an ordered, de-duplicated list)."""
from __future__ import annotations

import collections
import contextlib
import gc
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Sequence

import pandas as pd


@dataclass(frozen=True)
class Match:
    """One match: ``positions`` (sorted tuple, the CEL complex event) and ``bindings`` (var -> position, or
    tuple of positions for a Kleene variable). ``sign`` is "+" for a result, "-" for a retraction
    (out-of-order aggressive mode); ``emitted_at`` is the arrival position after which it was emitted."""
    positions: tuple
    bindings: Mapping = field(default_factory=dict, hash=False, compare=False)
    sign: str = "+"
    emitted_at: Optional[int] = field(default=None, compare=False)

    @property
    def key(self) -> tuple:
        """Identity of a match: its positions and bindings (LANGUAGE.md §10.2)."""
        return (self.positions, tuple(sorted(self.bindings.items())))

    @property
    def last(self) -> int:
        return self.positions[-1] if self.positions else -1

    def __eq__(self, other):
        return isinstance(other, Match) and (self.key, self.sign) == (other.key, other.sign)

    def __hash__(self):
        return hash((self.key, self.sign))

    @classmethod
    def of(cls, bindings: Mapping, extra_positions: Iterable[int] = ()) -> "Match":
        """A match from its bindings; positions are every bound position."""
        positions = set(extra_positions)
        for value in bindings.values():
            positions.update(value if isinstance(value, tuple) else (value,))
        return cls(tuple(sorted(positions)), dict(bindings))


def output_order(matches: Iterable[Match]) -> list:
    """De-duplicate by (positions, bindings) and order by (last position, positions, bindings)."""
    unique = {}
    for m in matches:
        unique.setdefault((m.key, m.sign), m)
    return sorted(unique.values(), key=lambda m: (m.last, m.positions, m.key[1], m.sign))


class Matches(Sequence):
    """The matches of a query over a stream, in output order (LANGUAGE.md §10.2).

    ``engine`` names the engine that produced them; ``deltas`` (aggressive out-of-order mode) lists every
    emission in order, retractions included, while the sequence itself holds the net result.
    """

    def __init__(self, matches: Iterable[Match], engine: str, query=None, deltas: Optional[list] = None,
                 info: Optional[dict] = None):
        self._items = output_order(m for m in matches if m.sign == "+")
        self.engine = engine
        self.query = query
        self.deltas = deltas if deltas is not None else []
        self.info = info or {}

    def __getitem__(self, i):
        return self._items[i]

    def __len__(self):
        return len(self._items)

    def positions(self) -> list:
        """Each distinct set of positions once, in output order."""
        seen, out = set(), []
        for m in self._items:
            if m.positions not in seen:
                seen.add(m.positions)
                out.append(m.positions)
        return out

    def variables(self) -> list:
        names = []
        for m in self._items:
            for v in m.bindings:
                if v not in names:
                    names.append(v)
        return names

    def to_pandas(self) -> pd.DataFrame:
        """One row per match: match_id, positions, one column per variable."""
        variables = self.variables()
        rows = [{"match_id": i, "positions": list(m.positions),
                 **{v: (list(m.bindings[v]) if isinstance(m.bindings.get(v), tuple) else m.bindings.get(v))
                    for v in variables}}
                for i, m in enumerate(self._items)]
        return pd.DataFrame(rows, columns=["match_id", "positions", *variables])

    def __repr__(self):
        shown = ", ".join(str(p) for p in self.positions()[:10])
        more = f", ... ({len(self)} matches)" if len(self) > 10 else ""
        return f"Matches(engine={self.engine!r}, [{shown}{more}])"

    def __eq__(self, other):
        if isinstance(other, Matches):
            return [m.key for m in self] == [m.key for m in other]
        return NotImplemented

    def _repr_html_(self):
        return self.to_pandas()._repr_html_()


@contextlib.contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector while an engine builds many acyclic objects (matches, their
    bindings): each collection their allocations trigger traverses every live object, the stream's events
    included, which took 2-3x longer than building the matches (bench/README.md, stack section).
    Reference counting still frees everything."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ReportedOnce:
    """The RETURN keys an incremental matcher has reported, so that each (C, β) is reported once although
    several matches project to it (LANGUAGE.md §10.2).

    Under a time window of w a key is forgotten once an event more than w past its report has been
    pushed: every match projecting to it holds its events, the earliest at or before the report, so no
    match completed or released from then on can (engines report a match at the latest at the first event
    past its window). Without a time window every key is kept.
    """

    def __init__(self, window_seconds: Optional[float] = None):
        self.window = window_seconds
        self.keys: dict = {}                        # key -> time of its report
        self.order: collections.deque = collections.deque()   # (time, key) in report order

    def fresh(self, found: list, now: Optional[float]) -> list:
        """The matches of ``found`` not reported yet, remembered as reported at ``now`` (the pushed event's
        time; None at close); then what this push made impossible to report again is forgotten."""
        out = []
        for m in found:
            if m.key not in self.keys:
                self.keys[m.key] = now
                self.order.append((now, m.key))
                out.append(m)
        if self.window is not None and now is not None:
            horizon = now - self.window - 1e-9 * max(1.0, abs(now))   # the reference's float tolerance, and more
            while self.order and self.order[0][0] is not None and self.order[0][0] < horizon:
                del self.keys[self.order.popleft()[1]]
        return out

    def __len__(self) -> int:
        return len(self.keys)
