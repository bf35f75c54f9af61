"""``StreamingCube``: an ``ECube`` over an endless stream, fed in micro-batches (``push`` / ``extend``).

Each batch joins the kept events (``incremental.KeptEvents``) and the cube evaluates its plan over them,
with every reuse the batch cube has; of each query's rows, those whose last event closes now are final
and reported, each once. So after every batch, the rows reported so far are exactly the batch
``ECube``'s rows over the stream so far whose last event is closed, and after ``close`` all of them.

The plan is made on the first batch's statistics and adapted along the stream ([LIU] §4.5,
``ECube.adapt``): each later batch's kept events are compared with the statistics the plan was made for,
and Chase re-plans past ``theta``, installing the new plan only if cheaper by more than ``gamma``.

``keep=True`` keeps every final row and every event (``results``; drill-down and roll-up then answer over
the whole stream so far). ``keep=False`` is for endless streams: only the kept events (about two
windows) and the last run's rows are held, memory stays flat, the matches go to the caller of ``extend``;
a drill-down or roll-up then answers over the kept events (its ``info["complete_from"]`` says from which
time its matches are complete) and the new query is evaluated with the others from the next batch on.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable, Optional

import numpy as np

from ..errors import EventError
from ..runtime.api import check
from ..runtime.expiry import window_horizon
from ..runtime.matches import Matches
from ..runtime.stream import Stream
from .incremental import KeptEvents, Reach, lookahead
from .reuse import in_output_order


class StreamingCube:
    """``cube`` over a stream in micro-batches (see the module docstring).

    Parameters
    ----------
    cube : ``cepkit.ECube``
        Every query needs a WITHIN window (all time windows, or all EVENTS windows over the same PARTITION BY).
    keep : bool
        Keep every final match and event (``results``), or only what the windows need (an endless stream).
    theta, gamma : float
        Plan adaptation's thresholds (``ECube.adapt``).

    Examples
    --------
    >>> import cepkit
    >>> cube = cepkit.ECube({"q1": "SEQ(TX x, OK y) WITHIN 3", "q2": "SEQ(D x, T y) WITHIN 3"},
    ...                     {"TX": ["D", "A"], "OK": ["T"]})
    >>> live = cube.stream()
    >>> {n: m.positions() for n, m in live.extend([{"type": "D", "ts": 0}, {"type": "T", "ts": 1}]).items()}
    {'q1': [(0, 1)], 'q2': [(0, 1)]}
    >>> {n: m.positions() for n, m in live.extend([{"type": "A", "ts": 2}, {"type": "T", "ts": 3}]).items()}
    {'q1': [(0, 3), (2, 3)], 'q2': [(0, 3)]}
    >>> live.drill_down("q1", concept=[("TX", "A", 1)]).positions()
    [(2, 3)]
    """

    def __init__(self, cube, *, keep: bool = True, theta: float = 0.25, gamma: float = 0.1):
        self.cube = cube
        self.keep = keep
        self.theta, self.gamma = theta, gamma
        reach = Reach.of(cube.queries.values())
        if reach is None:
            raise ValueError(
                "a streaming cube needs every query to have a WITHIN window (all time windows, or "
                "all EVENTS windows over the same PARTITION BY): without one a match may hold any "
                "earlier event, and nothing is final before the stream ends"
            )
        # every event kept until a match waiting a window after it could be final: a query added while the
        # stream runs (a drill-down inserting a trailing negation) finds what its matches read
        self.kept = KeptEvents(replace(reach, lookaheads=tuple(sorted({*reach.lookaheads, reach.window}))))
        self.batches = 0
        self.events = 0
        self.replans = 0  # plans installed after the first (adaptation)
        self.listeners: list = []  # called with (this cube, the batch's new matches) after each batch
        self._last_time = -math.inf
        self._final: dict = {name: [] for name in cube.queries}  # keep=True: final rows, batch after batch
        self._history: Optional[Stream] = None  # keep=True: every event
        self._open: dict = {}  # name -> the last run's rows whose last event is not closed
        self._waiting: dict = {}  # lookahead -> positions of the kept events not closed yet
        self._complete_from = -math.inf  # the last run's: matches whose window starts here are exact
        self._stream: Optional[Stream] = None  # the last run's events

    # ------------------------------------------------------------------ feeding
    def push(self, event) -> dict:
        """One event (a dict or ``Event``); name -> the ``Matches`` that became final."""
        return self.extend([event])

    def extend(self, events) -> dict:
        """A micro-batch (DataFrame, Arrow table, dicts), in time order after what came before; name ->
        the ``Matches`` that became final (each reported once over the whole stream)."""
        batch = Stream.from_any(events, first_position=self.events)
        if not len(batch):
            return self._report(
                {name: np.zeros((0, len(s.positives)), np.int64) for name, s in self.cube.shapes.items()}
            )
        batch.require_order()
        if batch.times[0] < self._last_time:
            raise EventError(
                self.events,
                "ts",
                f"the batch starts at {batch.times[0]!r}, before the previous "
                f"batch's last event ({self._last_time!r}): a streaming cube "
                "takes its events in time order",
            )
        if not self.batches:
            for query in self.cube.queries.values():
                check(query, batch)
        self.batches += 1
        self.events += len(batch)
        self._last_time = float(batch.times[-1])
        if self.keep:
            self._history = batch if self._history is None else self._history.followed_by(batch)
        found = self._run(self.kept.add(batch), self.kept.settle())
        self.kept.forget()
        return found

    def close(self) -> dict:
        """The stream has ended: name -> the ``Matches`` still waiting (a trailing negation's window)."""
        if self.kept.stream is None:
            return {}
        return self._run(self.kept.stream, self.kept.settle(final=True))

    def _run(self, stream: Stream, closing: dict) -> dict:
        cube = self.cube
        plan = cube.last_plan
        if plan is None:
            cube.run(stream)
        else:
            if cube.adapt(stream, theta=self.theta, gamma=self.gamma):
                self.replans += 1
            cube.run(stream, keep_plan=True)
        self._stream = stream
        self._waiting = {r: stream.position_of(np.flatnonzero(~c)) for r, c in self.kept.closed.items()}
        self._complete_from = self.kept.complete_from
        new = {}
        for name, rows in cube.rows.items():
            r = lookahead(cube.queries[name])
            last = rows[:, -1]
            new[name] = rows[np.isin(last, closing[r])]
            self._open[name] = rows[np.isin(last, self._waiting[r])]
            if self.keep:
                self._final.setdefault(name, []).append(new[name])
        return self._report(new)

    def _report(self, rows: dict) -> dict:
        found = {name: self._matches(name, r) for name, r in rows.items()}
        for listener in self.listeners:
            listener(self, found)
        return found

    def _matches(self, name: str, rows: np.ndarray, **info) -> Matches:
        return Matches(
            self.cube.shapes[name].arrays_of(rows),
            "ecube",
            self.cube.queries[name],
            info={"batches": self.batches, **info},
            limit=self.cube.queries[name].ast.limit,
        )

    # ------------------------------------------------------------------ what is kept
    @property
    def results(self) -> dict:
        """name -> every final match so far (``keep=True`` only)."""
        if not self.keep:
            raise ValueError(
                "StreamingCube(keep=False) keeps no matches: use what extend() and close() return, or keep=True"
            )
        return {name: self._matches(name, self._final_rows(name)) for name in self.cube.shapes}

    def _final_rows(self, name: str) -> np.ndarray:
        parts = self._final.get(name) or [np.zeros((0, len(self.cube.shapes[name].positives)), np.int64)]
        rows = np.concatenate(parts) if len(parts) > 1 else parts[0]
        if len(parts) > 1:
            self._final[name] = [rows]
        return in_output_order(rows)

    def field_at(self, positions: np.ndarray, field: str) -> np.ndarray:
        """The values of ``field`` of the events at stream ``positions`` (an array of any shape) that the last
        batch's run read: every event of a match it reported (``cepkit.spark.cube_stream`` maps positions to
        its position column with it)."""
        stream = self._stream
        index = np.searchsorted(stream.positions, positions)
        return np.asarray(stream.column(field).objects(), object)[index]

    @property
    def plan(self):
        """The plan the cube evaluates now (Chase's, adapted along the stream)."""
        return self.cube.last_plan

    # ------------------------------------------------------------------ OLAP operations
    def drill_down(self, name: str, *, concept=(), pattern=(), as_name: Optional[str] = None) -> Matches:
        """Refine query ``name`` (as ``ECube.drill_down``) while the stream runs: its final matches so far,
        answered from what is kept; from the next batch on it is evaluated with the others."""
        return self._olap(lambda cube: cube.drill_down(name, concept=concept, pattern=pattern, as_name=as_name))

    def roll_up(self, name: str, *, concept=(), pattern=(), as_name: Optional[str] = None) -> Matches:
        """Generalise query ``name`` (as ``ECube.roll_up``) while the stream runs (see ``drill_down``)."""
        return self._olap(lambda cube: cube.roll_up(name, concept=concept, pattern=pattern, as_name=as_name))

    def _olap(self, operation: Callable) -> Matches:
        if not self.batches:
            raise ValueError(
                "extend the streaming cube with a batch first: drill-down and roll-up answer from what it keeps"
            )
        if self.keep:  # the whole stream so far: the final rows and the last run's open ones
            rows = {n: np.concatenate([self._final_rows(n), self._open[n]]) for n in self.cube.shapes}
            cube = self.cube.resumed(self._history, rows)
        else:  # the kept events: the last run's rows
            cube = self.cube
        before = set(cube.queries)
        answer = operation(cube)
        name = next(n for n, q in cube.queries.items() if q == answer.query)
        rows = cube.rows[name]
        if cube is not self.cube and name not in before:
            self.cube.add(name, cube.queries[name])
        last = rows[:, -1]
        final = ~np.isin(last, self._waiting[lookahead(cube.queries[name])])
        info = {}
        if not self.keep:  # matches whose window reaches before what was forgotten are not all there
            reach = self.kept.reach
            if reach.axis != "time":
                raise ValueError(
                    "under WITHIN n EVENTS, keep=False answers a new query from the next batch on "
                    "only (the kept events of each sub-stream do not tell where its windows start)"
                )
            stream = self._stream
            times = stream.times[np.searchsorted(stream.positions, last)]
            final &= window_horizon(times, reach.window) >= self._complete_from
            info["complete_from"] = self._complete_from
        if self.keep and name not in before:
            self._final[name] = [in_output_order(rows[final])]
        return self._matches(
            name, rows[final], source=answer.info.get("source"), method=answer.info.get("method"), **info
        )
