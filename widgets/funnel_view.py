"""``FunnelView``: how far a sequence query got over a stream: candidates per step as funnel bars, and
every partial match (the step each candidate stopped at, its bindings, whether it timed out) in a paged
table (``cepkit.funnel``, ``cepkit.partial_matches``; the definition is ``cepkit.runtime.partial``)."""

from __future__ import annotations

import html

import ipywidgets as widgets
import plotly.graph_objects as go

import cepkit
from cepkit.runtime.partial_matches import progress

from .figures import PlotlyView, full_width, plural
from .paged_table import PagedTable, TableData


def funnel_figure(funnel) -> go.Figure:
    """``cepkit.funnel``'s table as horizontal bars, the first step on top, each with its count and share."""
    labels = [f"{k}. {html.escape(str(t))} {v}" for k, v, t in zip(funnel["step"], funnel["variable"], funnel["type"])]
    counts = funnel["candidates"].tolist()
    texts = [f"{n:,} ({share:.0%})" for n, share in zip(counts, funnel["share"])]
    # a funnel drawn as horizontal bars, the first step on top (the page's plotly.js bundle has bar)
    return go.Figure(
        go.Bar(
            y=labels,
            x=counts,
            orientation="h",
            text=texts,
            textposition="auto",
            marker={"color": "#4c78a8"},
            hovertemplate="%{y}: %{x} candidates<extra></extra>",
        ),
        {
            "height": 90 + 50 * len(labels),
            "margin": {"l": 10, "r": 10, "t": 10, "b": 30},
            "yaxis": {"autorange": "reversed", "automargin": True},
            "xaxis": {"title": {"text": "candidates reaching the step"}, "rangemode": "tozero"},
        },
    )


class FunnelView(widgets.VBox):
    """The funnel and the partial matches of ``query`` over ``events``.

    >>> view = FunnelView("Visit v ; Buy b WITHIN 10 s", [{"type": "Visit", "ts": 0}, {"type": "Buy", "ts": 5},
    ...                                                   {"type": "Visit", "ts": 6}, {"type": "Visit", "ts": 30}])
    >>> view.funnel["candidates"].tolist(), len(view.partial), view
    ([3, 1], 2, FunnelView(steps=2, candidates=3, partial=2))
    """

    def __init__(self, query, events, engine: str = "auto", hierarchy=None, **options):
        self.funnel, self.partial = progress(query, events, engine=engine, hierarchy=hierarchy, **options)
        self.figure = PlotlyView(funnel_figure(self.funnel))
        candidates = int(self.funnel["candidates"].iloc[0])
        completed = int(self.funnel["candidates"].iloc[-1])
        timed_out = int(self.partial["timed_out"].sum())
        windowed = cepkit.parse(query, hierarchy).within is not None
        why = (
            f"{timed_out} of them timed out, the others were still open when the stream ended"
            if windowed
            else "the query has no window, so none timed out"
        )
        self.summary = widgets.HTML(
            f"<p class='cepkit-funnel-summary'>{plural(candidates, 'candidate')} (events that start the "
            f"sequence): {completed} completed, {len(self.partial)} stopped before the last step ({why}).</p>"
        )
        self.table = PagedTable(
            noun="partial match",
            nouns="partial matches",
            selectable=False,
            csv_name="partial-matches.csv",
            layout=full_width(),
        )
        partial = self.partial
        self.table.set_data(TableData(len(partial), lambda: partial))
        super().__init__([self.summary, self.figure, self.table], layout=full_width())
        self.add_class("cepkit-funnel")

    def __repr__(self):
        return (
            f"FunnelView(steps={len(self.funnel)}, candidates={int(self.funnel['candidates'].iloc[0])}, "
            f"partial={len(self.partial)})"
        )
