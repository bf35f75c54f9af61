"""What every cepkit figure shares: one widget draws it (``PlotlyView``), it fills its output's width, its
modebar has no cloud buttons, numbers in hovers are rounded, counts have the right plural.

Why a widget of our own: plotly's ``FigureWidget`` (an anywidget since plotly 6) syncs its 5 MB ES module per
figure and, in JupyterLab 4.6, often rendered empty (the data sent while that module loads is lost); JupyterLab's
plotly mime renderer (used through an ``ipywidgets.Output``) replaces a figure by a PNG on re-render and its
default sizing drew figures 0 px high. ``PlotlyView`` has the figure as synced state (a view created at any
time, after a page reload too, draws what the kernel holds), plotly.js is sent once per kernel and imported
once per page (``PlotlyJS``), and the view sizes the plot itself: the layout's height, the container's width.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass
from numbers import Number
from pathlib import Path
from typing import Any, Callable, Optional

import anywidget
import ipywidgets as widgets
import plotly.graph_objects as go
from plotly.io.json import to_json_plotly
import traitlets

# plotly's modebar without the cloud ("Share", "Edit in Chart Studio") and the lasso/box selections, which
# cepkit's views do not use.
FIGURE_CONFIG = {
    "displaylogo": False,
    "modeBarButtonsToRemove": ["sendDataToCloud", "editInChartStudio", "lasso2d", "select2d"],
}
DEFAULT_HEIGHT = 450  # px, for a figure whose layout names no height (plotly's own default)
NARROW = 600  # px: a plot narrower than this has its legend above it, not beside it

# Tables in cepkit's HTML widgets (counts, capabilities, a match's events): one rule between rows, padded cells,
# numbers right-aligned.
TABLE_CSS = """<style>
table.cepkit-table { border-collapse: collapse; margin: 4px 0; font-size: 13px; }
table.cepkit-table th, table.cepkit-table td { border: 1px solid #d0d7de; padding: 3px 10px; text-align: left;
  vertical-align: top; }
