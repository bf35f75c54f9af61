"""What the ses and rcep engines' per-event steps (``ses/step.py``, ``rcep/step.py``: ``Matcher.pusher``)
share: the kept events as growing columns (``KeptEvents``), the buffers a kernel writes its rows into
(``Rows``), those rows as ``Match`` objects, and the matcher's push of an event the step does not take.

A step calls its kernel with the same arguments from one call to the next (``KeptEvents.grown`` and
``Rows.grown`` count the replacements of the arrays in them; the bounds of a call are written into a
small array): numba then neither types the arguments (``compiled.entry``) nor boxes an array per result
(~0.35 µs each: the kernel writes into ``Rows`` and returns two counts)."""

from __future__ import annotations

import numpy as np

from ..runtime.event_record import Event, key_column, values_event, values_key
from ..runtime.match_record import Match, output_order
from .compiled import entry, grow, jit


def widened(array: np.ndarray, n: int, size: int) -> np.ndarray:
    """A 2-D ``array``'s first ``n`` columns in one of ``size`` columns."""
    wider = np.zeros((array.shape[0], size), dtype=array.dtype)
    wider[:, :n] = array[:, :n]
    return wider


class KeyCodes:
    """PARTITION BY key -> code, numbered as met (``code_of``), read from a pusher's values (``__call__``:
    (key, code)); a key of one column holding an int or a str is looked up by that value (``by_value``:
    the key is the value's 1-tuple, and an int never equals a str)."""

    def __init__(self, partition_by, columns: tuple):
        at = {name: i for i, name in enumerate(columns)}
        key_at = [(name, at.get(name)) for name in partition_by]
        self.key_of, self.column = values_key(key_at), key_column(key_at)
        self.clear()

    def clear(self) -> None:
        self.codes: dict = {}
        self.by_value: dict = {}  # an int or str value of the one key column -> (key, code)

    def code_of(self, key: tuple) -> int:
        code = self.codes.get(key)
        if code is None:
            code = self.codes[key] = len(self.codes)
        return code

    def __call__(self, type_: str, time: float, values) -> tuple:
        """(key, code) of the event (TypeError: the key is not hashable)."""
        column = self.column
        if column is not None:
            value = values[column]
            kind = type(value)
            if kind is int or kind is str:
                found = self.by_value.get(value)
                if found is None:
                    key = (value,)
                    found = self.by_value[value] = key, self.code_of(key)
                return found
        key = self.key_of(type_, time, values)
        return key, self.code_of(key)


