"""``MatchTimeline``: events in one lane per type on a time axis, each match drawn as its events linked in order.

What a demanding user expects, and what this draws:

- Lanes are event types in order of first appearance, top to bottom; x is ts (datetimes stay datetimes).
- A match is a polyline through its events in logical order (ts, then position; LANGUAGE.md §10.1). Matches
  sharing events would hide each other, so match ``k`` is drawn a little off the lane centre (seven offsets,
  cycling with ``k``). Hovering a vertex shows the event's attributes and the match's
  bindings; clicking a match (or setting ``selected``) highlights it and lists its events below the plot.
- Scale: beyond ``max_events`` events, the events no drawn match uses are aggregated into time bins per lane
  (marker size grows with the count, hover gives it); beyond ``max_matches`` matches, only the first are
  drawn. The figure's title says when either happens.
- Out-of-order aggressive mode (``Matches.deltas``): a retraction (sign "-") is drawn dashed as a withdrawn
  result; a "+" delta that uses a *late* event (one whose ts is below the largest ts that arrived before it,
  digest 000a §2) is drawn as a late insertion, the late events starred.
"""
from __future__ import annotations

import html
from typing import Iterable, Optional

import ipywidgets as widgets
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import traitlets

from .execution import as_stream

# Trace names, in drawing order; every timeline figure has exactly these traces (possibly empty).
TRACES = ("event density", "events", "withdrawn", "matches", "late insertions", "selected")
OFFSETS = (0.0, 0.08, -0.08, 0.16, -0.16, 0.24, -0.24)  # vertical offset of match k within a lane: k % 7
COLORS = {"events": "#9aa5b1", "matches": "#1f77b4", "withdrawn": "#b0b0b0", "late insertions": "#ff7f0e",
          "selected": "#d62728", "event density": "#c9d1d9"}


def late_positions(stream) -> frozenset:
    """Positions of late events: ts below the largest ts of an earlier arrival (digest 000a §2).

    >>> from cepkit.runtime import Stream
    >>> sorted(late_positions(Stream.from_any([{"type": "A", "ts": t} for t in (1, 5, 3, 6, 2)])))
    [2, 4]
    """
    times = stream.times
    if len(times) < 2:
        return frozenset()
    running = np.maximum.accumulate(times)
    return frozenset(int(i) + 1 for i in np.nonzero(times[1:] < running[:-1])[0])


def bound_variables(match, position: int) -> list:
    """The variables of ``match`` bound to ``position`` (a Kleene variable counts when it includes it)."""
    return [v for v, b in match.bindings.items() if b == position or (isinstance(b, tuple) and position in b)]


def bindings_text(match) -> str:
    """``x = 1, y = (4, 6)``: a match's bindings, Kleene variables as tuples."""
    return ", ".join(f"{v} = {b}" for v, b in match.bindings.items()) or "(no bindings)"


def event_text(event) -> str:
    attrs = "<br>".join(f"{html.escape(str(k))} = {html.escape(str(v))}" for k, v in event.attrs.items())
    head = f"position {event.position} · <b>{html.escape(event.type)}</b> · ts {html.escape(str(event.ts))}"
    return head + ("<br>" + attrs if attrs else "")


