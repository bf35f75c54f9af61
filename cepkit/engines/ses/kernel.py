"""SESExec ([SES] Alg 2) under skip-till-any-match or skip-till-next-match over every match window of a stream, in one compiled call.

``SesMatcher`` builds an ``Entry`` per event and runs ``execution.run_window`` per candidate window in
Python. Over a finite stream every window is known, so ``run_windows`` runs phase 1 and phase 2 of the
two-phase evaluation ([SES] Alg 3) for all of them inside one kernel, over the columns ``batch`` lays out:

* **phase 1**: the events are filtered (Thm 5.1: only those satisfying some variable's properties are
  kept, column-wise), grouped by window key (PARTITION BY and X, Def 5.3); the window of each W[0] is a
  contiguous run of its group (a binary search on the window coordinate), and A runs on it only when it
  is a candidate: (5.1) at least as many events as variables, (5.2) W[0] fits a variable of B1 and
  (5.3) every variable has an event in it (prefix counts per variable);
* **phase 2**: A(P, W) is the automaton as a table ``moves[automaton, state, var]`` (target state, or
  -1), so the SES automaton and the brute force's permutation automata run in the same loop. An instance
  is a state and a node of an arena of bindings (variable, event, parent); an event fires every
  transition whose conditions hold on the instance's binding with it (a chain against the variable's
  previous event, a join against every bound event of the other variable, ∀); under ALL every
  instance also keeps its copy that skips it, under STNM (Def 6.1, Alg 2's greedy run) only an instance
  on which nothing fired does. Instances in the final state at the window's end are its matches. Under
  ROBUST_STNM (Def 6.2) ``_robust`` runs Alg 4's backtracking over the same arena, as a tree.

The same functions run as Python without numba (the pure-Python twin the tests compare).
"""

from __future__ import annotations

import numpy as np

from ...lang.window import ULPS
from ..compiled import grow, jit, output_less, phi, row_order
from ..kept import written

STAT_EVALUATED, STAT_MAX_WINDOW, STAT_INSTANCES = range(3)
# the fields of a node of ``_robust``'s execution tree (rows of ``tree``): the binding (variable, window
# event, parent node, bound variables as a mask), the automaton state, the next event to read, the event
# its children fired on, its children's nodes [CLO, CHI) (CLO -1: not looked for yet), the next child to
# explore, and whether its subtree led to a match
VAR, EVENT, PARENT, BOUND, STATE, SCAN, AT, CLO, CHI, NEXT, OK = range(11)
TREE_FIELDS = 11


@jit(nrt=False)
def _fires(
    v,
    event,
    node,
    arena_var,
    arena_event,
    arena_parent,
    kval,
    kok,
    join_left,
    join_right,
    join_op,
    join_left_key,
    join_right_key,
    chain_var,
    chain_op,
    chain_previous_key,
    chain_current_key,
):
    """Whether binding ``event`` to variable ``v`` keeps every join and chain with the binding ending at
    arena ``node`` (the transition's conditions Θδ, checked only on the pairs that use the new event)."""
    if len(join_left) == 0 and len(chain_var) == 0:
        return True
    previous_seen = False
    while node >= 0:
        x, e = arena_var[node], arena_event[node]
        if x == v and not previous_seen:  # v's previous event: its chains
            previous_seen = True
            for c in range(len(chain_var)):
                if chain_var[c] == v and not (
                    kok[chain_previous_key[c], e]
                    and kok[chain_current_key[c], event]
                    and phi(chain_op[c], kval[chain_previous_key[c], e], kval[chain_current_key[c], event])
                ):
                    return False
        for j in range(len(join_left)):
            if join_left[j] == v and join_right[j] == x:
                left, right = kval[join_left_key[j], event], kval[join_right_key[j], e]
                ok = kok[join_left_key[j], event] and kok[join_right_key[j], e]
            elif join_right[j] == v and join_left[j] == x:
                left, right = kval[join_left_key[j], e], kval[join_right_key[j], event]
                ok = kok[join_left_key[j], e] and kok[join_right_key[j], event]
            else:
                continue
            if not (ok and phi(join_op[j], left, right)):
                return False
        node = arena_parent[node]
    return True


