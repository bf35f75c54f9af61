"""``Workbench``: write a query, see it checked as you type, run it, and look at the result from every side.

Layout, top to bottom: the query editor with its live diagnostics (``cepkit.parse``'s error with its caret,
or the features the query uses), the engine and strategy pickers with the Run button and a progress bar
(shown for long runs only), a status line, the results table (one row per match; picking a row highlights
the match in the timeline and clicking a match in the timeline picks its row), and tabs:

- *Timeline*: ``MatchTimeline`` of the last run.
- *Automaton*: ``AutomatonView`` of the query stepped over the events, or why the automaton engine cannot
  compile it (its fragment is CEL, digest 004).
- *Strategies*: ``StrategyCompare`` of the query (seven runs, so it is computed when the tab is opened).
- *Rewrite*: ``RewriteView``, the query's NEEL rewriting to normal form, one rule per step (digest 000b §3).
- *Engines*: the capability matrix ``cepkit.engines()``, the rows the query needs in bold.
- *Events*: the first rows of the stream.

Every run goes through ``execution.run_query``: an engine that cannot run the query hands it to
``reference``, and the status line says so. The results and the views always show the last run: editing the
query re-checks it at once but changes nothing else until Run.
"""
from __future__ import annotations

import html
from typing import Optional

import ipywidgets as widgets

import cepkit

from .automaton_view import AutomatonView
from .execution import PROGRESS_MIN_EVENTS, STRATEGIES, as_stream, run_query
from .rewrite_view import RewriteView
from .strategy_compare import StrategyCompare
from .timeline import MatchTimeline, bindings_text

TABS = ("Timeline", "Automaton", "Strategies", "Rewrite", "Engines", "Events")
AS_WRITTEN = "as written"  # the strategy picker's choice that keeps the query's own strategy
MAX_RESULT_ROWS = 1000     # rows in the results table; the timeline still has every match
EVENT_ROWS = 50
CSS = """<style>
.cepkit-results select { font-family: monospace; }
.cepkit-diagnostics pre { margin: 0; }
</style>"""


RESULTS_HEADER = f"{'#':<6} {'positions':<24} bindings"


def result_row(k: int, match) -> str:
    """One results-table row, aligned under ``RESULTS_HEADER``."""
    return f"#{k:<5} {str(match.positions):<24} {bindings_text(match)}"


