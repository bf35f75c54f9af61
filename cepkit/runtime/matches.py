"""Match results: ``Match`` (positions and bindings), ``MatchArrays`` (many matches as columns, what fast
engines return) and ``Matches`` (ordered, de-duplicated, built from the columns; ``Match`` objects are a
lazy view made only when someone indexes or iterates)."""
from __future__ import annotations

import collections
import contextlib
import gc
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..errors import QueryError
from .expiry import window_horizon


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
    def of(cls, bindings: Mapping, extra_positions: Iterable[int] = ()) -> "Match":
        """A match from its bindings; positions are every bound position."""
        positions = set(extra_positions)
        for value in bindings.values():
            positions.update(value if isinstance(value, tuple) else (value,))
        return cls(tuple(sorted(positions)), dict(bindings))


def output_order(matches: Iterable[Match]) -> list:
    """De-duplicate by (positions, bindings) and order by (last position, positions, bindings): the
    definition of docs/language.md §10.2 on ``Match`` objects (``MatchArrays.output_index`` does it on columns)."""
    unique = {}
    for m in matches:
        unique.setdefault((m.key, m.sign), m)
    return sorted(unique.values(), key=lambda m: (m.last, m.positions, m.key[1], m.sign))


# ----------------------------------------------------------------------------- rows as columns
SLICE = 1 << 18     # rows read at once where a pass over all the rows needs arrays of its own
AT_LAST = "last"    # ``MatchArrays(emitted_at=AT_LAST)``: each row was emitted at its last position
# positions() shares one int per position value when the cells outnumber the values' range this much
# (Kleene rows). A;B;C's rows hold each position ~2 times: sharing there would save a third of
# positions()' memory at 10M rows and cost ~50 % more time (bench/README.md, end to end, memory)
SHARED_INTS = 4
def _gather(offsets: np.ndarray, rows: np.ndarray) -> tuple:
    """(new offsets, flat indices) of the CSR rows ``rows`` (in that order, repeats allowed)."""
    lengths = (offsets[1:] - offsets[:-1])[rows]
    new = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=new[1:])
    return new, spread(offsets[:-1][rows], lengths)


