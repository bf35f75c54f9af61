"""The Pike VM that runs a compiled row pattern (``program.py``) over every partition.

A DEFINE condition's conjuncts that read only their row and rows at fixed offsets from it are known before
matching (``holds[row, var]``); the others (``conditions.py``: another variable's rows, FIRST / LAST,
CLASSIFIER, MATCH_NUMBER, running aggregates) are short postfix programs run when a thread tries a row,
over the thread's registers: the rows last and first mapped to each variable or subset they read and the
aggregates' counts and sums so far, kept per path node (floats: row numbers are exact in them).

One function, numba-compiled when numba is installed and plain Python otherwise (tests run both). Each
start row runs the threads in preferment order; the first thread to reach MATCH cuts the threads after
it, and a thread before it that matches later replaces it: the match a backtracking matcher finds first.
Two threads at one instruction and row are one (the later, less preferred, dropped) when their registers
that a condition still to come reads are equal: they have the same future. The threads' paths share an
arena of (row, variable, excluded, parent, registers) nodes, reset per start row.
"""

from __future__ import annotations


import numpy as np

from ..engines.compiled import grow, jit
from .conditions import (
    AGG_AVG,
    AGG_COUNT,
    AGG_MAX,
    AGG_MIN,
    OP_ADD,
    OP_AGG,
    OP_AND,
    OP_CONST,
    OP_DIV,
    OP_EQ,
    OP_GE,
    OP_GT,
    OP_IN,
    OP_ISNULL,
    OP_LE,
    OP_LOAD,
    OP_LT,
    OP_MOD,
    OP_MUL,
    OP_NE,
    OP_NEG,
    OP_NOT,
    OP_NOTNULL,
    OP_NUMBER,
    OP_OR,
    OP_SUB,
    RS_CUR,
    RS_FIRST_INCL,
    RS_REG,
    RS_UFIRST,
)
from .program import END, JMP, MATCH, SPLIT, START

SKIP_PAST_LAST, SKIP_NEXT_ROW, SKIP_FIRST, SKIP_LAST = range(4)
OK, NO_SKIP_ROW, SKIP_LOOPS, FULL = range(4)


@jit
def _same(node_regs, n_regs, reg_init, live, q, x, y):
    """Whether nodes ``x`` and ``y`` (-1: no row mapped yet, every register as ``reg_init``) hold the same
    values in the registers live at instruction ``q``."""
    for r in range(n_regs):
        if live[q, r]:
            vx = reg_init[r] if x < 0 else node_regs[x * n_regs + r]
            vy = reg_init[r] if y < 0 else node_regs[y * n_regs + r]
            if vx != vy:
                return False
    return True


@jit(nrt=False)
def _accumulate(func, acc, value):
    """An aggregate's sum, least or greatest value with one more value."""
    if func == AGG_MIN:
        return value if value < acc else acc
    if func == AGG_MAX:
        return value if value > acc else acc
    return acc + value


@jit
def _update(node_regs, n_regs, parent, new, var, pos, upd):
    """The registers of node ``new``: its parent's, with row ``pos`` mapped to ``var``."""
    (
        u_start,
        u_last,
        u_nlast,
        u_first,
        u_nfirst,
        reg_init,
        ua_start,
        ua_agg,
        agg_reg,
        agg_func,
        agg_values,
        agg_nulls,
    ) = upd
    o = new * n_regs
    if parent < 0:
        for r in range(n_regs):
            node_regs[o + r] = reg_init[r]
    else:
        q = parent * n_regs
        for r in range(n_regs):
            node_regs[o + r] = node_regs[q + r]
    for u in range(u_start[var], u_start[var + 1]):
        lb = o + u_last[u]
        for i in range(u_nlast[u] - 1, 0, -1):
            node_regs[lb + i] = node_regs[lb + i - 1]
        if u_nlast[u] > 0:
            node_regs[lb] = pos
        fb = o + u_first[u]
        for i in range(u_nfirst[u]):
            if node_regs[fb + i] < 0:
                node_regs[fb + i] = pos
                break
    for u in range(ua_start[var], ua_start[var + 1]):
        k = ua_agg[u]
        if agg_nulls[k, pos] == 0:
            c = o + agg_reg[k]
            node_regs[c] += 1.0
            node_regs[c + 1] = _accumulate(agg_func[k], node_regs[c + 1], agg_values[k, pos])


