"""``AutomatonView``: a query's compiled complex event automaton (CEA, [CEL] §6-7), stepped event by event.

The drawing follows the paper's Figure 2: states as circles sized to their names (final states ringed
twice, the initial one entered by a "start" arrow), transitions labelled ``predicate / mark`` with • (the
event is marked, it joins the complex event) drawn solid and ◦ (skipped) dotted. Graphviz ``dot`` lays it
out left to right and places every label clear of the others and of the states
(``graph_layout.graph_drawing``; without ``dot``, a layered layout whose labels may touch).

Stepping replays ``Automaton.steps(events)`` (Algorithm 1 run on the stream): after event ``k`` the active
states light up, the transitions a run took on that event are drawn thick and orange and the states they
entered ringed, and the panel lists the partial matches (position lists, with their PARTITION BY key) each
state holds and the matches completed at that event. Step 0 is the state before any event.
"""

from __future__ import annotations

import html
import itertools
import re
import textwrap
from typing import Optional

import ipywidgets as widgets
import plotly.graph_objects as go
import traitlets

import cepkit

from .execution import as_stream
from .figures import TABLE_CSS, PlotlyView, full_width
from .graph_layout import FONT, arrowhead, edge_lines, graph_drawing, natural_width
from .timeline import EventCanvas, event_text

TRACES = (
    "• transitions",
    "◦ transitions",
    "fired transitions",
    "transition labels",
    "final states",
    "states",
    "active states",
    "entered states",
)
MARK_STYLE = {"•": {"color": "#1f3b57", "dash": "solid"}, "◦": {"color": "#8c96a0", "dash": "dot"}}
FIRED_COLOR, ENTERED_COLOR = "#e07000", "#c0392b"
FONT_SIZE = 12
LABEL_LINE = 18  # characters per line of an edge label (it wraps at spaces)
LABEL_LINES = 3  # lines at most; the rest is cut (…), the hover shows it whole
SHOWN_PARTIALS = 8  # partial matches listed per state
RING = 4  # points between a final state's two rings
START_ARROW = 34  # points: the length of the "start" arrow
START = START_ARROW + 44  # points left of the drawing for the "start" arrow and its label
# Text keeps its size when plotly shrinks a figure to its container, so a drawing wider than a notebook's
# output (about 900 px beside JupyterLab's file browser) would crowd its labels: it is laid top to bottom
# instead when that is narrower.
MAX_WIDTH = 860


def state_name(state) -> str:
    return f"q{state}" if isinstance(state, int) else str(state)


def natural_key(name: str) -> list:
    """Sort key reading digit runs as numbers: q2 before q10.

    >>> sorted(["q10", "q2", "q1", "{b,c}"], key=natural_key)
    ['q1', 'q2', 'q10', '{b,c}']
    """
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name) if part]


def edge_label(predicate: str, mark: str) -> str:
    """``predicate / mark``, the predicate wrapped at spaces into lines of about ``LABEL_LINE`` characters,
    at most ``LABEL_LINES`` of them (the last cut with …); the mark ends the last line.

    >>> edge_label("DELAYED_DEPARTURE ∧ dep_delay >= 60", "•")
    'DELAYED_DEPARTURE\\n∧ dep_delay >= 60 / •'
    """
    lines = textwrap.wrap(predicate, LABEL_LINE, break_long_words=False, break_on_hyphens=False) or [predicate]
    if len(lines) > LABEL_LINES:
        lines = lines[:LABEL_LINES]
        lines[-1] += " …"
    lines[-1] += f" / {mark}"
    return "\n".join(lines)


def run_text(positions, key=None) -> str:
    """A run as the list of the positions it marked, with its PARTITION BY key when it has one.

    >>> run_text((3, 7)), run_text(()), run_text((7,), {"origin": "JFK"})
    ('[3, 7]', '[]', '[7] origin=JFK')
    """
    shown = f"[{', '.join(str(p) for p in positions)}]"
    return shown + (" " + ", ".join(f"{k}={v}" for k, v in key.items()) if key else "")


