"""``StrategyCompare``: one query under every selection strategy, side by side (docs/language.md §5, [CEL] §4).

Seeing the same stream answered by ALL, NEXT, LAST, MAX, STRICT, STNM and ROBUST_STNM at once is the quickest
way to learn what a strategy does: a table gives each strategy's count, engine and first matches, and one
figure has a row per strategy on a shared time axis (zooming one row zooms them all), showing which events
each one picked. Only the event types some match uses get a lane. A strategy the query cannot take (a query
error, not an engine gap, which runs on the engine the registry picks) is listed with its error instead of a row.

Seven runs over a long stream take a while: ``background=True`` runs them off the kernel's main thread while
the widget shows which strategy runs and how far it is, with a Cancel button; the figure is built once, when
the runs are over, and sent in one message to its ``figures.PlotlyView`` (a ``FigureWidget`` per strategy
updated trace by trace took 12-30 s to appear in the browser for 9 events).
"""

from __future__ import annotations

import html
import threading
import time
from typing import Iterable, Optional

import ipywidgets as widgets
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

import cepkit

from .execution import STRATEGIES, Cancelled, Run, as_stream, failure_text, run_query
from .figures import TABLE_CSS, PlotlyView, full_width, plural
from .timeline import PALETTE, EventCanvas

SHOWN_POSITIONS = 4  # positions listed per strategy in the summary table
ROW_GAP_PX = 34  # between rows, room for a row's title
NOTES_PER_LINE = 4  # "NEXT: 150 of 1,192 drawn" notes per line of the figure's subtitle


