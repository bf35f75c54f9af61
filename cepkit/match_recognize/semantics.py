"""The meaning of a MATCH_RECOGNIZE query, written to be read: expressions with running and final
semantics, and a backtracking matcher that tries a start row's candidate mappings in preferment order and
keeps the first whose DEFINE conditions hold (SQL:2016 row pattern recognition; docs/language.md §13).

This is the reference every faster path is tested against, and the path that runs DEFINE conditions
which look at other rows of the match (``A.price`` inside B's condition, FIRST / LAST, aggregates).

>>> from cepkit.match_recognize.parser import parse
>>> q = parse("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A B+) DEFINE B AS B.v > PREV(B.v))")
>>> [m.rows for m in find_matches(q, {"v": [3, 1, 2, 4, 0, 5]})]
[(1, 2, 3), (4, 5)]
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ..errors import QueryError
from . import ast as A
from .columns import output_frame, to_series
from .parser import permutations


@dataclass(frozen=True)
class Found:
    """One match of a partition: its number, first row, the rows it maps (partition positions, in order),
    each row's variable, and whether the row is excluded from ALL ROWS PER MATCH (``{- -}``)."""

    number: int
    start: int
    rows: Tuple[int, ...]
    labels: Tuple[str, ...]
    excluded: Tuple[bool, ...]

    @property
    def end(self) -> int:
        """One past the last row (``start`` for an empty match)."""
        return self.rows[-1] + 1 if self.rows else self.start


# ------------------------------------------------------------------ expressions
class Undecided(Exception):
    """A stream's partition goes on past its last row, and the outcome being sought depends on rows to come."""


class Frame:
    """A partition's rows as columns (lists), its length, and the row pattern's subsets.

    ``horizon``: None for a partition that ends at its last row; for one that goes on (a stream), the time
    (int64, as ``times``) before which no row is to come: reading past the last row raises ``Undecided``."""

    def __init__(
        self,
        columns: Dict[str, Sequence[Any]],
        subsets: Dict[str, Tuple[str, ...]],
        text: str = "",
        horizon: Optional[int] = None,
    ):
        self.columns = columns
        self.n = len(next(iter(columns.values()))) if columns else 0
        self.subsets = subsets
        self.text = text
        self.horizon = horizon

    def row(self, row: int) -> Optional[int]:
        """``row`` if the partition has it, None if it has none there, ``Undecided`` if it may have it later."""
        if 0 <= row < self.n:
            return row
        if row >= self.n and self.horizon is not None:
            raise Undecided
        return None

    def value(self, name: str, row: int):
        column = self.columns.get(name)
        if column is None:
            raise QueryError(f"no column {name!r}; the columns are " + ", ".join(self.columns), self.text)
        value = column[row]
        return None if _is_null(value) else value

    def members(self, var: Optional[str]):
        return None if var is None else self.subsets.get(var, (var,))


def _is_null(value) -> bool:
    return value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value))


@dataclass
class At:
    """Where an expression is evaluated: the mapping so far (rows and variables, in row order), the row that
    plain column references read (``current``), and the match's number."""

    rows: List[int]
    labels: List[str]
    current: int
    number: int
    final_rows: Optional[List[int]] = None
    final_labels: Optional[List[str]] = None

    def mapped(self, var: Optional[str], frame: Frame, final: bool) -> List[int]:
        rows, labels = (
            (self.final_rows, self.final_labels) if final and self.final_rows is not None else (self.rows, self.labels)
        )
        members = frame.members(var)
        if members is None:
            return list(rows) if final else [r for r in rows if r <= self.current]
        return [r for r, v in zip(rows, labels) if v in members and (final or r <= self.current)]


_ARITH: Dict[str, Callable] = {"+": operator.add, "-": operator.sub, "*": operator.mul}
_CMP: Dict[str, Callable] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _anchor(expr, frame: Frame, at: At) -> Optional[int]:
    """The row an expression points at: its column references' variable's last row (the current row for the
    universal variable), or a FIRST / LAST navigation's row. None: no such row."""
    if isinstance(expr, A.Navigation) and expr.kind in ("FIRST", "LAST"):
        return _logical_row(expr, frame, at)
    if isinstance(expr, A.Navigation):
        base = _anchor(expr.arg, frame, at)
        if base is None:
            return None
        return frame.row(base - expr.offset if expr.kind == "PREV" else base + expr.offset)
    variables = A.variables_of(expr)
    if len(variables) > 1:
        raise QueryError(
            "a navigation's argument must refer to one variable: " + ", ".join(sorted(str(v) for v in variables)),
            frame.text,
        )
    var = next(iter(variables), None)
    if var is None:
        return at.current  # None in an empty match: no row
    rows = at.mapped(var, frame, final=False)
    return rows[-1] if rows else None


