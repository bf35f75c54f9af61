"""The recomputation of every trigger of a finite stream in one compiled call ([RCEP] ch. 3, batched).

``RcepMatcher`` recomputes one trigger at a time in Python (``plan.Recomputation``). Over a whole stream the
triggers are all known, so ``recompute`` runs the same four steps for each of them inside one kernel, over
the stream's columns laid out by ``batch``:

1. **range queries**: each slot's candidates are a contiguous run of its *member list* (the events its type
   and local tests accept, grouped by PARTITION BY sub-stream, in order): those in the trigger's window
   (its first member given, from prefix counts) and before the latest candidate of the slot on its right
   (a galloping search);
2. **joins into bitvectors**: per pair of joined slots, Algorithm 2 (``joins.hybrid_into``, dominance
   reuse) or the nested loop, one predicate at a time, ANDed and packed into row bitsets of uint64 words
   (bit v of row u: candidate u of the earlier slot joins candidate v of the later one); per Kleene slot
   its chain predicates as a self-join, the can-follow DAG, as successor bitsets; when every slot has at
   most 64 candidates (most triggers of a small window), only the rows the enumeration reads, each
   computed by a nested loop when first read, since whole matrices would cost more than it reads;
3. **enumeration**: left to right with an explicit stack, the trigger fixed first (an earlier slot joined
   with it keeps the candidates joining it; a Kleene last slot the candidates whose chains reach it);
   binding an event ANDs its row into the allowed words of every later joined slot (a branch stops when
   one is empty), a Kleene slot's chain grows forwards along the DAG (every chain exactly once); each frame
   offers the events that may come next (one more of the chain, or the first of the next slot) in time
   order, so
4. the matches go into flat position / slot arrays (``MatchArrays.from_bindings``'s form) already in order
   of their positions: the triggers run in stream order, so the rows come in output order with no sort
   (but for a trigger where one event was offered both ways: its rows are then merge-sorted).

Written once in the subset of Python numba compiles: without numba (or with ``NUMBA_DISABLE_JIT=1``) the
same functions run as Python, the pure-Python twin the tests compare.
"""

from __future__ import annotations

import numpy as np

from ..compiled import grow, jit, phi, row_less, row_order, shared_pairs
from .joins import hybrid_into

STAT_TRIGGERS, STAT_RANGE_HITS, STAT_TESTED, STAT_REUSED, STAT_CHAINS, STAT_MATCHES = range(6)


@jit
def layout(codes, n_codes, accepted, times, limits, window_events, last_alone, kval_stream, kok_stream):
    """Everything ``recompute`` reads, from the stream's columns in one pass each (no sort, no per-slot
    array over the stream): ``codes`` (a PARTITION BY code per read event, -1 for punctuation, below
    ``n_codes``), ``accepted[s, i]`` (slot s takes stream event i), ``times``; a time window's
    ``limits`` (``lang.window.time_limits`` of each stream event's time; empty: none) and an EVENTS
    window ``window_events`` (0: none); ``last_alone``: the last slot is not Kleene (a trigger leaves its
    tree at once); the join and chain keys per stream event.

    Returns (events, window_lo, members, offsets, triggers, window_first, kval, kok, peaks, peak_stored):
    ``events[g]`` the stream index of grouped index g (read events by sub-stream, each in order),
    ``window_lo[g]`` the first grouped index of the window of a match ending at g, each slot's members
    (grouped indices, ascending, slot s at ``offsets[s]:offsets[s+1]``), the last slot's members in stream
    order (``triggers``, member indices) with each slot's first member in their windows
    (``window_first[s, i]``), the keys per member, and what ``RcepMatcher``'s trees would have held at
    most: per slot (-1: never used) and all together."""
    n_stream = len(codes)
    n_slots = accepted.shape[0]
    last = n_slots - 1
    # 1. counting sort of the read events by code, stable: the sub-streams one after the other
    group_size = np.zeros(n_codes + 1, dtype=np.int64)
    for i in range(n_stream):
        if codes[i] >= 0:
            group_size[codes[i] + 1] += 1
    for c in range(n_codes):
        group_size[c + 1] += group_size[c]
    n = group_size[n_codes]
    events = np.empty(n, dtype=np.int64)
    grouped_of = np.full(n_stream, -1, dtype=np.int64)
    fill = group_size[:n_codes].copy()
    for i in range(n_stream):
        c = codes[i]
        if c >= 0:
            events[fill[c]] = i
            grouped_of[i] = fill[c]
            fill[c] += 1
    # 2. window starts: a pointer per sub-stream, stepped back where the float allowance lets it reach further
    window_lo = np.empty(n, dtype=np.int64)
    timed = len(limits) > 0
    grouped_times = np.empty(n)
    for g in range(n):
        grouped_times[g] = times[events[g]]
    for c in range(n_codes):
        begin, end = group_size[c], group_size[c + 1]
        lo = begin
        for g in range(begin, end):
            t = grouped_times[g]
            limit = limits[events[g]] if timed else np.inf
            min_index = begin
            if window_events >= 0:
                min_index = max(begin, g - window_events + 1)
            lo = max(lo, min_index)
            while lo < g and t - grouped_times[lo] > limit:
                lo += 1
            while lo > min_index and t - grouped_times[lo - 1] <= limit:
                lo -= 1
            window_lo[g] = lo
    # 3. members per slot, in grouped order
    offsets = np.zeros(n_slots + 1, dtype=np.int64)
    for g in range(n):
        for s in range(n_slots):
            if accepted[s, events[g]]:
                offsets[s + 1] += 1
    for s in range(n_slots):
        offsets[s + 1] += offsets[s]
    members = np.empty(offsets[n_slots], dtype=np.int64)
    at = offsets[:n_slots].copy()
    for g in range(n):
        for s in range(n_slots):
            if accepted[s, events[g]]:
                members[at[s]] = g
                at[s] += 1
    # 4. per grouped index, each slot's members in its window ([first, count)): the triggers' range
    # starts and the trees' sizes, by pointers that move forward with the window
    n_triggers = offsets[n_slots] - offsets[last]
    first_of_trigger = np.empty((n_slots, n_triggers), dtype=np.int64)  # in member order
    peaks = np.full(n_slots, -1, dtype=np.int64)
    peak_stored = 0
    pointer = offsets[:n_slots].copy()  # first member of s at or after window_lo[g]
    count = offsets[:n_slots].copy()  # first member of s after g
    for g in range(n):
        total, relevant = 0, False
        for s in range(n_slots):
            begin, end = offsets[s], offsets[s + 1]
            while pointer[s] < end and members[pointer[s]] < window_lo[g]:
                pointer[s] += 1
            while pointer[s] > begin and members[pointer[s] - 1] >= window_lo[g]:
                pointer[s] -= 1
            mine = count[s] < end and members[count[s]] == g
            if mine:
                count[s] += 1
                relevant = True
            held = count[s] - pointer[s]
            if s == last and last_alone:
                held = 1 if mine else 0
            total += held
            if mine and held > peaks[s]:
                peaks[s] = held
        if relevant and total > peak_stored:
            peak_stored = total
        if count[last] > offsets[last] and members[count[last] - 1] == g:
            for s in range(n_slots):
                first_of_trigger[s, count[last] - 1 - offsets[last]] = pointer[s]
    # 5. the triggers in stream order
    triggers = np.empty(n_triggers, dtype=np.int64)
    window_first = np.empty((n_slots, n_triggers), dtype=np.int64)
    trigger_of = np.full(n, -1, dtype=np.int64)
    for k in range(n_triggers):
        trigger_of[members[offsets[last] + k]] = k
    k = 0
    for i in range(n_stream):
        g = grouped_of[i]
        if g >= 0 and trigger_of[g] >= 0:
            triggers[k] = offsets[last] + trigger_of[g]
            for s in range(n_slots):
                window_first[s, k] = first_of_trigger[s, trigger_of[g]]
            k += 1
    # 6. the keys per member
    n_keys = kval_stream.shape[0]
    kval = np.empty((n_keys, len(members)))
    kok = np.empty((n_keys, len(members)), dtype=np.bool_)
    for r in range(n_keys):
        for m in range(len(members)):
            kval[r, m] = kval_stream[r, events[members[m]]]
            kok[r, m] = kok_stream[r, events[members[m]]]
    return events, window_lo, members, offsets, triggers, window_first, kval, kok, peaks, peak_stored


