"""Many matches as columns (``MatchArrays``): what fast engines return, in any order and possibly
repeated; ``Match`` objects are a lazy view made when someone indexes or iterates."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .match_record import Match
from .python_objects import collector_paused, row_tuples, shared_ints
from .row_arrays import SLICE, every, gather, lex_order, padded, same_as_previous, sort_words

AT_LAST = "last"  # ``MatchArrays(emitted_at=AT_LAST)``: each row was emitted at its last position


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

    def __init__(
        self,
        offsets,
        positions,
        bound_offsets,
        bound_positions,
        bound_variables,
        names,
        kleene,
        emitted_at=None,
        sign=None,
        objects: Optional[list] = None,
        sorted_within_last=False,
        row_variables=None,
        groups_in_order=False,
    ):
        self.offsets = np.asarray(offsets, np.int64)
        self.positions = np.asarray(positions, np.int64)
        self.bound_offsets = np.asarray(bound_offsets, np.int64)
        self.bound_positions = np.asarray(bound_positions, np.int64)
        self.row_variables = None if row_variables is None else np.asarray(row_variables, np.int32)
        self._bound_variables = None if bound_variables is None else _variable_ids(bound_variables)
        self.names = tuple(names)
        self.kleene = np.asarray(kleene, bool).reshape(len(self.names))
        n = len(self.offsets) - 1
        self._emitted_at = (
            None
            if isinstance(emitted_at, str) and emitted_at == AT_LAST
            else np.full(n, -1, np.int64)
            if emitted_at is None
            else np.asarray(emitted_at, np.int64)
        )
        self.sign = np.ones(n, np.int8) if sign is None else np.asarray(sign, np.int8)
        self._objects = objects
        self.sorted_within_last = sorted_within_last
        self.groups_in_order = sorted_within_last and groups_in_order

    @property
    def bound_variables(self) -> np.ndarray:
        if self._bound_variables is None:  # rows of one shape: made when first read
            self._bound_variables = np.tile(self.row_variables, len(self))
        return self._bound_variables

    @property
    def emitted_at(self) -> np.ndarray:
        if self._emitted_at is None:  # AT_LAST: made when first read
            self._emitted_at = self.positions[self.offsets[1:] - 1]
        return self._emitted_at

    def _emitted(self, i: int) -> int:
        """Row i's ``emitted_at`` (without making the column)."""
        return int(self.positions[self.offsets[i + 1] - 1] if self._emitted_at is None else self._emitted_at[i])

    @classmethod
    def from_bindings(
        cls,
        offsets,
        positions,
        variables,
        names,
        kleene,
        emitted_at=None,
        sorted_within_last=False,
        groups_in_order=False,
    ) -> "MatchArrays":
        """Rows of (position, variable id) pairs in position order (-1: a position no variable names), as
        an automaton run enumerates them: the positions are the row, the named ones its bindings."""
        positions = np.asarray(positions, np.int64)
        variables = _variable_ids(variables)
        offsets = np.asarray(offsets, np.int64)
        if every(variables, lambda part: part >= 0):
            width, n = cls.width(offsets), len(offsets) - 1
            pattern = variables[offsets[0] : offsets[0] + (width or 0)]
            if width and not np.asarray(kleene, bool)[pattern].any():
                rows = variables[offsets[0] : offsets[-1]].reshape(n, width)
                if every(rows, lambda part: part == pattern):
                    return cls(
                        offsets,
                        positions,
                        offsets,
                        positions,
                        None,
                        names,
                        kleene,
                        emitted_at,
                        sorted_within_last=sorted_within_last,
                        row_variables=pattern.copy(),
                        groups_in_order=groups_in_order,
                    )
            return cls(
                offsets,
                positions,
                offsets,
                positions,
                variables,
                names,
                kleene,
                emitted_at,
                sorted_within_last=sorted_within_last,
                groups_in_order=groups_in_order,
            )
        named = variables >= 0
        row = np.repeat(np.arange(len(offsets) - 1), offsets[1:] - offsets[:-1])
        bound_offsets = np.zeros(len(offsets), np.int64)
        np.cumsum(np.bincount(row[named], minlength=len(offsets) - 1), out=bound_offsets[1:])
        return cls(
            offsets,
            positions,
            bound_offsets,
            positions[named],
            variables[named],
            names,
            kleene,
            emitted_at,
            sorted_within_last=sorted_within_last,
            groups_in_order=groups_in_order,
        )

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
        return cls(
            offsets,
            positions,
            bound_offsets,
            bound_positions,
            bound_variables,
            [n for n, _ in ids],
            [k for _, k in ids],
            emitted,
            sign,
            objects=list(matches),
        )

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def take(self, rows) -> "MatchArrays":
        """The rows ``rows`` (indices, repeats allowed, or a mask), in that order."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        offsets, flat = gather(self.offsets, rows)
        positions = self.positions[flat]
        if self.bound_offsets is self.offsets and self.bound_positions is self.positions:
            bound_offsets, bound_flat, bound_positions = offsets, flat, positions  # every position is bound
        else:
            bound_offsets, bound_flat = gather(self.bound_offsets, rows)
            bound_positions = self.bound_positions[bound_flat]
        objects = None if self._objects is None else [self._objects[i] for i in rows.tolist()]
        variables = None if self._bound_variables is None else self._bound_variables[bound_flat]
        emitted = AT_LAST if self._emitted_at is None else self._emitted_at[rows]
        return MatchArrays(
            offsets,
            positions,
            bound_offsets,
            bound_positions,
            variables,
            self.names,
            self.kleene,
            emitted,
            self.sign[rows],
            objects,
            row_variables=self.row_variables,
        )

    def copy(self) -> "MatchArrays":
        """The same rows in arrays of their own (an engine's columns may be views of buffers it reuses)."""
        offsets, positions = self.offsets.copy(), self.positions.copy()
        shared = self.bound_offsets is self.offsets and self.bound_positions is self.positions
        return MatchArrays(
            offsets,
            positions,
            offsets if shared else self.bound_offsets.copy(),
            positions if shared else self.bound_positions.copy(),
            None if self._bound_variables is None else self._bound_variables.copy(),
            self.names,
            self.kleene,
            AT_LAST if self._emitted_at is None else self._emitted_at.copy(),
            self.sign.copy(),
            sorted_within_last=self.sorted_within_last,
            row_variables=self.row_variables,
            groups_in_order=self.groups_in_order,
        )

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
        return Match(
            tuple(self.positions[self.offsets[i] : self.offsets[i + 1]].tolist()),
            self._binding_dict(i),
            "+" if self.sign[i] > 0 else "-",
            None if e < 0 else e,
        )

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
        zipped into tuples (in C), over ints shared where positions repeat (``shared_ints``)."""
        offsets = self.offsets[start : stop + 1]
        first = int(offsets[0])
        positions = shared_ints(self.positions[first : int(offsets[-1])])
        width = self.width(offsets)
        if width is not None:
            return row_tuples(positions.reshape(stop - start, width))
        lengths = offsets[1:] - offsets[:-1]
        out = np.empty(stop - start, object)
        for length in np.unique(lengths).tolist():
            rows = np.flatnonzero(lengths == length)
            at = (offsets[rows] - first)[:, None] + np.arange(length)
            out[rows] = np.fromiter(row_tuples(positions[at]), dtype=object, count=len(rows))
        return out.tolist()

    @staticmethod
    def width(offsets: np.ndarray) -> Optional[int]:
        """The length every row has (0 without rows), or None when they differ; read a slice at a time."""
        if len(offsets) < 2:
            return 0
        first = int(offsets[1] - offsets[0])
        for start in range(0, len(offsets) - 1, SLICE):
            part = offsets[start : start + SLICE + 1]
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
            pattern = self.bound_variables[: width or 0]
            same_variables = (
                width is not None
                and n
                and not self.kleene.any()
                and (self.bound_variables.reshape(n, width) == pattern).all()
            )
        if same_variables:
            names = [self.names[v] for v in pattern.tolist()]
            bound = row_tuples(self.bound_positions.reshape(n, width))
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
                if len(columns) == 1:  # rows of one shape: one column of their bindings
                    rows = self.bound_positions[self.bound_offsets[0] : self.bound_offsets[-1]]
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
                empty = positions < 0  # the empty tuple's marker entry
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
        before = -1  # a slice of rows at a time: no array as long as the rows
        for start in range(0, len(self), SLICE):
            last = self.positions[self.offsets[start + 1 : start + SLICE + 1] - 1]
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
        last = np.where(
            lengths > 0, self.positions[np.maximum(self.offsets[1:] - 1, 0)] if len(self.positions) else -1, -1
        )
        words = sort_words(last, padded(self.offsets, self.positions, -1))
        order = lex_order(words, n)
        tie = same_as_previous(words, order)
        if not tie.any():
            return order, np.ones(n, bool)
        group = np.cumsum(~tie) - 1
        in_tie = tie.copy()
        in_tie[:-1] |= tie[1:]
        slots = np.flatnonzero(in_tie)
        rows = order[slots]
        tokens = self._binding_tokens(rows)
        tied_words = sort_words(group[slots], tokens)
        sub = lex_order(tied_words, len(rows))
        duplicate = same_as_previous(tied_words, sub)
        order = order.copy()
        order[slots] = rows[sub]
        keep = np.ones(n, bool)
        keep[slots[duplicate]] = False
        return order[keep], ~tie[keep]

    def _binding_tokens(self, rows: np.ndarray) -> np.ndarray:
        """Per row, its bindings as a padded token row ordered like ``tuple(sorted(bindings.items()))``."""
        offsets, flat = gather(self.bound_offsets, rows)
        position, var = self.bound_positions[flat], self.bound_variables[flat]
        row = np.repeat(np.arange(len(rows)), offsets[1:] - offsets[:-1])
        rank = (
            np.unique(np.asarray(self.names, dtype=object), return_inverse=True)[1].reshape(-1)[var]
            if self.names
            else var
        )
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
        return padded(token_offsets, tokens, -1)


def _bound_entries(c: MatchArrays, ids: list):
    """(row of each entry, entry index) of the binding entries of the variable ids ``ids``, a slice of
    rows at a time, in row order."""
    offsets = c.bound_offsets
    for start in range(0, len(c), SLICE):
        bounds = offsets[start : start + SLICE + 1]
        first = int(bounds[0])
        variables = c.bound_variables[first : int(bounds[-1])]
        hit = variables == ids[0] if len(ids) == 1 else np.isin(variables, ids)
        entries = np.flatnonzero(hit)
        rows = np.searchsorted(bounds, entries + first, "right") - 1 + start
        yield rows, entries + first