class Workbench(widgets.VBox):
    """A query editor, engine and strategy pickers, results and views over one stream of events.

    Parameters
    ----------
    events : DataFrame, iterable of dicts or of ``cepkit.Event``
    query : str
        Initial editor text.
    engine, strategy : str
        Initial picks ("auto"; None keeps the query's own strategy).
    hierarchy : optional
        A concept hierarchy (LANGUAGE.md §7) for parsing and matching.
    **options
        Passed to ``cepkit.match`` (e.g. ``disorder="aggressive"``).

    Examples
    --------
    >>> wb = Workbench([{"type": "A"}, {"type": "B"}], query="A a ; B b ;")
    >>> wb.run_button.disabled, "line 1" in wb.diagnostics.value
    (True, True)
    >>> wb.editor.value = "A a ; B b"
    >>> wb.run_button.disabled
    False
    """

    def __init__(self, events, query: str = "", engine: str = "auto", strategy: Optional[str] = None,
                 hierarchy=None, **options):
        self.stream = as_stream(events)
        self.hierarchy = hierarchy
        self.options = options
        self.query: Optional[cepkit.Query] = None
        self.last_run = None
        self.last_query: Optional[cepkit.Query] = None      # the query of the last run, strategy applied
        self.editor = widgets.Textarea(value=query, rows=4, continuous_update=True,
                                       placeholder="PATTERN SEQ(A a, B b) WHERE a.id = b.id WITHIN 10 s",
                                       layout=widgets.Layout(width="100%"))
        self.diagnostics = widgets.HTML()
        self.diagnostics.add_class("cepkit-diagnostics")
        self.capabilities = cepkit.engines()
        self.engine_picker = widgets.Dropdown(options=["auto", *self.capabilities.index], value=engine,
                                              description="engine")
        self.strategy_picker = widgets.Dropdown(options=[AS_WRITTEN, *STRATEGIES], value=strategy or AS_WRITTEN,
                                                description="strategy")
        self.run_button = widgets.Button(description="Run", button_style="primary", icon="play")
        self.progress = widgets.IntProgress(value=0, min=0, max=1, layout=widgets.Layout(visibility="hidden"))
        self.status = widgets.HTML()
        self.results_header = widgets.HTML()
        self.results = widgets.Select(options=[], rows=8, layout=widgets.Layout(width="100%"))
        self.results.add_class("cepkit-results")
        self.timeline = MatchTimeline(self.stream)
        self.automaton_view: Optional[AutomatonView] = None
        self.strategy_compare: Optional[StrategyCompare] = None
        self._stale = set()
        self.tabs = widgets.Tab(children=[self.timeline, widgets.VBox(), widgets.VBox(), widgets.VBox(), widgets.HTML(),
                                          widgets.HTML(self._events_html())], titles=TABS)
        super().__init__([widgets.HTML(CSS), self.editor, self.diagnostics,
                          widgets.HBox([self.engine_picker, self.strategy_picker, self.run_button, self.progress]),
                          self.status, self.results_header, self.results, self.tabs])
        self.editor.observe(self._on_text, "value")
        self.run_button.on_click(lambda _: self.run())
        self.results.observe(self._on_row, "value")
        self.timeline.observe(self._on_timeline_pick, "selected")
        self.tabs.observe(lambda _: self._refresh_tab(), "selected_index")
        self._on_text()

    @property
    def matches(self) -> Optional[cepkit.Matches]:
        """The matches of the last successful run (None before one)."""
        return self.last_run.matches if self.last_run is not None else None

    def run(self):
        """Run the editor's query with the picked engine and strategy; returns the ``Run`` (None on error)."""
        if self.query is None:
            return None
        long_run = len(self.stream) >= PROGRESS_MIN_EVENTS
        self.progress.layout.visibility = "visible" if long_run else "hidden"
        self.progress.value, self.progress.max = 0, max(len(self.stream), 1)
        try:
            strategy = self.strategy_picker.value
            query = self.query if strategy == AS_WRITTEN else self.query.with_strategy(strategy)
            run = run_query(query, self.stream, self.engine_picker.value, None, self.hierarchy,
                            progress=self._advance if long_run else None, **self.options)
        except (cepkit.QueryError, cepkit.EventError) as err:
            self.status.value = f"<pre style='color:#b00'>{html.escape(str(err))}</pre>"
            return None
        finally:
            self.progress.layout.visibility = "hidden"
        self.last_run, self.last_query = run, query
        self._show_results(run)
        self._stale = {"Automaton", "Strategies", "Rewrite"}
        self._refresh_tab()
        return run

    def __repr__(self):
        found = len(self.matches) if self.matches is not None else None
        return f"Workbench(events={len(self.stream)}, query={self.editor.value!r}, matches={found})"

    # ------------------------------------------------------------------ editor
    def _on_text(self, change=None) -> None:
        text = self.editor.value
        self.query = None
        if not text.strip():
            self.diagnostics.value = "<small>Type a query (LANGUAGE.md), e.g. <code>T AS x ; H AS y</code>.</small>"
        else:
            try:
                self.query = cepkit.parse(text, self.hierarchy)
            except cepkit.QueryError as err:
                self.diagnostics.value = f"<pre style='color:#b00'>{html.escape(str(err))}</pre>"
            else:
                features = ", ".join(sorted(self.query.features)) or "none"
                self.diagnostics.value = (f"<small style='color:#070'>✓ parses · strategy {self.query.strategy} · "
                                          f"features: {html.escape(features)}</small>")
        self.run_button.disabled = self.query is None
        self._engines_tab()

    def _advance(self, done: int, total: int) -> None:
        self.progress.max, self.progress.value = total, done

    # ------------------------------------------------------------------ results
    def _show_results(self, run) -> None:
        matches = run.matches
        rows = [(result_row(k, m), k) for k, m in enumerate(matches[:MAX_RESULT_ROWS])]
        self.results.options = rows
        self.results.value = None
        more = f" (the table lists the first {MAX_RESULT_ROWS:,})" if len(matches) > MAX_RESULT_ROWS else ""
        note = f"<br><small>{html.escape(run.note)}</small>" if run.note else ""
        self.status.value = (f"<b>{len(matches):,} matches</b> by engine <code>{html.escape(run.engine)}</code> in "
                             f"{run.seconds:.3f} s{more}{note}")
        self.results_header.value = f"<pre style='margin:0'>{html.escape(RESULTS_HEADER)}</pre>" if rows else ""
        self.timeline.set_matches(matches)

    def _on_row(self, change) -> None:
        if change["new"] != self.timeline.selected:
            self.timeline.selected = change["new"]

    def _on_timeline_pick(self, change) -> None:
        k = change["new"]
        row = k if k is not None and k < len(self.results.options) else None
        if row != self.results.value:
            self.results.value = row

    # ------------------------------------------------------------------ tabs
    def _refresh_tab(self) -> None:
        """Build the selected tab's view if the last run made it stale (the costly ones wait to be seen)."""
        name = TABS[self.tabs.selected_index or 0]
        if name not in self._stale:
            return
        self._stale.discard(name)
        box = self.tabs.children[TABS.index(name)]
        if name == "Automaton":
            try:
                self.automaton_view = AutomatonView(self.last_query, self.stream, self.hierarchy)
                box.children = [self.automaton_view]
            except cepkit.QueryError as err:
                self.automaton_view = None
                box.children = [widgets.HTML("The automaton engine (CEL, digest 004) cannot compile this query:"
                                             f"<pre>{html.escape(str(err))}</pre>")]
        elif name == "Strategies":
            self.progress.layout.visibility = "visible"
            try:
                self.strategy_compare = StrategyCompare(self.last_query, self.stream, self.engine_picker.value,
                                                        self.hierarchy, progress=self.progress, **self.options)
            finally:
                self.progress.layout.visibility = "hidden"
            box.children = [self.strategy_compare]
        elif name == "Rewrite":
            box.children = [RewriteView(self.last_query, hierarchy=self.hierarchy)]

    def _engines_tab(self) -> None:
        matrix = self.capabilities
        features = [c for c in matrix.columns if c not in ("rank", "description")]
        used = set(self.query.features) if self.query is not None else set()
        head = "".join(f"<th>{html.escape(e)}</th>" for e in matrix.index)
        rows = []
        for feature in features:
            cells = "".join(f"<td>{'✓' if matrix.at[e, feature] else ''}</td>" for e in matrix.index)
            name = f"<b>{feature}</b>" if feature in used else feature
            rows.append(f"<tr><td>{name}</td>{cells}</tr>")
        self.tabs.children[TABS.index("Engines")].value = (
            "<small>Features the query uses are in bold; <code>engine='auto'</code> picks the best-ranked engine "
            f"with all of them.</small><table><tr><th>feature</th>{head}</tr>{''.join(rows)}</table>")

    def _events_html(self) -> str:
        frame = self.stream.frame
        more = f"<small>first {EVENT_ROWS} of {len(frame):,} events</small>" if len(frame) > EVENT_ROWS else ""
        return more + frame.head(EVENT_ROWS).to_html()
