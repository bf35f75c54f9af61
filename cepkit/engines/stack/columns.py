"""A finite stream as columns, and conditions evaluated over many candidate rows at once.

The columnar run (``batch``) binds each variable to an *array* of event indices, one per partial match,
so a condition is evaluated for all rows with a handful of numpy operations instead of one closure call
per row: ``x.attr`` is a gather from that attribute's column, and the rest is ``cepkit.lang.values``'
``condition_values`` (the value rules over columns, shared with ``cepkit.engines.unary``; the closures of
``conditions.py`` follow the same rules one value at a time). Whatever numpy cannot decide the same way
(``NotVectorizable``: a bare value used as a condition on an object column, arithmetic on non-numbers,
ordering a string against a number) is evaluated row by row by the compiled closures, which raise the
``EventError`` naming the event and the field, exactly as the stacks do.

>>> from cepkit import parse
>>> from cepkit.runtime.events import Event
>>> events = [Event("A", 0, {"v": 1}, 0, 0.0), Event("B", 1, {"v": 3}, 1, 1.0), Event("B", 2, {}, 2, 2.0)]
>>> table = Columns(events)
>>> rows = {"a": np.array([0, 0]), "b": np.array([1, 2])}
>>> table.test(parse("A a ; B b WHERE a.v + 1 < b.v").where, rows)
array([ True, False])
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...lang import ast as A
from ...lang.values import NotVectorizable, condition_values
from ...runtime.attribute_columns import hashable_key
from ..unary import StreamColumns
from .conditions import compile_condition


class Columns(StreamColumns):
    """A finite stream (a ``Stream``, or a list of ``Event``s with their positions and times) as the
    columns conditions read (``StreamColumns``), built on first use from the stream's own columns.

    ``test(cond, rows)`` evaluates a condition for every row: ``rows`` maps each variable the condition
    mentions to an array of event indices (into the stream), all of one length.
    """

    def __init__(self, stream):
        super().__init__(stream)
        self._closures: dict = {}

    def codes(self, wanted: list) -> list:
        """Equality classes: for each (attribute, event indices) of ``wanted``, an int64 array numbering the
        values, one numbering for all, equal codes exactly for values Python finds equal; -1 for null.

        >>> from cepkit.runtime.events import Event
        >>> table = Columns([Event("A", 0, {"k": 1}, 0, 0.0), Event("B", 1, {"j": 1.0}, 1, 1.0),
        ...                  Event("A", 2, {"k": 7}, 2, 2.0)])
        >>> table.codes([("k", np.array([0, 1, 2])), ("j", np.array([1]))])
        [array([ 0, -1,  1]), array([0])]
        """
        columns = [(self.column(attr), index) for attr, index in wanted]
        out = [np.full(len(index), -1, dtype=np.int64) for _, index in wanted]
        known = [~null[index] for (_, null, _), index in columns]
        numeric = all(is_numeric for (_, _, is_numeric), _ in columns)
        joined = [values[index][mask] for ((values, _, _), index), mask in zip(columns, known)]
        if not numeric:  # Python's equality, as a dict's (1 = 1.0); pandas hashes objects that way
            joined = [values.astype(object) for values in joined]
        joined = np.concatenate(joined) if joined else np.zeros(0)
        try:
            inverse = pd.factorize(joined)[0]
        except TypeError:  # unhashable values (lists, dicts): numbered by their contents
            inverse = pd.factorize(np.fromiter(map(hashable_key, joined), dtype=object, count=len(joined)))[0]
        start = 0
        for codes, mask in zip(out, known):
            codes[mask] = inverse[start : start + int(mask.sum())]
            start += int(mask.sum())
        return out

    def test(self, cond: A.Expr, rows: dict, size: int = None) -> np.ndarray:
        """Boolean array: does ``cond`` hold for each row? (Row by row through the closures if numpy cannot.)
        ``size`` is the number of rows, needed when ``rows`` binds no variable (a condition on constants, or
        over unnamed atoms: ``SEQ(A, B) WHERE 1 = 2``)."""
        if size is None:
            size = len(next(iter(rows.values()))) if rows else 1

        def leaf(node):
            values, null, numeric = self.column(node.attr)
            at = rows[node.var]
            return values[at], null[at], numeric

        try:
            held = condition_values(cond, leaf)
        except NotVectorizable:
            held = self._row_by_row(cond, rows, size)
        return np.broadcast_to(np.asarray(held, dtype=bool), (size,))

    def _row_by_row(self, cond: A.Expr, rows: dict, size: int) -> np.ndarray:
        test = self._closures.get(id(cond))
        if test is None:
            test = self._closures[id(cond)] = (cond, compile_condition(cond))
        test, events = test[1], self.stream.events
        names = list(rows)
        columns = [rows[v].tolist() for v in names]
        return (
            np.fromiter(
                (test({v: events[i] for v, i in zip(names, row)}) for row in zip(*columns)), dtype=bool, count=size
            )
            if names
            else np.full(size, test({}))
        )
