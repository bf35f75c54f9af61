"""A Workbench's state out of the notebook: ``report_html`` (a standalone page: the query, the run, every
result row up to a stated limit, the timeline and the automaton, plotly.js inlined so it opens offline) and
``code_of`` (the Python that reproduces the current query and options with ``cepkit.match``)."""
from __future__ import annotations

import html
from typing import TYPE_CHECKING

import plotly.io as pio

import cepkit

from .automaton_view import automaton_drawing, automaton_figure
from .figures import FIGURE_CONFIG, PLOTLY_BUNDLE

if TYPE_CHECKING:
    from .workbench import Workbench

REPORT_ROWS = 5000          # result rows written into a report; beyond it the report says how many it left out


def code_of(workbench: "Workbench") -> str:
    """The Python that runs the editor's query with the picked engine and strategy and the workbench's
    options over ``events`` (the DataFrame the Workbench was given; the code names it, it does not hold it).

    >>> from cepkit.widgets import Workbench
    >>> print(code_of(Workbench([{"type": "A"}, {"type": "B"}], query="A a ; B b", engine="automaton")))
    import cepkit
    <BLANKLINE>
    QUERY = '''A a ; B b'''
    matches = cepkit.match(QUERY, events, engine='automaton')
    matches.to_pandas()
    """
    text = workbench.editor.value
    quoted = f"'''{text}'''" if "'''" not in text and not text.endswith("'") else repr(text)
    arguments = [f"engine={workbench.engine_picker.value!r}"]
    strategy = workbench.strategy_picker.value
    if strategy in cepkit.lang.ast.STRATEGIES:
        arguments.append(f"strategy={strategy!r}")
    if workbench.hierarchy is not None:
        arguments.append(f"hierarchy=cepkit.{workbench.hierarchy!r}")
    arguments += [f"{k}={v!r}" for k, v in workbench.options.items()]
    return "\n".join(["import cepkit", "", f"QUERY = {quoted}",
                      f"matches = cepkit.match(QUERY, events, {', '.join(arguments)})", "matches.to_pandas()"])


def report_html(workbench: "Workbench", title: str = "cepkit report") -> str:
    """A standalone HTML page of the workbench's last run (the editor's query alone before a run)."""
    parts = [f"<h1>{html.escape(title)}</h1>", "<h2>Query</h2>",
             f"<pre class='query'>{html.escape(workbench.last_text or workbench.editor.value)}</pre>"]
    figures = []
    if workbench.last_run is None:
        parts.append("<p>Not run yet.</p>")
    else:
        run = workbench.last_run
        parts.append(f"<p class='status'>{len(run.matches):,} matches by engine {html.escape(run.engine)} over "
                     f"{len(workbench.stream):,} events.</p>")
        rows = workbench.results_frame()
        shown = rows.iloc[:REPORT_ROWS]
        note = "" if len(rows) <= REPORT_ROWS else \
            f"<p class='note'>The first {REPORT_ROWS:,} of {len(rows):,} matches (the rest are left out).</p>"
        parts += ["<h2>Matches</h2>", note, shown.to_html(index=False, classes="results", border=0)]
        figures.append(("Timeline", workbench.timeline.figure))
        try:
            automaton = cepkit.automaton(workbench.last_query, workbench.hierarchy)
            figures.append(("Automaton", automaton_figure(automaton, automaton_drawing(automaton))))
        except cepkit.QueryError as err:
            parts.append(f"<h2>Automaton</h2><pre class='note'>{html.escape(str(err))}</pre>")
    for name, figure in figures:
        parts += [f"<h2>{name}</h2>", pio.to_html(figure, full_html=False, include_plotlyjs=False,
                                                 config=dict(FIGURE_CONFIG), validate=False)]  # a copy: to_html
                                                                                              # adds "responsive"
    style = ("body{font-family:sans-serif;margin:1.5em;max-width:1400px} pre.query{background:#f4f4f4;padding:.6em;"
             "white-space:pre-wrap} table.results{border-collapse:collapse;font-size:13px} table.results td,"
             "table.results th{border-bottom:1px solid #ddd;padding:2px 8px;text-align:left} .note{color:#555}")
    script = f"<script>{PLOTLY_BUNDLE.read_text()}</script>" if figures else ""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style>{script}</head><body>{''.join(parts)}</body></html>")