table.cepkit-table th { background: #f6f8fa; }
table.cepkit-table td.num, table.cepkit-table th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.cepkit-table td.mark { text-align: center; }
table.cepkit-table td.text { min-width: 18em; }  /* prose keeps a readable width; a narrow output scrolls */
div.cepkit-scroll { overflow-x: auto; }
.widget-html:has(div.cepkit-scroll), .widget-html-content:has(div.cepkit-scroll) { min-width: 0; max-width: 100%; }
</style>"""


class PlotlyJS(anywidget.AnyWidget):
    """plotly.js's source as a widget model, created once per kernel (``plotly_js()``) and never displayed.

    Every ``PlotlyView`` refers to it, so the 1.2 MB library crosses the websocket once per kernel (as a binary
    buffer) instead of once per figure; the page imports it once (cached on ``window`` by version), also when
    two notebooks are open."""

    _esm = "export default {};"
    version = traitlets.Unicode().tag(sync=True)
    source = traitlets.Bytes().tag(sync=True)

    def __repr__(self):
        return f"PlotlyJS({self.version})"


_PLOTLY_JS: Optional[PlotlyJS] = None


# plotly.js's "basic" bundle (traces scatter, bar and pie; npm plotly.js-basic-dist-min, MIT), the version
# plotly.py ships whole: a quarter of the size, imported 7x faster (0.5 s against 3.5 s at load 7,
# bench/plotly_import.py), so a model made meanwhile keeps within anywidget's 2-s limit for binding it.
# `scripts/update-plotly-js.sh` replaces it.
PLOTLY_BUNDLE = Path(__file__).parent / "plotly-basic.min.js"
BUNDLED_TRACES = frozenset({"scatter", "bar", "pie"})


def bundle_version(source: bytes) -> str:
    """The version in a plotly.js bundle's header.

    >>> import plotly
    >>> bundle_version(PLOTLY_BUNDLE.read_bytes()) == plotly.offline.get_plotlyjs_version()
    True
    """
    header = source[:200].decode("utf-8", "replace")
    return header.split(" v", 1)[-1].split()[0]


def plotly_js() -> PlotlyJS:
    """The kernel's ``PlotlyJS`` model (made on first use, again if it was closed)."""
    global _PLOTLY_JS
    if _PLOTLY_JS is None or _PLOTLY_JS.comm is None:
        source = PLOTLY_BUNDLE.read_bytes()
        _PLOTLY_JS = PlotlyJS(version="basic-" + bundle_version(source), source=source)
    return _PLOTLY_JS


@dataclass(frozen=True)
class Click:
    """A point clicked in a ``PlotlyView``: its trace's index and name, its index in that trace, its customdata."""

    curve: int
    index: int
    customdata: Any
    trace: str = ""


class PlotlyView(anywidget.AnyWidget):
    """A plotly figure in the notebook: ``show(figure)`` draws it (whole; the page's ``Plotly.react`` diffs it),
    ``on_click(callback)`` hears clicks on its points.

    The plot is exactly the layout's height (``DEFAULT_HEIGHT`` when it names none) and its container's width
    (at least ``min_width``), redrawn when that width changes (a tab opened, the window or sidebar resized); it
    is drawn when first shown with a width, so a figure inside a hidden tab is drawn when the tab opens. Under
    ``NARROW`` px the legend moves above the plot, which keeps the width for the data, and the title above the
    figure as page text that wraps.

    >>> view = PlotlyView(go.Figure(go.Scatter(x=[1, 2], y=[3, 4], customdata=[7, 8]), {"height": 300}))
    >>> view, view.figure["layout"]["height"], view.config == FIGURE_CONFIG
    (PlotlyView(traces=1, height=300), 300, True)
    >>> view.on_click(lambda click: print(click))
    >>> view._handle_custom_msg({"event": "click", "points": [{"curve": 0, "index": 1, "customdata": 8}]}, [])
    Click(curve=0, index=1, customdata=8, trace='')
    """

    figure = traitlets.Dict(help="the plotly JSON of the figure on show: data and layout")
    # what the page gets of ``figure``: its JSON gzipped, one binary buffer (hover texts repeat: a year's
    # timeline is 541 KB of JSON and ~60 KB sent); the page inflates it with DecompressionStream
    packed = traitlets.Bytes(b"", help="the figure's JSON, gzipped, as sent to the page").tag(sync=True)
    config = traitlets.Dict(FIGURE_CONFIG).tag(sync=True)
    min_width = traitlets.Int(
        0,
        help="px; in a narrower output the plot keeps this width and scrolls sideways "
        "(a drawing whose labels have a fixed size)",
    ).tag(sync=True)
    plotly = traitlets.Instance(PlotlyJS).tag(sync=True, **widgets.widget_serialization)

    _esm = r"""
    const CACHE = "__cepkitPlotly";          // plotly.js version -> Promise of the Plotly object, one per page

    async function loaderOf(model) {
      const id = model.get("plotly").slice("IPY_MODEL_".length);
      for (let attempt = 0; ; attempt++) {   // after a page reload, models are restored in no fixed order
        try { return await model.widget_manager.get_model(id); }
        catch (error) { if (attempt > 50) throw error; await new Promise((r) => setTimeout(r, 100)); }
      }
    }

    async function plotlyOf(model) {
      const loader = await loaderOf(model);
      const cache = (window[CACHE] = window[CACHE] || {});
      const version = loader.get("version");
      if (!cache[version]) {                 // the bundle is UMD: give it a module object to fill
        const url = URL.createObjectURL(new Blob(
          ["const module = {exports: {}};\n", loader.get("source"), "\nexport default module.exports;\n"],
          {type: "text/javascript"}));
        cache[version] = import(url).then((m) => m.default).finally(() => URL.revokeObjectURL(url));
        cache[version].catch(() => delete cache[version]);
      }
      return cache[version];
    }

    // A layout's title as an object (plotly also takes a bare string), or null when it has no text.
    function titleOf(layout) {
      const title = typeof layout.title === "string" ? { text: layout.title } : layout.title;
      return title && title.text ? title : null;
    }

    // Under NARROW px the legend goes in a row above the plot and the title above the figure, as page text
    // that wraps (plotly draws a title on one line per <br>, cut at the figure's edge).
    function narrowed(layout, title) {
      const narrow = { legend: { ...layout.legend, orientation: "h", traceorder: "normal",  // "grouped" stacks
                                 x: 0, xanchor: "left", y: 1.02, yanchor: "bottom" } };
      if (title) {
        narrow.title = { ...title, text: "" };
        narrow.margin = { ...layout.margin, t: 40 };
      }
      return narrow;
    }

    // ``title``'s lines as page text (none: hidden): markup stripped (parsed inert, never run), <sup> smaller.
    function showTitle(header, title) {
      header.replaceChildren();
      header.style.display = title ? "block" : "none";
      for (const part of title ? title.text.split(/<br\s*\/?>/i) : []) {
        const line = document.createElement("div");
        line.textContent = new DOMParser().parseFromString(part, "text/html").body.textContent;
        line.style.fontSize = /^\s*<sup>/i.test(part) ? "11px" : `${(title.font && title.font.size) || 14}px`;
        header.appendChild(line);
      }
    }

    // The modebar saves the figure as drawn: PNG (plotly's camera) and SVG (a button of cepkit's), named
    // after its title; in the page, with no kernel round trip (docs/decisions.md, "Figure export").
    function withExport(Plotly, config, layout) {
      const title = titleOf(layout);
      const filename = ((title && new DOMParser().parseFromString(title.text.split(/<br/i)[0], "text/html")
        .body.textContent) || "cepkit-figure").trim().replace(/[^\w.-]+/g, "-").slice(0, 60) || "cepkit-figure";
      const svg = { name: "cepkit-svg", title: "Download plot as an SVG", icon: Plotly.Icons.disk,
                    click: (gd) => Plotly.downloadImage(gd, { format: "svg", filename }) };
      return { ...config, toImageButtonOptions: { format: "png", filename, ...config.toImageButtonOptions },
               modeBarButtonsToAdd: [...(config.modeBarButtonsToAdd || []), svg] };
    }

    async function render({ model, el }) {
      el.classList.add("cepkit-plotly");
      el.style.minWidth = "0";
      el.style.overflowX = "auto";           // a plot kept at its min_width scrolls inside its output
      const header = document.createElement("div");     // the title, in a narrow output
      header.className = "cepkit-plot-title";
      header.style.cssText = "display: none; padding: 4px 8px 0; color: #2a3f5f; line-height: 1.35;";
      const plot = document.createElement("div");
      plot.style.width = "100%";
      el.append(header, plot);
      let Plotly = null, width = 0, listening = false, closed = false, queue = Promise.resolve();

      let inflated = null, inflatedFrom = null;   // the figure last inflated, and the buffer it came from
      const figureOf = async () => {
        const packed = model.get("packed");
        if (packed !== inflatedFrom) {
          inflatedFrom = packed;
          inflated = !packed || !packed.byteLength ? {} : JSON.parse(await new Response(
            new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"))).text());
        }
        return inflated;
      };

      const draw = async () => {
        if (!Plotly || width <= 0 || closed) return;
        const { data = [], layout = {} } = await figureOf();
        const height = layout.height || __DEFAULT_HEIGHT__, drawn = Math.max(width, model.get("min_width"));
        const title = drawn < __NARROW__ ? titleOf(layout) : null;
        const narrow = drawn < __NARROW__ ? narrowed(layout, title) : {};
        showTitle(header, title);
        plot.style.height = `${height}px`;
        plot.style.width = `${drawn}px`;
        await Plotly.react(plot, data, { ...layout, ...narrow, width: drawn, height, autosize: false },
                           withExport(Plotly, model.get("config"), layout));
        plot.dataset.drawnAt = String(Date.now());   // when the page last drew it (the browser tests read it)
        if (!listening) {
          listening = true;
          plot.on("plotly_click", (event) => model.send({ event: "click", points: event.points.map((p) => ({
            curve: p.curveNumber, index: p.pointIndex ?? p.pointNumber, customdata: p.customdata ?? null,
            trace: (p.data && p.data.name) || "" })) }));
        }
      };
      const redraw = () => { queue = queue.then(draw).catch((error) => console.error("cepkit figure:", error)); };

      const observer = new ResizeObserver((entries) => {
        const seen = Math.floor(entries[0].contentRect.width);
        if (seen > 0 && seen !== width) { width = seen; redraw(); }
      });
      observer.observe(el);
      model.on("change:packed", redraw);
      model.on("change:config", redraw);
      model.on("change:min_width", redraw);
      Plotly = await plotlyOf(model);
      redraw();
      return () => { closed = true; observer.disconnect(); if (Plotly) Plotly.purge(plot); };
    }
    export default { render };
    """.replace("__DEFAULT_HEIGHT__", str(DEFAULT_HEIGHT)).replace("__NARROW__", str(NARROW))

    def __init__(self, figure=None, **kwargs):
        self._shown: Optional[tuple] = None  # (the figure on show, its JSON text): packed without a second dump
        super().__init__(plotly=plotly_js(), layout=full_width(), **kwargs)
        self._click_callbacks = widgets.CallbackDispatcher()
        self.on_msg(self._on_message)
        if figure is not None:
            self.show(figure)

    def show(self, figure) -> None:
        """Draw ``figure`` (a ``go.Figure`` or its plotly JSON dict) in place of the one on show."""
        text = figure.to_json() if isinstance(figure, go.Figure) else to_json_plotly(figure)
        figure = json.loads(text)
        missing = {trace.get("type", "scatter") for trace in figure.get("data", [])} - BUNDLED_TRACES
        if missing:  # the page would draw nothing and say nothing
            raise ValueError(
                f"trace type {', '.join(sorted(missing))} is not in cepkit's plotly.js bundle "
                f"(it has {', '.join(sorted(BUNDLED_TRACES))})"
            )
        self._shown = (figure, text)
        self.figure = figure

    @traitlets.observe("figure")
    def _pack(self, change) -> None:
        shown = self._shown
        text = shown[1] if shown is not None and shown[0] is change["new"] else to_json_plotly(change["new"])
        self.packed = gzip.compress(text.encode(), compresslevel=6, mtime=0)

    def on_click(self, callback: Callable[[Click], None], remove: bool = False) -> None:
        """Call ``callback(Click)`` for each point clicked (``remove=True`` stops calling it)."""
        self._click_callbacks.register_callback(callback, remove=remove)

    def _on_message(self, _, content, buffers) -> None:
        if isinstance(content, dict) and content.get("event") == "click":
            for point in content.get("points", []):
                self._click_callbacks(
                    Click(
                        int(point["curve"]), int(point["index"]), point.get("customdata"), str(point.get("trace") or "")
                    )
                )

    def __repr__(self):
        layout = self.figure.get("layout", {})
        return f"PlotlyView(traces={len(self.figure.get('data', []))}, height={layout.get('height', DEFAULT_HEIGHT)})"


def full_width() -> widgets.Layout:
    """The ipywidgets layout of a view that takes its output's whole width: no margin at the sides (a widget's
    2 px ones, ipywidgets' ``--jp-widgets-margin``, made a 100%-wide child 4 px wider than its box, which then
    scrolled sideways), above and below the widgets' own."""
    return widgets.Layout(width="100%", margin="var(--jp-widgets-margin) 0")


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
