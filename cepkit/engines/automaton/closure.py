"""NEXT/LAST/MAX(φ) inside a pattern by [CEL] Theorem 4's closure: the selection becomes part of the letters.

SEL(φ) keeps a match of φ when it is the best (docs/language.md §5: ≤next-least, ≤last-least) among every
match of φ ending at the same position, over the whole stream. The closure's states are (p, T̄): p a state
of φ's automaton A_φ, T̄ the *classes* of every run of A_φ from the stream's start, best first, each the set
of states its best runs reach (runs with equal rank have the same complex event, [CEL] Lemma 1). T̄ does
not depend on the run, only on the stream: it is a deterministic automaton over the events (the
**tracker**, one per selection, per PARTITION BY key), and a transition of A_φ is allowed at an event
when the run taking it is the best reaching its target (its class claims the target before any worse
class: [CEL] Algorithms 5 and 6, which the tracker runs without nodes). A run that only took allowed
transitions is the best run of its state; one that leaves φ through its exit (a copy of the • transition
completing a match, [CEL]'s sink q_f) is the best match of φ ending there.

So the pattern's CEA (``compile._select``: φ's sub-automaton entered through a fresh state, a run of φ
that has marked nothing, the worst class, and left through the exit) reads, at each event, the letter of
the transitions both the event's tests and the trackers allow (``Closure.step``): a letter like any other,
lazily determinized and evaluated by Algorithm 1, with its update time and output-linear enumeration;
nothing is enumerated to be dropped. The trackers of nested selections run innermost first: an outer
selection's A_φ reads the inner one's allowed transitions. The pair (tracker states, the event's test
bits) -> (next tracker states, letter) is memoized in tables a compiled loop reads (``transduce``),
returning to Python on a missing entry, as the determinized table does.

MAX ([CEL] Algorithm 7) ranks nothing: a run's complex event C is dropped when a strict superset ends
with it, and the pair (T, U) that tells (the states of C's runs, of its supersets' runs) belongs to the
run. So MAX(φ) is compiled as Theorem 4's product, states (p, T, U) (``compile._EpsilonCEA._select_max``);
its tracker (``MaxTracker``) only keeps R, the states of every run that has marked something, which is
the U of a run entering φ.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .compile import CEA, SINK, max_move, max_reached
from .determinize import Letters, _grown2
from ..compiled import jit
from .predicates import Alphabet

MISSING = -1


class Tracker:
    """One selection's ranked classes (``compile.Selection``): a state is a tuple of frozensets of A_φ's
    states, best first, the last holding the fresh entry (the runs that have marked nothing)."""

    def __init__(self, selection, alphabet: Alphabet):
        self.key = selection.key
        self.last = selection.name == "LAST"
        self.entry = selection.initial
        self.moves = {
            r: tuple((index, dst, mark, alphabet.masks[guard], inner) for index, dst, mark, guard, inner in moves)
            for r, moves in selection.moves.items()
        }
        self.start = (frozenset({self.entry}),)

    def step(self, classes: tuple, code: int, allowed: dict) -> tuple:
        """(the classes after an event with test bits ``code``, the transitions (source, edge) of A_φ it
        allows); ``allowed`` holds those of the selections nested inside φ (already stepped).

        NEXT ([CEL] Algorithm 5): class by class, its • successors before its ◦ successors; LAST
        (Algorithm 6): every class's • successors, then every class's ◦ successors. A target goes to the
        first class reaching it; the sink (a match of φ completed) too, so only the best match passes."""
        marks, skips = [], []
        for cls in classes:
            marked: dict = {}
            skipped: dict = {}
            for r in cls:
                for index, dst, mark, mask, inner in self.moves[r]:
                    if code & mask != mask:
                        continue
                    if inner and any((src, edge) not in allowed[k] for k, src, edge in inner):
                        continue
                    (marked if mark else skipped).setdefault(dst, []).append((r, index))
            marks.append(marked)
            skips.append(skipped)
        order = marks + skips if self.last else [moves for pair in zip(marks, skips) for moves in pair]
        seen: set = set()
        mine: set = set()
        new = []
        for targets in order:
            claimed = [dst for dst in targets if dst not in seen]
            seen.update(claimed)
            for dst in claimed:
                mine.update(targets[dst])
            new.append(frozenset(claimed) - {SINK})
        # both orders end with the ◦ successors of the last class: the runs that have still marked nothing
        fresh = new.pop() | {self.entry}
        return tuple(c for c in new if c) + (fresh,), frozenset(mine)


class MaxTracker:
    """A MAX selection's tracker (``compile._EpsilonCEA._select_max``): R, the states of every run of A_φ
    that has marked something, which a run entering φ (complex event still empty) has as its U; each
    product transition is allowed when the event (and R, at the entry) gives its target's (T, U)."""

    def __init__(self, selection, alphabet: Alphabet):
        self.key = selection.key
        self.entry = selection.initial
        self.moves = {
            r: tuple((dst, mark, alphabet.masks[guard]) for _, dst, mark, guard, _ in moves)
            for r, moves in selection.moves.items()
        }
        self.product = selection.product
        self.start: frozenset = frozenset()

    def step(self, reached: frozenset, code: int, allowed: dict) -> tuple:
        def step(states, mark):
            return {dst for r in states for dst, m, mask in self.moves[r] if m == mark and code & mask == mask}

        entry = frozenset({self.entry})
        after = max_reached(step, reached, entry)
        outcomes: dict = {}
        mine = set()
        for index, (pair, mark, dst, expect, source) in self.product.items():
            if (pair, mark) not in outcomes:
                T, U = (entry, reached) if pair is None else pair
                outcomes[pair, mark] = max_move(step, T, U, mark)
            T2, U2 = outcomes[pair, mark]
            if dst == SINK:
                ok = SINK not in U2
            else:
                ok = dst in T2 and (T2 - {SINK}, U2 - {SINK}) == expect
            if ok:
                mine.add((source, index))
        return after, frozenset(mine)