@jit
def _condition(var, pos, start, p0, p1, number, node, node_regs, n_regs, cond, rowbuf, sv, sn):
    """Whether the program of ``var``'s condition is true at row ``pos``, for the thread at ``node``
    (``conditions.py`` gives the rows it reads and the operators; SQL's three-valued logic)."""
    r_start, r_kind, r_reg, r_k, r_lo, r_hi, r_shift, c_start, c_op, c_a, c_b, consts, values, nulls = cond[:14]
    reg_init, agg_reg, agg_func, agg_values, agg_nulls = cond[14:]
    base = r_start[var]
    for s in range(base, r_start[var + 1]):
        kind = r_kind[s]
        if kind == RS_CUR:
            r = pos
        elif kind == RS_REG or kind == RS_FIRST_INCL:
            r = -1 if node < 0 else int(node_regs[node * n_regs + r_reg[s]])
            if r < 0 and kind == RS_FIRST_INCL:
                # the tried row is the group's k-th when k rows of it were mapped before
                if r_k[s] == 0 or (node >= 0 and node_regs[node * n_regs + r_reg[s] - 1] >= 0):
                    r = pos
        elif kind == RS_UFIRST:
            r = start + r_k[s]
            if r > pos:
                r = -1
        else:
            r = pos - r_k[s]
            if r < start:
                r = -1
        if r >= 0:
            if r + r_lo[s] < p0 or r + r_hi[s] >= p1:
                r = -1
            else:
                r += r_shift[s]
        rowbuf[s - base] = r
    sp = 0
    for i in range(c_start[var], c_start[var + 1]):
        o = c_op[i]
        if o == OP_CONST:
            sv[sp] = consts[c_a[i]]
            sn[sp] = c_b[i]
            sp += 1
        elif o == OP_LOAD:
            r = rowbuf[c_b[i]]
            if r < 0:
                sv[sp] = 0.0
                sn[sp] = 1
            else:
                sv[sp] = values[c_a[i], r]
                sn[sp] = nulls[c_a[i], r]
            sp += 1
        elif o == OP_NUMBER:
            sv[sp] = number
            sn[sp] = 0
            sp += 1
        elif o == OP_AGG:  # the thread's count and sum (least, greatest) so far, and the tried row's value
            k = c_a[i]
            c = agg_reg[k]
            count = reg_init[c] if node < 0 else node_regs[node * n_regs + c]
            acc = reg_init[c + 1] if node < 0 else node_regs[node * n_regs + c + 1]
            func = agg_func[k]
            if c_b[i] and agg_nulls[k, pos] == 0:
                count += 1.0
                acc = _accumulate(func, acc, agg_values[k, pos])
            sn[sp] = 0
            if func == AGG_COUNT:
                sv[sp] = count
            elif count == 0.0:
                sv[sp] = 0.0
                sn[sp] = 1
            else:
                sv[sp] = acc / count if func == AGG_AVG else acc
            sp += 1
        elif o == OP_NEG:
            sv[sp - 1] = -sv[sp - 1]
        elif o <= OP_MOD:
            sp -= 1
            x = sv[sp - 1]
            y = sv[sp]
            null = sn[sp - 1] | sn[sp]
            z = 0.0
            if o == OP_ADD:
                z = x + y
            elif o == OP_SUB:
                z = x - y
            elif o == OP_MUL:
                z = x * y
            elif y == 0.0:
                null = 1
            elif o == OP_DIV:
                z = x / y
            else:
                z = np.fmod(x, y)
            sv[sp - 1] = z
            sn[sp - 1] = null
        elif o <= OP_GE:
            sp -= 1
            x = sv[sp - 1]
            y = sv[sp]
            if o == OP_EQ:
                t = x == y
            elif o == OP_NE:
                t = x != y
            elif o == OP_LT:
                t = x < y
            elif o == OP_LE:
                t = x <= y
            elif o == OP_GT:
                t = x > y
            else:
                t = x >= y
            sv[sp - 1] = 1.0 if t else 0.0
            sn[sp - 1] = sn[sp - 1] | sn[sp]
        elif o == OP_AND or o == OP_OR:
            n = c_a[i]
            any_true = False
            any_false = False
            any_null = False
            for j in range(sp - n, sp):
                if sn[j]:
                    any_null = True
                elif sv[j] != 0.0:
                    any_true = True
                else:
                    any_false = True
            sp -= n - 1
            decided = any_false if o == OP_AND else any_true
            sv[sp - 1] = (0.0 if o == OP_AND else 1.0) if decided else (1.0 if o == OP_AND else 0.0)
            sn[sp - 1] = 0 if decided else (1 if any_null else 0)
        elif o == OP_NOT:
            sv[sp - 1] = 0.0 if sv[sp - 1] != 0.0 else 1.0
        elif o == OP_ISNULL or o == OP_NOTNULL:
            null = sn[sp - 1] != 0
            sv[sp - 1] = 1.0 if null == (o == OP_ISNULL) else 0.0
            sn[sp - 1] = 0
        elif o == OP_IN:
            n = c_a[i]
            arg = sp - n - 1
            if sn[arg] == 0:
                found = False
                unknown = False
                for j in range(arg + 1, sp):
                    if sn[j]:
                        unknown = True
                    elif sv[j] == sv[arg]:
                        found = True
                if found:
                    sv[arg] = 0.0 if c_b[i] else 1.0
                elif unknown:
                    sn[arg] = 1
                else:
                    sv[arg] = 1.0 if c_b[i] else 0.0
            sp = arg + 1
    return sn[0] == 0 and sv[0] != 0.0


