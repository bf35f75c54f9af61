"""The columnar run of a finite stream: every trigger recomputed in one ``kernel.recompute`` call, matches
out as ``MatchArrays`` (no ``Event`` or ``Match`` object per event or per match).

``RcepPlan.run`` takes it when the query's whole work is what the kernel does: the strategies ALL, STRICT
and PARTITION_STRICT, NEXT, LAST and MAX (``kernel.ranked`` over each trigger's matches) and ROBUST_STNM
(``kernel.robust`` over every ALL match, each emitted where ``RcepMatcher`` releases it), and STNM (over
a whole stream every match walked forward from its first event, ``kernel.next_match_walks``; in a
micro-batch the batch's ALL matches judged by ``kernel.skip_till_next``), no CONSUME BY or RETURN, no
residual or per-event conditions, the hybrid or nested join, and join and chain keys (Θ_eq⁺'s too, under
STNM) that are numbers numpy computes exactly (``key_columns``). Anything else runs through
``RcepMatcher`` event by event, with the same matches.

The layout: the stream's events (punctuation left out) grouped by PARTITION BY sub-stream, in order inside
each (a stable argsort of the key codes); an event's index there is its *grouped index* g, and inside one
sub-stream g - (the sub-stream's first g) is its sequence number. Each slot's *members* are the grouped
indices of the events its type and local tests accept (``RcepPlan.accepted``, column-wise); the window of
a match ending at g starts at ``window_lo[g]``.
"""

from __future__ import annotations

import math

import numpy as np

from ...lang.window import time_limits
from ...runtime.event_record import PUNCTUATION
from ...runtime.stream import Stream
from ...runtime.match_arrays import AT_LAST, MatchArrays
from ..compiled import OP_CODES
from ..conjuncts import key_columns
from ..unary import StreamColumns
from .joins import TRANSITIVE
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
    released_at,
    next_match_walks,
    robust,
    skip_till_next,
)


def runs_columnar(plan, whole: bool = False) -> bool:
    """Whether the plan's work is all in the kernel (module docstring); the keys are checked per stream.
    ``whole``: over a whole finite stream, where ROBUST_STNM (judged on every ALL match) runs too."""
    query, pattern = plan.query, plan.pattern
    strategies = (
        "STNM",
        None,
        "ALL",
        "STRICT",
        "PARTITION_STRICT",
        *RANKED_CODES,
        *(("ROBUST_STNM",) if whole else ()),
    )
    return (
        query.strategy in strategies
        and (query.strategy != "STNM" or plan.skip_till_next.closure_known)
        and query.consume in (None, "NONE")
        and query.select is None
        and plan.join in ("hybrid", "nested")
        and not pattern.residual
        and not any(slot.per_event for slot in plan.slots)
    )


def accepted_by_slots(plan, stream: Stream, columns: StreamColumns) -> np.ndarray:
    """``accepted[s, i]``: slot s takes event i (its type and local tests; punctuation never)."""
    read = ~stream.type_in({PUNCTUATION})
    accepted = np.empty((len(plan.slots), len(stream)), dtype=bool)
    for k in range(len(plan.slots)):
        accepted[k] = plan.accepted(k, columns, read)
    return accepted


