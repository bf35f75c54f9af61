"""A query's conjuncts by role, as [RCEP] §3.4 reads Θ (``rcep/pattern.py`` says each role), and the join
and chain keys as columns: the reading the rcep and ses kernels share.

``condition_role`` sorts one conjunct into a test of one event ("local"), a comparison between two
variables' own attributes ("join", ``Join``), one between consecutive events of a Kleene variable
("chain", ``Chain``), or anything else ("residual"); ``key_columns`` computes the values both sides of
the joins and chains read, once per stream; ``grouped`` orders events by a key code, stably, and
``substream_positions`` numbers the events of each PARTITION BY sub-stream (the coordinate of
``WITHIN n EVENTS``), ``counted_positions`` across an incremental matcher's micro-batches."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from ..lang import ast as A
from ..lang.values import EXACT_FLOAT
from ..runtime.event_record import PUNCTUATION
from .unary import StreamColumns, vector_value

FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
"""``a φ b`` as ``b FLIP[φ] a``."""


@dataclass(frozen=True)
class Join:
    """``left(x) op right(y)`` between slots ``left_slot`` < ``right_slot``, for every pair of events."""

    left_slot: int
    right_slot: int
    op: str
    left: A.Expr
    right: A.Expr
    cond: A.Expr


@dataclass(frozen=True)
class Chain:
    """``previous op current`` over consecutive events of Kleene slot ``slot`` (RCEP's NEXT)."""

    slot: int
    op: str
    previous: A.Expr
    current: A.Expr
    cond: A.Expr


def _reads(expr: A.Expr) -> frozenset:
    """What a value reads: "current" (an event's own attribute), "previous" (``prev(b.v)``, ``b[i-1].v``),
    "picked" (``first``/``last``/``b[k]``), "aggregate", or "boolean" (a condition used as a value)."""
    if isinstance(expr, A.Prev):
        return frozenset({"previous"})
    if isinstance(expr, A.Attr):
        kinds = {None: "current", "i": "current", "i-1": "previous"}
        return frozenset({kinds.get(expr.index, "picked")})
    if isinstance(expr, A.Agg):
        return frozenset({"aggregate"})
    if isinstance(expr, (A.BoolOp, A.BoolNot, A.Compare, A.In)):
        return frozenset({"boolean"})
    return frozenset().union(*map(_reads, expr.children()))


def is_plain(expr: A.Expr) -> bool:
    """A value computed from one event's own attributes (literals and arithmetic allowed)."""
    return _reads(expr) <= {"current"}


def is_previous(expr: A.Expr) -> bool:
    """A value computed from the previous event of a Kleene variable only."""
    return _reads(expr) == {"previous"}


def condition_role(cond: A.Expr, variables: dict, kleene: set) -> tuple:
    """("local", var) | ("join", Join) | ("chain", Chain) | ("residual",) for one conjunct."""
    names = A.variables_in(cond)
    if len(names) == 1 and names[0] not in kleene:
        return ("local", names[0])  # one event: any condition on it is a test of that event
    if len(names) == 1 and is_plain_leaf(cond):
        return ("local", names[0])
    if not isinstance(cond, A.Compare):
        return ("residual",)
    if len(names) == 1 and names[0] in kleene:
        var = names[0]
        if is_previous(cond.left) and is_plain(cond.right):
            return ("chain", Chain(variables[var], cond.op, cond.left, cond.right, cond))
        if is_previous(cond.right) and is_plain(cond.left):
            return ("chain", Chain(variables[var], FLIP[cond.op], cond.right, cond.left, cond))
        return ("residual",)
    if len(names) == 2 and is_plain(cond.left) and is_plain(cond.right):
        left, right = A.variables_in(cond.left), A.variables_in(cond.right)
        if len(left) == 1 and len(right) == 1 and left != right:
            i, j = variables[left[0]], variables[right[0]]
            if i < j:
                return ("join", Join(i, j, cond.op, cond.left, cond.right, cond))
            return ("join", Join(j, i, FLIP[cond.op], cond.right, cond.left, cond))
    return ("residual",)


def is_plain_leaf(cond: A.Expr) -> bool:
    """One comparison or IN over one event's own attributes (so quantifying it per event is exact)."""
    if isinstance(cond, A.Compare):
        return is_plain(cond.left) and is_plain(cond.right)
    if isinstance(cond, A.In):
        return is_plain(cond.arg) and all(is_plain(v) for v in cond.values)
    return False


def key_rows(joins: list, chains: list) -> tuple:
    """(the key expressions ``key_columns`` reads, one per row: ``x.v`` and ``y.v`` read one; the rows
    each side reads, (join left, join right, chain previous, chain current) arrays)."""
    rows: dict = {}
    sides = (
        [join.left for join in joins],
        [join.right for join in joins],
        [chain.previous for chain in chains],
        [chain.current for chain in chains],
    )
    ids = tuple(
        np.array([rows.setdefault(_plain(expr), len(rows)) for expr in exprs], dtype=np.int64) for exprs in sides
    )
    return list(rows), ids


def key_columns(joins: list, chains: list, columns: StreamColumns) -> Optional[tuple]:
    """(values, valid, ids) over the whole stream: one row of values per distinct key and the rows each
    side reads (``key_rows``); None when a key is not a number numpy computes as the language does
    (strings, booleans, ``ts`` or ``type``, beyond 2^53)."""
    exprs, ids = key_rows(joins, chains)
    rows = {expr: k for k, expr in enumerate(exprs)}
    n = len(columns.stream)
    values, valid = np.zeros((len(rows), n)), np.zeros((len(rows), n), dtype=bool)
    for expr, k in rows.items():
        if any(isinstance(node, A.Attr) and node.attr in ("ts", "type") for node in expr.walk()):
            return None
        found = vector_value(expr, columns)
        if found is None or found[0] == "str":
            return None
        kind, value, ok = found
        if kind == "null":
            continue
        value = np.broadcast_to(np.asarray(value, dtype=float), (n,))
        ok = np.broadcast_to(ok, (n,))
        held = value[ok]
        if not (np.isfinite(held).all() and (np.abs(held) < EXACT_FLOAT).all()):
            return None
        values[k], valid[k] = np.where(ok, value, 0.0), ok
    return values, valid, ids


class NotAKey(Exception):
    """A key value ``key_columns`` would not take (a string, a bool, a number beyond 2^53)."""


def key_value(value) -> Optional[float]:
    """One event's value of a key that reads an attribute, as ``key_columns`` holds it: a float, None
    when missing (None, NaN); ``NotAKey`` otherwise (a per-event step then leaves the kernel)."""
    kind = type(value)
    if kind is float:
        if value != value:
            return None
        if value - value != 0.0 or abs(value) >= EXACT_FLOAT:
            raise NotAKey
        return value
    if kind is int:
        if abs(value) >= EXACT_FLOAT:
            raise NotAKey
        return float(value)
    if value is None:
        return None
    if isinstance(value, (np.integer, np.floating)) and not isinstance(value, np.bool_):
        return key_value(value.item())
    raise NotAKey


def substream_positions(by: np.ndarray, read: np.ndarray, before: Optional[np.ndarray] = None) -> np.ndarray:
    """Each event's position in its PARTITION BY sub-stream (``by``: codes; every ``read`` event counted,
    punctuation not, and NaN), after ``before[code]`` events of each sub-stream already seen."""
    coord = np.full(len(by), np.nan)
    index = np.flatnonzero(read)
    order, first = grouped(by[index])
    rank = np.arange(len(index)) - first
    if before is not None:
        rank += before[by[index[order]]]
    coord[index[order]] = rank
    return coord


def counted_positions(stream, partition_by, counts: dict) -> np.ndarray:
    """``substream_positions`` of a micro-batch (a ``Stream``) after the events an incremental matcher saw
    before: ``counts`` (PARTITION BY values -> events of that sub-stream so far) is read and counted on."""
    by = stream.key_codes(partition_by)
    read = ~stream.type_in({PUNCTUATION})
    codes, first, sizes = np.unique(by[read], return_index=True, return_counts=True)
    before = np.zeros(len(codes) and int(codes[-1]) + 1, dtype=np.int64)
    for code, i, size in zip(codes.tolist(), np.flatnonzero(read)[first].tolist(), sizes.tolist()):
        key = tuple(stream[i].get(a) for a in partition_by)
        before[code] = counts.get(key, 0)
        counts[key] = before[code] + size
    return substream_positions(by, read, before)


def grouped(codes: np.ndarray) -> tuple:
    """(order, first): the indices sorted by code, stably (each group keeps its order), and for each
    sorted place the first place of its group (place - first: the rank inside the group)."""
    if len(codes) and codes.min() >= 0 and codes.max() < 2**16:
        codes = codes.astype(np.uint16)  # numpy's stable sort of 16-bit keys is a radix sort
    order = np.argsort(codes, kind="stable")
    ranked = codes[order]
    change = np.ones(len(ranked), dtype=bool)
    change[1:] = ranked[1:] != ranked[:-1]
    return order, np.maximum.accumulate(np.where(change, np.arange(len(ranked)), 0)).astype(np.int64)


def _plain(expr: A.Expr) -> A.Expr:
    """A key read from one event, whichever variable names it: ``prev(b.v)`` and ``b[i-1].v`` read the
    event they are given."""
    if isinstance(expr, A.Prev):
        return _plain(expr.arg)
    if isinstance(expr, A.Attr):
        return replace(expr, var="", index=None)
    if isinstance(expr, A.Neg):
        return replace(expr, arg=_plain(expr.arg))
    if isinstance(expr, A.Arith):
        return replace(expr, left=_plain(expr.left), right=_plain(expr.right))
    return expr