def _logical_row(nav: A.Navigation, frame: Frame, at: At) -> Optional[int]:
    variables = A.variables_of(nav.arg)
    if len(variables) > 1:
        raise QueryError(f"{nav.kind}'s argument must refer to one variable", frame.text)
    rows = at.mapped(next(iter(variables), None), frame, nav.final)
    if nav.offset >= len(rows):
        return None
    return rows[nav.offset] if nav.kind == "FIRST" else rows[-1 - nav.offset]


def evaluate(expr, frame: Frame, at: At, row: Optional[int] = None):
    """The value of ``expr`` (None is SQL's null). ``row``: every column reference reads this row (inside a
    navigation); otherwise a reference reads its variable's last row so far."""
    if isinstance(expr, A.Literal):
        return expr.value
    if isinstance(expr, A.Column):
        if row is None:
            row = _anchor(expr, frame, at)
        return None if row is None else frame.value(expr.name, row)
    if isinstance(expr, A.Navigation):
        if row is not None:  # already placed on a row (under an aggregate or navigation): PREV / NEXT move
            target = frame.row(row - expr.offset if expr.kind == "PREV" else row + expr.offset)
            return None if target is None else evaluate(expr.arg, frame, at, target)
        target = _anchor(expr, frame, at)
        return None if target is None else evaluate(A.innermost(expr), frame, at, target)
    if isinstance(expr, A.Aggregate):
        return _aggregate(expr, frame, at)
    if isinstance(expr, A.Classifier):
        rows, labels = (
            (at.final_rows, at.final_labels) if expr.final and at.final_rows is not None else (at.rows, at.labels)
        )
        current = rows[-1] if expr.final and rows else at.current
        for r, v in zip(rows, labels):
            if r == current:
                return v
        return None
    if isinstance(expr, A.MatchNumber):
        return at.number
    if isinstance(expr, A.Negate):
        value = evaluate(expr.arg, frame, at, row)
        return None if value is None else -value
    if isinstance(expr, A.Arith):
        left, right = evaluate(expr.left, frame, at, row), evaluate(expr.right, frame, at, row)
        if left is None or right is None:
            return None
        if expr.op in ("/", "%"):
            if right == 0:
                return None  # docs/language.md §13: division by zero is null, as in the fast path
            return left / right if expr.op == "/" else math.fmod(left, right)
        return _ARITH[expr.op](left, right)
    if isinstance(expr, A.Compare):
        left, right = evaluate(expr.left, frame, at, row), evaluate(expr.right, frame, at, row)
        if left is None or right is None:
            return None
        return compare(expr.op, left, right, frame.text)
    if isinstance(expr, A.And):
        values = [evaluate(item, frame, at, row) for item in expr.items]
        if any(v is False for v in values):
            return False
        return None if any(v is None for v in values) else True
    if isinstance(expr, A.Or):
        values = [evaluate(item, frame, at, row) for item in expr.items]
        if any(v is True for v in values):
            return True
        return None if any(v is None for v in values) else False
    if isinstance(expr, A.Not):
        value = evaluate(expr.arg, frame, at, row)
        return None if value is None else not value
    if isinstance(expr, A.IsNull):
        value = evaluate(expr.arg, frame, at, row)
        return (value is not None) if expr.negated else (value is None)
    if isinstance(expr, A.InList):
        value = evaluate(expr.arg, frame, at, row)
        if value is None:
            return None
        options = [evaluate(item, frame, at, row) for item in expr.items]
        found = any(o is not None and compare("=", value, o, frame.text) for o in options)
        if found:
            return not expr.negated
        return None if any(o is None for o in options) else expr.negated
    raise TypeError(f"not an expression: {expr!r}")


def compare(op: str, left, right, text: str = ""):
    if isinstance(left, str) != isinstance(right, str):
        raise QueryError(f"cannot compare {left!r} with {right!r} (a string and a number)", text)
    return bool(_CMP[op](left, right))


def _aggregate(expr: A.Aggregate, frame: Frame, at: At):
    if expr.arg is None:
        return len(at.mapped(expr.var, frame, expr.final))
    variables = A.variables_of(expr.arg)
    if len(variables) > 1:
        raise QueryError(f"{expr.func}'s argument must refer to one variable", frame.text)
    rows = at.mapped(next(iter(variables), None), frame, expr.final)
    values = [v for v in (evaluate(expr.arg, frame, at, r) for r in rows) if v is not None]
    if expr.func == "COUNT":
        return len(values)
    if not values:
        return None
    if expr.func == "SUM":
        return sum(values)
    if expr.func == "AVG":
        return sum(values) / len(values)
    return min(values) if expr.func == "MIN" else max(values)


