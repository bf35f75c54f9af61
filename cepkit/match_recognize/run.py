"""``cepkit.sql``: a MATCH_RECOGNIZE query over pandas DataFrames, its output rows as a DataFrame.

The rows are sorted by PARTITION BY and ORDER BY; the matches are found by the Pike VM (``kernel.py``), its
DEFINE conditions as whole-column masks and programs over per-thread registers (``conditions.py``), or by
the reference matcher (``semantics.py``) for a condition the VM does not compile; ``Matched.info`` says
which ran and why. Matches stay flat arrays, and measures are evaluated column-wise over every output row
(``measures.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np
import pandas as pd

from ..errors import QueryError, did_you_mean
from . import ast as A
from . import kernel as K
from .columns import Columns, output_frame, to_series
from .conditions import Conditions, NotCompiled, compile_defines, split_define
from .measures import Measures
from .parser import parse
from .program import compile_pattern
from .semantics import Found, Frame, search

Frames = Union[pd.DataFrame, Mapping[str, Any]]


@dataclass
class Matched:
    """The matches of a query over its sorted rows, as flat arrays (rows are positions in ``rows``).

    Per match: ``part``, ``number`` (MATCH_NUMBER), ``start`` (first row tried; an empty match's only
    row), ``offset`` (its first index into the flat arrays; one more entry at the end). Flat, per mapped
    row: ``flat_row``, ``flat_var`` (index into ``query.variables``), ``flat_excl`` (inside ``{- -}``).

    ``read`` holds only the columns the query reads, sorted; the input's other columns are taken from
    ``frame`` at the rows an output needs (``take``), never sorted whole (a wide table's copy would cost
    more than the matching)."""

    query: A.Recognize
    read: pd.DataFrame  # the columns the query reads, sorted, index 0..n-1
    bounds: np.ndarray  # per partition: first row, one past the last
    columns: Columns  # ``read`` as arrays: DEFINE and MEASURES convert each column once
    part: np.ndarray
    number: np.ndarray
    start: np.ndarray
    offset: np.ndarray
    flat_row: np.ndarray
    flat_var: np.ndarray
    flat_excl: np.ndarray
    info: Dict[str, Any] = field(default_factory=dict)
    frame: Optional[pd.DataFrame] = None  # the input, every column, unsorted (None: ``read`` is all of it)
    order: Optional[np.ndarray] = None  # each sorted row's position in ``frame`` (None: the same row)

    def take(self, source: np.ndarray) -> pd.DataFrame:
        """The sorted rows at ``source``, every input column, index 0..len(source)-1."""
        if self.frame is None:
            return self.read.iloc[source].reset_index(drop=True)
        return self.frame.iloc[source if self.order is None else self.order[source]].reset_index(drop=True)

    @cached_property
    def rows(self) -> pd.DataFrame:
        """The sorted rows, every input column, index 0..n-1 (taken on first use)."""
        return self.read if self.frame is None else self.take(np.arange(len(self.read)))

    def __len__(self) -> int:
        return len(self.part)

    def as_matches(self, positions: np.ndarray, stream=None):
        """The non-empty matches as ``cepkit.Matches`` over the stream the rows came from (``positions``:
        each sorted row's position in it; each variable may bind several rows), in cepkit's output order
        (docs/language.md §10.2), and for each the index of its match here: how a MATCH_RECOGNIZE run is
        drawn on a timeline and picked like any other."""
        from ..runtime.match_arrays import MatchArrays
        from ..runtime.matches import Matches

        lengths = np.diff(self.offset)
        kept = np.flatnonzero(lengths > 0)
        flat_match = np.repeat(np.arange(len(self)), lengths)
        flat_position = np.asarray(positions, np.int64)[self.flat_row]
        order = np.lexsort((flat_position, flat_match))  # each match's positions in stream order
        offsets = np.concatenate([[0], np.cumsum(lengths[kept])])
        names = self.query.variables
        arrays = MatchArrays.from_bindings(
            offsets, flat_position[order], self.flat_var[order], names, np.ones(len(names), bool)
        )
        rows, _ = arrays.output_index()
        return Matches(arrays.take(rows), "match_recognize", stream=stream), kept[rows]

    def found(self) -> List[List[Found]]:
        """Per partition, its matches as ``Found`` (rows counted from the partition's first row)."""
        out: List[List[Found]] = [[] for _ in range(len(self.bounds))]
        names = self.query.variables
        for i in range(len(self.part)):
            first = self.bounds[self.part[i], 0]
            lo, hi = self.offset[i], self.offset[i + 1]
            out[self.part[i]].append(
                Found(
                    int(self.number[i]),
                    int(self.start[i] - first),
                    tuple((self.flat_row[lo:hi] - first).tolist()),
                    tuple(names[v] for v in self.flat_var[lo:hi]),
                    tuple(bool(x) for x in self.flat_excl[lo:hi]),
                )
            )
        return out


def resolve(query: A.Recognize, frames: Frames) -> pd.DataFrame:
    """The DataFrame the query's FROM names: ``frames`` itself, or ``frames[name]`` from a mapping."""
    if isinstance(frames, pd.DataFrame):
        return frames
    if hasattr(frames, "to_pandas") and not isinstance(frames, Mapping):
        return frames.to_pandas()
    if isinstance(frames, Mapping):
        if query.source not in frames:
            raise QueryError(
                f"FROM {query.source}: no such table; the tables are "
                + ", ".join(map(str, frames))
                + did_you_mean(query.source, frames),
                query.text,
            )
        return resolve(query, frames[query.source])
    raise TypeError(
        f"cepkit.sql takes a pandas DataFrame, a pyarrow Table, or a mapping of names to them, not "
        f"{type(frames).__name__}"
    )


def check_columns(query: A.Recognize, names) -> None:
    """A ``QueryError`` (with "did you mean", and the line and column of the name) for a column the query
    reads that ``names`` lacks."""
    names = [str(c) for c in names]
    wanted = [(name, None) for name in query.partition] + [(name, None) for name, _ in query.order]
    for _, expr in query.defines + query.measures:
        wanted += [(node.name, node) for node in A.walk(expr) if isinstance(node, A.Column)]
    for name, node in wanted:
        if name not in names:
            line, column = _where(query.text, name, node)
            raise QueryError(
                f"no column {name!r} in {query.source}; the columns are "
                + ", ".join(names)
                + did_you_mean(name, names),
                query.text,
                line,
                column,
                len(name),
            )


def _where(text: str, name: str, node) -> tuple:
    """(line, column) of a column's name in the query: from its node's span (a qualified name's span is its
    variable's, the name follows the dot), else its first use as a whole word after MATCH_RECOGNIZE."""
    span = getattr(node, "span", None)
    if span is not None and span[0] is not None:
        line, col = span[0], span[1]
        if node.var is not None:
            row = text.splitlines()[line - 1] if text else ""
            dot = row.find(".", col - 1)
            col = dot + 2 if dot >= 0 else col
        return line, col
    start = text.upper().find("MATCH_RECOGNIZE")
    found = re.search(rf"\b{re.escape(name)}\b", text[max(start, 0) :])
    if found is None:
        return None, None
    at = max(start, 0) + found.start()
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def read_columns(query: A.Recognize) -> set:
    """The input columns a query reads: partition and order keys, and every column its expressions name."""
    names = set(query.partition) | {name for name, _ in query.order}
    for _, expr in query.defines + query.measures:
        names |= {node.name for node in A.walk(expr) if isinstance(node, A.Column)}
    return names


def _order(query: A.Recognize, frame: pd.DataFrame) -> Optional[np.ndarray]:
    """Each sorted row's position in ``frame``: by PARTITION BY, then ORDER BY, stably (None: the rows are in
    that order). Rows already in ORDER BY order (a log, a time series) only need their partitions gathered:
    one stable argsort of the partition codes. Only the key columns are read."""
    keys = list(query.partition) + [name for name, _ in query.order]
    ascending = [True] * len(query.partition) + [asc for _, asc in query.order]
    if not keys:
        return None
    if len(query.order) == 1 and query.order[0][1] and frame[query.order[0][0]].is_monotonic_increasing:
        if not query.partition:
            return None
        return np.argsort(partition_codes(frame, query.partition), kind="stable")
    ranked = frame[keys].set_axis(pd.RangeIndex(len(frame)))
    return ranked.sort_values(keys, ascending=ascending, kind="stable").index.to_numpy()


def partition_codes(frame: pd.DataFrame, keys) -> np.ndarray:
    """Each row's partition as a number, in the order of the keys' sorted values (nulls last; a categorical
    sorts by its categories' order, as in pandas). A single categorical key (``cepkit.spark.sql``'s workers
    make strings such) is read as its codes: no string is hashed."""
    if len(keys) == 1 and isinstance(frame[keys[0]].dtype, pd.CategoricalDtype):
        codes = frame[keys[0]].cat.codes.to_numpy().astype(np.int64)
        return np.where(codes < 0, len(frame[keys[0]].cat.categories), codes)
    return frame.groupby(list(keys), sort=True, dropna=False, observed=True).ngroup().to_numpy()


def _take(frame: pd.DataFrame, order: Optional[np.ndarray]) -> pd.DataFrame:
    return frame.reset_index(drop=True) if order is None else frame.take(order).reset_index(drop=True)


def _sorted(query: A.Recognize, frame: pd.DataFrame) -> pd.DataFrame:
    """The rows by PARTITION BY, then ORDER BY, stably (``_order``)."""
    return _take(frame, _order(query, frame))


def _bounds(query: A.Recognize, rows: pd.DataFrame) -> np.ndarray:
    n = len(rows)
    if not query.partition or n == 0:
        return np.array([[0, n]] if n else np.empty((0, 2)), dtype=np.int64).reshape(-1, 2)
    codes = partition_codes(rows, query.partition)
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
    order = _order(query, frame)
    wanted = read_columns(query)
    rows = _take(frame[[name for name in frame.columns if name in wanted]], order)
    bounds = _bounds(query, rows)
    times = within_times(query, rows)
    if matcher not in ("auto", "vm", "reference"):
        raise ValueError(f"matcher is 'auto', 'vm' or 'reference', not {matcher!r}")
    columns = _columns(query, rows, bounds)
    conditions, why = _compiled(query, columns) if matcher != "reference" else (None, "asked for")
    if matcher == "vm" and conditions is None:
        raise QueryError(f"the VM matcher does not take this query's DEFINE: {why}", query.text)
    use_vm = conditions is not None
    if conditions is not None:
        arrays = _find_vm(query, columns, bounds, times, conditions)
    else:
        arrays = _find_reference(query, rows, bounds, times)
    return Matched(
        query,
        rows,
        bounds,
        columns,
        *arrays[:-1],
        info={"matcher": "vm" if use_vm else "reference", "partitions": len(bounds), "why reference": why},
        frame=frame,
        order=order,
    )


def find_open(
    query: A.Recognize, rows: pd.DataFrame, begin: int, horizon: Optional[int], first_number: int = 1
) -> "tuple[Matched, int]":
    """The decided matches of one partition of a stream: ``rows`` are its rows so far, sorted, more to come
    with times (int64 as ``within_times`` gives them) of at least ``horizon`` (None: no more rows come, the
    partition ends); matches are tried from row ``begin`` on and numbered from ``first_number``. Returns them
    and the row where the next one is to be tried: the first start row whose outcome depends on rows to come
    (docs/language.md §13, streams), or the partition's end.

    DEFINE conditions that read NEXT rows past the last one make the rows they read undecided, and a match
    whose MEASURES read NEXT rows past the last one waits for them."""
    n = len(rows)
    times = within_times(query, rows)
    bounds = np.array([[0, n]], dtype=np.int64)
    columns = _columns(query, rows, bounds)
    known = None
    conditions, _ = _compiled(query, columns)
    if conditions is not None:
        # The VM reads each row's DEFINE values before matching (and its programs read rows up to as far
        # ahead): those of the last rows, whose NEXT rows are still to come, are not known yet, and the
        # VM's partition ends before them.
        if horizon is not None:
            known = max(n - reach(query.defines, "NEXT"), begin)
            if known < n:
                horizon = int(times[known]) if times is not None else known
        arrays = _find_vm(query, columns, bounds, times, conditions, begin, horizon, known, first_number)
        matcher = "vm"
    else:  # the reference reads rows as it goes, and stops at the first one still to come
        arrays = _find_reference(query, rows, bounds, times, begin, horizon, first_number)
        matcher = "reference"
    *found, next_start = arrays
    part, number, start, offset, flat_row, flat_var, flat_excl = found
    waits = reach(query.measures, "NEXT")
    if (
        waits and horizon is not None and len(part)
    ):  # a match whose measures read rows not yet here waits, and so do those after it
        ends = start.copy()  # one past a match's last row; an empty match's own row
        mapped = offset[1:] > offset[:-1]
        ends[mapped] = flat_row[offset[1:][mapped] - 1] + 1
        late = np.flatnonzero(ends + waits > n)
        if len(late):
            cut = int(late[0])
            next_start = np.array([start[cut]])
            part, number, start, offset = part[:cut], number[:cut], start[:cut], offset[: cut + 1]
            flat_row, flat_var, flat_excl = (a[: offset[-1]] for a in (flat_row, flat_var, flat_excl))
    matched = Matched(
        query,
        rows,
        bounds,
        columns,
        part,
        number + (first_number - 1),
        start,
        offset,
        flat_row,
        flat_var,
        flat_excl,
        info={"matcher": matcher, "partitions": 1},
    )
    return matched, int(next_start[0])


def reach(items, kind: str) -> int:
    """How many rows past (NEXT) or before (PREV) the row they are evaluated at the expressions of
    ``items`` ((name, expression) pairs) may read, at most."""

    def depth(node) -> int:
        deeper = max((depth(child) for child in A.children(node)), default=0)
        if isinstance(node, A.Navigation) and node.kind == kind:
            return node.offset + deeper
        return deeper

    return max((depth(expr) for _, expr in items), default=0)


def _find_reference(
    query: A.Recognize,
    rows: pd.DataFrame,
    bounds: np.ndarray,
    times,
    begin: int = 0,
    horizon: Optional[int] = None,
    first_number: int = 1,
) -> tuple:
    index = {v: i for i, v in enumerate(query.variables)}
    part, number, start, offset, flat_row, flat_var, flat_excl = [], [], [], [0], [], [], []
    next_starts = []
    subsets = dict(query.subsets)
    for p, (first, end) in enumerate(bounds):
        chunk = rows.iloc[first:end]
        frame = Frame({str(c): chunk[c].tolist() for c in chunk.columns}, subsets, query.text, horizon)
        matches, resume = search(query, frame, None if times is None else times[first:end], begin, first_number)
        next_starts.append(first + resume)
        for match in matches:
            part.append(p)
            number.append(match.number - first_number + 1)
            start.append(first + match.start)
            flat_row.extend(first + r for r in match.rows)
            flat_var.extend(index[v] for v in match.labels)
            flat_excl.extend(match.excluded)
            offset.append(len(flat_row))
    ints = [np.asarray(x, dtype=np.int64) for x in (part, number, start, offset, flat_row, flat_var)]
    return (*ints, np.asarray(flat_excl, dtype=np.int8), np.asarray(next_starts, dtype=np.int64))


def _compiled(query: A.Recognize, columns: Columns) -> "tuple[Optional[Conditions], Optional[str]]":
    """The DEFINE conditions as the VM runs them, or None and why the reference matcher runs them."""
    try:
        return compile_defines(query, columns), None
    except NotCompiled as err:
        return None, str(err)


def _find_vm(
    query: A.Recognize,
    columns: Columns,
    bounds: np.ndarray,
    times,
    conditions: Conditions,
    begin: int = 0,
    horizon: Optional[int] = None,
    known: Optional[int] = None,
    first_number: int = 1,
) -> tuple:
    variables = query.variables
    program = compile_pattern(query.pattern, variables, query.text)
    holds = np.ones((columns.n, max(len(variables), 1)), dtype=np.uint8)
    subsets = dict(query.subsets)
    for var, expr in query.defines:
        local, _ = split_define(var, expr, subsets)
        if local is not None:
            holds[:, variables.index(var)] = columns.holds(local)
    skip_vars = np.zeros(max(len(variables), 1), np.bool_)
    kind = {"past_last": K.SKIP_PAST_LAST, "next_row": K.SKIP_NEXT_ROW, "first": K.SKIP_FIRST, "last": K.SKIP_LAST}[
        query.skip[0]
    ]
    if kind in (K.SKIP_FIRST, K.SKIP_LAST):
        for member in subsets.get(query.skip[1], (query.skip[1],)):
            skip_vars[variables.index(member)] = True
    within = 0 if query.within is None else int(query.within.value)
    times_arr = np.zeros(1, np.int64) if times is None else np.ascontiguousarray(times)
    opened = horizon is not None
    ends = bounds if known is None else np.array([[bounds[0, 0], known]], dtype=np.int64)
    live = conditions.live(program.op, program.a, program.b)
    threads = len(program) * (4 if conditions.n_regs else 1)
    while True:  # with registers, several threads may share a pc: room for more if a run needs it
        found = K.match_partitions(
            program.op,
            program.a,
            program.b,
            holds,
            ends,
            times_arr,
            within,
            kind,
            skip_vars,
            np.ascontiguousarray(bounds[:, 0]) + begin,
            opened,
            np.full(len(bounds), horizon if opened else 0, np.int64),
            conditions.programs(),
            conditions.updates(),
            conditions.n_regs,
            live,
            first_number - 1,
            threads,
        )
        if found[0] != K.FULL:
            break
        threads *= 4
    status, failed, part, number, start, _, offset, flat_row, flat_var, flat_excl, next_start = found
    if status != K.OK:
        verb = "FIRST" if kind == K.SKIP_FIRST else "LAST"
        number = number + (first_number - 1)
        if status == K.NO_SKIP_ROW:
            raise QueryError(
                f"AFTER MATCH SKIP TO {verb} {query.skip[1]}: match {number[failed]} maps no row to {query.skip[1]}",
                query.text,
            )
        raise QueryError(
            f"AFTER MATCH SKIP TO {verb} {query.skip[1]} lands on match {number[failed]}'s first "
            "row: the next match would start where this one did",
            query.text,
        )
    return part, number, start, offset, flat_row, flat_var, flat_excl, next_start


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
    measures = Measures(
        matched.columns,
        query.variables,
        dict(query.subsets),
        matched.number,
        offset,
        matched.flat_row,
        matched.flat_var,
        match,
        end,
        query.text,
    )
    values = {
        name: to_series(*measures.evaluate(expr)).to_numpy() if len(source) else pd.Series([], dtype=object)
        for name, expr in query.measures
    }
    return _select(query, output_frame(query, matched.take(source), values))


def _unmatched_rows(matched: Matched, empty: np.ndarray) -> np.ndarray:
    """Rows in no match (an empty match's row counts as shown), in order."""
    n = len(matched.read)
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
        raise QueryError(
            f"SELECT {missing[0]}: not an output column; the output columns are "
            + ", ".join(map(str, out.columns))
            + did_you_mean(missing[0], out.columns),
            query.text,
        )
    return out[list(query.select)]


def sql(query: Union[str, A.Recognize], frames: Frames, *, matcher: str = "auto") -> pd.DataFrame:
    """Run a ``SELECT ... FROM t MATCH_RECOGNIZE (...)`` query over pandas (docs/language.md §13).

    Parameters
    ----------
    query : str or Recognize
        The query text, or a parsed one (``cepkit.match_recognize.parse``).
    frames : DataFrame, pyarrow Table, or mapping of str to them
        The table the query reads, or a mapping of table names to tables.
    matcher : {"auto", "vm", "reference"}, default "auto"
        The compiled matcher ("vm", when the DEFINE conditions allow it) or the reference one.

    Returns
    -------
    pandas.DataFrame
        One row per match (``ONE ROW PER MATCH``) or per matched row (``ALL ROWS PER MATCH``), the
        selected columns and measures.

    Raises
    ------
    QueryError
        The query does not parse (line, column, caret), reads a table or column that does not exist (did
        you mean), or asks the VM for a condition it cannot run.
    TypeError
        ``frames`` is not a DataFrame, a Table or a mapping of them.
    ValueError
        ``matcher`` is not one of the three.

    Examples
    --------
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
