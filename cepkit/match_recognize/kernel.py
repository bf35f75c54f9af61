"""The Pike VM that runs a compiled row pattern (``program.py``) over every partition, when each DEFINE
condition reads only its own row and rows at fixed offsets from it (so a row's variables are known
before matching: ``holds[row, var]``).

One function, numba-compiled when numba is installed and plain Python otherwise (tests run both). Each
start row runs the threads in preferment order; the first thread to reach MATCH cuts the threads after
it, and a thread before it that matches later replaces it: the match a backtracking matcher finds first.
The threads' paths share an arena of (row, variable, excluded, parent) nodes, reset per start row.
"""

from __future__ import annotations

import numpy as np

from ..engines.compiled import grow, jit
from .program import END, JMP, MATCH, SPLIT, START

SKIP_PAST_LAST, SKIP_NEXT_ROW, SKIP_FIRST, SKIP_LAST = range(4)
OK, NO_SKIP_ROW, SKIP_LOOPS = range(3)


@jit
def _closure(op, a, b, pc, node, pos, p0, p1, generation, mark, stack_pc, stack_node, out_pc, out_node, n_out):
    """Add the threads reachable from ``pc`` at ``pos`` without reading a row (SPLIT, JMP, anchors) to
    ``out``, in preferment order; a pc already reached at ``pos`` (``mark``) by a preferred thread is not
    added again. Returns the new length of ``out``."""
    stack_pc[0] = pc
    stack_node[0] = node
    top = 1
    while top > 0:
        top -= 1
        q = stack_pc[top]
        qn = stack_node[top]
        if mark[q] == generation:
            continue
        mark[q] = generation
        o = op[q]
        if o == JMP:
            stack_pc[top] = a[q]
            stack_node[top] = qn
            top += 1
        elif o == SPLIT:
            stack_pc[top] = b[q]
            stack_node[top] = qn
            stack_pc[top + 1] = a[q]
            stack_node[top + 1] = qn
            top += 2
        elif o == START or o == END:
            if (o == START and pos == p0) or (o == END and pos == p1):
                stack_pc[top] = q + 1
                stack_node[top] = qn
                top += 1
        else:
            out_pc[n_out] = q
            out_node[n_out] = qn
            n_out += 1
    return n_out


