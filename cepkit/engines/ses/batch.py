"""The columnar run of a finite stream: every match window in one ``kernel.run_windows`` call, matches out
as ``MatchArrays`` (no ``Entry``, ``Event`` or ``Match`` object per event or match).

``SesPlan.run`` takes it under ALL, STNM and ROBUST_STNM (by backtracking, ``robust="backtrack"``) without
RETURN when every conjunct of Θ ∪ Θ_eq⁺ is one the kernel
checks (the equalities on X, ``x.A = y.A``, hold in every window by its grouping): a property of one variable (exact per event: evaluated column-wise into each event's variable
mask, Thm 5.1), a chain ``f(prev(p)) φ g(p)`` on a Kleene variable, or a join ``f(x) φ g(y)`` between two
variables, with keys numpy computes exactly (``conjuncts.key_columns``). Anything else (RETURN, all+pp
ROBUST_STNM, non-monotone conditions, strings in a join...) runs through ``SesMatcher``, with the same
matches. ``evaluate`` also runs a micro-batch with the windows an incremental matcher keeps open.

Layout: the kept events (punctuation left out, and with ``two_phase`` those fitting no variable) grouped
by window key (PARTITION BY values, then the values of X), in order inside each group; without
``two_phase`` every event opens a window over its sub-stream and A runs on each (Alg 1). A window's coordinate is the
event's time, or its position in its PARTITION BY sub-stream (all its events count, filtered or not)
under ``WITHIN n EVENTS``. A match is emitted, as by the matcher, at the first event (any partition for a
time window, its sub-stream for ``n EVENTS``) past its W[0]'s window, else at the stream's last event.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...lang import ast as A
from ...lang.window import past_fitting_all
from ...runtime.event_record import PUNCTUATION
from ...runtime.stream import Stream
from ...runtime.match_arrays import MatchArrays
from ..unary import StreamColumns, unary_truth
from ..compiled import OP_CODES
from ..conjuncts import condition_role, key_columns, substream_positions
from .kernel import STAT_EVALUATED, STAT_MAX_WINDOW, run_windows


class Layout:
    """The kernel's reading of a plan's Θ: ``properties`` per variable, ``joins`` and ``chains``
    (``conjuncts.condition_role``'s roles, on variable indices), or None when some conjunct is none of them; and
    what the kernel takes of the plan whatever the stream (``moves``, the joins' and chains' slots and
    operators, the shown variables' ids), computed once per plan (``SesPlan.layout``)."""

    @classmethod
    def of(cls, plan) -> Optional["Layout"]:
        robust = plan.strategy == "ROBUST_STNM" and plan.robust == "backtrack"  # "filter" stays in Python
        if (
            (plan.strategy not in (None, "ALL", "STNM") and not robust)
            or plan.select is not None
            or not plan.satisfiable
        ):
            return None
        index, kleene = plan.index, set(plan.pattern.kleene)
        layout = cls()
        layout.properties = [[] for _ in range(plan.arity)]
        layout.joins, layout.chains = [], []
        for conjunct in plan.conjuncts:
            found = condition_role(conjunct.expr, index, kleene)
            if _grouped_on(conjunct.expr, plan.partition_attributes):
                continue  # the window's events agree on X, none null (``run``)
            if found[0] == "local" and conjunct.exact_property:
                layout.properties[index[found[1]]].append(conjunct.expr)
            elif found[0] == "join":
                layout.joins.append(found[1])
            elif found[0] == "chain":
                layout.chains.append(found[1])
            else:
                return None
        layout.moves, layout.final = moves(plan)
        ints = lambda values: np.array(values, dtype=np.int64)  # noqa: E731
        joins, chains = layout.joins, layout.chains
        layout.slots = (
            ints([j.left_slot for j in joins]),
            ints([j.right_slot for j in joins]),
            ints([OP_CODES[j.op] for j in joins]),
        )
        layout.chain_slots = (ints([c.slot for c in chains]), ints([OP_CODES[c.op] for c in chains]))
        visible = {plan.index[name]: k for k, name in enumerate(plan.visible)}
        layout.ids = ints([visible.get(v, -1) for v in range(plan.arity)])
        layout.kleene = [name in plan.pattern.kleene for name in plan.visible]
        return layout


def _grouped_on(cond, attributes: tuple) -> bool:
    """Whether ``cond`` is ``x.A = y.A`` (or ``prev(p.A) = p.A``) for an attribute A of X."""
    if not (isinstance(cond, A.Compare) and cond.op == "="):
        return False
    sides = [side.arg if isinstance(side, A.Prev) else side for side in (cond.left, cond.right)]
    return (
        all(isinstance(side, A.Attr) and side.index in (None, "i", "i-1") for side in sides)
        and sides[0].attr == sides[1].attr
        and sides[0].attr in attributes
    )


def moves(plan) -> tuple:
    """(``moves[a, state, var]``: the target state of automaton a's transition, -1 where none; ``final[a]``).
    States are numbered per automaton (the start state 0), so the brute force's k! sequential automata
    take k + 1 rows each, not 2^k."""
    automata = plan.compiled
    numbers = [{mask: i for i, mask in enumerate(sorted(a.outgoing, key=lambda m: (m != 0, m)))} for a in automata]
    table = np.full((len(automata), max(map(len, numbers)), plan.arity), -1, dtype=np.int32)
    final = np.array([number[a.final] for a, number in zip(automata, numbers)], dtype=np.int64)
    for a, (automaton, number) in enumerate(zip(automata, numbers)):
        for source, edges in automaton.outgoing.items():
            for edge in edges:
                table[a, number[source], edge.var] = number[edge.target]
    return table, final


class Columns:
    """What the kernel reads of a stream, column-wise: ``fits`` (per event, the mask of the variables
    whose properties it satisfies; 0 for punctuation and, on X, for a null), ``read`` (not punctuation),
    ``by`` (PARTITION BY codes), ``codes`` (window keys: PARTITION BY, then X) and the join and chain keys
    (``conjuncts.key_columns``)."""

    @classmethod
    def of(cls, plan, stream: Stream) -> Optional["Columns"]:
        """None when the stream's keys keep it off the kernel (strings in a join, unhashable values)."""
        layout = plan.layout
        columns = StreamColumns(stream)
        keys = key_columns(layout.joins, layout.chains, columns)
        if keys is None:
            return None
        query = plan.query
        read = ~stream.type_in({PUNCTUATION})
        fits = np.zeros(len(stream), dtype=np.int64)
        for v, name in enumerate(plan.variables):
            atom_type = plan.pattern.atoms[name].type
            mask = read.copy()
            if atom_type is not None:
                hierarchy = (
                    query.hierarchy if query.hierarchy is not None and query.hierarchy.attribute is None else None
                )
                mask &= stream.type_in(hierarchy.covers(atom_type) if hierarchy else {atom_type})
            for cond in layout.properties[v]:
                mask = unary_truth(cond, name, columns, mask)
            fits |= mask.astype(np.int64) << v
        for attr in plan.partition_attributes:  # a null on X joins nothing: no match has the event
            fits[stream.column(attr).null] = 0
        try:
            by = stream.key_codes(query.partition_by)
            codes = stream.key_codes(tuple(query.partition_by) + tuple(plan.partition_attributes))
        except TypeError:  # unhashable values (lists): the matcher hashes them by content, or says which
            return None
        found = cls()
        found.stream, found.keys, found.read, found.fits, found.by, found.codes = stream, keys, read, fits, by, codes
        found.kept = np.flatnonzero(fits != 0) if plan.two_phase else np.flatnonzero(read)  # Thm 5.1's filter
        return found


def run(plan, stream: Stream) -> Optional[tuple]:
    """(MatchArrays, info) of the whole stream, or None when the plan or the stream's keys keep it off the
    kernel."""
    if plan.layout is None:
        return None
    columns = Columns.of(plan, stream)
    if columns is None:
        return None
    coord = substream_positions(columns.by, columns.read) if plan.events_window else stream.times
    last = int(stream.position_of(np.array([len(stream) - 1]))[0]) if len(stream) else -1
    matches, info, _ = evaluate(plan, columns, coord, last)
    return matches, info


def evaluate(plan, columns: Columns, coord: np.ndarray, last: int, final: bool = True) -> tuple:
    """(MatchArrays, info, open) of the kept events' windows that are closed (an event of their clock lies
    past W[0] + τ: the match is emitted at it) or, when ``final``, all of them (emitted at ``last``, the
    position of the last event seen); ``open`` lists the kept events whose windows are not closed, in
    stream order (none when ``final``): an incremental matcher keeps them with the next micro-batch."""
    stream, layout = columns.stream, plan.layout
    past = _closing(plan, columns, coord, columns.kept)
    closed = past < len(stream)
    codes = columns.codes[columns.kept]
    order = np.argsort(codes, kind="stable")
    events = columns.kept[order]
    codes = codes[order]
    group_end = np.searchsorted(codes, codes, "right").astype(np.int64)
    vars_ = columns.fits[events]
    counts = np.zeros((plan.arity, len(events) + 1), dtype=np.int64)
    for v in range(plan.arity):
        np.cumsum(vars_ >> v & 1, out=counts[v, 1:])
    values, valid = columns.keys[0][:, events], columns.keys[1][:, events]
    join_left_key, join_right_key, chain_previous_key, chain_current_key = columns.keys[2]
    found = run_windows(
        np.ascontiguousarray(coord[events], dtype=np.float64),
        vars_,
        group_end,
        stream.position_of(events),
        counts,
        closed[order] | final,
        layout.moves,
        layout.final,
        plan.first_set,
        plan.limits(np.ascontiguousarray(coord[events], dtype=np.float64)),
        plan.two_phase,
        plan.strategy in (None, "ALL"),
        plan.strategy == "ROBUST_STNM",
        plan.lookahead,
        values,
        valid,
        *layout.slots,
        join_left_key,
        join_right_key,
        *layout.chain_slots,
        chain_previous_key,
        chain_current_key,
    )
    offsets, positions, variables, starts, counters = found
    at = past[order][starts]
    emitted = np.full(len(starts), last, dtype=np.int64)
    emitted[at < len(stream)] = stream.position_of(at[at < len(stream)])
    matches = MatchArrays.from_bindings(offsets, positions, layout.ids[variables], plan.visible, layout.kleene, emitted)
    info = {
        "windows": len(events),
        "evaluated": int(counters[STAT_EVALUATED]),
        "max_window": int(counters[STAT_MAX_WINDOW]),
    }
    return matches, info, (np.zeros(0, np.int64) if final else columns.kept[~closed])


def _closing(plan, columns: Columns, coord: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The stream index of the event that closes the window of each of ``starts`` (stream indices, in
    order): the first event past the window (``coord - W[0] > τ``: any event, punctuation too, for a time
    window; the (τ + 1)-th of its PARTITION BY sub-stream after W[0] for ``n EVENTS``); the stream's
    length where none does yet."""
    stream, n = columns.stream, len(columns.stream)
    if not np.isfinite(plan.span) or not len(starts):
        return np.full(len(starts), n, dtype=np.int64)
    if not plan.events_window:  # any event closes a time window, punctuation too
        times = stream.times
        return np.maximum(past_fitting_all(times, times[starts], plan.span), starts + 1)
    # sub-stream positions are consecutive within a sub-stream: look (code, W[0]'s + τ + 1) up
    read = np.flatnonzero(columns.read)
    stride = int(coord[read].max()) + int(plan.span) + 2
    keys = columns.by[read] * stride + coord[read].astype(np.int64)
    order = np.argsort(keys, kind="stable")
    wanted = columns.by[starts] * stride + coord[starts].astype(np.int64) + int(plan.span) + 1
    place = np.minimum(np.searchsorted(keys[order], wanted), len(read) - 1)
    return np.where(keys[order][place] == wanted, read[order][place], n).astype(np.int64)
