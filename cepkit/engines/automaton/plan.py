"""The automaton engine's plan: a compiled query run over a finite stream (``run``) or event by event
(``matcher``). ALL and STRICT run Algorithm 1 in the kernel; NEXT, LAST and MAX their own algorithms."""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import pandas as pd

from ...errors import ResultTooLarge
from ...lang import ast as A
from ...lang.checks import definitions
from ...lang.query import Query
from ...lang.window import time_limit
from ...runtime.event_record import PUNCTUATION, key_column, values_event, values_key
from ...runtime.stream import Stream
from ...runtime.expiry import KeyExpiry, window_horizon
from ...runtime.match_arrays import AT_LAST, MatchArrays
from ...runtime.match_list import MatchList
from ...runtime.match_record import Match
from ...runtime.reported_once import ReportedOnce
from ...runtime.registry import IncrementalPlan, Plan
from ..unary import StreamColumns
from . import kernel
from .compile import CEA, compile_query
from .determinize import DetTable, LazyDeterminizer, Letters, Moves
from .evaluate import (
    Batch,
    Evaluator,
    Outputs,
    RunsTable,
    count_all,
    partial_events,
    partition_key,
    partition_keys,
    run_all,
    window_keys,
    window_limit,
    window_limit_at,
)
from .closure import Closure
from .predicates import Alphabet
from .strategies import RANKED, Selector, consumed, select_all


ENUMERATIONS = ("ordered", "constant-delay")


def build_plan(query, unsupported, enumeration: str = "ordered") -> "AutomatonPlan":
    """Compile ``query`` (``unsupported(node, what)`` makes the error for what the automaton cannot run).
    ``enumeration``: "ordered" writes each event's matches in output order as it enumerates them;
    "constant-delay" enumerates one at a time with a bounded delay (``nodes.cursor_fill``), and ``Matches``
    orders them."""
    if enumeration not in ENUMERATIONS:
        raise ValueError(f"enumeration={enumeration!r}: expected one of {', '.join(map(repr, ENUMERATIONS))}")
    cea, how, nested = compile_query(query, unsupported)
    return AutomatonPlan(
        Program(query, cea, tuple(Selection(query, node, unsupported) for node in nested), enumeration, how)
    )


class Selection:
    """A NEXT/LAST/MAX sub-pattern (``compile.nested_selections``): its variables, and the plan of the
    sub-pattern alone under that strategy (same window and partitions), which chooses its matches."""

    def __init__(self, query, node: A.Strategy, unsupported):
        self.variables = frozenset(definitions(node.pattern))
        sub = Query(
            A.QueryNode(pattern=node.pattern, within=query.within, partition_by=query.partition_by, strategy=node.name),
            None,
            query.hierarchy,
        )
        self.plan = build_plan(sub, unsupported)


class Program:
    """Everything compiled from one query: its CEA, the tests and letters it reads, the lazily
    determinized automaton (shared by every run of the plan, so discovered states are kept), and the
    nested selections: compiled by the closure (``closure``: the trackers that make the letters) or run
    alone, their choices filtering its matches (``nested``); ``how`` says which ("closure", "filter" or
    None)."""

    def __init__(self, query, cea: CEA, nested: tuple = (), enumeration: str = "ordered", how=None):
        self.query = query
        self.enumeration = enumeration
        self.cea = cea
        self.nested = nested
        self.how = how
        self.alphabet = Alphabet(cea.guards)
        self.letters = Letters(cea, self.alphabet)
        self.closure = Closure(cea, self.alphabet, self.letters) if cea.selections else None
        self.det = LazyDeterminizer(cea, self.letters)
        self.table = DetTable(self.det)
        self.moves = Moves(cea, self.letters, sink=query.strategy in ("NEXT", "LAST"))
        self.ranked = query.strategy in RANKED
        self.consume = query.consume if query.consume in ("ANY", "PARTITION") else None

    def matches(self, outputs: Outputs, after: int = -1, chosen=()) -> tuple:
        """(the enumerated complex events that start after position ``after``, as ``MatchArrays``; whether
        any did): CONSUME BY counts a match even when RETURN projects all of it away. A match whose
        sub-match of a nested selection (``chosen``: (variables, chosen position tuples)) is not one the
        selection chose is left out; RETURN keeps the positions of its variables only. The columns may be
        views of the outputs' buffers: read them before the outputs are cleared."""
        if not len(outputs):  # the matcher's common case: nothing completed at this event
            return [], False
        offsets, positions, var_ids, emitted = outputs.arrays()
        n = len(emitted)
        names = self.cea.variables
        kleene = [name in self.query.kleene_variables for name in names]
        # rows left out keep the others' order; RETURN's projection may make two rows one, or reorder them
        sorted_within_last = outputs.ordered and self.query.select is None
        # a complex event is emitted at the event that completes it, its last position (unless RETURN
        # projects that one away): the column is made only if someone reads it
        at = AT_LAST if self.query.select is None else emitted
        if not chosen and self.query.select is None and after < 0:
            return MatchArrays.from_bindings(
                offsets, positions, var_ids, names, kleene, at, sorted_within_last, outputs.in_order
            ), True
        keep = positions[offsets[:-1]] > after
        if not keep.any():
            return [], False
        completed = True
        for variables, picked in chosen:
            inside = np.array([name in variables for name in names] + [False])[var_ids]  # -1: unnamed
            flat, bounds = positions.tolist(), offsets.tolist()
            for row in np.flatnonzero(keep).tolist():
                sub = tuple(
                    p
                    for p, hit in zip(flat[bounds[row] : bounds[row + 1]], inside[bounds[row] : bounds[row + 1]])
                    if hit
                )
                keep[row] = not sub or sub in picked
        row = np.repeat(np.arange(n), offsets[1:] - offsets[:-1])
        entry = keep[row]
        select = self.query.select
        if select is not None:
            entry &= np.array([name in select for name in names] + [False])[var_ids]
        counts = np.bincount(row[entry], minlength=n)
        nonempty = counts > 0
        kept_offsets = np.zeros(int(nonempty.sum()) + 1, np.int64)
        np.cumsum(counts[nonempty], out=kept_offsets[1:])
        return MatchArrays.from_bindings(
            kept_offsets,
            positions[entry],
            var_ids[entry],
            names,
            kleene,
            AT_LAST if self.query.select is None else emitted[nonempty],
            sorted_within_last,
        ), completed

    def letter_ids(self, stream, read, groups) -> np.ndarray:
        """The letter of every event of a finite stream (``evaluate.Inputs``: ``read``, the events read,
        None for all; ``groups``, the sub-stream of each, None for one); punctuations' are left unset (never
        read). With nested selections run by the closure, each sub-stream's trackers from their start."""
        codes = self.alphabet.letters_of(StreamColumns(stream))
        if self.closure is None:
            return self.letters.of_codes(codes)
        if read is not None:
            codes = codes[read]
        slots = np.zeros(len(codes), np.int64) if groups is None else groups
        states = np.full(int(slots.max()) + 1 if len(slots) else 1, self.closure.initial, np.int32)
        letters = self.closure.letters_of(codes, slots, states)
        if read is None:
            return letters
        out = np.zeros(len(stream), np.int32)
        out[read] = letters
        return out

    def key_of(self, event, sub_index: int) -> float:
        """The window key of one pushed event (``window_keys`` for one event, in Python floats: arrays of one
        would cost more than the push's kernel step)."""
        window = self.query.within
        if window is None:
            return 0.0
        return float(sub_index) if window.events else float(event.time)


