"""``AutomatonView``: a query's compiled complex event automaton (CEA, digest 004 §5), stepped event by event.

The drawing follows the paper's Figure 2: states as circles (final states ringed twice, the initial one
entered by a "start" arrow), transitions labelled ``predicate / mark`` with • (the event is marked, it joins
the complex event) drawn solid and ◦ (skipped) dotted. States are laid out in layers by distance from the
initial state (``graph_layout.layered_layout``); parallel transitions are drawn as arcs bending apart and
self-loops as circles above their state, bigger for each further loop.

Stepping replays ``Automaton.steps(events)`` (Algorithm 1 run on the stream): after event ``k`` the active
states light up and the panel lists the partial matches (position tuples) each holds and the matches
completed at that event. Step 0 is the state before any event.
"""
from __future__ import annotations

import html
import itertools
from typing import Optional

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import traitlets

import cepkit

from .execution import as_stream
from .graph_layout import layered_layout
from .timeline import event_text

TRACES = ("• transitions", "◦ transitions", "transition labels", "final states", "states", "active states")
MARK_STYLE = {"•": {"color": "#1f3b57", "dash": "solid"}, "◦": {"color": "#8c96a0", "dash": "dot"}}
LABEL_WIDTH = 28          # characters of an edge label at most (the predicate is cut, the mark kept); the hover shows all
SHOWN_PARTIALS = 8        # partial matches listed per state
# Label placement, in layout units (about 90 px per x unit and 130 per y unit at the usual sizes):
CHAR_WIDTH, LINE_HEIGHT, STATE_BOX = 0.055, 0.1, 0.22
MIN_LABEL = 8             # characters a label keeps however short its edge
LABEL_FRACTIONS = (0.5, 0.38, 0.62, 0.28, 0.72)   # where along an edge a label may stand, best first


def state_name(state) -> str:
    return f"q{state}" if isinstance(state, int) else str(state)


def _bezier(p0, p2, bend: float, samples: int = 17) -> tuple:
    """(points, label position) of the quadratic Bézier from p0 to p2 whose control point is pushed
    ``bend`` (times the distance) to the left of the chord; the label goes on the outer side of the arc."""
    p0, p2 = np.asarray(p0, float), np.asarray(p2, float)
    chord = p2 - p0
    push = bend * np.array([-chord[1], chord[0]])
    t = np.linspace(0, 1, samples)[:, None]
    points = (1 - t) ** 2 * p0 + 2 * (1 - t) * t * ((p0 + p2) / 2 + push) + t ** 2 * p2
    if abs(push[0]) > abs(push[1]):
        return points, "middle right" if push[0] > 0 else "middle left"
    return points, "bottom center" if push[1] < 0 else "top center"


def _loop(center, k: int, upward: bool, samples: int = 25) -> tuple:
    """(points, label position) of the k-th self-loop at a state: a circle standing on (or hanging from)
    it, larger for each further loop."""
    radius = 0.14 + 0.11 * k
    side = 1 if upward else -1
    angles = np.linspace(-np.pi / 2, 3 * np.pi / 2, samples)
    x, y = center
    points = np.column_stack([x + 0.6 * radius * np.cos(angles), y + side * (radius + radius * np.sin(angles))])
    return points, "top center" if upward else "bottom center"


def edge_paths(graph, positions: dict) -> list:
    """``[(edge data, points, label position)]`` for every transition: arcs for parallel, backward and
    layer-skipping edges, loops for self-transitions (hanging below a state whose layer has neighbours only
    above it), straight segments otherwise."""
    groups: dict = {}
    for u, v, data in graph.edges(data=True):
        groups.setdefault((u, v) if u == v else frozenset((u, v)), []).append((u, v, data))
    paths = []
    for edges in groups.values():
        for k, (u, v, data) in enumerate(edges):
            if u == v:
                paths.append((data, *_loop(positions[u], k, _room_above(graph, positions, u))))
                continue
            span = positions[v][0] - positions[u][0]
            centred = k - (len(edges) - 1) / 2
            # a lone edge bends when it runs backwards or skips layers (it would cross the states between)
            lone = 0.2 if span <= 0 else 0.18 if span > 1 else 0.0
            bend = 0.35 * centred + (lone if len(edges) == 1 else 0.0)
            if (u, v) != tuple(sorted((u, v), key=str)):     # one orientation per pair keeps arcs apart
                bend = -bend
            paths.append((data, *_bezier(positions[u], positions[v], bend)))
    return paths


