"""A micro-batch's matches held as columns and read as a list of ``Match`` objects."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .match_arrays import AT_LAST, MatchArrays


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
            return np.concatenate([v[o[0] : o[-1]] for v, o in zip(values, offsets)])

        bounds = [a.bound_offsets for a in arrays]
        # the columns left to be made when read stay so when every part left them
        pattern = first.row_variables
        lazy = pattern is not None and all(
            a._bound_variables is None and a.row_variables is not None and np.array_equal(a.row_variables, pattern)
            for a in arrays
        )
        at_last = all(a._emitted_at is None for a in arrays)
        return MatchList(
            MatchArrays(
                stacked([a.offsets for a in arrays]),
                flat([a.positions for a in arrays], [a.offsets for a in arrays]),
                stacked(bounds),
                flat([a.bound_positions for a in arrays], bounds),
                None if lazy else flat([a.bound_variables for a in arrays], bounds),
                first.names,
                first.kleene,
                AT_LAST if at_last else np.concatenate([a.emitted_at for a in arrays]),
                np.concatenate([a.sign for a in arrays]),
                row_variables=pattern if lazy else None,
            )
        )
