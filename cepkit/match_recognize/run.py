"""``cepkit.sql``: a MATCH_RECOGNIZE query over pandas DataFrames, its output rows as a DataFrame.

The rows are sorted by PARTITION BY and ORDER BY; the matches are found by the Pike VM (``kernel.py``) when
every DEFINE reads only its own row and fixed offsets from it, else by the reference matcher
(``semantics.py``); ``Matched.info["matcher"]`` says which ran. Matches stay flat arrays, and measures are
evaluated column-wise over every output row (``measures.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np
import pandas as pd

from ..errors import QueryError
from . import ast as A
from . import kernel as K
from .columns import Columns, output_frame, row_local, to_series
from .measures import Measures
from .parser import did_you_mean, parse
from .program import compile_pattern
from .semantics import Found, find_matches

Frames = Union[pd.DataFrame, Mapping[str, Any]]


@dataclass
class Matched:
    """The matches of a query over its sorted rows, as flat arrays (rows are positions in ``rows``).

    Per match: ``part``, ``number`` (MATCH_NUMBER), ``start`` (first row tried; an empty match's only
    row), ``offset`` (its first index into the flat arrays; one more entry at the end). Flat, per mapped
    row: ``flat_row``, ``flat_var`` (index into ``query.variables``), ``flat_excl`` (inside ``{- -}``)."""
    query: A.Recognize
    rows: pd.DataFrame  # sorted, index 0..n-1
    bounds: np.ndarray  # per partition: first row, one past the last
    part: np.ndarray
    number: np.ndarray
    start: np.ndarray
    offset: np.ndarray
    flat_row: np.ndarray
    flat_var: np.ndarray
    flat_excl: np.ndarray
    info: Dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.part)

    def found(self) -> List[List[Found]]:
        """Per partition, its matches as ``Found`` (rows counted from the partition's first row)."""
        out: List[List[Found]] = [[] for _ in range(len(self.bounds))]
        names = self.query.variables
        for i in range(len(self.part)):
            first = self.bounds[self.part[i], 0]
            lo, hi = self.offset[i], self.offset[i + 1]
            out[self.part[i]].append(Found(
                int(self.number[i]), int(self.start[i] - first), tuple((self.flat_row[lo:hi] - first).tolist()),
                tuple(names[v] for v in self.flat_var[lo:hi]), tuple(bool(x) for x in self.flat_excl[lo:hi])))
        return out


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


def check_columns(query: A.Recognize, names) -> None:
    """A ``QueryError`` (with "did you mean") for a column the query reads that ``names`` lacks."""
    names = [str(c) for c in names]
    wanted = list(query.partition) + [name for name, _ in query.order]
    for _, expr in query.defines + query.measures:
        wanted += [node.name for node in A.walk(expr) if isinstance(node, A.Column)]
    for name in wanted:
        if name not in names:
            raise QueryError(f"no column {name!r} in {query.source}" + did_you_mean(name, names)
                             + "; the columns are " + ", ".join(names), query.text)


def _sorted(query: A.Recognize, frame: pd.DataFrame) -> pd.DataFrame:
    """The rows by PARTITION BY, then ORDER BY, stably. Rows already in ORDER BY order (a log, a time series)
    only need their partitions gathered: one stable argsort of the partition codes."""
    keys = list(query.partition) + [name for name, _ in query.order]
    ascending = [True] * len(query.partition) + [asc for _, asc in query.order]
    if not keys:
        return frame.reset_index(drop=True)
    if len(query.order) == 1 and query.order[0][1] and frame[query.order[0][0]].is_monotonic_increasing:
        if not query.partition:
            return frame.reset_index(drop=True)
        codes = frame.groupby(list(query.partition), sort=True, dropna=False).ngroup().to_numpy()
        return frame.take(np.argsort(codes, kind="stable")).reset_index(drop=True)
    return frame.sort_values(keys, ascending=ascending, kind="stable").reset_index(drop=True)


def _bounds(query: A.Recognize, rows: pd.DataFrame) -> np.ndarray:
    n = len(rows)
    if not query.partition or n == 0:
        return np.array([[0, n]] if n else np.empty((0, 2)), dtype=np.int64).reshape(-1, 2)
    codes = rows.groupby(list(query.partition), sort=False, dropna=False).ngroup().to_numpy()
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    return np.stack([starts, np.r_[starts[1:], n]], axis=1).astype(np.int64)


def within_times(query: A.Recognize, rows: pd.DataFrame) -> Optional[np.ndarray]:
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
        kind = "timedelta64[ns]" if pd.api.types.is_timedelta64_dtype(column.dtype) else "datetime64[ns]"
        return column.to_numpy(dtype=kind).view(np.int64)
    raise QueryError(f"WITHIN INTERVAL needs ORDER BY a timestamp column; {name!r} is {column.dtype}", query.text)


def find(query: A.Recognize, frame: pd.DataFrame, matcher: str = "auto") -> Matched:
    """Sort the rows, split the partitions and find every match (``matcher``: "auto", "vm" or "reference")."""
    check_columns(query, frame.columns)
    rows = _sorted(query, frame)
    bounds = _bounds(query, rows)
    times = within_times(query, rows)
    subsets = dict(query.subsets)
    local = all(row_local(expr, var, subsets) for var, expr in query.defines)
    if matcher not in ("auto", "vm", "reference"):
        raise ValueError(f"matcher is 'auto', 'vm' or 'reference', not {matcher!r}")
    if matcher == "vm" and not local:
        raise QueryError("the VM matcher needs DEFINE conditions that read only their own row and PREV / NEXT of "
                         "it; this query's run on the reference matcher", query.text)
    use_vm = matcher == "vm" or (matcher == "auto" and local)
    arrays = _find_vm(query, rows, bounds, times) if use_vm else _find_reference(query, rows, bounds, times)
    return Matched(query, rows, bounds, *arrays, info={"matcher": "vm" if use_vm else "reference",
                                                        "partitions": len(bounds)})


def _find_reference(query: A.Recognize, rows: pd.DataFrame, bounds: np.ndarray, times) -> tuple:
    index = {v: i for i, v in enumerate(query.variables)}
    part, number, start, offset, flat_row, flat_var, flat_excl = [], [], [], [0], [], [], []
    for p, (first, end) in enumerate(bounds):
        chunk = rows.iloc[first:end]
        columns = {str(c): chunk[c].tolist() for c in chunk.columns}
        for match in find_matches(query, columns, None if times is None else times[first:end]):
            part.append(p)
            number.append(match.number)
            start.append(first + match.start)
            flat_row.extend(first + r for r in match.rows)
            flat_var.extend(index[v] for v in match.labels)
            flat_excl.extend(match.excluded)
            offset.append(len(flat_row))
    ints = [np.asarray(x, dtype=np.int64) for x in (part, number, start, offset, flat_row, flat_var)]
    return (*ints, np.asarray(flat_excl, dtype=np.int8))


def _find_vm(query: A.Recognize, rows: pd.DataFrame, bounds: np.ndarray, times) -> tuple:
    variables = query.variables
    program = compile_pattern(query.pattern, variables, query.text)
    columns = _columns(query, rows, bounds)
    holds = np.ones((len(rows), max(len(variables), 1)), dtype=np.uint8)
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
    status, failed, part, number, start, _, offset, flat_row, flat_var, flat_excl = K.match_partitions(
        program.op, program.a, program.b, holds, bounds, times_arr, within, kind, skip_vars)
    if status != K.OK:
        verb = "FIRST" if kind == K.SKIP_FIRST else "LAST"
        if status == K.NO_SKIP_ROW:
            raise QueryError(f"AFTER MATCH SKIP TO {verb} {query.skip[1]}: match {number[failed]} maps no row to "
                             f"{query.skip[1]}", query.text)
        raise QueryError(f"AFTER MATCH SKIP TO {verb} {query.skip[1]} lands on match {number[failed]}'s first "
                         "row: the next match would start where this one did", query.text)
    return part, number, start, offset, flat_row, flat_var, flat_excl


def _columns(query: A.Recognize, rows: pd.DataFrame, bounds: np.ndarray) -> Columns:
    sizes = bounds[:, 1] - bounds[:, 0]
    return Columns(rows, np.repeat(bounds[:, 0], sizes), np.repeat(bounds[:, 1], sizes), query.text)


# ------------------------------------------------------------------ output rows
def output(matched: Matched) -> pd.DataFrame:
    """The query's output rows: one per match, or every row of every match (and the unmatched rows), in the
    order the matches were found; measures evaluated column-wise (``measures.py``)."""
    query = matched.query
    n_matches = len(matched)
    offset = matched.offset
    empty = offset[1:] == offset[:-1]
    if query.rows == "one":
        match = np.arange(n_matches)
        end = offset[1:] - 1
        source = matched.start
        order = None
    else:
        flat_match = np.repeat(np.arange(n_matches), np.diff(offset))
        shown = matched.flat_excl == 0
        pieces_match = [flat_match[shown]]
        pieces_end = [np.flatnonzero(shown)]
        pieces_source = [matched.flat_row[shown]]
        if query.empty in ("show", "unmatched"):
            pieces_match.append(np.flatnonzero(empty))
            pieces_end.append(offset[:-1][empty] - 1)
            pieces_source.append(matched.start[empty])
        if query.empty == "unmatched":
            lone = _unmatched_rows(matched, empty)
            pieces_match.append(np.full(len(lone), -1, np.int64))
            pieces_end.append(np.full(len(lone), -1, np.int64))
            pieces_source.append(lone)
        match, end, source = (np.concatenate(p) for p in (pieces_match, pieces_end, pieces_source))
        # Found order: by partition, then the row a match starts at (an unmatched row at its own row), then
        # the match's rows in order.
        anchor = np.where(match >= 0, matched.start[np.clip(match, 0, None)] if n_matches else source, source)
        within = np.where(match >= 0, end - offset[:-1][np.clip(match, 0, None)] if n_matches else 0, -1)
        order = np.lexsort((within, anchor))
    if order is not None:
        match, end, source = match[order], end[order], source[order]
    columns = _columns(query, matched.rows, matched.bounds)
    measures = Measures(columns, query.variables, dict(query.subsets), matched.number, offset,
                        matched.flat_row, matched.flat_var, match, end, query.text)
    values = {name: to_series(*measures.evaluate(expr)).to_numpy() if len(source) else pd.Series([], dtype=object)
              for name, expr in query.measures}
    return _select(query, output_frame(query, matched.rows, source, values))


def _unmatched_rows(matched: Matched, empty: np.ndarray) -> np.ndarray:
    """Rows in no match (an empty match's row counts as shown), in order."""
    n = len(matched.rows)
    cover = np.zeros(n + 1, np.int64)
    full = ~empty
    np.add.at(cover, matched.start[full], 1)
    np.add.at(cover, matched.flat_row[matched.offset[1:][full] - 1] + 1, -1)
    covered = np.cumsum(cover[:-1]) > 0
    covered[matched.start[empty]] = True
    return np.flatnonzero(~covered)


def _select(query: A.Recognize, out: pd.DataFrame) -> pd.DataFrame:
    if query.select is None:
        return out
    missing = [name for name in query.select if name not in out.columns]
    if missing:
        raise QueryError(f"SELECT {missing[0]}: not an output column" + did_you_mean(missing[0], out.columns)
                         + "; the output columns are " + ", ".join(map(str, out.columns)), query.text)
    return out[list(query.select)]


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