class KeptEvents:
    """The events a step keeps, index i in [lo, n) live: ``coord`` (its window coordinate: time, or its
    sequence number in its sub-stream), ``mask`` (the variables or slots taking it), ``code`` (its window
    or PARTITION BY key's code), ``position``, the join and chain keys (``kval``, valid where ``kok``)
    and ``rows`` (an ``Event`` taken over from the matcher, or the step's (type, time, values,
    position)). Written item by item through memoryviews (a third of numpy's cost per item)."""

    SIZE = 64

    def __init__(self, n_keys: int):
        self.n_keys = n_keys
        self.grown = 0  # replacements of the arrays (``grow``)
        self.clear()

    def clear(self) -> None:
        size = self.SIZE
        self.coord = np.zeros(size)
        self.mask = np.zeros(size, dtype=np.int64)
        self.code = np.zeros(size, dtype=np.int64)
        self.position = np.zeros(size, dtype=np.int64)
        self.kval = np.zeros((self.n_keys, size))
        self.kok = np.zeros((self.n_keys, size), dtype=np.bool_)
        self.rows: list = []  # (index i is rows[i]; compact and pop keep them aligned)
        self.lo = self.n = 0
        self._views()

    def _views(self) -> None:
        self.grown += 1
        self.size = len(self.coord)
        self._coord, self._mask, self._code, self._position, self._kval, self._kok = map(
            memoryview, (self.coord, self.mask, self.code, self.position, self.kval, self.kok)
        )

    def append(self, row, coord: float, mask: int, code: int, position: int, keys) -> None:
        """Event ``n`` (room for it: ``n < size``); ``keys`` its key values (None: missing)."""
        n = self.n
        self._coord[n], self._mask[n], self._code[n], self._position[n] = coord, mask, code, position
        if keys:
            kval, kok = self._kval, self._kok
            for k, value in enumerate(keys):
                if value is None:
                    kok[k, n] = False
                else:
                    kval[k, n], kok[k, n] = value, True
        self.rows.append(row)
        self.n = n + 1

    def pop(self) -> None:
        """The last event dropped."""
        self.n -= 1
        self.rows.pop()

    def compact(self, keep) -> None:
        """Only the events ``keep`` (a slice, or ascending indices) left, from index 0."""
        if isinstance(keep, slice):
            k = len(self.rows[keep])
            self.rows = self.rows[keep]
        else:
            k = len(keep)
            rows = self.rows
            self.rows = [rows[i] for i in keep.tolist()]
        for array in (self.coord, self.mask, self.code, self.position):
            array[:k] = array[keep]
        self.kval[:, :k], self.kok[:, :k] = self.kval[:, keep], self.kok[:, keep]
        self.lo, self.n = 0, k

    def grow(self) -> None:
        """Twice the room."""
        n, size = self.n, 2 * self.size
        self.coord, self.mask, self.code, self.position = (
            grow(a, size) for a in (self.coord, self.mask, self.code, self.position)
        )
        self.kval, self.kok = widened(self.kval, n, size), widened(self.kok, n, size)
        self._views()

    def events(self, columns: tuple, index) -> list:
        """The ``Event`` of each kept event ``index`` (a slice, or indices), for the matcher."""
        rows = self.rows[index] if isinstance(index, slice) else [self.rows[i] for i in index.tolist()]
        return [
            row if isinstance(row, Event) else values_event(columns, row[0], row[1], row[2], row[3]) for row in rows
        ]


class KernelCall:
    """A step's kernel over one ``KeptEvents`` and the step's ``Rows``, called as ``kernel(kept events'
    arrays, *middle, rows' buffers)``: the arguments made again only when an array in them was replaced,
    the machine code found once (``compiled.entry``), the buffers grown when the rows did not fit (the
    kernel returns (rows, cells, ...), negative then). ``code``: a one-item list holding the machine code,
    shared by the calls of one step over several tables (None until found)."""

    def __init__(self, kernel, kept: "KeptEvents", out: "Rows", middle: tuple, code: list):
        self.kernel, self.kept, self.out, self.middle, self.shared = kernel, kept, out, middle, code
        self.code = code[0]
        self.made: tuple = ()
        self.args: tuple = ()

    def __call__(self) -> tuple:
        kept, out = self.kept, self.out
        if self.made != (kept.grown, out.grown):
            self._arguments()
        found = self.code(*self.args)
        if found[0] < 0:
            out.room(-found[0], -found[1])
            self._arguments()
            found = self.code(*self.args)
        return found

    def _arguments(self) -> None:
        kept, out = self.kept, self.out
        self.args = (
            (kept.coord, kept.mask, kept.code, kept.position, kept.kval, kept.kok),
            *self.middle,
            (out.offsets, out.positions, out.ids),
        )
        self.made = kept.grown, out.grown
        if self.code is None:  # (the arguments' types never change: no numba dispatch per call)
            self.code = self.shared[0] = self.shared[0] or entry(self.kernel, self.args)


