"""Selection strategies NEXT, LAST and MAX by their own algorithms over the CEA ([CEL] §6-7, Theorem 6,
Appendix D.3), without determinization for NEXT and LAST, in one numba kernel (``select``) over a
micro-batch of events of many sub-streams, as Algorithm 1 runs in ``evaluate.advance``.

**NEXT and LAST** (Algorithms 5 and 6). The runs are kept as an ordered list of *classes* (runs sharing
one complex event C, in different states), best first. Reading event j, each class yields its
•-successors (C ∪ {j}) and ◦-successors (C); NEXT lists them class by class, • first (within a class,
marking wins), LAST lists all •-successors first (a run that marks j beats every run that does not).
A state keeps only the first run that reaches it: runs in one state share their futures and the order is
preserved, so a later one can never win. The fresh sink q_f, entered only by •-copies of the
transitions into F, makes the first class reaching it the one output at j.

**MAX** (Algorithm 7). Lists are indexed by (T, U): T the states of runs producing exactly C, U those of
runs producing strict supersets of C. A • move gives U' = δ•(U), T' = δ•(T) \\ U'; a ◦ move
U' = δ•(U) ∪ δ◦(U) ∪ δ•(T), T' = δ◦(T) \\ U'; C ∪ {j} is output when T' meets F and U' does not.

**Windows** (docs/language.md §10.3: strategies choose among the matches that fit the window). A better run
that starts earlier expires earlier, after which a worse one may be the best; so under a window a run is
dropped only when a better run in the same state starts *at least as late* (it outlives it), a NEXT/LAST
state may then hold a few runs with increasing starts, and MAX keys its lists by the start of C too, with
U recording the latest start of a superset run in each state. Without a window every start is the same
and the algorithms are exactly the paper's.

**Layout.** A class (NEXT, LAST) or a list (MAX) is a *group*: its start, one node per CEA state (NONE:
no run there; for NEXT and LAST the sink q_f is the last state) and, for MAX, per state the latest start
of a superset run (-inf: none; U forgets the states without a transition, the pattern's end, so lists
differing only by them merge). A sub-stream's groups live in a slot of a ``GroupsTable``, which the
kernel loads at the sub-stream's first event of a batch and stores after its last; without numba the same
functions run as Python (the tested twin, ``tests/engines/automaton/test_kernel.py``).

**CONSUME BY** applies after selection, as the reference does: a selected match is reported only if it
starts after the last position at which a match was reported (in its scope): ``plan.AutomatonMatcher``.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from . import kernel
from .determinize import Moves
from .evaluate import ARENA_FULL, OK, ROOTS, ROOTS_FULL, Inputs, Outputs, Roots, RunsTable
from ..compiled import jit
from .nodes import BOTTOM, NONE, UNION_ROOM, compact, new_arena, put_ext, put_union

RANKED = ("NEXT", "LAST", "MAX")
NEXT, LAST, MAX = 0, 1, 2  # ``select``'s strategy codes
GROUPS_FULL = 5  # ``select`` needs room for more groups per sub-stream

Groups = namedtuple("Groups", "start node sup")
Groups.__doc__ = (
    "Groups by row: start, a node per CEA state (NONE: none), MAX's superset starts (-inf: none; "
    "not written for NEXT and LAST)."
)
Stored = namedtuple("Stored", "start node sup n")
Stored.__doc__ = "Groups of many sub-streams, a slot each: ``start[s, :n[s]]``, ``node[s, :n[s]]``, ``sup[s, :n[s]]``."
Work = namedtuple("Work", "groups new latest u_mark u_skip t_mark t_skip")
Work.__doc__ = "The kernel's groups being stepped, the groups they step to, and per-state scratch."


class MoveTable:
    """``Moves`` as arrays for the kernel, per letter (row) and CEA state: the • moves ``mark_dst``,
    ``mark_var`` from ``mark_start`` (``mark_count`` of them), the ◦ targets ``skip_dst`` likewise,
    whether the letter leaves the state where it is (``inert``); per state whether it is final (NEXT and
    LAST: the sink) and whether it has no transition (``ends``). Letters are filled as batches bring them."""

    def __init__(self, moves: Moves):
        self.moves = moves
        cea = moves.cea
        self.n_states = cea.n_states + (moves.sink is not None)
        self.final = np.zeros(self.n_states, bool)
        self.final[sorted(moves.finals)] = True
        self.ends = np.array([q < cea.n_states and not cea.outgoing[q] for q in range(self.n_states)], bool)
        self.filled = np.zeros(0, bool)
        shape = (0, self.n_states)
        self.mark_start, self.mark_count = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
        self.skip_start, self.skip_count = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
        self.inert = np.zeros(shape, bool)
        self.mark_dst, self.mark_var, self.skip_dst = (np.zeros(0, np.int32) for _ in range(3))
        self.arrays = self._arrays()

    def _arrays(self) -> tuple:
        return (
            self.mark_start,
            self.mark_count,
            self.mark_dst,
            self.mark_var,
            self.skip_start,
            self.skip_count,
            self.skip_dst,
            self.inert,
            self.final,
            self.ends,
        )

    def ensure(self, letters) -> None:
        """Rows for ``letters`` (an iterable of letter ids)."""
        new = sorted({int(a) for a in letters if a >= len(self.filled) or not self.filled[a]})
        if not new:
            return
        rows = max(len(self.filled), new[-1] + 1)
        if rows > len(self.filled):
            grow = rows - len(self.filled)
            self.filled = np.r_[self.filled, np.zeros(grow, bool)]
            pad = np.zeros((grow, self.n_states), np.int64)
            self.mark_start, self.mark_count = np.r_[self.mark_start, pad], np.r_[self.mark_count, pad]
            self.skip_start, self.skip_count = np.r_[self.skip_start, pad], np.r_[self.skip_count, pad]
            self.inert = np.r_[self.inert, pad.astype(bool)]
        mark_dst, mark_var, skip_dst = self.mark_dst.tolist(), self.mark_var.tolist(), self.skip_dst.tolist()
        for letter in new:
            marks, skips = self.moves(letter)
            inert = self.moves.inert(letter)
            for q in range(self.n_states):
                self.mark_start[letter, q], self.skip_start[letter, q] = len(mark_dst), len(skip_dst)
                for dst, var in marks.get(q, ()):
                    mark_dst.append(dst)
                    mark_var.append(var)
                skip_dst += skips.get(q, ())
                self.mark_count[letter, q] = len(mark_dst) - self.mark_start[letter, q]
                self.skip_count[letter, q] = len(skip_dst) - self.skip_start[letter, q]
                self.inert[letter, q] = q in inert
            self.filled[letter] = True
        self.mark_dst, self.mark_var = np.array(mark_dst, np.int32), np.array(mark_var, np.int32)
        self.skip_dst = np.array(skip_dst, np.int32)
        self.arrays = self._arrays()


def new_groups(rows: int, n_states: int) -> Groups:
    return Groups(np.empty(rows), np.empty((rows, n_states), np.int32), np.empty((rows, n_states)))


class GroupsTable(RunsTable):
    """The groups of a matcher's sub-streams (one per PARTITION BY key), a slot each of one ``Stored``,
    taken and released as ``evaluate.RunsTable``'s slots of runs; a free slot holds none."""

    def __init__(self, n_states: int, initial: int, empty_start: float, rows: int = 4):
        self.initial, self.empty_start = initial, empty_start
        self.stored = Stored(
            np.empty((8, rows)),
            np.empty((8, rows, n_states), np.int32),
            np.empty((8, rows, n_states)),
            np.zeros(8, np.int64),
        )
        self.free = list(range(7, -1, -1))

    @property
    def rows(self) -> int:
        return self.stored.start.shape[1]

    def restart(self, slots) -> None:
        """``slots`` back to the one group of a sub-stream that has not started: ⊥ in the initial state."""
        start, node, sup, n = self.stored
        start[slots, 0] = self.empty_start
        node[slots, 0] = NONE
        node[slots, 0, self.initial] = BOTTOM
        sup[slots, 0] = -np.inf
        n[slots] = 1

    def runs(self, slot: int) -> tuple:
        """(the CEA states, their nodes) of ``slot``'s runs that produce their group's complex event (T: the
        superset runs of U hold no node)."""
        k = int(self.stored.n[slot])
        groups, states = np.nonzero(self.stored.node[slot, :k] != NONE)
        return states, self.stored.node[slot, groups, states]

    def nodes(self) -> tuple:
        """(the nodes of every slot's groups, the index of each into ``stored.node``)."""
        node, n = self.stored.node, self.stored.n
        at = np.nonzero((np.arange(node.shape[1]) < n[:, None])[:, :, None] & (node != NONE))
        return node[at], at


