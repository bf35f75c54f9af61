"""One match as a Python object (``Match``: positions and bindings) and the output order of a list of
them (docs/language.md §10.2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional


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
        """Identity of a match: its positions and bindings (docs/language.md §10.2)."""
        return (self.positions, tuple(sorted(self.bindings.items())))

    @property
    def last(self) -> int:
        return self.positions[-1] if self.positions else -1

    def __eq__(self, other):
        return isinstance(other, Match) and (self.key, self.sign) == (other.key, other.sign)

    def __hash__(self):
        return hash((self.key, self.sign))

    @classmethod
    def made(cls, positions: tuple, bindings: dict, emitted_at: Optional[int]) -> "Match":
        """``Match(positions, bindings, "+", emitted_at)`` without the frozen dataclass's ``__init__``
        (one ``object.__setattr__`` per field): an engine's per-push path makes one per match it returns."""
        match = _new(cls)
        fields = match.__dict__  # (item by item: a third cheaper than ``update`` with keywords)
        fields["positions"], fields["bindings"], fields["sign"], fields["emitted_at"] = (
            positions,
            bindings,
            "+",
            emitted_at,
        )
        return match

    @classmethod
    def named(cls, positions: tuple, names: tuple, emitted_at: Optional[int]) -> "Match":
        """``made(positions, dict(zip(names, positions)), emitted_at)`` with the bindings dict made when
        first read: a pusher's caller may only count its matches or pass them on, and the dict is a third
        of a match's cost (~0.35 µs). ``names`` (one per position, each once) is kept as it is."""
        match = _new(_Named)
        fields = match.__dict__
        fields["positions"], fields["_names"], fields["sign"], fields["emitted_at"] = positions, names, "+", emitted_at
        return match

    @classmethod
    def grouped(cls, positions: tuple, names: tuple, kleene: frozenset, emitted_at: Optional[int]) -> "Match":
        """``named`` where ``names`` (one per position) may repeat a variable of ``kleene``, bound to the
        tuple of its positions, or be None (a position in no binding); the bindings dict made when first
        read."""
        match = _new(_Grouped)
        fields = match.__dict__
        fields["positions"], fields["_names"], fields["_kleene"] = positions, names, kleene
        fields["sign"], fields["emitted_at"] = "+", emitted_at
        return match

    @classmethod
    def of(cls, bindings: Mapping, extra_positions: Iterable[int] = ()) -> "Match":
        """A match from its bindings; positions are every bound position."""
        positions = set(extra_positions)
        for value in bindings.values():
            positions.update(value if isinstance(value, tuple) else (value,))
        return cls(tuple(sorted(positions)), dict(bindings))


_new = object.__new__


class _Bindings:
    """``_Named.bindings``: made on first read and then kept in the instance (a non-data descriptor, so
    the instance's entry wins from then on)."""

    def __get__(self, match, owner=None):
        if match is None:
            return self
        fields = match.__dict__
        bindings = fields["bindings"] = dict(zip(fields["_names"], fields["positions"]))
        return bindings


class _Named(Match):
    """A ``Match`` made by ``Match.named``: the same fields, equality, hash and repr; pickled and copied as
    a plain ``Match``."""

    __qualname__ = "Match"
    bindings = _Bindings()  # type: ignore[assignment]

    def __reduce__(self):
        return Match.made, (self.positions, self.bindings, self.emitted_at)


class _GroupedBindings:
    """``_Grouped.bindings``, made on first read (as ``_Bindings``)."""

    def __get__(self, match, owner=None):
        if match is None:
            return self
        fields = match.__dict__
        kleene, bindings = fields["_kleene"], {}
        for name, p in zip(fields["_names"], fields["positions"]):
            if name is not None:
                bindings[name] = bindings.get(name, ()) + (p,) if name in kleene else p
        fields["bindings"] = bindings
        return bindings


class _Grouped(_Named):
    """A ``Match`` made by ``Match.grouped`` (as ``_Named``)."""

    __qualname__ = "Match"
    bindings = _GroupedBindings()  # type: ignore[assignment]


def output_order(matches: Iterable[Match]) -> list:
    """De-duplicate by (positions, bindings) and order by (last position, positions, bindings): the
    definition of docs/language.md §10.2 on ``Match`` objects (``MatchArrays.output_index`` does it on columns)."""
    unique = {}
    for m in matches:
        unique.setdefault((m.key, m.sign), m)
    return sorted(unique.values(), key=lambda m: (m.last, m.positions, m.key[1], m.sign))
