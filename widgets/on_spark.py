"""The Workbench on a Spark session: ``SparkWorkbench`` (what ``Workbench(spark_dataframe)`` makes) and
``run_on_spark`` (the engine picker's "spark" choice for local events).

Everything runs through ``cepkit.spark``'s public API: the events are numbered once
(``cepkit.spark.with_positions``), every run is a ``cepkit.spark.Job`` (Spark's task progress in the progress
bar, Cancel interrupting the run's Spark jobs, on a classic or a Spark Connect session alike) running
``cepkit.spark.match``. The result stays in Spark: the status line gives the count, the grid (a
``PagedTable``) shows one page of matches at a time (the page's rows and their events fetched from Spark
when it is shown, with the fields chosen; searching, sorting or exporting it fetches the whole result once),
the timeline draws a sample of matches spread over the whole result (its title says it is a sample), and
picking a match fetches the events of its time span to explain it locally (``ExplainView``).
"""

from __future__ import annotations

import html
import threading
from typing import Iterable, Optional

import ipywidgets as widgets
import numpy as np
import pandas as pd
import traitlets

import cepkit

from .diagnostics import check_text, error_html
from .editor import QueryEditor
from .execution import STRATEGIES, Cancelled, Run
from .explain_view import ExplainView
from .figures import TABLE_CSS, format_value, full_width, plural
from .paged_table import PagedTable, TableData
from .results_grid import fields_picker, known_fields
from .timeline import MatchTimeline

SPARK = "spark"  # the engine picker's choice that runs the query on the active Spark session
SAMPLE = 300  # matches the timeline draws, spread over the whole result
EXPLAIN_SPAN = 2000  # at most this many events around a picked match are fetched to explain it
AS_WRITTEN = "as written"


def is_spark_frame(value) -> bool:
    """Whether ``value`` is a Spark DataFrame (classic or Connect), without importing pyspark."""
    kind = type(value)
    return kind.__name__ == "DataFrame" and kind.__module__.startswith("pyspark.sql")


def spark_session_active() -> bool:
    """Whether a Spark session is active (then the engine picker offers ``SPARK``); never starts one."""
    import sys

    if "pyspark" not in sys.modules:  # nobody started Spark in this process
        return False
    import cepkit.spark

    return cepkit.spark.active_session() is not None


def run_on_spark(query, stream, engine: str = "auto", progress=None, job_started=None, **options) -> Run:
    """``query`` (a parsed Query, strategy applied) over a local ``Stream`` on the active Spark session, as a
    ``Run`` of ``cepkit.Matches`` with the positions ``cepkit.match`` gives. ``progress(done, total)`` follows
    the Spark tasks; ``job_started(job)`` receives the ``cepkit.spark.Job`` (whose ``cancel()`` makes this
    raise ``execution.Cancelled``)."""
    import cepkit.spark

    spark = cepkit.spark.active_session()

    def work():
        found = cepkit.spark.match(query, spark.createDataFrame(stream.frame), engine, **options)
        return found.toPandas()

    job = cepkit.spark.Job(
        work, spark, progress=None if progress is None else (lambda p: progress(p.done, max(p.total, 1)))
    )
    if job_started is not None:
        job_started(job)
    try:
        rows = job.start().wait()
    except cepkit.spark.Cancelled as stop:
        raise Cancelled(str(stop)) from None
    found = spark_matches(rows, variables_of(rows.columns, query))
    return Run(
        cepkit.Matches(found, f"{SPARK} ({engine})", query, stream=stream),
        job.seconds,
        f"ran on Spark ({type(spark).__module__.split('.')[2]} session)",
    )


def variables_of(columns, query) -> list:
    """The variables among the columns of ``cepkit.spark.match``'s rows (the others: match_id, positions and
    the query's partition keys)."""
    return [c for c in columns if c not in ("match_id", "positions", *query.partition_by)]