class Selector:
    """NEXT, LAST or MAX over a matcher's sub-streams: runs ``select`` over batches of events (``Batch``
    with slots, as ``evaluate.Evaluator`` runs ``advance``) and answers what it asks for (room for groups,
    compaction of the arena, enumeration of the complex events chosen into ``outputs``)."""

    def __init__(self, program):
        moves = program.moves
        self.moves = MoveTable(moves)
        window = program.query.within
        empty_start = math.inf if window is not None else 0.0  # the start of a run that marked nothing
        none = program.letters.none
        self.none = -1 if none is None else none
        code = {"NEXT": NEXT, "LAST": LAST, "MAX": MAX}[program.query.strategy]
        self.params = (code, self.none, moves.cea.initial, empty_start)
        self.table = GroupsTable(self.moves.n_states, moves.cea.initial, empty_start)
        self.work = self._work(self.table.rows)
        self.arena = new_arena()
        self.roots = Roots(
            np.empty(ROOTS, np.int32),
            np.empty(ROOTS, np.int64),
            np.empty(ROOTS),
            np.empty(ROOTS),
            np.zeros(1, np.int64),
        )
        self.outputs = Outputs()
        self.info = np.zeros(5, np.int64)
        self._select, self._layout, self._batch = None, None, None  # ``select``'s entry for the batch's types

    def _work(self, rows: int) -> Work:
        n = self.moves.n_states
        return Work(
            new_groups(rows, n),
            new_groups(rows, n),
            *(np.empty(n) for _ in range(3)),
            *(np.empty(n, np.int32) for _ in range(2)),
        )

    def run(self, batch, count: int) -> None:
        """``batch``'s first ``count`` events through their sub-streams' groups (each loaded from and
        stored to its slot); the complex events chosen are then in ``outputs``."""
        self.moves.ensure(np.unique(batch.letter[:count]).tolist() + ([self.none] if self.none >= 0 else []))
        info = self.info
        info[2:4] = 0
        compacted_at = -1
        while True:
            args = (self.moves.arrays, batch, int(info[2]), count, self.params, self.work, self.table.stored)
            args += (self.arena, self.roots, info)
            if batch is not self._batch:  # (a push's batch is the same object every time)
                layout = kernel._signature(batch)
                if layout != self._layout:
                    self._select, self._layout = kernel.entry(select, args), layout
                self._batch = batch
            status = self._select(*args)
            if status == OK:
                break
            i = int(info[2])
            if status == GROUPS_FULL:
                self.table.fit(2 * self.table.rows)
                self.work = self._work(self.table.rows)
            elif status == ROOTS_FULL:
                self.outputs.take(self.arena, self.roots)
            else:  # ARENA_FULL: full again at the same event, the arena grows
                self.outputs.take(self.arena, self.roots)
                self.compact(min_free=len(self.arena.pos) if i == compacted_at else 0)
                compacted_at = i
        self.outputs.take(self.arena, self.roots)

    def compact(self, min_free: int = 0) -> None:
        """Reclaim every node no group of any slot reaches."""
        nodes, at = self.table.nodes()
        self.arena, new_ids = compact(self.arena, nodes.astype(np.int32), np.full(len(nodes), -np.inf), min_free)
        self.table.stored.node[at] = new_ids