# ------------------------------------------------------------------ the matcher
def find_matches(
    query: A.Recognize, columns: Dict[str, Sequence[Any]], times: Optional[Sequence[Any]] = None
) -> List[Found]:
    """Every match of one partition (its rows already in ORDER BY order), in the order they are found.

    ``times``: the first ORDER BY column as int64 nanoseconds, for ``WITHIN`` (a match's rows lie less than
    the interval after its first row, Flink's rule)."""
    return search(query, Frame(columns, dict(query.subsets), query.text), times)[0]


def search(
    query: A.Recognize, frame: Frame, times: Optional[Sequence[Any]] = None, begin: int = 0, number: int = 1
) -> Tuple[List[Found], int]:
    """The matches of one partition tried from row ``begin`` on (numbered from ``number``), and the row the
    next match is to be tried at: the partition's end, or for an open partition (a stream) the first start
    row whose outcome depends on rows to come."""
    defines = dict(query.defines)
    within = None if query.within is None else query.within.value
    found: List[Found] = []
    start = begin
    while start < frame.n:
        try:
            result = _match_at(query.pattern, frame, defines, start, number, within, times)
        except Undecided:
            return found, start
        if result is None:
            start += 1
            continue
        rows, labels, excluded = result
        match = Found(number, start, tuple(rows), tuple(labels), tuple(excluded))
        found.append(match)
        number += 1
        start = next_start(query, match)
    return found, start


def next_start(query: A.Recognize, match: Found) -> int:
    """Where the next match is tried (AFTER MATCH SKIP); an error when that would loop on the same row."""
    kind = query.skip[0]
    if kind == "next_row" or not match.rows:
        return match.start + 1
    if kind == "past_last":
        return match.end
    members = dict(query.subsets).get(query.skip[1], (query.skip[1],))
    rows = [r for r, v in zip(match.rows, match.labels) if v in members]
    if not rows:
        raise QueryError(
            f"AFTER MATCH SKIP TO {kind.upper()} {query.skip[1]}: match {match.number} maps no row to {query.skip[1]}",
            query.text,
        )
    target = rows[0] if kind == "first" else rows[-1]
    if target == match.start:
        raise QueryError(
            f"AFTER MATCH SKIP TO {kind.upper()} {query.skip[1]} lands on match {match.number}'s "
            "first row: the next match would start where this one did",
            query.text,
        )
    return target


@dataclass(frozen=True)
class Attempt:
    """One row tried as one variable: the mapping before it, and why it failed (None: it held)."""

    row: int
    var: str
    rows: Tuple[int, ...]
    labels: Tuple[str, ...]
    failed: Optional[str]


def _match_at(
    pattern, frame: Frame, defines, start: int, number: int, within, times, attempts: Optional[List[Attempt]] = None
):
    """The preferred mapping of the rows from ``start`` (rows, labels, excluded), or None. ``attempts``
    collects every row tried as a variable, for ``why_not``."""
    rows: List[int] = []
    labels: List[str] = []
    excluded: List[bool] = []

    def holds(var: str, row: int) -> bool:
        failed = _fails(var, row)
        if attempts is not None:
            attempts.append(Attempt(row, var, tuple(rows), tuple(labels), failed))
        return failed is None

    def _fails(var: str, row: int) -> Optional[str]:
        if within is not None and times is not None and not (times[row] - times[start] < within):
            return "outside WITHIN"
        condition = defines.get(var)
        if condition is None:
            return None
        rows.append(row)
        labels.append(var)
        try:
            value = evaluate(condition, frame, At(rows, labels, row, number))
        finally:
            rows.pop()
            labels.pop()
        return None if value is True else ("null" if value is None else "false")

    def m(node, pos: int, hidden: bool, k) -> Optional[Any]:
        # Continuation-passing backtracking: k(pos) continues the match after node; the first success wins.
        if isinstance(node, A.Var):
            if pos >= frame.n:
                window_closed = (
                    within is not None
                    and times is not None
                    and frame.horizon is not None
                    and (frame.horizon - times[start] >= within)
                )
                if frame.horizon is not None and not window_closed:
                    raise Undecided  # a preferred mapping may go on with the rows to come
                return None
            if not holds(node.name, pos):
                return None
            rows.append(pos)
            labels.append(node.name)
            excluded.append(hidden)
            result = k(pos + 1)  # a success has copied the mapping already
            rows.pop()
            labels.pop()
            excluded.pop()
            return result
        if isinstance(node, A.Empty):
            return k(pos)
        if isinstance(node, A.Anchor):
            ok = pos == 0 if node.kind == "^" else pos == frame.n
            return k(pos) if ok else None
        if isinstance(node, A.Exclude):
            return m(node.body, pos, True, k)
        if isinstance(node, A.Concat):
            return _concat(node.items, pos, hidden, k)
        if isinstance(node, (A.Alt, A.Permute)):
            items = node.items if isinstance(node, A.Alt) else permutations(node.items)
            for item in items:
                result = m(item, pos, hidden, k)
                if result is not None:
                    return result
            return None
        if isinstance(node, A.Quant):
            return _repeat(node, 0, pos, hidden, k)
        raise TypeError(f"not a row pattern: {node!r}")

    def _concat(items, pos, hidden, k):
        if not items:
            return k(pos)
        return m(items[0], pos, hidden, lambda p: _concat(items[1:], p, hidden, k))

    def _repeat(node: A.Quant, count: int, pos: int, hidden: bool, k):
        can_more = node.high is None or count < node.high
        can_stop = count >= node.low
        # An unbounded loop's iteration that maps no row ends nowhere new: it fails (docs/language.md §13).
        unbounded_part = node.high is None and count >= node.low

        def more():
            if not can_more:
                return None
            return m(
                node.body,
                pos,
                hidden,
                lambda p: None if (unbounded_part and p == pos) else _repeat(node, count + 1, p, hidden, k),
            )

        def stop():
            return k(pos) if can_stop else None

        first, second = (more, stop) if node.greedy else (stop, more)
        result = first()
        return result if result is not None else second()

    done = m(pattern, start, False, lambda p: (list(rows), list(labels), list(excluded)))
    return done


