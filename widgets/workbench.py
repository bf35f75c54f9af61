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
- *Funnel*: ``FunnelView``: how many candidates reached each step of a sequence query within its window,
  and every partial match (``cepkit.funnel``, ``cepkit.partial_matches``), or why the query has none.
- *Rewrite*: ``RewriteView``, the query's NEEL rewriting to normal form, one rule per step ([LIU] §5.2).
- *Explain*: ``ExplainView`` of the last run's query: the picked match explained clause by clause, any
  candidate clicked together on its event strip or typed as positions, and, from an empty result, the near
  misses in one click (``cepkit.why_not``).
- *Engines*: the capability matrix ``cepkit.engines()``, the rows the query needs in bold.
- *Events*: the stream in a grid paged from the kernel (every event, searchable); it pages to the picked
  match's first event.

The editor is a ``QueryEditor`` (CodeMirror: colours, completion of keywords and the stream's types and
attributes, the parse error underlined). The templates list above Run fills it with a recipe's query
(``cepkit.recipes``); ``code()`` gives the Python that reproduces the run (the *Copy as code* button shows it
and copies it), ``to_html(path)`` a standalone report of it and ``save_figures(directory)`` its figures as
SVG/PNG files (``export``).

Every run goes through ``execution.run_query``: an engine that cannot run the query hands it to
``reference``, and the status line says so. The results and the views always show the last run: editing the
query re-checks it at once and greys the results ("edited since this run") until Run. ``selected`` is the
picked match's index (``selected_match`` / ``selected_events()`` give it), for views that explain it.

Spark and live (``on_spark``, ``live``): ``Workbench(spark_dataframe)`` makes a ``SparkWorkbench``; with a
Spark session active the engine picker offers ``spark`` (``run_on_spark``: progress and Cancel on Spark);
``live(batches)`` runs the editor's query over arriving batches in a *Live* tab (``LiveView``).
"""

from __future__ import annotations

import html
import threading
from pathlib import Path
from typing import Callable, Optional

import ipywidgets as widgets
import pandas as pd
import traitlets

import cepkit
from cepkit import match_recognize as mr
from cepkit import recipes
from cepkit.warmup import compile_notes

from .automaton_view import AutomatonView
from .diagnostics import check_text, error_html
from .execution import PROGRESS_MIN_EVENTS, STRATEGIES, Cancelled, as_stream, failure_text, run_query
from .editor import QueryEditor
from .explain_view import ExplainView
from .export import code_of, report_html, save_workbench_figures
from .live import LiveView
from .on_spark import SPARK, SparkWorkbench, is_spark_frame, run_on_spark, spark_session_active
from .figures import TABLE_CSS, full_width, plural
from .funnel_view import FunnelView
from .paged_table import PagedTable, TableData
from . import recognize
from .results_grid import ResultsGrid
from .rewrite_view import RewriteView
from .strategy_compare import StrategyCompare
from .timeline import MatchTimeline

TABS = (
    "Timeline",
    "Automaton",
    "Strategies",
    "Funnel",
    "Rewrite",
    "Explain",
    "Engines",
    "Events",
)  # the tabs, in order
AS_WRITTEN = "as written"  # the strategy picker's choice that keeps the query's own strategy
CSS = (
    TABLE_CSS
    + """<style>
