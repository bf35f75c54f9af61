"""A Workbench's state out of the notebook: ``report_html`` (a standalone page: the query, the run, every
result row up to a stated limit, the timeline, the automaton and the funnel, plotly.js inlined so it opens
offline), ``save_figures`` / ``save_figure`` (those figures as SVG, PNG or PDF files, for slides) and
``code_of`` (the Python that reproduces the current query and options with ``cepkit.match``).

Figure files are written by kaleido (plotly's image export), which drives an installed Chrome or Chromium
(Debian's ``chromium`` here, as the browser tests use); in the notebook each figure's modebar saves PNG and
SVG from the page itself, with neither (docs/decisions.md, "Figure export")."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import plotly.io as pio

import cepkit

from .automaton_view import automaton_drawing, automaton_figure
from .figures import FIGURE_CONFIG, PLOTLY_BUNDLE
from .funnel_view import funnel_figure

if TYPE_CHECKING:
    from .workbench import Workbench

REPORT_ROWS = 5000  # result rows written into a report; beyond it the report says how many it left out
IMAGE_FORMATS = ("svg", "png", "pdf")
IMAGE_WIDTH = 1200  # px, for a figure whose layout names no width (a slide's)


def code_of(workbench: "Workbench") -> str:
    """The Python that runs the editor's query with the picked engine and strategy and the workbench's
    options (``type=``/``ts=`` included) over its events. The code names the events as the Workbench's
    ``name`` says (``"events"`` unless ``Workbench(df, name="df")``) and does not hold them: a comment says
    what the name stands for; a recipe's events are read from the recipe.

    >>> from cepkit.widgets import Workbench
    >>> print(code_of(Workbench([{"type": "A"}, {"type": "B"}], query="A a ; B b", engine="automaton")))
    import cepkit
    <BLANKLINE>
    # events: the events given to the Workbench (Workbench(..., name="df") writes your variable's name here)
    QUERY = '''A a ; B b'''
    matches = cepkit.match(QUERY, events, engine='automaton')
    matches.to_pandas()
    """
    text = workbench.editor.value
    quoted = f"'''{text}'''" if "'''" not in text and not text.endswith("'") else repr(text)
    name = workbench.name
    if workbench.recipe is not None:
        head = [f"{name} = cepkit.recipes.get({workbench.recipe!r}).events()"]
    elif name == "events":
        head = [
            '# events: the events given to the Workbench (Workbench(..., name="df") writes your variable\'s name here)'
        ]
    else:
        head = []
    columns = [f"{k}={v!r}" for k, v in workbench.columns.items()]
    if workbench.sql_notation:  # MATCH_RECOGNIZE: the events as a table (docs/language.md §13)
        return "\n".join(["import cepkit", "", *head, f"QUERY = {quoted}", f"rows = cepkit.sql(QUERY, {name})", "rows"])
    arguments = [f"engine={workbench.engine_picker.value!r}"]
    strategy = workbench.strategy_picker.value
    if strategy in cepkit.lang.ast.STRATEGIES:
        arguments.append(f"strategy={strategy!r}")
    if workbench.hierarchy is not None:
        arguments.append(f"hierarchy=cepkit.{workbench.hierarchy!r}")
    arguments += columns + [f"{k}={v!r}" for k, v in workbench.options.items()]
    return "\n".join(
        [
            "import cepkit",
            "",
            *head,
            f"QUERY = {quoted}",
            f"matches = cepkit.match(QUERY, {name}, {', '.join(arguments)})",
            "matches.to_pandas()",
        ]
    )


def figures_of(workbench: "Workbench") -> tuple:
    """The last run's figures, ``[(name, go.Figure)]`` (the timeline, the automaton, the funnel), and
    ``[(name, why)]`` for those the query has none of (the automaton of a query outside CEL, the funnel of
    a query that is not a sequence of steps). Nothing before a run."""
    if workbench.last_run is None:
        return [], []
    figures, missing = [("Timeline", workbench.timeline.figure)], []
    if workbench.sql_notation and getattr(workbench.last_run, "rows", None) is not None:
        return figures, missing  # MATCH_RECOGNIZE: no automaton, no funnel of cepkit's language
    try:
        automaton = cepkit.automaton(workbench.last_query, workbench.hierarchy)
        figures.append(("Automaton", automaton_figure(automaton, automaton_drawing(automaton))))
    except cepkit.QueryError as err:
        missing.append(("Automaton", str(err)))
    engine = workbench.engine_picker.value
    try:
        try:
            funnel = cepkit.funnel(
                workbench.last_query, workbench.stream, engine, workbench.hierarchy, **workbench.options
            )
        except cepkit.QueryError as err:
            if not err.engines:  # not a sequence of steps
                raise
            funnel = cepkit.funnel(
                workbench.last_query, workbench.stream, "auto", workbench.hierarchy, **workbench.options
            )
        figures.append(("Funnel", funnel_figure(funnel)))
    except cepkit.QueryError as err:
        missing.append(("Funnel", str(err)))
    return figures, missing


def save_figure(figure, path, width: Optional[int] = None, height: Optional[int] = None, scale: float = 1) -> Path:
    """Write ``figure`` (a ``go.Figure``, its plotly JSON, or a ``PlotlyView``) to ``path`` as SVG, PNG or PDF
    (by the suffix) with kaleido; ``width`` defaults to the layout's, else ``IMAGE_WIDTH``."""
    return save_figures([figure], [path], width, height, scale)[0]


