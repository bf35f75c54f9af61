"""What every cepkit figure shares: it fills its output's width, its modebar has no cloud buttons, numbers in
hovers are rounded, counts have the right plural.

A plotly ``FigureWidget`` is drawn at 700 px unless its layout asks for ``autosize`` and its config for
``responsive`` (then plotly.js takes the width of the output area and follows it when the window resizes).
Figures are built once with all their traces (``figure_widget``) and sent in one message: every later
``update`` is a round trip through the kernel, and many of them made a comparison of seven strategies take
12-30 s in the browser for 9 events.
"""
from __future__ import annotations

import math
from numbers import Number

import anywidget
import ipywidgets as widgets
import plotly.graph_objects as go
import traitlets

# plotly's modebar without the cloud ("Share", "Edit in Chart Studio") and the lasso/box selections, which
# cepkit's views do not use.
FIGURE_CONFIG = {"displaylogo": False, "responsive": True,
                 "modeBarButtonsToRemove": ["sendDataToCloud", "editInChartStudio", "lasso2d", "select2d"]}

# Tables in cepkit's HTML widgets (counts, capabilities, a match's events): one rule between rows, padded cells,
# numbers right-aligned.
TABLE_CSS = """<style>
table.cepkit-table { border-collapse: collapse; margin: 4px 0; font-size: 13px; }
table.cepkit-table th, table.cepkit-table td { border: 1px solid #d0d7de; padding: 3px 10px; text-align: left;
  vertical-align: top; }
table.cepkit-table th { background: #f6f8fa; }
table.cepkit-table td.num, table.cepkit-table th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.cepkit-table td.mark { text-align: center; }
</style>"""


def figure_widget(data=(), layout=None) -> go.FigureWidget:
    """A ``FigureWidget`` with every trace and the layout in its first message, sized to its container.

    >>> fig = figure_widget([go.Scatter(x=[1], y=[2])], {"height": 300})
    >>> fig.layout.autosize, fig.layout.width, fig._config["displaylogo"]
    (True, None, False)
    """
    fig = go.FigureWidget(data=list(data), layout={**(layout or {}), "autosize": True})
    fig._config = dict(FIGURE_CONFIG)
    return fig


class FitWidth(anywidget.AnyWidget):
    """An invisible widget that makes the figures beside it take their output's width.

    plotly's ``FigureWidget`` draws its figure before its element is on the page (or inside a hidden tab), finds
    no width there and falls back to 700 px; with ``responsive`` it follows window resizes only. This widget
    watches the box it is in and tells plotly "the window resized" when the box's width changes (first shown,
    tab opened, window or sidebar resized), so every responsive figure refits. Put one in a view's children,
    and call ``refit()`` after putting a new figure there.
    """

    generation = traitlets.Int(0).tag(sync=True)

    def refit(self) -> None:
        self.generation += 1

    _esm = """
    function render({ model, el }) {
      el.style.display = "none";
      let last = -1, observer = null;
      const fire = () => window.dispatchEvent(new Event("resize"));
      // a figure replaced beside this one is drawn a moment later: refit then
      model.on("change:generation", () => [100, 400, 1200].forEach((ms) => setTimeout(fire, ms)));
      const watch = () => {
        const box = el.parentElement;
        if (!box) { requestAnimationFrame(watch); return; }
        observer = new ResizeObserver((entries) => {
          const width = Math.round(entries[0].contentRect.width);
          if (width > 0 && width !== last) { last = width; fire(); }
        });
        observer.observe(box);
      };
      watch();
      return () => observer && observer.disconnect();
    }
    export default { render };
    """

    def __repr__(self):
        return "FitWidth()"


def full_width() -> widgets.Layout:
    """The ipywidgets layout of a view that takes its output's whole width."""
    return widgets.Layout(width="100%")


def plural(n: int, singular: str, plural_form: str = "") -> str:
    """``1 match``, ``2 matches``, ``1,234 events``.

    >>> plural(1, "match", "matches"), plural(0, "match", "matches"), plural(1234, "event")
    ('1 match', '0 matches', '1,234 events')
    """
    return f"{n:,} {singular if n == 1 else (plural_form or singular + 's')}"


def format_value(value) -> str:
    """An attribute value for a hover or a table: floats rounded to 3 decimals, trailing zeros dropped.

    >>> format_value(6.904679999999999), format_value(1012.0), format_value("JFK"), format_value(float("nan"))
    ('6.905', '1012', 'JFK', '–')
    """
    if isinstance(value, bool) or not isinstance(value, Number):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)
