"""``cepkit.sql``: a MATCH_RECOGNIZE query over pandas DataFrames, its output rows as a DataFrame.

The rows are sorted by PARTITION BY and ORDER BY; the matches are found by the Pike VM (``kernel.py``) when
every DEFINE reads only its own row and fixed offsets from it, else by the reference matcher
(``semantics.py``); ``Result.info["matcher"]`` says which ran. Measures are evaluated by the reference's
rules on the found matches.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np
import pandas as pd

from ..errors import QueryError
from . import ast as A
from . import kernel as K
from .columns import Columns, row_local
from .parser import did_you_mean, parse
from .program import compile_pattern
from .semantics import At, Found, Frame, evaluate, find_matches

Frames = Union[pd.DataFrame, Mapping[str, Any]]


@dataclass
class Matched:
    """The matches of a query over one sorted frame: per partition, its rows' range and its ``Found``s."""
    query: A.Recognize
    rows: pd.DataFrame  # sorted, index 0..n-1
    bounds: np.ndarray  # per partition: first row, one past the last
    matches: List[List[Found]]
    info: Dict[str, Any] = field(default_factory=dict)


def resolve(query: A.Recognize, frames: Frames) -> pd.DataFrame:
    """The DataFrame the query's FROM names: ``frames`` itself, or ``frames[name]`` from a mapping."""
    if isinstance(frames, pd.DataFrame):
        return frames
    if hasattr(frames, "to_pandas") and not isinstance(frames, Mapping):
        return frames.to_pandas()
    if isinstance(frames, Mapping):
        if query.source not in frames:
            raise QueryError(f"FROM {query.source}: no such table" + did_you_mean(query.source, frames)
                             + "; the tables are " + ", ".join(map(str, frames)), query.text)
        return resolve(query, frames[query.source])
    raise TypeError(f"cepkit.sql takes a pandas DataFrame, a pyarrow Table, or a mapping of names to them, not "
                    f"{type(frames).__name__}")


def _check_columns(query: A.Recognize, frame: pd.DataFrame) -> None:
    names = [str(c) for c in frame.columns]
    wanted = list(query.partition) + [name for name, _ in query.order]
    for _, expr in query.defines + query.measures:
        wanted += [node.name for node in _nodes(expr) if isinstance(node, A.Column)]
    for name in wanted:
        if name not in frame.columns:
            raise QueryError(f"no column {name!r} in {query.source}" + did_you_mean(name, names)
                             + "; the columns are " + ", ".join(names), query.text)


def _nodes(expr):
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        for value in vars(node).values():
            for item in value if isinstance(value, tuple) else (value,):
                if hasattr(item, "__dataclass_fields__"):
                    stack.append(item)


def _sorted(query: A.Recognize, frame: pd.DataFrame) -> pd.DataFrame:
    keys = list(query.partition) + [name for name, _ in query.order]
    ascending = [True] * len(query.partition) + [asc for _, asc in query.order]
    if not keys:
        return frame.reset_index(drop=True)
    return frame.sort_values(keys, ascending=ascending, kind="stable").reset_index(drop=True)


def _bounds(query: A.Recognize, rows: pd.DataFrame) -> np.ndarray:
    n = len(rows)
    if not query.partition or n == 0:
        return np.array([[0, n]] if n else np.empty((0, 2)), dtype=np.int64).reshape(-1, 2)
    codes = rows.groupby(list(query.partition), sort=False, dropna=False).ngroup().to_numpy()
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    return np.stack([starts, np.r_[starts[1:], n]], axis=1).astype(np.int64)


def _times(query: A.Recognize, rows: pd.DataFrame) -> Optional[np.ndarray]:
    if query.within is None:
        return None
    if not query.order:
        raise QueryError("WITHIN needs ORDER BY a timestamp column", query.text)
    name = query.order[0][0]
    column = rows[name]
    if not query.order[0][1]:
        raise QueryError("WITHIN needs ORDER BY its timestamp ascending", query.text)
    if pd.api.types.is_datetime64_any_dtype(column.dtype) or pd.api.types.is_timedelta64_dtype(column.dtype):
        if column.isna().any():
            raise QueryError(f"WITHIN: the ORDER BY column {name!r} has nulls", query.text)
        return column.to_numpy().view(np.int64)
    raise QueryError(f"WITHIN INTERVAL needs ORDER BY a timestamp column; {name!r} is {column.dtype}", query.text)


