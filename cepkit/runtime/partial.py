"""Timed-out partial matches and funnels: what a sequence reached when it did not complete.

Definition (docs/decisions.md, "Partial matches"). Let the query be a sequence of n positive steps
``SEQ(T1 x1, ..., Tn xn)`` under the ALL strategy, with conditions (WHERE, FILTER, condition items), an
optional window and PARTITION BY. Its *k-prefix query* Q_k is ``SEQ(T1 x1, ..., Tk xk)`` with the conjuncts
of the conditions that mention only x1..xk, the same window and partitions (Q_n is the query). A match of
Q_k is a way to take the first k steps; every prefix of a match of Q_{k+1} is a match of Q_k.

A *candidate* is an event that can start the sequence (a match of Q_1). Its *step* is the largest k
such that some match of Q_k starts at it: how far the sequence got from there, whatever the later events.
A candidate whose step is n completed (it starts a match); any other is a *partial match*: it reports
its step, the step it stopped before, and the bindings of the earliest match of Q_step that starts at it
(the smallest tuple of positions). A finite stream is complete (docs/language.md §10.4), so every
window is closed at its end; ``timed_out`` further says whether the stream went on past the candidate's
window (an event later than its first event's ts plus the window, or, for ``n EVENTS``, at a position n
or more after it) rather than ending inside it.

The *funnel* counts, for each step k, the candidates whose step is at least k.

Each Q_k is a query like any other, so any engine that runs the query computes the partial matches
(``cepkit.partial_matches(..., engine=...)``), and the reference evaluator defines them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd

from ..errors import QueryError
from ..lang import ast as A
from ..lang.query import Query
from ..lang.window import time_limits


@dataclass(frozen=True)
class Step:
    """One step of a sequence: an event (``T x``), an iteration (``T+ x``: at least one event), or the absence
    that an edge negation asks for (``!T x`` first or last in the sequence: no such event in its scope)."""

    var: str  # the variable (for an absence without one, ``!T``)
    type: Optional[str]
    kind: str = "event"  # "event", "kleene" or "absence"

    @property
    def label(self) -> str:
        """The step as the funnel names its type: ``Purchase``, ``Purchase+``, ``!Checkout``."""
        name = self.type if self.type is not None else "ANY"
        return {"event": name, "kleene": f"{name}+", "absence": f"!{name}"}[self.kind]


@dataclass(frozen=True)
class Steps:
    """A sequence query cut into its steps and the prefix queries Q_1..Q_n."""

    steps: tuple
    prefixes: tuple  # Query Q_k for k = 1..n (the last is the query itself, conditions regrouped)

    @property
    def variables(self) -> tuple:
        """The steps' names, in order (what ``stopped_before`` says)."""
        return tuple(s.var for s in self.steps)

    @property
    def bound(self) -> tuple:
        """The variables a match binds (the positive steps), in order: the partial matches' columns."""
        return tuple(s.var for s in self.steps if s.kind != "absence")

    @property
    def kleene(self) -> bool:
        return any(s.kind == "kleene" for s in self.steps)


