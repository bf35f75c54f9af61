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

import numpy as np
import pandas as pd

from ..errors import QueryError
from ..lang import ast as A
from ..lang.query import Query


@dataclass(frozen=True)
class Steps:
    """A sequence query cut into its steps: the atoms in order and the prefix queries Q_1..Q_n."""
    atoms: tuple
    prefixes: tuple          # Query Q_k for k = 1..n (the last is the query itself, conditions regrouped)

    @property
    def variables(self) -> tuple:
        return tuple(a.var for a in self.atoms)


def steps_of(query: Query) -> Steps:
    """The steps of a sequence of positive atoms; a QueryError (at the offending part) for anything else."""
    node = query.ast
    if (node.strategy or "ALL") != "ALL":
        raise QueryError.at(node, f"partial matches are defined for the ALL strategy, not {node.strategy}",
                            query.text)
    if node.consume not in (None, "NONE"):
        raise QueryError.at(node, "partial matches are not defined with CONSUME BY", query.text)
    conds = list(A.conjuncts(node.where))
    pattern = node.pattern
    while isinstance(pattern, A.Filter):
        conds += A.conjuncts(pattern.cond)
        pattern = pattern.pattern
    items = pattern.items if isinstance(pattern, A.Seq) else (pattern,)
    atoms = []
    for item in items:
        if isinstance(item, A.Expr):
            conds += A.conjuncts(item)
        elif isinstance(item, A.Atom) and item.var is not None:
            atoms.append(item)
        else:
            what = "a step without a variable" if isinstance(item, A.Atom) else "a sequence of positive steps " \
                "(T x ; U y ; ...)"
            raise QueryError.at(item if isinstance(item, A.Node) else node,
                                f"partial matches need {what}: each step an event type and a variable", query.text)
    if len(atoms) < 2:
        raise QueryError.at(node, "partial matches need a sequence of at least two steps", query.text)
    prefixes = []
    for k in range(1, len(atoms) + 1):
        known = {a.var for a in atoms[:k]}
        kept = tuple(c for c in conds if set(A.variables_in(c)) <= known)
        ast = A.QueryNode(pattern=A.Seq(tuple(atoms[:k])) if k > 1 else atoms[0], where=A.conjoin(kept),
                          within=node.within, partition_by=node.partition_by)
        prefixes.append(Query(ast, hierarchy=query.hierarchy))
    return Steps(tuple(atoms), tuple(prefixes))


def partial_table(steps: Steps, found: list, times: np.ndarray) -> pd.DataFrame:
    """The partial matches as a DataFrame, from ``found[k-1]`` (the matches of Q_k: their positions, in
    step order) and the stream's ``times`` (seconds, by position).

    Columns: ``start`` (the candidate's position), ``step`` (steps taken), ``stopped_before`` (the
    variable of the step not taken), one column per variable (its position, null where not reached),
    ``timed_out``. One row per candidate that did not complete, by start."""
    n = len(steps.atoms)
    best: dict = {}            # start -> (step, earliest positions)
    for k, matches in enumerate(found, start=1):
        for positions in sorted(matches):
            start = positions[0]
            if start not in best or best[start][0] < k:
                best[start] = (k, positions)
    rows = []
    window = steps.prefixes[-1].ast.within
    last_time, last_position = (times.max(), len(times) - 1) if len(times) else (-np.inf, -1)
    for start in sorted(best):
        step, positions = best[start]
        if step == n:
            continue
        if window is None:
            timed_out = False
        elif window.events:
            timed_out = last_position >= start + window.amount
        else:
            timed_out = bool(last_time > times[start] + window.seconds)
        row = {"start": start, "step": step, "stopped_before": steps.variables[step]}
        row.update({var: (positions[i] if i < step else pd.NA) for i, var in enumerate(steps.variables)})
        row["timed_out"] = timed_out
        rows.append(row)
    columns = ["start", "step", "stopped_before", *steps.variables, "timed_out"]
    table = pd.DataFrame(rows, columns=columns)
    return table.astype({"start": "int64", "step": "int64", "timed_out": bool,
                         **{var: "Int64" for var in steps.variables}})


def funnel_table(steps: Steps, found: list) -> pd.DataFrame:
    """For each step k: its variable and type, and the candidates whose step is at least k (those that
    start a match of Q_k), with their share of the candidates."""
    starts = [{positions[0] for positions in matches} for matches in found]
    first = len(starts[0]) or 1
    return pd.DataFrame({
        "step": range(1, len(steps.atoms) + 1),
        "variable": steps.variables,
        "type": [a.type for a in steps.atoms],
        "candidates": [len(s) for s in starts],
        "share": [len(s) / first for s in starts],
    })