def run(plan, stream: Stream, opened=None):
    """(MatchArrays, counters) of the whole stream, or None when its keys keep it off the kernel.

    ``opened`` (``open_window.OpenWindow``: an incremental matcher's kept events followed by a micro-batch)
    recomputes only the triggers from its ``first`` event on, reads its ``accepted`` and, under
    ``WITHIN n EVENTS``, its events' sequence numbers ``seq`` in their sub-streams as a window of n - 1 over
    them (the kept events are not all of a sub-stream's)."""
    pattern, slots = plan.pattern, plan.slots
    columns = StreamColumns(stream)
    strategy = plan.query.strategy
    judge = plan.skip_till_next if strategy == "STNM" else None
    joins, chains = pattern.joins, pattern.chains
    if judge is not None:  # Θ_eq⁺'s equalities join the prefixes STNM judges (docs/references.md E11)
        joins, chains = joins + judge.closure_joins, chains + judge.closure_chains
    keys = key_columns(joins, chains, columns)
    if keys is None:
        return None
    read = ~stream.type_in({PUNCTUATION})
    codes = stream.key_codes(plan.query.partition_by)
    codes = np.where(read, codes, -1)
    accepted = accepted_by_slots(plan, stream, columns) if opened is None else opened.accepted
    times = np.ascontiguousarray(stream.times, dtype=np.float64)
    window_seconds = None if plan.window_seconds is None else float(plan.window_seconds)
    window_events = -1 if plan.window_events is None else math.ceil(plan.window_events)
    if opened is not None and window_events >= 0:
        times, window_seconds, window_events = opened.seq.astype(np.float64), float(window_events - 1), -1
    events, window_lo, members, offsets, triggers, window_first, values, valid, peaks, peak_stored = layout(
        codes,
        int(codes.max(initial=-1)) + 1,
        accepted,
        times,
        np.zeros(0) if window_seconds is None else time_limits(window_seconds, times),
        window_events,
        not slots[-1].kleene and judge is None,  # (STNM's candidates include past triggers)
        keys[0],
        keys[1],
    )
    if opened is not None:  # the kept events' triggers ran before
        skip = int(np.searchsorted(events[members[triggers]], opened.first))
        triggers, window_first = triggers[skip:], np.ascontiguousarray(window_first[:, skip:])
    join_left_key, join_right_key, chain_previous_key, chain_current_key = keys[2]
    pairs: dict = {}
    for join in pattern.joins:
        pairs.setdefault((join.left_slot, join.right_slot), len(pairs))
    ints = lambda values: np.array(values, dtype=np.int64)  # noqa: E731
    flags = lambda values: np.array(values, dtype=np.bool_)  # noqa: E731
    n_joins, n_chains = len(pattern.joins), len(pattern.chains)
    kleene = flags([slot.kleene for slot in slots])
    judged = (  # STNM's joins and chains, Θ_eq⁺'s among them
        (
            ints([j.left_slot for j in joins]),
            ints([j.right_slot for j in joins]),
            ints([OP_CODES[j.op] for j in joins]),
            join_left_key,
            join_right_key,
        ),
        (ints([c.slot for c in chains]), ints([OP_CODES[c.op] for c in chains]), chain_previous_key, chain_current_key),
    )
    if judge is not None and opened is None:  # every STNM match walked forward from its first event
        match_offsets, positions, cells, distinct = next_match_walks(
            members, offsets, kleene, window_lo, stream.position_of(events), values, valid, *judged
        )
        counters = np.zeros(6, dtype=np.int64)
        counters[STAT_TRIGGERS] = len(triggers)
        if slots[-1].kleene:  # a match waits until the window of its first event has passed
            emitted = _released(plan, stream, events, codes, match_offsets, positions, read)
        else:
            emitted = AT_LAST
        return _matches(plan, match_offsets, positions, cells, emitted, distinct, counters, peaks, peak_stored)
    found = recompute(
        members,
        offsets,
        triggers,
        window_first,
        kleene,
        window_lo,
        stream.position_of(events),
        values,
        valid,
        ints([j.left_slot for j in pattern.joins]),
        ints([j.right_slot for j in pattern.joins]),
        ints([OP_CODES[j.op] for j in pattern.joins]),
        flags([j.op in TRANSITIVE for j in pattern.joins]),
        join_left_key[:n_joins],
        join_right_key[:n_joins],
        ints([pairs[j.left_slot, j.right_slot] for j in pattern.joins]),
        ints([r for r, _ in pairs]),
        ints([s for _, s in pairs]),
        ints([c.slot for c in pattern.chains]),
        ints([OP_CODES[c.op] for c in pattern.chains]),
        flags([c.op in TRANSITIVE for c in pattern.chains]),
        chain_previous_key[:n_chains],
        chain_current_key[:n_chains],
        plan.join == "hybrid",
        plan.strict,
    )
    match_offsets, positions, cells, counters, distinct = found
    emitted = AT_LAST
    if strategy in RANKED_CODES:  # the strategy among each trigger's matches, all at hand
        match_offsets, positions, cells = _rows(ranked(match_offsets, positions, RANKED_CODES[strategy]), found)
    elif strategy == "ROBUST_STNM":  # judged on every ALL match
        match_offsets, positions, cells = _rows(robust(match_offsets, positions, cells), found)
        emitted = _released(plan, stream, events, codes, match_offsets, positions, read)
    elif judge is not None:  # STNM: the candidates between a row's events tested against its prefixes
        rows = match_offsets, positions, cells
        if opened is not None and opened.pending is not None:  # rows of earlier batches, still waiting
            rows = _concatenated(opened.pending, rows)
            match_offsets, positions, cells = rows
        grouped = np.empty(len(stream), dtype=np.int64)
        grouped[events] = np.arange(len(events))
        keep = skip_till_next(
            match_offsets,
            positions,
            cells,
            grouped[np.searchsorted(stream.positions, positions)],
            members,
            offsets,
            kleene,
            window_lo,
            values,
            valid,
            *judged,
        )
        match_offsets, positions, cells = _rows(keep, rows)
        if slots[-1].kleene:  # a match waits until the window of its first event has passed, maybe past this batch
            match_offsets, positions, cells, emitted = _released_here(
                plan, opened, codes, read, match_offsets, positions, cells
            )
            distinct = False  # (the rows in the order of their releases)
    return _matches(plan, match_offsets, positions, cells, emitted, distinct, counters, peaks, peak_stored)


