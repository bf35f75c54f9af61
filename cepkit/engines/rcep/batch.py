"""The columnar run of a finite stream: every trigger recomputed in one ``kernel.recompute`` call, matches
out as ``MatchArrays`` (no ``Event`` or ``Match`` object per event or per match).

``RcepPlan.run`` takes it when the query's whole work is what the kernel does: the strategies ALL, STRICT
and PARTITION_STRICT, and NEXT, LAST and MAX (``kernel.ranked`` over each trigger's matches), no CONSUME BY, RETURN or STNM, no residual or per-event conditions, the hybrid or
nested join, and join and chain keys that are numbers numpy computes exactly (``key_columns``). Anything
else runs through ``RcepMatcher`` event by event, with the same matches.

The layout: the stream's events (punctuation left out) grouped by PARTITION BY sub-stream, in order inside
each (a stable argsort of the key codes); an event's index there is its *grouped index* g, and inside one
sub-stream g - (the sub-stream's first g) is its sequence number. Each slot's *members* are the grouped
indices of the events its type and local tests accept (``RcepPlan.accepted``, column-wise); the window of
a match ending at g starts at ``window_lo[g]``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

import numpy as np

from ...lang import ast as A
from ...runtime.event_record import PUNCTUATION
from ...runtime.stream import Stream
from ...runtime.match_arrays import AT_LAST, MatchArrays
from ..unary import StreamColumns, vector_value
from .joins import OP_CODES, TRANSITIVE
from .keys import EXACT
from .kernel import (
    RANKED_CODES,
    STAT_CHAINS,
    STAT_RANGE_HITS,
    STAT_REUSED,
    STAT_TESTED,
    STAT_TRIGGERS,
    layout,
    ranked,
    recompute,
)


def runs_columnar(plan) -> bool:
    """Whether the plan's work is all in the kernel (module docstring); the keys are checked per stream."""
    query, pattern = plan.query, plan.pattern
    return (
        query.strategy in (None, "ALL", "STRICT", "PARTITION_STRICT", *RANKED_CODES)
        and query.consume in (None, "NONE")
        and query.select is None
        and plan.join in ("hybrid", "nested")
        and not pattern.residual
        and not any(slot.per_event for slot in plan.slots)
    )


def key_columns(joins: list, chains: list, columns: StreamColumns) -> Optional[tuple]:
    """(values, valid, ids) over the whole stream: one row of values per distinct key (``x.v`` and ``y.v``
    read the same column), and the rows each side reads, (join left, join right, chain previous, chain
    current) arrays; None when a key is not a number numpy computes as the language does (strings,
    booleans, ``ts`` or ``type``, beyond 2^53)."""
    sides = [
        [join.left for join in joins],
        [join.right for join in joins],
        [chain.previous for chain in chains],
        [chain.current for chain in chains],
    ]
    rows: dict = {}
    ids = tuple(
        np.array([rows.setdefault(_plain(expr), len(rows)) for expr in exprs], dtype=np.int64) for exprs in sides
    )
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
        if not (np.isfinite(held).all() and (np.abs(held) < EXACT).all()):
            return None
        values[k], valid[k] = np.where(ok, value, 0.0), ok
    return values, valid, ids


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


def run(plan, stream: Stream):
    """(MatchArrays, counters) of the whole stream, or None when its keys keep it off the kernel."""
    pattern, slots = plan.pattern, plan.slots
    columns = StreamColumns(stream)
    keys = key_columns(pattern.joins, pattern.chains, columns)
    if keys is None:
        return None
    read = ~stream.type_in({PUNCTUATION})
    codes = stream.key_codes(plan.query.partition_by)
    codes = np.where(read, codes, -1)
    accepted = np.empty((len(slots), len(stream)), dtype=bool)
    for k in range(len(slots)):
        accepted[k] = plan.accepted(k, columns, read)
    events, window_lo, members, offsets, triggers, window_first, values, valid, peaks, peak_stored = layout(
        codes,
        int(codes.max(initial=-1)) + 1,
        accepted,
        np.ascontiguousarray(stream.times, dtype=np.float64),
        np.nan if plan.window_seconds is None else float(plan.window_seconds),
        -1 if plan.window_events is None else math.ceil(plan.window_events),
        not slots[-1].kleene,
        keys[0],
        keys[1],
    )
    join_left_key, join_right_key, chain_previous_key, chain_current_key = keys[2]
    pairs: dict = {}
    for join in pattern.joins:
        pairs.setdefault((join.left_slot, join.right_slot), len(pairs))
    names = [slot.var for slot in slots if slot.var is not None]
    slot_var = np.array([names.index(slot.var) if slot.var is not None else -1 for slot in slots], dtype=np.int64)
    joins, chains = pattern.joins, pattern.chains
    ints = lambda values: np.array(values, dtype=np.int64)  # noqa: E731
    flags = lambda values: np.array(values, dtype=np.bool_)  # noqa: E731
    found = recompute(
        members,
        offsets,
        triggers,
        window_first,
        flags([slot.kleene for slot in slots]),
        slot_var,
        window_lo,
        stream.position_of(events),
        values,
        valid,
        ints([j.left_slot for j in joins]),
        ints([j.right_slot for j in joins]),
        ints([OP_CODES[j.op] for j in joins]),
        flags([j.op in TRANSITIVE for j in joins]),
        join_left_key,
        join_right_key,
        ints([pairs[j.left_slot, j.right_slot] for j in joins]),
        ints([r for r, _ in pairs]),
        ints([s for _, s in pairs]),
        ints([c.slot for c in chains]),
        ints([OP_CODES[c.op] for c in chains]),
        flags([c.op in TRANSITIVE for c in chains]),
        chain_previous_key,
        chain_current_key,
        plan.join == "hybrid",
        plan.strict,
    )
    match_offsets, positions, variables, counters, distinct = found
    if plan.query.strategy in RANKED_CODES:  # the strategy among each trigger's matches, all at hand
        keep = ranked(match_offsets, positions, RANKED_CODES[plan.query.strategy])
        lengths = np.diff(match_offsets)
        cells = np.repeat(keep, lengths)
        positions, variables = positions[cells], variables[cells]
        match_offsets = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
        np.cumsum(lengths[keep], out=match_offsets[1:])
    kleene = [slot.kleene for slot in slots if slot.var is not None]
    # the triggers in stream order, each one's matches (all ending at it) sorted: in output order
    matches = MatchArrays.from_bindings(
        match_offsets,
        positions,
        variables,
        names,
        kleene,
        AT_LAST,
        sorted_within_last=bool(distinct),
        groups_in_order=True,
    )
    stats = {
        "triggers": int(counters[STAT_TRIGGERS]),
        "range_hits": int(counters[STAT_RANGE_HITS]),
        "join_tested": int(counters[STAT_TESTED]),
        "join_reused": int(counters[STAT_REUSED]),
        "chains": int(counters[STAT_CHAINS]),
        "matches": len(matches),
        "stored": 0,  # the kernel keeps no trees: what RcepMatcher's would have held at most
        "peak_stored": int(peak_stored),
        "tree_peaks": {k: int(peak) for k, peak in enumerate(peaks.tolist()) if peak >= 0},
    }
    return matches, stats
