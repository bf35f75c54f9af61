"""``Workbench``: write a query, see it checked as you type, run it, and look at the result from every side.

Layout, top to bottom: the query editor with its live diagnostics (``cepkit.parse``'s error with its caret,
then the attributes checked against the stream's columns, or the features the query uses), the engine and
strategy pickers with the Run button and a progress bar (shown for long runs only), a status line, the
results grid (``ResultsGrid``: one row per match, sortable, filterable, exportable; picking a row highlights
the match in the timeline and clicking a match in the timeline picks its row), and tabs, built from the list
``tab_builders`` (title -> function of the workbench returning the tab's widget; ``add_tab`` adds one):

- *Timeline*: ``MatchTimeline`` of the last run.
- *Automaton*: ``AutomatonView`` of the query stepped over the events, or why the automaton engine cannot
  compile it (its fragment is CEL, [CEL]).
- *Strategies*: ``StrategyCompare`` of the query (seven runs, so it is computed when the tab is opened, off
  the kernel's main thread on long streams, with a Cancel button).
- *Rewrite*: ``RewriteView``, the query's NEEL rewriting to normal form, one rule per step ([LIU] §5.2).
- *Explain*: ``ExplainView`` of the last run's query: the picked match explained clause by clause, any
  candidate clicked together on its event strip or typed as positions, and, from an empty result, the near
  misses in one click (``cepkit.why_not``).
- *Engines*: the capability matrix ``cepkit.engines()``, the rows the query needs in bold.
- *Events*: the stream in a paged grid.

Every run goes through ``execution.run_query``: an engine that cannot run the query hands it to
``reference``, and the status line says so. The results and the views always show the last run: editing the
query re-checks it at once and greys the results ("edited since this run") until Run. ``selected`` is the
picked match's index (``selected_match`` / ``selected_events()`` give it), for views that explain it.
"""
from __future__ import annotations

import html
from typing import Callable, Optional

import ipywidgets as widgets
import pandas as pd
import traitlets
from itables.widget import ITable

import cepkit
from cepkit.runtime.api import check_against_stream

from .automaton_view import AutomatonView
from .execution import PROGRESS_MIN_EVENTS, STRATEGIES, as_stream, run_query
from .explain_view import ExplainView
from .figures import TABLE_CSS, full_width, plural
from .results_grid import GRID_OPTIONS, ResultsGrid
from .rewrite_view import RewriteView
from .strategy_compare import StrategyCompare
from .timeline import MatchTimeline