# ------------------------------------------------------------------ output rows, row by row
def reference_output(query: A.Recognize, rows: pd.DataFrame, bounds, found: List[List[Found]]) -> pd.DataFrame:
    """The output rows as the standard describes them, one match and one row at a time: the meaning the
    column-wise ``run.output`` is tested against. ``rows``: sorted; ``found``: per partition."""
    measure_names = [name for name, _ in query.measures]
    records: List[Dict[str, Any]] = []
    source_rows: List[int] = []
    subsets = dict(query.subsets)
    for (first, end), matches in zip(bounds, found):
        part = rows.iloc[first:end]
        frame = Frame({str(c): part[c].tolist() for c in part.columns}, subsets, query.text)

        def emit(row: int, at: Optional[At]) -> None:
            records.append({name: None if at is None else evaluate(expr, frame, at) for name, expr in query.measures})
            source_rows.append(first + row)

        covered = 0
        for match in matches:
            mapped, labels = list(match.rows), list(match.labels)
            if query.rows == "one":
                emit(match.start, At(mapped, labels, mapped[-1] if mapped else None, match.number, mapped, labels))
                continue
            if query.empty == "unmatched":
                for row in range(covered, match.start):
                    emit(row, None)
            covered = max(covered, match.end if mapped else match.start + 1)
            if not mapped:
                if query.empty in ("show", "unmatched"):
                    emit(match.start, At([], [], None, match.number, [], []))
                continue
            for i, (row, hidden) in enumerate(zip(mapped, match.excluded)):
                if not hidden:
                    emit(row, At(mapped[: i + 1], labels[: i + 1], row, match.number, mapped, labels))
        if query.rows == "all" and query.empty == "unmatched":
            for row in range(covered, end - first):
                emit(row, None)
    values = {
        name: to_series(*_typed([r[name] for r in records])).to_numpy() if records else pd.Series([], dtype=object)
        for name in measure_names
    }
    out = output_frame(query, rows.iloc[source_rows].reset_index(drop=True), values)
    if query.select is not None:
        out = out[list(query.select)]
    return out


def _typed(values: List[Any]):
    """Python values (None: null) as the (values, null mask) arrays the column-wise path makes."""
    null = np.array([v is None for v in values], dtype=bool)
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, (bool, np.bool_)) for v in present):
        return np.array([bool(v) if v is not None else False for v in values]), null
    if present and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in present):
        return np.array([v if v is not None else 0 for v in values], dtype=np.int64), null
    if present and all(isinstance(v, (int, float, np.number)) for v in present):
        return np.array([v if v is not None else np.nan for v in values], dtype=float), null
    if present and all(isinstance(v, pd.Timestamp) for v in present):
        naive = [v.tz_convert(None) if v is not None and v.tzinfo is not None else v for v in values]
        return np.array(
            [v.to_datetime64() if v is not None else np.datetime64("NaT") for v in naive], dtype="datetime64[ns]"
        ), null
    return np.array(values, dtype=object), null