def select_all(program, stream) -> tuple:
    """NEXT, LAST or MAX over a whole finite stream, sub-stream after sub-stream (``evaluate.Inputs``, as
    ``evaluate.run_all``; one slot, each sub-stream starting afresh): (the selector, whose outputs hold the
    matches chosen; under CONSUME BY the mask of those it keeps, None otherwise). A key whose window passes
    needs no fresh start here: its groups have all expired then but the initial one, a fresh start's."""
    selector = Selector(program)
    slot = selector.table.take(1)[0]
    kept, reported = [], {}
    for batch in Inputs(program, stream).batches(program.letters.none):
        n = len(batch.pos)
        batch = batch._replace(slot=np.full(n, slot, np.int64), load=np.zeros(n, bool))
        before = len(selector.outputs)
        selector.run(batch, n)
        if program.consume is not None:
            kept.append(consumed(batch, [None] * n, selector.outputs, reported, before))
    return selector, (np.concatenate(kept) if kept else np.zeros(0, bool)) if program.consume is not None else None


def consumed(read, scopes: list, outputs: Outputs, reported: dict, first_row: int = 0) -> np.ndarray:
    """CONSUME BY over the matches chosen at ``read``'s events (the rows of ``outputs`` from ``first_row``,
    in ``read``'s order), each event's scope in ``scopes``: a match is kept only if it starts after the last
    position at which its scope reported one (``reported``, updated); a sub-stream that starts afresh
    (``read.reset`` and not ``read.load``) forgets what its scope reported. The mask of the rows kept."""
    offsets, positions, _, emitted = outputs.arrays()
    firsts, emits = positions[offsets[first_row:-1]].tolist(), emitted[first_row:].tolist()
    kept = np.ones(len(emits), bool)
    row = 0
    for position, scope, fresh in zip(read.pos.tolist(), scopes, (read.reset & ~read.load).tolist()):
        if fresh:
            reported.pop(scope, None)
        if row < len(emits) and emits[row] == position:
            after, any_kept = reported.get(scope, -1), False
            while row < len(emits) and emits[row] == position:
                kept[row] = firsts[row] > after
                any_kept |= kept[row]
                row += 1
            if any_kept:
                reported[scope] = position
    return kept