def _box(xy, position: str, width: float, height: float) -> tuple:
    """(x0, y0, x1, y1) of a text of that size placed at ``xy`` with plotly's ``textposition``."""
    x, y = xy
    vertical, horizontal = position.split()
    x0 = {"left": x - width, "center": x - width / 2, "right": x}[horizontal]
    y0 = {"top": y, "middle": y - height / 2, "bottom": y - height}[vertical]
    return x0, y0, x0 + width, y0 + height


def _overlap(a: tuple, b: tuple) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


FLIPPED = {"top center": "bottom center", "bottom center": "top center", "middle left": "middle right",
           "middle right": "middle left"}


def edge_label(predicate: str, mark: str, chars: int = LABEL_WIDTH) -> str:
    """``predicate / mark`` in at most ``chars`` characters: the predicate is cut (…), the mark kept."""
    suffix = f" / {mark}"
    if len(predicate) + len(suffix) <= chars:
        return predicate + suffix
    return predicate[:max(1, chars - len(suffix) - 1)] + "…" + suffix


def _label_anchor(points, position: str, data: dict, placed: list, states: int, loop: bool) -> tuple:
    """(point, textposition, text) of a label: the middle of its edge on the outer side unless that covers
    a state or an earlier label, else the point (a quarter to three quarters of the way) and side that
    cover least, states counting triple; a label longer than its edge that still covers something is cut
    to the edge's length (the hover shows it whole). ``placed`` (the states' boxes first) grows."""
    candidates = [(0.5, position)] if loop else [(f, side) for f in LABEL_FRACTIONS
                                                   for side in (position, FLIPPED[position])]
    text = edge_label(data["predicate"], data["mark"])
    fits = max(MIN_LABEL, int((np.hypot(*(points[-1] - points[0])) - STATE_BOX) / CHAR_WIDTH))
    texts = [text] if loop or len(text) <= fits else [text, edge_label(data["predicate"], data["mark"], fits)]
    best = None
    for shown in texts:
        for fraction, side in candidates:
            xy = tuple(points[int(round(fraction * (len(points) - 1)))])
            box = _box(xy, side, len(shown) * CHAR_WIDTH, LINE_HEIGHT)
            cost = sum(_overlap(box, other) * (3 if k < states else 1) for k, other in enumerate(placed))
            if best is None or cost < best[0] - 1e-12:
                best = (cost, xy, side, shown, box)
            if cost == 0:
                break
        if best[0] == 0:
            break
    placed.append(best[4])
    return best[1], best[2], best[3]


def _room_above(graph, positions: dict, state) -> bool:
    x, y = positions[state]
    near = [positions[n][1] for n in set(graph.predecessors(state)) | set(graph.successors(state))
            if n != state and positions[n][0] == x]
    return not near or any(other < y for other in near)


