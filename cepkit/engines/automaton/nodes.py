"""Persistent complex-event nodes: the data structure of Algorithm 1 ([CEL] §6-7 "Data structure").

A node stands for a set of complex events, each a path down to the sink ⊥:

- ``Ext(pos, var, child)`` (the paper's "add node"): every event of ``child`` extended by position
  ``pos``, bound to variable ``var``;
- ``Union(left, right)`` (the paper's "append"): the events of both.

Nodes are never changed once made (no shared mutable lists: [CEL] §7.2's `append` rewrites a list's last cell, safe only under I/O-determinism), so handing a
list of runs to another state is O(1). They live in an **arena** of parallel numpy arrays so the compiled
kernel can make them; node 0 is ⊥. Each node also records ``start``, the largest *start key* among its
events (the key of an event's first position: its time for a time window, its index in the sub-stream
for an EVENTS window). An event of a node with ``now − start > limit`` cannot fit the window, and neither
can any other event of that node: evaluation drops such runs, enumeration never enters such nodes, and
``compact`` reclaims them, so memory is bounded by the window rather than by the stream (the max-start
pruning of tECS and CORE, later work beyond [CEL]). Unions keep the child with the larger start on the
left, so expired events sit at the right end of union chains and are cut off in one test.

Enumeration is a depth-first walk from a root: each path to ⊥ is one complex event, and every node it
enters leads to at least one output. ``put_union`` keeps left spines short (at most 2 unions without a
window, at most 3 under one: it places an older list lower, ``_place``), so between two outputs the walk
takes one pop and at most 3 steps per position it writes: constant delay ([CEL] Algorithm 3's claim; ``cursor_fill`` is the walk a given number of outputs at a time). To write the complex events one event completed
in output order, the batch run walks the same paths forward, from their first positions (``_forward_group``).
"""

from __future__ import annotations

import mmap
from collections import namedtuple
from typing import Optional

import numpy as np

from ..compiled import jit, prefetch

BOTTOM = 0  # the sink ⊥: the empty complex event
NONE = -1  # no node (an empty list of runs)
UNION = -2  # ``pos`` of a union node
SINK = -1  # ``pos`` of ⊥

Arena = namedtuple("Arena", "pos var left right start used")
Arena.__doc__ = "Parallel node arrays; ``used[0]`` nodes are allocated."

CAPACITY = 1 << 16  # nodes of a new arena (it doubles while compaction leaves it more than half full)


HUGE_PAGE = 1 << 21  # a transparent huge page of x86-64 and arm64 Linux


