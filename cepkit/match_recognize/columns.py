"""DEFINE conditions evaluated over whole columns, when a condition reads only its own row and rows at fixed
offsets from it (PREV / NEXT): ``holds[row, var]`` for every row at once, SQL's three-valued logic kept as a
value array and a null mask. The same rules as ``semantics.evaluate``, row by row (tests compare them).
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np
import pandas as pd

from ..errors import QueryError
from . import ast as A

Values = Tuple[np.ndarray, np.ndarray]  # values, null mask


def row_local(expr, var: str, subsets: Dict[str, Tuple[str, ...]]) -> bool:
    """True when ``expr`` (the DEFINE of ``var``) reads only the row being classified and rows at fixed
    offsets from it: then its value does not depend on how the other rows were mapped."""
    if isinstance(expr, A.Literal):
        return True
    if isinstance(expr, A.Column):
        return expr.var is None or var in subsets.get(expr.var, (expr.var,))
    if isinstance(expr, A.Navigation):
        return expr.kind in ("PREV", "NEXT") and row_local(expr.arg, var, subsets)
    if isinstance(expr, (A.Aggregate, A.Classifier, A.MatchNumber)):
        return False
    if isinstance(expr, (A.Arith, A.Compare)):
        return row_local(expr.left, var, subsets) and row_local(expr.right, var, subsets)
    if isinstance(expr, (A.Negate, A.Not, A.IsNull)):
        return row_local(expr.arg, var, subsets)
    if isinstance(expr, (A.And, A.Or)):
        return all(row_local(item, var, subsets) for item in expr.items)
    if isinstance(expr, A.InList):
        return row_local(expr.arg, var, subsets) and all(row_local(i, var, subsets) for i in expr.items)
    return False


class Columns:
    """The sorted rows' columns as numpy arrays (nulls as a mask), and each row's partition bounds."""

    def __init__(self, frame: pd.DataFrame, part_first: np.ndarray, part_end: np.ndarray, text: str = ""):
        self.frame = frame
        self.n = len(frame)
        self.part_first = part_first
        self.part_end = part_end
        self.text = text
        self._cache: Dict[str, Values] = {}
        self._codes: Dict[str, Tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def column(self, name: str) -> Values:
        """A column's values (nulls filled with 0, "" or NaT) and null mask; ints stay ints, as in Python."""
        if name not in self._cache:
            self._cache[name] = as_values(self.frame[name])
        return self._cache[name]

    def holds(self, expr) -> np.ndarray:
        """Where ``expr`` is true (null and false: not)."""
        values, null = self.evaluate(expr)
        return np.asarray(values, dtype=bool) & ~null

    def evaluate(self, expr, rows: Optional[np.ndarray] = None) -> Values:
        """``expr`` at each of ``rows`` (-1: outside the partition, every column null there; None: every row
        in order, read without copying)."""
        n = self.n if rows is None else rows.shape[0]
        if isinstance(expr, A.Literal):
            if expr.value is None:
                return np.zeros(n), np.ones(n, bool)
            return np.full(n, expr.value, dtype=object if isinstance(expr.value, str) else None), np.zeros(n, bool)
        if isinstance(expr, A.Column):
            values, null = self.column(expr.name)
            if rows is None:
                return values, null
            inside = rows >= 0
            safe = np.where(inside, rows, 0)
            return values[safe], null[safe] | ~inside
        if isinstance(expr, A.Navigation):
            step = -expr.offset if expr.kind == "PREV" else expr.offset
            if rows is None:
                moved = np.arange(step, self.n + step)
                inside = (moved >= self.part_first) & (moved < self.part_end)
                if isinstance(expr.arg, A.Column):  # the common PREV(price): a shifted copy, no gather
                    return self._shifted(expr.arg.name, step, inside)
            else:
                safe = np.where(rows >= 0, rows, 0)
                moved = rows + step
                inside = (rows >= 0) & (moved >= self.part_first[safe]) & (moved < self.part_end[safe])
            return self.evaluate(expr.arg, np.where(inside, moved, -1))
        if isinstance(expr, (A.Compare, A.InList)):
            fast = self._string_test(expr, rows)
            if fast is not None:
                return fast
        return self.combine(expr, lambda item: self.evaluate(item, rows))

    def _string_test(self, expr, rows) -> Optional[Values]:
        """``type = 'FOG'``, ``type <> 'FOG'``, ``type IN ('FOG', 'SNOW')`` on a column of strings: compared
        once per distinct value (the column factorized), then read per row as codes."""
        if isinstance(expr, A.Compare):
            if expr.op not in ("=", "<>"):
                return None
            column, literal = (expr.left, expr.right) if isinstance(expr.left, A.Column) else (expr.right, expr.left)
            items, negated = (literal,), expr.op == "<>"
        else:
            column, items, negated = expr.arg, expr.items, expr.negated
        if not isinstance(column, A.Column) or not all(
            isinstance(i, A.Literal) and isinstance(i.value, str) for i in items
        ):
            return None
        if column.name not in self._codes:
            series = self.frame[column.name]
            if isinstance(series.dtype, pd.CategoricalDtype):  # already factorized (cepkit.spark.sql's workers)
                codes = series.cat.codes.to_numpy()
                self._codes[column.name] = (codes, np.asarray(series.cat.categories, dtype=object), codes < 0)
            else:
                values, null = self.column(column.name)
                if values.dtype != object:
                    return None
                codes, uniques = pd.factorize(values)
                self._codes[column.name] = (codes, np.asarray(uniques, dtype=object), null)
        codes, uniques, null = self._codes[column.name]
        if any(not isinstance(u, str) for u in uniques):
            return None  # mixed types: the general rules say which comparisons are errors
        wanted = np.isin(uniques, [i.value for i in items])
        hit = np.append(wanted, False)[codes]  # code -1 (null) reads the appended False
        if rows is not None:
            inside = rows >= 0
            hit = np.where(inside, hit[np.where(inside, rows, 0)], False)
            null = np.where(inside, null[np.where(inside, rows, 0)], True)
        return (~hit if negated else hit), null.copy()

    def _shifted(self, name: str, step: int, inside: np.ndarray) -> Values:
        values, null = self.column(name)
        out, out_null = np.empty_like(values), np.ones(self.n, bool)
        if abs(step) < self.n:
            if step >= 0:
                out[: self.n - step], out_null[: self.n - step] = values[step:], null[step:]
            else:
                out[-step:], out_null[-step:] = values[: self.n + step], null[: self.n + step]
        out[~inside] = _filler(values)
        return out, out_null | ~inside

    def combine(self, expr, operand) -> Values:
        """An operator's value from its operands' (``operand(item)`` -> Values): SQL's null rules."""
        if isinstance(expr, A.Negate):
            values, null = operand(expr.arg)
            return -values, null
        if isinstance(expr, A.Arith):
            (left, lnull), (right, rnull) = operand(expr.left), operand(expr.right)
            self._numbers(left, lnull, expr.op)
            self._numbers(right, rnull, expr.op)
            null = lnull | rnull
            left, right = np.where(null, 0, left), np.where(null, 1, right)
            if expr.op in ("/", "%"):
                zero = right == 0
                null = null | zero
                right = np.where(zero, 1, right)
                return (left / right if expr.op == "/" else np.fmod(left, right)), null
            result = {"+": np.add, "-": np.subtract, "*": np.multiply}[expr.op](left, right)
            return result, null
        if isinstance(expr, A.Compare):
            (left, lnull), (right, rnull) = operand(expr.left), operand(expr.right)
            null = lnull | rnull
            self._comparable(left, right, null)
            with np.errstate(invalid="ignore"):
                result = {
                    "=": np.equal,
                    "<>": np.not_equal,
                    "<": np.less,
                    "<=": np.less_equal,
                    ">": np.greater,
                    ">=": np.greater_equal,
                }[expr.op](np.where(null, _filler(left), left), np.where(null, _filler(right), right))
            return np.asarray(result, dtype=bool), null
        if isinstance(expr, A.Not):
            values, null = operand(expr.arg)
            return ~np.asarray(values, dtype=bool), null
        if isinstance(expr, A.IsNull):
            _, null = operand(expr.arg)
            return (~null if expr.negated else null), np.zeros(null.shape[0], bool)
        if isinstance(expr, (A.And, A.Or)):
            parts = [operand(item) for item in expr.items]
            trues = [np.asarray(v, dtype=bool) & ~m for v, m in parts]
            falses = [~np.asarray(v, dtype=bool) & ~m for v, m in parts]
            if isinstance(expr, A.And):
                false = np.logical_or.reduce(falses)
                true = np.logical_and.reduce(trues)
                return true, ~true & ~false
            true = np.logical_or.reduce(trues)
            false = np.logical_and.reduce(falses)
            return true, ~true & ~false
        if isinstance(expr, A.InList):
            eq = [operand(A.Compare("=", expr.arg, item)) for item in expr.items]
            found = np.logical_or.reduce([v & ~m for v, m in eq])
            unknown = np.logical_or.reduce([m for _, m in eq]) & ~found
            return (found != expr.negated) & ~unknown, unknown
        raise QueryError(f"{type(expr).__name__} cannot be evaluated row by row", self.text)

    def _numbers(self, values, null, op):
        if values.dtype == object and (~null).any():
            sample = values[~null][0]
            if isinstance(sample, str):
                raise QueryError(f"{op!r} needs numbers, not the string {sample!r}", self.text)

    def _comparable(self, left, right, null):
        if (left.dtype == object) == (right.dtype == object) or null.all():
            return
        strings = left if left.dtype == object else right
        sample = strings[~null][0] if (~null).any() else None
        if isinstance(sample, str):
            raise QueryError(f"cannot compare the string {sample!r} with a number", self.text)