def automaton_figure(automaton, positions: dict) -> go.Figure:
    """The static drawing: transitions by mark, their labels, states, final rings; "active states" empty."""
    graph = automaton.to_networkx()
    traces = {name: {"x": [], "y": []} for name in TRACES}
    labels = {"x": [], "y": [], "text": [], "hovertext": [], "textposition": []}
    arrows = []
    placed = [_box(xy, "middle center", STATE_BOX, STATE_BOX) for xy in positions.values()]
    for data, points, label_position in edge_paths(graph, positions):
        trace = traces[f"{data['mark']} transitions"]
        trace["x"].extend([*points[:, 0], None])
        trace["y"].extend([*points[:, 1], None])
        label = f"{data['predicate']} / {data['mark']}"
        (x, y), side, shown = _label_anchor(points, label_position, data, placed, len(positions),
                                            loop=np.allclose(points[0], points[-1]))
        labels["x"].append(x)
        labels["y"].append(y)
        labels["text"].append(shown)
        labels["hovertext"].append(html.escape(data.get("label") or label))
        labels["textposition"].append(side)
        tail, head = points[int(len(points) * 0.7)], points[int(len(points) * 0.8)]
        arrows.append(dict(x=head[0], y=head[1], ax=tail[0], ay=tail[1], xref="x", yref="y", axref="x", ayref="y",
                           showarrow=True, arrowhead=2, arrowsize=1.4, arrowwidth=1.2,
                           arrowcolor=MARK_STYLE[data["mark"]]["color"], text=""))
    states = list(graph.nodes)
    finals = [s for s in states if s in automaton.finals]
    x0, y0 = positions[automaton.initial]
    arrows.append(dict(x=x0 - 0.12, y=y0, ax=x0 - 0.45, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                       showarrow=True, arrowhead=2, arrowsize=1.4, text="start", xanchor="right"))
    figure = go.Figure()
    for mark in ("•", "◦"):
        style = MARK_STYLE[mark]
        figure.add_scatter(name=f"{mark} transitions", mode="lines", hoverinfo="skip",
                           line={"color": style["color"], "dash": style["dash"], "width": 1.6},
                           **traces[f"{mark} transitions"])
    figure.add_scatter(name="transition labels", mode="text", textfont={"size": 10},
                       hovertemplate="%{hovertext}<extra></extra>", **labels)
    figure.add_scatter(name="final states", mode="markers", hoverinfo="skip",
                       x=[positions[s][0] for s in finals], y=[positions[s][1] for s in finals],
                       marker={"size": 40, "color": "white", "line": {"color": "#1f3b57", "width": 2}})
    figure.add_scatter(name="states", mode="markers+text", text=[state_name(s) for s in states],
                       x=[positions[s][0] for s in states], y=[positions[s][1] for s in states],
                       hovertext=[_state_hover(automaton, s) for s in states],
                       hovertemplate="%{hovertext}<extra></extra>",
                       marker={"size": 30, "color": "#f2f5f8", "line": {"color": "#1f3b57", "width": 2}})
    figure.add_scatter(name="active states", mode="markers+text", x=[], y=[], text=[], hoverinfo="skip",
                       marker={"size": 30, "color": "#ffb000", "line": {"color": "#7a4f00", "width": 2}})
    width = max(x for x, _ in positions.values()) + 1
    height = max((abs(y) for _, y in positions.values()), default=0) + 0.8    # room for loops and labels
    figure.update_layout(annotations=arrows, showlegend=False, plot_bgcolor="white", hovermode="closest",
                         height=int(100 + 130 * 2 * height), margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         xaxis={"visible": False, "range": [-0.7, width]},
                         yaxis={"visible": False, "range": [-height, height]})
    return figure


def _state_hover(automaton, state) -> str:
    roles = [r for r, yes in (("initial", state == automaton.initial), ("final", state in automaton.finals)) if yes]
    return f"state {state_name(state)}" + (f" ({', '.join(roles)})" if roles else "")


def _positions_of(found) -> tuple:
    return tuple(found.positions) if hasattr(found, "positions") else tuple(found)