def steps_of(query: Query) -> Steps:
    """The steps of a sequence of positive atoms, iterations (``T+ x``) and negations (``!T x``); a QueryError
    (at the offending part) for anything else.

    A negation between two positive steps joins the prefixes from the one that takes the step after it and
    knows every variable its conditions relate it to (so a prefix never asks more than the query). A leading
    or trailing negation looks back from the last event or forward from the first (docs/language.md §10),
    which only the whole sequence fixes: each is a step of its own after the positive ones, the absence."""
    node = query.ast
    if (node.strategy or "ALL") != "ALL":
        raise QueryError.at(node, f"partial matches are defined for the ALL strategy, not {node.strategy}", query.text)
    if node.consume not in (None, "NONE"):
        raise QueryError.at(node, "partial matches are not defined with CONSUME BY", query.text)
    conds = list(A.conjuncts(node.where))
    pattern = node.pattern
    while isinstance(pattern, A.Filter):
        conds += A.conjuncts(pattern.cond)
        pattern = pattern.pattern
    entries = []  # (item of the sequence, its Step)
    for item in pattern.items if isinstance(pattern, A.Seq) else (pattern,):
        if isinstance(item, A.Expr):
            conds += A.conjuncts(item)
        elif isinstance(item, A.Atom) and item.var is not None:
            entries.append((item, Step(item.var, item.type)))
        elif isinstance(item, A.Plus) and _iterated_atom(item) is not None:
            atom = _iterated_atom(item)
            entries.append((item, Step(atom.var, atom.type, "kleene")))
        elif isinstance(item, A.Not) and isinstance(item.item, A.Atom):
            atom = item.item
            entries.append((item, Step(atom.var or f"!{atom.type or 'ANY'}", atom.type, "absence")))
        else:
            what = (
                "a step without a variable"
                if isinstance(item, A.Atom)
                else "a sequence of steps (T x ; U+ y ; !V z ; ...) whose iterations filter only their own variable"
            )
            raise QueryError.at(
                item if isinstance(item, A.Node) else node,
                f"partial matches need {what}: each step an event type and a variable",
                query.text,
            )
    positive = [i for i, (_, step) in enumerate(entries) if step.kind != "absence"]
    if not positive:
        raise QueryError.at(node, "partial matches need a positive step", query.text)
    edges = [i for i, (_, step) in enumerate(entries) if step.kind == "absence" and not positive[0] < i < positive[-1]]
    order = positive + sorted(edges, key=lambda i: (i > positive[-1], i))  # the positive steps, then absences
    if len(order) < 2:
        raise QueryError.at(node, "partial matches need a sequence of at least two steps", query.text)
    prefixes = []
    for k in range(1, len(order) + 1):
        taken = set(order[:k])
        known = {entries[i][1].var for i in taken}
        for i, (item, step) in enumerate(entries):  # the middle negations this prefix can hold
            if i in taken or step.kind != "absence" or i in edges or not any(j > i for j in taken & set(positive)):
                continue
            related = {v for c in conds if step.var in A.variables_in(c) for v in A.variables_in(c)} - {step.var}
            if related <= known:
                taken.add(i)
        known = {entries[i][1].var for i in taken}
        kept = tuple(c for c in conds if set(A.variables_in(c)) <= known)
        items = tuple(entries[i][0] for i in sorted(taken))
        ast = A.QueryNode(
            pattern=A.Seq(items) if len(items) > 1 else items[0],
            where=A.conjoin(kept),
            within=node.within,
            partition_by=node.partition_by,
        )
        prefixes.append(Query(ast, hierarchy=query.hierarchy))
    return Steps(tuple(entries[i][1] for i in order), tuple(prefixes))


def _iterated_atom(plus: A.Plus) -> Optional[A.Atom]:
    """The atom of ``T+ x`` (or of ``(T x FILTER c)+`` whose condition mentions x alone), else None."""
    inner = plus.pattern
    if isinstance(inner, A.Filter) and set(A.variables_in(inner.cond)) <= {getattr(inner.pattern, "var", None)}:
        inner = inner.pattern
    return inner if isinstance(inner, A.Atom) and inner.var is not None else None


def matched_steps(steps: Steps, k: int, matches):
    """The matches of Q_k: without iterations a 2-D int64 array, a row of positions per match, one column per
    positive step in order (no Python object per match); with them a list of (positions, bindings of its
    positive steps in order: a position per event step, a tuple of positions per iteration)."""
    if not steps.kleene:
        width = sum(s.kind != "absence" for s in steps.steps[:k])
        _, flat = matches.position_arrays()
        return np.asarray(flat, dtype=np.int64).reshape(-1, width)
    names = [s.var for s in steps.steps[:k] if s.kind != "absence"]
    return [(m.positions, tuple(m.bindings[v] for v in names)) for m in matches]


def _start(bindings: tuple) -> int:
    first = bindings[0]
    return first[0] if isinstance(first, tuple) else first