# ----------------------------------------------------------------------------- the kernel
@jit
def select(moves, batch, first, last, params, work, stored, arena, roots, info):
    """Events ``first..last-1`` of ``batch`` (in sub-stream order, a slot each: ``evaluate.Batch``) through
    NEXT, LAST or MAX (``params``: strategy code, the ``none`` letter, the initial state, the start of a run
    that marked nothing). Returns OK, or a status asking Python for help at event ``info[2]``
    (GROUPS_FULL, ARENA_FULL, ROOTS_FULL); calling again from there resumes (``info[3]``: the event's
    phases done, as in ``evaluate.advance``). Every step is all or nothing: nodes are made past ``used``
    and groups in ``work.new``, committed at its end. The roots chosen wait in ``roots``."""
    strategy, none, initial, empty_start = params
    ev_pos, ev_letter, ev_key, ev_limit, ev_gap, ev_reset, ev_slot, ev_load = batch
    inert = moves[7]
    groups, new, latest, u_mark, u_skip, t_mark, t_skip = work
    node_used = arena[5]
    root_n = roots[4]
    rows = groups[0].shape[0]
    used, n_roots = node_used[0], root_n[0]
    status = OK
    i = first
    if info[3] == 0 and ev_reset[first] and not ev_load[first]:
        n = _fresh(groups, initial, empty_start)
    else:
        n = _load(groups, stored, ev_slot[first])
    while i < last:
        if info[3] == 0:
            if ev_reset[i] and i > first:
                _store(groups, n, stored, ev_slot[i - 1])
                n = _load(groups, stored, ev_slot[i]) if ev_load[i] else _fresh(groups, initial, empty_start)
            info[3] = 1
        # this step reads an irrelevant event of the gap before event i (unless every run stays where it
        # is: the rest of the gap then changes nothing), or event i itself
        in_gap = False
        if info[3] - 1 < ev_gap[i]:
            g_node, g_sup = groups[1], groups[2]
            for g in range(n):
                if strategy == MAX:
                    in_gap = not _inert(inert, none, g_node[g], g_sup[g], -np.inf)
                else:  # (NEXT and LAST write no superset starts)
                    in_gap = not _inert(inert, none, g_node[g], g_node[g], NONE)
                if in_gap:
                    break
        letter = none if in_gap else ev_letter[i]
        pos = -1 if in_gap else ev_pos[i]
        if 2 * n > rows:
            status = GROUPS_FULL
        elif strategy == MAX:
            status, fresh, n_new, roots_after = _step_max(
                moves,
                letter,
                pos,
                ev_key[i],
                ev_limit[i],
                groups,
                n,
                new,
                u_mark,
                u_skip,
                t_mark,
                t_skip,
                arena,
                used,
                roots,
                n_roots,
            )
        else:
            status, fresh, n_new, roots_after = _step_ranked(
                moves,
                letter,
                pos,
                ev_key[i],
                ev_limit[i],
                strategy == LAST,
                groups,
                n,
                new,
                latest,
                arena,
                used,
                roots,
                n_roots,
            )
        if status != OK:
            info[2] = i
            break
        used, n_roots = fresh, roots_after
        groups, new = new, groups
        n = n_new
        if in_gap:
            info[3] += 1
            continue
        info[3] = 0
        i += 1
    if last > first:
        _store(groups, n, stored, ev_slot[i] if status != OK else ev_slot[last - 1])
    node_used[0], root_n[0] = used, n_roots
    return status