TABS = ("Timeline", "Automaton", "Strategies", "Rewrite", "Explain", "Engines", "Events")   # the tabs, in order
AS_WRITTEN = "as written"  # the strategy picker's choice that keeps the query's own strategy
EVENT_ROWS = 10_000        # rows of the Events grid (paged in the browser)
CSS = TABLE_CSS + """<style>
.cepkit-diagnostics pre { margin: 0; white-space: pre-wrap; }
.cepkit-stale { opacity: 0.45; filter: grayscale(1); }
/* a narrow output (800 px window, sidebar open): tabs keep their whole titles and wrap onto a second row */
.cepkit-workbench .widget-tab > .lm-TabBar .lm-TabBar-content { flex-wrap: wrap; }
.cepkit-workbench .widget-tab > .lm-TabBar .lm-TabBar-tab { flex: 0 0 auto; min-width: 0; max-width: none; }
</style>"""


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
        A concept hierarchy (docs/language.md §7) for parsing and matching.
    tz : str, optional
        Time zone of the timeline and the results' times for datetime ts (UTC by default).
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

    selected = traitlets.Int(None, allow_none=True, help="index of the picked match of the last run, or None")

    def __init__(self, events, query: str = "", engine: str = "auto", strategy: Optional[str] = None,
                 hierarchy=None, tz: Optional[str] = None, **options):
        self.stream = as_stream(events)
        self.hierarchy = hierarchy
        self.options = options
        self.query: Optional[cepkit.Query] = None
        self.last_run = None
        self.last_query: Optional[cepkit.Query] = None      # the query of the last run, strategy applied
        self.last_text: Optional[str] = None                # the editor's text at the last run
        self.capabilities = cepkit.engines()
        if engine not in ("auto", *self.capabilities.index):
            raise ValueError(f"unknown engine {engine!r}: choose 'auto' or one of {', '.join(self.capabilities.index)}")
        if strategy is not None and strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
        self.editor = widgets.Textarea(value=query, rows=4, continuous_update=True,
                                       placeholder="PATTERN SEQ(A a, B b) WHERE a.id = b.id WITHIN 10 s",
                                       layout=widgets.Layout(width="100%"))
        self.diagnostics = widgets.HTML()
        self.diagnostics.add_class("cepkit-diagnostics")
        self.engine_picker = widgets.Dropdown(options=["auto", *self.capabilities.index], value=engine,
                                              description="engine")
        self.strategy_picker = widgets.Dropdown(options=[AS_WRITTEN, *STRATEGIES], value=strategy or AS_WRITTEN,
                                                description="strategy")
        self.run_button = widgets.Button(description="Run", button_style="primary", icon="play")
        self.progress = widgets.IntProgress(value=0, min=0, max=1, layout=widgets.Layout(visibility="hidden"))
        self.status = widgets.HTML()
        self.timeline = MatchTimeline(self.stream, tz=tz)
        self.results = ResultsGrid(self.timeline.canvas)
        self.results.layout.display = "none"                 # nothing to show before the first run
        self.automaton_view: Optional[AutomatonView] = None
        self.strategy_compare: Optional[StrategyCompare] = None
        self._follow_pick: Optional[Callable] = None        # the Explain tab's view follows the picked match
        # title -> build(workbench) -> widget, for the tabs built when opened after a run (the costly ones wait
        # to be seen); Timeline and Engines are kept up to date as they are.
        self.tab_builders: dict = {"Automaton": Workbench._automaton_tab, "Strategies": Workbench._strategies_tab,
                                   "Rewrite": Workbench._rewrite_tab, "Explain": Workbench._explain_tab,
                                   "Events": Workbench._events_tab}
        self.engines_table = widgets.HTML()
        self.tabs = widgets.Tab(layout=full_width())
        self._tab_titles: list = []
        kept = {"Timeline": self.timeline, "Engines": self.engines_table}
        for title in TABS:
            self._append_tab(title, kept.get(title))
        self._stale: set = {"Events"}     # the stream's grid waits to be seen, like the views of a run
        super().__init__([widgets.HTML(CSS), self.editor, self.diagnostics,
                          widgets.HBox([self.engine_picker, self.strategy_picker, self.run_button, self.progress],
                                       layout=widgets.Layout(flex_flow="row wrap")),
                          self.status, self.results, self.tabs], layout=full_width())
        self.add_class("cepkit-workbench")
        self.editor.observe(self._on_text, "value")
        self.run_button.on_click(lambda _: self.run())
        self.results.observe(self._on_pick, "selected")
        self.timeline.observe(self._on_pick, "selected")
        self.tabs.observe(lambda _: self._refresh_tab(), "selected_index")
        self._on_text()

    # ------------------------------------------------------------------ public
    @property
    def matches(self) -> Optional[cepkit.Matches]:
        """The matches of the last successful run (None before one)."""
        return self.last_run.matches if self.last_run is not None else None

    @property
    def selected_match(self) -> Optional[cepkit.Match]:
        """The picked match of the last run (None when none is)."""
        return self.matches[self.selected] if self.selected is not None else None

    def selected_events(self) -> pd.DataFrame:
        """The picked match's events (rows of the stream, in logical order; empty when none is picked)."""
        match = self.selected_match
        positions = self.timeline.canvas.logical(match.positions) if match is not None else []
        return self.stream.frame.iloc[positions]

    def results_frame(self) -> Optional[pd.DataFrame]:
        """The last run's matches as the results grid's rows (every match, the chosen fields)."""
        return self.results.frame() if self.last_run is not None else None

    def add_tab(self, title: str, build: Callable) -> None:
        """A tab built by ``build(workbench)`` when it is opened after a run (and rebuilt after the next)."""
        if title in self._tab_titles:
            raise ValueError(f"there is already a tab {title!r}")
        self.tab_builders[title] = build
        self._append_tab(title, None)
        if self.last_run is not None:
            self._stale.add(title)

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
        self.last_run, self.last_query, self.last_text = run, query, self.editor.value
        self._show_results(run)
        self._stale |= set(self.tab_builders) - {"Events"}
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
            self.diagnostics.value = "<small>Type a query (docs/language.md), e.g. <code>T AS x ; H AS y</code>.</small>"
        else:
            try:
                query = cepkit.parse(text, self.hierarchy)
                check_against_stream(query, self.stream)      # attributes, PARTITION BY keys, window units
            except cepkit.QueryError as err:
                self.diagnostics.value = f"<pre style='color:#b00'>{html.escape(str(err))}</pre>"
            else:
                self.query = query
                features = ", ".join(sorted(query.features)) or "none"
                self.diagnostics.value = (f"<small style='color:#070'>✓ checked against the stream's columns · "
                                          f"strategy {query.strategy} · features: {html.escape(features)}</small>")
        self.run_button.disabled = self.query is None
        if self.last_run is not None:
            edited = text != self.last_text
            self.results.set_stale(edited)
            if edited:
                self.timeline.add_class("cepkit-stale")
            else:
                self.timeline.remove_class("cepkit-stale")
            self.status.value = self._status_text(self.last_run, edited)
        self._engines_tab()

    def _advance(self, done: int, total: int) -> None:
        self.progress.max, self.progress.value = total, done

    # ------------------------------------------------------------------ results
    @staticmethod
    def _status_text(run, edited: bool = False) -> str:
        note = f"<br><small>{html.escape(run.note)}</small>" if run.note else ""
        stale = (" · <span style='color:#9a6700'><b>edited since this run</b>: press Run to update</span>"
                 if edited else "")
        return (f"<b>{plural(len(run.matches), 'match', 'matches')}</b> by engine "
                f"<code>{html.escape(run.engine)}</code> in {run.seconds:.3f} s{stale}{note}")

    def _show_results(self, run) -> None:
        self.selected = None
        self.status.value = self._status_text(run)
        self.timeline.set_matches(run.matches)
        self.timeline.remove_class("cepkit-stale")
        self.results.set_matches(run.matches)
        self.results.layout.display = None if len(run.matches) else "none"

    def _on_pick(self, change) -> None:
        """A match picked in the grid or on the timeline is picked in both, and in ``selected``."""
        self.selected = change["new"]

    @traitlets.validate("selected")
    def _check_selected(self, proposal):
        k = proposal["value"]
        found = len(self.matches) if self.matches is not None else 0
        if k is not None and not 0 <= k < found:
            raise traitlets.TraitError(f"selected must be None or a match index 0..{found - 1}, got {k}")
        return k

    @traitlets.observe("selected")
    def _on_selected(self, change) -> None:
        for view in (self.results, self.timeline):
            if view.selected != change["new"]:
                view.selected = change["new"]

    # ------------------------------------------------------------------ tabs
    def _append_tab(self, title: str, child) -> None:
        self._tab_titles.append(title)
        self.tabs.children = (*self.tabs.children, child if child is not None else widgets.VBox())
        self.tabs.titles = tuple(self._tab_titles)

    def _refresh_tab(self) -> None:
        """Build the selected tab's view if it is stale (the last run changed what it shows)."""
        title = self._tab_titles[self.tabs.selected_index or 0]
        if title not in self._stale or (title != "Events" and self.last_run is None):
            return
        self._stale.discard(title)
        box = self.tabs.children[self._tab_titles.index(title)]
        try:
            view = self.tab_builders[title](self)
        except cepkit.QueryError as err:
            view = widgets.HTML(f"<pre style='color:#b00'>{html.escape(str(err))}</pre>")
        box.children = [view]

    def _automaton_tab(self):
        try:
            self.automaton_view = AutomatonView(self.last_query, self.stream, self.hierarchy)
        except cepkit.QueryError as err:
            self.automaton_view = None
            return widgets.HTML("The automaton engine (CEL, [CEL]) cannot compile this query:"
                                f"<pre>{html.escape(str(err))}</pre>")
        return self.automaton_view

    def _strategies_tab(self):
        self.strategy_compare = StrategyCompare(self.last_query, self.stream, self.engine_picker.value,
                                                self.hierarchy, background=len(self.stream) >= PROGRESS_MIN_EVENTS,
                                                tz=self.timeline.tz, **self.options)
        return self.strategy_compare

    def _rewrite_tab(self):
        return RewriteView(self.last_query, hierarchy=self.hierarchy)

    def _explain_tab(self):
        """The last run's query as run (its text, with the strategy picked); it follows the picked match."""
        strategy = self.strategy_picker.value
        view = ExplainView(cepkit.parse(self.last_text, self.hierarchy), self.stream,
                           None if self.selected_match is None else self.selected_match.positions,
                           strategy=None if strategy == AS_WRITTEN else strategy, hierarchy=self.hierarchy)
        if not len(self.matches):
            view.misses_note.value = "<b>No match.</b> Press <i>Why not?</i> for the near misses."
        if self._follow_pick is not None:           # the view of the previous run stops following
            self.unobserve(self._follow_pick, "selected")

        def follow(change):
            if change["new"] is not None:
                view.explain(self.matches[change["new"]].positions)

        self._follow_pick = follow
        self.observe(follow, "selected")
        return view

    def _events_tab(self):
        frame = self.stream.frame
        note = (f"<small>the grid pages the first {EVENT_ROWS:,} of {len(frame):,} events</small>"
                if len(frame) > EVENT_ROWS else "")
        grid = ITable(frame.head(EVENT_ROWS).rename_axis("position").reset_index(),
                      **{**GRID_OPTIONS, "select": False, "buttons": ["pageLength"]})
        return widgets.VBox([widgets.HTML(note), grid], layout=full_width())

    def _engines_tab(self) -> None:
        matrix = self.capabilities
        features = [c for c in matrix.columns if c not in ("rank", "description")]
        used = set(self.query.features) if self.query is not None else set()
        head = "".join(f"<th class='mark'>{html.escape(e)}</th>" for e in matrix.index)
        rows = []
        for feature in features:
            cells = "".join(f"<td class='mark'>{'✓' if matrix.at[e, feature] else ''}</td>" for e in matrix.index)
            name = f"<b>{feature}</b>" if feature in used else feature
            rows.append(f"<tr><td>{name}</td>{cells}</tr>")
        self.engines_table.value = (
            "<small>Features the query uses are in bold; <code>engine='auto'</code> picks the best-ranked engine "
            f"with all of them.</small><table class='cepkit-table'><tr><th>feature</th>{head}</tr>"
            f"{''.join(rows)}</table>")