.cepkit-stale { opacity: 0.45; filter: grayscale(1); }
/* a narrow output (800 px window, sidebar open): tabs keep their whole titles and wrap onto a second row */
.cepkit-workbench .widget-tab > .lm-TabBar .lm-TabBar-content { flex-wrap: wrap; }
.cepkit-workbench .widget-tab > .lm-TabBar .lm-TabBar-tab { flex: 0 0 auto; min-width: 0; max-width: none; }
</style>"""
)


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
    type, ts : str, optional
        The columns holding each event's type and time when not ``type`` and ``ts`` (as ``cepkit.match``).
    name : str, default "events"
        What ``code()`` (*Copy as code*) calls the events: the name of your variable holding them.
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

    def __new__(cls, events=None, *args, **kwargs):
        if is_spark_frame(events):  # the Workbench on Spark (on_spark.py): the result stays in Spark
            return SparkWorkbench(events, *args, **kwargs)
        return super().__new__(cls, events, *args, **kwargs)

    def __init__(
        self,
        events,
        query: str = "",
        engine: str = "auto",
        strategy: Optional[str] = None,
        hierarchy=None,
        tz: Optional[str] = None,
        type: Optional[str] = None,
        ts: Optional[str] = None,
        name: str = "events",
        **options,
    ):
        self.stream = as_stream(events, type=type, ts=ts)
        self.columns = {k: v for k, v in (("type", type), ("ts", ts)) if v is not None}  # for code()
        self.name = name
        self.recipe: Optional[str] = None  # the recipe whose events these are (from_recipe)
        self.hierarchy = hierarchy
        self.options = options
        self.query: Optional[cepkit.Query] = None
        self.sql_notation = False  # the editor holds MATCH_RECOGNIZE (recognize.py)
        self.last_run = None
        self.last_query: Optional[cepkit.Query] = None  # the query of the last run, strategy applied
        self.last_text: Optional[str] = None  # the editor's text at the last run
        self.capabilities = cepkit.engines()
        engines = ["auto", *self.capabilities.index, *([SPARK] if spark_session_active() else [])]
        if engine not in engines:
            raise ValueError(f"unknown engine {engine!r}: choose 'auto' or one of {', '.join(self.capabilities.index)}")
        if strategy is not None and strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
        self.editor = QueryEditor(
            query,
            placeholder="PATTERN SEQ(A a, B b) WHERE a.id = b.id WITHIN 10 s",
            layout=full_width(),
        )
        self.editor.for_stream(self.stream)
        self.diagnostics = widgets.HTML()
        self.diagnostics.add_class("cepkit-diagnostics")
        self.engine_picker = widgets.Dropdown(options=engines, value=engine, description="engine")
        self.strategy_picker = widgets.Dropdown(
            options=[AS_WRITTEN, *STRATEGIES], value=strategy or AS_WRITTEN, description="strategy"
        )
        self.template_picker = widgets.Dropdown(
            options=[("templates…", "")] + [(r.title, r.name) for r in recipes.RECIPES.values()],
            value="",
            description="",
            tooltip="fill the editor with a recipe's query (cepkit.recipes)",
            layout=widgets.Layout(width="auto"),
        )
        self.template_picker.observe(self._on_template, "value")
        self.run_button = widgets.Button(description="Run", button_style="primary", icon="play")
        self.code_button = widgets.Button(
            description="Copy as code",
            icon="clipboard",
            tooltip="the Python that reproduces this query and its options",
        )
        self.code_button.on_click(lambda _: self.show_code())
        self.code_box = widgets.HTML()
        self.progress = widgets.IntProgress(value=0, min=0, max=1, layout=widgets.Layout(visibility="hidden"))
        self.cancel_button = widgets.Button(
            description="Cancel",
            icon="stop",
            button_style="warning",
            tooltip="stop the run (within a second); the last run stays",
            layout=widgets.Layout(display="none"),
        )
        self.cancel_button.on_click(lambda _: self.cancel())
        self.running = False
        self._cancelled = False
        self._thread: Optional[threading.Thread] = None
        self._spark_job = None  # the cepkit.spark.Job of a run on Spark
        self.status = widgets.HTML()
        self.timeline = MatchTimeline(self.stream, tz=tz)
        self.results = ResultsGrid(self.timeline.canvas, names=self.columns)
        self.results.layout.display = "none"  # nothing to show before the first run
        self.automaton_view: Optional[AutomatonView] = None
        self.events_table: Optional[PagedTable] = None
        self.strategy_compare: Optional[StrategyCompare] = None
        self._follow_pick: Optional[Callable] = None  # the Explain tab's view follows the picked match
        # title -> build(workbench) -> widget, for the tabs built when opened after a run (the costly ones wait
        # to be seen); Timeline and Engines are kept up to date as they are.
        self.tab_builders: dict = {
            "Automaton": Workbench._automaton_tab,
            "Strategies": Workbench._strategies_tab,
            "Funnel": Workbench._funnel_tab,
            "Rewrite": Workbench._rewrite_tab,
            "Explain": Workbench._explain_tab,
            "Events": Workbench._events_tab,
        }
        self.engines_table = widgets.HTML()
        self.tabs = widgets.Tab(layout=full_width())
        self._tab_titles: list = list(TABS)
        kept = {"Timeline": self.timeline, "Engines": self.engines_table}
        self.tabs.children = [kept.get(title) or widgets.VBox() for title in TABS]
        self.tabs.titles = TABS
        self._stale: set = {"Events"}  # the stream's grid waits to be seen, like the views of a run
        super().__init__(
            [
                widgets.HTML(CSS),
                self.editor,
                self.diagnostics,
                widgets.HBox(
                    [
                        self.engine_picker,
                        self.strategy_picker,
                        self.template_picker,
                        self.run_button,
                        self.cancel_button,
                        self.code_button,
                        self.progress,  # last: hidden between runs, it kept a gap between Run and Copy as code
                    ],
                    layout=widgets.Layout(flex_flow="row wrap"),
                ),
                self.code_box,
                self.status,
                self.results,
                self.tabs,
            ],
            layout=full_width(),
        )
        self.add_class("cepkit-workbench")
        self.editor.observe(self._on_text, "value")
        self.run_button.on_click(lambda _: self.run(wait=False))
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

    @classmethod
    def from_recipe(cls, name: str, **kwargs) -> "Workbench":
        """A workbench over a recipe's stream with its query in the editor (``cepkit.recipes``)."""
        recipe = recipes.get(name)
        workbench = cls(recipe.events(), query=recipe.query, **kwargs)
        workbench.recipe = name  # code() reads the events from the recipe
        return workbench

    def code(self) -> str:
        """The Python that reproduces the editor's query, engine, strategy and options over the events named
        ``name`` (``Workbench(..., name="clicks")``; ``export.code_of``)."""
        return code_of(self)

    def show_code(self) -> str:
        """Copy as code: ``code()`` shown under the controls and put on the page's clipboard; returns it."""
        code = self.code()
        box = (
            "<div class='cepkit-scroll'><pre class='cepkit-code' style='background:#f6f8fa;padding:6px;"
            "margin:2px 0;white-space:pre'>{}</pre></div><small>{}</small>"
        )
        self.code_box.value = box.format(html.escape(code), "copying to the clipboard…")

        def copied(ok: bool) -> None:
            note = "copied to the clipboard" if ok else "the page gave no clipboard: select the text and copy it"
            self.code_box.value = box.format(html.escape(code), note)

        self.editor.copy(code, copied)
        return code

    def to_html(self, path, title: str = "cepkit report") -> None:
        """Write a standalone HTML report of the last run to ``path``: the query, the matches, the timeline and
        the automaton, plotly.js inlined (``export.report_html``)."""
        Path(path).write_text(report_html(self, title), encoding="utf-8")

    def save_figures(self, directory, format: str = "svg", **kwargs) -> list:
        """Write the last run's figures (timeline, automaton, funnel: those the query has) to ``directory`` as
        ``svg``, ``png`` or ``pdf`` files, with kaleido (``export.save_workbench_figures``); the paths. In the
        notebook each figure's modebar saves PNG and SVG too."""
        return save_workbench_figures(self, directory, format, **kwargs)

    def add_tab(self, title: str, build: Callable) -> None:
        """A tab built by ``build(workbench)`` when it is opened after a run (and rebuilt after the next)."""
        if title in self._tab_titles:
            raise ValueError(f"there is already a tab {title!r}")
        self.tab_builders[title] = build
        self._append_tab(title, None)
        if self.last_run is not None:
            self._stale.add(title)

    def live(self, batches, delay: float = 0, view: Optional[dict] = None) -> LiveView:
        """The editor's query (engine and strategy picked) run live over ``batches`` (DataFrames of events,
        e.g. ``live.replay(events, every="6h", speed=...)``) in a *Live* tab: a ``LiveView`` (``view``: its
        bounds), returned to be ``run()`` or ``start()``ed."""
        if self.query is None:
            raise ValueError("the editor's query does not parse: " + html.unescape(self.diagnostics.value))
        strategy = self.strategy_picker.value
        engine = "auto" if self.engine_picker.value == SPARK else self.engine_picker.value
        view = LiveView.from_batches(
            self.query.text,
            batches,
            engine,
            delay,
            self.hierarchy,
            view,
            **({} if strategy == AS_WRITTEN else {"strategy": strategy}),
            **self.options,
        )
        if "Live" not in self._tab_titles:
            self._append_tab("Live", view)
        self.tabs.children = [view if t == "Live" else c for t, c in zip(self._tab_titles, self.tabs.children)]
        self.tabs.selected_index = self._tab_titles.index("Live")
        return view

    def run(self, wait: bool = True):
        """Run the editor's query with the picked engine and strategy; returns the ``Run`` (None on error or
        when cancelled). ``wait=False`` (the Run button) runs a long stream's query off the kernel's main
        thread, so that Cancel is heard (``wait_run()`` joins it; the method then returns None). While it
        runs, Run is disabled, Cancel shown, and the status says what runs (the last run's results greyed)."""
        if self.query is None or self.running:
            return None
        strategy = self.strategy_picker.value
        try:
            query = self.query if strategy == AS_WRITTEN or self.sql_notation else self.query.with_strategy(strategy)
        except cepkit.QueryError as err:
            self.status.value = error_html(err)
            return None
        long_run = not self.sql_notation and (
            self.engine_picker.value == SPARK or len(self.stream) >= PROGRESS_MIN_EVENTS
        )
        self._begin(query, long_run)
        if long_run and not wait:
            self._thread = threading.Thread(
                target=self._execute, args=(query, long_run), name="Workbench.run", daemon=True
            )
            self._thread.start()
            return None
        return self._execute(query, long_run)

    def cancel(self) -> None:
        """Stop the run under way (between two slices of events: within a second); the last run stays."""
        if self.running:
            self._cancelled = True
            self.cancel_button.disabled = True
            if self._spark_job is not None:  # a run on Spark: its Spark jobs are interrupted
                self._spark_job.cancel()

    def wait_run(self, timeout: Optional[float] = None) -> Optional["cepkit.widgets.Run"]:
        """Wait for a run started with ``wait=False``; the last run (None before one)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.last_run

    def _begin(self, query, long_run: bool) -> None:
        self.running, self._cancelled, self._spark_job = True, False, None
        self.run_button.disabled = True
        self.cancel_button.disabled = False
        self.cancel_button.layout.display = None if long_run else "none"
        self.status.value = (
            f"<span style='color:#555'>running on engine "
            f"<code>{html.escape(self.engine_picker.value)}</code>…</span>"
            + (" <small>(below: the last run, greyed)</small>" if self.last_run is not None else "")
        )
        self.progress.layout.visibility = "visible" if long_run else "hidden"
        self.progress.value, self.progress.max = 0, max(len(self.stream), 1)
        if self.last_run is not None:
            self.results.set_stale(True)
            self.timeline.add_class("cepkit-stale")

    def _execute(self, query, long_run: bool):
        text = self.editor.value
        try:
            with compile_notes(self._compiling):  # a first run on a clean cache compiles kernels
                if self.sql_notation:  # MATCH_RECOGNIZE over the events as a table
                    run = recognize.run(query, self.stream, self.columns)
                elif self.engine_picker.value == SPARK:  # the active Spark session runs it (cepkit.spark.match)
                    run = run_on_spark(
                        query,
                        self.stream,
                        progress=self._advance,
                        job_started=lambda job: setattr(self, "_spark_job", job),
                        **self.options,
                    )
                else:
                    run = run_query(
                        query,
                        self.stream,
                        self.engine_picker.value,
                        None,
                        self.hierarchy,
                        progress=self._advance if long_run else None,
                        **self.options,
                    )
        except Cancelled:
            self._end()
            done = self.progress.value
            self.status.value = (
                "<b>cancelled</b>: the Spark jobs were interrupted"
                if self._spark_job is not None
                else f"<b>cancelled</b> after {done:,} of {plural(len(self.stream), 'event')}"
            )
            self.status.value += " · below: the last run, greyed" if self.last_run is not None else ""
            return None
        except (cepkit.QueryError, cepkit.EventError) as err:
            self._end()
            self.status.value = error_html(err)
            return None
        except Exception as err:
            self._end()
            if threading.current_thread() is not self._thread:
                raise
            # the Run button's thread: a traceback there reaches no one, and the status would read as before
            self.status.value = self._failed_text(err, query)
            if self.last_run is not None:
                self.results.set_stale(True)
                self.timeline.add_class("cepkit-stale")
            return None
        except BaseException:
            self._end()
            raise
        self.last_run, self.last_query, self.last_text = run, query, text
        if isinstance(run, recognize.RecognizeRun) and "SQL rows" not in self.tab_builders:
            self.add_tab("SQL rows", lambda wb: recognize.rows_view(wb.last_run))
        self._end()
        self._show_results(run)
        self._stale |= set(self.tab_builders) - {"Events"}
        self._refresh_tab()
        return run

    def _compiling(self, note: str) -> None:
        """numba compiles an engine's kernels for this run (the first on a clean cache): said while it runs."""
        self.status.value += f" <small style='color:#555'>· {html.escape(note)}</small>"

    def _end(self) -> None:
        self.running = False
        self.progress.layout.visibility = "hidden"
        self.cancel_button.layout.display = "none"
        self.run_button.disabled = self.query is None
        if self.last_run is not None:
            self._on_text()

    def __repr__(self):
        found = len(self.matches) if self.matches is not None else None
        return f"Workbench(events={len(self.stream)}, query={self.editor.value!r}, matches={found})"

    # ------------------------------------------------------------------ editor
    def _on_text(self, change=None) -> None:
        text = self.editor.value
        if change is not None:
            self.code_box.value = ""  # the code shown was the previous text's
        self.sql_notation = mr.is_recognize(text)
        self.editor.use_notation(self.sql_notation)
        self.engine_picker.disabled = self.strategy_picker.disabled = self.sql_notation  # the standard fixes both
        checked = (
            recognize.check_text(text, self.stream, self.columns)
            if self.sql_notation
            else check_text(text, self.stream, self.hierarchy)
        )
        self.query, self.diagnostics.value = checked.query, checked.html
        self.editor.show(text, checked.errors, warnings=checked.warnings)
        self.run_button.disabled = self.query is None or self.running
        if self.last_run is not None and not self.running:
            edited = text != self.last_text
            self.results.set_stale(edited)
            if edited:
                self.timeline.add_class("cepkit-stale")
            else:
                self.timeline.remove_class("cepkit-stale")
            self.status.value = self._status_text(self.last_run, edited)
        self._engines_tab()

    def _advance(self, done: int, total: int) -> None:
        if self._cancelled:
            raise Cancelled()
        self.progress.max, self.progress.value = total, done
        self.status.value = (
            f"<span style='color:#555'>running on engine <code>{html.escape(self.engine_picker.value)}"
            f"</code>: {done:,} of {plural(total, 'event')} ({done / max(total, 1):.0%})</span>"
            + (" <small>(below: the last run, greyed)</small>" if self.last_run is not None else "")
        )

    # ------------------------------------------------------------------ results
    @staticmethod
    def _status_text(run, edited: bool = False) -> str:
        note = f"<br><small>{html.escape(run.note)}</small>" if run.note else ""
        stale = (
            " · <span style='color:#9a6700'><b>edited since this run</b>: press Run to update</span>" if edited else ""
        )
        limit = getattr(getattr(getattr(run.matches, "query", None), "ast", None), "limit", None)
        cut = (  # LIMIT n kept n: never said as if the result were whole
            f" · <b>cut at LIMIT {limit:,}</b>: the first {limit:,} in output order, more may follow"
            if limit is not None and len(run.matches) >= limit
            else ""
        )
        return (
            f"<b>{plural(len(run.matches), 'match', 'matches')}</b> by engine "
            f"<code>{html.escape(run.engine)}</code> in {run.seconds:.3f} s{cut}{stale}{note}"
        )

    def _failed_text(self, err: Exception, query) -> str:
        """A run that raised, said in the status line: the error, and what to try for a result too large."""
        said, hint = failure_text(err, query)
        why = f"<b>the run failed</b>: {html.escape(said)}" + (
            f"<br><small>{html.escape(hint)}</small>" if hint else ""
        )
        last = " · <small>below: the last run, greyed</small>" if self.last_run is not None else ""
        return f"<span style='color:#b00'>{why}</span>{last}"

    def _show_results(self, run) -> None:
        self.selected = None
        self.status.value = self._status_text(run)
        # the grid first: the page draws it before the timeline, whose figure takes it 0.5-1.5 s to draw
        self.results.set_matches(run.matches)
        self.results.layout.display = None if len(run.matches) else "none"
        self.timeline.set_matches(run.matches)
        self.timeline.remove_class("cepkit-stale")

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
        self._page_events()
        if self.last_run is not None:  # the automaton steps around the picked match: built again
            self._stale.add("Automaton")
            self._refresh_tab()

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
            if isinstance(self.last_run, recognize.RecognizeRun) and title in (*recognize.NOT_FOR_SQL, "Explain"):
                view = self._sql_explain_tab() if title == "Explain" else recognize.not_for_sql(title)
            else:
                view = self.tab_builders[title](self)
        except cepkit.QueryError as err:
            view = widgets.HTML(error_html(err))
        box.children = [view]

    def _automaton_tab(self):
        try:
            match = self.selected_match
            self.automaton_view = AutomatonView(
                self.last_query,
                self.stream,
                self.hierarchy,
                around=match.positions if match is not None else None,
                tz=self.timeline.tz,
            )
        except cepkit.QueryError as err:
            self.automaton_view = None
            return widgets.HTML("The automaton engine (CEL, [CEL]) cannot compile this query:" + error_html(err))
        return self.automaton_view

    def _strategies_tab(self):
        engine = "auto" if self.engine_picker.value == SPARK else self.engine_picker.value
        # the last run is this query under its own strategy, on this engine: shown, not run again
        ran = {} if engine != self.engine_picker.value else {self.last_query.strategy: self.last_run}
        self.strategy_compare = StrategyCompare(
            self.last_query,
            self.stream,
            engine,
            self.hierarchy,
            background=len(self.stream) >= PROGRESS_MIN_EVENTS,
            tz=self.timeline.tz,
            runs=ran,
            **self.options,
        )
        return self.strategy_compare

    def _rewrite_tab(self):
        return RewriteView(self.last_query, hierarchy=self.hierarchy)

    def _explain_tab(self):
        """The last run's query as run (its text, with the strategy picked); it follows the picked match."""
        strategy = self.strategy_picker.value
        view = ExplainView(
            cepkit.parse(self.last_text, self.hierarchy),
            self.stream,
            None if self.selected_match is None else self.selected_match.positions,
            strategy=None if strategy == AS_WRITTEN else strategy,
            hierarchy=self.hierarchy,
            tz=self.timeline.tz,
        )
        if not len(self.matches):
            view.misses_note.value = "<b>No match.</b> Press <i>Why not?</i> for the near misses."
        if self._follow_pick is not None:  # the view of the previous run stops following
            self.unobserve(self._follow_pick, "selected")

        def follow(change):
            if change["new"] is not None:
                view.explain(self.matches[change["new"]].positions)

        self._follow_pick = follow
        self.observe(follow, "selected")
        return view

    def _sql_explain_tab(self):
        """A MATCH_RECOGNIZE run's Explain: why the rows from the picked match's (or an event's) row match."""
        view = recognize.RecognizeExplain(self.last_run, self.stream, self.columns)
        if self.selected is not None:
            view.explain_match(self.selected)
        if self._follow_pick is not None:
            self.unobserve(self._follow_pick, "selected")

        def follow(change):
            if change["new"] is not None:
                view.explain_match(change["new"])

        self._follow_pick = follow
        self.observe(follow, "selected")
        return view

    def _on_template(self, change) -> None:
        """A recipe picked in the templates list: its query fills the editor."""
        if change["new"]:
            self.editor.value = recipes.get(change["new"]).query

    def _funnel_tab(self):
        try:
            return FunnelView(self.last_query, self.stream, self.engine_picker.value, self.hierarchy, **self.options)
        except cepkit.QueryError as err:
            if not err.engines:  # not a sequence of steps: the tab says why
                raise
            return FunnelView(self.last_query, self.stream, "auto", self.hierarchy, **self.options)

    def _events_tab(self):
        frame = self.stream.frame
        table = PagedTable(noun="event", selectable=False, layout=full_width())
        table.set_data(
            TableData(
                len(frame),
                lambda: self._events_rows(frame),  # search, sort
                lambda ids: self._events_rows(frame.iloc[ids]),
            )
        )  # a page
        self.events_table = table
        self._page_events()
        return table

    def _events_rows(self, rows: pd.DataFrame) -> pd.DataFrame:
        """Rows of the stream for the Events grid: their position first, and datetimes on the clocks of the
        Workbench's time zone, as the results grid and the timeline show them (with the offset)."""
        rows = rows.rename_axis("position").reset_index()
        if self.stream.ts_is_datetime:
            rows["ts"] = self.timeline.canvas.zoned(self.stream.times[rows["position"].to_numpy()])
        return rows

    def _page_events(self) -> None:
        """The Events grid shows the picked match's first event (picked in the grid)."""
        table = self.events_table
        match = self.selected_match
        if table is not None and match is not None and match.positions:
            table.show(int(self.timeline.canvas.logical(match.positions)[0]))

    def _engines_tab(self) -> None:
        matrix = self.capabilities
        features = [c for c in matrix.columns if c not in ("rank", "description")]
        used = set(self.query.features) if self.query is not None and not self.sql_notation else set()
        head = "".join(f"<th class='mark'>{html.escape(e)}</th>" for e in matrix.index)
        rows = []
        for feature in features:
            cells = "".join(f"<td class='mark'>{'✓' if matrix.at[e, feature] else ''}</td>" for e in matrix.index)
            name = f"<b>{feature}</b>" if feature in used else feature
            rows.append(f"<tr><td>{name}</td>{cells}</tr>")
        self.engines_table.value = (
            "<small>Features the query uses are in bold; <code>engine='auto'</code> picks the best-ranked engine "
            f"with all of them.</small><table class='cepkit-table'><tr><th>feature</th>{head}</tr>"
            f"{''.join(rows)}</table>"
        )