@jit
def _fresh(groups, initial, empty_start):
    """The groups of a sub-stream that has not started (``GroupsTable.restart``); their count."""
    start, node, sup = groups
    start[0] = empty_start
    node[0, :] = NONE
    node[0, initial] = BOTTOM
    sup[0, :] = -np.inf
    return 1


@jit
def _load(groups, stored, slot):
    start, node, sup, n = stored
    k = n[slot]
    groups[0][:k] = start[slot, :k]
    groups[1][:k] = node[slot, :k]
    groups[2][:k] = sup[slot, :k]
    return k


@jit
def _store(groups, k, stored, slot):
    start, node, sup, n = stored
    start[slot, :k] = groups[0][:k]
    node[slot, :k] = groups[1][:k]
    sup[slot, :k] = groups[2][:k]
    n[slot] = k


@jit(inline=True)
def _union(arena, at, a, b):
    """(a ∪ b written at ``at`` unless ``a`` is NONE, the next free node); the caller checked ``UNION_ROOM``
    nodes of room, and the next free node is -1 when the union needed more (``nodes.put_union``)."""
    if a == NONE:
        return b, at
    node_pos, node_var, node_left, node_right, node_start, _ = arena
    node = put_union(node_pos, node_var, node_left, node_right, node_start, at, a, b)
    if node == NONE:
        return a, -1
    return node, node + 1


@jit(inline=True)
def _read(moves, letter, q, node, pos, key, marked, skipped, arena, fresh):
    """The runs ``node`` in state ``q`` read ``letter`` at ``pos``: each • move's Ext united into
    ``marked[dst]``, each ◦ move's ``node`` into ``skipped[dst]`` (per CEA state, NONE: none). Returns the
    next free node, or -1 when the arena is full."""
    mark_start, mark_count, mark_dst, mark_var, skip_start, skip_count, skip_dst = moves[:7]
    node_pos, node_var, node_left, node_right, node_start, _ = arena
    capacity = node_pos.shape[0]
    first = mark_start[letter, q]
    for m in range(first, first + mark_count[letter, q]):
        if fresh + 1 + UNION_ROOM > capacity:
            return -1
        dst = mark_dst[m]
        extended = put_ext(node_pos, node_var, node_left, node_right, node_start, fresh, pos, mark_var[m], node, key)
        marked[dst], fresh = _union(arena, fresh + 1, marked[dst], extended)
        if fresh < 0:
            return -1
    first = skip_start[letter, q]
    for m in range(first, first + skip_count[letter, q]):
        if fresh + UNION_ROOM > capacity:
            return -1
        dst = skip_dst[m]
        skipped[dst], fresh = _union(arena, fresh, skipped[dst], node)
        if fresh < 0:
            return -1
    return fresh


