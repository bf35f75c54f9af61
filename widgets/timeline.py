"""``MatchTimeline``: events in one lane per type on a time axis, each match drawn as its events linked in order.

What a demanding user expects, and what this draws:

- Lanes are event types in order of first appearance, top to bottom; x is ts (datetimes stay datetimes, shown
  in the time zone ``tz``, UTC by default, chosen again in the widget's time zone box).
- A match is a polyline through its events in logical order (ts, then position; docs/language.md §10.1), in a
  colour of its own (eight colours, cycling) or of its group (``group_by``: an attribute of the match's first
  event, or a function of the match); the legend shows and hides the matches or each group. Matches sharing
  events would hide each other, so match ``k`` is drawn a little off the lane centre (seven offsets). Hovering
  a vertex shows the event's attributes (numbers rounded) and the match's bindings; clicking a match (or
  setting ``selected``) highlights it and lists its events below the plot.
- Scale: beyond ``max_events`` events, the events no drawn match uses are aggregated into time bins per lane
  (marker size grows with the count, hover gives it); beyond ``max_matches`` matches, a sample spread evenly
  over the matches' start times is drawn (every part of the time range keeps its share). The title says when
  either happens.
- Out-of-order aggressive mode (``Matches.deltas``): a retraction (sign "-") is drawn dashed as a withdrawn
  result; a "+" delta that uses a *late* event (one whose ts is below the largest ts that arrived before it,
  [LIU] ch. 3) is drawn as a late insertion, the late events starred.

The figure (``.figure``, a ``go.Figure``) is built whole, every trace at once, when the matches change, and
drawn by a ``figures.PlotlyView`` (``.plot``), whose clicks select matches; a selection updates the highlighted
match's trace and sends the figure again (the page's ``Plotly.react`` redraws only what changed).
"""

from __future__ import annotations

import datetime
import html
import zoneinfo
from collections import Counter
from typing import Callable, Iterable, Optional, Union

import ipywidgets as widgets
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import traitlets

import cepkit

from .execution import as_stream
from .figures import TABLE_CSS, PlotlyView, format_value, full_width, plural

OFFSETS = (0.0, 0.08, -0.08, 0.16, -0.16, 0.24, -0.24)  # vertical offset of match k within a lane: k % 7
PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79")
COLORS = {
    "events": "#9aa5b1",
    "withdrawn": "#b0b0b0",
    "late insertions": "#ff7f0e",
    "selected": "#d62728",
    "event density": "#c9d1d9",
}
AROUND = 2000  # events drawn around a picked match when the stream is drawn binned
AROUND_PICK = "events around the pick"  # their trace
MAX_GROUPS = 8  # legend entries for groups; smaller groups are drawn together as "other"
TIME_ZONES = (
    "UTC",
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "Europe/London",
    "Europe/Paris",
    "Asia/Tokyo",
)


# The picked match's events (``match_events_html``). Its wrapper is a size container: in an output narrower
# than 640 px (an 800 px window with JupyterLab's file browser open: ~370 px) a row no longer fits position,
# variables, type, time and ~250 px of attributes side by side, so each event becomes a block: its position,
# variables, type and time on a line (wrapping between them, never inside one), its attributes under them at
# the whole width. The table's header then goes (the position says "position" itself). Its rules name both
# classes: a TABLE_CSS sent later in the page (another view's) would otherwise undo them.
MATCH_EVENTS_CSS = """<style>
div.cepkit-match-events-box { container-type: inline-size; width: 100%; overflow-x: auto; }
table.cepkit-match-events { width: 100%; line-height: 1.45; }
table.cepkit-match-events th, table.cepkit-match-events td.key { white-space: nowrap; }
table.cepkit-match-events th.key, table.cepkit-match-events td.key { width: 1%; }  /* the attributes take the rest */
table.cepkit-match-events td.attrs { min-width: 14em; }
table.cepkit-match-events .pair { white-space: nowrap; }
@container (max-width: 640px) {
  table.cepkit-table.cepkit-match-events, table.cepkit-table.cepkit-match-events tbody { display: block; }
  table.cepkit-table.cepkit-match-events thead { display: none; }
  table.cepkit-table.cepkit-match-events tr { display: flex; flex-wrap: wrap; column-gap: 12px; padding: 3px 6px;
    border: 1px solid #d0d7de; border-top: none; }
  table.cepkit-table.cepkit-match-events tr:first-child { border-top: 1px solid #d0d7de; }
  table.cepkit-table.cepkit-match-events td, table.cepkit-table.cepkit-match-events td.key { border: none; padding: 0; width: auto; }
  table.cepkit-table.cepkit-match-events td.position::before { content: "position "; color: #6e7781; }
  table.cepkit-table.cepkit-match-events td.attrs { flex: 1 0 100%; min-width: 0; color: #3d444d; }
}
</style>"""