class AutomatonPlan(Plan):
    def __init__(self, program: Program):
        self.program = program
        self.last_run: dict = {}  # the arena of the latest run: its size bounds the memory it used

    def run(self, stream) -> list:
        stream = Stream.from_any(stream)
        program = self.program
        if (program.consume == "ANY" and program.query.partition_by) or (
            program.ranked and (self.stops_early or program.query.select is not None or program.nested)
        ):
            return self._replay(stream)
        if program.ranked:
            selector, kept = select_all(program, stream)
            self.last_run = {"arena_nodes": len(selector.arena.pos), "stopped_early": False}
            found = program.matches(selector.outputs)[0]
            return found if kept is None or not len(found) else found.take(kept)
        chosen = [(sel.variables, {m.positions for m in sel.plan.run(stream)}) for sel in program.nested]
        # LIMIT n: the first n matches in output order are among those of the first events whose matches
        # number n, when every match is reported at its last position (no RETURN; a nested selection
        # filters matches afterwards); under PARTITION BY among each partition's first n (``run_all``)
        stops = self.stops_early and not program.nested
        try:
            evaluator = run_all(program, stream, limit=program.query.ast.limit if stops else None)
        except ResultTooLarge as err:
            if stops or program.query.ast.limit is None:
                raise
            # a LIMIT applied after the run (RETURN, a nested selection) shrinks nothing here
            raise ResultTooLarge(err.matches, err.needed, err.available, program.query.ast.limit) from None
        self.last_run = {"arena_nodes": len(evaluator.arena.pos), "stopped_early": evaluator.stopped}
        return program.matches(evaluator.outputs, chosen=chosen)[0]

    @property
    def stops_early(self) -> bool:
        """Whether LIMIT stops the run early (the events after the first n matches not read)."""
        return self.program.query.ast.limit is not None and self.program.query.select is None

    def _replay(self, stream) -> list:
        """Event by event through the matcher: CONSUME BY ANY across partitions needs the partitions
        interleaved in stream order; NEXT, LAST and MAX come here under LIMIT, RETURN (reported once, as a
        matcher reports it) or a nested selection by filtering (``select_all`` otherwise). Under LIMIT n (no RETURN) it stops at the event that brings
        the matches to n: each event's matches end at it, so none found later comes first."""
        matcher = self.matcher()
        limit = self.program.query.ast.limit if self.stops_early else None
        if limit is None:  # one micro-batch (the keys still interleaved in stream order), as columns when it can
            found = matcher.extend(stream)
            out = found.arrays if isinstance(found, MatchList) else list(found)
            self.last_run = {"arena_nodes": matcher.arena_nodes, "stopped_early": False}
            return out
        out = []
        stopped = False
        seen: set = set()  # a match the matcher emits twice (``Matches`` keeps it once) counts once
        for event in stream.events:
            for m in matcher.push(event):
                if m.key not in seen:
                    seen.add(m.key)
                    out.append(m)
            if limit is not None and len(out) >= limit:
                stopped = True
                break
        self.last_run = {"arena_nodes": matcher.arena_nodes, "stopped_early": stopped}
        return out

    def count(self, stream) -> int:
        """How many times a list of matches completed (no enumeration): the update cost alone, for bench/."""
        evaluator = run_all(self.program, Stream.from_any(stream), collect=False)
        self.last_run = {"arena_nodes": len(evaluator.arena.pos)}
        return evaluator.emitted

    def size(self, stream) -> int:
        """How many matches ``run`` finds in ``stream`` under ALL without LIMIT, counted without enumerating
        them (-1 past a 64-bit count): what a result takes before it is made (``engines.result_size``)."""
        return count_all(self.program, Stream.from_any(stream))

    def matcher(self) -> IncrementalPlan:
        return AutomatonMatcher(self.program)

    def fresh(self) -> "AutomatonPlan":
        """The same ``Program`` (whose determinized table only grows, with the same answers), a new
        ``last_run``."""
        return AutomatonPlan(self.program)

    def info(self) -> dict:
        p = self.program
        return {
            "cea_states": p.cea.n_states,
            "cea_transitions": len(p.cea.transitions),
            "tests": len(p.alphabet),
            "letters": len(p.letters),
            "determinized_states": len(p.det.subsets),
            "determinized_transitions": len(p.det.moves),
            "strategy": p.query.strategy,
            "kernel": kernel.name(),
            "enumeration": p.enumeration,
            # NEXT/LAST/MAX inside the pattern: "closure" (the trackers make the letters) or "filter" (run
            # alone, then filtering), docs/automaton-engine.md
            "nested_selection": p.how,
            **({"tracker_states": len(p.closure)} if p.closure is not None else {}),
            **self.last_run,
        }