@jit(nrt=False)
def _closure(
    op,
    a,
    b,
    pc,
    node,
    pos,
    p0,
    p1,
    generation,
    mark,
    stack_pc,
    stack_node,
    out_pc,
    out_node,
    n_out,
    n_regs,
    node_regs,
    reg_init,
    live,
    head,
    visit_node,
    visit_next,
    n_visit,
):
    """Add the threads reachable from ``pc`` at ``pos`` without reading a row (SPLIT, JMP, anchors) to
    ``out``, in preferment order; a pc already reached at ``pos`` (``mark``) by a preferred thread with the
    same live registers is not added again (``head``: per pc its first visit this generation; per visit its
    node and the next visit at that pc). Returns the new length of ``out`` and the visits so far."""
    stack_pc[0] = pc
    stack_node[0] = node
    top = 1
    while top > 0:
        top -= 1
        q = stack_pc[top]
        qn = stack_node[top]
        if mark[q] == generation:
            if n_regs == 0:
                continue
            e = head[q]
            while e >= 0:
                other = visit_node[e]
                if other == qn or _same(node_regs, n_regs, reg_init, live, q, other, qn):
                    break
                e = visit_next[e]
            if e >= 0:
                continue
        else:
            mark[q] = generation
            head[q] = -1
        if n_regs > 0:
            visit_node[n_visit] = qn
            visit_next[n_visit] = head[q]
            head[q] = n_visit
            n_visit += 1
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
    return n_out, n_visit


