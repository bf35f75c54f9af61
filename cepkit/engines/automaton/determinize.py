"""Lazy I/O-determinization of a CEA, keyed by the letter of each event ([CEL] §6-7, Proposition 1).

The subset construction over minterms, done on demand: a deterministic state is a set S of CEA states,
and reading a letter it has one ◦-successor δ(S, ◦) and, for each variable x, one •-successor δ(S, •x)
(a • transition binding x). Splitting the • successors by variable makes the automaton I/O-deterministic
for the output alphabet {◦} ∪ {•x}: each complex event *with its bindings* has exactly one run, so
Algorithm 1 enumerates every match (C, β) once.

A **letter** is the set of CEA transitions an event enables: events whose test bits (``Alphabet``)
enable the same transitions read the same letter, so the table stays small. The letter of an event that
enables no • transition is ``none``: such an event can only be skipped (the ``gap`` of the evaluator).

``DetTable`` keeps the discovered part as numpy arrays for the compiled kernel, which asks for a missing
entry by returning to Python (``fill``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import kernel
from .compile import CEA
from .predicates import Alphabet

UNKNOWN, DEAD = -1, -2  # table entries: not computed yet / no successor
SLICE = 1 << 20  # events whose letters are looked up at once


class Letters:
    """Letter ids for the test codes of events (see the module docstring)."""

    def __init__(self, cea: CEA, alphabet: Alphabet):
        self.cea = cea
        self.alphabet = alphabet
        self.enabled: list = []  # letter id -> frozenset of enabled transition indices
        self._by_enabled: dict = {}
        self._by_code: dict = {}
        # with type tests only, an event's letter is its type's: one lookup per event (the matcher's path)
        self._by_type = {} if all(kind == "type" for kind, _ in alphabet.tests) else None
        first = self.of_code(0)
        marks = any(cea.transitions[i].mark for i in self.enabled[first])
        self.none = None if marks else first

    def __len__(self):
        return len(self.enabled)

    def of_code(self, code: int) -> int:
        code = int(code)
        letter = self._by_code.get(code)
        if letter is None:
            enabled = frozenset(i for i, t in enumerate(self.cea.transitions) if self.alphabet.holds(t.guard, code))
            letter = self._by_code[code] = self.of_enabled(enabled)
        return letter

    def of_enabled(self, enabled: frozenset) -> int:
        """The letter id of a set of enabled transitions (the closure's letters, ``closure.py``, enable
        fewer transitions than the code alone)."""
        letter = self._by_enabled.setdefault(enabled, len(self.enabled))
        if letter == len(self.enabled):
            self.enabled.append(enabled)
        return letter

    def of_codes(self, codes: np.ndarray) -> np.ndarray:
        """The letter id of each code (signed integers): a lookup table when codes are small (a few
        tests), else hashing."""
        if not len(codes):
            return np.zeros(0, dtype=np.int32)
        if codes.dtype != object and int(codes.max()) < 1 << 16:
            # a slice at a time: numpy would otherwise make an intp copy of all the codes (for bincount
            # and for indexing), 8 bytes per event where the codes take 1 or 2
            def slices():
                for start in range(0, len(codes), SLICE):
                    yield start, codes[start : start + SLICE].astype(np.intp, copy=False)

            size = int(codes.max()) + 1
            present = np.flatnonzero(sum(np.bincount(part, minlength=size) for _, part in slices()))
            table = np.zeros(size, dtype=np.int32)
            table[present] = [self.of_code(c) for c in present.tolist()]
            # the smallest integers that hold the letter ids (the kernel reads int32 a batch at a time)
            out = np.empty(len(codes), np.min_scalar_type(-int(table.max()) - 1))
            for start, part in slices():
                out[start : start + len(part)] = table[part]
            return out
        inverse, unique = pd.factorize(codes)
        ids = np.array([self.of_code(c) for c in unique], dtype=np.int32)
        return ids[inverse]

    def of_event(self, event) -> int:
        if self._by_type is None:
            return self.of_code(self.alphabet.letter_of(event))
        letter = self._by_type.get(event.type)
        if letter is None:
            letter = self._by_type[event.type] = self.of_code(self.alphabet.letter_of(event))
        return letter


class Moves:
    """Per letter and CEA state: the • moves ``(dst, var id)`` and the ◦ targets the letter enables. With
    ``sink``, NEXT and LAST's fresh final sink q_f (state ``n_states``) is entered by a •-copy of every •
    transition into F ([CEL] §6-7, "Preprocess for NXT/LAST")."""

    def __init__(self, cea: CEA, letters: Letters, sink: bool = False):
        self.cea = cea
        self.letters = letters
        self.sink = cea.n_states if sink else None
        self.finals = frozenset({self.sink}) if sink else cea.finals
        self.var_ids = {v: i for i, v in enumerate(cea.variables)}
        self._cache: dict = {}

    def __call__(self, letter: int) -> tuple:
        """(marks, skips): state -> list of (dst, var id), state -> list of dst."""
        if letter not in self._cache:
            marks: dict = {}
            skips: dict = {}
            for i in sorted(self.letters.enabled[letter]):
                t = self.cea.transitions[i]
                if t.mark:
                    var = self.var_ids.get(t.var, -1)
                    marks.setdefault(t.src, []).append((t.dst, var))
                    if self.sink is not None and t.dst in self.cea.finals:
                        marks[t.src].append((self.sink, var))
                else:
                    skips.setdefault(t.src, []).append(t.dst)
            self._cache[letter] = (marks, skips)
        return self._cache[letter]

    def settled(self, states, none: int) -> bool:
        """Whether an irrelevant event leaves every state where it is (a gap then acts as one step)."""
        return self.inert(none).issuperset(states)

    def inert(self, letter: int) -> frozenset:
        """The states ``letter`` leaves where they are: no • move, their one ◦ move a loop."""
        key = ("inert", letter)
        if key not in self._cache:
            marks, skips = self(letter)
            self._cache[key] = frozenset(
                q for q in range(self.cea.n_states) if not marks.get(q) and skips.get(q) == [q]
            )
        return self._cache[key]


class LazyDeterminizer:
    """δ(S, letter) computed on first use and memoized: ``subsets[i]`` is deterministic state i."""

    def __init__(self, cea: CEA, letters: Letters):
        self.cea = cea
        self.letters = letters
        self.moves_of = Moves(cea, letters)
        self.subsets: list = []
        self._index: dict = {}
        self.initial = self.state_of(frozenset({cea.initial}))
        self.moves: dict = {}  # (subset id, letter) -> (◦ target or DEAD, ((var id, • target), ...))

    def state_of(self, subset: frozenset) -> int:
        if subset not in self._index:
            self._index[subset] = len(self.subsets)
            self.subsets.append(subset)
        return self._index[subset]

    def is_final(self, state: int) -> bool:
        return not self.subsets[state].isdisjoint(self.cea.finals)

    def step(self, state: int, letter: int) -> tuple:
        """δ(S, ◦) (or DEAD) and, sorted by variable, each δ(S, •x)."""
        key = (state, letter)
        if key not in self.moves:
            marks_of, skips_of = self.moves_of(letter)
            skip, marks = set(), {}
            for q in self.subsets[state]:
                skip.update(skips_of.get(q, ()))
                for dst, var in marks_of.get(q, ()):
                    marks.setdefault(var, set()).add(dst)
            target = self.state_of(frozenset(skip)) if skip else DEAD
            self.moves[key] = (
                target,
                tuple((var, self.state_of(frozenset(dsts))) for var, dsts in sorted(marks.items())),
            )
        return self.moves[key]


class DetTable:
    """The discovered part of the determinized automaton as arrays for the kernel.

    ``skip[S, L]`` is the ◦ target (``UNKNOWN``, ``DEAD`` or a state); the • moves of (S, L) are
    ``move_var/move_dst[move_start[S, L] : move_start[S, L] + move_count[S, L]]``; ``final[S]``;
    ``settled[S]`` says that the ``none`` letter leaves S where it is (so a run of irrelevant events acts
    as one).
    """

    def __init__(self, det: LazyDeterminizer):
        self.det = det
        self.skip = np.full((8, 4), UNKNOWN, dtype=np.int32)
        self.move_start = np.zeros((8, 4), dtype=np.int32)
        self.move_count = np.zeros((8, 4), dtype=np.int32)
        self.move_var = np.zeros(16, dtype=np.int32)
        self.move_dst = np.zeros(16, dtype=np.int32)
        self.n_moves = 0
        self.final = np.zeros(8, dtype=np.bool_)
        self.settled = np.zeros(8, dtype=np.bool_)
        self._synced = 0
        self._sync_states()

    @property
    def arrays(self) -> tuple:
        return (self.skip, self.move_start, self.move_count, self.move_var, self.move_dst, self.final, self.settled)

    def fill(self, state: int, letter: int) -> None:
        """Compute δ(state, letter) into the arrays (growing them for new states or letters)."""
        target, marks = self.det.step(state, letter)
        self._sync_states()
        self.ensure_letters(letter + 1)
        if self.n_moves + len(marks) > len(self.move_var):
            size = max(2 * len(self.move_var), self.n_moves + len(marks))
            self.move_var = _grown(self.move_var, size)
            self.move_dst = _grown(self.move_dst, size)
            kernel.replaced()
        self.move_start[state, letter] = self.n_moves
        self.move_count[state, letter] = len(marks)
        for var, dst in marks:
            self.move_var[self.n_moves] = var
            self.move_dst[self.n_moves] = dst
            self.n_moves += 1
        self.skip[state, letter] = target
        none = self.det.letters.none
        if letter == none:
            self.settled[state] = target == state and not marks

    def ensure_letters(self, n_letters: int) -> None:
        if n_letters > self.skip.shape[1]:
            cols = max(2 * self.skip.shape[1], n_letters)
            self.skip = _grown2(self.skip, self.skip.shape[0], cols, UNKNOWN)
            self.move_start = _grown2(self.move_start, self.skip.shape[0], cols, 0)
            self.move_count = _grown2(self.move_count, self.skip.shape[0], cols, 0)
            kernel.replaced()

    def _sync_states(self) -> None:
        n = len(self.det.subsets)
        if n > self.skip.shape[0]:
            rows = max(2 * self.skip.shape[0], n)
            cols = self.skip.shape[1]
            self.skip = _grown2(self.skip, rows, cols, UNKNOWN)
            self.move_start = _grown2(self.move_start, rows, cols, 0)
            self.move_count = _grown2(self.move_count, rows, cols, 0)
            self.final = _grown(self.final, rows)
            self.settled = _grown(self.settled, rows)
            kernel.replaced()
        for s in range(self._synced, n):
            self.final[s] = self.det.is_final(s)
        self._synced = n


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=array.dtype)
    out[: len(array)] = array
    return out


def _grown2(array: np.ndarray, rows: int, cols: int, fill) -> np.ndarray:
    out = np.full((rows, cols), fill, dtype=array.dtype)
    out[: array.shape[0], : array.shape[1]] = array
    return out