@jit(inline=True)
def _inert(inert, letter, nodes, supers, absent):
    """Whether ``letter`` leaves every run of a group where it is (its nodes, and MAX's superset runs:
    ``supers`` other than ``absent``)."""
    for q in range(nodes.shape[0]):
        if (nodes[q] != NONE or supers[q] != absent) and not inert[letter, q]:
            return False
    return True


@jit(inline=True)
def _unbeaten(nodes, supers, start):
    """T' = the states of ``nodes`` minus U' (``nodes`` in a state whose superset run starts at or after
    ``start`` dropped); whether any is left."""
    left = False
    for p in range(nodes.shape[0]):
        if nodes[p] != NONE:
            if supers[p] < start:
                left = True
            else:
                nodes[p] = NONE
    return left


@jit(inline=True)
def _root(roots, n_roots, node, pos, key, limit):
    """``node`` chosen at ``pos``: written as the next root; -1 when ``roots`` is full."""
    root_node, root_emit, root_key, root_limit, _ = roots
    if n_roots >= root_node.shape[0]:
        return -1
    root_node[n_roots], root_emit[n_roots], root_key[n_roots], root_limit[n_roots] = node, pos, key, limit
    return n_roots + 1


@jit
def _step_ranked(moves, letter, pos, key, limit, last_first, groups, n, new, latest, arena, fresh, roots, n_roots):
    """NEXT or LAST (``last_first``) reads one event: ``groups[:n]`` (classes, best first) step to ``new``.
    Returns (status, the next free node, the number of classes, the number of roots)."""
    g_start, g_node, _ = groups
    n_start, n_node, _ = new
    n_states = g_node.shape[1]
    sink = n_states - 1
    alive = 0
    for c in range(n):
        if not key - g_start[c] > limit:
            alive += 1
    # each live class's •-successors and ◦-successors, in the strategy's order
    a = 0
    for c in range(n):
        start = g_start[c]
        if key - start > limit:
            continue
        km, ks = (a, alive + a) if last_first else (2 * a, 2 * a + 1)
        a += 1
        n_start[km], n_start[ks] = min(start, key), start
        n_node[km, :] = NONE
        if _inert(moves[7], letter, g_node[c], g_node[c], NONE):  # the class stays as it is, marking nothing
            n_node[ks, :] = g_node[c, :]
            continue
        n_node[ks, :] = NONE
        for q in range(n_states):
            if g_node[c, q] != NONE:
                fresh = _read(moves, letter, q, g_node[c, q], pos, key, n_node[km], n_node[ks], arena, fresh)
                if fresh < 0:
                    return ARENA_FULL, 0, 0, n_roots
    # a state keeps the first run that reaches it, and later ones that start later (windows); the first
    # class reaching the sink is the output
    latest[:] = -np.inf
    kept = 0
    output = NONE
    for k in range(2 * alive):
        start = n_start[k]
        rest = False
        for p in range(n_states):
            node = n_node[k, p]
            if node == NONE:
                continue
            if latest[p] < start:
                latest[p] = start
                if p == sink:
                    if output == NONE:
                        output = node
                    n_node[k, p] = NONE
                else:
                    rest = True
            else:
                n_node[k, p] = NONE
        if rest:
            if kept < k:
                n_start[kept] = start
                n_node[kept, :] = n_node[k, :]
            kept += 1
    if output != NONE:
        n_roots = _root(roots, n_roots, output, pos, key, limit)
        if n_roots < 0:
            return ROOTS_FULL, fresh, 0, 0
    return OK, fresh, kept, n_roots


