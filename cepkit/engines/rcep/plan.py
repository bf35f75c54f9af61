"""The recomputation plan ([RCEP] ch. 3): keep the window's events, never partial matches; on each event
that can end a match (a *trigger*, one fitting the last variable p_k), recompute in one batch every
match whose last event it is.

Per trigger, in the order of the right-deep query tree ([RCEP] §3.6.2, "a static planner starts from the right-most
leaf, which holds the trigger"):

1. **range queries** ([RCEP] §3.6.1): the candidates of each slot, right to left, are the live events of its tree
   that come before the slot on its right and can join *some* candidate there: ``a.A < b.A`` for every
   pair keeps the a with ``a.A < max(b.A)``, and against the trigger itself, ``a.A φ trigger.A`` ([RCEP] Example 2);
2. **joins into bitvectors** ([RCEP] §3.6.2): for each join predicate between two slots, B = hybrid_join (or the
   nested-loop baseline); for each Kleene slot, its chain predicates (NEXT) as a self-join: the
   "can-follow" DAG;
3. **enumeration** ([RCEP] App. B.1, Algorithm 3): right to left, slot by slot; a Kleene slot takes every chain of
   the DAG inside its allowed bits (a DFS over chains, exact where path-wise power
   sets, which would need transitivity and de-duplication), and each bound event narrows the allowed bits
   of the earlier slots by its join column (∀ semantics); a branch stops when an earlier slot has no
   event left;
4. residual conjuncts (FIRST, aggregates, ...) on each enumerated match (implicit condition 3), then the
   strategy among the matches ending at the trigger, CONSUME BY and RETURN.

Nothing outlives a trigger but the trees, so ``Matches.info`` reports what [RCEP] §3.8's experiments
measure: triggers, stored events (peak, per tree), range hits, join comparisons made and bits reused
by dominance, chains grown and matches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from ...lang import ast as A
from ..result_size import refuse_beyond_reach
from ...lang.window import earliest_time
from ...runtime.event_record import PUNCTUATION
from ...runtime.stream import Stream
from ...runtime.expiry import KeyExpiry
from ...runtime.match_arrays import AT_LAST, MatchArrays
from ...runtime.match_list import MatchList
from ...runtime.match_record import Match
from ...runtime.reported_once import ReportedOnce
from ...runtime.registry import IncrementalPlan, Plan
from ..unary import StreamColumns, unary_truth
from ...semantics.conditions import holds
from ...semantics.strategies import RANKED, beats
from ..conjuncts import substream_positions
from .batch import accepted_by_slots, run as columnar_run, runs_columnar, variable_ids
from .joins import bits, column_bits, hybrid_join, kleene_subsets, nested_join
from .keys import compare_arrays, key_function
from .open_window import OpenWindow
from .pattern import KleenePattern
from .step import RcepStep, runs as runs_step
from .stnm import RobustSkipTillNext, SkipTillNext
from .trees import EventTree
from .zorder import region_join

JOINS = ("hybrid", "nested", "zorder")
"""Join methods: Algorithm 2 per predicate, the NLJoin baseline, or Algorithm 4 on all predicates of a pair."""


@dataclass
class Stats:
    """What one run measured ([RCEP] §3.8): the ``info`` of the plan and of ``Matches``."""

    triggers: int = 0
    range_hits: int = 0
    join_tested: int = 0
    join_reused: int = 0
    chains: int = 0
    matches: int = 0
    stored: int = 0
    peak_stored: int = 0
    tree_peaks: dict = field(default_factory=dict)
    blocks: dict = field(default_factory=dict)  # region pairs decided "full" / "partial" / "none" (zorder)


class RcepPlan(Plan):
    """A query of the RCEP fragment, compiled: slot types, local tests, key functions per tree.

    ``join`` is "hybrid" (Algorithm 2), "nested" (NLJoin) or "zorder" (Algorithm 4); all give the same
    matches.
    """

    def __init__(self, query, join: str = "hybrid"):
        self.query = query
        self.join = join
        self.pattern = pattern = KleenePattern.from_query(query)
        self.slots = pattern.slots
        self.last = len(self.slots) - 1
        hierarchy = query.hierarchy if query.hierarchy is not None and query.hierarchy.attribute is None else None
        self.types = [
            None if s.atom.type is None else (hierarchy.covers(s.atom.type) if hierarchy else frozenset({s.atom.type}))
            for s in self.slots
        ]
        self.key_functions = [{} for _ in self.slots]
        self.key_attributes = {}  # key name -> the attribute an error about the outer side names
        for j, join_ in enumerate(pattern.joins):
            self.key_functions[join_.left_slot][("join", j)] = key_function(join_.left)
            self.key_functions[join_.right_slot][("join", j)] = key_function(join_.right)
            self.key_attributes[("join", j)] = _attribute(join_.left)
        for c, chain in enumerate(pattern.chains):
            self.key_functions[chain.slot][("previous", c)] = key_function(chain.previous)
            self.key_functions[chain.slot][("current", c)] = key_function(chain.current)
            self.key_attributes[("previous", c)] = _attribute(chain.previous)
        within = query.within
        self.window_seconds = query.window_seconds
        self.window_events = within.amount if within is not None and within.events else None
        self.strict = query.strategy in ("STRICT", "PARTITION_STRICT")
        self.skip_till_next = (
            SkipTillNext(self)
            if query.strategy == "STNM"
            else RobustSkipTillNext(self)
            if query.strategy == "ROBUST_STNM"
            else None
        )
        self._stats = Stats()

    def fresh(self) -> "RcepPlan":
        """The same slots, key functions and judge, no run statistics (``cepkit.match``'s plan cache: a
        repeated query is neither parsed nor compiled again; each matcher takes its own judge)."""
        plan = object.__new__(RcepPlan)  # not copy.copy: it would go through __reduce__ and compile again
        plan.__dict__.update(self.__dict__, _stats=Stats())
        return plan

    def __reduce__(self):
        # Key functions are closures: a plan travels (pickle, Spark) as what it was compiled from.
        return RcepPlan, (self.query, self.join)

    def run(self, stream):
        """Every match of a finite stream: by the columnar run (``batch``: every trigger in one kernel call,
        ``MatchArrays`` out) when the query is all the kernel does, else through the matcher."""
        stream = Stream.from_any(stream)
        refuse_beyond_reach(self.query, stream, "rcep")  # a result too large to list: said before
        if runs_columnar(self, whole=True):
            found = columnar_run(self, stream)
            if found is not None:
                matches, counters = found
                self._stats = Stats(**counters)
                return matches
        matcher = self.matcher()
        if self.skip_till_next is not None:  # STNM releases waiting matches at irrelevant events too
            return [m for event in stream for m in matcher.push(event)] + matcher.close()
        return matcher.feed(stream) + matcher.close()

    def matcher(self) -> "RcepMatcher":
        matcher = RcepMatcher(self)
        self._stats = matcher.stats  # info() reports the latest run or matcher
        return matcher

    def info(self) -> dict:
        stats = self._stats
        names = [s.var or f"#{k}" for k, s in enumerate(self.slots)]
        return {
            "join": self.join,
            "triggers": stats.triggers,
            "stored": stats.stored,
            "peak_stored": stats.peak_stored,
            "tree_peaks": {names[k]: peak for k, peak in sorted(stats.tree_peaks.items())},
            "range_hits": stats.range_hits,
            "join_tested": stats.join_tested,
            "join_reused": stats.join_reused,
            "chains": stats.chains,
            "matches": stats.matches,
            **({"blocks": dict(stats.blocks)} if self.join == "zorder" else {}),
        }

    # ------------------------------------------------------------------ per event
    def accepted(self, k: int, columns: StreamColumns, read: np.ndarray) -> np.ndarray:
        """``accepts`` over a whole stream (its ``engines.unary.StreamColumns``): type test and local tests of
        slot k, column-wise, on the events of ``read``."""
        types, slot = self.types[k], self.slots[k]
        mask = read if types is None else read & columns.type_in(types)
        for cond in slot.local:
            mask = unary_truth(cond, slot.var, columns, mask)
        return mask

    def accepts(self, k: int, event) -> bool:
        """Whether the event enters slot k's tree: its type, then its local tests (step 1, Algorithm 1)."""
        types = self.types[k]
        if types is not None and event.type not in types:
            return False
        slot = self.slots[k]
        return all(holds(cond, {slot.var: 0}, (event,)) for cond in slot.local)

    def earliest(self, event, seq: int) -> tuple:
        """(time, sequence number) of the oldest event a match ending at ``event`` may use."""
        if self.window_seconds is not None:
            return earliest_time(self.window_seconds, event.time), 0
        if self.window_events is not None:
            return -math.inf, seq - math.ceil(self.window_events) + 1
        return -math.inf, 0