class StrategyCompare(widgets.VBox):
    """The same query under each strategy: a summary table and one figure with a row per strategy.

    Parameters
    ----------
    query : str or ``cepkit.Query``
        The query; its own strategy is replaced by each of ``strategies`` in turn.
    events : DataFrame, iterable of dicts or of ``cepkit.Event``
    engine : str
        As for ``cepkit.match``; a strategy the engine lacks runs on the engine the registry picks for it
        (``"auto"``: STNM on the stack, ROBUST_STNM on ses; the table says so).
    strategies : iterable of str
        The strategies to compare (default: all seven).
    background : bool
        Run off the kernel's main thread with progress and a Cancel button (``wait()`` joins).
    max_matches, max_events : int
        Per row, at most ``max_matches`` matches are drawn (spread over time); the stream's events are drawn
        as grey markers when there are at most ``max_events``.
    tz : str, optional
        Time zone of the axis for datetime ts (as ``MatchTimeline``).
    runs : dict, optional
        Runs already made (strategy -> ``Run`` of this query under it, on ``engine``, with these options), shown
        rather than run again: the Workbench passes its last run.

    Examples
    --------
    >>> compare = StrategyCompare("A a ; B b", [{"type": "A"}, {"type": "B"}, {"type": "B"}],
    ...                           strategies=["ALL", "STRICT"])
    >>> compare.counts()
    {'ALL': 2, 'STRICT': 1}
    """

    def __init__(
        self,
        query,
        events,
        engine: str = "auto",
        hierarchy=None,
        strategies: Iterable[str] = STRATEGIES,
        *,
        background: bool = False,
        max_matches: int = 150,
        max_events: int = 600,
        tz: Optional[str] = None,
        runs: Optional[dict] = None,
        **options,
    ):
        self.query = cepkit.parse(query, hierarchy)
        self.stream = as_stream(events)
        self.strategies = tuple(strategies)
        if not self.strategies:
            raise ValueError(f"strategies is empty: name at least one of {', '.join(STRATEGIES)}")
        self.engine, self.hierarchy, self.options = engine, hierarchy, options
        self.max_matches, self.max_events, self.tz = max_matches, max_events, tz
        self.runs: dict = {}
        self._made = dict(runs or {})
        self.errors: dict = {}
        self.cancelled = False
        self.seconds = None  # wall time of the runs
        self.progress = widgets.IntProgress(value=0, min=0, max=len(self.strategies), description="strategies")
        self.status = widgets.HTML()
        self.cancel_button = widgets.Button(description="Cancel", icon="stop", button_style="warning")
        self.cancel_button.on_click(lambda _: self.cancel())
        self.running = widgets.HBox([self.progress, self.status, self.cancel_button])
        self.table = widgets.HTML()
        self.figure: Optional[go.Figure] = None  # built once, when the runs are over
        self.plot = PlotlyView()
        super().__init__([widgets.HTML(TABLE_CSS), self.running, self.table, self.plot], layout=full_width())
        self.add_class("cepkit-strategy-compare")
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._compute, name="StrategyCompare", daemon=True)
            self._thread.start()
        else:
            self._compute()

    def counts(self) -> dict:
        """strategy -> number of matches (strategies that raised are left out)."""
        return {s: len(run.matches) for s, run in self.runs.items()}

    def cancel(self) -> None:
        """Stop after the current chunk of events (or the current strategy); the finished rows stay."""
        self.cancelled = True
        self.cancel_button.disabled = True

    def wait(self, timeout: Optional[float] = None) -> "StrategyCompare":
        """Wait for a background comparison to finish (returns self)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self

    def __repr__(self):
        counts = ", ".join(f"{s}={n}" for s, n in self.counts().items())
        return f"StrategyCompare({str(self.query)!r}, {counts})"

    # ------------------------------------------------------------------ runs
    def _check_cancel(self, done: int, total: int) -> None:
        if self.cancelled:
            raise Cancelled()
        self.status.value = f"{self._now} · {done:,} of {total:,} events"

    def _compute(self) -> None:
        started = time.perf_counter()
        try:
            for i, strategy in enumerate(self.strategies):
                if self.cancelled:
                    break
                self._now = f"running <b>{html.escape(strategy)}</b> ({i + 1} of {len(self.strategies)})"
                self.status.value = self._now
                try:
                    self.runs[strategy] = self._made.get(strategy) or run_query(
                        self.query,
                        self.stream,
                        self.engine,
                        strategy,
                        self.hierarchy,
                        progress=self._check_cancel,
                        **self.options,
                    )
                except Cancelled:
                    break
                except Exception as err:  # noqa: BLE001 -- said in its row; the other strategies still run
                    self.errors[strategy] = err
                self.progress.value = i + 1
        finally:
            self.seconds = time.perf_counter() - started
            self._show()

    # ------------------------------------------------------------------ drawing
    def _show(self) -> None:
        done = len(self.runs) + len(self.errors)
        self.running.layout.display = "none"
        cancelled = (
            f" · <b>cancelled</b> after {done} of {len(self.strategies)} strategies"
            if done < len(self.strategies)
            else ""
        )
        self.table.value = self._table(cancelled)
        if self.runs:
            traces, layout = self._figure()
            self.figure = go.Figure(traces, layout)
            self.plot.show(self.figure)
        else:  # no strategy ran: no empty axes under the table
            self.plot.layout.display = "none"

    @staticmethod
    def _title(strategy: str, run: Run) -> str:
        return f"<b>{strategy}</b>: {plural(len(run.matches), 'match', 'matches')} ({run.engine})"

    def _figure(self):
        """(traces, layout) of one figure, a row per strategy that ran, sharing the time axis."""
        # the lanes: the types some match uses, in the stream's order (from the match arrays: no Match made)
        used = np.concatenate([run.matches.position_arrays()[1] for run in self.runs.values()])
        codes = pd.unique(self.stream.type_codes)
        if len(used):
            codes = codes[np.isin(codes, self.stream.type_codes[used])]
        canvas = EventCanvas(self.stream, self.tz, [self.stream.type_names[c] for c in codes])
        lanes = max(len(canvas.lanes), 1)
        row_px = 26 + 22 * lanes
        strategies = list(self.runs)
        n = len(strategies)
        height = n * row_px + (n - 1) * ROW_GAP_PX + 110
        figure = make_subplots(
            rows=n,
            cols=1,
            shared_xaxes=True,
            vertical_spacing=ROW_GAP_PX / height,
            subplot_titles=[self._title(s, self.runs[s]) for s in strategies],
        )
        show_events = len(self.stream) <= self.max_events
        notes = []
        for row, strategy in enumerate(strategies, start=1):
            matches = self.runs[strategy].matches  # only the drawn ones are made Match objects
            if show_events:
                figure.add_trace(
                    go.Scatter(
                        name="events",
                        legendgroup="events",
                        showlegend=row == 1,
                        **canvas.events(range(len(self.stream))),
                    ),
                    row=row,
                    col=1,
                )
            drawn = canvas.spread_sample(matches, self.max_matches)
            if len(drawn) < len(matches):
                notes.append(f"{strategy}: {len(drawn)} of {len(matches):,} drawn")
            props = canvas.polylines([matches[k] for k in drawn], drawn, f"{strategy} match")
            color = PALETTE[(row - 1) % len(PALETTE)]
            props["marker"]["color"] = color
            figure.add_trace(go.Scatter(name=strategy, line={"color": color, "width": 2}, **props), row=row, col=1)
            figure.update_yaxes(canvas.lane_axis(), row=row, col=1)
        figure.update_xaxes(title_text=canvas.axis_title, row=n, col=1)
        for annotation in figure.layout.annotations:
            annotation.update(x=0, xanchor="left", font={"size": 13})
        # a line of the subtitle per NOTES_PER_LINE strategies sampled (all seven on one line overran 1,400 px)
        lines = ["; ".join(notes[i : i + NOTES_PER_LINE]) for i in range(0, len(notes), NOTES_PER_LINE)]
        if not show_events:
            lines.insert(0, f"the {len(self.stream):,} events are not drawn, only the matches")
        subtitle = "".join(f"<br><sup>{html.escape(line)}</sup>" for line in lines)
        layout = figure.layout.to_plotly_json()
        extra = 16 * max(len(lines) - 1, 0)  # the subtitle's lines after its first
        # the title hangs from the top (plotly centres it in the margin: more lines ran into the first row)
        layout.update(
            height=height + extra,
            margin={"l": 60, "r": 20, "t": (70 if lines else 50) + extra, "b": 40},
            title={
                "text": f"each strategy's matches on a shared time axis{subtitle}",
                "font": {"size": 13},
                "x": 0.01,
                "xanchor": "left",
                "yref": "container",
                "y": 1,
                "yanchor": "top",
                "pad": {"t": 8},
            },
            hovermode="closest",
            hoverlabel={"align": "left"},
            showlegend=False,
        )
        return list(figure.data), layout

    def _table(self, cancelled: str = "") -> str:
        rows = []
        for strategy in self.strategies:
            if strategy in self.errors:
                said = " ".join(failure_text(self.errors[strategy], self.query, strategy)).strip()
                cells = ("–", "–", f"<span style='color:#b00'>{html.escape(said)}</span>")
            elif strategy in self.runs:
                run = self.runs[strategy]
                offsets, flat = run.matches.position_arrays()  # distinct position sets, as columns
                distinct = len(offsets) - 1
                shown = ", ".join(
                    str(tuple(flat[offsets[i] : offsets[i + 1]].tolist()))
                    for i in range(min(distinct, SHOWN_POSITIONS))
                )
                more = f", … ({distinct:,} in all)" if distinct > SHOWN_POSITIONS else ""
                note = f"<br><small>{html.escape(run.note)}</small>" if run.note else ""
                cells = (f"{len(run.matches):,}", html.escape(run.engine), f"{shown}{more}{note}")
            else:
                cells = ("", "", "<i>not run</i>")
            rows.append(
                f"<tr><td><b>{strategy}</b></td><td class='num'>{cells[0]}</td><td>{cells[1]}</td>"
                f"<td class='text'>{cells[2]}</td></tr>"
            )
        took = f" · {self.seconds:.2f} s" if self.seconds is not None else ""
        return (
            f"<code style='overflow-wrap: anywhere'>{html.escape(str(self.query))}</code> over "
            f"{plural(len(self.stream), 'event')}{took}{cancelled}<div class='cepkit-scroll'><table class='cepkit-table'><tr><th>strategy</th>"
            f"<th>matches</th><th>engine</th><th>positions</th></tr>{''.join(rows)}</table></div>"
        )