def match_events_html(rows: Iterable[tuple]) -> str:
    """A match's events as a table (``MATCH_EVENTS_CSS``): ``rows`` of (position, variables, type, time,
    attributes as (name, value text) pairs). Position, variables, type and time never wrap; the attributes wrap
    between their ``name = value`` pairs, never inside one.

    >>> print(match_events_html([(4, "x", "T", "12:00", [("temp", "41"), ("site", "a b")])]).split("<tbody>")[1])
    <tr><td class='key num position'>4</td><td class='key'>x</td><td class='key'>T</td><td class='key'>12:00</td><td class='attrs'><span class='pair'>temp = 41,</span> <span class='pair'>site = a b</span></td></tr></tbody></table></div>
    """
    body = []
    for position, variables, kind, when, attrs in rows:
        pairs = [f"{html.escape(str(name))} = {html.escape(value)}" for name, value in attrs]
        spans = " ".join(
            f"<span class='pair'>{p}{',' if i < len(pairs) - 1 else ''}</span>" for i, p in enumerate(pairs)
        )
        body.append(
            f"<tr><td class='key num position'>{position}</td><td class='key'>{html.escape(variables)}</td>"
            f"<td class='key'>{html.escape(kind)}</td><td class='key'>{html.escape(when)}</td>"
            f"<td class='attrs'>{spans}</td></tr>"
        )
    return (
        "<div class='cepkit-scroll cepkit-match-events-box'><table class='cepkit-table cepkit-match-events'><thead><tr>"
        "<th class='key num'>position</th><th class='key'>variables</th><th class='key'>type</th><th class='key'>ts</th>"
        "<th>attributes</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def late_positions(stream) -> frozenset:
    """Positions of late events: ts below the largest ts of an earlier arrival ([LIU] ch. 3).

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
    """``x = 1, y = (4, 6)``: a match's bindings, a Kleene variable's positions in brackets (one too: ``(4)``).

    >>> bindings_text(cepkit.Match(frozenset({1, 4}), {"x": 1, "y": (4,)}))
    'x = 1, y = (4)'
    """
    return (
        ", ".join(
            f"{v} = ({', '.join(map(str, b))})" if isinstance(b, tuple) else f"{v} = {b}"
            for v, b in match.bindings.items()
        )
        or "(no bindings)"
    )


def event_text(event, when: Optional[str] = None) -> str:
    """An event for a hover: position, type, time (``when``, else its ts) and attributes, numbers rounded."""
    attrs = "<br>".join(f"{html.escape(str(k))} = {html.escape(format_value(v))}" for k, v in event.attrs.items())
    head = (
        f"position {event.position} · <b>{html.escape(event.type)}</b> · "
        f"{html.escape(when if when is not None else 'ts ' + format_value(event.ts))}"
    )
    return head + ("<br>" + attrs if attrs else "")


def check_time_zone(tz: Optional[str]) -> Optional[str]:
    """``tz`` if it names an IANA time zone (None stays None), else a ValueError that says what is expected."""
    if tz is None:
        return None
    try:
        zoneinfo.ZoneInfo(str(tz))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {tz!r}: use an IANA name such as 'UTC' or 'America/New_York'") from None
    return str(tz)


def row_extremes(offsets: np.ndarray, flat: np.ndarray, values: np.ndarray) -> tuple:
    """Per CSR row (``flat[offsets[i]:offsets[i+1]]`` are positions), the least and greatest of ``values``
    at its positions (NaN for an empty row): each match's first and last time, from the match arrays.

    >>> row_extremes(np.array([0, 2, 2, 3]), np.array([1, 0, 2]), np.array([5.0, 7.0, 9.0]))
    (array([ 5., nan,  9.]), array([ 7., nan,  9.]))
    """
    n = len(offsets) - 1
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    full = offsets[1:] > offsets[:-1]
    if full.any():
        at = values[flat[offsets[0] : offsets[-1]]]
        starts = (offsets[:-1] - offsets[0])[full]
        low[full], high[full] = np.minimum.reduceat(at, starts), np.maximum.reduceat(at, starts)
    return low, high


class EventCanvas:
    """Where a stream's events go on a figure and what their hovers say: x in a time zone, a lane per type.

    ``MatchTimeline``, ``StrategyCompare``, ``ExplainView`` and the results grid place and describe events
    with it, so all of them show times the same way (in ``tz``). Its columns are the stream's: no
    ``Event`` object is made to draw (a million-event stream draws as fast as the events drawn).
    """

    def __init__(
        self, stream, tz: Optional[str] = None, types: Optional[Iterable[str]] = None, numbering: Optional[tuple] = None
    ):
        self.stream = stream
        # (the number shown for each match index, the position shown for each event) when the stream drawn
        # is a part of a larger one (a sample of a Spark result): hovers then name the larger one's
        self.numbering = numbering
        self.tz = check_time_zone(tz) if stream.ts_is_datetime else None
        if types is None:  # the types present, in order of first appearance: from the stream's int32 codes
            names = stream.type_names
            types = [names[c] for c in pd.unique(stream.type_codes).tolist()]
        self.lanes = {t: i for i, t in enumerate(dict.fromkeys(types))}
        self._zone = zoneinfo.ZoneInfo(self.tz or "UTC")

    @property
    def late(self) -> frozenset:
        if not hasattr(self, "_late"):
            self._late = late_positions(self.stream)
        return self._late

    @property
    def in_order(self) -> bool:
        """Whether the stream's times never decrease (no late event)."""
        if not hasattr(self, "_in_order"):
            self._in_order = self.stream.first_disorder() is None
        return self._in_order

    def zoned(self, seconds):
        """Datetimes in ``tz``, with its offset (times in seconds since the epoch)."""
        return pd.to_datetime(seconds, unit="s", utc=True).tz_convert(self.tz or "UTC")

    def _wall_clock(self, seconds):
        """Datetimes on the clocks of ``tz`` (naive, so that plotly prints them as they are)."""
        return self.zoned(seconds).tz_localize(None)

    @property
    def axis_title(self) -> str:
        return f"ts ({self.tz or 'UTC'})" if self.stream.ts_is_datetime else "ts"

    def time_label(self, seconds: float) -> str:
        if not self.stream.ts_is_datetime:
            return format_value(float(seconds))
        stamp = datetime.datetime.fromtimestamp(float(seconds), self._zone)
        return stamp.strftime("%Y-%m-%d %H:%M:%S %Z")

    def time_values(self, seconds: np.ndarray):
        return self._wall_clock(seconds) if self.stream.ts_is_datetime else seconds

    def x_values(self, seconds: np.ndarray) -> list:
        """Figure x values of times in seconds: numbers, or wall-clock datetimes in ``tz`` as ISO text (what
        plotly reads as dates, made in one numpy call rather than a Timestamp each)."""
        if not self.stream.ts_is_datetime:
            return np.asarray(seconds).tolist()
        return np.datetime_as_string(self._wall_clock(seconds).to_numpy(), unit="ms").tolist()

    def x_of(self, positions) -> list:
        """The x of the events at ``positions`` (None stays None: a gap between polylines)."""
        positions = list(positions)
        known = [p for p in positions if p is not None]
        values = iter(self.x_values(self.stream.times[np.asarray(known, dtype=np.int64)]))
        return [None if p is None else next(values) for p in positions]

    def logical(self, positions) -> list:
        times = self.stream.times
        return sorted(positions, key=lambda p: (times[p], p))

    def event_texts(self, positions) -> list:
        """The hover text of each event at ``positions``: position, type, time in ``tz``, attributes."""
        positions = np.asarray(list(positions), dtype=np.int64)
        if not len(positions):
            return []
        frame = self.stream.frame.iloc[positions]
        attributes = [c for c in frame.columns if c not in ("type", "ts")]
        types, times = self.stream.types[positions], self.stream.times[positions]
        texts = []
        rows = frame[attributes].itertuples(index=False, name=None) if attributes else [()] * len(positions)
        for p, event_type, seconds, values in zip(positions.tolist(), types, times.tolist(), rows):
            attrs = "<br>".join(
                f"{html.escape(str(a))} = {html.escape(format_value(v))}"
                for a, v in zip(attributes, values)
                if not _missing(v)
            )
            head = f"position {self.position_label(p)} · <b>{html.escape(str(event_type))}</b> · {html.escape(self.time_label(seconds))}"
            texts.append(head + ("<br>" + attrs if attrs else ""))
        return texts

    def match_label(self, k: int) -> int:
        """The number match ``k`` is shown with (its index, or its number in the larger result)."""
        return k if self.numbering is None else self.numbering[0][k]

    def position_label(self, p: int) -> int:
        """The position the event at ``p`` is shown with (its own, or its position in the larger stream)."""
        return p if self.numbering is None else self.numbering[1][p]

    def event_text(self, position: int) -> str:
        return self.event_texts([position])[0]

    def events(self, positions) -> dict:
        """Scatter properties: one grey marker per event at ``positions`` (its position as customdata)."""
        positions = np.asarray(list(positions), dtype=np.int64)
        types = self.stream.types[positions]
        keep = np.isin(types, list(self.lanes))
        positions, types = positions[keep], types[keep]
        return {
            "x": self.x_of(positions.tolist()),
            "y": [self.lanes[t] for t in types],
            "customdata": positions.tolist(),
            "mode": "markers",
            "marker": {"size": 7, "color": COLORS["events"]},
            "hovertext": self.event_texts(positions),
            "hovertemplate": "%{hovertext}<extra></extra>",
        }

    def polylines(self, matches, indices, label: str, symbol: str = "circle", star_late: bool = False) -> dict:
        """Scatter properties for many matches in one trace: each a polyline, separated by None; customdata
        holds the match's index (``indices``), so a click tells which match it hit."""
        types = self.stream.types
        drawn, ys, heads, ids, symbols = [], [], [], [], []
        late = self.late
        for k, match in zip(indices, matches):
            offset = OFFSETS[k % len(OFFSETS)]
            for p in self.logical(match.positions):
                event_type = types[p]
                if event_type not in self.lanes:
                    continue
                drawn.append(p)
                ys.append(self.lanes[event_type] + offset)
                names = ", ".join(bound_variables(match, p))
                heads.append(
                    f"{label} #{self.match_label(k)} · {html.escape(names)}{' (late event)' if p in late else ''}<br>"
                    f"{html.escape(bindings_text(match))}<br>"
                )
                ids.append(k)
                symbols.append("star" if star_late and p in late else symbol)
            for column in (drawn, ys, heads, ids, symbols):
                column.append(None)
        texts = iter(self.event_texts([p for p in drawn if p is not None]))
        hover = [None if p is None else head + next(texts) for p, head in zip(drawn, heads)]
        return {
            "x": self.x_of(drawn),
            "y": ys,
            "mode": "lines+markers",
            "hovertext": hover,
            "customdata": ids,
            "hovertemplate": "%{hovertext}<extra></extra>",
            "connectgaps": False,
            "marker": {"size": 9, "symbol": [s or symbol for s in symbols]},
        }

    def lane_axis(self) -> dict:
        lanes = list(self.lanes)
        return {
            "tickvals": list(range(len(lanes))),
            "ticktext": lanes,
            "autorange": "reversed",
            "range": None,
            "zeroline": False,
        }

    def start_times(self, matches) -> np.ndarray:
        """Each match's first time (from the match arrays when ``matches`` is a ``cepkit.Matches``)."""
        if isinstance(matches, cepkit.Matches):
            arrays = matches.arrays
            if self.in_order and len(arrays.positions):  # a row's positions are sorted, times never decrease
                first = arrays.offsets[:-1]
                at = arrays.positions[np.minimum(first, len(arrays.positions) - 1)]
                return np.where(arrays.offsets[1:] > first, self.stream.times[at], 0.0)
            low, _ = row_extremes(arrays.offsets, arrays.positions, self.stream.times)
            return np.nan_to_num(low)
        times = self.stream.times
        return np.array([min(times[p] for p in m.positions) if m.positions else 0.0 for m in matches])

    def spread_sample(self, matches, limit: int) -> list:
        """Indices of at most ``limit`` matches spread evenly over their start times (all when they fit)."""
        if len(matches) <= limit:
            return list(range(len(matches)))
        order = np.argsort(self.start_times(matches), kind="stable")
        picks = order[np.unique(np.linspace(0, len(matches) - 1, limit).round().astype(int))]
        return sorted(int(k) for k in picks)


def _missing(value) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or an array: a value
        return False


class MatchTimeline(widgets.VBox):
    """Events by type lane on a time axis with each match linked in order; click a match to select it.

    Parameters
    ----------
    events : DataFrame, iterable of dicts or of ``cepkit.Event``
        The stream the matches were found in (positions index it).
    matches : ``cepkit.Matches`` or iterable of ``cepkit.Match``
        The matches to draw; ``Matches.deltas``, when present, adds withdrawn results and late insertions.
    max_events, max_matches : int
        Beyond these, unmatched events are aggregated and a sample of the matches spread over time is drawn
        (and the title says so).
    tz : str, optional
        IANA time zone the axis and hovers show datetime ts in (UTC by default); the widget's box changes it.
    group_by : str or callable, optional
        Colour matches by group: an attribute of the match's first event (e.g. ``"origin"``) or a function
        of the match; the legend then shows and hides each group. Without it, each match has its own colour.
    numbering : (match numbers, event positions), optional
        When ``events`` and ``matches`` are a part of a larger result (a sample of a Spark result): the
        number each match is shown with and the position each event is shown with (default: their own).

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

    def __init__(
        self,
        events,
        matches: Iterable = (),
        *,
        max_events: int = 2000,
        max_matches: int = 300,
        height: Optional[int] = None,
        title: str = "",
        tz: Optional[str] = None,
        group_by: Union[str, Callable, None] = None,
        numbering: Optional[tuple] = None,
    ):
        self.stream = as_stream(events)
        for name, value in (("max_events", max_events), ("max_matches", max_matches)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
        self.max_events, self.max_matches, self.title, self.height = max_events, max_matches, title, height
        self.group_by = self._check_group_by(group_by)
        self.numbering = numbering
        self.canvas = EventCanvas(self.stream, tz, numbering=numbering)
        self._cell_counts: Optional[tuple] = None  # the density's counts per cell (``_cells``)
        self.plot = PlotlyView()
        self.plot.on_click(self._clicked)
        self.details = widgets.HTML()
        self.zone = widgets.Combobox(
            value=self.canvas.tz or "UTC",
            options=TIME_ZONES,
            description="time zone",
            ensure_option=False,
            continuous_update=False,
            layout=widgets.Layout(width="320px"),
        )
        self.zone_error = widgets.HTML()
        self.zone.observe(self._on_zone, "value")
        controls = [widgets.HBox([self.zone, self.zone_error])] if self.stream.ts_is_datetime else []
        super().__init__([*controls, self.plot, self.details], layout=full_width())
        self.matches, self.deltas, self.notes, self.drawn = [], [], [], []
        self.set_matches(matches)

    # ------------------------------------------------------------------ public
    @property
    def lanes(self) -> dict:
        return self.canvas.lanes

    @property
    def tz(self) -> Optional[str]:
        return self.canvas.tz

    @property
    def selected_match(self):
        """The highlighted ``cepkit.Match`` (None when none is)."""
        return self.matches[self.selected] if self.selected is not None else None

    def trace(self, name: str):
        """The figure's trace called ``name``: "event density", "events", "withdrawn", "late insertions",
        ``AROUND_PICK``, "selected", or a match trace (``match_traces()`` lists those)."""
        for trace in self.figure.data:
            if trace.name == name:
                return trace
        raise KeyError(f"no trace {name!r}; the traces are {[t.name for t in self.figure.data]}")

    def match_traces(self) -> list:
        return [t for t in self.figure.data if t.meta == "matches"]

    def set_matches(self, matches: Iterable) -> None:
        """Draw other matches of the same stream (the figure is rebuilt whole and sent once)."""
        self.deltas = list(getattr(matches, "deltas", None) or [])
        # a Matches holds its net result as columns (indexing makes one Match): kept as it is
        self.matches = matches if isinstance(matches, cepkit.Matches) else [m for m in matches if m.sign == "+"]
        self.selected = None
        self._redraw()

    def show_window(self, events, matches: Iterable, title: str = "") -> None:
        """Live mode (``LiveView``): draw ``matches`` over other ``events``, the window of an endless stream
        on show, titled ``title``; the time zone picked stays."""
        self.stream = as_stream(events)
        self.canvas = EventCanvas(self.stream, self.canvas.tz)
        self.title = title
        self.set_matches(matches)

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

    def _clicked(self, click) -> None:
        """A click on a match's line (or the highlighted one) selects that match; clicks elsewhere do nothing."""
        trace = self.figure.data[click.curve] if 0 <= click.curve < len(self.figure.data) else None
        if trace is not None and (trace.meta == "matches" or trace.name == "selected") and click.customdata is not None:
            self.selected = int(click.customdata)

    def _show_selected(self):
        k = self.selected
        around = self.trace(AROUND_PICK)
        if k is None:
            self.trace("selected").update(x=[], y=[], hovertext=[], customdata=[])
            around.update(x=[], y=[], hovertext=[], customdata=[], showlegend=False)
            self.details.value = (
                "<small>Click a match's line to highlight it and list its events.</small>" if self.matches else ""
            )
            self.figure.layout.xaxis.update(range=None, autorange=True)
        else:
            props = self.canvas.polylines([self.matches[k]], [k], "selected match")
            props.update(
                line={"color": COLORS["selected"], "width": 4},
                marker={"size": 11, "color": COLORS["selected"], "symbol": "circle"},
            )
            self.trace("selected").update(props, overwrite=True)
            self.details.value = self._match_table(k, self.matches[k])
            if len(self.stream) > self.max_events:  # the zoom is narrower than a bin: its own events drawn
                positions, in_range = self.around(k)
                props = self.canvas.events(positions)
                props["marker"] = {"size": 6, "color": COLORS["events"]}
                around.update(props, showlegend=bool(len(positions)), overwrite=True)
                if len(positions) < in_range:
                    self.details.value += (
                        f"<br><small>Drawn around it: the {len(positions):,} events nearest it of the "
                        f"{in_range:,} in this range (zoom in for them).</small>"
                    )
            self.figure.layout.xaxis.update(range=self.zoom(k), autorange=False)
        self.plot.show(self.figure)

    def _zoom_seconds(self, k: int) -> tuple:
        times = self.stream.times[list(self.matches[k].positions)]
        whole = float(self.stream.times.max() - self.stream.times.min()) if len(self.stream) else 0.0
        pad = max(float(times.max() - times.min()), whole / 1000, 1e-3)
        return float(times.min() - pad), float(times.max() + pad)

    def zoom(self, k: int) -> list:
        """The x range the figure zooms to when match ``k`` is picked: its span and as much again on each side
        (at least a thousandth of the stream's time range; double-click the plot for the whole range)."""
        return self.canvas.x_values(np.array(self._zoom_seconds(k)))

    def around(self, k: int) -> tuple:
        """(positions, how many events lie in match ``k``'s zoom range): on a stream drawn binned, the events
        of that range, at most ``AROUND`` of them (those nearest the match), drawn one by one when ``k`` is
        picked: the bins are wider than the zoom, so the match would otherwise stand alone."""
        low, high = self._zoom_seconds(k)
        times = self.stream.times
        if self.canvas.in_order:
            positions = np.arange(*np.searchsorted(times, [low, high], side="left"))
        else:
            positions = np.flatnonzero((times >= low) & (times < high))
        found = len(positions)
        if found > AROUND:
            middle = float(times[list(self.matches[k].positions)].mean())
            positions = np.sort(positions[np.argsort(np.abs(times[positions] - middle), kind="stable")[:AROUND]])
        return positions, found

    def _match_table(self, k: int, match) -> str:
        rows = []
        for p in self.canvas.logical(match.positions):
            event = self.stream[p]
            rows.append(
                (
                    self.canvas.position_label(p),
                    ", ".join(bound_variables(match, p)),
                    event.type,
                    self.canvas.time_label(self.stream.times[p]),
                    [(a, format_value(v)) for a, v in event.attrs.items()],
                )
            )
        return (
            f"{TABLE_CSS}{MATCH_EVENTS_CSS}<b>match #{self.canvas.match_label(k)}</b>: "
            f"{html.escape(bindings_text(match))}{match_events_html(rows)}"
        )

    # ------------------------------------------------------------------ time zone
    def _on_zone(self, change) -> None:
        try:
            tz = check_time_zone(change["new"].strip() or "UTC")
        except ValueError as err:
            self.zone_error.value = f"<span style='color:#b00'>{html.escape(str(err))}</span>"
            return
        self.zone_error.value = ""
        self.canvas = EventCanvas(self.stream, tz, numbering=self.numbering)
        selected = self.selected
        self._redraw()
        self.selected = selected

    # ------------------------------------------------------------------ drawing
    def _check_group_by(self, group_by):
        if group_by is None or callable(group_by):
            return group_by
        known = set(self.stream.frame.columns)
        if not isinstance(group_by, str) or group_by not in known:
            raise ValueError(
                f"group_by must be a function of a match or one of the events' columns "
                f"({', '.join(sorted(map(str, known)))}), got {group_by!r}"
            )
        return group_by

    def _group_of(self, match) -> str:
        if callable(self.group_by):
            return str(self.group_by(match))
        first = self.canvas.logical(match.positions)[0]
        event = self.stream[first]
        value = event.type if self.group_by == "type" else event.get(self.group_by)
        return format_value(value) if value is not None else "(none)"

    def _match_traces(self, indices: list) -> list:
        """One trace per colour: each match its own colour (cycling), or one trace per group with a legend."""
        matches = [self.matches[k] for k in indices]
        if self.group_by is None:
            slots = {}
            for k, match in zip(indices, matches):
                slots.setdefault(k % len(PALETTE), []).append(k)
            single = len(indices) <= len(PALETTE)
            groups = [
                (f"match #{self.canvas.match_label(ks[0])}" if single else "matches", PALETTE[slot], ks)
                for slot, ks in sorted(slots.items())
            ]
        else:
            labels = [self._group_of(m) for m in matches]
            biggest = [g for g, _ in Counter(labels).most_common(MAX_GROUPS)]
            by_group: dict = {}
            for k, label in zip(indices, labels):
                by_group.setdefault(label if label in biggest else "other", []).append(k)
            groups = [
                (
                    f"{self.group_by if isinstance(self.group_by, str) else 'group'} = {label} ({len(ks)})"
                    if label != "other"
                    else f"other ({len(ks)})",
                    PALETTE[i % len(PALETTE)],
                    ks,
                )
                for i, (label, ks) in enumerate(sorted(by_group.items(), key=lambda kv: -len(kv[1])))
            ]
        traces = []
        for i, (name, color, ks) in enumerate(groups):
            props = self.canvas.polylines([self.matches[k] for k in ks], ks, "match")
            props["marker"]["color"] = color
            shared_legend = self.group_by is None and name == "matches"
            traces.append(
                go.Scatter(
                    _validate=False,
                    name=name,
                    meta="matches",
                    line={"color": color, "width": 2},
                    legendgroup="matches" if shared_legend else name,
                    showlegend=not shared_legend or i == 0,
                    **props,
                )
            )
        return traces

    def _redraw(self) -> None:
        drawn = self.canvas.spread_sample(self.matches, self.max_matches)
        withdrawn = [m for m in self.deltas if m.sign == "-"]
        late = [m for m in self.deltas if m.sign == "+" and self.canvas.late.intersection(m.positions)]
        used = {p for k in drawn for p in self.matches[k].positions} | {
            p for m in (*withdrawn, *late) for p in m.positions
        }
        aggregate = len(self.stream) > self.max_events
        notes = []
        if aggregate:
            notes.append(
                f"{len(self.stream):,} events > max_events={self.max_events:,}: unmatched events "
                f"binned ({self._bins()} bins per lane)"
            )
        if len(drawn) < len(self.matches):
            notes.append(
                f"showing {len(drawn):,} of {len(self.matches):,} matches, spread evenly over their "
                f"start times (max_matches={self.max_matches:,})"
            )
        traces = [
            go.Scatter(
                _validate=False, name="event density", **(self._density(used) if aggregate else {"x": [], "y": []})
            ),
            go.Scatter(
                _validate=False,
                name="events",
                **self.canvas.events(sorted(used) if aggregate else range(len(self.stream))),
            ),
            self._delta_trace(
                "withdrawn", self.canvas.polylines(withdrawn, range(len(withdrawn)), "withdrawn", symbol="x"), "dash"
            ),
            *self._match_traces(drawn),
            self._delta_trace(
                "late insertions",
                self.canvas.polylines(late, range(len(late)), "late insertion", star_late=True),
                "dot",
            ),
            go.Scatter(name=AROUND_PICK, x=[], y=[], mode="markers", showlegend=False),
            go.Scatter(
                name="selected",
                x=[],
                y=[],
                mode="lines+markers",
                showlegend=False,
                hovertemplate="%{hovertext}<extra></extra>",
            ),
        ]
        self.figure = go.Figure(traces, self._layout(notes), _validate=False)  # built right: 0.7 s to check
        self.notes, self.drawn = notes, drawn
        self._show_selected()

    @staticmethod
    def _delta_trace(name: str, props: dict, dash: str) -> go.Scatter:
        """Withdrawn results or late insertions (out-of-order modes); in the legend only when there are some."""
        props["marker"]["color"] = COLORS[name]
        return go.Scatter(
            _validate=False,
            name=name,
            line={"color": COLORS[name], "dash": dash, "width": 2},
            showlegend=bool(props["x"]),
            **props,
        )

    def _cells(self, bins: int) -> tuple:
        """(bin edges, each event's cell: lane * bins + bin, -1 off the lanes), with every cell's count in
        ``_cell_counts``: made once per stream, lanes and bins (a million events: ~0.1 s, then every redraw
        only takes the drawn events off)."""
        held = self._cell_counts
        if held is None or held[0] is not self.stream or held[1] != (tuple(self.lanes), bins):
            times = self.stream.times
            edges = np.linspace(times.min(), times.max(), bins + 1)
            lane_of_code = np.array([self.lanes.get(t, -1) for t in self.stream.type_names], dtype=np.int64)
            lanes = lane_of_code[self.stream.type_codes]
            where = np.clip(np.searchsorted(edges, times, side="right") - 1, 0, bins - 1)
            cell_of = np.where(lanes >= 0, lanes * bins + where, -1)
            counts = np.bincount(cell_of[cell_of >= 0], minlength=len(self.lanes) * bins)
            self._cell_counts = (self.stream, (tuple(self.lanes), bins), (edges, cell_of), counts)
        return self._cell_counts[2]

    def _bins(self) -> int:
        return max(10, self.max_events // max(len(self.lanes), 1))

    def _density(self, skip: set) -> dict:
        """Unmatched events aggregated per lane into equal time bins; marker area grows with the count."""
        bins = self._bins()
        edges, cell_of = self._cells(bins)
        # every event's (lane, bin) cell is counted once per stream; the matched events drawn are taken off
        counts = self._cell_counts[3].copy()
        skipped = cell_of[np.fromiter(skip, np.int64, len(skip))]
        np.subtract.at(counts, skipped[skipped >= 0], 1)
        cells = np.flatnonzero(counts)
        lane_at, bin_at = np.divmod(cells, bins)
        labels = [self.canvas.time_label(edge) for edge in edges]
        middles = self.canvas.x_values((edges[:-1] + edges[1:]) / 2)
        names = list(self.lanes)
        found = counts[cells].tolist()
        texts = [
            f"{plural(c, 'unmatched ' + html.escape(names[lane]) + ' event')}<br>{labels[i]} to {labels[i + 1]}"
            for c, lane, i in zip(found, lane_at.tolist(), bin_at.tolist())
        ]
        peak = max(found, default=1)
        return {
            "x": [middles[i] for i in bin_at.tolist()],
            "y": lane_at.tolist(),
            "mode": "markers",
            "hovertext": texts,
            "hovertemplate": "%{hovertext}<extra></extra>",
            "marker": {"size": [4 + 14 * (c / peak) ** 0.5 for c in found], "color": COLORS["event density"]},
        }

    def _layout(self, notes: list) -> dict:
        heading = self.title or f"{plural(len(self.stream), 'event')} · {plural(len(self.matches), 'match', 'matches')}"
        withdrawn = sum(m.sign == "-" for m in self.deltas)
        if withdrawn:
            heading += f" · {withdrawn:,} withdrawn"
        text = heading + "".join(f"<br><sup>{html.escape(n)}</sup>" for n in notes)
        return {
            "title": {"text": text, "font": {"size": 14}, "x": 0.01, "xanchor": "left"},
            "height": self.height or min(180 + 45 * len(self.lanes), 560),
            "xaxis": {"title": {"text": self.canvas.axis_title}},
            "yaxis": {**self.canvas.lane_axis(), "title": {"text": "type"}},
            "margin": {"l": 60, "r": 20, "t": 60 + 18 * len(notes), "b": 40},
            "legend": {"itemclick": "toggle", "itemdoubleclick": "toggleothers"},
            "hovermode": "closest",
            "hoverlabel": {"align": "left"},
        }