def _attribute(expr) -> str:
    return next((n.attr for n in expr.walk() if isinstance(n, A.Attr)), "?")


class _Partition:
    """The trees of one PARTITION BY key (the whole stream without it)."""

    def __init__(self, plan: RcepPlan):
        self.trees = [EventTree(fns) for fns in plan.key_functions]
        self.count = 0  # events of this sub-stream so far: the next sequence number


class RcepMatcher(IncrementalPlan):
    """Push events; each trigger returns the matches it ends, final at once, except under STNM with a
    Kleene last variable and under ROBUST_STNM, where a match waits until the window of its first event
    has passed (``stnm``).

    The window's events are held in one of two forms: ``push`` keeps them in per-key event trees
    (``partitions``) and recomputes each trigger in Python; ``extend`` (a micro-batch, when the query is
    all the batch kernel does: ``batch.runs_columnar``) keeps them as columns (``window``, an
    ``open_window.OpenWindow``) and recomputes the batch's triggers in one kernel call. Switching from
    one to the other moves the kept events (at most a window of them per key)."""

    def __init__(self, plan: RcepPlan):
        self.plan = plan
        self.partitions: dict = {}
        self.stats = Stats()
        self.consumed: dict = {}  # CONSUME BY scope -> last position of the latest reported match
        # projected matches already reported (RETURN may repeat them), forgotten a window later
        self.reported = ReportedOnce(plan.window_seconds)
        self.now: Optional[float] = None  # the pushed event's time (None at close)
        self.last_recomputation = None  # the latest trigger's Recomputation, to look inside (notebook 08)
        self.waiting: list = []  # STNM: (match, its events per slot, partition key, first sequence number)
        self.judge = None if plan.skip_till_next is None else plan.skip_till_next.fresh()
        self.expiry = KeyExpiry(plan.window_seconds)  # drops a key's partition once its window passed
        self.window: Optional[OpenWindow] = None  # the kept events as columns (``extend``), or None
        self.latest = -math.inf  # the latest time seen
        self.stepping = None  # the ``step.RcepStep`` holding the window (``Matcher.pusher``), or None

    def step(self, columns: tuple):
        """``step.RcepStep`` for ``cepkit.Matcher.pusher`` when it runs the query (``step.runs``), else None."""
        return RcepStep(self, columns) if runs_step(self.plan) else None

    def push(self, event) -> list:
        if self.stepping is not None:
            self.stepping.hand_back()
        if self.window is not None:
            self._to_trees()
        self.latest = max(self.latest, event.time)
        if event.type == PUNCTUATION:
            return []
        plan = self.plan
        key = tuple(event.get(k) for k in plan.query.partition_by)
        return self._push(event, key, None, [k for k in range(len(plan.slots)) if plan.accepts(k, event)])

    def extend(self, stream):
        """A micro-batch as columns: the kept events and the batch through the batch kernel, only the
        batch's triggers recomputed (``batch.run`` with an ``OpenWindow``); the matches as a ``MatchList``
        in the order pushing the events returns them. Event by event (``push``) when the query is not all
        the kernel does, when the batch is out of time order, or its keys are not numbers."""
        plan = self.plan
        if self.stepping is not None:
            self.stepping.hand_back()
        if not runs_columnar(plan) or not len(stream) or stream.first_disorder(self.latest) is not None:
            return super().extend(stream)
        window = self.window
        if window is None:
            window = OpenWindow.of_trees(plan, self.partitions, stream.ts_is_datetime)
            if self.waiting:  # STNM's waiting matches as rows (their events are the trees' live ones)
                window.pending = _waiting_rows(self.waiting)
                if not np.isin(window.pending[1], window.stream.positions).all():
                    return super().extend(stream)
        joined = window.joined(plan, stream)
        found = None if joined is None else columnar_run(plan, joined.stream, joined)
        if found is None:
            if self.window is not None:
                self._to_trees()
            return super().extend(stream)
        matches, counters = found
        if self.window is None:  # the trees' events are in ``joined`` now
            self.partitions.clear()
            self.expiry = KeyExpiry(plan.window_seconds)
            self.waiting = []
        self.window = joined.kept(plan)
        self.latest = max(self.latest, float(stream.times.max()))
        stats = self.stats
        for name in ("triggers", "range_hits", "join_tested", "join_reused", "chains"):
            setattr(stats, name, getattr(stats, name) + counters[name])
        stats.matches += len(matches)
        stats.stored = int(self.window.accepted.sum())
        stats.peak_stored = max(stats.peak_stored, counters["peak_stored"])
        for k, peak in counters["tree_peaks"].items():
            stats.tree_peaks[k] = max(stats.tree_peaks.get(k, 0), peak)
        return MatchList(matches)

    def _to_trees(self) -> None:
        """The kept events (``window``) into the per-key trees ``push`` reads, its waiting STNM matches into
        ``waiting``."""
        window, self.window = self.window, None
        plan, partitions = self.plan, self.partitions
        rows = window.rows(plan)
        for event, key, seq, slots in rows:
            part = partitions.get(key)
            if part is None:
                part = partitions[key] = _Partition(plan)
            for k in slots:
                part.trees[k].insert(event, seq)
            part.count = seq + 1
            self.expiry.touch(key, event.time)
        if window.pending is not None:
            at = {event.position: (event, key, seq) for event, key, seq, _ in rows}
            for match, (positions, slots) in zip(self._pending_matches(window), _each_row(window.pending)):
                chosen: dict = {}
                for position, slot in zip(positions.tolist(), slots.tolist()):
                    chosen.setdefault(slot, []).append(at[position][0])
                _, key, first_seq = at[int(positions[0])]
                self.waiting.append((match, [(k, tuple(e)) for k, e in chosen.items()], key, first_seq))
        for key, count in (window.counts or {}).items():  # WITHIN n EVENTS: every key's count goes on
            part = partitions.get(key)
            if part is None:
                part = partitions[key] = _Partition(plan)
            part.count = count
        self.stats.stored = sum(tree.live for part in partitions.values() for tree in part.trees)

    def feed(self, stream) -> list:
        """Every event of a finite ``Stream``, as ``push`` would take them, reading its columns: the slots'
        type and local tests over whole columns, the sub-stream sequence numbers from the partition codes;
        only the events some slot accepts are pushed (the others only count in their sub-stream, and an
        expiry is the same at the next accepted event). Not under STNM, whose releases need every event."""
        plan = self.plan
        accepted = accepted_by_slots(plan, stream, StreamColumns(stream))
        keys = stream.key_codes(plan.query.partition_by)
        seq = substream_positions(keys, ~stream.type_in({PUNCTUATION}))  # (an accepted event is read)
        relevant = np.flatnonzero(accepted.any(axis=0))
        found = []
        for i, event in zip(relevant.tolist(), stream.take(relevant)):
            found += self._push(event, int(keys[i]), int(seq[i]), np.flatnonzero(accepted[:, i]).tolist())
        return found

    def _push(self, event, key, seq: Optional[int], accepted: list) -> list:
        """An event of sub-stream ``key`` accepted by the slots ``accepted``; ``seq`` is its sequence number
        there (None: the next one)."""
        self.now = event.time
        plan, stats = self.plan, self.stats
        for gone in self.expiry.expired(event.time):  # its STNM waiting matches are released below
            stats.stored -= sum(tree.live for tree in self.partitions.pop(gone).trees)
            self.consumed.pop(gone, None)
        self.expiry.touch(key, event.time)
        part = self.partitions.get(key)
        if part is None:
            part = self.partitions[key] = _Partition(plan)
        seq = part.count if seq is None else seq
        part.count = seq + 1
        min_time, min_seq = plan.earliest(event, seq)
        for tree in part.trees:
            stats.stored -= tree.live
            tree.expire(min_time, min_seq)
            stats.stored += tree.live
        for k in accepted:
            part.trees[k].insert(event, seq)
            stats.stored += 1
        stats.peak_stored = max(stats.peak_stored, stats.stored)
        for k in accepted:
            stats.tree_peaks[k] = max(stats.tree_peaks.get(k, 0), part.trees[k].peak)
        released = self._release(event, key, seq, plan.last in accepted) if self.waiting else []
        if plan.last not in accepted:
            return self._report(released, key, event.position)
        stats.triggers += 1
        if any(not part.trees[k].live for k in range(plan.last)):
            found = []  # a variable before the last has no event in the window: no match can end here
        else:
            self.last_recomputation = recomputation = Recomputation(plan, part, stats)
            found = recomputation.matches()
        if plan.skip_till_next is not None:
            found = self._skip_till_next(found, part, key)
        elif not plan.slots[plan.last].kleene:  # a single last variable: the trigger is never needed again
            part.trees[plan.last].pop()
            stats.stored -= 1
        return self._report(released + self._select([m for m, _ in found]), key, event.position)

    def close(self) -> list:
        if self.stepping is not None:
            self.stepping.hand_back()
        released = [m for m, chosen, _, _ in self.waiting if self.judge.final(chosen)] if self.waiting else []
        self.waiting = []
        if self.window is not None and self.window.pending is not None:  # STNM, at their triggers
            released += list(self._pending_matches(self.window))
            self.window.pending = None
        self.now = None
        return self._report(released, None, None)

    def _pending_matches(self, window: OpenWindow):
        """The window's waiting STNM rows as ``MatchArrays``, each emitted at its trigger."""
        offsets, positions, slots = window.pending
        names, slot_var, kleene = variable_ids(self.plan)
        return MatchArrays.from_bindings(offsets, positions, slot_var[slots], names, kleene, AT_LAST)

    def _report(self, found: list, key, position) -> list:
        found = self._consume(found, key, position)
        found = self._project(found)
        self.stats.matches += len(found)
        return found

    def _skip_till_next(self, found: list, part: _Partition, key) -> list:
        """STNM at the trigger: drop the matches an event between their events blocks; with a Kleene last
        variable, keep the others waiting for a later extension (``stnm``)."""
        judge, kept = self.judge, []
        for match, (chosen, first_seq) in found:
            if judge.blocked(part.trees, chosen):
                continue
            if judge.waits:
                self.waiting.append((match, chosen, key, first_seq))
            else:
                kept.append((match, None))
        return kept

    def _release(self, event, key, seq: int, extends_last: bool) -> list:
        """STNM matches made final by ``event`` (their window has passed); those it extends are dropped."""
        judge, released, waiting = self.judge, [], []
        for match, chosen, part_key, first_seq in self.waiting:
            mine = part_key == key
            if judge.closed(chosen, first_seq, event, seq if mine else None):
                if judge.final(chosen):
                    released.append(replace(match, emitted_at=event.position))
            elif not (mine and extends_last and judge.extends(chosen, event)):
                waiting.append((match, chosen, part_key, first_seq))
        if len(waiting) < len(self.waiting):
            judge.retain(waiting)
        self.waiting = waiting
        return released

    def _select(self, found: list) -> list:
        """The strategy among the matches ending at this trigger (NEXT/LAST/MAX; STRICT was enumerated)."""
        strategy = self.plan.query.strategy
        if strategy not in RANKED or not found:
            return found
        sets = {frozenset(m.positions) for m in found}
        if strategy == "MAX":
            kept = {c for c in sets if not any(beats("MAX", r, c) for r in sets)}
        else:  # ≤next / ≤last are total orders ([CEL] Lemma 1): one best set
            best = next(iter(sets))
            for c in sets:
                if beats(strategy, c, best):
                    best = c
            kept = {best}
        return [m for m in found if frozenset(m.positions) in kept]

    def _consume(self, found: list, key, position: int) -> list:
        """CONSUME BY ANY / PARTITION: drop matches using a position at or before the last position of an
        earlier reported match of the same scope (docs/language.md §4, as the reference)."""
        policy = self.plan.query.consume
        if policy in (None, "NONE") or not found:
            return found
        scope = () if policy == "ANY" else key
        upto = self.consumed.get(scope, -1)
        found = [m for m in found if m.positions[0] > upto]
        if found:
            self.consumed[scope] = position
        return found

    def _project(self, found: list) -> list:
        select = self.plan.query.select
        if select is None:
            return found
        projected = [
            replace(Match.of({v: p for v, p in m.bindings.items() if v in select}), emitted_at=m.emitted_at)
            for m in found
        ]
        return self.reported.unreported([m for m in projected if m.positions], self.now)