def _reached(steps: Steps, found: list, size: int) -> tuple:
    """(step, columns): by start position, the largest k with a match of Q_k starting there (0: no candidate),
    and per positive step's variable its binding in the earliest (smallest positions) such match."""
    step = np.zeros(size, dtype=np.int64)
    if all(isinstance(rows, np.ndarray) for rows in found):  # columns: a sort per prefix, no object per match
        values = {var: np.zeros(size, dtype=np.int64) for var in steps.bound}
        reached = {var: np.zeros(size, dtype=bool) for var in steps.bound}
        for k, rows in enumerate(found, start=1):
            if not len(rows):
                continue
            rows = rows[np.lexsort(rows.T[::-1])]  # by positions, lexicographically
            earliest = rows[np.r_[True, rows[1:, 0] != rows[:-1, 0]]]  # the first row of each start
            starts = earliest[:, 0]
            step[starts] = k  # k grows: each start ends at its largest k (a prefix of Q_k+1 is one of Q_k)
            for i, var in enumerate(steps.bound):
                values[var][starts] = earliest[:, i] if i < earliest.shape[1] else 0
                reached[var][starts] = i < earliest.shape[1]
        columns = {var: pd.arrays.IntegerArray(values[var], ~reached[var]) for var in steps.bound}
        return step, columns
    best: dict = {}  # start -> (step, earliest positions, their bindings), from (positions, bindings) pairs
    for k, matches in enumerate(found, start=1):
        for positions, bindings in matches:
            start = _start(bindings)
            if start not in best or best[start][0] < k or (best[start][0] == k and positions < best[start][1]):
                best[start] = (k, positions, bindings)
    columns = {var: np.full(size, pd.NA, dtype=object) for var in steps.bound}
    for start, (k, _, bindings) in best.items():
        step[start] = k
        for var, value in zip(steps.bound, bindings):
            columns[var][start] = value
    return step, columns


def partial_table(steps: Steps, found: list, times: np.ndarray) -> pd.DataFrame:
    """The partial matches as a DataFrame, from ``found[k-1]`` (the matches of Q_k, as ``matched_steps``
    gives them) and the stream's ``times`` (seconds, by position).

    Columns: ``start`` (the candidate's position), ``step`` (steps taken), ``stopped_before`` (the name of
    the step not taken), one column per positive step's variable (its position, or the tuple of positions of
    an iteration; null where not reached), ``timed_out``. One row per candidate that did not complete, by
    start."""
    n = len(steps.steps)
    step, columns = _reached(steps, found, len(times))
    starts = np.flatnonzero((step > 0) & (step < n))
    window = steps.prefixes[-1].ast.within
    if window is None or not len(starts):
        timed_out = np.zeros(len(starts), dtype=bool)
    elif window.events:
        timed_out = len(times) - 1 >= starts + window.amount
    else:  # the stream went on past the window: fits_time's rule, for every start at once
        last = float(np.max(times))
        timed_out = ~(last - times[starts] <= time_limits(window.seconds, np.full(len(starts), last)))
    table = pd.DataFrame(
        {
            "start": starts.astype(np.int64),
            "step": step[starts],
            "stopped_before": np.array(steps.variables, dtype=object)[step[starts]],
            **{var: columns[var][starts] for var in steps.bound},
            "timed_out": np.asarray(timed_out, dtype=bool),
        }
    )
    return table.astype({s.var: "Int64" if s.kind == "event" else object for s in steps.steps if s.kind != "absence"})


def funnel_table(steps: Steps, found: list) -> pd.DataFrame:
    """For each step k: its name and type (``T+`` for an iteration, ``!T`` for an absence), and the
    candidates whose step is at least k (those that start a match of Q_k), with their share of the
    candidates."""
    counts = [
        len(np.unique(matches[:, 0])) if isinstance(matches, np.ndarray) else len({_start(b) for _, b in matches})
        for matches in found
    ]
    first = counts[0] or 1
    return pd.DataFrame(
        {
            "step": range(1, len(steps.steps) + 1),
            "variable": steps.variables,
            "type": [s.label for s in steps.steps],
            "candidates": counts,
            "share": [c / first for c in counts],
        }
    )