class AutomatonView(widgets.VBox):
    """The compiled automaton of a query, with a slider (and play / step buttons) walking ``events``.

    Parameters
    ----------
    query : str, ``cepkit.Query`` or an automaton
        A query is compiled with ``cepkit.automaton(query, hierarchy)``; an already compiled automaton
        (anything with ``states``, ``initial``, ``finals``, ``transitions``, ``to_networkx`` and ``steps``)
        is drawn as is.
    events : optional
        The stream to step through (DataFrame, dicts or Events); only its first ``max_steps`` events.
    """

    step = traitlets.Int(0, help="events read so far: 0 is the start, k is after the event at position k-1")

    def __init__(self, query, events=None, hierarchy=None, max_steps: int = 200):
        self.automaton = query if hasattr(query, "steps") else cepkit.automaton(query, hierarchy)
        self.positions = layered_layout(self.automaton.to_networkx(), self.automaton.initial)
        self.figure = go.FigureWidget(automaton_figure(self.automaton, self.positions))
        self.summary = widgets.HTML(self._summary())
        self.panel = widgets.HTML()
        children = [self.summary, self.figure]
        self.steps = []
        self.notes = []
        if events is not None:
            stream = as_stream(events)
            self.steps = list(itertools.islice(self.automaton.steps(stream.events), max_steps))
            if len(stream) > max_steps:
                self.notes.append(f"stepping through the first {max_steps} of {len(stream):,} events")
            children.append(self._controls())
        children.append(self.panel)
        super().__init__(children)
        self._show_step()

    def trace(self, name: str):
        """The figure's trace called ``name`` (one of ``TRACES``)."""
        return self.figure.data[TRACES.index(name)]

    def __repr__(self):
        return (f"AutomatonView(states={len(self.automaton.states)}, transitions={len(self.automaton.transitions)}, "
                f"step={self.step}/{len(self.steps)})")

    # ------------------------------------------------------------------ controls
    def _controls(self) -> widgets.HBox:
        last = len(self.steps)
        self.slider = widgets.IntSlider(value=0, min=0, max=last, description="events read",
                                        style={"description_width": "initial"}, continuous_update=True)
        self.play = widgets.Play(value=0, min=0, max=last, interval=800, description="play")
        self.back = widgets.Button(description="◀ step", layout={"width": "80px"})
        self.forward = widgets.Button(description="step ▶", layout={"width": "80px"})
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        widgets.link((self.slider, "value"), (self, "step"))
        self.back.on_click(lambda _: self._move(-1))
        self.forward.on_click(lambda _: self._move(+1))
        return widgets.HBox([self.play, self.back, self.slider, self.forward])

    def _move(self, delta: int) -> None:
        self.step = min(max(self.step + delta, 0), len(self.steps))

    @traitlets.validate("step")
    def _check_step(self, proposal):
        k = proposal["value"]
        if not 0 <= k <= len(self.steps):
            raise traitlets.TraitError(f"step must be in 0..{len(self.steps)}, got {k}")
        return k

    @traitlets.observe("step")
    def _on_step(self, change):
        self._show_step()

    # ------------------------------------------------------------------ display
    def active(self) -> dict:
        """state -> partial matches (position tuples) after ``step`` events; the start holds one empty run."""
        if self.step == 0:
            return {self.automaton.initial: [()]}
        return self.steps[self.step - 1].active

    def _show_step(self) -> None:
        active = [s for s, partial in self.active().items() if partial]
        self.trace("active states").update(x=[self.positions[s][0] for s in active],
                                           y=[self.positions[s][1] for s in active],
                                           text=[state_name(s) for s in active])
        self.panel.value = self._step_html() if self.steps else ""

    def _summary(self) -> str:
        a = self.automaton
        finals = ", ".join(state_name(s) for s in sorted(a.finals, key=str))
        return (f"<b>{len(a.states)} states, {len(a.transitions)} transitions</b>; initial "
                f"{state_name(a.initial)}, final {finals or 'none'}. Solid: • marks the event; dotted: ◦ skips it.")

    def _step_html(self) -> str:
        notes = "".join(f"<br><small>{html.escape(n)}</small>" for n in self.notes)
        if self.step == 0:
            head = f"<b>start</b>: no event read yet ({len(self.steps)} to step through){notes}"
            completed = []
            truncated = False
        else:
            step = self.steps[self.step - 1]
            head = f"<b>after event {step.position}</b>: {event_text(step.event)}{notes}"
            completed = [_positions_of(m) for m in step.matches]
            truncated = bool(step.truncated)
        rows = []
        for state, partial in sorted(self.active().items(), key=lambda item: str(item[0])):
            if not partial:
                continue
            shown = ", ".join(str(_positions_of(p)) for p in partial[:SHOWN_PARTIALS])
            more = f" … and {len(partial) - SHOWN_PARTIALS} more" if len(partial) > SHOWN_PARTIALS else ""
            rows.append(f"<tr><td>{state_name(state)}</td><td>{len(partial)}</td><td>{shown}{more}</td></tr>")
        table = ("<table class='cepkit-active'><tr><th>active state</th><th>runs</th><th>partial matches "
                 f"(positions)</th></tr>{''.join(rows)}</table>")
        done = (f"<b>completed here</b>: {', '.join(str(c) for c in completed)}" if completed
                else "no match completes here")
        cut = "<br><small>(the engine truncated the partial-match lists of this step)</small>" if truncated else ""
        return f"{head}{table}{done}{cut}"