class Chosen:
    """The sub-matches a nested selection chose (their position tuples) that a match may still contain.

    Per PARTITION BY key, in the order they were chosen, with the window key (time, or sub-stream index
    under EVENTS windows) of the event at which they were: a match completed now or later starts at or
    after its key's lowest live start (``_Part.lower``), so a sub-match chosen before it (its events are
    no later) is in none and is forgotten; so are a dropped key's. Without a window every one is kept.
    """

    def __init__(self):
        self.positions: set = set()
        self.by_key: dict = {}  # key -> deque of (window key when chosen, positions)

    def __contains__(self, positions: tuple) -> bool:
        return positions in self.positions

    def __len__(self) -> int:
        return len(self.positions)

    def add(self, key, window_key: float, found) -> None:
        for m in found:
            if m.positions not in self.positions:
                self.positions.add(m.positions)
                self.by_key.setdefault(key, deque()).append((window_key, m.positions))

    def forget(self, key, before: float = np.inf) -> None:
        """Forget ``key``'s sub-matches chosen at a window key below ``before`` (all of them by default)."""
        kept = self.by_key.get(key)
        while kept and kept[0][0] < before:
            self.positions.discard(kept.popleft()[1])
        if kept is not None and not kept:
            del self.by_key[key]


class _Part:
    """One partition's state in the incremental matcher."""

    def __init__(self, state):
        self.state = state  # its slot of the matcher's RunsTable (ALL, STRICT) or a strategy selector
        self.count = 0  # events of this partition so far (its sub-stream index)
        self.gap = 0  # irrelevant events since its last relevant one
        self.lower = -np.inf  # smallest live start key, as of its last event


