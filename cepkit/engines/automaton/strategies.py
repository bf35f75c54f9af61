"""Selection strategies NEXT, LAST and MAX by their own algorithms over the CEA ([CEL] §6-7, Theorem 6,
Appendix D.3), without determinization for NEXT and LAST.

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

**CONSUME BY** applies after selection, as the reference does: a selected match is reported only if it
starts after the last position at which a match was reported (in its scope).
"""

from __future__ import annotations

import math

from .determinize import Moves
from .nodes import BOTTOM, NONE, ext, union

RANKED = ("NEXT", "LAST", "MAX")
NO_START = -math.inf  # the start of no run


class Ranked:
    """NEXT (``last_first`` False) or LAST over one sub-stream: an ordered list of (start, {state: node})."""

    def __init__(self, moves: Moves, arena_ref, last_first: bool, empty_start: float):
        self.moves = moves
        self.arena_ref = arena_ref
        self.last_first = last_first
        self.classes = [(empty_start, {moves.cea.initial: BOTTOM})]

    def step(self, letter: int, pos: int, key: float, limit: float) -> list:
        """Read one event; return the roots completed at it (at most one for these strategies)."""
        arena = self.arena_ref()
        marks, skips = self.moves(letter)
        marked, skipped = [], []
        for start, entries in self.classes:
            if key - start > limit:
                continue
            m, s = {}, {}
            for q, node in entries.items():
                for dst, var in marks.get(q, ()):
                    m[dst] = union(arena, m.get(dst, NONE), ext(arena, pos, var, node, key))
                for dst in skips.get(q, ()):
                    s[dst] = union(arena, s.get(dst, NONE), node)
            marked.append((min(start, key), m))
            skipped.append((start, s))
        if self.last_first:
            order = marked + skipped
        else:
            order = [c for pair in zip(marked, skipped) for c in pair]
        self.classes, latest = [], {}
        output = NONE
        for start, entries in order:
            kept = {p: n for p, n in entries.items() if latest.get(p, -math.inf) < start}
            if not kept:
                continue
            for p in kept:
                latest[p] = start
            completed = kept.pop(self.moves.sink, NONE)
            if output == NONE:
                output = completed
            if kept:
                self.classes.append((start, kept))
        return [output] if output != NONE else []

    def entries(self) -> list:
        """(state, node) of every run kept."""
        return [(p, n) for _, entries in self.classes for p, n in entries.items()]

    def nodes(self) -> list:
        return [n for _, entries in self.classes for n in entries.values()]

    def remap(self, new_ids) -> None:
        it = iter(new_ids)
        self.classes = [(start, {p: int(next(it)) for p in entries}) for start, entries in self.classes]

    def states(self):
        return {p for _, entries in self.classes for p in entries}


class Maximal:
    """MAX over one sub-stream: lists keyed by (start of C, T, U) with per-state nodes; U maps each state
    of a superset run to the latest start among those runs."""

    def __init__(self, moves: Moves, arena_ref, empty_start: float):
        self.moves = moves
        self.arena_ref = arena_ref
        self.groups = {(empty_start, frozenset({moves.cea.initial}), frozenset()): {moves.cea.initial: BOTTOM}}
        # a superset run in a state with no transition (a final state ending the pattern) never moves again:
        # U forgets it after the step that made it, so groups differing only by it are one
        self.ends = frozenset(q for q, out in enumerate(moves.cea.outgoing) if not out)

    def step(self, letter: int, pos: int, key: float, limit: float) -> list:
        arena = self.arena_ref()
        marks, skips = self.moves(letter)
        finals = self.moves.finals
        new: dict = {}
        roots = []

        ends = self.ends

        def merge(group_key, entries):  # ``entries`` (made for this step) is adopted as the group when new
            group = new.get(group_key)
            if group is None:
                new[group_key] = entries
            else:
                for p, n in entries.items():
                    group[p] = union(arena, group.get(p, NONE), n)

        def add(start, entries, supersets):
            kept = frozenset((q, s) for q, s in supersets.items() if q not in ends)
            merge((start, frozenset(entries), kept), entries)

        inert = self.moves.inert(letter)
        for group_key, entries in self.groups.items():
            start, states, supers = group_key
            if key - start > limit:
                continue
            if states <= inert and all(q in inert for q, _ in supers):
                # every run stays where it is: the • move has nothing, the ◦ move gives the group back (its
                # T states have no superset run starting at or after its start: add() filtered them so)
                merge(group_key, entries)
                continue
            started = min(start, key)
            # the superset runs' moves: u_mark (those marking j), u_skip (every one), the latest start per state
            u_mark: dict = {}
            u_skip: dict = {}
            for q, s in supers:
                for dst, _ in marks.get(q, ()):
                    if u_mark.get(dst, NO_START) < s:
                        u_mark[dst] = s
                for dst in skips.get(q, ()):
                    if u_skip.get(dst, NO_START) < s:
                        u_skip[dst] = s
            for p, s in u_mark.items():
                if u_skip.get(p, NO_START) < s:
                    u_skip[p] = s
            # • move: C ∪ {j}; supersets are the superset runs that mark j too
            t_mark: dict = {}
            for q, node in entries.items():
                for dst, var in marks.get(q, ()):
                    t_mark[dst] = union(arena, t_mark.get(dst, NONE), ext(arena, pos, var, node, key))
                    if u_skip.get(dst, NO_START) < started:  # for the ◦ move: C's runs that mark j
                        u_skip[dst] = started
            t_mark = {p: n for p, n in t_mark.items() if u_mark.get(p, NO_START) < started}
            if t_mark:
                add(started, t_mark, u_mark)
                if pos >= 0 and not any(f in u_mark and key - u_mark[f] <= limit for f in finals):
                    roots += [n for p, n in t_mark.items() if p in finals]
            # ◦ move: C stays; supersets are every superset run, and C's runs that mark j
            t_skip: dict = {}
            for q, node in entries.items():
                for dst in skips.get(q, ()):
                    t_skip[dst] = union(arena, t_skip.get(dst, NONE), node)
            t_skip = {p: n for p, n in t_skip.items() if u_skip.get(p, NO_START) < start}
            if t_skip:
                add(start, t_skip, u_skip)
        self.groups = new
        return roots

    def entries(self) -> list:
        """(state, node) of every run kept."""
        return [(p, n) for entries in self.groups.values() for p, n in entries.items()]

    def nodes(self) -> list:
        return [n for entries in self.groups.values() for n in entries.values()]

    def remap(self, new_ids) -> None:
        it = iter(new_ids)
        self.groups = {k: {p: int(next(it)) for p in entries} for k, entries in self.groups.items()}

    def states(self):
        return {p for entries in self.groups.values() for p in entries} | {
            p for (_, _, supers) in self.groups for p, _ in supers
        }


def selector(program, arena_ref):
    """A fresh per-sub-stream selector for the query's top-level strategy (``program.moves`` has NEXT and
    LAST's sink)."""
    window = program.query.within
    empty_start = math.inf if window is not None else 0.0
    strategy = program.query.strategy
    if strategy == "MAX":
        return Maximal(program.moves, arena_ref, empty_start)
    return Ranked(program.moves, arena_ref, strategy == "LAST", empty_start)


def free_nodes_needed(selector_state, moves: Moves) -> int:
    """An upper bound on the nodes one event can make (so the arena never fills mid-event)."""
    return 4 * max(1, len(selector_state.nodes())) * (1 + moves.cea.n_states)