@jit
def _step_max(
    moves, letter, pos, key, limit, groups, n, new, u_mark, u_skip, t_mark, t_skip, arena, fresh, roots, n_roots
):
    """MAX reads one event: the lists ``groups[:n]`` step to ``new`` (lists with the same start, T and U
    merged). Returns (status, the next free node, the number of lists, the number of roots)."""
    mark_start, mark_count, mark_dst, _, skip_start, skip_count, skip_dst, _, final, ends = moves
    g_start, g_node, g_sup = groups
    n_states = g_node.shape[1]
    n_new = 0
    for g in range(n):
        start = g_start[g]
        if key - start > limit:
            continue
        if _inert(moves[7], letter, g_node[g], g_sup[g], -np.inf):
            # every run stays where it is: the • move has nothing, the ◦ move gives the list back (its T
            # states have no superset run starting at or after its start: ``_add`` kept them so)
            status, fresh, n_new = _add(new, n_new, start, g_node[g], g_sup[g], ends, arena, fresh)
            if status != OK:
                return status, fresh, 0, n_roots
            continue
        started = min(start, key)
        # the superset runs' moves: u_mark (those marking j), u_skip (every one), the latest start per state
        u_mark[:] = -np.inf
        u_skip[:] = -np.inf
        t_mark[:] = NONE
        t_skip[:] = NONE
        for q in range(n_states):
            s = g_sup[g, q]
            if s == -np.inf:
                continue
            first_mark = mark_start[letter, q]
            for m in range(first_mark, first_mark + mark_count[letter, q]):
                u_mark[mark_dst[m]] = max(u_mark[mark_dst[m]], s)
            first_skip = skip_start[letter, q]
            for m in range(first_skip, first_skip + skip_count[letter, q]):
                u_skip[skip_dst[m]] = max(u_skip[skip_dst[m]], s)
        for p in range(n_states):
            u_skip[p] = max(u_skip[p], u_mark[p])
        # • move: C ∪ {j} (``t_mark``); ◦ move: C stays (``t_skip``)
        for q in range(n_states):
            if g_node[g, q] != NONE:
                fresh = _read(moves, letter, q, g_node[g, q], pos, key, t_mark, t_skip, arena, fresh)
                if fresh < 0:
                    return ARENA_FULL, 0, 0, n_roots
        # the • move's supersets are the superset runs that mark j too; the ◦ move's every superset run,
        # and C's runs that mark j
        for p in range(n_states):
            if t_mark[p] != NONE:
                u_skip[p] = max(u_skip[p], started)
        if _unbeaten(t_mark, u_mark, started):
            status, fresh, n_new = _add(new, n_new, started, t_mark, u_mark, ends, arena, fresh)
            if status != OK:
                return status, fresh, 0, n_roots
            if pos >= 0:
                beaten = False
                for f in range(n_states):
                    if final[f] and u_mark[f] != -np.inf and key - u_mark[f] <= limit:
                        beaten = True
                if not beaten:
                    for p in range(n_states):
                        if final[p] and t_mark[p] != NONE:
                            n_roots = _root(roots, n_roots, t_mark[p], pos, key, limit)
                            if n_roots < 0:
                                return ROOTS_FULL, fresh, 0, 0
        if _unbeaten(t_skip, u_skip, start):
            status, fresh, n_new = _add(new, n_new, start, t_skip, u_skip, ends, arena, fresh)
            if status != OK:
                return status, fresh, 0, n_roots
    return OK, fresh, n_new, n_roots


@jit
def _add(new, n_new, start, nodes, supers, ends, arena, fresh):
    """The list (start, T = the states of ``nodes``, U = ``supers`` but ``ends``) merged into ``new[:n_new]``:
    into the one with the same key (a union per state), else a new one. Returns (status, the next free
    node, the number of lists)."""
    n_start, n_node, n_sup = new
    n_states = n_node.shape[1]
    capacity = arena[0].shape[0]
    for h in range(n_new):
        if n_start[h] != start:
            continue
        same = True
        for p in range(n_states):
            if (n_node[h, p] == NONE) != (nodes[p] == NONE) or n_sup[h, p] != (-np.inf if ends[p] else supers[p]):
                same = False
                break
        if same:
            for p in range(n_states):
                if nodes[p] != NONE:
                    if fresh + UNION_ROOM > capacity:
                        return ARENA_FULL, fresh, n_new
                    n_node[h, p], fresh = _union(arena, fresh, n_node[h, p], nodes[p])
                    if fresh < 0:
                        return ARENA_FULL, fresh, n_new
            return OK, fresh, n_new
    n_start[n_new] = start
    for p in range(n_states):
        n_node[n_new, p] = nodes[p]
        n_sup[n_new, p] = -np.inf if ends[p] else supers[p]
    return OK, fresh, n_new + 1