class AutomatonMatcher(IncrementalPlan):
    """Push one event, get the matches it completes: O(active states) per event for ALL and STRICT."""

    def __init__(self, program: Program):
        self.program = program
        self.parts: dict = {}
        self.expiry = KeyExpiry(program.query.window_seconds)  # drops a key's part once its window passed
        if program.ranked:
            # NEXT, LAST, MAX: each key's groups in a slot of the selector's table (``strategies.Selector``)
            self.selector = Selector(program)
            self.table = self.selector.table
            self.reported: dict = {}  # consume scope -> last position at which a match was reported
        else:
            # each event's matches sorted as enumerated (a push's few cost nothing; a micro-batch's are
            # then in output order per event without a sort in Python: ``extend``)
            # under LIMIT n (each match emitted at its last event: no RETURN; keys in stream order: no
            # PARTITION BY) a call's enumeration stops at n, and a list past it yields its first ones only
            query = program.query
            limited = query.select is None and not query.partition_by
            self.evaluator = Evaluator(program, limit=query.ast.limit if limited else None)
            self.table = RunsTable(len(self.evaluator.scratch.marked))  # each key's runs
            self.runs = self.evaluator.new_runs()  # the runs the kernel advances, loaded from the table
        # the one-event batch each push fills in (made once: eight arrays per push cost more than the
        # kernel): it loads its key's runs (or groups) and stores them back
        self.batch = Batch(
            np.zeros(1, np.int64),
            np.zeros(1, np.int32),
            np.zeros(1),
            np.zeros(1),
            np.zeros(1, np.int64),
            np.ones(1, bool),
            np.zeros(1, np.int64),
            np.ones(1, bool),
        )
        # nested selections, in lockstep: (variables, their matcher, the sub-matches chosen and still usable)
        self.nested = [(sel.variables, sel.plan.matcher(), Chosen()) for sel in program.nested]
        # RETURN keys already reported: two matches differing only in projected-away variables may end at
        # different events, yet are one (C, beta) (docs/language.md §10.2), reported once, as the batch run does
        self.projected = None if program.query.select is None else ReportedOnce(program.query.window_seconds)
        select = program.query.select
        # per variable id: (name, whether Kleene, whether RETURN keeps it); an unnamed position is kept
        # only without RETURN (id -1: the last entry)
        self.variables = RowShape(
            [
                (name, name in program.query.kleene_variables, select is None or name in select)
                for name in program.cea.variables
            ]
            + [(None, False, select is None)]
        )
        self.steppers: list = []  # the per-event steps of ``Matcher.pusher`` (``_Stepper``)
        self.trackers: dict = {}  # PARTITION BY key -> its closure trackers' state (nested NEXT/LAST/MAX)

    def step(self, columns: tuple):
        """A step for events given as values of ``columns`` (``cepkit.Matcher.pusher``): ``step(type, time,
        values, position)`` returns the matches the event completes, in output order, as ``push`` would;
        None where only ``push`` can (strategies, nested selections, RETURN, CONSUME BY ANY under
        PARTITION BY: a Python step per event or match, or keys interleaved)."""
        program = self.program
        if (
            program.ranked
            or self.nested
            or program.closure is not None
            or self.projected is not None
            or (program.consume == "ANY" and program.query.partition_by)
        ):
            return None
        stepper = _Stepper(self, columns)
        self.steppers.append(stepper)
        return stepper.in_time if stepper.window == "time" else stepper

    def _settle_steps(self) -> None:
        """Run the events the steps hold back (none of them completes a match) before anything else reads
        or moves the runs, and forget the part each kept (what comes next may drop or make parts)."""
        for stepper in self.steppers:
            if stepper.n:
                stepper.flush()
            stepper.part = None

    def push(self, event) -> list:
        self._settle_steps()
        found = self._push(event)
        return found if self.projected is None else self.projected.unreported(found, event.time)

    def extend(self, stream):
        """A micro-batch (a ``Stream``) as columns: letters computed column-wise, every PARTITION BY key's
        events through the kernel in one call (key after key, each from its runs in the ``RunsTable``,
        stored back after its last event), the matches as a ``MatchList`` equal to what pushing the events
        one by one returns (each event's matches in output order, event after event). NEXT, LAST and MAX
        run the same way through their own kernel (``_select_batch``), the letters, keys and gaps
        computed column-wise (each key's closure trackers, for nested NEXT/LAST/MAX, carried from batch
        to batch). Nested selections by filtering, RETURN and CONSUME
        BY ANY across keys need a Python step per event or match (or the keys interleaved): they push
        event by event, as does a batch out of time order (the key expiry below assumes order)."""
        self._settle_steps()
        program = self.program
        if (
            self.nested
            or self.projected is not None
            or stream.first_disorder() is not None
            or (program.consume == "ANY" and program.query.partition_by)
        ):
            return super().extend(stream)
        punctuation = stream.type_in(frozenset({PUNCTUATION}))
        read = np.flatnonzero(~punctuation) if punctuation.any() else np.arange(len(stream))
        if not len(read):
            return []
        codes = program.alphabet.letters_of(StreamColumns(stream))[read]
        if program.query.partition_by:
            groups, firsts = _first_appearance(stream.key_codes(program.query.partition_by)[read])
            keys = partition_keys(program.query, stream, read[firsts])
        else:
            groups, keys = np.zeros(len(read), np.int64), [()]
        if program.closure is None:
            letters = program.letters.of_codes(codes)
        else:  # each key's trackers go on from where its last push or batch left them
            initial = program.closure.initial
            states = np.array([self.trackers.get(key, initial) for key in keys], np.int32)
            letters = program.closure.letters_of(codes, groups, states)
            self.trackers.update(zip(keys, states.tolist()))
        program.table.ensure_letters(len(program.letters))
        batch = _KeyedBatch(self, stream.times[read], stream.position_of(read), letters, groups, keys)
        if program.ranked:
            found = self._select_batch(batch, keys)
        elif len(batch.kernel.pos):
            self.runs = self.evaluator.run(batch.kernel, self.runs, self.table, self._lowers)
        self._settle(keys, batch)
        last = np.argsort(batch.last_event, kind="stable")  # keys in the order of their last event
        self.expiry.touch_all([keys[g] for g in last.tolist()], stream.times[read[batch.last_event[last]]].tolist())
        self._drop(self.expiry.expired(float(stream.times[read[-1]])))
        if program.ranked:
            return found
        self.evaluator.finish()
        outputs = self.evaluator.outputs
        if not len(outputs):
            return []
        found = program.matches(outputs)[0]  # views of the outputs' buffers: copied before clearing
        # each event's rows are sorted as enumerated; events (key after key) are put in order unless in order
        found = found.copy() if found.in_output_order() else found.take(found.output_index()[0])
        outputs.clear()
        return MatchList(found)

    def _settle(self, keys: list, batch: "_KeyedBatch") -> None:
        """Each key's part left as ``push`` leaves it after the batch (``_KeyedBatch``'s facts): a key that is
        new or whose window passed in the batch (``push``'s key expiry drops it) has a new part, whose
        runs start afresh unless its last sub-stream read an event (and under CONSUME BY, what it reported
        is forgotten: ``_consumed`` forgot it where such a sub-stream read an event)."""
        parts, ranked = self.parts, self.program.ranked
        for key, part, slot, continued, ends_read, count, gap, lower in zip(keys, batch.parts, *batch.facts):
            if not continued:
                if part is not None:
                    del parts[key]  # dropped and made again, as ``push`` would
                part = parts[key] = _Part(slot)
                if ranked and not ends_read:
                    self.reported.pop(key, None)
            if ends_read:
                part.lower, part.gap = lower, gap
            else:
                part.gap += count - part.count
            part.count = count
        self.table.restart(batch.restarted)

    def _push(self, event) -> list:
        if event.type == PUNCTUATION:
            return []
        program = self.program
        gone = self.expiry.expired(event.time)
        if gone:
            self._drop(gone)
        key = partition_key(program.query, event)
        self.expiry.touch(key, event.time)
        part = self.parts.get(key)
        if part is None:
            part = self.parts[key] = _Part(self._fresh())
        sub_index = part.count
        part.count += 1
        window_key = program.key_of(event, sub_index)
        for _, matcher, chosen in self.nested:
            chosen.add(key, window_key, matcher.push(event))
        if program.closure is None:
            letter = program.letters.of_event(event)
        else:  # the key's trackers read every event of its sub-stream
            state = self.trackers.get(key, program.closure.initial)
            self.trackers[key], letter = program.closure.step(state, program.alphabet.letter_of(event))
        program.table.ensure_letters(len(program.letters))
        if letter == program.letters.none:
            part.gap += 1
            return []
        limit = window_limit_at(program.query.within, window_key)
        part.lower = window_key - limit
        for _, _, chosen in self.nested:
            chosen.forget(key, before=part.lower)
        gap, part.gap = part.gap, 0
        if program.ranked:
            return self._select(part, key, letter, event.position, window_key, limit, gap)
        batch = self.batch
        batch.pos[0], batch.letter[0], batch.key[0], batch.limit[0], batch.gap[0], batch.slot[0] = (
            event.position,
            letter,
            window_key,
            limit,
            gap,
            part.state,
        )
        self.runs = self.evaluator.run(batch, self.runs, self.table, self._lowers)
        outputs = self.evaluator.outputs
        if self.evaluator.roots.n[0]:
            self.evaluator.finish()
        if not len(outputs):
            return []
        if self.nested:
            found, completed = program.matches(
                outputs, chosen=[(variables, picked) for variables, _, picked in self.nested]
            )
            found = list(found)
            outputs.clear()
        else:
            found, completed = _rows_as_matches(outputs.packed(), self.variables)
        if completed and program.consume == "ANY":
            self.table.restart([other.state for other in self.parts.values()])
        return found

    @property
    def arena_nodes(self) -> int:
        """The size of the node arena (it grows only while more than half of it is live)."""
        self._settle_steps()
        return len((self.selector if self.program.ranked else self.evaluator).arena.pos)

    def active(self, cap: int) -> tuple:
        """(CEA state -> partial matches of its live runs, at most ``cap`` each; whether a list was cut)."""
        self._settle_steps()
        program = self.program
        if not self.parts:
            return {program.cea.initial: [()]}, False
        held = []  # (CEA states, node, lowest live start key)
        for part in self.parts.values():
            states, nodes = self.table.runs(part.state)  # CEA states (NEXT, LAST, MAX), deterministic ones otherwise
            sets = (
                [{state} for state in states.tolist()] if program.ranked else [program.det.subsets[s] for s in states]
            )
            held += [(subset, node, part.lower) for subset, node in zip(sets, nodes.tolist())]
        arena = (self.selector if program.ranked else self.evaluator).arena
        partials = partial_events(arena, [node for _, node, _ in held], [lower for *_, lower in held], cap + 1)
        active: dict = {}
        truncated = False
        for (states, _, _), found in zip(held, partials):
            for state in sorted(states):
                listed = active.setdefault(state, [])
                listed += [p for p in found if p not in listed]
        for state, listed in active.items():
            if len(listed) > cap:
                truncated = True
                del listed[cap:]
        return active, truncated

    def _fresh(self):
        """A new key's state: a slot of the table, its runs (or groups) not started."""
        return self.table.take(1)[0]

    def _drop(self, keys: list) -> None:
        """Forget ``keys`` (their window has passed): their parts, slots, what they reported and chose."""
        parts = [self.parts.pop(key) for key in keys]
        if self.program.ranked:
            for key in keys:
                self.reported.pop(key, None)
        self.table.release([part.state for part in parts])
        for _, _, chosen in self.nested:
            for key in keys:
                chosen.forget(key)

    def _lowers(self) -> np.ndarray:
        """Each slot's lowest live start key, for compaction (a slot without a part yet, or free: -inf)."""
        lowers = np.full(len(self.table.stored.n), -np.inf)
        parts = self.parts.values()
        lowers[np.array([p.state for p in parts], np.int64)] = [p.lower for p in parts]
        return lowers

    # ------------------------------------------------------------------ NEXT, LAST, MAX
    def _select_batch(self, batch: "_KeyedBatch", keys: list):
        """A micro-batch's read events through the selector's kernel (key after key, each key's groups
        loaded from its slot and stored back), the matches chosen in output order."""
        read, selector = batch.kernel, self.selector
        if len(read.pos):
            selector.run(read, len(read.pos))
        outputs = selector.outputs
        if self.program.consume is not None:  # a micro-batch's scope is its key (ANY across keys pushes)
            kept = consumed(read, [keys[g] for g in batch.groups.tolist()], outputs, self.reported)
        if not len(outputs):
            return []
        found = self.program.matches(outputs)[0]  # views of the outputs' buffers: copied before clearing
        if self.program.consume is not None:
            found = found.take(kept)
        found = found.copy() if found.in_output_order() else found.take(found.output_index()[0])
        outputs.clear()
        return MatchList(found)

    def _select(self, part: _Part, key, letter, position, window_key, limit, gap) -> list:
        """One event of ``part``'s sub-stream through the selector's kernel (a one-event batch)."""
        program, batch = self.program, self.batch
        batch.pos[0], batch.letter[0], batch.key[0], batch.limit[0], batch.gap[0], batch.slot[0] = (
            position,
            letter,
            window_key,
            limit,
            gap,
            part.state,
        )
        self.selector.run(batch, 1)
        outputs = self.selector.outputs
        if not len(outputs):
            return []
        scope = () if program.consume == "ANY" else key
        found, reported = _rows_as_matches(outputs.packed(), self.variables, self.reported.get(scope, -1))
        if program.consume is not None and reported:
            self.reported[scope] = position
        return found


