"""``StrategyCompare``: one query under every selection strategy, side by side (LANGUAGE.md §5, digest 004 §2).

Seeing the same stream answered by ALL, NEXT, LAST, MAX, STRICT, STNM and ROBUST_STNM at once is the quickest
way to learn what a strategy does: a table gives each strategy's count, engine and first matches, and a stack
of compact ``MatchTimeline`` s, one under the other on the same time axis, shows which events each one picked. A strategy the query cannot take (a query
error, not an engine gap, which falls back to ``reference``) is listed with its error instead of a timeline.
"""
from __future__ import annotations

import html
from typing import Iterable, Optional

import ipywidgets as widgets

import cepkit

from .execution import STRATEGIES, Run, as_stream, run_query
from .timeline import MatchTimeline

SHOWN_POSITIONS = 4       # positions listed per strategy in the summary table


class StrategyCompare(widgets.VBox):
    """The same query under each strategy: a summary table and one timeline per strategy.

    Parameters
    ----------
    query : str or ``cepkit.Query``
        The query; its own strategy is replaced by each of ``strategies`` in turn.
    events : DataFrame, iterable of dicts or of ``cepkit.Event``
    engine : str
        As for ``cepkit.match``; a strategy the engine lacks runs on ``reference`` (and the table says so).
    """

    def __init__(self, query, events, engine: str = "auto", hierarchy=None,
                 strategies: Iterable[str] = STRATEGIES, progress: Optional[widgets.IntProgress] = None,
                 **options):
        self.query = cepkit.parse(query, hierarchy)
        self.stream = as_stream(events)
        self.runs: dict = {}
        self.errors: dict = {}
        strategies = tuple(strategies)
        if progress is not None:
            progress.max, progress.value = len(strategies), 0
        for strategy in strategies:
            try:
                self.runs[strategy] = run_query(self.query, self.stream, engine, strategy, hierarchy, **options)
            except cepkit.QueryError as err:
                self.errors[strategy] = err
            if progress is not None:
                progress.value += 1
        self.strategies = strategies
        self.table = widgets.HTML(self._table())
        self.timelines = {s: MatchTimeline(self.stream, run.matches, height=210, title=self._title(s, run))
                          for s, run in self.runs.items()}
        super().__init__([self.table, *self.timelines.values()])

    def counts(self) -> dict:
        """strategy -> number of matches (strategies that raised are left out)."""
        return {s: len(run.matches) for s, run in self.runs.items()}

    def __repr__(self):
        counts = ", ".join(f"{s}={n}" for s, n in self.counts().items())
        return f"StrategyCompare({str(self.query)!r}, {counts})"

    @staticmethod
    def _title(strategy: str, run: Run) -> str:
        return f"{strategy}: {len(run.matches)} matches ({run.engine})"

    def _table(self) -> str:
        rows = []
        for strategy in self.strategies:
            if strategy in self.errors:
                cells = ("–", "–", f"<span style='color:#b00'>{html.escape(self.errors[strategy].reason)}</span>")
            else:
                run = self.runs[strategy]
                positions = run.matches.positions()
                shown = ", ".join(str(p) for p in positions[:SHOWN_POSITIONS])
                more = f", … ({len(positions)} in all)" if len(positions) > SHOWN_POSITIONS else ""
                note = f"<br><small>{html.escape(run.note)}</small>" if run.note else ""
                cells = (str(len(run.matches)), html.escape(run.engine), f"{shown}{more}{note}")
            rows.append(f"<tr><td><b>{strategy}</b></td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        return (f"<code>{html.escape(str(self.query))}</code> over {len(self.stream):,} events"
                "<table class='cepkit-strategies'><tr><th>strategy</th><th>matches</th><th>engine</th>"
                f"<th>positions</th></tr>{''.join(rows)}</table>")