def spark_matches(rows: pd.DataFrame, variables: list) -> list:
    """``cepkit.spark.match``'s rows (in pandas) as ``cepkit.Match``es: each variable's binding, the positions."""
    return [
        cepkit.Match.of(
            {v: binding(row[v]) for v in variables if binding(row[v]) is not None}, [int(p) for p in row["positions"]]
        )
        for _, row in rows.iterrows()
    ]


def binding(value):
    """A variable's binding as Spark returns it (a long, an array for a Kleene variable, null) as a Match
    binding: an int, a tuple of ints, or None."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(int(v) for v in value)
    return None if value is None or pd.isna(value) else int(value)


class SparkWorkbench(widgets.VBox):
    """A query editor, pickers, Run and Cancel, a paged grid, a sampled timeline and Explain over a Spark
    DataFrame of events (``Workbench(spark_dataframe)`` makes one).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Events as ``cepkit.spark.match`` takes them (``type``, ``ts``, attributes).
    query, engine, strategy, hierarchy, tz : as for ``Workbench``; ``engine`` is the engine Spark's workers run.
    sample : how many matches the timeline draws.
    **options : passed to ``cepkit.spark.match``.
    """

    selected = traitlets.Int(None, allow_none=True, help="match_id of the picked match, or None")

    def __init__(
        self,
        df,
        query: str = "",
        engine: str = "auto",
        strategy: Optional[str] = None,
        hierarchy=None,
        tz: Optional[str] = None,
        sample: int = SAMPLE,
        **options,
    ):
        import cepkit.spark

        self.df, self.spark = df, df.sparkSession
        self.hierarchy, self.tz, self.options = hierarchy, tz, options
        self.sample = sample
        self.schema = _types_and_columns(df)
        self.attributes = sorted(str(c) for c in self.schema.frame.columns if c not in ("type", "ts", "position"))
        self.events = None  # the events numbered by cepkit.spark.with_positions (at the first run)
        self.result = None  # the last run's matches: cepkit.spark.match's DataFrame, in match_id order
        self.count = 0
        self.query: Optional[cepkit.Query] = None
        self.last_query: Optional[cepkit.Query] = None
        self.job = None
        self.seconds = 0.0
        self.editor = QueryEditor(query, layout=full_width())
        self.editor.for_stream(self.schema)  # completion: the DataFrame's types and each one's columns
        self.diagnostics = widgets.HTML()
        engines = list(cepkit.engines().index)
        if engine not in ("auto", *engines):
            raise ValueError(f"unknown engine {engine!r}: choose 'auto' or one of {', '.join(engines)}")
        self.engine_picker = widgets.Dropdown(options=["auto", *engines], value=engine, description="engine")
        self.strategy_picker = widgets.Dropdown(
            options=[AS_WRITTEN, *STRATEGIES], value=strategy or AS_WRITTEN, description="strategy"
        )
        self.run_button = widgets.Button(description="Run on Spark", button_style="primary", icon="play")
        self.cancel_button = widgets.Button(
            description="Cancel", icon="stop", button_style="warning", layout=widgets.Layout(display="none")
        )
        self.progress = widgets.IntProgress(value=0, min=0, max=1, layout=widgets.Layout(visibility="hidden"))
        self.progress_text = widgets.HTML()
        self.status = widgets.HTML(
            f"<small>events: a Spark DataFrame ({html.escape(_session_kind(self.spark))} session); press Run</small>"
        )
        self.status.add_class("cepkit-spark-status")
        self.fields_picker = fields_picker(self.attributes)
        self.grid = PagedTable(noun="match", nouns="matches", csv_name="matches.csv", layout=full_width())
        self.results = widgets.VBox(
            [
                widgets.HBox(
                    [widgets.HTML("<small>fields</small>"), self.fields_picker],
                    layout=widgets.Layout(width="100%", align_items="center", flex_flow="row wrap"),
                ),
                self.grid,
            ],
            layout=full_width(),
        )
        self.results.add_class("cepkit-spark-results")
        self.results.layout.display = "none"
        self.timeline_box = widgets.VBox(layout=full_width())
        self.explain_box = widgets.VBox(
            [
                widgets.HTML(
                    "<small>Pick a match in the grid or on the timeline: its "
                    "events are fetched from Spark and explained.</small>"
                )
            ],
            layout=full_width(),
        )
        # (result, (fields, match_ids), rows): the page last fetched, or every row (match_ids None)
        self._page: Optional[tuple] = None
        self.timeline: Optional[MatchTimeline] = None
        self.explain_view: Optional[ExplainView] = None
        self._sample_ids: list = []
        self.tabs = widgets.Tab(
            [self.timeline_box, self.explain_box], titles=("Timeline", "Explain"), layout=full_width()
        )
        super().__init__(
            [
                widgets.HTML(TABLE_CSS),
                self.editor,
                self.diagnostics,
                widgets.HBox(
                    [
                        self.engine_picker,
                        self.strategy_picker,
                        self.run_button,
                        self.cancel_button,
                        self.progress,
                        self.progress_text,
                    ],
                    layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
                ),
                self.status,
                self.results,
                self.tabs,
            ],
            layout=full_width(),
        )
        self.add_class("cepkit-workbench")
        self.add_class("cepkit-spark-workbench")
        self.editor.observe(self._on_text, "value")
        self.run_button.on_click(lambda _: self.run(wait=False))
        self.cancel_button.on_click(lambda _: self.cancel())
        self.fields_picker.observe(lambda _: self._fill_grid(), "value")
        self.grid.observe(self._on_grid_pick, "selected")
        self.tabs.observe(lambda _: self._explain_if_shown(), "selected_index")
        self._on_text()

    # ------------------------------------------------------------------ public
    @property
    def fields(self) -> list:
        return list(self.fields_picker.value)

    @fields.setter
    def fields(self, names: Iterable[str]) -> None:
        self.fields_picker.value = known_fields(names, self.attributes)

    def run(self, wait: bool = True):
        """Run the editor's query on Spark. With ``wait`` (from code) returns when done: the match count, or
        None if it failed or was cancelled; without (the Run button) returns the running ``Job`` at once."""
        import cepkit.spark

        if self.query is None or (self.job is not None and not self.job.done):
            return None
        strategy = self.strategy_picker.value
        query = self.query if strategy == AS_WRITTEN else self.query.with_strategy(strategy)
        engine = self.engine_picker.value
        self.job = cepkit.spark.Job(lambda: self._compute(query, engine), self.spark, progress=self._advance)
        self._running(True)
        self.job.start()
        if not wait:
            threading.Thread(target=self._finish, args=(self.job, query), daemon=True).start()
            return self.job
        return self._finish(self.job, query)

    def cancel(self) -> None:
        """Cancel the running job's Spark jobs."""
        if self.job is not None and not self.job.done:
            self.status.value = "<small>cancelling the Spark jobs…</small>"
            self.job.cancel()

    def page_rows(self, ids) -> pd.DataFrame:
        """The grid's rows of the matches ``ids`` (match_ids), fetched from Spark with their events."""
        from pyspark.sql import functions as F

        ids = [int(i) for i in ids]
        held = self._page
        if held is not None and held[0] is self.result and held[1] in ((self.fields, ids), (self.fields, None)):
            # the page just fetched (the grid asks for its columns, then for its rows), or every row (searched)
            return held[2] if held[1][1] is not None else held[2].iloc[ids].reset_index(drop=True)
        rows = self.result.where(F.col("match_id").isin(ids)).toPandas().set_index("match_id", drop=False)
        frame = self._rows_frame(rows.loc[ids].reset_index(drop=True))
        self._page = (self.result, (self.fields, ids), frame)
        return frame

    def _every_row(self) -> pd.DataFrame:
        """Every row of the grid (its search, sort and CSV): the whole result fetched, kept for its pages."""
        frame = self._rows_frame(self.result.toPandas().sort_values("match_id", ignore_index=True))
        self._page = (self.result, (self.fields, None), frame)
        return frame

    def match_events(self, match_id: int) -> tuple:
        """(the events of match ``match_id``'s time span, positions from 0, as a pandas DataFrame; the match's
        positions among them; the position the first of them has in the whole stream). Beyond
        ``EXPLAIN_SPAN`` events, only the match's own events are fetched."""
        from pyspark.sql import functions as F

        row = self.result.where(F.col("match_id") == int(match_id)).select("positions").first()
        positions = [int(p) for p in row["positions"]]
        low, high = min(positions), max(positions)
        position = F.col("position")
        if high - low < EXPLAIN_SPAN:
            picked = self.events.where(position.between(low, high))
        else:
            picked = self.events.where(position.isin(positions))
        frame = _by_position(picked.toPandas())
        local = {int(p): i for i, p in enumerate(frame["position"])}
        return frame.drop(columns="position"), tuple(local[p] for p in positions), low

    def __repr__(self):
        return f"SparkWorkbench(query={self.editor.value!r}, matches={self.count if self.result is not None else None})"

    # ------------------------------------------------------------------ running
    def _running(self, running: bool) -> None:
        self.run_button.disabled = running or self.query is None
        self.cancel_button.layout.display = None if running else "none"
        self.progress.layout.visibility = "visible" if running else "hidden"
        self.progress_text.layout.display = None if running else "none"
        if running:
            self.progress.value, self.progress.max = 0, 1
            self.progress_text.value = ""
            self.status.value = "<small>running on Spark…</small>"

    def _advance(self, progress) -> None:
        self.progress.max, self.progress.value = max(progress.total, 1), progress.done
        self.progress_text.value = f"<small>{html.escape(progress.text)}</small>"

    def _compute(self, query, engine: str) -> dict:
        """In the job's thread: number the events (first run), match, count, and fetch the timeline's sample."""
        import cepkit.spark
        from pyspark.sql import functions as F

        if self.events is None:
            self.events = cepkit.spark.with_positions(self.df)
        found = cepkit.spark.match(query, self.events, engine, **self.options)
        count = found.count()
        ids = [int(k) for k in np.unique(np.linspace(0, count - 1, min(self.sample, count)).round())] if count else []
        sample = None
        if ids:  # (sorted here: a Spark orderBy is a sort job more, and a sample is ~300 rows)
            sample = found.where(F.col("match_id").isin(ids)).toPandas().sort_values("match_id", ignore_index=True)
        return {"found": found, "count": count, "sample": sample}

    def _finish(self, job, query):
        import cepkit.spark

        try:
            result = job.wait()
        except cepkit.spark.Cancelled:
            self._running(False)
            self.status.value = f"<b>cancelled</b> after {job.seconds:.1f} s: the Spark jobs were interrupted" + (
                " · the grid still shows the previous run" if self.result is not None else ""
            )
            return None
        except Exception as err:  # noqa: BLE001 -- shown to the user, as a local run's errors are
            self._running(False)
            self.status.value = f"<b>failed</b> after {job.seconds:.1f} s on Spark:" + error_html(err)
            return None
        self.result, self.count, self.last_query, self.seconds = result["found"], result["count"], query, job.seconds
        self.selected = None
        self.status.value = "<small>fetching the first page and the timeline's sample from Spark…</small>"
        self._fill_grid()
        self._draw_sample(result["sample"])
        self.results.layout.display = None if self.count else "none"
        self.explain_view = None
        self.explain_box.children = [
            widgets.HTML(
                "<small>Pick a match in the grid or on the timeline: its events "
                "are fetched from Spark and explained.</small>"
            )
        ]
        self._running(False)
        self.status.value = (
            f"<b>{plural(self.count, 'match', 'matches')}</b> on Spark "
            f"({html.escape(_session_kind(self.spark))} session, engine "
            f"<code>{html.escape(self.engine_picker.value)}</code>) in {job.seconds:.1f} s · "
            "the grid pages through them, fetching each page from Spark"
        )
        return self.count

    # ------------------------------------------------------------------ views
    def _fill_grid(self) -> None:
        """The grid over the last run's result: pages fetched as shown; search, sort and CSV read it whole."""
        if self.result is None:
            return
        size = self.grid.page_size
        start = 0 if self.selected is None else self.selected // size * size  # the page shown first
        first = self.page_rows(range(start, min(start + size, self.count)))  # (its columns are the grid's)
        data = TableData(self.count, self._every_row, self.page_rows, columns=[str(c) for c in first.columns])
        self.grid.set_data(data, selected=self.selected)

    def _rows_frame(self, rows: pd.DataFrame) -> pd.DataFrame:
        """The grid's rows: match, start, end, positions, each variable's position, type, ts and chosen fields
        (the bound events fetched from Spark by position)."""
        from pyspark.sql import functions as F

        if not len(rows):
            return pd.DataFrame({"match": []})
        variables = [c for c in rows.columns if c not in ("match_id", "positions", *self.last_query.partition_by)]
        wanted = sorted({int(p) for ps in rows["positions"] for p in ps})
        events = (
            self.events.where(F.col("position").isin(wanted))
            .select("position", "type", "ts", *self.fields)
            .toPandas()
            .set_index("position")
        )
        out = pd.DataFrame({"match": rows["match_id"].astype(int)})
        out["start"] = [self._time(events.at[int(min(ps)), "ts"]) for ps in rows["positions"]]
        out["end"] = [self._time(events.at[int(max(ps)), "ts"]) for ps in rows["positions"]]
        out["positions"] = [", ".join(str(int(p)) for p in ps) for ps in rows["positions"]]
        for v in variables:
            bound = [binding(b) for b in rows[v]]
            bound = [() if b is None else (b if isinstance(b, tuple) else (b,)) for b in bound]
            out[v] = [", ".join(map(str, b)) for b in bound]
            out[f"{v}.type"] = [", ".join(dict.fromkeys(str(events.at[p, "type"]) for p in b)) for b in bound]
            for name in self.fields:
                out[f"{v}.{name}"] = [", ".join(format_value(events.at[p, name]) for p in b) for b in bound]
        for key in self.last_query.partition_by:
            out[key] = rows[key].map(format_value)
        return out

    def _time(self, value) -> str:
        if isinstance(value, pd.Timestamp):
            stamp = value.tz_localize("UTC") if value.tzinfo is None else value
            return stamp.tz_convert(self.tz or "UTC").strftime("%Y-%m-%d %H:%M:%S %Z")
        return format_value(value)

    def _draw_sample(self, sample: Optional[pd.DataFrame]) -> None:
        """The timeline of a sample of matches spread evenly over the result (their events only)."""
        from pyspark.sql import functions as F

        if sample is None or not len(sample):
            self.timeline, self._sample_ids = None, []
            self.timeline_box.children = [widgets.HTML("<small>no match to draw</small>")]
            return
        wanted = sorted({int(p) for ps in sample["positions"] for p in ps})
        frame = _by_position(self.events.where(F.col("position").isin(wanted)).toPandas())
        local = {int(p): i for i, p in enumerate(frame["position"])}
        variables = variables_of(sample.columns, self.last_query)
        matches = []
        for _, row in sample.iterrows():
            bindings = {}
            for v in variables:
                b = binding(row[v])
                if b is not None:
                    bindings[v] = tuple(local[p] for p in b) if isinstance(b, tuple) else local[b]
            matches.append(cepkit.Match.of(bindings, [local[int(p)] for p in row["positions"]]))
        self._sample_ids = [int(k) for k in sample["match_id"]]
        drawn = len(self._sample_ids)
        title = (
            f"a sample of {drawn:,} of {self.count:,} matches, spread evenly over the whole result "
            f"(match_id {self._sample_ids[0]:,} to {self._sample_ids[-1]:,}); only their events are drawn"
            if drawn < self.count
            else f"all {self.count:,} matches (only their events are drawn)"
        )
        self.timeline = MatchTimeline(
            frame.drop(columns="position"),
            matches,
            title=title,
            tz=self.tz,
            max_matches=max(drawn, 1),
            numbering=(self._sample_ids, frame["position"].astype(int).tolist()),
        )
        self.timeline.add_class("cepkit-spark-timeline")
        self.timeline.observe(self._on_timeline_pick, "selected")
        self.timeline_box.children = [self.timeline]

    # ------------------------------------------------------------------ picking
    def _on_grid_pick(self, change) -> None:
        if change["new"] is not None:
            self.selected = change["new"]

    def _on_timeline_pick(self, change) -> None:
        if change["new"] is not None:
            self.selected = self._sample_ids[change["new"]]

    @traitlets.validate("selected")
    def _check_selected(self, proposal):
        k = proposal["value"]
        if k is not None and not 0 <= k < self.count:
            raise traitlets.TraitError(f"selected must be None or a match_id 0..{self.count - 1}, got {k}")
        return k

    @traitlets.observe("selected")
    def _on_selected(self, change) -> None:
        k = change["new"]
        if self.grid.selected != k:
            self.grid.show(k)
        if self.timeline is not None:
            drawn = self._sample_ids.index(k) if k in self._sample_ids else None
            if self.timeline.selected != drawn:
                self.timeline.selected = drawn
        self.explain_view = None
        self._explain_if_shown()

    def _explain_if_shown(self) -> None:
        if self.tabs.selected_index != 1 or self.selected is None or self.explain_view is not None:
            return
        frame, candidate, first = self.match_events(self.selected)
        strategy = self.strategy_picker.value
        self.explain_view = ExplainView(
            self.last_query.text,
            frame,
            candidate,
            strategy=None if strategy == AS_WRITTEN else strategy,
            hierarchy=self.hierarchy,
        )
        note = (
            f"<small>match {self.selected:,}: its {plural(len(frame), 'event')} fetched from Spark "
            f"(positions {first:,} onwards, shown from 0)</small>"
        )
        self.explain_box.children = [widgets.HTML(note), self.explain_view]

    # ------------------------------------------------------------------ editor
    def _on_text(self, change=None) -> None:
        text = self.editor.value
        checked = check_text(text, self.schema, self.hierarchy, of="the DataFrame's")
        self.query, self.diagnostics.value = checked.query, checked.html
        self.editor.show(text, checked.errors, warnings=checked.warnings)
        self.run_button.disabled = self.query is None or (self.job is not None and not self.job.done)


def _types_and_columns(df):
    """A Stream of one event per type of ``df``, each column's first non-null value for that type: what the
    editor checks a query's attributes against (one Spark job)."""
    from pyspark.sql import functions as F

    others = [c for c in df.columns if c != "type"]
    firsts = df.groupBy("type").agg(*[F.first(F.col(f"`{c}`"), ignorenulls=True).alias(c) for c in others])
    return cepkit.runtime.Stream.from_any(firsts.orderBy("type").toPandas())


def _by_position(frame: pd.DataFrame) -> pd.DataFrame:
    """Events fetched from Spark in position order (sorted here: few rows, and a Spark sort is jobs more)."""
    return frame.sort_values("position", ignore_index=True)


def _session_kind(spark) -> str:
    import cepkit.spark

    return "Spark Connect" if cepkit.spark.jobs.is_connect(spark) else "classic"