def _filler(values: np.ndarray):
    if values.dtype == object:
        return ""
    return np.datetime64("NaT") if values.dtype.kind == "M" else 0


def as_values(series: pd.Series) -> Values:
    """A pandas column as (values, null mask): bools and ints (nullable or not) as int64/bool arrays with 0
    where null, floats with NaN, datetimes as datetime64, anything else as objects."""
    null = series.isna().to_numpy()
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return series.to_numpy(dtype=bool, na_value=False), null
    if pd.api.types.is_integer_dtype(dtype):
        return series.to_numpy(dtype=np.int64, na_value=0), null
    if pd.api.types.is_float_dtype(dtype):
        return series.to_numpy(dtype=float, na_value=np.nan), null
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return series.to_numpy(dtype="datetime64[ns]"), null
    return series.to_numpy(dtype=object), null


def to_series(values: np.ndarray, null: np.ndarray) -> pd.Series:
    """(values, null mask) as a pandas column: nullable Int64 / boolean where an int or bool column has
    nulls, NaN / NaT / None otherwise."""
    kind = values.dtype.kind
    if not null.any():
        return pd.Series(values)
    if kind in "iu":
        return pd.Series(pd.arrays.IntegerArray(values.astype(np.int64), null.copy()))
    if kind == "b":
        return pd.Series(pd.arrays.BooleanArray(values.astype(bool), null.copy()))
    if kind == "f":
        return pd.Series(np.where(null, np.nan, values))
    if kind == "M":
        return pd.Series(np.where(null, np.datetime64("NaT"), values))
    out = values.astype(object).copy()
    out[null] = None
    return pd.Series(out, dtype=object)