class Rows:
    """The buffers a step's kernel writes its rows into (``written``): ``offsets``, ``positions``
    (ascending in each row) and ``ids`` (the variable or slot of each position), made into ``Match``
    objects by ``matches``: ``names[id]`` the variable (None: not shown), bound to a tuple where
    ``kleene[id]``. A row whose ids are all named and single is a ``Match.named``, its names tuple kept from
    one row to the next with the same ids; another a ``Match.grouped`` (both make their bindings dict when
    it is read: a pusher's caller may only count the matches or pass them on)."""

    def __init__(self, names: list, kleene: list, ordered: bool = False):
        self.names, self.kleene = names, kleene
        self.plain = all(name is not None for name in names) and not any(kleene)
        self.width = len(names)  # (plain: every row binds each id once)
        # ``ordered``: every row's ids are 0, 1, ... (a sequence of single variables): its names are these
        self.ordered = tuple(names) if ordered and self.plain else None
        self.same: tuple = (None, None)  # the ids of the last plain row made, and their names
        self.kleene_names = frozenset(name for name, k in zip(names, kleene) if k and name is not None)
        self.cache: dict = {}  # the ids of a row -> their names (not plain)
        self.offsets = np.zeros(64, dtype=np.int64)
        self.positions = np.zeros(256, dtype=np.int64)
        self.ids = np.zeros(256, dtype=np.int64)
        self._positions, self._ids = memoryview(self.positions), memoryview(self.ids)
        self.grown = 0  # replacements of the buffers

    def room(self, rows: int, cells: int) -> None:
        """Buffers for ``rows`` rows of ``cells`` positions in all (a kernel said they did not fit)."""
        self.offsets = grow(self.offsets, rows + 1)
        self.positions, self.ids = grow(self.positions, cells), grow(self.ids, cells)
        self._positions, self._ids = memoryview(self.positions), memoryview(self.ids)
        self.grown += 1

    def matches(self, rows: int, cells: int, emitted: int) -> list:
        """A ``Match`` per written row, emitted at ``emitted``."""
        named = Match.named
        if self.plain:  # (every row ``width`` long: its tuples zipped from one iterator over the cells)
            width = self.width
            cut = [iter(self._positions[:cells].tolist())] * width
            if self.ordered is not None:
                names = self.ordered
                return [named(row, names, emitted) for row in zip(*cut)]
            same_ids, same_names = self.same
            names = self.names
            found = []
            append = found.append
            for row, row_ids in zip(zip(*cut), zip(*[iter(self._ids[:cells].tolist())] * width)):
                if row_ids != same_ids:
                    same_ids, same_names = row_ids, tuple(names[v] for v in row_ids)
                append(named(row, same_names, emitted))
            self.same = same_ids, same_names
            return found
        names, grouped, cache = self.names, Match.grouped, self.cache
        if len(cache) > 4096:  # (the ids of rows of many lengths)
            cache.clear()
        found = []
        append = found.append
        bounds, ids, positions = (
            self.offsets[: rows + 1].tolist(),
            self.ids[:cells].tolist(),
            self.positions[:cells].tolist(),
        )
        for a, b in zip(bounds, bounds[1:]):
            row_ids = tuple(ids[a:b])
            row_names = cache.get(row_ids)
            if row_names is None:
                row_names = cache[row_ids] = tuple(names[v] for v in row_ids)
            append(grouped(tuple(positions[a:b]), row_names, self.kleene_names, emitted))
        return found


@jit
def written(offsets, positions, ids, keep, order, out):
    """A kernel's rows (those ``keep`` marks; all when it is empty), taken in ``order`` (row indices; row
    order when it is empty), copied into a step's ``Rows`` buffers ``out`` (offsets, positions, ids):
    (rows, cells), or (-rows, -cells) when they do not fit (nothing written)."""
    out_offsets, out_positions, out_ids = out
    rows, cells = 0, 0
    for r in range(len(offsets) - 1):
        if len(keep) == 0 or keep[r]:
            rows += 1
            cells += offsets[r + 1] - offsets[r]
    if rows + 1 > len(out_offsets) or cells > len(out_positions):
        return -rows, -cells
    out_offsets[0] = 0
    k, c = 0, 0
    for i in range(len(offsets) - 1):
        r = order[i] if len(order) else i
        if len(keep) == 0 or keep[r]:
            for j in range(offsets[r], offsets[r + 1]):
                out_positions[c], out_ids[c] = positions[j], ids[j]
                c += 1
            k += 1
            out_offsets[k] = c
    return rows, cells


def pushed(matcher, columns: tuple, type_: str, time: float, values, position: int) -> list:
    """``matcher.push`` of the event (one a step does not take), in output order."""
    found = matcher.push(values_event(columns, type_, time, values, position))
    return output_order(found) if found else found