def find(query: A.Recognize, frame: pd.DataFrame, matcher: str = "auto") -> Matched:
    """Sort the rows, split the partitions and find every match (``matcher``: "auto", "vm" or "reference")."""
    _check_columns(query, frame)
    rows = _sorted(query, frame)
    bounds = _bounds(query, rows)
    times = _times(query, rows)
    subsets = dict(query.subsets)
    local = all(row_local(expr, var, subsets) for var, expr in query.defines)
    if matcher not in ("auto", "vm", "reference"):
        raise ValueError(f"matcher is 'auto', 'vm' or 'reference', not {matcher!r}")
    if matcher == "vm" and not local:
        raise QueryError("the VM matcher needs DEFINE conditions that read only their own row and PREV / NEXT of "
                         "it; this query's run on the reference matcher", query.text)
    use_vm = matcher == "vm" or (matcher == "auto" and local)
    if use_vm:
        matches = _find_vm(query, rows, bounds, times)
    else:
        matches = []
        for first, end in bounds:
            part = rows.iloc[first:end]
            columns = {str(c): part[c].tolist() for c in part.columns}
            part_times = None if times is None else times[first:end]
            matches.append(find_matches(query, columns, part_times))
    return Matched(query, rows, bounds, matches, {"matcher": "vm" if use_vm else "reference",
                                                  "partitions": len(bounds)})


def _find_vm(query: A.Recognize, rows: pd.DataFrame, bounds: np.ndarray, times) -> List[List[Found]]:
    variables = query.variables
    program = compile_pattern(query.pattern, variables, query.text)
    n = len(rows)
    part_first = np.repeat(bounds[:, 0], bounds[:, 1] - bounds[:, 0]) if n else np.empty(0, np.int64)
    part_end = np.repeat(bounds[:, 1], bounds[:, 1] - bounds[:, 0]) if n else np.empty(0, np.int64)
    columns = Columns(rows, part_first, part_end, query.text)
    holds = np.ones((n, max(len(variables), 1)), dtype=np.uint8)
    for var, expr in query.defines:
        holds[:, variables.index(var)] = columns.holds(expr)
    subsets = dict(query.subsets)
    skip_vars = np.zeros(max(len(variables), 1), np.bool_)
    kind = {"past_last": K.SKIP_PAST_LAST, "next_row": K.SKIP_NEXT_ROW, "first": K.SKIP_FIRST,
            "last": K.SKIP_LAST}[query.skip[0]]
    if kind in (K.SKIP_FIRST, K.SKIP_LAST):
        for member in subsets.get(query.skip[1], (query.skip[1],)):
            skip_vars[variables.index(member)] = True
    within = 0 if query.within is None else int(query.within.value)
    times_arr = np.zeros(1, np.int64) if times is None else np.ascontiguousarray(times)
    (status, failed, m_part, m_number, m_start, m_end, m_offset, flat_row, flat_var,
     flat_excl) = K.match_partitions(program.op, program.a, program.b, holds, bounds, times_arr, within, kind,
                                     skip_vars)
    result: List[List[Found]] = [[] for _ in range(len(bounds))]
    for i in range(len(m_part)):
        part = int(m_part[i])
        first = bounds[part, 0]
        lo, hi = m_offset[i], m_offset[i + 1]
        result[part].append(Found(int(m_number[i]), int(m_start[i] - first), tuple((flat_row[lo:hi] - first).tolist()),
                                  tuple(variables[v] for v in flat_var[lo:hi]),
                                  tuple(bool(x) for x in flat_excl[lo:hi])))
    if status != K.OK:
        match = result[int(m_part[failed])][-1]
        verb = "FIRST" if kind == K.SKIP_FIRST else "LAST"
        if status == K.NO_SKIP_ROW:
            raise QueryError(f"AFTER MATCH SKIP TO {verb} {query.skip[1]}: match {match.number} maps no row to "
                             f"{query.skip[1]}", query.text)
        raise QueryError(f"AFTER MATCH SKIP TO {verb} {query.skip[1]} lands on match {match.number}'s first row: "
                         "the next match would start where this one did", query.text)
    return result