def fired_transitions(edges: list, before: dict, after: dict, position: int, initial) -> list:
    """Indices of the ``edges`` ((tail, head, mark)) some run took reading the event at ``position``: a •
    edge when ``head`` holds a run ending at ``position`` whose prefix ``tail`` held before, a ◦ edge when
    ``head`` holds a run without ``position`` that ``tail`` held before. Runs are position tuples; the
    empty run is always at ``initial`` (every new PARTITION BY key starts there).

    >>> fired_transitions([(0, 0, "◦"), (0, 1, "•"), (1, 1, "•")], {0: [()]}, {0: [()], 1: [(4,)]}, 4, 0)
    [0, 1]
    """
    held = {state: set(runs) for state, runs in before.items()}
    held.setdefault(initial, set()).add(())
    found = []
    for k, (tail, head, mark) in enumerate(edges):
        sources = held.get(tail, set())
        if mark == "•":
            took = any(run and run[-1] == position and run[:-1] in sources for run in after.get(head, ()))
        else:
            took = any(position not in run and run in sources for run in after.get(head, ()))
        if took:
            found.append(k)
    return found


def automaton_figure(automaton, drawing) -> go.Figure:
    """The static drawing of ``drawing`` (``graph_drawing`` of the automaton): transitions by mark, their
    labels, states and final rings; "fired transitions", "active states" and "entered states" empty."""
    graph = automaton.to_networkx()
    edges = list(graph.edges(data=True))
    figure = go.Figure()
    for mark in ("•", "◦"):
        style = MARK_STYLE[mark]
        figure.add_scatter(
            name=f"{mark} transitions",
            mode="lines",
            hoverinfo="skip",
            line={"color": style["color"], "dash": style["dash"], "width": 1.4},
            **edge_lines(p for p, (*_, d) in zip(drawing.edges, edges) if d["mark"] == mark),
        )
    figure.add_scatter(
        name="fired transitions", mode="lines", hoverinfo="skip", x=[], y=[], line={"color": FIRED_COLOR, "width": 4}
    )
    figure.add_scatter(
        name="transition labels",
        mode="text",
        textposition="middle center",
        textfont={"size": FONT_SIZE, "family": FONT, "color": "#1f3b57"},
        x=[p.label[0] for p in drawing.edges],
        y=[p.label[1] for p in drawing.edges],
        text=[edge_label(d["predicate"], d["mark"]).replace("\n", "<br>") for *_, d in edges],
        hovertext=[html.escape(d.get("label") or f"{d['predicate']} / {d['mark']}") for *_, d in edges],
        hovertemplate="%{hovertext}<extra></extra>",
    )
    states = list(graph.nodes)
    finals = [s for s in states if s in automaton.finals]
    node = drawing.nodes
    figure.add_scatter(
        name="final states",
        mode="markers",
        hoverinfo="skip",
        x=[node[s].x for s in finals],
        y=[node[s].y for s in finals],
        marker={"size": [node[s].size for s in finals], "color": "white", "line": {"color": "#1f3b57", "width": 1.5}},
    )
    figure.add_scatter(
        name="states",
        mode="markers+text",
        text=[state_name(s) for s in states],
        x=[node[s].x for s in states],
        y=[node[s].y for s in states],
        textfont={"size": FONT_SIZE, "family": FONT},
        hovertext=[_state_hover(automaton, s) for s in states],
        hovertemplate="%{hovertext}<extra></extra>",
        marker={
            "size": [_inner(drawing, automaton, s) for s in states],
            "color": "#f2f5f8",
            "line": {"color": "#1f3b57", "width": 1.5},
        },
    )
    figure.add_scatter(
        name="active states",
        mode="markers+text",
        x=[],
        y=[],
        text=[],
        hoverinfo="skip",
        textfont={"size": FONT_SIZE, "family": FONT},
        marker={"color": "#ffb000", "line": {"color": "#7a4f00", "width": 1.5}},
    )
    figure.add_scatter(
        name="entered states",
        mode="markers",
        x=[],
        y=[],
        hoverinfo="skip",
        marker={"color": "rgba(0,0,0,0)", "line": {"color": ENTERED_COLOR, "width": 3}},
    )
    arrows = [
        arrowhead(p.tip, p.points[-1], MARK_STYLE[d["mark"]]["color"], 1.4) for p, (*_, d) in zip(drawing.edges, edges)
    ]
    start = node[automaton.initial]
    left = start.x - start.size / 2
    arrows.append(
        arrowhead((left, start.y), (left - START_ARROW, start.y), "#1f3b57", 1.4, text="start", xanchor="right")
    )
    margin = {"l": 10, "r": 10, "t": 10, "b": 10}
    figure.update_layout(
        annotations=arrows,
        showlegend=False,
        plot_bgcolor="white",
        hovermode="closest",
        dragmode=False,
        height=int(drawing.height) + margin["t"] + margin["b"],
        margin=margin,
        font={"family": FONT},
        xaxis={"visible": False, "range": [-START, drawing.width], "fixedrange": True},
        yaxis={"visible": False, "range": [0, drawing.height], "scaleanchor": "x", "scaleratio": 1, "fixedrange": True},
    )
    figure.update_traces(cliponaxis=False)  # a circle at the drawing's edge spills into the margin, not cut
    return figure


