"""``ExplainView``: why is this a match, why is that not, and why did the query never fire (issue 13).

Click events on the strip (lanes by type, on a time axis) to build a candidate, or type its positions, or pick a
near miss, or a match in the Workbench; the strip marks the candidate's events in red, and the view shows the
verdict, the reasons, and the query text with the failing parts underlined in red (the satisfied ones in green).
"Why not?" lists the near misses (``cepkit.why_not``); picking one explains it. On a long stream the strip shows
the events around the candidate (``max_events`` of them). A click on an event, like ``toggle(position)``, adds it
to the candidate or takes it out. The widget only calls ``cepkit.explain``, ``cepkit.why_not`` and
``cepkit.match``.
"""

from __future__ import annotations

import html
from typing import Optional

import ipywidgets as widgets
import plotly.graph_objects as go
import traitlets

import cepkit

from .execution import as_stream
from .figures import PlotlyView, full_width
from .timeline import EventCanvas

CHOSEN, OTHER = "#d62728", "#8c96a0"


class ExplainView(widgets.VBox):
    """Explain candidates of ``query`` over ``events``.

    Parameters
    ----------
    query : str or ``cepkit.Query``
    events : DataFrame, iterable of dicts or of ``cepkit.Event``
    candidate : optional tuple of positions (or bindings dict) to explain first
    strategy, hierarchy : as for ``cepkit.explain``
    max_events : how many events the strip shows around the candidate
    tz : the time zone of the strip's axis and hovers (as ``MatchTimeline``'s; UTC by default)

    Examples
    --------
    >>> import cepkit
    >>> view = ExplainView("(T AS x ; H AS y) FILTER x.tmp > 40", cepkit.datasets.cel_fire_sensors(), (1, 2))
    >>> view.explanation.is_match, view.candidate
    (True, (1, 2))
    >>> view.toggle(2); view.toggle(5); view.explanation.is_match
    False
    """

    candidate = traitlets.Tuple(help="the positions being explained")

    def __init__(
        self,
        query,
        events,
        candidate=None,
        strategy: Optional[str] = None,
        hierarchy=None,
        max_events: int = 400,
        tz: Optional[str] = None,
    ):
        self.query = cepkit.parse(query, hierarchy)
        self.stream = as_stream(events)
        self.strategy, self.hierarchy, self.max_events, self.tz = strategy, hierarchy, max_events, tz
        self.explanation = None
        self.near_misses = None
        self.canvas = EventCanvas(self.stream, tz)  # events placed and described as on the timeline, in tz
        self.positions = widgets.Text(
            placeholder="positions, e.g. 1,8", description="candidate", continuous_update=False
        )
        self.clear = widgets.Button(description="Clear", layout={"flex": "none"})
        self.why = widgets.Button(
            description="Why not?", tooltip="near misses: candidates failing fewest clauses", layout={"flex": "none"}
        )
        self.verdict = widgets.HTML()
        self.text = widgets.HTML()
        self.reasons = widgets.HTML()
        self.misses = widgets.Select(options=[], rows=6, description="near misses", layout=full_width())
        self.misses_note = widgets.HTML()
        self.plot = PlotlyView()
        self.plot.on_click(self._clicked)
        self.positions.observe(self._typed, "value")
        self.clear.on_click(lambda _: setattr(self, "candidate", ()))
        self.why.on_click(lambda _: self.show_near_misses())
        self.misses.observe(self._picked, "value")
        super().__init__(
            [
                widgets.HBox([self.positions, self.clear, self.why], layout={"flex_flow": "row wrap"}),
                self.plot,
                self.verdict,
                self.text,
                self.reasons,
                self.misses_note,
                self.misses,
            ],
            layout=full_width(),
        )
        self.add_class("cepkit-explain-view")
        self._shown: list = []
        if candidate is not None:
            self.explain(candidate)
        else:
            self._draw()
            self.text.value = self._query_html(None)

    # ------------------------------------------------------------------ public
    def explain(self, candidate) -> "cepkit.Explanation":
        """Explain ``candidate`` (positions or bindings) and show it."""
        self.explanation = cepkit.explain(self.query, self.stream, candidate, self.strategy, self.hierarchy, self.tz)
        self.candidate = self.explanation.positions
        return self.explanation

    def toggle(self, position: int) -> None:
        """Add ``position`` to the candidate, or take it out."""
        chosen = set(self.candidate) ^ {int(position)}
        self.candidate = tuple(sorted(chosen))

    def show_near_misses(self, limit: int = 10):
        """Run ``cepkit.why_not`` and list its near misses (picking one explains it). Meanwhile (seconds on a
        long stream) the button is off and the note says the search is on, and over how many events."""
        self.why.disabled = True
        self.misses.options = []
        self.misses_note.value = (
            f"<small class='cepkit-searching'>looking for near misses over the {len(self.stream):,} events…</small>"
        )
        try:
            self.near_misses = cepkit.why_not(
                self.query, self.stream, limit=limit, strategy=self.strategy, hierarchy=self.hierarchy, tz=self.tz
            )
        except Exception as err:
            self.misses_note.value = f"<span style='color:{CHOSEN}'>{html.escape(str(err))}</span>"
            raise
        finally:
            self.why.disabled = False
        self.misses_note.value = f"<small>{html.escape(self.near_misses.summary())}</small>"
        self.misses.options = [(self._row(e), k) for k, e in enumerate(self.near_misses)]
        self.misses.value = None
        return self.near_misses

    def __repr__(self):
        e = self.explanation
        verdict = "none" if e is None else "undecided" if not e.decided else "match" if e.is_match else "no match"
        return f"ExplainView(candidate={self.candidate}, verdict={verdict})"

    # ------------------------------------------------------------------ reactions
    @traitlets.observe("candidate")
    def _on_candidate(self, change) -> None:
        self.positions.value = ",".join(map(str, self.candidate))
        if not self.candidate:
            self.explanation = None
            self.verdict.value = self.reasons.value = ""
            self.text.value = self._query_html(None)
        elif self.explanation is None or self.explanation.positions != self.candidate:
            try:
                self.explanation = cepkit.explain(
                    self.query, self.stream, self.candidate, self.strategy, self.hierarchy, self.tz
                )
            except ValueError as err:
                self.explanation = None
                self.verdict.value = f"<span style='color:{CHOSEN}'>{html.escape(str(err))}</span>"
                self._draw()
                return
        if self.explanation is not None:
            self._show(self.explanation)
        self._draw()

    def _typed(self, change) -> None:
        try:
            chosen = tuple(sorted({int(p) for p in change["new"].replace(" ", "").split(",") if p}))
        except ValueError:
            self.verdict.value = f"<span style='color:{CHOSEN}'>positions are numbers separated by commas</span>"
            return
        if chosen != self.candidate:
            self.candidate = chosen

    def _clicked(self, click) -> None:
        if click.customdata is not None:  # the strip's events carry their position
            self.toggle(int(click.customdata))

    def _picked(self, change) -> None:
        if change["new"] is not None:
            miss = self.near_misses[change["new"]]
            self.explanation = miss
            self.candidate = miss.positions
            self._show(miss)

    # ------------------------------------------------------------------ drawing
    def _show(self, explanation) -> None:
        self.verdict.value = (
            f"<b style='color:{explanation.colour};font-size:110%'>{html.escape(explanation.verdict())}</b>"
        )
        self.text.value = self._query_html(explanation)
        rows = "".join(
            f"<li><b style='color:{'#2ca02c' if not r.failed else CHOSEN}'>{html.escape(r.kind)}</b> "
            f"{html.escape(r.message)}</li>"
            for r in explanation.reasons
        )
        self.reasons.value = f"<ul style='margin-top:0'>{rows}</ul>"

    def _query_html(self, explanation) -> str:
        text = html.escape(self.query.text) if explanation is None else explanation.query_html()
        return f"<pre style='white-space:pre-wrap;font-size:105%;line-height:1.6'>{text}</pre>"

    def _row(self, explanation) -> str:
        failed = explanation.failures
        first = failed[0].message if failed else ""
        return f"{explanation.positions}: {len(failed)} failed · {first}"

    def _window(self) -> range:
        """The positions the strip shows: all of a short stream, else ``max_events`` around the candidate."""
        n = len(self.stream)
        if n <= self.max_events:
            return range(n)
        middle = (min(self.candidate) + max(self.candidate)) // 2 if self.candidate else 0
        start = min(max(middle - self.max_events // 2, 0), n - self.max_events)
        return range(start, start + self.max_events)

    def _part_shown(self) -> str:
        """The title's second line when the strip shows part of the stream (else nothing)."""
        n, shown = len(self.stream), self._shown
        if not shown or len(shown) >= n:
            return ""
        return (
            f"<br><sup>positions {shown[0]:,} to {shown[-1]:,} of the {n:,} events "
            f"(the {len(shown):,} around the candidate)</sup>"
        )

    def _draw(self) -> None:
        """The strip, drawn whole each time the candidate changes."""
        self._shown = list(self._window())
        chosen = set(self.candidate)
        events = go.Scatter(name="events", **self.canvas.events(self._shown))
        events.marker = {
            "size": [13 if p in chosen else 8 for p in self._shown],
            "color": [CHOSEN if p in chosen else OTHER for p in self._shown],
            "symbol": ["diamond" if p in chosen else "circle" for p in self._shown],
        }
        layout = {
            "height": 150 + 30 * len(self.canvas.lanes),
            "margin": {"l": 60, "r": 20, "t": 55 if len(self._shown) < len(self.stream) else 40, "b": 40},
            "showlegend": False,
            "hovermode": "closest",
            "hoverlabel": {"align": "left"},
            "title": {
                "text": "the candidate's events in red: click an event to add or remove it (hover for its "
                "attributes)" + self._part_shown(),
                "font": {"size": 13},
                "x": 0.01,
                "xanchor": "left",
            },
            "xaxis": {"title": {"text": self.canvas.axis_title}},
            "yaxis": {**self.canvas.lane_axis(), "title": {"text": "type"}},
        }
        self.figure = go.Figure([events], layout)
        self.plot.show(self.figure)
