"""MEASURES over every output row at once, from the matches' flat arrays: the rules of
``semantics.evaluate`` (running and final semantics, navigation, aggregates, CLASSIFIER, MATCH_NUMBER)
as numpy operations, so a million rows with a hundred thousand matches cost array passes, not a Python
call per match.

An output row is (a match, a prefix end): the flat index of the last mapped row it sees (its own row under
running semantics in ALL ROWS PER MATCH, the match's last row otherwise; ``offset - 1`` for an empty match).
"""

from __future__ import annotations

from typing import Dict, Tuple

import numpy as np
import pandas as pd

from ..errors import QueryError
from . import ast as A
from .ast import innermost
from .columns import Columns, Values


class Measures:
    """Evaluates measures for output rows ``(match[j], end[j])`` (match -1: an unmatched row, all null)."""

    def __init__(
        self,
        columns: Columns,
        variables: Tuple[str, ...],
        subsets: Dict[str, Tuple[str, ...]],
        number: np.ndarray,
        offset: np.ndarray,
        flat_row: np.ndarray,
        flat_var: np.ndarray,
        match: np.ndarray,
        end: np.ndarray,
        text: str = "",
    ):
        self.columns = columns
        self.variables = variables
        self.subsets = subsets
        self.number = number
        self.flat_row = flat_row
        self.flat_var = flat_var
        self.valid = match >= 0
        safe = np.where(self.valid, match, 0)
        self.match = safe
        self.lo = offset[:-1][safe] if len(offset) > 1 else np.zeros(len(match), np.int64)
        self.hi = offset[1:][safe] - 1 if len(offset) > 1 else np.full(len(match), -1, np.int64)
        self.offset = offset
        self.end = end
        self.text = text
        self._positions: Dict[object, np.ndarray] = {}

    def evaluate(self, expr) -> Values:
        if not self.valid.any():  # no output row belongs to a match: every measure is null
            return np.zeros(len(self.end), dtype=object), np.ones(len(self.end), bool)
        values, null = self._eval(expr)
        return values, null | ~self.valid

    def _variable(self, expr):
        names = A.variables_of(expr)
        if len(names) > 1:
            raise QueryError(
                "an expression under navigation or aggregation must name one variable, not "
                + ", ".join(sorted(str(n) for n in names)),
                self.text,
            )
        return next(iter(names), None)

    # ---- rows a reference points at
    def _positions_of(self, var) -> np.ndarray:
        """Flat indexes of the rows mapped to ``var`` (a variable or subset; None: every row), in order."""
        if var not in self._positions:
            if var is None:
                self._positions[var] = np.arange(len(self.flat_var))
            else:
                ids = [self.variables.index(v) for v in self.subsets.get(var, (var,)) if v in self.variables]
                self._positions[var] = np.flatnonzero(np.isin(self.flat_var, ids))
        return self._positions[var]

    def _upto(self, final: bool) -> np.ndarray:
        return self.hi if final else self.end

    def _window(self, var, final: bool):
        """Per output row, the range [first, stop) of ``_positions_of(var)`` inside its match's prefix."""
        positions = self._positions_of(var)
        first = np.searchsorted(positions, self.lo, "left")
        stop = np.searchsorted(positions, self._upto(final), "right")
        stop = np.maximum(stop, first)
        return positions, first, stop

    def _rows(self, expr, final: bool = False) -> np.ndarray:
        """The sorted-frame row each output row's ``expr`` points at (-1: none)."""
        if isinstance(expr, A.Navigation) and expr.kind in ("FIRST", "LAST"):
            positions, first, stop = self._window(self._variable(expr.arg), expr.final or final)
            k = first + expr.offset if expr.kind == "FIRST" else stop - 1 - expr.offset
            ok = (k >= first) & (k < stop)
            return np.where(
                ok, self.flat_row[positions[np.clip(k, 0, max(len(positions) - 1, 0))]] if len(positions) else -1, -1
            )
        if isinstance(expr, A.Navigation):
            base = self._rows(expr.arg, final or expr.final)
            safe = np.where(base >= 0, base, 0)
            moved = base - expr.offset if expr.kind == "PREV" else base + expr.offset
            inside = (base >= 0) & (moved >= self.columns.part_first[safe]) & (moved < self.columns.part_end[safe])
            return np.where(inside, moved, -1)
        positions, first, stop = self._window(self._variable(expr), final)
        ok = stop > first
        last = positions[np.clip(stop - 1, 0, max(len(positions) - 1, 0))] if len(positions) else stop
        return np.where(ok, self.flat_row[last] if len(positions) else -1, -1)

    # ---- expressions
    def _eval(self, expr) -> Values:
        n = len(self.end)
        if isinstance(expr, (A.Column, A.Navigation)):
            return self.columns.evaluate(innermost(expr), self._rows(expr))
        if isinstance(expr, A.Literal):
            return self.columns.evaluate(expr, np.zeros(n, np.int64))
        if isinstance(expr, A.MatchNumber):
            return self.number[self.match], np.zeros(n, bool)
        if isinstance(expr, A.Classifier):
            at = self._upto(expr.final)
            empty = at < self.lo
            names = np.array(self.variables + ("",), dtype=object)
            ids = np.where(
                empty,
                len(self.variables),
                self.flat_var[np.clip(at, 0, None)] if len(self.flat_var) else len(self.variables),
            )
            return names[ids], empty
        if isinstance(expr, A.Aggregate):
            return self._aggregate(expr)
        # An operator: its operands are per output row; evaluate them here and combine as the row rules do.
        return self.columns.combine(expr, lambda item: self._eval(item))

    def _aggregate(self, expr: A.Aggregate) -> Values:
        n = len(self.end)
        var = expr.var if expr.arg is None else self._variable(expr.arg)
        positions, first, stop = self._window(var, expr.final)
        if expr.arg is None:
            return (stop - first).astype(np.int64), np.zeros(n, bool)
        values, null = self.columns.evaluate(expr.arg, self.flat_row[positions])
        present = (~null).astype(np.int64)
        counts = np.r_[0, np.cumsum(present)]
        count = counts[stop] - counts[first]
        if expr.func == "COUNT":
            return count.astype(np.int64), np.zeros(n, bool)
        empty = count == 0
        if values.dtype == object or values.dtype.kind == "M":
            if expr.func in ("SUM", "AVG") or (values.dtype == object and (~null).any()):
                raise QueryError(f"{expr.func} needs numbers", self.text)
        if expr.func in ("SUM", "AVG"):
            sums = np.r_[0, np.cumsum(np.where(null, 0, values))]
            total = sums[stop] - sums[first]
            if expr.func == "SUM":
                return total, empty
            return total / np.where(empty, 1, count), empty
        # MIN / MAX: the running extreme of each match's rows of var, read at the prefix's last one.
        better = np.minimum if expr.func == "MIN" else np.maximum
        fill = _extreme(values.dtype, expr.func)
        filled = np.where(null, fill, values)
        starts = np.zeros(len(positions), bool)
        if len(positions):
            owner = np.searchsorted(self.offset, positions, "right") - 1
            starts[0] = True
            starts[1:] = owner[1:] != owner[:-1]
        running = _segmented_accumulate(better, filled, starts)
        last = np.clip(stop - 1, 0, max(len(positions) - 1, 0))
        result = running[last] if len(positions) else np.zeros(n, values.dtype)
        return result, empty


def _extreme(dtype, func: str):
    if dtype.kind == "f":
        return np.inf if func == "MIN" else -np.inf
    if dtype.kind in "iu":
        info = np.iinfo(np.int64)
        return info.max if func == "MIN" else info.min
    if dtype.kind == "b":
        return func == "MIN"
    if dtype.kind == "M":
        return np.datetime64(np.iinfo(np.int64).max if func == "MIN" else np.iinfo(np.int64).min + 1, "ns")
    return None


def _segmented_accumulate(ufunc, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``ufunc.accumulate`` (np.minimum / np.maximum) restarted wherever ``starts`` is true."""
    if not len(values):
        return values
    groups = pd.Series(values).groupby(np.cumsum(starts))
    return (groups.cummin() if ufunc is np.minimum else groups.cummax()).to_numpy(dtype=values.dtype)