def _inner(drawing, automaton, state) -> float:
    """The diameter of a state's circle: a final state's inner ring is inside its outer one."""
    return drawing.nodes[state].size - (2 * RING if state in automaton.finals else 0)


def _state_hover(automaton, state) -> str:
    roles = [r for r, yes in (("initial", state == automaton.initial), ("final", state in automaton.finals)) if yes]
    return f"state {html.escape(state_name(state))}" + (f" ({', '.join(roles)})" if roles else "")


def _positions_of(found) -> tuple:
    return tuple(found.positions) if hasattr(found, "positions") else tuple(found)


def automaton_drawing(automaton):
    """``graph_drawing`` of an automaton: states named, transitions labelled, final states ringed; left to
    right, or top to bottom when that fits ``MAX_WIDTH`` better."""
    graph = automaton.to_networkx()

    def drawing(rankdir):
        return graph_drawing(
            {s: state_name(s) for s in graph.nodes},
            [(u, v, edge_label(d["predicate"], d["mark"])) for u, v, d in graph.edges(data=True)],
            rankdir=rankdir,
            source=automaton.initial,
            fontsize=FONT_SIZE,
            rings=frozenset(automaton.finals),
        )

    across = drawing("LR")
    if across.width + START <= MAX_WIDTH:
        return across
    down = drawing("TB")
    return down if down.width + START < across.width + START else across