def node_array(length: int, dtype) -> np.ndarray:
    """An uninitialised array for an arena or a walk: past a huge page, in memory aligned to one and marked
    for transparent huge pages (``madvise``; where the system allows them), so a walk over a large arena
    takes one TLB entry per 2 MB instead of one per 4 KB page (docs/automaton-engine.md, "Measured": with
    4 KB pages a few calls in 100,000 of the cursor took 100-600 ns over arenas past the L2 cache)."""
    dtype = np.dtype(dtype)
    size = length * dtype.itemsize
    advise = getattr(mmap, "MADV_HUGEPAGE", None)
    if size < HUGE_PAGE or advise is None:
        return np.empty(length, dtype)
    room = -(-size // HUGE_PAGE) * HUGE_PAGE + HUGE_PAGE  # a whole number of huge pages, and one to align
    memory = mmap.mmap(-1, room, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        memory.madvise(advise)
    except OSError:  # pragma: no cover - a kernel without transparent huge pages: 4 KB pages then
        pass
    raw = np.frombuffer(memory, np.uint8)  # holds ``memory``: unmapped when the last view goes
    skip = -raw.ctypes.data % HUGE_PAGE
    return raw[skip : skip + size].view(dtype)


def new_arena(capacity: Optional[int] = None) -> Arena:
    capacity = capacity or CAPACITY
    arena = Arena(
        node_array(capacity, np.int64),
        node_array(capacity, np.int32),
        node_array(capacity, np.int32),
        node_array(capacity, np.int32),
        node_array(capacity, np.float64),
        np.zeros(1, np.int64),
    )
    arena.pos[BOTTOM] = SINK
    arena.var[BOTTOM] = -1
    arena.left[BOTTOM] = NONE
    arena.right[BOTTOM] = NONE
    arena.start[BOTTOM] = np.inf
    arena.used[0] = 1
    return arena


@jit(inline=True)
def put_ext(node_pos, node_var, node_left, node_right, node_start, at, pos, var, child, key):
    """Ext(pos, var, child) written at ``at`` (the caller checked the room); ``key`` is pos's start key."""
    node_pos[at], node_var[at], node_left[at], node_right[at] = pos, var, child, NONE
    node_start[at] = min(key, node_start[child])
    return at


@jit(inline=True)
def spine(node_var, node):
    """The unions on ``node``'s left spine: the steps from it to its first Ext node (or ⊥) going left. A
    union's ``var`` holds ``-1 − spine`` (an Ext's holds its variable, ⊥'s -1): one array read."""
    return max(0, -1 - node_var[node])


SPINE = 2  # the left spine ``put_union`` keeps a union within when it can (the bound without a window)
DESCENT = 4  # the unions ``_place`` goes down, at least, looking for room before it may join one spine longer
UNION_ROOM = DESCENT + 1  # the nodes a caller of ``put_union`` has free (``_place`` asks for more by NONE)


@jit(inline=True)
def put_pair(node_pos, node_var, node_left, node_right, node_start, at, a, b):
    """Union(a, b) written at ``at`` (the caller checked the room); returns ``at``. The child with the later
    start goes first (window pruning), on equal starts the one with the shorter left spine (the
    constant-delay bound, docs/automaton-engine.md)."""
    ka, kb = node_start[a], node_start[b]
    if ka < kb or (ka == kb and spine(node_var, b) < spine(node_var, a)):
        a, b, ka = b, a, kb
    node_pos[at], node_var[at], node_left[at], node_right[at] = UNION, -2 - spine(node_var, a), a, b
    node_start[at] = ka
    return at


@jit(inline=True)
def put_union(node_pos, node_var, node_left, node_right, node_start, at, a, b):
    """The union of lists ``a`` and ``b`` from ``at`` on; returns its node, the last written, or NONE when
    the arena has no room for it (``_place`` may need more than the ``UNION_ROOM`` nodes the caller
    checked: the caller then makes room and calls again). ``put_pair``'s Union(a, b) when its spine stays
    within ``SPINE``, else ``_place`` (docs/automaton-engine.md, "Under a window")."""
    ka, kb = node_start[a], node_start[b]
    if ka < kb:
        a, b, ka, kb = b, a, kb, ka
    if spine(node_var, a) >= SPINE and (ka > kb or spine(node_var, b) >= SPINE):
        return _place(node_pos, node_var, node_left, node_right, node_start, at, a, b)
    return put_pair(node_pos, node_var, node_left, node_right, node_start, at, a, b)


@jit(inline=True)
def _step(node_var, node_right, node_start, node, other):
    """One step of ``_place``'s descent: ``node ∪ other`` (``node`` a union starting no earlier than
    ``other``) is Union(node.left, node.right ∪ other); returns the later and the earlier of node.right
    and other (on equal starts the one with the shorter spine first)."""
    right = node_right[node]
    ko, kr = node_start[other], node_start[right]
    if ko > kr or (ko == kr and spine(node_var, other) < spine(node_var, right)):
        return other, right
    return right, other


@jit(nrt=False)
def _place(node_pos, node_var, node_left, node_right, node_start, at, a, b):
    """Union(a, b) for a list ``a`` with a full spine (``SPINE`` or ``SPINE + 1``) and a list ``b`` that
    starts no later, with no spine past ``SPINE + 1`` (docs/automaton-engine.md, "Under a window"):
    Union(a.left, a.right ∪ b) (a.left starts as late as a and its spine is one less, so the copy's
    spine is a's), where a.right ∪ b is the same step again on the later of the two while it has no room,
    one union down each time, until the later one has a spine under ``SPINE`` (joined by ``put_pair``:
    spine ≤ ``SPINE``). After ``DESCENT`` steps without room the union falls back to one spine longer
    than ``SPINE``, never more: Union(a, b) at the top when a's spine is ``SPINE`` (the copies are
    dropped), else the join of the first later list further down whose spine is ``SPINE``; so past
    ``DESCENT`` the descent goes on only through unions of spine ``SPINE + 1``, and only under a list
    whose own spine is ``SPINE + 1``. A first pass finds the depth d; the copies are written at ``at + d``
    (the top) down to ``at + 1``, the join at ``at``, so every child is older than its parent; returns
    ``at + d``, or NONE when the arena has no room for d + 1 nodes. Not inlined: the kernel inlines
    ``put_union`` at every union it makes, and this is the rare case."""
    node, other, depth = a, b, 0
    while True:
        node, other = _step(node_var, node_right, node_start, node, other)
        depth += 1
        room = spine(node_var, node)
        if room < SPINE:
            break
        if depth >= DESCENT:
            if spine(node_var, a) == SPINE:  # the fallback at the top: Union(a, b), spine SPINE + 1
                return put_pair(node_pos, node_var, node_left, node_right, node_start, at, a, b)
            if room == SPINE:  # the fallback here: Union(node, other), spine SPINE + 1
                break
    if at + depth + 1 > node_pos.shape[0]:
        return NONE
    node, other = a, b
    for level in range(depth):
        copy = at + depth - level
        left = node_left[node]
        node_pos[copy], node_var[copy], node_left[copy], node_right[copy] = (
            UNION,
            -2 - spine(node_var, left),
            left,
            copy - 1,
        )
        node_start[copy] = node_start[node]
        node, other = _step(node_var, node_right, node_start, node, other)
    put_pair(node_pos, node_var, node_left, node_right, node_start, at, node, other)
    return at + depth


Cursor = namedtuple("Cursor", "node depth path_pos path_var state")
Cursor.__doc__ = (
    "A resumable depth-first walk (``cursor_open``, ``cursor_fill``): pending right children and the "
    "path depth each continues at; the path (positions and variables, written from the arrays' end "
    "backwards: the path's last position at the end); ``state``: (pending children, the depth the last "
    "complex event's new part starts at, its size)."
)


def new_cursor(arena: Arena, cursor: Optional[Cursor] = None) -> Cursor:
    """``cursor`` if it has room for walks in ``arena`` (a path enters a node at most once, and at most one
    pending child per node of a path), else a new one."""
    bound = int(arena.used[0]) + 1
    if cursor is not None and len(cursor.node) >= bound:
        return cursor
    bound = max(bound, 2 * len(cursor.node) if cursor is not None else 64)
    return Cursor(
        node_array(bound, np.int32),
        node_array(bound, np.int64),
        node_array(bound, np.int64),
        node_array(bound, np.int32),
        np.zeros(3, np.int64),
    )


@jit(inline=True)
def cursor_open(arena, cursor, root, key, limit):
    """Start walking the complex events of ``root`` that fit the window (``key − start ≤ limit``)."""
    stack_node, stack_depth, _, _, state = cursor
    state[0], state[1], state[2] = 0, 0, 0
    if root != NONE and key - arena[4][root] <= limit:
        stack_node[0], stack_depth[0] = root, 0
        state[0] = 1


ALL = 1 << 62  # ``cursor_fill``'s cap for every complex event left
NODES_AHEAD = 128  # ``cursor_fill`` prefetches the arena this many nodes below the one it pops (6-20 outputs ahead)
SLOTS_AHEAD = 16  # and the path and the stack this many entries ahead


@jit
def cursor_fill(arena, cursor, key, limit, cap, copy, emit, out_pos, out_var, out_end, out_emit, counts):
    """The next ``cap`` complex events of the walk ``cursor_open`` started (``ALL``: all that are left). With
    ``copy`` each is written to the outputs as ``enumerate_roots`` writes one (``counts[0]`` positions and
    ``counts[1]`` events written so far); without, the last is left in the path: its n = ``state[2]``
    positions and variables in ``path_pos[-n:]``, ``path_var[-n:]``, ascending, and ``state[1]``
    says where its new part starts (``path_pos[-n:len − state[1]]`` differs from the event before).
    Returns how many were walked, -1 when the outputs are full (the last one walked is not written).
    A batch per call: the loop over complex events is here, not in an inlined step, since an inlined
    function with a loop and array arguments made numba count references on each of them per call (~6x
    the whole enumeration of A+ a ; B b over A^16 B).

    The delay: popping the pending child is one step; going down from it, every Ext node met is a position
    written, and between two of them (or before ⊥) at most the left spine of one node, which
    ``put_union`` keeps short (docs/automaton-engine.md, "Constant-delay enumeration"). Every node entered
    fits the window (a union's left child starts at least as late as it), so it leads to an output."""
    node_pos, node_var, node_left, node_right, node_start, _ = arena
    stack_node, stack_depth, path_pos, path_var, state = cursor
    end = path_pos.shape[0]
    top = end - 1
    sp = state[0]
    n_pos, n_events = counts[0], counts[1]
    walked = 0
    fresh, depth = state[1], state[2]  # kept in registers: a store per event kept numba's loops from it
    # the window test written here (an inlined helper taking the stack arrays cost a third of the walk), and
    # not made without a window (its read of the child's start was another third)
    unbounded = limit == np.inf
    while sp > 0 and walked < cap:
        sp -= 1
        node, depth = stack_node[sp], stack_depth[sp]
        fresh = depth
        # the walk goes down the arena by a few nodes per output and writes the path backwards: what it will
        # read next is asked for ahead, so that its first access to a page is not on the walk's path
        ahead = max(node - NODES_AHEAD, 0)
        prefetch(node_pos, ahead)
        prefetch(node_var, ahead)
        prefetch(node_left, ahead)
        prefetch(node_right, ahead)
        if not unbounded:
            prefetch(node_start, ahead)
        slot = max(top - depth - SLOTS_AHEAD, 0)
        prefetch(path_pos, slot)
        prefetch(path_var, slot)
        slot = min(sp + SLOTS_AHEAD, stack_node.shape[0] - 1)
        prefetch(stack_node, slot)
        prefetch(stack_depth, slot)
        while node != BOTTOM:
            if node_pos[node] == UNION:  # the pending right child, when it fits the window
                right = node_right[node]
                if unbounded or key - node_start[right] <= limit:
                    stack_node[sp], stack_depth[sp] = right, depth
                    sp += 1
            else:
                path_pos[top - depth], path_var[top - depth] = node_pos[node], node_var[node]
                depth += 1
            node = node_left[node]
        walked += 1
        if copy:
            if n_pos + depth > out_pos.shape[0] or n_events >= out_end.shape[0]:
                walked = -1
                break
            for k in range(depth):
                out_pos[n_pos + k] = path_pos[end - depth + k]
                out_var[n_pos + k] = path_var[end - depth + k]
            n_pos += depth
            out_end[n_events], out_emit[n_events] = n_pos, emit
            n_events += 1
    state[0], state[1], state[2] = sp, fresh, depth
    counts[0], counts[1] = n_pos, n_events
    return walked


@jit
def enumerate_cursor(
    arena, roots, keys, limits, emits, first, last, out_pos, out_var, out_end, out_emit, counts, cursor
):
    """``enumerate_roots`` without order, the constant-delay mode (``enumeration="constant-delay"``): each
    root's complex events written by ``cursor_fill``. Returns the first root not written because a buffer
    is full (``last`` when all are), nothing of its group (the roots with its ``emits``) left behind;
    ``counts`` as ``enumerate_roots``'s."""
    group_root, group_pos, group_events = first, counts[0], counts[1]
    for r in range(first, last):
        if r > first and emits[r] != emits[r - 1]:
            group_root, group_pos, group_events = r, counts[0], counts[1]
        cursor_open(arena, cursor, roots[r], keys[r], limits[r])
        if (
            cursor_fill(
                arena, cursor, keys[r], limits[r], ALL, True, emits[r], out_pos, out_var, out_end, out_emit, counts
            )
            < 0
        ):
            counts[0], counts[1] = group_pos, group_events
            return group_root
    return last


SMALL = 32  # a group with fewer events is sorted by keys (cheaper there than collecting it to walk forward)


@jit
def enumerate_roots(
    arena,
    roots,
    keys,
    limits,
    emits,
    first,
    last,
    out_pos,
    out_var,
    out_end,
    out_emit,
    counts,
    cap,
    order,
    spare,
    forward,
    count_only,
):
    """Write the complex events of ``roots[first:last]`` that fit their window (``keys[r] − start ≤
    limits[r]``), at most ``cap`` per root without ``order`` (0: all), each as positions and variables in order.

    ``counts`` holds (positions written, events written, groups left unsorted, sorted groups ending before
    the sorted group written before them, the last position of that one, and whether ``_walk_back`` handed
    a group back); ``out_end[m]`` is where event m ends in ``out_pos``, ``out_emit[m]`` its root's ``emits``. With
    ``order``, the events of consecutive roots with the same ``emits`` (the lists one event completed: one
    key and limit) are written in docs/language.md §10.2 order: walked forward from their first positions
    (``_forward_group``, with ``forward``, room for an arena at least this one's size), or enumerated
    backwards and sorted by keys (``_walk_back``): a group the forward walk cannot order, and the groups
    after one of fewer than ``SMALL`` events until one of at least that many (walking forward costs a
    collection per group, which small groups do not repay), unless the keys could not sort a small group
    (a span past a word: a wide window), after which every group of the call is walked forward (trying
    the keys first cost each such group a wasted backward walk: 3-5x on the filtered W=100 s rows); a group
    neither orders is moved as enumerated and counted.
    Returns the first root not written because a buffer is full (``last`` when all are), leaving nothing
    of its group behind. ``count_only`` writes nothing (pass ``order`` False) and only counts: the room
    the roots need.

    ``_walk_back``'s flags are passed typed (``np.bool_``, ``np.int64``), not as literals: numba compiles
    a function once per literal value it is called with (three copies of ``_walk_back``, ~3 s of a first
    call's compilation).
    """
    if not order:
        return _walk_back(
            arena,
            roots,
            keys,
            limits,
            emits,
            first,
            last,
            out_pos,
            out_var,
            out_end,
            out_emit,
            counts,
            cap,
            np.bool_(False),
            spare,
            count_only,
            np.int64(0),
            np.bool_(True),
            forward,
        )
    keyed = False
    forward_only = False  # the keys could not sort a small group: they will not sort its neighbours either
    group_root = first
    while group_root < last:
        if keyed:
            stop = _walk_back(
                arena,
                roots,
                keys,
                limits,
                emits,
                group_root,
                last,
                out_pos,
                out_var,
                out_end,
                out_emit,
                counts,
                np.int64(0),
                np.bool_(True),
                spare,
                np.bool_(False),
                np.int64(SMALL),
                np.bool_(False),
                forward,
            )
            if not counts[5]:  # it finished, or a buffer filled up (``stop`` says which)
                return stop
            group_root = stop  # a big group, or one the keys cannot sort: forward
        group_end = group_root + 1
        while group_end < last and emits[group_end] == emits[group_root]:
            group_end += 1
        n_events = counts[1]
        done = _forward_group(
            arena,
            roots,
            keys[group_root],
            limits[group_root],
            emits[group_root],
            group_root,
            group_end,
            out_pos,
            out_var,
            out_end,
            out_emit,
            counts[0],
            n_events,
            spare,
            forward,
        )
        if done < 0:
            return group_root
        if done > 0:
            counts[0], counts[1] = out_end[n_events + done - 1], n_events + done
            _follow(counts, out_pos[counts[0] - 1])
        elif (
            _walk_back(
                arena,
                roots,
                keys,
                limits,
                emits,
                group_root,
                group_end,
                out_pos,
                out_var,
                out_end,
                out_emit,
                counts,
                np.int64(0),
                np.bool_(True),
                spare,
                np.bool_(False),
                np.int64(0),
                np.bool_(True),
                forward,
            )
            < group_end
        ):
            return group_root
        small = counts[1] - n_events < SMALL
        forward_only = forward_only or (keyed and small)  # (keyed here: the keyed walk handed it back)
        keyed = small and not forward_only
        group_root = group_end
    return last


@jit
def _walk_back(
    arena,
    roots,
    keys,
    limits,
    emits,
    first,
    last,
    out_pos,
    out_var,
    out_end,
    out_emit,
    counts,
    cap,
    order,
    spare,
    count_only,
    big,
    settle,
    forward,
):
    """``enumerate_roots`` by depth-first walks from the roots, each match read from its last position
    backwards; with ``order``, each group is enumerated into ``spare`` and moved to the outputs sorted
    by keys (``_write_group``). A group of ``big`` events (0: any size), or one the keys cannot sort
    unless ``settle`` (then it is moved as it is, and counted), is handed back: nothing of it written,
    its first root returned. ``counts[5]`` is 1 when it handed a group back, 0 when it finished or a
    buffer filled up (then the root returned is before ``last``)."""
    node_pos, node_var, node_left, node_right, node_start, node_used = arena
    # a path enters a node at most once, so neither the path nor the pending right children outgrow the
    # arena: sized once (re-binding a growing array inside the loop made numba's walk several times slower).
    # With ``forward`` room for this arena, its per-group arrays (no group of ``_forward_group`` is open
    # here): allocating them per call cost more than a push's whole walk (an arena's worth is past malloc's
    # mmap threshold: a system call and page faults per call)
    bound = node_used[0] + 1
    # with ``order``, each prefix's sort key (``_write_group``) relative to the path's first (latest)
    # position, made on the way down rather than re-read from the positions: -1 once it does not fit a word.
    # Only the empty prefix's is read before it is written (not zeroed: this runs per group, sized by the arena)
    if forward.child.shape[0] >= bound:
        stack_node, stack_depth, path_pos, path_var = forward.child, forward.stack, forward.path_pos, forward.path_var
        path_key = forward.stack_next
    else:
        stack_node = np.empty(bound, np.int32)
        stack_depth = np.empty(bound, np.int64)
        path_pos = np.empty(bound, np.int64)
        path_var = np.empty(bound, np.int32)
        path_key = np.empty(bound + 1, np.int64)
    path_key[0] = 0
    spare_pos, spare_var, spare_key = spare[0], spare[1], spare[2]
    n_pos, n_events = counts[0], counts[1]
    group_root, group_pos, group_events = first, n_pos, n_events
    for r in range(first, last):
        if r > first and emits[r] != emits[r - 1]:
            if not _close_group(
                out_pos,
                out_var,
                out_end,
                out_emit,
                group_events,
                n_events,
                group_pos,
                n_pos,
                order,
                settle,
                spare,
                counts,
            ):
                counts[0], counts[1], counts[5] = group_pos, group_events, 1
                return group_root
            group_root, group_pos, group_events = r, n_pos, n_events
        key, limit = keys[r], limits[r]
        unbounded = limit == np.inf
        node = roots[r]
        if key - node_start[node] > limit:
            continue
        written = 0
        depth = 0
        sp = 0
        while True:
            # down the left children to the sink, keeping each right child that fits for later
            while node != BOTTOM:
                if node_pos[node] == UNION:  # the pending right child, when it fits (as ``cursor_fill``)
                    right = node_right[node]
                    if unbounded or key - node_start[right] <= limit:
                        stack_node[sp], stack_depth[sp] = right, depth
                        sp += 1
                    node = node_left[node]
                else:
                    p = node_pos[node]
                    path_pos[depth], path_var[depth] = p, node_var[node]
                    if order:
                        bit = path_pos[0] - p
                        prefix = path_key[depth]
                        path_key[depth + 1] = prefix | (1 << bit) if prefix >= 0 and 0 <= bit <= 62 else -1
                    depth += 1
                    node = node_left[node]
            if not count_only:
                if n_pos + depth > out_pos.shape[0] or n_events >= out_end.shape[0]:
                    counts[0], counts[1], counts[5] = group_pos, group_events, 0
                    return group_root
                if big and n_events - group_events == big:
                    counts[0], counts[1], counts[5] = group_pos, group_events, 1
                    return group_root
                if order:
                    spare_key[n_events - group_events] = path_key[depth]
                    at = n_pos - group_pos
                    for k in range(depth):
                        spare_pos[at + k] = path_pos[depth - 1 - k]
                        spare_var[at + k] = path_var[depth - 1 - k]
                else:
                    for k in range(depth):
                        out_pos[n_pos + k] = path_pos[depth - 1 - k]
                        out_var[n_pos + k] = path_var[depth - 1 - k]
                out_end[n_events] = n_pos + depth
                out_emit[n_events] = emits[r]
            n_pos += depth
            n_events += 1
            written += 1
            if sp == 0 or (cap > 0 and written >= cap):
                break
            sp -= 1
            node, depth = stack_node[sp], stack_depth[sp]
    if not _close_group(
        out_pos, out_var, out_end, out_emit, group_events, n_events, group_pos, n_pos, order, settle, spare, counts
    ):
        counts[0], counts[1], counts[5] = group_pos, group_events, 1
        return group_root
    counts[0], counts[1], counts[5] = n_pos, n_events, 0
    return last


@jit(inline=True)
def _close_group(out_pos, out_var, out_end, out_emit, first, last, start, end, order, settle, spare, counts):
    """With ``order``, the events ``first..last-1`` (positions ``start..end-1``) of one group, enumerated
    into ``spare``, moved to the outputs (``_write_group``) and counted in ``counts``; False when the keys
    could not sort them and ``settle`` is not set (``counts`` unchanged)."""
    if not order:
        return True
    if _write_group(out_pos, out_var, out_end, out_emit, first, last, start, spare):
        if last > first:
            _follow(counts, out_pos[end - 1])
        return True
    if settle:
        counts[2] += 1
    return settle


@jit(inline=True)
def _follow(counts, hi):
    """Count a sorted group ending at ``hi`` when it comes after one ending later (``enumerate_roots``'s
    ``counts``)."""
    if hi < counts[4]:
        counts[3] += 1
    counts[4] = hi


Forward = namedtuple("Forward", "seen child pos var last head stack stack_next path_pos path_var group tail")
Forward.__doc__ = (
    "Room for ``_forward_group``: per arena node the group that last reached it and its local id "
    "(``group << 32 | id``); per local id its child list, position, variable, whether it ends a "
    "match and its first successor; a stack and a path; ``group[0]`` numbers the groups walked."
)


def forward_room(capacity: int) -> Forward:
    """``Forward`` arrays for arenas of up to ``capacity`` nodes (a group's local ids, 0 the start, fit in
    ``capacity + 1``; a stack, down a Union chain or forward, holds at most one entry per node of a path,
    and one more). Made once and kept while the arena does not grow: the walk only reads what it wrote
    for the group it walks (a node's ``seen`` names the group that gave it its local id)."""
    return Forward(
        np.full(capacity, -1, np.int64),
        np.empty(capacity + 1, np.int32),
        np.empty(capacity + 1, np.int64),
        np.empty(capacity + 1, np.int32),
        np.empty(capacity + 1, np.bool_),
        np.empty(capacity + 1, np.int64),
        np.empty(capacity + 2, np.int64),
        np.empty(capacity + 2, np.int64),
        np.empty(capacity + 1, np.int64),
        np.empty(capacity + 1, np.int32),
        np.zeros(1, np.int64),
        np.empty(capacity + 1, np.int64),
    )


@jit(inline=True)
def _forward_group(
    arena, roots, key, limit, emit, first, last, out_pos, out_var, out_end, out_emit, n_pos, n_events, spare, forward
):
    """Write the events of roots ``first..last-1`` (one group: one emit position, key and limit) at
    ``n_pos``/``n_events``, in docs/language.md §10.2 order. Returns how many were written; 0 when this walk
    cannot order them (then nothing is written); -1 when the outputs are full.

    The walk from a root reads a match from its last position backwards, but docs/language.md §10.2 orders a group's
    matches (all ending at one position) as their ascending position tuples. So the group's part of the
    arena is collected once: the Ext nodes its roots reach inside the window (through Union chains), per
    node the nodes that follow it towards the root, in ascending position, and the start nodes (⊥ in
    their child list); it is small (the group's nodes in the window) while its paths are many. Walked
    forward from the starts, the matches come out in order, as long as no two successors of one node (or
    two starts) share a position: those would be a tie (one tuple twice, ordered by bindings) or two
    sub-walks to interleave. Then, for a group whose matches do not all end at one position and for an
    empty match (⊥ in a root's list): 0. Every edge found lies on a match, so the edges (kept in
    ``spare``, as long as ``out_pos``) fit whenever the group does; when not, 0 too."""
    node_pos, node_var, node_left, node_right, node_start, _ = arena
    seen, child, local_pos, local_var, is_last, head, stack, stack_next, path_pos, path_var, group, tail = forward
    group[0] += 1
    g = group[0]
    following, targets = spare[0], spare[1]  # per edge: the next edge of its list, the node it leads to
    is_last[0], head[0] = False, -1  # local id 0 precedes every match: its list holds the starts
    n_local = 1
    n_edges = 0
    hi = -1
    expanding = -1  # the local id whose child list is walked; -1 while walking the roots' lists
    r = first
    while True:
        if expanding < 0 and r < last:
            tree = roots[r]
            r += 1
            if key - node_start[tree] > limit:
                continue
        else:
            expanding = 1 if expanding < 0 else expanding + 1
            if expanding >= n_local:
                break
            tree = child[expanding]
        # the list's Ext nodes (and ⊥) inside the window, left children first: later nodes are met first
        # (and expanded first), so each edge mostly goes to the front of its ascending list
        stack[0] = tree
        sp = 1
        while sp > 0:
            sp -= 1
            node = stack[sp]
            if node == BOTTOM:
                if expanding < 0:
                    return 0  # an empty match
                source = 0
            elif node_pos[node] == UNION:
                right = node_right[node]
                if key - node_start[right] <= limit:
                    stack[sp] = right
                    sp += 1
                stack[sp] = node_left[node]
                sp += 1
                continue
            else:
                source = seen[node]
                if source >> 32 == g:
                    source &= 0xFFFFFFFF
                else:
                    source = n_local
                    seen[node] = (g << 32) | source
                    child[source] = node_left[node]
                    local_pos[source], local_var[source] = node_pos[node], node_var[node]
                    is_last[source], head[source] = False, -1
                    n_local += 1
                if expanding < 0:
                    if is_last[source] or (hi >= 0 and local_pos[source] != hi):
                        return 0  # a match twice, or matches ending at two positions
                    is_last[source] = True
                    hi = local_pos[source]
                    continue
            # the edge source -> expanding, into source's list in ascending position: after its last edge
            # in one step when it comes after it (successors met in ascending position), else from its
            # head (met in descending position, the usual order: at the front)
            if n_edges == targets.shape[0]:
                return 0
            p = local_pos[expanding]
            before = -1
            at = head[source]
            if at >= 0 and local_pos[targets[tail[source]]] < p:
                before, at = tail[source], -1
            while at >= 0 and local_pos[targets[at]] < p:
                before, at = at, following[at]
            if at >= 0 and local_pos[targets[at]] == p:
                return 0  # two successors on one position
            targets[n_edges], following[n_edges] = expanding, at
            if before < 0:
                head[source] = n_edges
            else:
                following[before] = n_edges
            if at < 0:
                tail[source] = n_edges
            n_edges += 1
    # forward, depth first: the node entered at stack level sp + 1 is the match's (sp + 1)-th position. A
    # list's node where matches end has the largest position: it is the list's last, and so is its match
    # (after all those through the other successors), written as the walk leaves the list
    written = 0
    stack[0], stack_next[0] = 0, head[0]
    sp = 0
    while sp >= 0:
        e = stack_next[sp]
        if e >= 0:
            t = targets[e]
            if not is_last[t]:
                stack_next[sp] = following[e]
                path_pos[sp], path_var[sp] = local_pos[t], local_var[t]
                sp += 1
                stack[sp], stack_next[sp] = t, head[t]
                continue
            if n_pos + sp + 1 > out_pos.shape[0] or n_events >= out_end.shape[0]:
                return -1
            for k in range(sp):
                out_pos[n_pos + k] = path_pos[k]
                out_var[n_pos + k] = path_var[k]
            out_pos[n_pos + sp], out_var[n_pos + sp] = local_pos[t], local_var[t]
            n_pos += sp + 1
            out_end[n_events], out_emit[n_events] = n_pos, emit
            n_events += 1
            written += 1
        sp -= 1
    return written


@jit
def count_roots(arena, roots, keys, limits, emits, first, last, counts):
    """Add to ``counts`` (positions, events) what ``enumerate_roots`` (no cap) writes for ``roots[first:last]``,
    without walking every path: per group of roots with the same ``emits`` (one key and limit), each node
    counts its events and their positions once, from its children's (a walk would pay per path)."""
    node_pos, _, node_left, node_right, node_start, node_used = arena
    n_nodes = node_used[0]
    group = np.full(n_nodes, -1, np.int64)  # the group whose counts a node holds
    events = np.empty(n_nodes, np.int64)
    positions = np.empty(n_nodes, np.int64)
    # node ids; a negative entry, -(id + 1): its children are done. A node is expanded once per group
    # (pushing itself and at most two children), so 3 entries per node bound the stack
    stack = np.empty(3 * n_nodes + 3, np.int64)
    events[BOTTOM], positions[BOTTOM] = 1, 0
    g = 0
    for r in range(first, last):
        if r > first and emits[r] != emits[r - 1]:
            g += 1
        key, limit, root = keys[r], limits[r], roots[r]
        if key - node_start[root] > limit:
            continue
        group[BOTTOM] = g
        stack[0] = root
        sp = 1
        while sp > 0:
            sp -= 1
            entry = stack[sp]
            node = entry if entry >= 0 else -entry - 1
            if group[node] == g:
                continue
            left, right = node_left[node], node_right[node]
            union = node_pos[node] == UNION
            fits = union and key - node_start[right] <= limit
            if entry >= 0:
                stack[sp] = -node - 1
                sp += 1
                if group[left] != g:
                    stack[sp] = left
                    sp += 1
                if fits and group[right] != g:
                    stack[sp] = right
                    sp += 1
                continue
            group[node] = g
            if union:
                events[node], positions[node] = events[left], positions[left]
                if fits:
                    events[node] += events[right]
                    positions[node] += positions[right]
            else:
                events[node], positions[node] = events[left], positions[left] + events[left]
        counts[0] += positions[root]
        counts[1] += events[root]


@jit
def _write_group(out_pos, out_var, out_end, out_emit, first, last, start, spare):
    """Move events ``first..last-1``, enumerated into ``spare`` (their positions from 0 there, from ``start``
    in ``out_end``), to the outputs at ``start``, sorted by their positions; False when they could not be
    sorted (then moved as they are).

    All of one group end at the same position ``hi`` (the event that completed them), so comparing two
    as tuples comes down to the smallest position in one and not the other, which sorts first: with
    ``key = Σ 2^(hi − p)`` (a lower position, a higher bit) the tuple order is the keys' descending order.
    Each key is packed with its event's index into one word and the words sorted. That fails when a key
    does not fit a word (a span of over 62 positions, or many events over a wide span), an event does not
    end at ``hi`` or two have the same positions (then their order depends on their bindings)."""
    spare_pos, spare_var, spare_key, spare_root = spare
    n = last - first
    size = out_end[last - 1] - start if n else 0
    if start + size > out_pos.shape[0] or size > spare_pos.shape[0]:  # the walk checked it: a guard
        raise IndexError("_write_group: the group does not fit the outputs")
    index_bits = _sort_keys(spare_pos, out_end, first, last, start, spare_key, spare_root)
    if index_bits < 0:
        for k in range(size):  # loops, not slice copies: these pull numba's shape-error formatting in
            out_pos[start + k], out_var[start + k] = spare_pos[k], spare_var[k]
        return n == 0 or (n == 1 and size > 0)
    words = spare_key[:n]
    low = (1 << index_bits) - 1
    at = start
    for j in range(n):
        m = first + (words[j] & low)
        begin = 0 if m == first else out_end[m - 1] - start
        for k in range(begin, out_end[m] - start):
            out_pos[at], out_var[at] = spare_pos[k], spare_var[k]
            at += 1
        spare_root[j] = at  # the sorted events' ends and roots, written once all are read
        words[j] = out_emit[m]
    for j in range(n):
        out_end[first + j] = spare_root[j]
        out_emit[first + j] = words[j]
    return True


@jit
def _sort_keys(positions, out_end, first, last, start, words, other):
    """``words[:n]``, the group's events' keys (``_write_group``; the walk made them, relative to each
    event's last position, -1 when it did not fit a word), put in order, each word then
    ``key << index_bits | index``; returns ``index_bits``, or -1 when the group cannot be sorted that way
    (or has fewer than two events). ``positions`` (from 0) and ``out_end`` tell each event's span."""
    n = last - first
    if n < 2:
        return -1
    hi = positions[out_end[last - 1] - start - 1]
    begin = 0
    span = 0
    for m in range(first, last):
        end = out_end[m] - start
        if end == begin or positions[end - 1] != hi or words[m - first] < 0:
            return -1
        span = max(span, hi - positions[begin])
        begin = end
    index_bits = 1
    while (1 << index_bits) < n:
        index_bits += 1
    if span + index_bits > 62:
        return -1
    top = (1 << (span + 1)) - 1
    for j in range(n):  # ascending words: descending keys (bit 0, hi, is in all), then index
        words[j] = (((top - words[j]) >> 1) << index_bits) | j
    sorted_words = words[:n]
    if n < 128:
        _shell_sort(sorted_words)
    else:
        _radix_sort(sorted_words, other[:n], span + index_bits)
    for j in range(1, n):
        if sorted_words[j] >> index_bits == sorted_words[j - 1] >> index_bits:
            return -1
    return index_bits


@jit(inline=True)
def _shell_sort(words):
    """Sort ``words`` (fewer than 128) in place: insertion sorts over gaps 57, 23, 10, 4, 1 (Ciura's). Not
    numba's ``ndarray.sort``: its quicksort compiles to five functions (~1 s of a first call on a clean
    cache), and on the walk's groups, which arrive mostly in descending order, took 1.6x this one's time
    (in random order 0.95x)."""
    n = words.shape[0]
    for gap in (57, 23, 10, 4, 1):
        for j in range(gap, n):
            moving = words[j]
            i = j
            while i >= gap and words[i - gap] > moving:
                words[i] = words[i - gap]
                i -= gap
            words[i] = moving


@jit
def _radix_sort(words, other, bits):
    """Sort the non-negative ``words`` (below ``2^bits``) in place, a digit at a time from the lowest, each
    digit about log2(len) bits (``other``, as long, is the second buffer): linear, where the big groups of
    a Kleene query spent most of their time in a comparison sort."""
    n = words.shape[0]
    digit = 6
    while digit < 11 and (2 << digit) <= n:
        digit += 1
    passes = (bits + digit - 1) // digit
    digit = (bits + passes - 1) // passes
    count = np.empty((1 << digit) + 1, np.int64)
    for k in range(passes):
        if k % 2 == 0:
            _radix_pass(words, other, digit * k, digit, count)
        else:
            _radix_pass(other, words, digit * k, digit, count)
    if passes % 2:
        for j in range(n):  # (a loop: see ``_write_group``)
            words[j] = other[j]


@jit(inline=True)
def _radix_pass(source, target, shift, digit, count):
    """``source`` into ``target``, stably ordered by the ``digit`` bits at ``shift``."""
    mask = (1 << digit) - 1
    count[:] = 0
    for j in range(source.shape[0]):
        count[((source[j] >> shift) & mask) + 1] += 1
    for d in range(mask + 1):
        count[d + 1] += count[d]
    for j in range(source.shape[0]):
        d = (source[j] >> shift) & mask
        target[count[d]] = source[j]
        count[d] += 1


@jit
def _grow_i32(a):
    b = np.empty(2 * a.shape[0], np.int32)
    b[: a.shape[0]] = a
    return b


@jit
def _live(arena, roots, lowers):
    """For each node, the loosest lower bound on start under which some root reaches it (inf: dead)."""
    node_pos, _, node_left, node_right, node_start, node_used = arena
    loosest = np.full(node_used[0], np.inf)
    stack = np.empty(64, np.int32)
    bounds = np.empty(64, np.float64)
    for r in range(roots.shape[0]):
        if roots[r] == NONE:
            continue
        stack[0], bounds[0] = roots[r], lowers[r]
        sp = 1
        while sp > 0:
            sp -= 1
            node, lower = stack[sp], bounds[sp]
            if lower >= loosest[node] or node_start[node] < lower:
                continue
            loosest[node] = lower
            if sp + 2 > stack.shape[0]:
                stack = _grow_i32(stack)
                bigger = np.empty(2 * bounds.shape[0], np.float64)
                bigger[: bounds.shape[0]] = bounds
                bounds = bigger
            if node_pos[node] == UNION:
                stack[sp], bounds[sp] = node_left[node], lower
                stack[sp + 1], bounds[sp + 1] = node_right[node], lower
                sp += 2
            elif node != BOTTOM:
                stack[sp], bounds[sp] = node_left[node], lower
                sp += 1
    return loosest


@jit
def _copy_live(arena, loosest, target, remap):
    """Copy the live nodes into ``target`` (oldest first, so children precede parents), collapsing unions
    with one live child (a kept union's children are ordered again, as ``put_pair`` does: a collapsed
    child's spine may be shorter); ``remap`` gets each old id's new id."""
    node_pos, node_var, node_left, node_right, node_start, node_used = arena
    new_pos, new_var, new_left, new_right, new_start, new_used = target
    n = 0
    for node in range(node_used[0]):
        if loosest[node] == np.inf:
            remap[node] = NONE
            continue
        if node_pos[node] == UNION:
            lower = loosest[node]
            a, b = node_left[node], node_right[node]
            keep_a = node_start[a] >= lower and remap[a] != NONE
            keep_b = node_start[b] >= lower and remap[b] != NONE
            if not (keep_a and keep_b):
                remap[node] = remap[a] if keep_a else remap[b]
                continue
            remap[node] = put_pair(new_pos, new_var, new_left, new_right, new_start, n, remap[a], remap[b])
            n += 1
            continue
        new_left[n] = remap[node_left[node]] if node != BOTTOM else NONE
        new_right[n] = NONE
        new_pos[n], new_var[n], new_start[n] = node_pos[node], node_var[node], node_start[node]
        remap[node] = n
        n += 1
    new_used[0] = n


def compact(arena: Arena, roots: np.ndarray, lowers: np.ndarray, min_free: int = 0) -> tuple:
    """Keep only the nodes ``roots`` reach with events of start ≥ ``lowers[r]`` (the window's lower bound
    for root r). Returns (new arena, new ids of ``roots``); the arena doubles while more than half of it
    is live or fewer than ``min_free`` nodes are free."""
    loosest = _live(arena, roots, lowers)
    loosest[BOTTOM] = -np.inf  # ⊥ stays node 0
    live = int(np.count_nonzero(loosest != np.inf))
    capacity = len(arena.pos)
    while live > capacity // 2 or capacity - live < min_free:
        capacity *= 2
    target = new_arena(capacity)
    remap = np.empty(max(int(arena.used[0]), 1), np.int32)
    _copy_live(arena, loosest, target, remap)
    return target, np.where(roots == NONE, NONE, remap[np.maximum(roots, 0)]).astype(np.int32)