class Recomputation:
    """Every match ending at the trigger just inserted (module docstring, steps 1-4).

    After ``matches()`` and until the next event, ``candidates()`` and ``dag(var)`` show what the batch
    worked on: the events that survived the range queries, per variable, and the can-follow DAG of a
    Kleene variable.
    """

    def __init__(self, plan: RcepPlan, part: _Partition, stats: Stats):
        self.plan, self.part, self.stats = plan, part, stats
        self.slots = plan.slots
        self.trees = part.trees
        self.last = plan.last

    def matches(self) -> list:
        if not self._candidates():
            return []
        self._join()
        self.positions = [[self.trees[s].events[row].position for row in rows] for s, rows in enumerate(self.rows)]
        self.checked = bool(self.plan.pattern.residual) or any(slot.per_event for slot in self.slots)
        out = []
        for chosen in self._bind(self.last, self.allowed, None):
            match = self._emit(chosen)
            if match is not None:
                out.append((match, self._events(chosen) if self.plan.skip_till_next is not None else None))
        return out

    def _events(self, chosen: list) -> tuple:
        """(slot, events) left to right, and the first event's sequence number: what STNM judges."""
        chosen = chosen[::-1]
        events = [(s, tuple(self.trees[s].events[self.rows[s][row]] for row in rows)) for s, rows in chosen]
        s, rows = chosen[0]
        return events, int(self.trees[s].seq[self.rows[s][rows[0]]])

    def candidates(self) -> dict:
        """variable -> positions of its candidate events (empty when a range query emptied a slot)."""
        names = [slot.var or f"#{k}" for k, slot in enumerate(self.slots)]
        out = {
            names[k]: [self.trees[k].events[row].position for row in rows] if rows is not None else []
            for k, rows in enumerate(self.rows)
            if k != self.last
        }
        out[names[self.last]] = [self.trees[self.last].events[row].position for row in self.rows[self.last][:-1]]
        out[names[self.last]].append(self.trigger.position)  # a single last variable's trigger is gone
        return {name: out[name] for name in names}

    def dag(self, var: str):
        """The can-follow DAG of Kleene variable ``var`` over its candidates (Example 4): a networkx
        ``DiGraph`` on positions, an edge u -> v when v may follow u in a chain."""
        import networkx as nx

        s = next(k for k, slot in enumerate(self.slots) if slot.var == var)
        positions = self.candidates()[var]
        graph = nx.DiGraph()
        graph.add_nodes_from(positions)
        for v, before in enumerate(self.predecessors.get(s, [])):
            graph.add_edges_from((positions[u], positions[v]) for u in bits(before))
        return graph

    # ------------------------------------------------------------------ 1. range queries
    def _candidates(self) -> bool:
        """Rows of each slot's tree that may take part; False when a slot has none."""
        last_tree = self.trees[self.last]
        trigger = last_tree.size - 1
        self.trigger = last_tree.events[trigger]
        self.predecessors = {}
        self.rows = [None] * len(self.slots)
        self.rows[self.last] = last_tree.rows(trigger + 1) if self.slots[self.last].kleene else np.array([trigger])
        for s in range(self.last - 1, -1, -1):
            tree = self.trees[s]
            right = self.rows[s + 1]
            rows = tree.rows(tree.before(int(self.trees[s + 1].seq[right[-1]])))
            for j, join in enumerate(self.plan.pattern.joins):
                if join.left_slot == s and len(rows):
                    rows = rows[self._reachable(j, join, rows)]
            self.rows[s] = rows
            if not len(rows):
                return False
            self.stats.range_hits += len(rows)
        return True

    def _reachable(self, j: int, join, rows) -> np.ndarray:
        """Mask of ``rows`` (slot ``join.left_slot``) that can join some candidate of the right slot: the
        trigger's own key when the right slot is the last one (it is in every match), else the extreme
        key among the candidates (a necessary condition only; the join is exact)."""
        keys, valid = self.trees[join.left_slot].key(("join", j), rows)
        right_rows = self.rows[join.right_slot]
        if join.right_slot == self.last:
            right_rows = right_rows[-1:]
        right, right_valid = self.trees[join.right_slot].key(("join", j), right_rows)
        right = right[right_valid]
        if not len(right):
            return np.zeros(len(rows), dtype=bool)
        if keys.dtype == object or right.dtype == object or join.op == "!=":
            return np.ones(len(rows), dtype=bool)  # no cheap bound: the join decides
        if join.op == "=":
            return np.isin(keys, right) & valid
        bound = right.max() if join.op in ("<", "<=") else right.min()
        return compare_arrays(join.op, keys, valid, np.asarray(bound), np.asarray(True))

    # ------------------------------------------------------------------ 2. joins
    def _side(self, s: int, name) -> tuple:
        tree, rows = self.trees[s], self.rows[s]
        values, valid = tree.key(name, rows)
        return values, valid, tree.seq[rows]

    def _blame(self, s: int, name):
        """(position, attribute) of the outer event of a failed comparison, for the ``EventError``."""
        tree, rows, attr = self.trees[s], self.rows[s], self.plan.key_attributes[name]
        return lambda index: (tree.events[rows[index[0]]].position, attr)

    def _join(self) -> None:
        """Column bitsets: ``self.columns[(r, s)][v]`` = rows of slot r joining row v of slot s under every
        join predicate between them; ``self.predecessors[s][v]`` = rows of Kleene slot s that may come right
        before row v in a chain. ``self.allowed[r]`` starts as every candidate of slot r."""
        pairs: dict = {}
        for j, join in enumerate(self.plan.pattern.joins):
            pairs.setdefault((join.left_slot, join.right_slot), []).append((join.op, ("join", j), ("join", j)))
        self.columns = {(r, s): column_bits(self._join_pair(r, s, predicates)) for (r, s), predicates in pairs.items()}
        self.earlier = [[r for r in range(s) if (r, s) in self.columns] for s in range(len(self.slots))]
        chained = {chain.slot for chain in self.plan.pattern.chains}
        # Kleene slots whose chains are any subset of their allowed events: Algorithm 3 enumerates them
        self.free = [
            slot.kleene and s not in chained and not self.earlier[s] and not self.plan.strict
            for s, slot in enumerate(self.slots)
        ]
        for s, slot in enumerate(self.slots):
            if slot.kleene:
                self.predecessors[s] = self._chain_dag(s)
        self.allowed = tuple((1 << len(rows)) - 1 for rows in self.rows)

    def _join_pair(self, r: int, s: int, predicates: list) -> np.ndarray:
        """B[u, v]: row v of slot s comes after row u of slot r and every ``(op, left key, right key)``
        holds; by the plan's join method, one predicate at a time, or all at once in Z-order."""
        stats = self.stats
        sides = [(op, self._side(r, left), self._side(s, right)) for op, left, right in predicates]
        numeric = all(a[0].dtype != object and b[0].dtype != object for _, a, b in sides)
        if self.plan.join == "zorder" and numeric:
            outer_seq, inner_seq = sides[0][1][2], sides[0][2][2]
            blocks: dict = {}
            joined = region_join(
                ("<",) + tuple(op for op, _, _ in sides),
                np.stack([outer_seq] + [a[0] for _, a, _ in sides], axis=1).astype(float),
                np.logical_and.reduce([a[1] for _, a, _ in sides]),
                np.stack([inner_seq] + [b[0] for _, _, b in sides], axis=1).astype(float),
                np.logical_and.reduce([b[1] for _, _, b in sides]),
                blocks,
            )
            stats.join_tested += blocks["tested"]
            for kind in ("full", "partial", "none"):
                stats.blocks[kind] = stats.blocks.get(kind, 0) + blocks[kind]
            return joined
        join_fn = hybrid_join if self.plan.join != "nested" else nested_join
        joined = None
        for (op, left, _), (_, outer, inner) in zip(predicates, sides):
            matrix, tested, reused, _ = join_fn(op, outer, inner, blame=self._blame(r, left))
            stats.join_tested += tested
            stats.join_reused += reused
            joined = matrix if joined is None else joined & matrix
        return joined

    def _chain_dag(self, s: int) -> list:
        """The can-follow DAG of Kleene slot s (its self-join under the chain predicates, Example 4), as
        predecessor bitsets; under STRICT only the event just before may precede."""
        seq = self.trees[s].seq[self.rows[s]]
        n = len(seq)
        chains = [
            (chain.op, ("previous", c), ("current", c))
            for c, chain in enumerate(self.plan.pattern.chains)
            if chain.slot == s
        ]
        if chains:
            predecessors = column_bits(self._join_pair(s, s, chains))
        else:
            predecessors = [(1 << v) - 1 for v in range(n)]  # any earlier event
        if self.plan.strict:
            predecessors = [
                p & (1 << (v - 1)) if v and seq[v - 1] == seq[v] - 1 else 0 for v, p in enumerate(predecessors)
            ]
        return predecessors

    # ------------------------------------------------------------------ 3. enumeration
    def _bind(self, s: int, allowed: tuple, next_first):
        """Every binding of slots s, s-1, .., 0 consistent with ``allowed`` (one bitset per slot), slot s's
        events before sequence number ``next_first``; yields [(slot, rows in time order)] right to left."""
        if s < 0:
            yield []
            return
        mask = allowed[s] & self._before(s, next_first)
        if s == self.last:
            ends = 1 << (len(self.rows[s]) - 1) if self.slots[s].kleene else mask  # the trigger
        else:
            ends = mask & self._last_before(s, next_first) if self.plan.strict else mask
        if self.free[s]:
            yield from self._subsets(s, ends if s == self.last else 0, mask, allowed)
            return
        for end in bits(ends):
            narrowed = self._narrow(allowed, s, end)
            if narrowed is None:
                continue
            if self.slots[s].kleene:
                yield from self._grow(s, [end], mask, narrowed)
            else:
                for rest in self._bind(s - 1, narrowed, self._seq(s, end)):
                    yield [(s, (end,))] + rest

    def _subsets(self, s: int, trigger: int, mask: int, allowed: tuple):
        """Chains of a Kleene slot without chain predicates or joins into it: every subset of its allowed
        events (Algorithm 3), with the trigger in it when it is the last slot."""
        chains = ([] if not trigger else [[]]) + list(kleene_subsets(mask & ~trigger))
        for chain in chains:
            chain = chain + list(bits(trigger))
            self.stats.chains += 1
            for rest in self._bind(s - 1, allowed, self._seq(s, chain[0])):
                yield [(s, tuple(chain))] + rest

    def _grow(self, s: int, chain: list, mask: int, allowed: tuple):
        """Chains of Kleene slot s ending with ``chain`` (latest first), grown backwards along the DAG."""
        self.stats.chains += 1
        for rest in self._bind(s - 1, allowed, self._seq(s, chain[-1])):
            yield [(s, tuple(reversed(chain)))] + rest
        for u in bits(self.predecessors[s][chain[-1]] & mask):
            narrowed = self._narrow(allowed, s, u)
            if narrowed is not None:
                yield from self._grow(s, chain + [u], mask, narrowed)

    def _narrow(self, allowed: tuple, s: int, v: int):
        """``allowed`` after binding row v of slot s: each earlier joined slot keeps the rows joining v;
        None when one of them has none left (no match can complete)."""
        earlier = self.earlier[s]
        if not earlier:
            return allowed
        narrowed = list(allowed)
        for r in earlier:
            narrowed[r] &= self.columns[r, s][v]
            if not narrowed[r]:
                return None
        return tuple(narrowed)

    def _seq(self, s: int, row: int) -> int:
        return int(self.trees[s].seq[self.rows[s][row]])

    def _before(self, s: int, next_first) -> int:
        """Rows of slot s before sequence number ``next_first`` (the first event of slot s+1; None: all)."""
        if next_first is None:
            return (1 << len(self.rows[s])) - 1
        return (1 << self._count_before(s, next_first)) - 1

    def _last_before(self, s: int, next_first: int) -> int:
        """Under STRICT, the one row of slot s that may end right before ``next_first``: the event just
        before it in the sub-stream, if slot s has it."""
        count = self._count_before(s, next_first)
        return 1 << (count - 1) if count and self._seq(s, count - 1) == next_first - 1 else 0

    def _count_before(self, s: int, next_first: int) -> int:
        return int(np.searchsorted(self.trees[s].seq[self.rows[s]], next_first, side="left"))

    # ------------------------------------------------------------------ 4. residual conditions, output
    def _emit(self, chosen: list):
        """The match of one enumerated binding (slots right to left), if its residual and per-event
        conditions hold. Slots are in sequence order and chains in time order, so the positions come out
        sorted (in an in-order stream, position order is the logical order)."""
        chosen = chosen[::-1]
        if self.checked and not self._holds(chosen):
            return None
        positions, bindings = [], {}
        for s, rows in chosen:
            picked = [self.positions[s][row] for row in rows]
            positions += picked
            var = self.slots[s].var
            if var is not None:
                bindings[var] = tuple(picked) if self.slots[s].kleene else picked[0]
        return Match(tuple(positions), bindings, emitted_at=self.trigger.position)

    def _holds(self, chosen: list) -> bool:
        """The residual conjuncts and the per-event conditions, by the language's evaluator."""
        events, env = [], {}
        for s, rows in chosen:
            tree = self.trees[s]
            indices = tuple(range(len(events), len(events) + len(rows)))
            events += [tree.events[self.rows[s][row]] for row in rows]
            var = self.slots[s].var
            if var is not None:
                env[var] = indices if self.slots[s].kleene else indices[0]
        if not all(holds(cond, env, events) for cond in self.plan.pattern.residual):
            return False
        return all(
            holds(cond, env, events)
            if self.slots[s].var is None  # no variable: a constant condition
            else all(holds(cond, {**env, self.slots[s].var: i}, events) for i in env[self.slots[s].var])
            for s, _ in chosen
            for cond in self.slots[s].per_event
        )


__all__ = ["RcepPlan", "RcepMatcher", "Stats"]


def _waiting_rows(waiting: list) -> tuple:
    """``RcepMatcher.waiting``'s matches as (offsets, positions, slots) rows, in their order."""
    offsets, positions, slots = [0], [], []
    for _, chosen, _, _ in waiting:
        pairs = sorted((e.position, s) for s, events in chosen for e in events)
        positions += [p for p, _ in pairs]
        slots += [s for _, s in pairs]
        offsets.append(len(positions))
    return tuple(np.array(values, dtype=np.int64) for values in (offsets, positions, slots))


def _each_row(rows: tuple):
    """(offsets, positions, slots) rows one at a time: (positions, slots) of each."""
    offsets, positions, slots = rows
    for r in range(len(offsets) - 1):
        yield positions[offsets[r] : offsets[r + 1]], slots[offsets[r] : offsets[r + 1]]