class _Stepper:
    """``AutomatonMatcher.push`` for events given as values (``cepkit.Matcher.pusher``), with the kernel
    called once per few events: an event whose letter has no • transition into a final state completes no
    match, so it is only written into a held ``Batch`` (position, letter, window key and limit, gap, its
    key's slot) and returns nothing; the first event that may complete one (or a full batch, or a key
    dropped by the expiry) runs the held events through the kernel in one call, as a micro-batch of
    keys. What a push computes per event in Python (its key's part, sub-stream index, gap, lowest live
    start, key expiry) is computed here the same way, so the runs after each call are the pushes'.
    ``AutomatonMatcher`` runs what is held before anything else reads or moves its runs (and forgets the
    step's kept ``part``). A step costs ~0.8-1.3 µs, a flush ~1.15 µs fixed (the compiled call through
    ``kernel.entry``, without numba's dispatch), a match ~0.55 µs (bench/README.md, "Matcher per push")."""

    SIZE = 256

    def __init__(self, matcher: AutomatonMatcher, columns: tuple):
        self.matcher = matcher
        program = matcher.program
        self.letters = program.letters
        self.none = program.letters.none
        # type -> (its letter, whether it may complete a match); left empty when letters read conditions
        # (an Event per event)
        self.by_type: dict = {}
        self.typed = program.letters._by_type is not None
        self.completing: dict = {}  # letter -> whether it may complete a match
        within = program.query.within
        self.window = None if within is None else ("events" if within.events else "time")
        self.w = None if within is None else (float(math.ceil(within.amount) - 1) if within.events else within.seconds)
        self.floor = 1.0 if self.w is None else max(self.w, 1.0)
        self.low, self.high = 1.0, 0.0  # (``_limit_at``: none yet)
        self.last = matcher.expiry.last
        # at most the last time of the oldest key in ``last`` (no key's window passed before ``oldest + w``)
        self.oldest = -math.inf
        self.keyed = bool(program.query.partition_by)
        key_at = [(name, columns.index(name) if name in columns else None) for name in program.query.partition_by]
        self.key_of = values_key(key_at)
        # under a time window, the last event's part, its key, and (keyed by one column) its int or str value
        # there: an event of the same value has the same part, its key already last in ``last``. None
        # once a key is dropped or another call ran (``AutomatonMatcher._settle_steps``)
        self.part, self.part_key, self.part_kind, self.part_value = None, (), None, None
        self.key_column = key_column(key_at)
        self.columns = columns
        size = self.SIZE
        # a held event's sub-stream is loaded from its slot exactly when it starts one: ``load`` is ``reset``.
        # With one key every held event has the same slot (a new part comes after a flush): ``slot`` is
        # filled with it and ``reset`` is True at the first only; with keys both are written per event
        reset = np.zeros(size, bool)
        reset[0] = True
        # every held event's window limit is the same: without a window, infinite; over n EVENTS, n - 1;
        # under a time window, the one over the binade of its time (``_limit_at`` fills it anew)
        self.limit_now = math.inf if self.window != "events" else self.w
        self.batch = Batch(
            np.zeros(size, np.int64),
            np.zeros(size, np.int32),
            np.zeros(size),
            np.full(size, self.limit_now),
            np.zeros(size, np.int64),
            reset,
            np.zeros(size, np.int64),
            reset,
        )
        # item writes through memoryviews cost a third of numpy's
        self.pos, self.letter, self.key, _, self.gap, self.reset, self.slot, _ = (memoryview(a) for a in self.batch)
        self.n = 0
        self.last_slot = -1
        self.lowers, self.variables = matcher._lowers, matcher.variables
        self.consume_any = program.consume == "ANY"

    def __call__(self, type_: str, time: float, values, position: int) -> list:
        """The step without a time window (``n EVENTS`` or none: no key expires); ``in_time`` with one."""
        m = self.matcher
        n = self.n
        if not n and len(m.steppers) > 1:
            m._settle_steps()  # another pusher's events come first
        key = self.key_of(type_, time, values) if self.keyed else ()
        part = m.parts.get(key)
        if part is None:
            part = m.parts[key] = _Part(m._fresh())
        sub_index = part.count
        part.count = sub_index + 1
        known = self.by_type.get(type_)
        letter, completes = self._letter(type_, time, values, position) if known is None else known
        if letter == self.none:
            part.gap += 1
            return []
        window_key, limit = (0.0, math.inf) if self.window is None else (float(sub_index), self.w)
        return self._hold(part, n, position, letter, window_key, limit, completes)

    def in_time(self, type_: str, time: float, values, position: int) -> list:
        """The step under a time window: a key whose window has passed is dropped first (``KeyExpiry``),
        an event's window key is its time, its limit the same over a binade (``_limit_at``)."""
        m = self.matcher
        n = self.n
        if not n and len(m.steppers) > 1:
            m._settle_steps()  # another pusher's events come first
        if time - self.w > self.oldest:  # a key's window may have passed
            n = self._expire(time, n)
        part = self.part
        if part is not None and (
            not self.keyed or (type(value := values[self.key_column]) is self.part_kind and value == self.part_value)
        ):
            self.last[self.part_key] = time
        else:
            part = self._part(type_, time, values)
        part.count += 1
        known = self.by_type.get(type_)
        letter, completes = self._letter(type_, time, values, position) if known is None else known
        if letter == self.none:
            part.gap += 1
            return []
        scale = time if time > 0.0 else -time
        if not self.low <= scale < self.high:
            n = self._limit_at(scale, n)
        return self._hold(part, n, position, letter, time, self.limit_now, completes)

    def _part(self, type_: str, time: float, values) -> _Part:
        """The event's key's part (made for a new key), its time last in ``last``; kept for the next event
        (``part``) without keys or when the key is one column's int or str."""
        m, last = self.matcher, self.last
        self.part = None
        if self.keyed:
            key = self.key_of(type_, time, values)
            last[key] = time
            last.move_to_end(key)
        else:
            key = ()
            last[key] = time  # (the only key: no order to keep)
        part = m.parts.get(key)
        if part is None:
            part = m.parts[key] = _Part(m._fresh())
        if not self.keyed:
            self.part, self.part_key = part, key
        elif self.key_column is not None:
            value = values[self.key_column]
            kind = type(value)
            if kind is int or kind is str:  # (== is exact on these, as the dict's)
                self.part, self.part_key, self.part_kind, self.part_value = part, key, kind, value
        return part

    def _expire(self, time: float, n: int) -> int:
        """Drop the keys whose window has passed at ``time`` (``KeyExpiry.expired``), after running the
        held events (none completes a match) if any is dropped; then ``oldest`` is the oldest key's last
        time (events come in time order: the first in ``m.expiry.last``, and it only grows). Returns how
        many events are held."""
        last = self.last
        if last and next(iter(last.values())) < window_horizon(time, self.w):
            if n:
                self.flush()
                n = 0
            self.matcher._drop(self.matcher.expiry.expired(time))
            self.part = None
        self.oldest = next(iter(last.values())) if last else time
        return n

    def _hold(
        self, part: _Part, n: int, position: int, letter: int, window_key: float, limit: float, completes
    ) -> list:
        """Hold an event its part's letter reads as the ``n``-th; run the held events when it may complete a
        match or the batch is full. (Every held event's ``limit`` is ``limit``: ``batch.limit`` holds it.)"""
        part.lower = window_key - limit
        slot = part.state
        if self.keyed:
            self.reset[n], self.slot[n] = slot != self.last_slot or not n, slot
            self.last_slot = slot
        elif slot != self.last_slot:  # one key, a new part: its slot for every held event
            if n:  # (none of the held events completes a match: nothing to return)
                self.flush()
                n = 0
            self.batch.slot.fill(slot)
            self.last_slot = slot
        self.pos[n], self.letter[n], self.key[n], self.gap[n] = position, letter, window_key, part.gap
        part.gap = 0
        self.n = n + 1
        if completes or n + 1 == self.SIZE:
            return self.flush()
        return []

    def _limit_at(self, scale: float, n: int) -> int:
        """The window's limit for keys of absolute value ``scale`` (``window_limit_at``), and the range of
        scales with the same one (``math.ulp`` is constant over a binade, and below ``floor``). The held
        batch's ``limit`` holds it for every event: a new one runs the ``n`` held events first (none
        completes a match). Returns how many events are held."""
        at = scale if scale > self.floor else self.floor
        limit = time_limit(self.w, at)
        if limit != self.limit_now:
            if n:
                self.flush()
                n = 0
            self.limit_now = limit
            self.batch.limit.fill(limit)
        mantissa, exponent = math.frexp(at)  # at = mantissa · 2**exponent, 0.5 <= mantissa < 1
        self.low = 0.0 if at == self.floor else math.ldexp(0.5, exponent)
        self.high = math.ldexp(1.0, exponent)
        return n

    def _letter(self, type_: str, time: float, values, position: int) -> tuple:
        """The event's letter, through an ``Event`` (conditions, or a type met for the first time), and
        whether it may complete a match: one of its • transitions enters a final state."""
        letter = self.letters.of_event(values_event(self.columns, type_, time, values, position))
        self.matcher.program.table.ensure_letters(len(self.letters))
        completes = self.completing.get(letter) if letter != self.none else False
        if completes is None:
            cea = self.matcher.program.cea
            completes = self.completing[letter] = any(
                cea.transitions[i].mark and cea.transitions[i].dst in cea.finals for i in self.letters.enabled[letter]
            )
        if self.typed:
            self.by_type[type_] = (letter, completes)
        return letter, completes

    def flush(self) -> list:
        """Run the held events through the kernel; the matches of the last one (no other completes any)."""
        m, n = self.matcher, self.n
        self.n = 0
        m.runs, rows = m.evaluator.run_held(self.batch, m.runs, m.table, self.lowers, n)
        if not rows:
            return []
        found, completed = _rows_as_matches(rows, self.variables)
        if completed and self.consume_any:
            m.table.restart([other.state for other in m.parts.values()])
        return found