def spread(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The indices starts[i], ..., starts[i] + lengths[i] - 1 of every i, in order."""
    total = int(lengths.sum())
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)


def _padded(offsets: np.ndarray, values: np.ndarray, fill: int) -> np.ndarray:
    """The CSR rows as an (n, longest) matrix, short rows padded with ``fill``."""
    n = len(offsets) - 1
    lengths = offsets[1:] - offsets[:-1]
    width = int(lengths.max(initial=0))
    if n and (lengths == width).all():
        return values[offsets[0]:offsets[-1]].reshape(n, width)
    out = np.full((n, width), fill, np.int64)
    rows = np.repeat(np.arange(n), lengths)
    out[rows, np.arange(len(rows)) - np.repeat(offsets[:-1] - offsets[0], lengths)] = values[offsets[0]:offsets[-1]]
    return out


def _words(first: np.ndarray, rest: np.ndarray) -> list:
    """Integer sort keys (the column ``first``, then the columns of the matrix ``rest``), most significant
    first, packed into as few int64 words as keep their order: constant columns and a column repeating
    ``first`` say nothing and are dropped, the rest are mixed-radix digits (so one ``argsort`` or a short
    ``lexsort`` replaces a ``lexsort`` over many keys)."""
    if not len(first):
        return []
    lows, highs = rest.min(axis=0), rest.max(axis=0)
    varying = [j for j in range(rest.shape[1]) if lows[j] < highs[j]]
    # each column made contiguous once (a wide matrix's columns are strided): later passes read it fast
    columns = [(first, int(first.min()), int(first.max()))]
    columns += [(col, int(lows[j]), int(highs[j])) for col, j in zip(rest.T[varying], varying)]
    columns = [c for k, c in enumerate(columns)
               if c[1] < c[2] and not (k and c[0][0] == first[0] and np.array_equal(c[0], first))]
    words, word, span = [], None, 1
    for col, low, high in columns:
        width = high - low + 1
        if word is not None and span * width >= 1 << 62:
            words.append(word)
            word, span = None, 1
        digit = col.astype(np.int64, copy=False) - low
        if word is None:
            word = digit
        else:
            word *= width
            word += digit
        span *= width
    if word is not None:
        words.append(word)
    return words


def _lex_order(words: list, n: int) -> np.ndarray:
    """The stable order of rows by ``words`` (none: any order is sorted)."""
    if not words:
        return np.arange(n)
    if len(words) == 1:
        w = words[0]
        return np.arange(n) if (w[1:] >= w[:-1]).all() else np.argsort(w, kind="stable")
    return np.lexsort(words[::-1])


def _same_as_previous(words: list, order: np.ndarray) -> np.ndarray:
    """Per row of ``order``: equal in every word to the row before it."""
    same = np.zeros(len(order), bool)
    if len(order):
        same[1:] = True
        for w in words:
            ordered = w[order]
            same[1:] &= ordered[1:] == ordered[:-1]
    return same


class GrowingArray:
    """A 1-D array written at its end (``extend``), for results whose count is known only once they are
    all made. It doubles in place (``ndarray.resize``: realloc, which moves a large buffer's pages rather
    than copying them, so growing holds no second copy), read-only while it grows so that numpy leaves the
    new room unwritten: memory never written costs nothing. A copy where numpy refuses to resize."""

    def __init__(self, dtype, capacity: int = 1 << 12):
        self._buffer = np.empty(capacity, dtype)
        self.used = 0

    def extend(self, values: np.ndarray) -> None:
        end = self.used + len(values)
        if end > len(self._buffer):
            self._grow(max(end, 2 * len(self._buffer)))
        self._buffer[self.used:end] = values
        self.used = end

    def _grow(self, size: int) -> None:
        buffer, self._buffer = self._buffer, None       # (numpy resizes an array nothing else refers to)
        buffer.flags.writeable = False
        try:
            buffer.resize(size, refcheck=True)
        except ValueError:
            grown = np.empty(size, buffer.dtype)
            grown[:self.used] = buffer[:self.used]
            buffer = grown
        buffer.flags.writeable = True
        self._buffer = buffer

    @property
    def array(self) -> np.ndarray:
        """What was written (a view)."""
        return self._buffer[:self.used]


def _every(array: np.ndarray, test) -> bool:
    """Whether ``test(part).all()`` for each part of ``array`` (along its first axis), a few MB at a time:
    no boolean array as long as ``array``."""
    step = max(1, (1 << 20) // max(1, array[:1].size))
    return all(bool(test(array[start:start + step]).all()) for start in range(0, len(array), step))


def _variable_ids(ids) -> np.ndarray:
    """Variable ids as int32 (a kernel's buffer, kept as it is: half the bytes of int64) or int64."""
    ids = np.asarray(ids)
    return ids if ids.dtype == np.int32 else ids.astype(np.int64, copy=False)


class MatchArrays(Sequence):
    """Matches as columns, in any order and possibly repeated: what an engine returns instead of a list
    of ``Match`` when it can (``Matches`` then orders them with numpy). Indexing or iterating builds the
    ``Match`` objects.

    Row i has ``positions[offsets[i]:offsets[i+1]]`` (its sorted positions) and the bindings
    ``bound_positions/bound_variables[bound_offsets[i]:bound_offsets[i+1]]``, in the binding dict's order;
    ``bound_variables`` index ``names`` and ``kleene``: a Kleene variable has one entry per position of its
    tuple (a lone -1: the empty tuple), any other one entry. ``emitted_at`` is -1 where unknown, ``sign``
    +1 or -1.

    Two columns an engine may leave to be made when read (a 10M-event run's rows need ~140 MB for them,
    and ``positions()``, ``position_arrays()``, ``to_arrow()`` and ``to_pandas()`` never read them):
    ``emitted_at=AT_LAST`` says each row was emitted at its last position (a batch run emitting each match
    when its last event arrives), and ``row_variables`` (with ``bound_variables=None``) that every row
    binds each of its positions, in order, to these variable ids, none Kleene.

    ``sorted_within_last`` is an engine's promise that saves ``Matches`` its sort: the rows ending at one
    position are consecutive and in docs/language.md §10.2 order, none is empty and no two have the same
    positions (so none repeats); the groups themselves may come in any order (partition by partition).
    ``groups_in_order`` adds that the groups come in order of their last position: the rows are then in
    output order. The automaton engine sorts each event's matches as it enumerates them and says so, as
    does the stack's columnar run (``take`` forgets both).
    """

    def __init__(self, offsets, positions, bound_offsets, bound_positions, bound_variables, names,
                 kleene, emitted_at=None, sign=None, objects: Optional[list] = None, sorted_within_last=False,
                 row_variables=None, groups_in_order=False):
        self.offsets = np.asarray(offsets, np.int64)
        self.positions = np.asarray(positions, np.int64)
        self.bound_offsets = np.asarray(bound_offsets, np.int64)
        self.bound_positions = np.asarray(bound_positions, np.int64)
        self.row_variables = None if row_variables is None else np.asarray(row_variables, np.int32)
        self._bound_variables = None if bound_variables is None else _variable_ids(bound_variables)
        self.names = tuple(names)
        self.kleene = np.asarray(kleene, bool).reshape(len(self.names))
        n = len(self.offsets) - 1
        self._emitted_at = None if isinstance(emitted_at, str) and emitted_at == AT_LAST else \
            np.full(n, -1, np.int64) if emitted_at is None else np.asarray(emitted_at, np.int64)
        self.sign = np.ones(n, np.int8) if sign is None else np.asarray(sign, np.int8)
        self._objects = objects
        self.sorted_within_last = sorted_within_last
        self.groups_in_order = sorted_within_last and groups_in_order

    @property
    def bound_variables(self) -> np.ndarray:
        if self._bound_variables is None:           # rows of one shape: made when first read
            self._bound_variables = np.tile(self.row_variables, len(self))
        return self._bound_variables

    @property
    def emitted_at(self) -> np.ndarray:
        if self._emitted_at is None:                # AT_LAST: made when first read
            self._emitted_at = self.positions[self.offsets[1:] - 1]
        return self._emitted_at

    def _emitted(self, i: int) -> int:
        """Row i's ``emitted_at`` (without making the column)."""
        return int(self.positions[self.offsets[i + 1] - 1] if self._emitted_at is None else self._emitted_at[i])

    @classmethod
    def from_bindings(cls, offsets, positions, variables, names, kleene, emitted_at=None,
                      sorted_within_last=False, groups_in_order=False) -> "MatchArrays":
        """Rows of (position, variable id) pairs in position order (-1: a position no variable names), as
        an automaton run enumerates them: the positions are the row, the named ones its bindings."""
        positions = np.asarray(positions, np.int64)
        variables = _variable_ids(variables)
        offsets = np.asarray(offsets, np.int64)
        if _every(variables, lambda part: part >= 0):
            width, n = cls.width(offsets), len(offsets) - 1
            pattern = variables[offsets[0]:offsets[0] + (width or 0)]
            if width and not np.asarray(kleene, bool)[pattern].any():
                rows = variables[offsets[0]:offsets[-1]].reshape(n, width)
                if _every(rows, lambda part: part == pattern):
                    return cls(offsets, positions, offsets, positions, None, names, kleene, emitted_at,
                               sorted_within_last=sorted_within_last, row_variables=pattern.copy(),
                               groups_in_order=groups_in_order)
            return cls(offsets, positions, offsets, positions, variables, names, kleene, emitted_at,
                       sorted_within_last=sorted_within_last, groups_in_order=groups_in_order)
        named = variables >= 0
        row = np.repeat(np.arange(len(offsets) - 1), offsets[1:] - offsets[:-1])
        bound_offsets = np.zeros(len(offsets), np.int64)
        np.cumsum(np.bincount(row[named], minlength=len(offsets) - 1), out=bound_offsets[1:])
        return cls(offsets, positions, bound_offsets, positions[named], variables[named], names, kleene, emitted_at,
                   sorted_within_last=sorted_within_last, groups_in_order=groups_in_order)

    @classmethod
    def from_matches(cls, matches: list) -> "MatchArrays":
        """The columns of a list of ``Match`` objects (kept: indexing returns them)."""
        ids: dict = {}
        offsets, positions, bound_offsets, bound_positions, bound_variables = [0], [], [0], [], []
        for m in matches:
            positions.extend(m.positions)
            offsets.append(len(positions))
            for name, value in m.bindings.items():
                if isinstance(value, tuple):
                    var = ids.setdefault((name, True), len(ids))
                    bound_positions.extend(value or (-1,))
                    bound_variables.extend([var] * max(len(value), 1))
                else:
                    bound_positions.append(value)
                    bound_variables.append(ids.setdefault((name, False), len(ids)))
            bound_offsets.append(len(bound_positions))
        emitted = [-1 if m.emitted_at is None else m.emitted_at for m in matches]
        sign = [1 if m.sign == "+" else -1 for m in matches]
        return cls(offsets, positions, bound_offsets, bound_positions, bound_variables, [n for n, _ in ids],
                   [k for _, k in ids], emitted, sign, objects=list(matches))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def take(self, rows) -> "MatchArrays":
        """The rows ``rows`` (indices, repeats allowed, or a mask), in that order."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        offsets, flat = _gather(self.offsets, rows)
        positions = self.positions[flat]
        if self.bound_offsets is self.offsets and self.bound_positions is self.positions:
            bound_offsets, bound_flat, bound_positions = offsets, flat, positions   # every position is bound
        else:
            bound_offsets, bound_flat = _gather(self.bound_offsets, rows)
            bound_positions = self.bound_positions[bound_flat]
        objects = None if self._objects is None else [self._objects[i] for i in rows.tolist()]
        variables = None if self._bound_variables is None else self._bound_variables[bound_flat]
        emitted = AT_LAST if self._emitted_at is None else self._emitted_at[rows]
        return MatchArrays(offsets, positions, bound_offsets, bound_positions, variables, self.names, self.kleene,
                           emitted, self.sign[rows], objects, row_variables=self.row_variables)

    def copy(self) -> "MatchArrays":
        """The same rows in arrays of their own (an engine's columns may be views of buffers it reuses)."""
        offsets, positions = self.offsets.copy(), self.positions.copy()
        shared = self.bound_offsets is self.offsets and self.bound_positions is self.positions
        return MatchArrays(offsets, positions, offsets if shared else self.bound_offsets.copy(),
                           positions if shared else self.bound_positions.copy(),
                           None if self._bound_variables is None else self._bound_variables.copy(),
                           self.names, self.kleene, AT_LAST if self._emitted_at is None else self._emitted_at.copy(),
                           self.sign.copy(), sorted_within_last=self.sorted_within_last,
                           row_variables=self.row_variables, groups_in_order=self.groups_in_order)

    def by_emission(self) -> "MatchArrays":
        """The rows ordered by ``emitted_at`` (ties keep their order): a run's log of emissions."""
        return self.take(np.argsort(self.emitted_at, kind="stable"))

    # ------------------------------------------------------------------ Match objects, on demand
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        if self._objects is None:
            self._objects = [None] * len(self)
        if self._objects[i] is None:
            self._objects[i] = self._match(i)
        return self._objects[i]

    def __iter__(self):
        if self._objects is None or any(m is None for m in self._objects):
            self._objects = self._all_matches()
        return iter(self._objects)

    def _binding_dict(self, i: int) -> dict:
        bindings: dict = {}
        a, b = self.bound_offsets[i], self.bound_offsets[i + 1]
        variables = self.row_variables if self._bound_variables is None else self._bound_variables[a:b]
        for p, v in zip(self.bound_positions[a:b].tolist(), variables.tolist()):
            name = self.names[v]
            if self.kleene[v]:
                bindings[name] = bindings.get(name, ()) + ((p,) if p >= 0 else ())
            else:
                bindings[name] = p
        return bindings

    def _match(self, i: int) -> Match:
        e = self._emitted(i)
        return Match(tuple(self.positions[self.offsets[i]:self.offsets[i + 1]].tolist()), self._binding_dict(i),
                     "+" if self.sign[i] > 0 else "-", None if e < 0 else e)

    def position_tuples(self) -> list:
        """Each row's positions as a tuple of Python ints, a slice of rows at a time (what is made beside
        the result stays small), with the collector paused (it would otherwise traverse every tuple made
        so far, again and again)."""
        n = len(self)
        with collector_paused():
            if n <= SLICE:
                return self._tuples(0, n)
            out = [None] * n
            for start in range(0, n, SLICE):
                stop = min(start + SLICE, n)
                out[start:stop] = self._tuples(start, stop)
            return out

    def _tuples(self, start: int, stop: int) -> list:
        """Rows ``start:stop`` as tuples: the rows of each length as a matrix whose columns become lists
        zipped into tuples (in C), over ints shared where positions repeat (``_shared_ints``)."""
        offsets = self.offsets[start:stop + 1]
        first = int(offsets[0])
        positions = _shared_ints(self.positions[first:int(offsets[-1])])
        width = self.width(offsets)
        if width is not None:
            return _tuples(positions.reshape(stop - start, width))
        lengths = offsets[1:] - offsets[:-1]
        out = np.empty(stop - start, object)
        for length in np.unique(lengths).tolist():
            rows = np.flatnonzero(lengths == length)
            at = (offsets[rows] - first)[:, None] + np.arange(length)
            out[rows] = np.fromiter(_tuples(positions[at]), dtype=object, count=len(rows))
        return out.tolist()

    @staticmethod
    def width(offsets: np.ndarray) -> Optional[int]:
        """The length every row has (0 without rows), or None when they differ; read a slice at a time."""
        if len(offsets) < 2:
            return 0
        first = int(offsets[1] - offsets[0])
        for start in range(0, len(offsets) - 1, SLICE):
            part = offsets[start:start + SLICE + 1]
            if (part[1:] - part[:-1] != first).any():
                return None
        return first

    def _all_matches(self) -> list:
        n = len(self)
        positions = self.position_tuples()
        width = self.width(self.bound_offsets)
        if self.row_variables is not None:
            same_variables, pattern = True, self.row_variables
        else:
            pattern = self.bound_variables[:width or 0]
            same_variables = width is not None and n and not self.kleene.any() and \
                (self.bound_variables.reshape(n, width) == pattern).all()
        if same_variables:
            names = [self.names[v] for v in pattern.tolist()]
            bound = _tuples(self.bound_positions.reshape(n, width))
            bindings = [dict(zip(names, b)) for b in bound]
        else:
            bindings = [self._binding_dict(i) for i in range(n)]
        signs = ["+" if s > 0 else "-" for s in self.sign.tolist()]
        emitted = [None if e < 0 else e for e in self.emitted_at.tolist()]
        with collector_paused():
            return [Match(*row) for row in zip(positions, bindings, signs, emitted)]

    def binding_columns(self, names) -> dict:
        """var -> (kind, value) for each of ``names`` (names of ``self.names``), row by row in this order:
        "single", an int64 array of positions (-1: unbound); "kleene", (offsets, positions, bound mask); or
        "mixed", a list of Python values for a name that is Kleene in some rows only. Read a slice of rows
        at a time (no array per binding entry)."""
        n = len(self)
        out = {}
        for name in names:
            ids = [v for v, other in enumerate(self.names) if other == name]
            kinds = {bool(self.kleene[v]) for v in ids}
            if len(kinds) > 1:
                values = [m.bindings.get(name) for m in self]
                out[name] = ("mixed", [list(v) if isinstance(v, tuple) else v for v in values])
            elif kinds == {False}:
                columns = [] if self.row_variables is None else np.flatnonzero(np.isin(self.row_variables, ids))
                if len(columns) == 1:       # rows of one shape: one column of their bindings
                    rows = self.bound_positions[self.bound_offsets[0]:self.bound_offsets[-1]]
                    out[name] = ("single", rows.reshape(n, len(self.row_variables))[:, columns[0]].copy())
                    continue
                at = np.full(n, -1, np.int64)
                for rows, entries in _bound_entries(self, ids):
                    at[rows] = self.bound_positions[entries]
                out[name] = ("single", at)
            else:
                found = [(rows, self.bound_positions[entries]) for rows, entries in _bound_entries(self, ids)]
                rows = np.concatenate([r for r, _ in found]) if found else np.zeros(0, np.int64)
                positions = np.concatenate([p for _, p in found]) if found else np.zeros(0, np.int64)
                offsets = np.zeros(n + 1, np.int64)
                np.cumsum(np.bincount(rows, minlength=n), out=offsets[1:])
                bound = np.zeros(n, bool)
                bound[rows] = True
                empty = positions < 0           # the empty tuple's marker entry
                if empty.any():
                    np.cumsum(np.bincount(rows[~empty], minlength=n), out=offsets[1:])
                    positions = positions[~empty]
                out[name] = ("kleene", (offsets, positions, bound))
        return out

    # ------------------------------------------------------------------ docs/language.md §10.2 on columns
    def in_output_order(self) -> bool:
        """Whether the rows are in output order and distinct already: ``sorted_within_last`` with the
        groups' last positions not decreasing (the automaton's batch run without PARTITION BY), as promised
        (``groups_in_order``) or checked."""
        if not self.sorted_within_last:
            return False
        if self.groups_in_order:
            return True
        before = -1                 # a slice of rows at a time: no array as long as the rows
        for start in range(0, len(self), SLICE):
            last = self.positions[self.offsets[start + 1:start + SLICE + 1] - 1]
            if last[0] < before or (last[1:] < last[:-1]).any():
                return False
            before = last[-1]
        return True

    def output_index(self) -> tuple:
        """(rows in output order, each distinct (positions, bindings) once, first occurrence kept; per
        kept row, whether its positions differ from the row before): ``output_order`` without objects.

        Rows are sorted by (last position, positions) packed into integer words; only rows tied on
        them compare their bindings, as token rows whose lexicographic order is Python's order of the
        sorted binding items (name rank, value or Kleene positions then -1, ...). Rows
        ``sorted_within_last`` need only their groups put in order of last position (a stable sort:
        groups already in order keep it)."""
        n = len(self)
        if self.sorted_within_last:
            return np.argsort(self.positions[self.offsets[1:] - 1], kind="stable"), np.ones(n, bool)
        lengths = self.offsets[1:] - self.offsets[:-1]
        last = np.where(lengths > 0, self.positions[np.maximum(self.offsets[1:] - 1, 0)] if len(self.positions)
                        else -1, -1)
        words = _words(last, _padded(self.offsets, self.positions, -1))
        order = _lex_order(words, n)
        tie = _same_as_previous(words, order)
        if not tie.any():
            return order, np.ones(n, bool)
        group = np.cumsum(~tie) - 1
        in_tie = tie.copy()
        in_tie[:-1] |= tie[1:]
        slots = np.flatnonzero(in_tie)
        rows = order[slots]
        tokens = self._binding_tokens(rows)
        tied_words = _words(group[slots], tokens)
        sub = _lex_order(tied_words, len(rows))
        duplicate = _same_as_previous(tied_words, sub)
        order = order.copy()
        order[slots] = rows[sub]
        keep = np.ones(n, bool)
        keep[slots[duplicate]] = False
        return order[keep], ~tie[keep]

    def _binding_tokens(self, rows: np.ndarray) -> np.ndarray:
        """Per row, its bindings as a padded token row ordered like ``tuple(sorted(bindings.items()))``."""
        offsets, flat = _gather(self.bound_offsets, rows)
        position, var = self.bound_positions[flat], self.bound_variables[flat]
        row = np.repeat(np.arange(len(rows)), offsets[1:] - offsets[:-1])
        rank = np.unique(np.asarray(self.names, dtype=object), return_inverse=True)[1].reshape(-1)[var] \
            if self.names else var
        order = np.lexsort((rank, row))
        position, var, rank, row = position[order], var[order], rank[order], row[order]
        first = np.ones(len(var), bool)
        first[1:] = (row[1:] != row[:-1]) | (var[1:] != var[:-1])
        last = np.ones(len(var), bool)
        last[:-1] = first[1:]
        closes = last & self.kleene[var]
        count = 1 + first + closes
        start = np.cumsum(count) - count
        tokens = np.empty(int(count.sum()), np.int64)
        tokens[start[first]] = rank[first]
        tokens[start + first] = position
        tokens[(start + first + 1)[closes]] = -1
        token_offsets = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(np.bincount(row, weights=count, minlength=len(rows)).astype(np.int64), out=token_offsets[1:])
        return _padded(token_offsets, tokens, -1)


# ----------------------------------------------------------------------------- Matches
class Matches(Sequence):
    """The matches of a query over a stream, in output order (docs/language.md §10.2).

    ``engine`` names the engine that produced them; ``deltas`` (aggressive out-of-order mode) lists every
    emission in order, retractions included, while the sequence itself holds the net result. Built from
    columns (``MatchArrays``, or a list of ``Match`` turned into columns); ``Match`` objects are made when
    someone indexes or iterates. ``stream`` (the events matched) lets ``to_pandas(fields=...)`` add the
    bound events' attributes.
    """

    def __init__(self, matches, engine: str, query=None, deltas=None, info: Optional[dict] = None, stream=None):
        columns = matches if isinstance(matches, MatchArrays) else MatchArrays.from_matches(list(matches))
        if (columns.sign < 0).any():
            columns = columns.take(columns.sign > 0)
        if columns.in_output_order():     # no index to make and check (0.5 ms per 200k rows)
            self._columns, self._new_positions = columns, None
        else:
            order, self._new_positions = columns.output_index()
            in_order = len(order) == len(columns) and (order[1:] > order[:-1]).all()   # engines often sort already
            self._columns = columns if in_order else columns.take(order)
        self.engine = engine
        self.query = query
        self._deltas = deltas
        self.info = info or {}
        self.stream = stream

    @property
    def deltas(self) -> list:
        """Every emission in order (a callable given at construction is called the first time)."""
        if callable(self._deltas):
            self._deltas = list(self._deltas())
        if self._deltas is None:
            self._deltas = []
        return self._deltas

    @property
    def arrays(self) -> MatchArrays:
        """The matches as columns, in output order."""
        return self._columns

    def __getitem__(self, i):
        return self._columns[i]

    def __iter__(self):
        return iter(self._columns)

    def __len__(self):
        return len(self._columns)

    def positions(self) -> list:
        """Each distinct set of positions once, in output order."""
        return self._distinct().position_tuples()

    def position_arrays(self) -> tuple:
        """``positions()`` as numpy arrays, with no Python object per match: ``(offsets, flat)``, the i-th
        tuple being ``flat[offsets[i]:offsets[i + 1]]``. With many matches ``positions()`` spends most of
        its time making tuples and ints (bench/README.md, end to end); this is the same result without."""
        distinct = self._distinct()
        offsets = distinct.offsets
        if offsets[0]:              # rows taken out of larger arrays (views, like ``flat``, otherwise)
            return offsets - offsets[0], distinct.positions[offsets[0]:offsets[-1]]
        return offsets, distinct.positions[:offsets[-1]]

    def _distinct(self) -> MatchArrays:
        if self._new_positions is None or self._new_positions.all():    # None: every row's positions new
            return self._columns
        return self._columns.take(self._new_positions)

    def variables(self) -> list:
        """Variable names in order of first appearance (output order, then each match's bindings)."""
        c = self._columns
        if c.row_variables is not None:
            return list(dict.fromkeys(str(c.names[v]) for v in c.row_variables.tolist())) if len(c) else []
        first: dict = {}            # id -> where it first appears (ids, not names: no string per entry)
        for start in range(0, len(c.bound_variables), SLICE):       # (most often the first slice has them all)
            ids, at = np.unique(c.bound_variables[start:start + SLICE], return_index=True)
            for v, i in zip(ids.tolist(), at.tolist()):
                first.setdefault(v, start + i)
            if len(first) == len(c.names):
                break
        return list(dict.fromkeys(str(c.names[v]) for v in sorted(first, key=first.get)))

    # ------------------------------------------------------------------ tables
    def binding_columns(self) -> dict:
        """``MatchArrays.binding_columns`` of every variable the matches bind, in output order."""
        return self._columns.binding_columns(self.variables())

    def to_pandas(self, fields=None) -> pd.DataFrame:
        """One row per match: match_id, positions, one column per variable (its position, or the list of
        a Kleene variable's positions); ``fields`` adds the bound events' attributes: ``["d.dep_delay",
        "w.ts"]`` (a list per match for a Kleene variable, null where the variable is unbound) or
        ``"all"`` (every variable's ts, its events' attributes, and its type when it binds several)."""
        c = self._columns
        variables = self.variables()
        if not len(c):
            wanted = self._fields(fields, self.binding_columns()) if fields is not None else []
            return pd.DataFrame([], columns=["match_id", "positions", *variables, *(f for f, _, _ in wanted)])
        columns = {"match_id": np.arange(len(c)), "positions": row_lists(c.offsets, c.positions.tolist())}
        bindings = self.binding_columns()
        for name, (kind, value) in bindings.items():
            columns[name] = pandas_binding(kind, value)
        if fields is not None:
            for label, name, attr in self._fields(fields, bindings):
                columns[label] = self._field_values(bindings[name], attr, arrow=False)
        return pd.DataFrame(columns)

    def to_arrow(self, fields=None):
        """The same table as ``to_pandas`` as a ``pyarrow.Table`` (lists as Arrow lists, nulls as nulls),
        built from the columns without Python objects per match."""
        import pyarrow as pa
        c = self._columns
        bindings = self.binding_columns()
        columns = {"match_id": pa.array(np.arange(len(c), dtype=np.int64)),
                   "positions": pa.LargeListArray.from_arrays(pa.array(c.offsets), pa.array(c.positions))}
        for name, (kind, value) in bindings.items():
            columns[name] = _arrow_binding(kind, value)
        if fields is not None:
            for label, name, attr in self._fields(fields, bindings):
                columns[label] = self._field_values(bindings[name], attr, arrow=True)
        return pa.table(columns)

    def _fields(self, fields, bindings: dict) -> list:
        """(label, variable, attribute) per requested field; QueryError for one that does not exist."""
        if self.stream is None:
            raise ValueError("these Matches carry no stream, so fields= has no events to read: use "
                             "cepkit.match(query, events).to_pandas(fields=...)")
        events = _event_frame(self.stream)
        variables = self.variables()
        if self.query is not None:     # a variable no match binds has null fields
            select = self.query.select
            variables += [v for v in self.query.variables if v not in variables and (select is None or v in select)]
        for name in variables:
            bindings.setdefault(name, ("single", np.full(len(self), -1, np.int64)))
        if isinstance(fields, str) and fields == "all":
            return [(f"{name}.{attr}", name, attr) for name in variables for attr in self._attributes_of(
                events, bindings[name])]
        return named_fields(fields, variables, list(events.columns))

    @staticmethod
    def _attributes_of(events: pd.DataFrame, binding) -> list:
        """The attributes ``fields="all"`` shows for a variable: ts, every attribute non-null on one of
        the events it binds, and type when they have several types."""
        kind, value = binding
        if kind == "single":
            bound = value[value >= 0]
        elif kind == "kleene":
            bound = value[1]
        else:
            bound = np.array([p for v in value if v is not None for p in (v if isinstance(v, list) else [v])],
                             np.int64)
        seen = events.iloc[np.unique(bound)]
        attrs = ["ts"] + [a for a in events.columns if a not in ("type", "ts") and seen[a].notna().any()]
        return attrs + (["type"] if seen["type"].nunique() > 1 else [])

    def _field_values(self, binding, attr: str, arrow: bool):
        """The attribute ``attr`` of the events one variable binds, per match."""
        column = _event_frame(self.stream)[attr]
        kind, value = binding
        if kind == "single":
            values = column.array.take(value, allow_fill=True)
            if arrow:
                import pyarrow as pa
                return pa.array(values, from_pandas=True)
            return values
        if kind == "kleene":
            offsets, positions, bound = value
            values = column.take(positions)
            if arrow:
                import pyarrow as pa
                return pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(values.array, from_pandas=True),
                                                     mask=pa.array(~bound))
            return [v if b else None for v, b in zip(row_lists(offsets, values.tolist()), bound.tolist())]
        flat = column.tolist()
        out = [[flat[p] for p in v] if isinstance(v, list) else (None if v is None else flat[v]) for v in value]
        if arrow:
            import pyarrow as pa
            return pa.array(out)
        return out

    # ------------------------------------------------------------------ display and comparison
    def __repr__(self):
        head = self._columns.take(np.arange(min(len(self), 40)))
        shown = ", ".join(str(p) for p in list(dict.fromkeys(head.position_tuples()))[:10])
        more = f", ... ({len(self)} matches)" if len(self) > 10 else ""
        return f"Matches(engine={self.engine!r}, [{shown}{more}])"

    def _identity(self) -> tuple:
        """The (positions, bindings) of every match in order, as arrays that compare across name tables."""
        c = self._columns
        names = np.asarray(c.names, dtype=object)[c.bound_variables].astype(str) if len(c.bound_variables) \
            else np.zeros(0, str)
        row = np.repeat(np.arange(len(c)), c.bound_offsets[1:] - c.bound_offsets[:-1])
        order = np.lexsort((names, row))
        return (c.offsets, c.positions, c.bound_offsets, names[order], c.kleene[c.bound_variables][order],
                c.bound_positions[order])

    def __eq__(self, other):
        if isinstance(other, Matches):
            mine, theirs = self._identity(), other._identity()
            return all(a.shape == b.shape and (a == b).all() for a, b in zip(mine, theirs))
        return NotImplemented

    __hash__ = None

    def _repr_html_(self):
        if len(self) <= 60:
            return self.to_pandas()._repr_html_()
        head = Matches(self._columns.take(np.arange(30)), self.engine).to_pandas()
        return head._repr_html_() + f"<p>… {len(self)} matches in all</p>"


def _bound_entries(c: MatchArrays, ids: list):
    """(row of each entry, entry index) of the binding entries of the variable ids ``ids``, a slice of
    rows at a time, in row order."""
    offsets = c.bound_offsets
    for start in range(0, len(c), SLICE):
        bounds = offsets[start:start + SLICE + 1]
        first = int(bounds[0])
        variables = c.bound_variables[first:int(bounds[-1])]
        hit = variables == ids[0] if len(ids) == 1 else np.isin(variables, ids)
        entries = np.flatnonzero(hit)
        rows = np.searchsorted(bounds, entries + first, "right") - 1 + start
        yield rows, entries + first


def _tuples(matrix: np.ndarray) -> list:
    """The rows of a matrix as tuples (one list per column, zipped)."""
    if not matrix.shape[1]:
        return [()] * len(matrix)
    return list(zip(*[column.tolist() for column in matrix.T]))


def _shared_ints(values: np.ndarray) -> np.ndarray:
    """Integers as they should become Python ints: as they are, or, when the values repeat (Kleene
    matches share most positions; A;B;C's rows each position ~3 times), as an object array holding one
    int per value of their range (indexing it is cheaper than allocating an int per cell: 45 vs 70 ms
    for 1.2M cells, and an int is 32 bytes)."""
    if not len(values):
        return values
    low = int(values.min())
    span = int(values.max()) - low + 1
    if len(values) < SHARED_INTS * span:
        return values
    return np.arange(low, low + span).astype(object)[values - low]


def named_fields(fields, variables: list, attributes: list) -> list:
    """(label, variable, attribute) for each ``"variable.attribute"`` of ``fields`` (a list, or one
    string); QueryError naming the variables or the attributes there are."""
    out = []
    for label in [fields] if isinstance(fields, str) else fields:
        name, dot, attr = str(label).partition(".")
        if not dot or name not in variables:
            raise QueryError(f"unknown field {label!r}: fields are written variable.attribute, and the "
                             f"matches bind {', '.join(variables) or 'no variable'}")
        if attr not in attributes:
            raise QueryError(f"unknown attribute {attr!r} in field {label!r}: the events have "
                             f"{', '.join(map(str, attributes))}")
        out.append((str(label), name, attr))
    return out


def row_lists(offsets: np.ndarray, flat: list) -> list:
    """The CSR rows of ``flat`` (a list) as lists (with the collector paused: see ``position_tuples``)."""
    bounds = offsets.tolist()
    with collector_paused():
        return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def pandas_binding(kind: str, value):
    """A variable's column as ``to_pandas`` always gave it: ints, floats with NaN when some matches leave
    it unbound, lists (None when unbound) for a Kleene variable."""
    if kind == "single":
        return value if (value >= 0).all() else np.where(value >= 0, value, np.nan)
    if kind == "kleene":
        offsets, positions, bound = value
        return [v if b else None for v, b in zip(row_lists(offsets, positions.tolist()), bound.tolist())]
    return value


def _arrow_binding(kind: str, value):
    import pyarrow as pa
    if kind == "single":
        return pa.array(value, mask=value < 0)
    if kind == "kleene":
        offsets, positions, bound = value
        return pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(positions), mask=pa.array(~bound))
    return pa.array(value)


def _event_frame(stream) -> pd.DataFrame:
    """The stream's events as columns (type, ts as given, attributes), one row per position."""
    frame = stream.frame
    if "ts" not in frame.columns:
        frame = frame.assign(ts=np.arange(len(frame)))
    return frame


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
    several matches project to it (docs/language.md §10.2).

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
            horizon = window_horizon(now, self.window)
            while self.order and self.order[0][0] is not None and self.order[0][0] < horizon:
                del self.keys[self.order.popleft()[1]]
        return out

    def __len__(self) -> int:
        return len(self.keys)


class MatchList(Sequence):
    """Matches in a fixed order held as columns (``arrays``, a ``MatchArrays``), read as the list of
    ``Match`` objects it stands for: what an incremental matcher returns for a micro-batch it took as
    columns (``Matcher.extend``). Objects are made when someone indexes or iterates; ``len``, ``==`` (with
    a list or another ``MatchList``), ``+`` and ``repr`` behave as the list's (docs/decisions.md)."""

    def __init__(self, arrays: MatchArrays):
        self.arrays = arrays

    def __len__(self) -> int:
        return len(self.arrays)

    def __getitem__(self, i):
        return self.arrays[i]

    def __iter__(self):
        return iter(self.arrays)

    def __eq__(self, other):
        if isinstance(other, (list, MatchList)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __add__(self, other):
        if isinstance(other, (list, MatchList)):
            return list(self) + list(other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, (list, MatchList)):
            return list(other) + list(self)
        return NotImplemented

    def __repr__(self):
        return repr(list(self))

    @staticmethod
    def joined(parts: list) -> "MatchList":
        """One ``MatchList`` of ``parts`` (MatchLists of one engine's matches: the same variable names) in turn."""
        if len(parts) == 1:
            return parts[0]
        arrays = [p.arrays for p in parts]
        first = arrays[0]
        if any(a.names != first.names for a in arrays):
            raise ValueError("MatchLists of different variable tables cannot be joined")

        def stacked(offsets: list) -> np.ndarray:
            out = [np.zeros(1, np.int64)]
            at = 0
            for o in offsets:
                out.append(o[1:] - o[0] + at)
                at += int(o[-1] - o[0])
            return np.concatenate(out)

        def flat(values: list, offsets: list) -> np.ndarray:
            return np.concatenate([v[o[0]:o[-1]] for v, o in zip(values, offsets)])

        bounds = [a.bound_offsets for a in arrays]
        # the columns left to be made when read stay so when every part left them
        pattern = first.row_variables
        lazy = pattern is not None and all(a._bound_variables is None and a.row_variables is not None and
                                           np.array_equal(a.row_variables, pattern) for a in arrays)
        at_last = all(a._emitted_at is None for a in arrays)
        return MatchList(MatchArrays(
            stacked([a.offsets for a in arrays]), flat([a.positions for a in arrays], [a.offsets for a in arrays]),
            stacked(bounds), flat([a.bound_positions for a in arrays], bounds),
            None if lazy else flat([a.bound_variables for a in arrays], bounds), first.names, first.kleene,
            AT_LAST if at_last else np.concatenate([a.emitted_at for a in arrays]),
            np.concatenate([a.sign for a in arrays]), row_variables=pattern if lazy else None))
