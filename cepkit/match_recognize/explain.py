"""Why rows are or are not a MATCH_RECOGNIZE match: the reference matcher run from one start row with every
attempt recorded, told as the rows a person would check (docs/language.md §13).

>>> import pandas as pd
>>> prices = pd.DataFrame({"day": range(5), "price": [5, 3, 4, 4, 6]})
>>> q = ("SELECT * FROM prices MATCH_RECOGNIZE (ORDER BY day PATTERN (DOWN+ UP) "
...      "DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price))")
>>> print(why_not(q, prices, start=2))
row 2 is inside match 1 (rows 1..2); AFTER MATCH SKIP PAST LAST ROW resumes the search at row 3.
>>> print(why_not(q, prices, start=3))
row 3 starts no match.
The furthest attempt reached row 3: DOWN there is false (price < PREV(price): 4 < 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from ..errors import QueryError
from . import ast as A
from .parser import parse
from .run import Frames, find, resolve, within_times
from .semantics import At, Attempt, Frame, _match_at, evaluate

_PRECEDENCE = {A.Or: 1, A.And: 2, A.Not: 3, A.Compare: 4, A.IsNull: 4, A.InList: 4, A.Negate: 7}


def _precedence(expr) -> int:
    if isinstance(expr, A.Arith):
        return 5 if expr.op in "+-" else 6
    return _PRECEDENCE.get(type(expr), 9)


def to_text(expr) -> str:
    """An expression as MATCH_RECOGNIZE text (parentheses only where precedence needs them)."""

    def wrap(child, parent, right=False):
        text = to_text(child)
        tighter = _precedence(child) > _precedence(parent) or (
            not right and _precedence(child) == _precedence(parent) and isinstance(parent, (A.Arith, A.And, A.Or))
        )
        return text if tighter else f"({text})"

    if isinstance(expr, A.Literal):
        value = expr.value
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        return "'" + value.replace("'", "''") + "'" if isinstance(value, str) else repr(value)
    if isinstance(expr, A.Column):
        return expr.name if expr.var is None else f"{expr.var}.{expr.name}"
    if isinstance(expr, A.Navigation):
        default = 1 if expr.kind in ("PREV", "NEXT") else 0
        offset = "" if expr.offset == default else f", {expr.offset}"
        return f"{'FINAL ' if expr.final else ''}{expr.kind}({to_text(expr.arg)}{offset})"
    if isinstance(expr, A.Aggregate):
        arg = ("*" if expr.var is None else f"{expr.var}.*") if expr.arg is None else to_text(expr.arg)
        return f"{'FINAL ' if expr.final else ''}{expr.func}({arg})"
    if isinstance(expr, A.Classifier):
        return ("FINAL " if expr.final else "") + "CLASSIFIER()"
    if isinstance(expr, A.MatchNumber):
        return "MATCH_NUMBER()"
    if isinstance(expr, (A.Arith, A.Compare)):
        return f"{wrap(expr.left, expr)} {expr.op} {wrap(expr.right, expr, right=True)}"
    if isinstance(expr, A.Negate):
        return "-" + wrap(expr.arg, expr)
    if isinstance(expr, (A.And, A.Or)):
        word = " AND " if isinstance(expr, A.And) else " OR "
        return word.join(wrap(item, expr) for item in expr.items)
    if isinstance(expr, A.Not):
        return "NOT " + wrap(expr.arg, expr)
    if isinstance(expr, A.IsNull):
        return wrap(expr.arg, expr) + (" IS NOT NULL" if expr.negated else " IS NULL")
    if isinstance(expr, A.InList):
        items = ", ".join(to_text(item) for item in expr.items)
        return f"{wrap(expr.arg, expr)} {'NOT ' if expr.negated else ''}IN ({items})"
    raise TypeError(f"not an expression: {expr!r}")


@dataclass(frozen=True)
class Explanation:
    """The verdict on the rows from ``start`` ("match", "other match", "inside a match", "no match") and the
    text saying why; ``attempts``: every row tried as a variable from ``start``."""

    verdict: str
    text: str
    start: int
    rows: Tuple[int, ...]
    attempts: Tuple[Attempt, ...]

    def __str__(self) -> str:
        return self.text


def why_not(query, frames: Frames, start: int, end: Optional[int] = None, key: Any = None) -> Explanation:
    """Why the rows ``start``..``end`` (positions in the partition's ORDER BY order; ``end`` None: any) of
    partition ``key`` (a value, or a tuple for several PARTITION BY columns) are or are not a match."""
    parsed = parse(query) if isinstance(query, str) else query
    frame = resolve(parsed, frames)
    matched = find(parsed, frame)  # the matches (either matcher finds the same); the trace below is the reference's
    part = _partition(parsed, matched, key)
    first, stop = matched.bounds[part]
    if not 0 <= start < stop - first:
        raise QueryError(f"row {start} is not in the partition (it has {stop - first} rows)", parsed.text)
    found = matched.found()[part]
    for match in found:
        if match.start == start:
            if end is None or (match.rows and match.rows[-1] == end):
                return Explanation(
                    "match",
                    f"rows {_span(match.rows, start)} are match {match.number}: "
                    + _mapping(match.rows, match.labels)
                    + ".",
                    start,
                    match.rows,
                    (),
                )
            return Explanation(
                "other match",
                f"row {start} starts match {match.number}, rows "
                f"{_span(match.rows, start)} ({_mapping(match.rows, match.labels)}): the first "
                "mapping in the pattern's preferment order (alternatives left to right, greedy "
                "quantifiers longest first) wins, so no match ends at row "
                f"{end}.",
                start,
                match.rows,
                (),
            )
    for match in found:
        if match.start < start < match.end:
            return Explanation(
                "inside a match",
                f"row {start} is inside match {match.number} (rows "
                f"{_span(match.rows, match.start)}); AFTER MATCH SKIP "
                f"{_skip(parsed)} resumes the search at row {_resume(found, match)}.",
                start,
                match.rows,
                (),
            )
    chunk = matched.read.iloc[first:stop]
    columns = {str(c): chunk[c].tolist() for c in chunk.columns}
    rows_frame = Frame(columns, dict(parsed.subsets), parsed.text)
    attempts: List[Attempt] = []
    times = within_times(parsed, matched.read)
    times = None if times is None else times[first:stop]
    _match_at(
        parsed.pattern,
        rows_frame,
        dict(parsed.defines),
        start,
        1,
        None if parsed.within is None else parsed.within.value,
        times,
        attempts,
    )
    return Explanation("no match", _no_match(parsed, rows_frame, start, attempts), start, (), tuple(attempts))


def _partition(query: A.Recognize, matched, key) -> int:
    if not query.partition:
        return 0
    if key is None:
        raise QueryError("name the partition: key=... (a value of " + ", ".join(query.partition) + ")", query.text)
    wanted = key if isinstance(key, tuple) else (key,)
    firsts = matched.read.iloc[matched.bounds[:, 0]][list(query.partition)]
    for i, values in enumerate(firsts.itertuples(index=False)):
        if tuple(values) == wanted:
            return i
    raise QueryError(f"no partition {key!r}", query.text)


def _span(rows, start) -> str:
    return f"{rows[0]}..{rows[-1]}" if rows else f"{start} (an empty match)"


def _mapping(rows, labels) -> str:
    return ", ".join(f"{r} {v}" for r, v in zip(rows, labels)) or "no row"


def _skip(query: A.Recognize) -> str:
    kind = query.skip[0]
    return {"past_last": "PAST LAST ROW", "next_row": "TO NEXT ROW"}.get(kind, f"TO {kind.upper()} {query.skip[-1]}")


def _resume(found, match) -> int:
    later = [m.start for m in found if m.start > match.start]
    return later[0] if later else match.end


def _no_match(query: A.Recognize, frame: Frame, start: int, attempts: List[Attempt]) -> str:
    if not attempts:
        return f"row {start} starts no match: the pattern cannot begin there (an anchor, or the end of the partition)."
    furthest = max(a.row for a in attempts)
    at = [a for a in attempts if a.row == furthest]
    reached = max((a for a in at), key=lambda a: len(a.rows))
    lines = [f"row {start} starts no match."]
    if reached.rows:
        lines.append(f"The furthest attempt mapped {_mapping(reached.rows, reached.labels)}, then at row {furthest}:")
    else:
        lines.append(f"The furthest attempt reached row {furthest}:")
    reasons = []
    for attempt in at:
        if attempt.failed is None:
            reasons.append(f"{attempt.var} holds there, but the rest of the pattern does not follow")
            continue
        condition = query.define(attempt.var)
        if attempt.failed == "outside WITHIN" or condition is None:
            reasons.append(f"{attempt.var} is outside the WITHIN interval")
            continue
        shown = _values(
            condition,
            frame,
            At(list(attempt.rows) + [attempt.row], list(attempt.labels) + [attempt.var], attempt.row, 1),
        )
        reasons.append(f"{attempt.var} there is {attempt.failed} ({to_text(condition)}: {shown})")
    unique = list(dict.fromkeys(reasons))
    if len(lines) == 2 and len(unique) == 1 and not reached.rows:
        return f"{lines[0]}\nThe furthest attempt reached row {furthest}: {unique[0]}."
    return "\n".join(lines) + "\n" + "\n".join(f"- {r}" for r in unique)


def _values(condition, frame: Frame, at: At) -> str:
    """The condition with each comparison's operands replaced by their values: ``4 < 3``."""
    if isinstance(condition, A.Compare):
        left, right = evaluate(condition.left, frame, at), evaluate(condition.right, frame, at)
        return f"{_show(left)} {condition.op} {_show(right)}"
    if isinstance(condition, (A.And, A.Or)):
        return (" AND " if isinstance(condition, A.And) else " OR ").join(
            _values(item, frame, at) for item in condition.items
        )
    return _show(evaluate(condition, frame, at))


def _show(value) -> str:
    return "NULL" if value is None else repr(value)