class _KeyedBatch:
    """A micro-batch's events (punctuation left out) key by key, each key's in stream order, with what
    ``push`` computes per event: its index in its key's sub-stream (``sub_index``), whether the key's window
    had passed just before it (``push``'s key expiry then dropped the key and a fresh sub-stream starts:
    ``segment`` numbers the sub-streams), whether it continues the key's sub-stream from before the batch
    (``carried``). Kept: ``kernel``, the kernel's ``Batch`` of the events it reads (letter not ``none``)
    with their gaps, window keys and limits, key after key, each key's first sub-stream loaded from its
    slot of the matcher's ``RunsTable`` when carried (a new key takes a slot here); per key its ``parts``
    before the batch, its ``last_event`` (an index into the batch), and the ``facts``
    ``AutomatonMatcher._settle`` needs: its slot, whether its part goes on (its last event carried),
    whether its last sub-stream has a read event, its count, and after its last read event the gap and
    lowest start; ``restarted``: the slots to start afresh after the kernel (a new part whose last
    sub-stream read nothing)."""

    def __init__(self, matcher: "AutomatonMatcher", times, positions, letters, groups, keys: list):
        program = matcher.program
        order = np.argsort(groups, kind="stable") if len(keys) > 1 else None  # None: one key, in order
        n, t, g = len(groups), times if order is None else times[order], groups if order is None else groups[order]
        first_row = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])  # key g's rows: first..last
        last_row = np.r_[first_row[1:], n] - 1
        self.last_event = last_row if order is None else order[last_row]  # its last event, in stream order
        self.parts = parts = [matcher.parts.get(key) for key in keys]
        slots, count, gap = (
            np.array([(p.state, p.count, p.gap) if p is not None else (-1, 0, 0) for p in parts], np.int64)
            .reshape(len(parts), 3)
            .T
        )
        exists = slots >= 0
        if not exists.all():  # new keys: slots of runs not started
            slots[~exists] = matcher.table.take(int(np.count_nonzero(~exists)))
        local = np.arange(n) - np.repeat(first_row, last_row - first_row + 1)
        restart = np.zeros(n, bool)
        w = program.query.window_seconds
        if w is not None:  # as ``KeyExpiry.expired`` drops a key whose last event is below the horizon
            horizon = window_horizon(t, w)
            restart[1:] = t[:-1] < horizon[1:]
            before = np.array([matcher.expiry.last.get(key, -np.inf) for key in keys])
            restart[first_row] = exists & (before < horizon[first_row])
        starts = (local == 0) | restart
        segment = np.cumsum(starts) - 1
        first_segment = segment[first_row][g]
        carried = exists[g] & ~restart[first_row][g] & (segment == first_segment)
        carried_count = np.where(carried, count[g], 0)
        sub_index = np.arange(n) - np.flatnonzero(starts)[segment] + carried_count
        letter = letters if order is None else letters[order]
        none = program.letters.none
        k = np.flatnonzero(letter != none) if none is not None else np.arange(n)  # the rows the kernel reads
        same = np.zeros(len(k), bool)  # the kernel's previous event is in the same sub-stream
        same[1:] = segment[k[1:]] == segment[k[:-1]]
        sub = sub_index[k]
        after_previous = sub - np.r_[0, sub[:-1]] - 1
        from_start = sub - np.where(carried[k], carried_count[k] - gap[g[k]], 0)
        window = program.query.within
        key = window_keys(window, sub, t, k)
        self.rows, self.groups = (k if order is None else order[k]), g[k]  # each read event's row and key
        self.kernel = Batch(
            (positions if order is None else positions[order])[k].astype(np.int64),
            letter[k].astype(np.int32),
            key,
            window_limit(window, key),
            np.where(same, after_previous, from_start).astype(np.int64),
            ~same,
            slots[g[k]],
            ~same & carried[k],
        )
        # per key, after its last read event (its last entry of ``kernel``)
        entries = np.searchsorted(g[k], np.arange(len(keys) + 1))
        has = entries[1:] > entries[:-1]
        last_entry = np.maximum(entries[1:] - 1, 0)
        last_read = k[last_entry] if len(k) else np.zeros(len(keys), np.int64)
        ends_read = has & (segment[last_read] == segment[last_row]) if len(k) else has
        continued = carried[last_row]
        count = sub_index[last_row] + 1
        lower = self.kernel.key[last_entry] - self.kernel.limit[last_entry] if len(k) else np.zeros(len(keys))
        self.facts = (
            slots.tolist(),
            continued.tolist(),
            ends_read.tolist(),
            count.tolist(),
            (count - 1 - sub_index[last_read]).tolist(),
            lower.tolist(),
        )
        self.restarted = slots[~continued & ~ends_read]