class AutomatonView(widgets.VBox):
    """The compiled automaton of a query, with a slider (and play / step buttons) walking ``events``.

    Parameters
    ----------
    query : str, ``cepkit.Query`` or an automaton
        A query is compiled with ``cepkit.automaton(query, hierarchy)``; an already compiled automaton
        (anything with ``states``, ``initial``, ``finals``, ``transitions``, ``to_networkx`` and ``steps``)
        is drawn as is.
    events : optional
        The stream to step through (DataFrame, dicts or Events); ``max_steps`` of its events: the first ones,
        or, with ``around`` (a match's positions) beyond them, those around it (opened at its first event).
    tz : str, optional
        The time zone of the stepped events' times (as ``MatchTimeline``'s; UTC by default).
    """

    step = traitlets.Int(0, help="events read so far: 0 is the start, k is after the event at position k-1")

    def __init__(self, query, events=None, hierarchy=None, max_steps: int = 200, around=None, tz: Optional[str] = None):
        self.automaton = query if hasattr(query, "steps") else cepkit.automaton(query, hierarchy)
        self.drawing = automaton_drawing(self.automaton)
        self.edges = [(u, v, d["mark"]) for u, v, d in self.automaton.to_networkx().edges(data=True)]
        query_of = getattr(self.automaton, "query", None)
        self.partition_by = tuple(getattr(query_of, "partition_by", None) or ())
        self.figure = automaton_figure(self.automaton, self.drawing)
        self.plot = PlotlyView(min_width=natural_width(self.figure))
        self.summary = widgets.HTML(self._summary())
        self.panel = widgets.HTML()
        children = [self.summary, self.plot]
        self.steps = []
        self.times: dict = {}  # position -> the stepped event's time, in tz
        self.notes = []
        start = 0
        if events is not None:
            stream = as_stream(events)
            start = self._first_step(stream, max_steps, around)
            shown = stream.take(slice(start, start + max_steps))  # only these become Event objects
            self.steps = list(itertools.islice(self.automaton.steps(shown), max_steps))
            canvas = EventCanvas(stream, tz)  # each stepped event's time said as the timeline says it
            self.times = {step.position: "ts " + canvas.time_label(t) for step, t in zip(self.steps, shown.times)}
            if start:
                self.notes.append(
                    f"stepping through events {start:,}-{start + len(self.steps) - 1:,} of "
                    f"{len(stream):,}, around the picked match, from the start state (runs begun "
                    "before them are not shown)"
                )
            elif len(stream) > max_steps:
                self.notes.append(f"stepping through the first {max_steps} of {len(stream):,} events")
            children.append(self._controls())
        self.events = {step.position: step.event for step in self.steps}
        children.append(self.panel)
        super().__init__(children, layout=full_width())
        self.add_class("cepkit-automaton-view")
        self._show_step()
        if start and around:  # open at the picked match's first event
            self.step = min(max(int(min(around)) - start + 1, 0), len(self.steps))

    @staticmethod
    def _first_step(stream, max_steps: int, around) -> int:
        """Where the stepped events begin: 0, or a quarter of ``max_steps`` before the positions ``around``
        (a picked match) when they lie beyond the first ``max_steps`` events."""
        if not around or len(stream) <= max_steps or max(around) < max_steps:
            return 0
        first = int(min(around)) - max_steps // 4
        return max(0, min(first, len(stream) - max_steps))

    def trace(self, name: str):
        """The figure's trace called ``name`` (one of ``TRACES``)."""
        return self.figure.data[TRACES.index(name)]

    def __repr__(self):
        return (
            f"AutomatonView(states={len(self.automaton.states)}, transitions={len(self.automaton.transitions)}, "
            f"step={self.step}/{len(self.steps)})"
        )

    # ------------------------------------------------------------------ controls
    def _controls(self) -> widgets.HBox:
        last = len(self.steps)
        self.slider = widgets.IntSlider(
            value=0,
            min=0,
            max=last,
            description="events read",
            style={"description_width": "initial"},
            continuous_update=True,
            layout={"width": "420px"},
        )
        self.play = widgets.Play(value=0, min=0, max=last, interval=800, description="play")
        self.back = widgets.Button(description="◀ step", layout={"width": "80px", "flex": "none"})
        self.forward = widgets.Button(description="step ▶", layout={"width": "80px", "flex": "none"})
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        widgets.link((self.slider, "value"), (self, "step"))
        self.back.on_click(lambda _: self._move(-1))
        self.forward.on_click(lambda _: self._move(+1))
        return widgets.HBox(
            [self.play, self.back, self.slider, self.forward], layout={"flex_flow": "row wrap"}
        )  # in a narrow output, on two rows

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
    def active(self, step: int = None) -> dict:
        """state -> partial matches (position tuples) after ``step`` events (by default the current
        step); the start holds one empty run."""
        step = self.step if step is None else step
        if step == 0:
            return {self.automaton.initial: [()]}
        return self.steps[step - 1].active

    def fired(self) -> list:
        """Indices (in ``self.edges``) of the transitions runs took on the last event read."""
        if self.step == 0:
            return []
        runs = [
            {s: [_positions_of(r) for r in rs] for s, rs in self.active(k).items()} for k in (self.step - 1, self.step)
        ]
        return fired_transitions(self.edges, *runs, self.steps[self.step - 1].position, self.automaton.initial)

    def entered(self) -> list:
        """States a run entered on the last event (a ◦ loop, which leaves a run where it was, enters nothing)."""
        heads = {
            self.edges[k][1]
            for k in self.fired()
            if not (self.edges[k][0] == self.edges[k][1] and self.edges[k][2] == "◦")
        }
        return [s for s in self.drawing.nodes if s in heads]

    def _show_step(self) -> None:
        node = self.drawing.nodes
        active = [s for s, partial in self.active().items() if partial]
        entered = self.entered()
        self.trace("active states").update(
            x=[node[s].x for s in active],
            y=[node[s].y for s in active],
            text=[state_name(s) for s in active],
            marker={"size": [_inner(self.drawing, self.automaton, s) for s in active]},
        )
        self.trace("entered states").update(
            x=[node[s].x for s in entered],
            y=[node[s].y for s in entered],
            marker={"size": [node[s].size + 6 for s in entered]},
        )
        self.trace("fired transitions").update(**edge_lines(self.drawing.edges[k] for k in self.fired()))
        self.plot.show(self.figure)
        self.panel.value = self._step_html() if self.steps else ""

    def _summary(self) -> str:
        a = self.automaton
        finals = ", ".join(sorted((state_name(s) for s in a.finals), key=natural_key))
        return (
            f"<b>{len(a.states)} states, {len(a.transitions)} transitions</b>; initial "
            f"{html.escape(state_name(a.initial))}, final {html.escape(finals) or 'none'}. Solid: • marks the "
            "event; dotted: ◦ skips it. While stepping: <span style='color:#b87800'>●</span> active states, "
            f"<span style='color:{FIRED_COLOR}'>▬</span> transitions taken on the last event, "
            f"<span style='color:{ENTERED_COLOR}'>○</span> states they entered."
        )

    def _run(self, found) -> str:
        positions = _positions_of(found)
        first = self.events.get(positions[0]) if positions and self.partition_by else None
        key = {k: first.get(k) for k in self.partition_by} if first is not None else None
        return html.escape(run_text(positions, key))

    def _step_html(self) -> str:
        notes = "".join(f"<br><small>{html.escape(n)}</small>" for n in self.notes)
        if self.step == 0:
            head = f"<b>start</b>: no event read yet ({len(self.steps)} to step through){notes}"
            completed, truncated, taken = [], False, ""
        else:
            step = self.steps[self.step - 1]
            head = f"<b>after event {step.position}</b>: {event_text(step.event, self.times.get(step.position))}{notes}"
            completed = step.matches
            truncated = bool(step.truncated)
            moves = [
                f"{state_name(u)} → {state_name(v)} ({mark})" for u, v, mark in (self.edges[k] for k in self.fired())
            ]
            taken = f"<br>taken: {html.escape(', '.join(moves))}" if moves else "<br>no run took a transition"
        rows = []
        for state, partial in sorted(self.active().items(), key=lambda item: natural_key(state_name(item[0]))):
            if not partial:
                continue
            shown = ", ".join(self._run(p) for p in partial[:SHOWN_PARTIALS])
            more = f" … and {len(partial) - SHOWN_PARTIALS} more" if len(partial) > SHOWN_PARTIALS else ""
            rows.append(
                f"<tr><td>{html.escape(state_name(state))}</td><td class='num'>{len(partial)}</td><td>{shown}{more}</td></tr>"
            )
        table = (
            f"{TABLE_CSS}<table class='cepkit-table cepkit-active'><tr><th>active state</th><th class='num'>"
            f"runs</th><th>partial matches (positions)</th></tr>{''.join(rows)}</table>"
        )
        done = (
            f"<b>completed here</b>: {', '.join(self._run(c) for c in completed)}"
            if completed
            else "no match completes here"
        )
        cut = "<br><small>(the engine truncated the partial-match lists of this step)</small>" if truncated else ""
        return f"{head}{taken}{table}{done}{cut}"