def output_frame(query, taken: pd.DataFrame, measures: Dict[str, object]) -> pd.DataFrame:
    """The output rows in the standard's column order: partition columns, (ALL ROWS: the ORDER BY columns,)
    the measures, (ALL ROWS: the other input columns), read from ``taken`` (the input rows each output row
    comes from, in order)."""
    out = pd.DataFrame(index=pd.RangeIndex(len(taken)))
    for name in query.partition:
        out[name] = taken[name]
    if query.rows == "all":
        for name, _ in query.order:
            out[name] = taken[name]
    for name, values in measures.items():
        out[name] = values
    if query.rows == "all":
        for name in taken.columns:
            if name not in out.columns:
                out[name] = taken[name]
    return localized(query, taken, out)


def localized(query: A.Recognize, rows: pd.DataFrame, out: pd.DataFrame) -> pd.DataFrame:
    """Measures read from a time-zone aware column carry its zone (they are computed in UTC)."""
    for name, expr in query.measures:
        inner = A.innermost(expr.arg if isinstance(expr, A.Aggregate) and expr.arg is not None else expr)
        if isinstance(inner, A.Column) and pd.api.types.is_datetime64_any_dtype(out[name].dtype):
            zone = getattr(rows[inner.name].dtype, "tz", None)
            if zone is not None and getattr(out[name].dtype, "tz", None) is None:
                out[name] = out[name].dt.tz_localize("UTC").dt.tz_convert(zone)
    return out