# ------------------------------------------------------------------ output rows
def output(matched: Matched) -> pd.DataFrame:
    """The query's output rows: one per match, or every row of every match (and the unmatched rows)."""
    query, rows = matched.query, matched.rows
    measure_names = [name for name, _ in query.measures]
    records: List[Dict[str, Any]] = []
    source_rows: List[int] = []
    subsets = dict(query.subsets)
    for (first, end), matches in zip(matched.bounds, matched.matches):
        part = rows.iloc[first:end]
        frame = Frame({str(c): part[c].tolist() for c in part.columns}, subsets, query.text)
        covered = 0
        for match in matches:
            rows_, labels = list(match.rows), list(match.labels)
            if query.rows == "one":
                current = rows_[-1] if rows_ else None
                at = At(rows_, labels, current, match.number, rows_, labels)
                records.append({name: evaluate(expr, frame, at) for name, expr in query.measures})
                source_rows.append(first + match.start)
                continue
            if query.empty == "unmatched":
                for row in range(covered, match.start):
                    records.append(dict.fromkeys(measure_names))
                    source_rows.append(first + row)
            covered = max(covered, match.end if rows_ else match.start + 1)
            if not rows_:
                if query.empty in ("show", "unmatched"):
                    at = At([], [], None, match.number, [], [])
                    records.append({name: evaluate(expr, frame, at) for name, expr in query.measures})
                    source_rows.append(first + match.start)
                continue
            for i, (row, hidden) in enumerate(zip(rows_, match.excluded)):
                if hidden:
                    continue
                at = At(rows_[:i + 1], labels[:i + 1], row, match.number, rows_, labels)
                records.append({name: evaluate(expr, frame, at) for name, expr in query.measures})
                source_rows.append(first + row)
        if query.rows == "all" and query.empty == "unmatched":
            for row in range(covered, end - first):
                records.append(dict.fromkeys(measure_names))
                source_rows.append(first + row)
    measures = pd.DataFrame.from_records(records, columns=measure_names) if records else pd.DataFrame(
        {name: pd.Series([], dtype=object) for name in measure_names})
    taken = rows.iloc[source_rows].reset_index(drop=True)
    order_names = [name for name, _ in query.order]
    if query.rows == "one":
        parts = [taken[list(query.partition)], measures]
    else:
        rest = [c for c in rows.columns if c not in query.partition and c not in order_names
                and c not in measure_names]
        parts = [taken[list(query.partition)], taken[order_names], measures, taken[rest]]
    out = pd.concat([p.reset_index(drop=True) for p in parts], axis=1)
    out = out.loc[:, ~out.columns.duplicated()]
    if query.select is not None:
        missing = [name for name in query.select if name not in out.columns]
        if missing:
            raise QueryError(f"SELECT {missing[0]}: not an output column" + did_you_mean(missing[0], out.columns)
                             + "; the output columns are " + ", ".join(map(str, out.columns)), query.text)
        out = out[list(query.select)]
    return out


def sql(query: Union[str, A.Recognize], frames: Frames, *, matcher: str = "auto") -> pd.DataFrame:
    """Run a ``SELECT ... FROM t MATCH_RECOGNIZE (...)`` query over pandas (docs/language.md §13).

    ``frames``: the DataFrame (or pyarrow Table) the query reads, or a mapping of table names to them.

    >>> import pandas as pd, cepkit
    >>> prices = pd.DataFrame({"day": range(6), "price": [5, 3, 2, 4, 6, 1]})
    >>> cepkit.sql('''
    ...     SELECT * FROM prices MATCH_RECOGNIZE (
    ...         ORDER BY day
    ...         MEASURES FIRST(DOWN.day) AS top, LAST(DOWN.day) AS bottom, LAST(UP.day) AS back
    ...         PATTERN (DOWN+ UP+)
    ...         DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price))''', prices)
       top  bottom  back
    0    1       2     4
    """
    parsed = parse(query) if isinstance(query, str) else query
    return output(find(parsed, resolve(parsed, frames), matcher))