class MatchTimeline(widgets.VBox):
    """Events by type lane on a time axis with each match linked in order; click a match to select it.

    Parameters
    ----------
    events : DataFrame, iterable of dicts or of ``cepkit.Event``
        The stream the matches were found in (positions index it).
    matches : ``cepkit.Matches`` or iterable of ``cepkit.Match``
        The matches to draw; ``Matches.deltas``, when present, adds withdrawn results and late insertions.
    max_events, max_matches : int
        Beyond these, unmatched events are aggregated and only the first matches are drawn (and the title
        says so).

    Examples
    --------
    >>> import cepkit
    >>> events = [{"type": "T", "ts": 0}, {"type": "H", "ts": 1}, {"type": "H", "ts": 2}]
    >>> matches = [cepkit.Match.of({"x": 0, "y": 1}), cepkit.Match.of({"x": 0, "y": 2})]
    >>> timeline = MatchTimeline(events, matches)
    >>> timeline.selected = 1
    >>> timeline
    MatchTimeline(events=3, matches=2, selected=1)
    """

    selected = traitlets.Int(None, allow_none=True, help="index of the highlighted match, or None")

    def __init__(self, events, matches: Iterable = (), *, max_events: int = 2000, max_matches: int = 300,
                 height: Optional[int] = None, title: str = ""):
        self.stream = as_stream(events)
        self.max_events = max_events
        self.max_matches = max_matches
        self.title = title
        self.lanes = {}
        for event in self.stream:
            self.lanes.setdefault(event.type, len(self.lanes))
        self._x = (pd.to_datetime(self.stream.times, unit="s") if self.stream.ts_is_datetime
                   else self.stream.times)
        self._late = late_positions(self.stream)
        self.figure = go.FigureWidget(data=[go.Scatter(name=name, x=[], y=[]) for name in TRACES])
        self.figure.update_layout(height=height or min(160 + 45 * len(self.lanes), 520))
        self.details = widgets.HTML()
        super().__init__([self.figure, self.details])
        self.trace("matches").on_click(self._clicked)
        self.set_matches(matches)

    # ------------------------------------------------------------------ public
    def trace(self, name: str):
        """The figure's trace called ``name`` (one of ``TRACES``)."""
        return self.figure.data[TRACES.index(name)]

    def set_matches(self, matches: Iterable) -> None:
        """Draw other matches of the same stream (keeps the figure, so a displayed view updates in place)."""
        self.deltas = list(getattr(matches, "deltas", None) or [])
        self.matches = [m for m in matches if m.sign == "+"]
        self.selected = None
        drawn = self.matches[:self.max_matches]
        withdrawn = [m for m in self.deltas if m.sign == "-"]
        late = [m for m in self.deltas if m.sign == "+" and self._late.intersection(m.positions)]
        used = {p for m in (*drawn, *withdrawn, *late) for p in m.positions}
        aggregate = len(self.stream) > self.max_events
        shown = sorted(used) if aggregate else range(len(self.stream))
        notes = []
        if aggregate:
            notes.append(f"{len(self.stream):,} events > max_events={self.max_events:,}: unmatched events "
                         f"binned ({self._bins()} bins per lane)")
        if len(drawn) < len(self.matches):
            notes.append(f"showing the first {len(drawn):,} of {len(self.matches):,} matches")
        props = {
            "event density": self._density(used) if aggregate else _empty(),
            "events": self._events(shown),
            "withdrawn": self._polylines(withdrawn, "withdrawn", dash="dash", symbol="x"),
            "matches": self._polylines(drawn, "match"),
            "late insertions": self._polylines(late, "late insertion", dash="dot", star_late=True),
            "selected": _empty(),
        }
        # One update per trace, never one batch across traces: a batched restyle pads the traces lacking a
        # property with `undefined` (e.g. `marker`), which plotly.js's cleanData cannot read, and the figure
        # then never renders.
        for name, values in props.items():
            self.trace(name).update(values, overwrite=True)
        self.figure.update_layout(self._layout(notes))
        self.notes = notes
        self._show_selected()

    def __repr__(self):
        return f"MatchTimeline(events={len(self.stream)}, matches={len(self.matches)}, selected={self.selected})"

    # ------------------------------------------------------------------ selection
    @traitlets.validate("selected")
    def _check_selected(self, proposal):
        k = proposal["value"]
        if k is not None and not 0 <= k < len(self.matches):
            raise traitlets.TraitError(f"selected must be None or 0..{len(self.matches) - 1}, got {k}")
        return k

    @traitlets.observe("selected")
    def _on_selected(self, change):
        self._show_selected()

    def _clicked(self, trace, points, state):
        for i in points.point_inds:
            k = trace.customdata[i]
            if k is not None:
                self.selected = int(k)
                return

    def _show_selected(self):
        k = self.selected
        if k is None:
            self.trace("selected").update(_empty(), overwrite=True)
            self.details.value = ("<small>Click a match's line to highlight it and list its events.</small>"
                                  if self.matches else "<small>No matches.</small>")
            return
        match = self.matches[k]
        props = self._polylines([match], "selected match", first_index=k)
        props.update(line={"color": COLORS["selected"], "width": 4}, marker={"size": 11, "color": COLORS["selected"]})
        self.trace("selected").update(props, overwrite=True)
        self.details.value = self._match_table(k, match)

    def _match_table(self, k: int, match) -> str:
        rows = []
        for p in self._logical(match.positions):
            event = self.stream[p]
            attrs = ", ".join(f"{a} = {v}" for a, v in event.attrs.items())
            rows.append(f"<tr><td>{p}</td><td>{html.escape(', '.join(bound_variables(match, p)))}</td>"
                        f"<td>{html.escape(event.type)}</td><td>{html.escape(str(event.ts))}</td>"
                        f"<td>{html.escape(attrs)}</td></tr>")
        return (f"<b>match #{k}</b>: {html.escape(bindings_text(match))}"
                "<table class='cepkit-match'><tr><th>position</th><th>variables</th><th>type</th><th>ts</th>"
                f"<th>attributes</th></tr>{''.join(rows)}</table>")

    # ------------------------------------------------------------------ drawing
    def _logical(self, positions) -> list:
        return sorted(positions, key=lambda p: (self.stream.times[p], p))

    def _events(self, positions) -> dict:
        positions = list(positions)
        return {"x": [self._x[p] for p in positions], "y": [self.lanes[self.stream[p].type] for p in positions],
                "mode": "markers", "marker": {"size": 7, "color": COLORS["events"]},
                "hovertext": [event_text(self.stream[p]) for p in positions],
                "hovertemplate": "%{hovertext}<extra></extra>", "customdata": None}

    def _polylines(self, matches, label: str, dash: str = "solid", symbol: str = "circle",
                   star_late: bool = False, first_index: int = 0) -> dict:
        """One trace for many matches: each a polyline, separated by None; customdata holds the match index."""
        xs, ys, texts, ids, symbols = [], [], [], [], []
        for k, match in enumerate(matches, start=first_index):
            offset = OFFSETS[k % len(OFFSETS)]
            for p in self._logical(match.positions):
                event = self.stream[p]
                xs.append(self._x[p])
                ys.append(self.lanes[event.type] + offset)
                names = ", ".join(bound_variables(match, p))
                late = " (late event)" if p in self._late else ""
                texts.append(f"{label} #{k} · {html.escape(names)}{late}<br>{html.escape(bindings_text(match))}"
                             f"<br>{event_text(event)}")
                ids.append(k)
                symbols.append("star" if star_late and p in self._late else symbol)
            for column in (xs, ys, texts, ids, symbols):
                column.append(None)
        color = COLORS["late insertions" if star_late else "withdrawn" if dash == "dash" else "matches"]
        return {"x": xs, "y": ys, "mode": "lines+markers", "hovertext": texts, "customdata": ids,
                "hovertemplate": "%{hovertext}<extra></extra>", "connectgaps": False,
                "line": {"color": color, "width": 2, "dash": dash},
                "marker": {"size": 9, "color": color, "symbol": [s or "circle" for s in symbols]}}

    def _bins(self) -> int:
        return max(10, self.max_events // max(len(self.lanes), 1))

    def _density(self, skip: set) -> dict:
        """Unmatched events aggregated per lane into equal time bins; marker area grows with the count."""
        times = self.stream.times
        edges = np.linspace(times.min(), times.max(), self._bins() + 1)
        keep = np.ones(len(times), dtype=bool)
        keep[list(skip)] = False
        types = np.array(self.stream.types, dtype=object)
        xs, ys, counts, texts = [], [], [], []
        for name, lane in self.lanes.items():
            count, _ = np.histogram(times[keep & (types == name)], bins=edges)
            for i in np.nonzero(count)[0]:
                lo, hi = self._time_label(edges[i]), self._time_label(edges[i + 1])
                xs.append(self._time_value((edges[i] + edges[i + 1]) / 2))
                ys.append(lane)
                counts.append(int(count[i]))
                texts.append(f"{count[i]} unmatched {html.escape(name)} events<br>ts {lo} to {hi}")
        peak = max(counts, default=1)
        return {"x": xs, "y": ys, "mode": "markers", "hovertext": texts, "customdata": None,
                "hovertemplate": "%{hovertext}<extra></extra>",
                "marker": {"size": [4 + 14 * (c / peak) ** 0.5 for c in counts], "color": COLORS["event density"]}}

    def _time_value(self, seconds: float):
        return pd.to_datetime(seconds, unit="s") if self.stream.ts_is_datetime else seconds

    def _time_label(self, seconds: float) -> str:
        return str(self._time_value(seconds)) if self.stream.ts_is_datetime else f"{seconds:g}"

    def _layout(self, notes: list) -> dict:
        heading = self.title or f"{len(self.stream):,} events · {len(self.matches):,} matches"
        if self.deltas:
            heading += f" · {sum(m.sign == '-' for m in self.deltas)} withdrawn"
        text = heading + "".join(f"<br><sup>{html.escape(n)}</sup>" for n in notes)
        lanes = list(self.lanes)
        return {"title": {"text": text, "font": {"size": 14}},
                "xaxis": {"title": {"text": "ts"}},
                "yaxis": {"tickvals": list(range(len(lanes))), "ticktext": lanes, "autorange": "reversed",
                          "range": None, "zeroline": False, "title": {"text": "type"}},
                "margin": {"l": 60, "r": 20, "t": 60 + 18 * len(notes), "b": 40},
                "legend": {"orientation": "h", "y": -0.25}, "hovermode": "closest"}


def _empty() -> dict:
    return {"x": [], "y": [], "hovertext": [], "customdata": None}