def save_figures(figures, paths, width: Optional[int] = None, height: Optional[int] = None, scale: float = 1) -> list:
    """``save_figure`` for several figures at once (one browser start for all)."""
    paths = [Path(p) for p in paths]
    for path in paths:
        if path.suffix.lstrip(".").lower() not in IMAGE_FORMATS:
            raise ValueError(
                f"cannot write a figure as {path.name!r}: name a file ending in "
                f"{', '.join('.' + f for f in IMAGE_FORMATS)}"
            )
    figures = [getattr(f, "figure", f) for f in figures]  # a PlotlyView's figure
    try:
        import kaleido  # noqa: F401  (plotly.io's image export needs it)
    except ImportError:
        raise ImportError(
            "writing figure files needs kaleido (pip install kaleido), which drives an installed "
            "Chrome or Chromium (apt-get install chromium); in the notebook each figure's modebar "
            "saves PNG and SVG without it"
        ) from None
    widths = [width or _layout(f).get("width") or IMAGE_WIDTH for f in figures]
    heights = [height or _layout(f).get("height") for f in figures]
    try:
        pio.write_images(figures, paths, width=widths, height=heights, scale=scale, validate=False)
    except Exception as err:
        if "chrome" in type(err).__name__.lower():  # kaleido found no browser to draw with
            raise RuntimeError(
                f"kaleido found no Chrome or Chromium to draw with ({err}); install one "
                "(apt-get install chromium) or set BROWSER_PATH"
            ) from err
        raise
    return paths


def save_workbench_figures(workbench: "Workbench", directory, format: str = "svg", **kwargs) -> list:
    """Each figure of the workbench's last run (``figures_of``) as ``directory/<name>.<format>``; the paths."""
    if workbench.last_run is None:
        raise ValueError("nothing to save before a run: press Run (or call run()) first")
    figures, _ = figures_of(workbench)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{re.sub(r'[^a-z0-9]+', '-', name.lower())}.{format}" for name, _ in figures]
    return save_figures([f for _, f in figures], paths, **kwargs)


def _layout(figure) -> dict:
    layout = figure["layout"] if isinstance(figure, dict) else figure.layout.to_plotly_json()
    return layout or {}


def report_html(workbench: "Workbench", title: str = "cepkit report") -> str:
    """A standalone HTML page of the workbench's last run (the editor's query alone before a run)."""
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Query</h2>",
        f"<pre class='query'>{html.escape(workbench.last_text or workbench.editor.value)}</pre>",
    ]
    figures, missing = figures_of(workbench)
    if workbench.last_run is None:
        parts.append("<p>Not run yet.</p>")
    else:
        run = workbench.last_run
        parts.append(
            f"<p class='status'>{len(run.matches):,} matches by engine {html.escape(run.engine)} over "
            f"{len(workbench.stream):,} events.</p>"
        )
        rows = workbench.results_frame()
        shown = rows.iloc[:REPORT_ROWS]
        note = (
            ""
            if len(rows) <= REPORT_ROWS
            else f"<p class='note'>The first {REPORT_ROWS:,} of {len(rows):,} matches (the rest are left out).</p>"
        )
        parts += ["<h2>Matches</h2>", note, shown.to_html(index=False, classes="results", border=0)]
        sql_rows = getattr(run, "rows", None)  # a MATCH_RECOGNIZE run: its output rows
        if sql_rows is not None:
            cut = (
                ""
                if len(sql_rows) <= REPORT_ROWS
                else f"<p class='note'>The first {REPORT_ROWS:,} of {len(sql_rows):,} rows (the rest are left out).</p>"
            )
            parts += [
                "<h2>SQL rows</h2>",
                cut,
                sql_rows.iloc[:REPORT_ROWS].to_html(index=False, classes="results", border=0),
            ]
    for name, figure in figures:
        parts += [
            f"<h2>{name}</h2>",
            pio.to_html(figure, full_html=False, include_plotlyjs=False, config=dict(FIGURE_CONFIG), validate=False),
        ]  # a copy: to_html
        # adds "responsive"
    for name, why in missing:
        parts.append(f"<h2>{name}</h2><pre class='note'>{html.escape(why)}</pre>")
    style = (
        "body{font-family:sans-serif;margin:1.5em;max-width:1400px} pre.query{background:#f4f4f4;padding:.6em;"
        "white-space:pre-wrap} table.results{border-collapse:collapse;font-size:13px} table.results td,"
        "table.results th{border-bottom:1px solid #ddd;padding:2px 8px;text-align:left} .note{color:#555}"
    )
    script = f"<script>{PLOTLY_BUNDLE.read_text()}</script>" if figures else ""
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style>{script}</head><body>{''.join(parts)}</body></html>"
    )