@jit
def match_partitions(op, a, b, holds, bounds, times, within, skip_kind, skip_vars, begin, open_end, horizon):
    """Every match of every partition. ``bounds``: each partition's first row and one past its last, in
    the sorted rows; ``begin``: the row each partition's first match is tried at; ``times`` (int64) and
    ``within`` (> 0 to apply): a row joins a match only when ``times[row] - times[start] < within``;
    ``skip_vars``: the variables AFTER MATCH SKIP TO names.

    ``open_end``: the partitions go on past their last row (a stream): a start row whose preferred match
    could still change with the rows to come (a thread preferred over any match found wants the next row)
    is undecided, and the partition stops there. Rows to come have times >= ``horizon[part]``, so under
    WITHIN a thread whose window closed by then is dead, not waiting.

    Returns (status, the match where it failed, per match: partition, number, start, end, first flat index;
    flat: row, variable, excluded; per partition: the first start row not decided, its end if all were)."""
    n_prog = op.shape[0]
    cap = 1024
    m_part = np.empty(cap, np.int64)
    m_number = np.empty(cap, np.int64)
    m_start = np.empty(cap, np.int64)
    m_end = np.empty(cap, np.int64)
    m_offset = np.empty(cap + 1, np.int64)
    flat_row = np.empty(cap, np.int64)
    flat_var = np.empty(cap, np.int64)
    flat_excl = np.empty(cap, np.int8)
    n_matches = 0
    n_flat = 0
    m_offset[0] = 0

    node_row = np.empty(256, np.int64)
    node_var = np.empty(256, np.int64)
    node_excl = np.empty(256, np.int8)
    node_parent = np.empty(256, np.int64)
    clist_pc = np.empty(n_prog, np.int64)
    clist_node = np.empty(n_prog, np.int64)
    nlist_pc = np.empty(n_prog, np.int64)
    nlist_node = np.empty(n_prog, np.int64)
    mark = np.full(n_prog, -1, np.int64)
    stack_pc = np.empty(2 * n_prog + 2, np.int64)
    stack_node = np.empty(2 * n_prog + 2, np.int64)
    path = np.empty(256, np.int64)
    generation = 0
    next_start = np.empty(bounds.shape[0], np.int64)

    for part in range(bounds.shape[0]):
        p0 = bounds[part, 0]
        p1 = bounds[part, 1]
        start = begin[part]
        number = 1
        undecided = False
        while start < p1:
            # ---- one start row: the threads of the Pike VM, in preferment order
            n_nodes = 0
            matched = -2  # -2: no match; -1: an empty path; else the last node of the path
            matched_end = start
            generation += 1
            n_c = _closure(
                op, a, b, 0, -1, start, p0, p1, generation, mark, stack_pc, stack_node, clist_pc, clist_node, 0
            )
            pos = start
            while n_c > 0:
                n_n = 0
                generation += 1
                for t in range(n_c):
                    pc = clist_pc[t]
                    node = clist_node[t]
                    if op[pc] == MATCH:
                        matched = node
                        matched_end = pos
                        break  # the threads after this one are less preferred
                    # CHAR
                    if pos >= p1:
                        if open_end and not (within > 0 and horizon[part] - times[start] >= within):
                            undecided = True
                            break
                        continue
                    if holds[pos, a[pc]] == 0:
                        continue
                    if within > 0 and times[pos] - times[start] >= within:
                        continue
                    if n_nodes == node_row.shape[0]:
                        node_row = grow(node_row, n_nodes + 1)
                        node_var = grow(node_var, n_nodes + 1)
                        node_excl = grow(node_excl, n_nodes + 1)
                        node_parent = grow(node_parent, n_nodes + 1)
                    node_row[n_nodes] = pos
                    node_var[n_nodes] = a[pc]
                    node_excl[n_nodes] = b[pc]
                    node_parent[n_nodes] = node
                    new_node = n_nodes
                    n_nodes += 1
                    n_n = _closure(
                        op,
                        a,
                        b,
                        pc + 1,
                        new_node,
                        pos + 1,
                        p0,
                        p1,
                        generation,
                        mark,
                        stack_pc,
                        stack_node,
                        nlist_pc,
                        nlist_node,
                        n_n,
                    )
                if undecided:
                    break
                for t in range(n_n):
                    clist_pc[t] = nlist_pc[t]
                    clist_node[t] = nlist_node[t]
                n_c = n_n
                pos += 1
            if undecided:
                break
            if matched == -2:
                start += 1
                continue
            # ---- record the match: its path, read back from the last node
            length = 0
            node = matched
            while node >= 0:
                if length == path.shape[0]:
                    path = grow(path, length + 1)
                path[length] = node
                length += 1
                node = node_parent[node]
            if n_matches + 1 >= m_part.shape[0]:
                m_part = grow(m_part, n_matches + 2)
                m_number = grow(m_number, n_matches + 2)
                m_start = grow(m_start, n_matches + 2)
                m_end = grow(m_end, n_matches + 2)
                m_offset = grow(m_offset, n_matches + 3)
            while n_flat + length > flat_row.shape[0]:
                flat_row = grow(flat_row, n_flat + length)
                flat_var = grow(flat_var, n_flat + length)
                flat_excl = grow(flat_excl, n_flat + length)
            first_skip_row = -1
            last_skip_row = -1
            for i in range(length):
                nd = path[length - 1 - i]
                flat_row[n_flat + i] = node_row[nd]
                flat_var[n_flat + i] = node_var[nd]
                flat_excl[n_flat + i] = node_excl[nd]
                if skip_vars[node_var[nd]]:
                    if first_skip_row < 0:
                        first_skip_row = node_row[nd]
                    last_skip_row = node_row[nd]
            m_part[n_matches] = part
            m_number[n_matches] = number
            m_start[n_matches] = start
            m_end[n_matches] = matched_end
            n_flat += length
            n_matches += 1
            m_offset[n_matches] = n_flat
            number += 1
            # ---- AFTER MATCH SKIP
            if skip_kind == SKIP_NEXT_ROW or length == 0:
                start = start + 1
            elif skip_kind == SKIP_PAST_LAST:
                start = matched_end
            else:
                target = first_skip_row if skip_kind == SKIP_FIRST else last_skip_row
                if target < 0 or target == start:
                    return (
                        NO_SKIP_ROW if target < 0 else SKIP_LOOPS,
                        n_matches - 1,
                        m_part[:n_matches],
                        m_number[:n_matches],
                        m_start[:n_matches],
                        m_end[:n_matches],
                        m_offset[: n_matches + 1],
                        flat_row[:n_flat],
                        flat_var[:n_flat],
                        flat_excl[:n_flat],
                        next_start,
                    )
                start = target
        next_start[part] = start
    return (
        OK,
        -1,
        m_part[:n_matches],
        m_number[:n_matches],
        m_start[:n_matches],
        m_end[:n_matches],
        m_offset[: n_matches + 1],
        flat_row[:n_flat],
        flat_var[:n_flat],
        flat_excl[:n_flat],
        next_start,
    )