def _matches(plan, match_offsets, positions, cells, emitted, distinct, counters, peaks, peak_stored) -> tuple:
    """(MatchArrays, counters) of the rows: the triggers in stream order, each one's matches (all ending at
    it) sorted, in output order when ``distinct``."""
    names, slot_var, named_kleene = variable_ids(plan)
    identity = np.array_equal(slot_var, np.arange(len(slot_var)))  # the slots are the variable ids
    variables = cells if identity else slot_var[cells]
    matches = MatchArrays.from_bindings(
        match_offsets,
        positions,
        variables,
        names,
        named_kleene,
        emitted,
        sorted_within_last=bool(distinct),
        groups_in_order=bool(distinct),
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


def variable_ids(plan) -> tuple:
    """(the named variables, each slot's index among them or -1, whether each named one is Kleene)."""
    names = [slot.var for slot in plan.slots if slot.var is not None]
    slot_var = np.array([names.index(slot.var) if slot.var is not None else -1 for slot in plan.slots], np.int64)
    return names, slot_var, [slot.kleene for slot in plan.slots if slot.var is not None]


def _rows(keep: np.ndarray, found: tuple) -> tuple:
    """(offsets, positions, slots) of the rows ``keep`` selects from ``recompute``'s result; ``keep`` a mask,
    or row numbers (the rows in that order)."""
    offsets, positions, cells = found[:3]
    lengths = np.diff(offsets)
    kept = np.zeros(len(lengths[keep]) + 1, dtype=np.int64)
    np.cumsum(lengths[keep], out=kept[1:])
    if keep.dtype == np.bool_:
        picked = np.repeat(keep, lengths)
    else:  # each cell of the output at its row's start in the input plus its place in the row
        picked = np.repeat(offsets[keep] - kept[:-1], lengths[keep]) + np.arange(kept[-1])
    return kept, positions[picked], cells[picked]


def _concatenated(first: tuple, second: tuple) -> tuple:
    """Two (offsets, positions, slots) row sets, one after the other."""
    offsets = np.concatenate([first[0], second[0][1:] + first[0][-1]])
    return offsets, np.concatenate([first[1], second[1]]), np.concatenate([first[2], second[2]])


def _released_here(plan, opened, codes, read, offsets, positions, cells) -> tuple:
    """STNM with a Kleene last slot in a micro-batch (``opened``): each row waits until the first event past
    the window of its first event (``_released``'s rule: any read event for a time window, its
    sub-stream's ``n``-th next for ``n EVENTS``, numbered by ``opened.seq``). The rows released in the
    joined stream (the batch: earlier events released what they released) as (offsets, positions, slots,
    emitted positions), in the order of their releases, ties in row order (as the pushes release them);
    the others wait in ``opened.pending``."""
    stream = opened.stream
    n = len(stream)
    index = np.searchsorted(stream.positions, positions)
    firsts, triggers = index[offsets[:-1]], index[offsets[1:] - 1]
    if plan.window_seconds is not None:
        times = np.ascontiguousarray(stream.times, dtype=np.float64)
        at = released_at(times, time_limits(float(plan.window_seconds), times), read, firsts, triggers)
    elif plan.window_events is not None:  # the read event of the same sub-stream numbered n after the first
        numbered = np.flatnonzero(read)
        span = int(np.nanmax(opened.seq, initial=0)) + math.ceil(plan.window_events) + 1
        keys = codes[numbered] * span + opened.seq[numbered].astype(np.int64)
        order = np.argsort(keys, kind="stable")
        wanted = codes[firsts] * span + opened.seq[firsts].astype(np.int64) + math.ceil(plan.window_events)
        j = np.minimum(np.searchsorted(keys[order], wanted), max(len(order) - 1, 0))
        found = len(order) > 0
        at = np.where(found & (keys[order][j] == wanted), numbered[order][j] if found else n, n)
    else:
        at = np.full(len(firsts), n, dtype=np.int64)
    done = at < n
    order = np.flatnonzero(done)[np.argsort(at[done], kind="stable")]
    opened.pending = _rows(np.flatnonzero(~done), (offsets, positions, cells))
    return (*_rows(order, (offsets, positions, cells)), stream.position_of(at[order]))


def _released(plan, stream: Stream, events, codes, offsets, positions, read) -> np.ndarray:
    """The position at which ``RcepMatcher`` releases each ROBUST_STNM match (it waits until the window of
    its first event has passed): the first event past that window (any read event for a time window, the
    next ``n``-th of its sub-stream for ``n EVENTS``), else the match's trigger, where ``close`` leaves it."""
    index = np.searchsorted(stream.positions, positions)  # stream indices (positions ascend)
    firsts, triggers = index[offsets[:-1]], index[offsets[1:] - 1]
    n = len(stream)
    if plan.window_seconds is not None:
        times = np.ascontiguousarray(stream.times, dtype=np.float64)
        at = released_at(times, time_limits(float(plan.window_seconds), times), read, firsts, triggers)
    elif plan.window_events is not None:
        grouped = np.empty(n, dtype=np.int64)
        grouped[events] = np.arange(len(events))
        past = grouped[firsts] + math.ceil(plan.window_events)
        same = past < len(events)
        same[same] = codes[events[past[same]]] == codes[firsts[same]]  # still its sub-stream
        at = np.full(len(firsts), n, dtype=np.int64)
        at[same] = events[past[same]]
    else:
        at = np.full(len(firsts), n, dtype=np.int64)
    emitted = np.where(at < n, at, triggers)
    return stream.position_of(emitted)