@jit
def run_windows(
    coord,
    vars_,
    group_end,
    positions,
    counts,
    todo,
    moves,
    final,
    first_set,
    limits,
    two_phase,
    keep_skips,
    robust,
    lookahead,
    kval,
    kok,
    join_left,
    join_right,
    join_op,
    join_left_key,
    join_right_key,
    chain_var,
    chain_op,
    chain_previous_key,
    chain_current_key,
):
    """The matches of every match window (phase 1 and 2 above): ALL with ``keep_skips``, ROBUST_STNM
    with ``robust`` (``_robust``: Alg 4's backtracking, with the ``lookahead`` cut), else STNM.

    Events in grouped order: ``coord`` (time, or position in the PARTITION BY sub-stream), ``vars_`` (mask
    of the variables whose properties the event satisfies), ``group_end`` (end of its group),
    ``positions``; ``limits``: the largest coord − W[0] of a window reaching each event (``SesPlan.limits``);
    ``counts[v, g]``: events before g fitting variable v; ``todo``: the W[0]s whose window
    is closed (the others wait for more events); ``moves`` and ``final`` as ``batch.moves`` gives them; without ``two_phase`` every window is evaluated (Alg 1). Returns (offsets, positions,
    variable indices, the W[0] of each match, stats).
    """
    n, arity = len(coord), counts.shape[0]
    stats = np.zeros(3, dtype=np.int64)
    # the matches so far (``_emit``): offsets, positions, variables, W[0] of each, matches, positions
    size = min(1024, 16 * (n + 1))  # (a step's call runs a few short windows: allocate little; all grow)
    out = (
        np.zeros(size, np.int64),
        np.empty(4 * size, np.int64),
        np.empty(4 * size, np.int64),
        np.empty(size, np.int64),
        0,
        0,
    )
    state = np.empty(size // 4, dtype=np.int64)
    node = np.empty(size // 4, dtype=np.int64)
    arena_var = np.empty(size, dtype=np.int64)
    arena_event = np.empty(size, dtype=np.int64)
    arena_parent = np.empty(size, dtype=np.int64)
    tree = np.empty((TREE_FIELDS, 1024 if robust else 1), dtype=np.int64)  # ``_robust``'s nodes
    joins = (join_left, join_right, join_op, join_left_key, join_right_key)
    chains = (chain_var, chain_op, chain_previous_key, chain_current_key)
    for g in range(n):
        if not todo[g]:
            continue
        if two_phase and not vars_[g] & first_set:  # (5.2); without two_phase A runs on every window (Alg 1)
            continue
        lo, hi = g + 1, group_end[g]  # the window: events until the coordinate passes W[0] + τ
        while lo < hi:
            mid = (lo + hi) // 2
            if coord[mid] - coord[g] > limits[mid]:
                hi = mid
            else:
                lo = mid + 1
        end = lo
        if two_phase:
            if end - g < arity:  # (5.1)
                continue
            complete = True
            for v in range(arity):  # (5.3)
                if counts[v, end] - counts[v, g] == 0:
                    complete = False
                    break
            if not complete:
                continue
        stats[STAT_EVALUATED] += 1
        stats[STAT_MAX_WINDOW] = max(stats[STAT_MAX_WINDOW], end - g)
        if robust:
            found = _robust(
                g,
                end,
                vars_,
                positions,
                moves,
                final[0],
                lookahead,
                tree,
                out,
                kval,
                kok,
                joins,
                chains,
            )
            tree, out = found
            continue
        for a in range(moves.shape[0]):
            size, used = 0, 0
            for v in range(arity):  # the start instances bind W[0]
                if vars_[g] >> v & 1 and moves[a, 0, v] >= 0:
                    if used >= len(arena_var):
                        arena_var, arena_event = grow(arena_var, used + 1), grow(arena_event, used + 1)
                        arena_parent = grow(arena_parent, used + 1)
                    arena_var[used], arena_event[used], arena_parent[used] = v, g, -1
                    if size >= len(state):
                        state, node = grow(state, size + 1), grow(node, size + 1)
                    state[size], node[size] = moves[a, 0, v], used
                    used += 1
                    size += 1
            for c in range(g + 1, end):
                if size == 0:
                    break
                m = vars_[c]
                if m == 0:
                    continue
                alive, dropped = size, 0
                for i in range(alive):
                    q = state[i]
                    fired = False
                    for v in range(arity):
                        target = moves[a, q, v]
                        if not (m >> v & 1) or target < 0:
                            continue
                        if not _fires(v, c, node[i], arena_var, arena_event, arena_parent, kval, kok, *joins, *chains):
                            continue
                        if used >= len(arena_var):
                            arena_var, arena_event = grow(arena_var, used + 1), grow(arena_event, used + 1)
                            arena_parent = grow(arena_parent, used + 1)
                        arena_var[used], arena_event[used], arena_parent[used] = v, c, node[i]
                        if size >= len(state):
                            state, node = grow(state, size + 1), grow(node, size + 1)
                        state[size], node[size] = target, used
                        used += 1
                        size += 1
                        fired = True
                    if fired and not keep_skips:  # STNM: only an instance nothing fired on skips the event
                        state[i] = -1
                        dropped += 1
                if dropped:
                    kept = 0
                    for i in range(size):
                        if state[i] >= 0:
                            state[kept], node[kept] = state[i], node[i]
                            kept += 1
                    size = kept
            stats[STAT_INSTANCES] += size
            for i in range(size):  # the instances in qf: matches, events latest first
                if state[i] != final[a]:
                    continue
                out = _emit(node[i], g, arena_var, arena_event, arena_parent, positions, out)
    offsets, positions, variables, starts, n_out, n_written = out
    return offsets[: n_out + 1], positions[:n_written], variables[:n_written], starts[:n_out], stats


@jit
def _emit(node, g, arena_var, arena_event, arena_parent, positions, out):
    """``out`` with the match whose binding ends at arena ``node`` appended (its events in order, and W[0]
    ``g``): (offsets, positions, variables, W[0] of each, matches, positions written), grown if full."""
    offsets, written, variables, starts, n_out, n_written = out
    length, k = 0, node
    while k >= 0:
        length += 1
        k = arena_parent[k]
    if n_written + length > len(written):
        written, variables = grow(written, n_written + length), grow(variables, n_written + length)
    k = node
    for j in range(length - 1, -1, -1):
        written[n_written + j] = positions[arena_event[k]]
        variables[n_written + j] = arena_var[k]
        k = arena_parent[k]
    n_written += length
    n_out += 1
    if n_out + 1 > len(offsets):
        offsets, starts = grow(offsets, n_out + 1), grow(starts, n_out + 1)
    offsets[n_out] = n_written
    starts[n_out - 1] = g
    return offsets, written, variables, starts, n_out, n_written


@jit
def _node(tree, top, var, event, parent, state):
    """Node ``top`` of the tree (grown if full): ``var`` bound to ``event`` after ``parent``'s binding."""
    if top >= tree.shape[1]:
        bigger = np.empty((TREE_FIELDS, 2 * tree.shape[1]), dtype=np.int64)
        bigger[:, : tree.shape[1]] = tree
        tree = bigger
    tree[VAR, top], tree[EVENT, top], tree[PARENT, top], tree[STATE, top] = var, event, parent, state
    tree[BOUND, top] = (tree[BOUND, parent] if parent >= 0 else 0) | (1 << var)
    tree[SCAN, top], tree[CLO, top], tree[OK, top] = event + 1, -1, 0
    return tree


@jit
def _completable(node, start, end, arity, vars_, tree, kval, kok, joins, chains):
    """Whether every variable ``node``'s binding leaves unbound has an event in [start, end) it could take
    next (its properties, and its joins with the bound variables): ``CompiledAutomaton.completable``."""
    bound = tree[BOUND, node]
    for v in range(arity):
        if bound >> v & 1:
            continue
        found = False
        for c in range(start, end):
            if vars_[c] >> v & 1 and _fires(
                v, c, node, tree[VAR], tree[EVENT], tree[PARENT], kval, kok, *joins, *chains
            ):
                found = True
                break
        if not found:
            return False
    return True


@jit
def _robust(
    g,
    end,
    vars_,
    positions,
    moves,
    final,
    lookahead,
    tree,
    out,
    kval,
    kok,
    joins,
    chains,
):
    """MatchBT ([SES] Alg 4) on the window [g, end) of the SES automaton (``moves[0]``), as
    ``execution.run_window_robust``: a depth-first search of the execution tree (Def 6.3) from each
    transition W[0] fires. A node's children are the transitions fired by the first event from its
    ``SCAN`` on that fires any (with ``lookahead``, and may still complete); a node with none is accepted
    if in qf; a node none of whose children led to a match re-reads from after their event (the event is
    noise there). The subtree of a finished node is freed (nodes are allocated on top of the tree, so a
    node's subtree is everything above its children). Returns the tree and ``out`` (``_emit``)."""
    arity = moves.shape[2]
    stack = np.empty(end - g + 2, dtype=np.int64)  # a path of the tree: one node per event at most
    for v0 in range(arity):
        if not (vars_[g] >> v0 & 1) or moves[0, 0, v0] < 0:
            continue
        tree = _node(tree, 0, v0, g, -1, moves[0, 0, v0])
        top = 1
        if lookahead and not _completable(0, g + 1, end, arity, vars_, tree, kval, kok, joins, chains):
            continue
        stack[0], depth = 0, 1
        while depth > 0:
            x = stack[depth - 1]
            if tree[CLO, x] < 0:  # its children: the first event that fires a transition (that may complete)
                tree[CLO, x] = top
                at = end
                for c in range(tree[SCAN, x], end):
                    m = vars_[c]
                    if m == 0:
                        continue
                    q = tree[STATE, x]
                    for v in range(arity):
                        target = moves[0, q, v]
                        if not (m >> v & 1) or target < 0:
                            continue
                        if not _fires(v, c, x, tree[VAR], tree[EVENT], tree[PARENT], kval, kok, *joins, *chains):
                            continue
                        tree = _node(tree, top, v, c, x, target)
                        if lookahead and not _completable(
                            top, c + 1, end, arity, vars_, tree, kval, kok, joins, chains
                        ):
                            continue  # cut: the node is not kept
                        top += 1
                    if top > tree[CLO, x]:
                        at = c
                        break
                tree[AT, x], tree[CHI, x], tree[NEXT, x] = at, top, tree[CLO, x]
                if at == end:  # the end of the window: a match if in qf
                    if tree[STATE, x] == final:
                        tree[OK, x] = 1
                        out = _emit(x, g, tree[VAR], tree[EVENT], tree[PARENT], positions, out)
                    top = tree[CLO, x]
                    depth -= 1
                    continue
            if tree[NEXT, x] < tree[CHI, x]:
                stack[depth] = tree[NEXT, x]
                tree[NEXT, x] += 1
                depth += 1
                continue
            ok = False
            for child in range(tree[CLO, x], tree[CHI, x]):
                if tree[OK, child]:
                    ok = True
            top = tree[CLO, x]  # its subtree is done with
            if ok:  # a sibling led to a match: the others are blocked
                tree[OK, x] = 1
                depth -= 1
            else:  # every child failed: their event is noise here
                tree[SCAN, x], tree[CLO, x] = tree[AT, x] + 1, -1
    return tree, out


@jit
def close_windows(events, bounds, span, params, moves, final, joins, chains, stats, out):
    """``run_windows`` over an incremental matcher's kept events (``step.SesStep``: ``events`` the arrays
    of one clock's ``kept.KeptEvents``, in arrival order: the window coordinates, variable masks, window
    key codes, positions, and the join and chain keys and whether each is valid), evaluating the windows of the W[0]s in [lo, hi)
    (those the current event closes; ``bounds`` holds lo, hi, n) over the events [lo, n): grouped by key
    code (stably; when the codes may differ, only the events of the closed W[0]s' keys) and laid out
    here, so the caller builds nothing per call. ``params``: the first set's
    mask, two_phase, keep_skips, robust, lookahead and whether the codes may differ; ``joins`` and
    ``chains`` the rows of ``run_windows``' join and chain arguments. The matches are written into the
    ``out`` buffers in output order (``compiled.row_order``; ``kept.written``); ``stats`` adds up ``run_windows``'
    windows evaluated and keeps the largest one's size. Returns (rows, cells, whether two rows have the same positions: the caller orders them
    then), rows and cells negative when they do not fit."""
    coord, mask, code, position, kval, kok = events
    lo, hi, n = bounds[0], bounds[1], bounds[2]
    if params[5]:  # only the events of the window keys of the W[0]s closed, grouped by key
        top = 0
        for j in range(lo, n):
            top = max(top, code[j])
        wanted = np.zeros(top + 1, dtype=np.bool_)
        for j in range(lo, hi):
            if mask[j] & params[0] or not params[1]:  # (a W[0] that may hold a match: 5.2)
                wanted[code[j]] = True
        picked = np.empty(n - lo, dtype=np.int64)
        m = 0
        for j in range(lo, n):
            if wanted[code[j]]:
                picked[m] = j
                m += 1
        picked = picked[:m]
        order = picked[np.argsort(code[picked], kind="mergesort")]
    else:
        order = np.arange(lo, n)
    m = len(order)
    grouped_coord = np.empty(m)
    grouped_vars = np.empty(m, dtype=np.int64)
    grouped_code = np.empty(m, dtype=np.int64)
    positions = np.empty(m, dtype=np.int64)
    todo = np.zeros(m, dtype=np.bool_)
    limits = np.empty(m)
    keys = kval.shape[0]
    values = np.empty((keys, m))
    valid = np.empty((keys, m), dtype=np.bool_)
    for i in range(m):
        j = order[i]
        c = coord[j]
        grouped_coord[i], grouped_vars[i], grouped_code[i], positions[i] = c, mask[j], code[j], position[j]
        todo[i] = j < hi
        # ``lang.window.time_limits``: the span with its float allowance at this event's scale
        limits[i] = span + ULPS * np.spacing(max(max(abs(c), abs(span)), 1.0)) if np.isfinite(span) else span
        for k in range(keys):
            values[k, i], valid[k, i] = kval[k, j], kok[k, j]
    group_end = np.empty(m, dtype=np.int64)
    end = m
    for i in range(m - 1, -1, -1):
        if i < m - 1 and grouped_code[i] != grouped_code[i + 1]:
            end = i + 1
        group_end[i] = end
    arity = moves.shape[2]
    counts = np.zeros((arity, m + 1), dtype=np.int64)
    for v in range(arity):
        for i in range(m):
            counts[v, i + 1] = counts[v, i] + (grouped_vars[i] >> v & 1)
    offsets, found, variables, _, run_stats = run_windows(
        grouped_coord,
        grouped_vars,
        group_end,
        positions,
        counts,
        todo,
        moves,
        final,
        params[0],
        limits,
        params[1] != 0,
        params[2] != 0,
        params[3] != 0,
        params[4] != 0,
        values,
        valid,
        joins[0],
        joins[1],
        joins[2],
        joins[3],
        joins[4],
        chains[0],
        chains[1],
        chains[2],
        chains[3],
    )
    order = row_order(offsets, found, variables, True)
    ties = False  # (two rows with the same positions: the caller orders them by their bindings)
    for r in range(1, len(order)):
        if not output_less(offsets, found, order[r - 1], order[r]):
            ties = True
    rows, cells = written(offsets, found, variables, todo[:0], order, out)
    if rows >= 0:  # (the step's running totals)
        stats[STAT_EVALUATED] += run_stats[STAT_EVALUATED]
        stats[STAT_MAX_WINDOW] = max(stats[STAT_MAX_WINDOW], run_stats[STAT_MAX_WINDOW])
    return rows, cells, ties