class Closure:
    """Every closure selection of a CEA: the letter each event reads given the trackers' states."""

    def __init__(self, cea: CEA, alphabet: Alphabet, letters: Letters):
        self.trackers = [(MaxTracker if sel.name == "MAX" else Tracker)(sel, alphabet) for sel in cea.selections]
        self.letters = letters
        self.origins = [(i, t.origin) for i, t in enumerate(cea.transitions) if t.origin]
        self.states: list = []  # state id -> one tracker state per selection
        self._state_ids: dict = {}
        self.initial = _intern(self._state_ids, self.states, tuple(t.start for t in self.trackers))
        self._steps: dict = {}  # (state id, code) -> (next state id, letter id)
        self.codes: list = []  # code id -> code (the columns of the tables)
        self._code_ids: dict = {}
        self.next_state = np.full((8, 8), MISSING, np.int32)
        self.letter = np.full((8, 8), MISSING, np.int32)

    def __len__(self):
        """The tracker states found so far (the closure's T̄ that occurred)."""
        return len(self.states)

    def step(self, state: int, code) -> tuple:
        """(next state id, letter id) of an event with test bits ``code`` read in tracker state ``state``."""
        code = int(code)
        hit = self._steps.get((state, code))
        if hit is None:
            allowed: dict = {}
            new = []
            for tracker, classes in zip(self.trackers, self.states[state]):
                after, allowed[tracker.key] = tracker.step(classes, code, allowed)
                new.append(after)
            base = self.letters.of_code(code)
            enabled = self.letters.enabled[base]
            blocked = frozenset(
                i
                for i, origin in self.origins
                if i in enabled and any((src, index) not in allowed[k] for k, src, index in origin)
            )
            letter = self.letters.of_enabled(enabled - blocked) if blocked else base
            hit = self._steps[(state, code)] = (_intern(self._state_ids, self.states, tuple(new)), letter)
        return hit

    def letters_of(self, codes: np.ndarray, slots: np.ndarray, states: np.ndarray) -> np.ndarray:
        """The letter of each event (``codes``, its test bits; ``slots``, its sub-stream), in stream order;
        ``states`` (one tracker state per slot) is advanced in place."""
        out = np.empty(len(codes), np.int32)
        if not len(codes):
            return out
        inverse, unique = pd.factorize(codes)
        dense = np.array([_intern(self._code_ids, self.codes, int(c)) for c in unique], np.int64)[inverse]
        slots = np.ascontiguousarray(slots, np.int64)
        i = 0
        while True:
            i = transduce(dense, slots, states, self.next_state, self.letter, out, i)
            if i < 0:
                return out
            state, code = int(states[slots[i]]), int(dense[i])
            after, letter = self.step(state, self.codes[code])
            if state >= self.next_state.shape[0] or code >= self.next_state.shape[1]:
                rows, columns = (max(2 * old, new) for old, new in zip(self.next_state.shape, (state + 1, code + 1)))
                self.next_state = _grown2(self.next_state, rows, columns, MISSING)
                self.letter = _grown2(self.letter, rows, columns, MISSING)
            self.next_state[state, code], self.letter[state, code] = after, letter


def _intern(ids: dict, items: list, item) -> int:
    """The id of ``item`` in ``items`` (``ids`` its index), appended when new."""
    found = ids.setdefault(item, len(items))
    if found == len(items):
        items.append(item)
    return found


@jit
def transduce(codes, slots, states, next_state, letters, out, first):
    """Events ``first..``: each reads its letter and moves its slot's tracker state through the tables;
    returns the index of the first event whose entry is missing (or outside the tables), -1 at the end."""
    rows, columns = next_state.shape
    for i in range(first, codes.shape[0]):
        slot = slots[i]
        state, code = states[slot], codes[i]
        if state >= rows or code >= columns:
            return i
        after = next_state[state, code]
        if after == MISSING:
            return i
        out[i] = letters[state, code]
        states[slot] = after
    return -1