def _first_appearance(codes: np.ndarray) -> tuple:
    """(group of each row numbered in order of first appearance, the first row of each group)."""
    groups, _ = pd.factorize(codes)
    _, firsts = np.unique(groups, return_index=True)
    return groups.astype(np.int64), firsts


class RowShape:
    """What ``_rows_as_matches`` reads of a query's variables, found once per matcher: ``variables``, (name,
    whether Kleene, whether RETURN keeps it) per variable id, the last for id -1 (unnamed, in no binding);
    ``plain``: every variable named, kept and not Kleene, unnamed positions kept (no RETURN)."""

    def __init__(self, variables: list):
        self.variables = variables
        self.plain = (
            all(keep and not kleene and name is not None for name, kleene, keep in variables[:-1]) and variables[-1][2]
        )
        self.names = [name for name, _, _ in variables]
        self.same = (None, None)  # the variables of the last plain row made, and their names (kept across calls)


def _rows_as_matches(rows: list, shape: RowShape, after: int = -1) -> tuple:
    """``Program.matches`` without nested selections for one push, built in Python from ``Outputs.packed``'s
    ``rows``: a push completes a few complex events, for which ``MatchArrays``' column-wise building (made
    for millions of rows) costs far more than it saves. (The ``Match`` objects of those starting after
    position ``after``; whether any did.) RETURN keeps its variables' positions only, and a row it
    projects all away is left out (CONSUME BY still counts it). A row of a ``plain`` shape is a
    ``Match.named`` (its bindings dict made when read)."""
    found, completed = [], False
    variables, plain, names = shape.variables, shape.plain, shape.names
    same_ids, same_names = shape.same
    named, made, append = Match.named, Match.made, found.append
    at, end = 0, len(rows)
    while at < end:
        emit, first = rows[at], at + 2
        mid = first + rows[at + 1]  # a row: emit, k, its k positions (first..mid), its k variables (mid..at)
        at = 2 * mid - first
        if rows[first] <= after:
            continue
        completed = True
        ids = rows[mid:at]
        if ids != same_ids and plain and -1 not in ids:  # every position bound once, kept: without a loop
            same_ids, same_names = shape.same = ids, tuple(names[v] for v in ids)
        if ids == same_ids:
            append(named(tuple(rows[first:mid]), same_names, emit if emit >= 0 else None))
            continue
        kept, bindings = [], {}
        for p, v in zip(rows[first:mid], ids):
            name, kleene, keep = variables[v]
            if keep:
                kept.append(p)
                if name is not None:
                    bindings[name] = bindings.get(name, ()) + (p,) if kleene else p
        if kept:
            append(made(tuple(kept), bindings, emit if emit >= 0 else None))
    return found, completed
