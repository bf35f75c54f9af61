"""The result of a query over a stream: ``Matches`` (ordered, de-duplicated, built from the columns of a
``MatchArrays``; ``Match`` objects are a lazy view made only when someone indexes or iterates)."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from .match_arrays import MatchArrays
from .match_record import Match
from .match_tables import arrow_binding, event_frame, field_values, named_fields, pandas_binding, shown_attributes
from .python_objects import row_lists
from .row_arrays import SLICE

__all__ = ["Match", "Matches"]  # Match: the public path cepkit.runtime.matches.Match


# Why each out-of-order mode drops an event (``Matches.dropped``), by the ``disorder`` option.
DROP_REASONS: dict[str | None, str] = {
    "kslack": "arrived after a later event had been released: more than k late",
    "conservative": "arrived after a later event had been released: it broke its max_delay bound or came after "
    "its type's punctuation",
    "aggressive": "older than max_delay behind the latest event: the stretch of stream it could change was forgotten",
}


class Matches(Sequence):
    """The matches of a query over a stream, in output order (docs/language.md §10.2).

    ``engine`` names the engine that produced them; ``deltas`` (aggressive out-of-order mode) lists every
    emission in order, retractions included, while the sequence itself holds the net result. Built from
    columns (``MatchArrays``, or a list of ``Match`` turned into columns); ``Match`` objects are made when
    someone indexes or iterates. ``stream`` (the events matched) lets ``to_pandas(fields=...)`` add the
    bound events' attributes. ``limit`` keeps the first that many (the query's LIMIT). ``partial`` holds the
    partial matches when ``match(..., partial=True)`` asked for them (else None).

    Parameters
    ----------
    matches : MatchArrays or iterable of Match
        The matches, in any order (sorted here; retractions dropped).
    engine : str
        The engine that found them.
    query : Query, optional
        The query (the variables no match binds still get a column).
    deltas : list of Match or callable, optional
        Every emission in order, or a function making that list when first read.
    info : dict, optional
        The engine's run facts (``dropped`` events, the ``disorder`` mode...).
    stream : Stream, optional
        The events matched, for ``fields=`` and ``dropped``.
    limit : int, optional
        Keep the first that many matches.
    own_names : dict, optional
        The user's names of the type and ts columns (``{"ts": "when"}``, from ``type=``/``ts=``): ``fields=``
        takes and labels them so (``c.when``).

    See Also
    --------
    cepkit.match : makes them.

    Examples
    --------
    >>> import cepkit
    >>> events = [{"type": "A", "v": 1}, {"type": "B", "v": 2}, {"type": "B", "v": 3}]
    >>> found = cepkit.match("A a ; B+ b", events)
    >>> found
    Matches(engine='automaton', [(0, 1), (0, 1, 2), (0, 2)])
    >>> len(found), found[1].positions
    (3, (0, 1, 2))
    """

    def __init__(
        self,
        matches,
        engine: str,
        query=None,
        deltas=None,
        info: Optional[dict] = None,
        stream=None,
        limit: Optional[int] = None,
        own_names: Optional[dict] = None,
    ):
        columns = matches if isinstance(matches, MatchArrays) else MatchArrays.from_matches(list(matches))
        if (columns.sign < 0).any():
            columns = columns.take(columns.sign > 0)
        if columns.in_output_order():  # no index to make and check (0.5 ms per 200k rows)
            self._columns, self._new_positions = columns, None
        else:
            order, self._new_positions = columns.output_index()
            in_order = len(order) == len(columns) and (order[1:] > order[:-1]).all()  # engines often sort already
            self._columns = columns if in_order else columns.take(order)
        if limit is not None and len(self._columns) > limit:  # LIMIT n: the first n in output order
            self._columns = self._columns.take(np.arange(limit))
            if self._new_positions is not None:
                self._new_positions = self._new_positions[:limit]
        self.engine = engine
        self.query = query
        self._deltas = deltas
        self.info = info or {}
        self.stream = stream
        self.own_names = {k: v for k, v in (own_names or {}).items() if v is not None}
        self.partial: Optional[pd.DataFrame] = None

    @property
    def deltas(self) -> list:
        """Every emission in order (a callable given at construction is called the first time)."""
        if callable(self._deltas):
            self._deltas = list(self._deltas())
        if self._deltas is None:
            self._deltas = []
        return self._deltas

    @property
    def arrays(self) -> MatchArrays:
        """The matches as columns, in output order."""
        return self._columns

    def __getitem__(self, i):
        return self._columns[i]

    def __iter__(self):
        return iter(self._columns)

    def __len__(self):
        return len(self._columns)

    @property
    def dropped(self) -> pd.DataFrame:
        """The events an out-of-order mode could not place (docs/language.md §6), one row each in arrival order:
        ``position``, the event's own columns (``type``, ``ts``, attributes) when the stream is known, and
        ``reason``. The result is exactly the in-order result over the stream without them. Empty in
        order (``disorder="reject"`` refuses a late event instead) and when nothing was dropped."""
        positions = np.sort(np.asarray(self.info.get("dropped", ()), np.int64))
        reason = DROP_REASONS.get(self.info.get("disorder"), "it could not be placed in logical order")
        if self.stream is not None and len(self.stream):
            at = np.searchsorted(self.stream.positions, positions)
            rows = self.stream.frame.iloc[at].reset_index(drop=True)
        else:
            rows = pd.DataFrame(index=pd.RangeIndex(len(positions)))
        rows.insert(0, "position", positions)
        rows["reason"] = reason
        return rows

    def positions(self) -> list:
        """Each distinct set of positions once, in output order.

        Returns
        -------
        list of tuple of int
            The positions of each match's events, ascending.

        Examples
        --------
        >>> import cepkit
        >>> cepkit.match("A a ; B+ b", [{"type": "A"}, {"type": "B"}, {"type": "B"}]).positions()
        [(0, 1), (0, 1, 2), (0, 2)]
        """
        return self._distinct().position_tuples()

    def position_arrays(self) -> tuple:
        """``positions()`` as numpy arrays, with no Python object per match: ``(offsets, flat)``, the i-th
        tuple being ``flat[offsets[i]:offsets[i + 1]]``. With many matches ``positions()`` spends most of
        its time making tuples and ints (bench/README.md, end to end); this is the same result without.

        Returns
        -------
        offsets : numpy.ndarray
            int64, one more than the matches; starts at 0.
        flat : numpy.ndarray
            int64, every match's positions one after the other.

        Examples
        --------
        >>> import cepkit
        >>> offsets, flat = cepkit.match("A a ; B+ b", [{"type": "A"}, {"type": "B"}, {"type": "B"}]).position_arrays()
        >>> offsets.tolist(), flat.tolist()
        ([0, 2, 5, 7], [0, 1, 0, 1, 2, 0, 2])
        """
        distinct = self._distinct()
        offsets = distinct.offsets
        if offsets[0]:  # rows taken out of larger arrays (views, like ``flat``, otherwise)
            return offsets - offsets[0], distinct.positions[offsets[0] : offsets[-1]]
        return offsets, distinct.positions[: offsets[-1]]

    def _distinct(self) -> MatchArrays:
        if self._new_positions is None or self._new_positions.all():  # None: every row's positions new
            return self._columns
        return self._columns.take(self._new_positions)

    def variables(self) -> list:
        """Variable names in order of first appearance (output order, then each match's bindings)."""
        c = self._columns
        if c.row_variables is not None:
            return list(dict.fromkeys(str(c.names[v]) for v in c.row_variables.tolist())) if len(c) else []
        first: dict = {}  # id -> where it first appears (ids, not names: no string per entry)
        for start in range(0, len(c.bound_variables), SLICE):  # (most often the first slice has them all)
            ids, at = np.unique(c.bound_variables[start : start + SLICE], return_index=True)
            for v, i in zip(ids.tolist(), at.tolist()):
                first.setdefault(v, start + i)
            if len(first) == len(c.names):
                break
        return list(dict.fromkeys(str(c.names[v]) for v in sorted(first, key=first.__getitem__)))

    # ------------------------------------------------------------------ tables
    def binding_columns(self) -> dict:
        """``MatchArrays.binding_columns`` of every variable the matches bind, in output order."""
        return self._columns.binding_columns(self.variables())

    def to_pandas(self, fields=None) -> pd.DataFrame:
        """One row per match: match_id, positions, one column per variable (its position, or the list of
        a Kleene variable's positions); ``fields`` adds the bound events' attributes: ``["d.dep_delay",
        "w.ts"]`` (a list per match for a Kleene variable, null where the variable is unbound) or
        ``"all"`` (every variable's ts, its events' attributes, and its type when it binds several).

        Parameters
        ----------
        fields : list of str or "all", optional
            ``"variable.attribute"`` names of the bound events' values to add as columns.

        Returns
        -------
        pandas.DataFrame
            One row per match, in output order.

        Raises
        ------
        QueryError
            A field names a variable or attribute that does not exist (with the ones that do).
        ValueError
            ``fields`` is given but these Matches carry no stream.

        Examples
        --------
        >>> import cepkit
        >>> events = [{"type": "A", "v": 1}, {"type": "B", "v": 2}, {"type": "B", "v": 3}]
        >>> cepkit.match("A a ; B+ b", events).to_pandas(fields=["b.v"])
           match_id  positions  a       b     b.v
        0         0     [0, 1]  0     [1]     [2]
        1         1  [0, 1, 2]  0  [1, 2]  [2, 3]
        2         2     [0, 2]  0     [2]     [3]
        """
        c = self._columns
        variables = self.variables()
        if not len(c):
            wanted = self._fields(fields, self.binding_columns()) if fields is not None else []
            return pd.DataFrame([], columns=["match_id", "positions", *variables, *(f for f, _, _ in wanted)])
        columns = {"match_id": np.arange(len(c)), "positions": row_lists(c.offsets, c.positions.tolist())}
        bindings = self.binding_columns()
        for name, (kind, value) in bindings.items():
            columns[name] = pandas_binding(kind, value)
        if fields is not None:
            for label, name, attr in self._fields(fields, bindings):
                columns[label] = field_values(self.stream, bindings[name], attr, arrow=False)
        return pd.DataFrame(columns)

    def to_arrow(self, fields=None):
        """The same table as ``to_pandas`` as a ``pyarrow.Table`` (lists as Arrow lists, nulls as nulls),
        built from the columns without Python objects per match.

        Parameters
        ----------
        fields : list of str or "all", optional
            As in ``to_pandas``.

        Returns
        -------
        pyarrow.Table
            One row per match, in output order.

        Raises
        ------
        QueryError
            A field names a variable or attribute that does not exist.
        ValueError
            ``fields`` is given but these Matches carry no stream.

        Examples
        --------
        >>> import cepkit
        >>> table = cepkit.match("A a ; B+ b", [{"type": "A"}, {"type": "B"}, {"type": "B"}]).to_arrow()
        >>> table.column_names, table.num_rows
        (['match_id', 'positions', 'a', 'b'], 3)
        """
        import pyarrow as pa

        c = self._columns
        bindings = self.binding_columns()
        columns = {
            "match_id": pa.array(np.arange(len(c), dtype=np.int64)),
            "positions": pa.LargeListArray.from_arrays(pa.array(c.offsets), pa.array(c.positions)),
        }
        for name, (kind, value) in bindings.items():
            columns[name] = arrow_binding(kind, value)
        if fields is not None:
            for label, name, attr in self._fields(fields, bindings):
                columns[label] = field_values(self.stream, bindings[name], attr, arrow=True)
        return pa.table(columns)

    def _fields(self, fields, bindings: dict) -> list:
        """(label, variable, attribute) per requested field; QueryError for one that does not exist."""
        if self.stream is None:
            raise ValueError(
                "these Matches carry no stream, so fields= has no events to read: use "
                "cepkit.match(query, events).to_pandas(fields=...)"
            )
        events = event_frame(self.stream)
        variables = self.variables()
        if self.query is not None:  # a variable no match binds has null fields
            select = self.query.select
            variables += [v for v in self.query.variables if v not in variables and (select is None or v in select)]
        for name in variables:
            bindings.setdefault(name, ("single", np.full(len(self), -1, np.int64)))
        own = self.own_names  # the user's names of type and ts: labels and fields= say them
        if isinstance(fields, str) and fields == "all":
            return [
                (f"{name}.{own.get(attr, attr)}", name, attr)
                for name in variables
                for attr in shown_attributes(events, bindings[name])
            ]
        canonical = {v: k for k, v in own.items()}
        attributes = [own.get(a, a) for a in events.columns]
        named = named_fields(fields, variables, attributes, also=[k for k in own if k in events.columns])
        return [(label, name, canonical.get(attr, attr)) for label, name, attr in named]

    # ------------------------------------------------------------------ display and comparison
    def __repr__(self):
        head = self._columns.take(np.arange(min(len(self), 40)))
        shown = ", ".join(str(p) for p in list(dict.fromkeys(head.position_tuples()))[:10])
        more = f", ... ({len(self)} matches)" if len(self) > 10 else ""
        return f"Matches(engine={self.engine!r}, [{shown}{more}])"

    def _identity(self) -> tuple:
        """The (positions, bindings) of every match in order, as arrays that compare across name tables."""
        c = self._columns
        names = (
            np.asarray(c.names, dtype=object)[c.bound_variables].astype(str)
            if len(c.bound_variables)
            else np.zeros(0, str)
        )
        row = np.repeat(np.arange(len(c)), c.bound_offsets[1:] - c.bound_offsets[:-1])
        order = np.lexsort((names, row))
        return (
            c.offsets,
            c.positions,
            c.bound_offsets,
            names[order],
            c.kleene[c.bound_variables][order],
            c.bound_positions[order],
        )

    def __eq__(self, other):
        if isinstance(other, Matches):
            mine, theirs = self._identity(), other._identity()
            return all(a.shape == b.shape and (a == b).all() for a, b in zip(mine, theirs))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal by value, so not hashable

    def _repr_html_(self):
        if len(self) <= 60:
            return self.to_pandas()._repr_html_()
        head = Matches(self._columns.take(np.arange(30)), self.engine).to_pandas()
        return head._repr_html_() + f"<p>… {len(self)} matches in all</p>"