@jit
def match_partitions(
    op,
    a,
    b,
    holds,
    bounds,
    times,
    within,
    skip_kind,
    skip_vars,
    begin,
    open_end,
    horizon,
    cond,
    upd,
    n_regs,
    live,
    number_offset,
    threads,
):
    """Every match of every partition. ``bounds``: each partition's first row and one past its last, in
    the sorted rows; ``begin``: the row each partition's first match is tried at; ``times`` (int64) and
    ``within`` (> 0 to apply): a row joins a match only when ``times[row] - times[start] < within``;
    ``skip_vars``: the variables AFTER MATCH SKIP TO names.

    ``holds[row, var]``: the conjuncts of var's condition known before matching. ``cond``: the programs of
    the others and the rows they read (``conditions.Conditions``), ``upd``: the register updates when a row
    maps to each variable, ``n_regs`` registers, ``live[pc, register]``; ``number_offset`` is added to the
    match numbers a condition reads (MATCH_NUMBER()). ``threads``: room for this many threads per row (at
    least the program's length; with registers several threads may share a pc, and a run that needs more
    room stops with status ``FULL``: the caller runs it again with more).

    ``open_end``: the partitions go on past their last row (a stream): a start row whose preferred match
    could still change with the rows to come (a thread preferred over any match found wants the next row)
    is undecided, and the partition stops there. Rows to come have times >= ``horizon[part]``, so under
    WITHIN a thread whose window closed by then is dead, not waiting.

    Returns (status, the match where it failed, per match: partition, number, start, end, first flat index;
    flat: row, variable, excluded; per partition: the first start row not decided, its end if all were)."""
    n_prog = op.shape[0]
    c_start = cond[7]
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
    node_regs = np.empty(256 * max(n_regs, 1), np.float64)
    reg_init = upd[5]
    clist_pc = np.empty(threads, np.int64)
    clist_node = np.empty(threads, np.int64)
    nlist_pc = np.empty(threads, np.int64)
    nlist_node = np.empty(threads, np.int64)
    mark = np.full(n_prog, -1, np.int64)
    head = np.full(n_prog, -1, np.int64)
    visit_node = np.empty(threads, np.int64)
    visit_next = np.empty(threads, np.int64)
    stack_pc = np.empty(2 * n_prog + 2, np.int64)
    stack_node = np.empty(2 * n_prog + 2, np.int64)
    path = np.empty(256, np.int64)
    n_rows = 1
    for v in range(c_start.shape[0] - 1):
        n_rows = max(n_rows, cond[0][v + 1] - cond[0][v])
    rowbuf = np.empty(n_rows, np.int64)
    sv = np.empty(max(c_start[-1], 1), np.float64)
    sn = np.empty(max(c_start[-1], 1), np.uint8)
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
            full = False
            generation += 1
            n_c, n_visit = _closure(
                op,
                a,
                b,
                0,
                -1,
                start,
                p0,
                p1,
                generation,
                mark,
                stack_pc,
                stack_node,
                clist_pc,
                clist_node,
                0,
                n_regs,
                node_regs,
                reg_init,
                live,
                head,
                visit_node,
                visit_next,
                0,
            )
            pos = start
            while n_c > 0:
                n_n = 0
                n_visit = 0
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
                    var = a[pc]
                    if holds[pos, var] == 0:
                        continue
                    if within > 0 and times[pos] - times[start] >= within:
                        continue
                    if c_start[var + 1] > c_start[var] and not _condition(
                        var,
                        pos,
                        start,
                        p0,
                        p1,
                        number + number_offset,
                        node,
                        node_regs,
                        n_regs,
                        cond,
                        rowbuf,
                        sv,
                        sn,
                    ):
                        continue
                    if n_nodes == node_row.shape[0]:
                        full = True  # grown below, out of this loop, and the start row tried again
                        break
                    node_row[n_nodes] = pos
                    node_var[n_nodes] = var
                    node_excl[n_nodes] = b[pc]
                    node_parent[n_nodes] = node
                    if n_regs > 0:
                        if n_n + n_prog > threads or n_visit + n_prog > threads:
                            return (  # run again with room for more threads
                                FULL,
                                -1,
                                m_part[:0],
                                m_number[:0],
                                m_start[:0],
                                m_end[:0],
                                m_offset[:1],
                                flat_row[:0],
                                flat_var[:0],
                                flat_excl[:0],
                                next_start,
                            )
                        _update(node_regs, n_regs, node, n_nodes, var, pos, upd)
                    new_node = n_nodes
                    n_nodes += 1
                    n_n, n_visit = _closure(
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
                        n_regs,
                        node_regs,
                        reg_init,
                        live,
                        head,
                        visit_node,
                        visit_next,
                        n_visit,
                    )
                if undecided or full:
                    break
                for t in range(n_n):  # copied, not swapped: see the arena's growth below
                    clist_pc[t] = nlist_pc[t]
                    clist_node[t] = nlist_node[t]
                n_c = n_n
                pos += 1
            if full:
                # An array reassigned inside the loop over rows above (grown, or swapped) costs numba's
                # reference counts on every use there (the kernel took twice as long): the arena grows
                # here, out of that loop, and the start row is tried again.
                node_row = grow(node_row, n_nodes + 1)
                node_var = grow(node_var, n_nodes + 1)
                node_excl = grow(node_excl, n_nodes + 1)
                node_parent = grow(node_parent, n_nodes + 1)
                node_regs = grow(node_regs, node_row.shape[0] * max(n_regs, 1))
                continue
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