@jit(nrt=False)
def _lower_bound(values, lo, hi, x):
    """The first index in [lo, hi) whose value is >= x (hi when none)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit(nrt=False)
def _gallop(values, lo, hi, x):
    """``_lower_bound`` for an answer near ``lo``: steps of 1, 2, 4... then a binary search."""
    step, top = 1, lo
    while top < hi and values[top] < x:
        lo = top + 1
        top = lo + step
        step *= 2
    return _lower_bound(values, lo, min(top, hi), x)


@jit
def _pack_rows(matrix, out, base, words):
    """Row bitsets of a boolean matrix: bit v of row u at ``out[base + u * words + v // 64]``."""
    n, m = matrix.shape
    for u in range(n):
        for w in range(words):
            out[base + u * words + w] = 0
        for v in range(m):
            if matrix[u, v]:
                out[base + u * words + (v >> 6)] |= np.uint64(1) << np.uint64(v & 63)


@jit
def _nested_into(joined, outer_keys, outer_valid, outer_seq, inner_keys, inner_valid, inner_seq, op):
    """NLJoin into ``joined``: every pair with inner after outer compared; the comparisons made."""
    n, m = len(outer_keys), len(inner_keys)
    tested = 0
    for u in range(n):
        for v in range(m):
            joined[u, v] = False
            if inner_seq[v] > outer_seq[u]:
                tested += 1
                joined[u, v] = outer_valid[u] and inner_valid[v] and phi(op, outer_keys[u], inner_keys[v])
    return tested


@jit
def _join(
    joined,
    dominates,
    hybrid,
    op,
    transitive,
    kval,
    kok,
    left_key,
    right_key,
    outer,
    inner,
    outer_first,
    inner_first,
    stats,
):
    """B[u, v] into ``joined`` for one predicate between the candidates ``outer`` and ``inner`` (grouped
    indices, in order, from member ``outer_first`` / ``inner_first`` on: their keys are slices of the
    members' key rows)."""
    ok, ik = (
        kval[left_key, outer_first : outer_first + len(outer)],
        kval[right_key, inner_first : inner_first + len(inner)],
    )
    ov, iv = (
        kok[left_key, outer_first : outer_first + len(outer)],
        kok[right_key, inner_first : inner_first + len(inner)],
    )
    if hybrid:
        tested, reused = hybrid_into(joined, dominates, ok, ov, outer, ik, iv, inner, op, transitive)
        stats[STAT_REUSED] += reused
    else:
        tested = _nested_into(joined, ok, ov, outer, ik, iv, inner, op)
    stats[STAT_TESTED] += tested


@jit
def _sort_tied(offsets, positions, slots, begin, end):
    """Rows ``begin:end`` (one trigger's, all ending at it) put in order of their positions, a stable merge
    sort; False when two of them have the same positions. Only for a trigger whose enumeration met one
    event offered both to extend a Kleene slot and to start the next slot (then its rows may interleave)."""
    m = end - begin
    order = np.arange(begin, end)
    spare = np.empty(m, dtype=np.int64)
    width = 1
    while width < m:
        for lo in range(0, m, 2 * width):
            mid, hi = min(lo + width, m), min(lo + 2 * width, m)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if row_less(offsets, positions, order[j], order[i]):
                    spare[k] = order[j]
                    j += 1
                else:
                    spare[k] = order[i]
                    i += 1
                k += 1
            while i < mid:
                spare[k] = order[i]
                i += 1
                k += 1
            while j < hi:
                spare[k] = order[j]
                j += 1
                k += 1
            for x in range(lo, hi):
                order[x] = spare[x]
        width *= 2
    distinct = True
    for i in range(1, m):
        if not row_less(offsets, positions, order[i - 1], order[i]):
            distinct = False
    base = offsets[begin]
    held_offsets = offsets[begin : end + 1].copy()
    held_positions = positions[base : offsets[end]].copy()
    held_slots = slots[base : offsets[end]].copy()
    at = base
    for i in range(m):
        r = order[i] - begin
        for x in range(held_offsets[r], held_offsets[r + 1]):
            positions[at], slots[at] = held_positions[x - base], held_slots[x - base]
            at += 1
        offsets[begin + i + 1] = at
    return distinct


@jit
def _join_all(
    joined,
    one,
    dominates,
    hybrid,
    which,
    target,
    ops,
    transitive,
    left_keys,
    right_keys,
    kval,
    kok,
    outer,
    inner,
    outer_first,
    inner_first,
    stats,
):
    """Into ``joined``: B[u, v] of every predicate j with ``which[j] == target`` (a pair of slots, or a
    Kleene slot's chain), ANDed (``one`` the scratch of each after the first); whether there was one."""
    started = False
    for j in range(len(which)):
        if which[j] == target:
            _join(
                one if started else joined,
                dominates,
                hybrid,
                ops[j],
                transitive[j],
                kval,
                kok,
                left_keys[j],
                right_keys[j],
                outer,
                inner,
                outer_first,
                inner_first,
                stats,
            )
            if started:
                joined &= one
            started = True
    return started


@jit(nrt=False)
def _read_join_row(lazy_rows, at, lazy, inner_first, inner_count, outer, p, joins, data):
    """Row ``outer`` (a member index) of pair p's matrix at ``rows[at]``, computed when first read (``lazy``:
    one word, bit v for inner candidate v, member ``inner_first + v``, after it and satisfying every
    predicate of the pair with it; a nested loop over one row). ``lazy_rows``: (rows, whether each is
    computed); ``joins``: (pair, op, left key, right key) per join; ``data``: (members, kval, kok, stats)."""
    rows, ready = lazy_rows
    if not lazy or ready[at]:
        return
    join_pair, join_op, join_left_key, join_right_key = joins
    members, kval, kok, stats = data
    word = np.uint64(0)
    for v in range(inner_count - 1, -1, -1):
        inner = inner_first + v
        if members[inner] <= members[outer]:
            break
        ok = True
        for j in range(len(join_pair)):
            if join_pair[j] != p:
                continue
            stats[STAT_TESTED] += 1
            if not (
                kok[join_left_key[j], outer]
                and kok[join_right_key[j], inner]
                and phi(join_op[j], kval[join_left_key[j], outer], kval[join_right_key[j], inner])
            ):
                ok = False
                break
        if ok:
            word |= np.uint64(1) << np.uint64(v)
    rows[at], ready[at] = word, True


@jit(nrt=False)
def _read_chain_row(lazy_dag, at, lazy, slot_first, slot_count, tail, s, chains, strict, data):
    """Row ``tail`` of Kleene slot s's can-follow DAG at ``dag[at]``, computed when first read (``lazy``:
    one word, bit v for candidate v that may come just after it in the chain: every chain predicate of
    the slot; STRICT: the event just after). ``lazy_dag``: (rows, whether each is computed); ``chains``:
    (slot, op, previous key, current key) per chain; ``data``: (members, kval, kok, stats)."""
    dag, ready = lazy_dag
    if not lazy or ready[at]:
        return
    chain_slot, chain_op, chain_previous_key, chain_current_key = chains
    members, kval, kok, stats = data
    word = np.uint64(0)
    previous = slot_first + tail
    for v in range(tail + 1, slot_count):
        current = slot_first + v
        if strict and members[current] != members[previous] + 1:
            if members[current] > members[previous] + 1:
                break
            continue
        ok = True
        for c in range(len(chain_slot)):
            if chain_slot[c] != s:
                continue
            stats[STAT_TESTED] += 1
            if not (
                kok[chain_previous_key[c], previous]
                and kok[chain_current_key[c], current]
                and phi(chain_op[c], kval[chain_previous_key[c], previous], kval[chain_current_key[c], current])
            ):
                ok = False
                break
        if ok:
            word |= np.uint64(1) << np.uint64(v)
    dag[at], ready[at] = word, True


@jit(nrt=False)
def _next_common(allow, d, base, bits, bits_base, start, stop):
    """The first bit at or after ``start`` and before ``stop`` set both in ``allow[d, base:]`` and in
    ``bits[bits_base:]``; -1."""
    i = start
    while i < stop:
        x = i >> 6
        word = (allow[d, base + x] & bits[bits_base + x]) >> np.uint64(i & 63)
        if word == 0:
            i = (x + 1) << 6
            continue
        while (word & np.uint64(1)) == 0:
            word >>= np.uint64(1)
            i += 1
        return i if i < stop else -1
    return -1


@jit
def recompute(
    members,
    member_offsets,
    trigger_order,
    window_first,
    kleene,
    window_lo,
    positions,
    kval,
    kok,
    join_left,
    join_right,
    join_op,
    join_transitive,
    join_left_key,
    join_right_key,
    join_pair,
    pair_left,
    pair_right,
    chain_slot,
    chain_op,
    chain_transitive,
    chain_previous_key,
    chain_current_key,
    hybrid,
    strict,
):
    """Every match of every trigger (each member of the last slot), in one call; each trigger's matches
    in order of their positions (docs/language.md §10.2 among rows ending at one event).

    ``members[member_offsets[s]:member_offsets[s+1]]``: the grouped indices of the events slot s may bind,
    ascending; ``trigger_order``: the last slot's member indices in the order to recompute them (stream
    order: the matches then come out in output order, docs/language.md §10.2); ``window_first[s, i]``: the
    first member of slot s in the window of trigger ``trigger_order[i]``; ``window_lo[g]``: the first grouped index of the window of a match ending at g (its own
    sub-stream); ``positions[g]``: the event's position. Keys ``kval[k, i]`` / ``kok[k, i]`` (value, not
    null) of member i (so a slot's candidates' keys are one slice) are read by the joins (``join_*``, grouped into pairs of slots ``pair_*``) and the chains
    (``chain_*``). Returns (offsets, match positions, their slots (int32), stats, whether no trigger found
    two matches with the same positions).
    """
    n_slots = len(member_offsets) - 1
    last = n_slots - 1
    n_pairs = len(pair_left)
    joins = (join_pair, join_op, join_left_key, join_right_key)
    chains = (chain_slot, chain_op, chain_previous_key, chain_current_key)
    n_triggers = len(trigger_order)
    stats = np.zeros(6, dtype=np.int64)
    first = np.zeros(n_slots, dtype=np.int64)  # candidates of slot s: members[first[s]:first[s]+count[s]]
    count = np.zeros(n_slots, dtype=np.int64)
    words = np.zeros(n_slots, dtype=np.int64)
    word_base = np.zeros(n_slots + 1, dtype=np.int64)
    column_base = np.zeros(n_pairs + 1, dtype=np.int64)
    dag_base = np.zeros(n_slots + 1, dtype=np.int64)
    # 1. range queries of every trigger, right to left; a trigger that no candidate of an earlier slot
    # joins gets no candidates (count 0). The scratch space is sized here once for every trigger: an
    # array reassigned inside the loops below would cost reference counts on every pass
    candidates_first = np.zeros((n_triggers, n_slots), dtype=np.int64)
    candidates_count = np.zeros((n_triggers, n_slots), dtype=np.int64)
    most_candidates, most_words, most_columns, most_dag, most_depth = 1, 1, 1, 1, 2
    for i_trigger in range(n_triggers):
        t = trigger_order[i_trigger]
        stats[STAT_TRIGGERS] += 1
        if kleene[last]:
            first[last] = window_first[last, i_trigger]
        else:
            first[last] = t
        count[last] = t + 1 - first[last]
        empty = False
        for s in range(last - 1, -1, -1):
            upper = members[first[s + 1] + count[s + 1] - 1]  # the latest candidate on its right
            a = window_first[s, i_trigger]
            b = _gallop(members, a, member_offsets[s + 1], upper)
            first[s], count[s] = a, b - a
            if b <= a:
                empty = True
                break
            stats[STAT_RANGE_HITS] += b - a
        for j in range(len(join_left)):  # the trigger is in every match: an earlier slot joined with
            if empty or join_right[j] != last:  # the last one needs a candidate joining it (T2's range)
                continue
            r, found = join_left[j], False
            for u in range(first[r], first[r] + count[r]):
                if (
                    kok[join_left_key[j], u]
                    and kok[join_right_key[j], t]
                    and phi(join_op[j], kval[join_left_key[j], u], kval[join_right_key[j], t])
                ):
                    found = True
                    break
            empty = not found
        if empty:
            continue
        total, depth_cap, size, dag_size = 0, 2, 0, 0
        for s in range(n_slots):
            candidates_first[i_trigger, s], candidates_count[i_trigger, s] = first[s], count[s]
            words[s] = (count[s] + 63) >> 6
            total += words[s]
            depth_cap += count[s]
            most_candidates = max(most_candidates, count[s])
            if kleene[s]:
                dag_size += count[s] * words[s]
        for p in range(n_pairs):
            size += count[pair_left[p]] * words[pair_right[p]]
        most_words, most_columns, most_dag = max(most_words, total), max(most_columns, size), max(most_dag, dag_size)
        most_depth = max(most_depth, depth_cap)
    rows = np.zeros(most_columns, dtype=np.uint64)
    row_ready = np.zeros(most_columns, dtype=np.bool_)
    dag = np.zeros(most_dag, dtype=np.uint64)
    dag_ready = np.zeros(most_dag, dtype=np.bool_)
    lazy_rows, lazy_dag, data = (rows, row_ready), (dag, dag_ready), (members, kval, kok, stats)
    allow = np.zeros((most_depth, most_words), dtype=np.uint64)
    reach = np.zeros(most_words, dtype=np.uint64)
    everything = np.full(most_words, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    # join matrices, reused by every trigger (only past 64 candidates, or with the nested join)
    whole = most_candidates > 64 or not hybrid
    scratch_a = np.zeros((most_candidates, most_candidates) if whole else (1, 1), dtype=np.bool_)
    scratch_b = np.zeros((most_candidates, most_candidates) if whole else (1, 1), dtype=np.bool_)
    dominates = np.zeros(most_candidates, dtype=np.bool_)
    bound_slot = np.zeros(most_depth, dtype=np.int32)
    bound_position = np.zeros(most_depth, dtype=np.int64)
    # frames of the depth-first enumeration, one per binding: the next events after it in time order are
    # those extending the chain of Kleene slot ``frame_ext`` (-1: none) from its ``frame_head`` and those
    # starting slot ``frame_close`` (-1: none); a cursor and the next such row found (-2: not looked for
    # yet, -1: none left) for each
    frame_depth = np.zeros(most_depth, dtype=np.int64)
    frame_ext = np.zeros(most_depth, dtype=np.int64)
    frame_head = np.zeros(most_depth, dtype=np.int64)
    frame_ext_cursor = np.zeros(most_depth, dtype=np.int64)
    frame_ext_next = np.zeros(most_depth, dtype=np.int64)
    frame_close = np.zeros(most_depth, dtype=np.int64)
    frame_close_cursor = np.zeros(most_depth, dtype=np.int64)
    frame_close_stop = np.zeros(most_depth, dtype=np.int64)
    frame_close_next = np.zeros(most_depth, dtype=np.int64)
    # the output, grown between stretches of the enumeration (an iteration that may not find room for a
    # row breaks out, and the enumeration resumes where it stopped)
    out_offsets = np.zeros(1024, dtype=np.int64)
    out_positions = np.empty(4096, dtype=np.int64)
    out_slots = np.empty(4096, dtype=np.int32)
    n_out, n_written = 0, 0
    distinct = True
    i_trigger = 0
    need_rows, need_cells = 0, 0
    resume, tied, lazy = False, False, hybrid
    top, total, row_begin, t_row = -1, 0, 0, 0
    while i_trigger < n_triggers:
        if need_rows > len(out_offsets):  # four times as long: the pages past the rows are never touched
            out_offsets = grow(out_offsets, max(need_rows, 4 * len(out_offsets)))
        if need_cells > len(out_positions):
            out_positions = grow(out_positions, max(need_cells, 4 * len(out_positions)))
            out_slots = grow(out_slots, max(need_cells, 4 * len(out_slots)))
        while i_trigger < n_triggers:  # a stretch of the enumeration: no array is reassigned in it
            if not resume:
                if candidates_count[i_trigger, last] == 0:
                    i_trigger += 1
                    continue
                row_begin, tied = n_out, False
                total = 0
                lazy = hybrid  # every slot's candidates in one word: only the rows read, when first read
                for s in range(n_slots):
                    first[s], count[s] = candidates_first[i_trigger, s], candidates_count[i_trigger, s]
                    words[s] = (count[s] + 63) >> 6
                    word_base[s] = total
                    total += words[s]
                    if count[s] > 64:
                        lazy = False
                word_base[n_slots] = total
                t_row = count[last] - 1  # the trigger, the last slot's latest candidate
                # 2. joins into row bitsets, one matrix per pair of slots (or, ``lazy``, its rows)
                size = 0
                for p in range(n_pairs):
                    column_base[p] = size
                    size += count[pair_left[p]] * words[pair_right[p]]
                column_base[n_pairs] = size
                for p in range(n_pairs if not lazy else 0):
                    r, s = pair_left[p], pair_right[p]
                    outer = members[first[r] : first[r] + count[r]]
                    inner = members[first[s] : first[s] + count[s]]
                    n_r, n_s = count[r], count[s]
                    joined, one = scratch_a[:n_r, :n_s], scratch_b[:n_r, :n_s]
                    _join_all(
                        joined,
                        one,
                        dominates[:n_r],
                        hybrid,
                        join_pair,
                        p,
                        join_op,
                        join_transitive,
                        join_left_key,
                        join_right_key,
                        kval,
                        kok,
                        outer,
                        inner,
                        first[r],
                        first[s],
                        stats,
                    )
                    _pack_rows(joined, rows, column_base[p], words[s])
                size = 0
                for s in range(n_slots):
                    dag_base[s] = size
                    if kleene[s]:
                        size += count[s] * words[s]
                dag_base[n_slots] = size
                if lazy:
                    for x in range(column_base[n_pairs]):
                        row_ready[x] = False
                    for x in range(size):
                        dag_ready[x] = False
                for s in range(n_slots):
                    if not kleene[s] or lazy:
                        continue
                    candidates = members[first[s] : first[s] + count[s]]
                    n_s = count[s]
                    follows, one = scratch_a[:n_s, :n_s], scratch_b[:n_s, :n_s]
                    chained = _join_all(
                        follows,
                        one,
                        dominates[:n_s],
                        hybrid,
                        chain_slot,
                        s,
                        chain_op,
                        chain_transitive,
                        chain_previous_key,
                        chain_current_key,
                        kval,
                        kok,
                        candidates,
                        candidates,
                        first[s],
                        first[s],
                        stats,
                    )
                    if strict or not chained:
                        for u in range(n_s):
                            for v in range(n_s):
                                if strict:
                                    adjacent = candidates[v] == candidates[u] + 1
                                    follows[u, v] = (follows[u, v] or not chained) and adjacent
                                else:
                                    follows[u, v] = u < v
                    _pack_rows(follows, dag, dag_base[s], words[s])
                # 3. enumeration, left to right: each frame offers its next events in time order, so each
                # trigger's rows come out in order of their positions (docs/language.md §10.2)
                for s in range(n_slots):
                    for w in range(words[s]):
                        rest = count[s] - 64 * w
                        allow[0, word_base[s] + w] = (
                            np.uint64(0xFFFFFFFFFFFFFFFF)
                            if rest >= 64
                            else (np.uint64(1) << np.uint64(rest)) - np.uint64(1)
                        )
                # the trigger is in every match: an earlier slot joined with it keeps the rows joining it
                for p in range(n_pairs):
                    if pair_right[p] != last:
                        continue
                    r = pair_left[p]
                    for u in range(count[r]):
                        x = word_base[r] + (u >> 6)
                        if not (allow[0, x] >> np.uint64(u & 63)) & np.uint64(1):
                            continue
                        at = column_base[p] + u * words[last]
                        _read_join_row(lazy_rows, at, lazy, first[last], count[last], first[r] + u, p, joins, data)
                        if not (rows[at + (t_row >> 6)] >> np.uint64(t_row & 63)) & np.uint64(1):
                            allow[0, x] &= ~(np.uint64(1) << np.uint64(u & 63))
                if kleene[last]:  # and a Kleene last slot keeps the rows whose chains can reach it
                    for w in range(words[last]):
                        reach[w] = 0
                    reach[t_row >> 6] = np.uint64(1) << np.uint64(t_row & 63)
                    for v in range(t_row - 1, -1, -1):
                        x = word_base[last] + (v >> 6)
                        if not (allow[0, x] >> np.uint64(v & 63)) & np.uint64(1):
                            continue
                        at = dag_base[last] + v * words[last]
                        _read_chain_row(lazy_dag, at, lazy, first[last], count[last], v, last, chains, strict, data)
                        ahead = np.uint64(0)
                        for w in range(words[last]):
                            ahead |= dag[at + w] & reach[w]
                        if ahead != 0:
                            reach[v >> 6] |= np.uint64(1) << np.uint64(v & 63)
                    for w in range(words[last]):
                        allow[0, word_base[last] + w] &= reach[w]
                top = 0
                frame_depth[0], frame_ext[0], frame_close[0] = 0, -1, 0
                frame_close_cursor[0], frame_close_stop[0], frame_close_next[0] = 0, count[0], -2
            resume = False
            overflow = False
            while top >= 0:
                if n_written + most_depth > len(out_positions) or n_out + 2 > len(out_offsets):
                    overflow = True  # grow the output, then resume here
                    need_rows, need_cells = n_out + 2, n_written + most_depth
                    break
                d = frame_depth[top]
                k, c = frame_ext[top], frame_close[top]
                if k >= 0 and frame_ext_next[top] == -2:
                    frame_ext_next[top] = _next_common(
                        allow,
                        d,
                        word_base[k],
                        dag,
                        dag_base[k] + frame_head[top] * words[k],
                        frame_ext_cursor[top],
                        count[k],
                    )
                if c >= 0 and frame_close_next[top] == -2:
                    frame_close_next[top] = _next_common(
                        allow, d, word_base[c], everything, 0, frame_close_cursor[top], frame_close_stop[top]
                    )
                ext = frame_ext_next[top] if k >= 0 else -1
                close = frame_close_next[top] if c >= 0 else -1
                if ext < 0 and close < 0:
                    top -= 1
                    continue
                take_ext = ext >= 0
                if ext >= 0 and close >= 0:
                    g_ext, g_close = members[first[k] + ext], members[first[c] + close]
                    tied = tied or g_ext == g_close  # one event both ways: the rows may interleave
                    take_ext = g_ext <= g_close
                if take_ext:
                    q, v = k, ext
                    frame_ext_cursor[top], frame_ext_next[top] = ext + 1, -2
                else:
                    q, v = c, close
                    frame_close_cursor[top], frame_close_next[top] = close + 1, -2
                g = members[first[q] + v]
                if q == last and v == t_row:  # 4. a match: the bindings, then the trigger
                    for i in range(d):
                        out_positions[n_written + i] = bound_position[i]
                        out_slots[n_written + i] = bound_slot[i]
                    out_positions[n_written + d] = positions[g]
                    out_slots[n_written + d] = q
                    n_written += d + 1
                    n_out += 1
                    out_offsets[n_out] = n_written
                    continue
                # bind: narrow every later slot joined with q to the rows joining this one
                for w in range(total):
                    allow[d + 1, w] = allow[d, w]
                alive = True
                for p in range(n_pairs):
                    if pair_left[p] != q or (pair_right[p] == last and not kleene[last]):
                        continue  # (a single last slot: its one row, the trigger, was tested above)
                    r = pair_right[p]
                    at = column_base[p] + v * words[r]
                    _read_join_row(lazy_rows, at, lazy, first[r], count[r], first[q] + v, p, joins, data)
                    any_left = np.uint64(0)
                    for w in range(words[r]):
                        allow[d + 1, word_base[r] + w] &= rows[at + w]
                        any_left |= allow[d + 1, word_base[r] + w]
                    if r == last:  # the trigger must still join
                        any_left = (allow[d + 1, word_base[r] + (t_row >> 6)] >> np.uint64(t_row & 63)) & np.uint64(1)
                    if any_left == 0:
                        alive = False
                        break
                if not alive:
                    continue
                bound_slot[d], bound_position[d] = q, positions[g]
                top += 1
                frame_depth[top] = d + 1
                frame_ext[top], frame_close[top] = -1, -1
                if kleene[q]:
                    stats[STAT_CHAINS] += 1
                    at = dag_base[q] + v * words[q]
                    _read_chain_row(lazy_dag, at, lazy, first[q], count[q], v, q, chains, strict, data)
                    frame_ext[top], frame_head[top], frame_ext_cursor[top], frame_ext_next[top] = q, v, v + 1, -2
                if q < last:  # the next slot starts after g (STRICT: just after)
                    nxt = q + 1
                    start = _lower_bound(members, first[nxt], first[nxt] + count[nxt], g + 1) - first[nxt]
                    stop = count[nxt]
                    if strict:
                        stop = start + 1 if start < count[nxt] and members[first[nxt] + start] == g + 1 else start
                    frame_close[top], frame_close_cursor[top], frame_close_stop[top] = nxt, start, stop
                    frame_close_next[top] = -2
            if overflow:
                resume = True
                break
            if (
                tied
                and n_out - row_begin > 1
                and not _sort_tied(out_offsets, out_positions, out_slots, row_begin, n_out)
            ):
                distinct = False
            i_trigger += 1
    stats[STAT_MATCHES] = n_out
    return out_offsets[: n_out + 1], out_positions[:n_written], out_slots[:n_written], stats, distinct


RANKED_CODES = {"NEXT": 0, "LAST": 1, "MAX": 2}


@jit
def _subset(positions, a, a_end, b, b_end):
    """Whether the sorted positions ``a:a_end`` are all among ``b:b_end``."""
    while a < a_end:
        while b < b_end and positions[b] < positions[a]:
            b += 1
        if b == b_end or positions[b] != positions[a]:
            return False
        a += 1
        b += 1
    return True


@jit
def ranked(offsets, positions, strategy):
    """Which rows a ranked strategy keeps (``RANKED_CODES``) among the matches ending at each trigger
    (consecutive rows with the same last position, each group in output order): NEXT the first (the
    smallest differing position is in it: [CEL] ≤next), LAST the one holding the largest position where
    rows differ, MAX those no other row's set strictly contains; with the rows of the same positions as a
    kept one (as ``RcepMatcher._select``)."""
    n = len(offsets) - 1
    keep = np.zeros(n, dtype=np.bool_)
    begin = 0
    while begin < n:
        end = begin + 1
        while end < n and positions[offsets[end + 1] - 1] == positions[offsets[begin + 1] - 1]:
            end += 1
        best = begin
        if strategy == 1:  # LAST: compare from the end, the row with the later differing position wins
            for r in range(begin + 1, end):
                a, b = offsets[r + 1] - 1, offsets[best + 1] - 1
                while a >= offsets[r] and b >= offsets[best] and positions[a] == positions[b]:
                    a -= 1
                    b -= 1
                if b < offsets[best] or (a >= offsets[r] and positions[a] > positions[b]):
                    if a >= offsets[r]:
                        best = r
        for r in range(begin, end):
            if strategy == 2:
                keep[r] = True
                for q in range(begin, end):
                    longer = offsets[q + 1] - offsets[q] > offsets[r + 1] - offsets[r]
                    if longer and _subset(positions, offsets[r], offsets[r + 1], offsets[q], offsets[q + 1]):
                        keep[r] = False
                        break
            else:
                same = offsets[r + 1] - offsets[r] == offsets[best + 1] - offsets[best]
                for x in range(offsets[r + 1] - offsets[r]):
                    if not same:
                        break
                    same = positions[offsets[r] + x] == positions[offsets[best] + x]
                keep[r] = same
        begin = end
    return keep


@jit
def robust(offsets, positions, slots):
    """Which rows ROBUST_STNM keeps ([SES] Def 6.2, the rule of ``stnm.RobustSkipTillNext``) among every ALL
    match of a stream (rows of (position, slot) pairs in position order): a row e1 .. en is dropped when,
    for some 0 < i < n, a row with the same first i pairs binds an event before e(i+1) next, or when
    another row extends it. The rows are put in order of their pairs, so the rows sharing a prefix are
    consecutive, the one binding the earliest event after it first."""
    n = len(offsets) - 1
    order = row_order(offsets, positions, slots, False)
    longest = 0
    for r in range(n):
        longest = max(longest, offsets[r + 1] - offsets[r])
    # earliest[d]: the earliest position at place d among the rows sharing the current row's first d pairs
    earliest = np.empty(longest, dtype=np.int64)
    keep = np.zeros(n, dtype=np.bool_)
    for k in range(n):
        r = order[k]
        length = offsets[r + 1] - offsets[r]
        start = 0  # earliest[:start] belongs to blocks that began at an earlier row
        if k > 0:
            p = order[k - 1]
            start = shared_pairs(offsets, positions, slots, p, r)
            if start < offsets[p + 1] - offsets[p]:
                start += 1  # the row before went on past the shared pairs: the next place's block is its
        for d in range(start, length):
            earliest[d] = positions[offsets[r] + d]
        kept = True
        for d in range(1, min(start, length)):
            if earliest[d] < positions[offsets[r] + d]:
                kept = False
        q = k + 1  # the next row with other pairs: does it extend this one?
        while q < n and offsets[order[q] + 1] - offsets[order[q]] == length:
            if shared_pairs(offsets, positions, slots, order[q], r) < length:
                break
            q += 1
        if q < n and shared_pairs(offsets, positions, slots, order[q], r) == length:
            kept = False
        keep[r] = kept
    return keep


@jit
def released_at(times, limits, read, firsts, triggers):
    """The stream index of the event that makes each ROBUST_STNM match final in ``RcepMatcher`` under a
    time window: the first read event after its trigger (stream index ``triggers[r]``) past the window of
    its first event (``firsts[r]``): ``times[j] - times[first] > limits[j]``, ``lang.window``'s rule with
    ``limits`` its ``time_limits`` of each event's time; ``len(times)`` when none."""
    n = len(times)
    out = np.empty(len(firsts), dtype=np.int64)
    for r in range(len(firsts)):
        t = times[firsts[r]]
        j = _lower_bound(times, triggers[r] + 1, n, t + limits[firsts[r]])  # about there: then by the rule
        while j > triggers[r] + 1 and times[j - 1] - t > limits[j - 1]:
            j -= 1
        while j < n and not (read[j] and times[j] - t > limits[j]):
            j += 1
        out[r] = j
    return out


@jit(nrt=False)
def _extends(cells, cell_slots, depth, candidate, k, kval, kok, joins, chains):
    """Whether member ``candidate`` added to slot k extends the prefix ``cells[:depth + 1]`` (member
    indices, slots ``cell_slots``; its last cell in slot k or k - 1) into a match of a pattern prefix:
    every join from a bound slot into k holds with each of the prefix's events there, and, when k is the
    last cell's (Kleene) slot, every chain of k from that cell to the candidate. ``joins``: (left slots,
    right slots, operator codes, left keys, right keys); ``chains``: (slots, operator codes, previous keys,
    current keys)."""
    join_left, join_right, join_op, join_left_key, join_right_key = joins
    chain_slot, chain_op, chain_previous_key, chain_current_key = chains
    for j in range(len(join_left)):
        if join_right[j] != k:
            continue
        for x in range(depth + 1):
            if cell_slots[x] != join_left[j]:
                continue
            outer = cells[x]
            if not (
                kok[join_left_key[j], outer]
                and kok[join_right_key[j], candidate]
                and phi(join_op[j], kval[join_left_key[j], outer], kval[join_right_key[j], candidate])
            ):
                return False
    if cell_slots[depth] == k:
        previous = cells[depth]
        for c in range(len(chain_slot)):
            if chain_slot[c] != k:
                continue
            if not (
                kok[chain_previous_key[c], previous]
                and kok[chain_current_key[c], candidate]
                and phi(chain_op[c], kval[chain_previous_key[c], previous], kval[chain_current_key[c], candidate])
            ):
                return False
    return True


@jit
def skip_till_next(
    offsets, positions, slots, grouped, members, member_offsets, kleene, window_lo, kval, kok, joins, chains
):
    """Which rows STNM keeps ([SES] Def 6.1, the rule of ``stnm.SkipTillNext``) among ALL matches (rows
    of (position, slot) pairs in position order; ``grouped``: each cell's grouped index). A row e1 .. en
    is dropped when a member e of a slot, e_i < e < e(i+1), extends the prefix e1 .. ei (``_extends``:
    one more event of e_i's slot if it is Kleene, or the first event of the next slot), or, with a Kleene
    last slot, when a member of it after e_n, in the window of e1 (``window_lo``: same sub-stream too),
    extends the whole row. The joins and chains (``_extends``'s tuples) are the query's plus Θ_eq⁺'s
    (docs/references.md E11).

    The earliest extension of a prefix after its last event depends on the prefix only, so it is
    searched once for rows that share it (consecutive in each trigger's output order): per depth and per
    candidate slot a cursor into the members, kept while the next row has the same prefix, and the
    member found (-1: none yet)."""
    n = len(offsets) - 1
    n_slots = len(member_offsets) - 1
    longest = 1
    for r in range(n):
        longest = max(longest, offsets[r + 1] - offsets[r])
    cells = np.zeros(longest, dtype=np.int64)  # the row's member indices
    cell_slots = np.zeros(longest, dtype=np.int64)
    cursor = np.zeros((longest, 2), dtype=np.int64)  # per depth: next member to test, per candidate slot
    found = np.zeros((longest, 2), dtype=np.int64)  # the extension found there, -1: none yet
    keep = np.zeros(n, dtype=np.bool_)
    valid = 0  # depths whose cursors belong to the current row's prefix
    for r in range(n):
        begin, length = offsets[r], offsets[r + 1] - offsets[r]
        if r > 0:
            valid = min(valid, shared_pairs(offsets, positions, slots, r - 1, r))
        for x in range(length):
            s = slots[begin + x]
            cells[x] = _lower_bound(members, member_offsets[s], member_offsets[s + 1], grouped[begin + x])
            cell_slots[x] = s
        first_window = grouped[begin]
        kept = True
        for d in range(length):
            s = cell_slots[d]
            if d == length - 1 and not (kleene[s] and s == n_slots - 1):
                break
            if d >= valid:  # a new prefix: its cursors start after its last event
                for j in range(2):
                    k = s + j
                    found[d, j] = -1
                    if k < n_slots and (j == 1 or kleene[s]):
                        cursor[d, j] = _lower_bound(
                            members, member_offsets[k], member_offsets[k + 1], grouped[begin + d] + 1
                        )
                    elif k < n_slots:
                        cursor[d, j] = member_offsets[k + 1]  # one event of a single slot: nothing to add
                valid = d + 1
            for j in range(2):
                k = s + j
                if k >= n_slots:
                    continue
                while found[d, j] < 0 and cursor[d, j] < member_offsets[k + 1]:
                    g = members[cursor[d, j]]
                    if d < length - 1:
                        if g >= grouped[begin + d + 1]:
                            break
                    elif window_lo[g] > first_window:  # past the window (or the sub-stream) of e1
                        break
                    if _extends(cells, cell_slots, d, cursor[d, j], k, kval, kok, joins, chains):
                        found[d, j] = cursor[d, j]
                    else:
                        cursor[d, j] += 1
                if found[d, j] >= 0 and (d == length - 1 or members[found[d, j]] < grouped[begin + d + 1]):
                    kept = False
            if not kept:
                break
        keep[r] = kept
    return keep


@jit(nrt=False)
def _next_extensions(
    members, member_offsets, following, kleene, window_lo, cells, cell_slots, depth, kval, kok, joins, chains
):
    """The earliest event after the prefix ``cells[:depth + 1]``'s last one, in the window of its first
    event (``window_lo``: and its sub-stream), that extends it (``_extends``) as one more event of its last
    slot k (when Kleene) or as the first of slot k + 1: (its member in slot k, its member in slot k + 1),
    -1 where it does not extend it there (both -1: none). One merged forward scan of the two slots' members,
    each event tested once in each slot it is a member of (``following[m]``: the first member of the slot
    after member m's that comes after it)."""
    n_slots = len(member_offsets) - 1
    k = cell_slots[depth]
    first_g = members[cells[0]]
    c0, end0, c1, end1 = 0, 0, 0, 0
    if kleene[k]:
        c0, end0 = cells[depth] + 1, member_offsets[k + 1]
    if k + 1 < n_slots:
        c1, end1 = following[cells[depth]], member_offsets[k + 2]
    while True:
        open0 = c0 < end0 and window_lo[members[c0]] <= first_g
        open1 = c1 < end1 and window_lo[members[c1]] <= first_g
        if not open0:
            if not open1:
                return -1, -1
            g0, g1 = members[c1] + 1, members[c1]
        elif not open1:
            g0, g1 = members[c0], members[c0] + 1
        else:
            g0, g1 = members[c0], members[c1]
        x0 = g0 <= g1 and _extends(cells, cell_slots, depth, c0, k, kval, kok, joins, chains)
        x1 = g1 <= g0 and _extends(cells, cell_slots, depth, c1, k + 1, kval, kok, joins, chains)
        if x0 or x1:
            return c0 if x0 else -1, c1 if x1 else -1
        if g0 <= g1:
            c0 += 1
        if g1 <= g0:
            c1 += 1


@jit(nrt=False)
def _walks(
    begin, members, member_offsets, following, kleene, window_lo, grouped_positions, kval, kok, joins, chains, room
):
    """The STNM matches walked from each member of the first slot from ``begin`` on (``next_match_walks``),
    written after the ``room``'s rows: ``room`` = (cells, cell slots, the stack of walks to resume as
    (depth, member, slot) rows, out offsets, out positions, out slots, [rows, cells written, next first]).
    Returns 0 when done, else the size an array lacked (negative: an output array): the counts stop
    before the walk that lacked it (the caller grows the arrays and calls again). One call for the whole stream: a compiled call counts
    references on each array it is passed (here none: no reference counts)."""
    cells, cell_slots, stack, out_offsets, out_positions, out_slots, counts = room
    n_slots = len(member_offsets) - 1
    last = n_slots - 1
    for first in range(begin, member_offsets[1]):
        n_out, n_written = counts[0], counts[1]
        top = 0
        stack[0, 0], stack[0, 1], stack[0, 2] = 0, first, 0
        while top >= 0:
            d, m, k = stack[top, 0], stack[top, 1], stack[top, 2]
            top -= 1
            if d + 2 > len(cells) or top + 3 > len(stack):  # room for this cell and the two walks it may add
                counts[2] = first
                return max(d + 2, top + 3)
            cells[d], cell_slots[d] = m, k
            same, then = -1, -1
            if not (k == last and not kleene[k]):
                same, then = _next_extensions(
                    members,
                    member_offsets,
                    following,
                    kleene,
                    window_lo,
                    cells,
                    cell_slots,
                    d,
                    kval,
                    kok,
                    joins,
                    chains,
                )
            if then >= 0:
                top += 1
                stack[top, 0], stack[top, 1], stack[top, 2] = d + 1, then, k + 1
            if same >= 0:
                top += 1
                stack[top, 0], stack[top, 1], stack[top, 2] = d + 1, same, k
            if same < 0 and then < 0 and k == last:  # a match: no extension follows it
                if n_written + d + 1 > len(out_positions) or n_out + 2 > len(out_offsets):
                    counts[2] = first
                    return -max(n_written + d + 1, n_out + 2)
                for x in range(d + 1):
                    out_positions[n_written + x] = grouped_positions[members[cells[x]]]
                    out_slots[n_written + x] = cell_slots[x]
                n_written += d + 1
                n_out += 1
                out_offsets[n_out] = n_written
        counts[0], counts[1] = n_out, n_written
    counts[2] = member_offsets[1]
    return 0


@jit
def next_match_walks(members, member_offsets, kleene, window_lo, grouped_positions, kval, kok, joins, chains):
    """Every STNM match of a stream, walked forward from each member of the first slot (the same matches
    as ``skip_till_next`` over the ALL matches, without enumerating those): in an STNM match each event
    after the first is the earliest event that extends the prefix before it (it extends it, as a prefix
    of a match, and no extension comes between), so from e1 the match is the walk taking, at each step,
    the earliest member of the current slot (if Kleene) or of the next one that extends the prefix in
    e1's window (both, as two walks, when that event extends the prefix in both slots; ``_next_extensions``).
    A walk that reaches a single last slot is a match; one in a Kleene last slot is a match where no
    extension follows (``_walk``, compiled without reference counts: the arrays grow here). Returns
    (offsets, positions, slots, whether no two rows have the same positions), the rows in output order (by
    last position, then as tuples)."""
    n_slots = len(member_offsets) - 1
    following = np.empty(len(members), dtype=np.int64)
    for k in range(n_slots - 1):  # one merge of the member lists of k and k + 1
        c = member_offsets[k + 1]
        for m in range(member_offsets[k], member_offsets[k + 1]):
            while c < member_offsets[k + 2] and members[c] <= members[m]:
                c += 1
            following[m] = c
    counts = np.zeros(3, dtype=np.int64)  # rows, cells written, next first
    counts[2] = member_offsets[0]
    room = (
        np.zeros(8, dtype=np.int64),
        np.zeros(8, dtype=np.int64),
        np.zeros((8, 3), dtype=np.int64),
        np.zeros(1024, dtype=np.int64),
        np.empty(4096, dtype=np.int64),
        np.empty(4096, dtype=np.int64),
        counts,
    )
    while True:
        lacking = _walks(
            counts[2],
            members,
            member_offsets,
            following,
            kleene,
            window_lo,
            grouped_positions,
            kval,
            kok,
            joins,
            chains,
            room,
        )
        if lacking == 0:
            break
        cells, cell_slots, stack, out_offsets, out_positions, out_slots, _ = room  # grow what lacked room
        if lacking > 0:
            bigger = np.zeros((max(lacking, 2 * len(stack)), 3), dtype=np.int64)
            bigger[: len(stack)] = stack
            stack, cells, cell_slots = bigger, grow(cells, lacking), grow(cell_slots, lacking)
        else:
            out_offsets, out_positions, out_slots = (
                grow(out_offsets, -lacking),
                grow(out_positions, -lacking),
                grow(out_slots, -lacking),
            )
        room = (cells, cell_slots, stack, out_offsets, out_positions, out_slots, counts)
    n_out, n_written = counts[0], counts[1]
    offsets, positions, slots = room[3][: n_out + 1], room[4][:n_written], room[5][:n_written]
    order = row_order(offsets, positions, slots, True)
    sorted_offsets = np.zeros(n_out + 1, dtype=np.int64)
    sorted_positions = np.empty(n_written, dtype=np.int64)
    sorted_slots = np.empty(n_written, dtype=np.int64)
    distinct = True
    for x in range(n_out):
        r = order[x]
        length = offsets[r + 1] - offsets[r]
        sorted_offsets[x + 1] = sorted_offsets[x] + length
        sorted_positions[sorted_offsets[x] : sorted_offsets[x + 1]] = positions[offsets[r] : offsets[r + 1]]
        sorted_slots[sorted_offsets[x] : sorted_offsets[x + 1]] = slots[offsets[r] : offsets[r + 1]]
        if x > 0 and not row_less(sorted_offsets, sorted_positions, x - 1, x):
            distinct = False
    return sorted_offsets, sorted_positions, sorted_slots, distinct
