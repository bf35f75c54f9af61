"""``ECubeView``: the E-Cube lattice of a set of queries, the plan Chase chose, and OLAP drill-down / roll-up
([LIU] ch. 4 and §7, items 1-2).

Queries are drawn by level of generality (Graphviz ``dot`` ranks the lattice top to bottom, the most
general on top, and places every label clear of the others; ``graph_layout.graph_drawing``), under the
virtual query v0 that stands for "from scratch". Grey lines are the refinement relations, coloured by kind
(concept, pattern, both); the thick arrows are the evaluation plan, one per query, from the query (or v0)
whose results it reuses, labelled with the direction (g→s, s→g, scratch) and the cost-model estimate. A
query kept from an earlier run costs nothing ("cached 0"): its arrow from v0 is hidden unless *kept
results' arrows* is ticked; *every candidate edge* shows all of Chase's graph, each edge with its direction
and cost. The hover of a query shows its text, its matches and how it was computed; the diamond on a
relation shows the OLAP operation it stands for (``TX → D at 1``, ``insert !D at 2``).

Pick a query and an operation (a concept one level finer or coarser at a position, an item removed, or
an item typed in to insert) and press *drill down* / *roll up*: the cube adds the new query, re-plans with
the kept results at no cost, answers it, and the drawing updates. The sliders explore the cost model
([LIU] Table 4.1): Pt, the condition selectivity P and one type's rate; the plan Chase would choose under
them is drawn (nothing runs) until *the plan that ran* brings the real one back. Only the public API is used:
``cepkit.ECube`` (``run``, ``graph``, ``last_plan``, ``drill_down``, ``roll_up``, ``stream``).

``ECubeView.from_batches(cube, batches)`` is the same view over a stream in micro-batches
(``ECube.stream``): the counts and the plan update after every batch, with a ``LiveView`` of the stream
below.
"""

from __future__ import annotations

import dataclasses
import html
import time
from typing import Optional

import ipywidgets as widgets
import networkx as nx
import pandas as pd
import plotly.graph_objects as go

import cepkit

from .execution import as_stream
from .figures import TABLE_CSS, PlotlyView, full_width
from .graph_layout import FONT, arrowhead, edge_lines, graph_drawing, natural_width
from .live import LiveView

ROOT = "v0"
TRACES = (
    "concept edges",
    "pattern edges",
    "both edges",
    "candidate edges",
    "candidate labels",
    "plan edges",
    "plan labels",
    "relations",
    "queries",
)
KIND_COLOR = {"concept": "#7fa7c9", "pattern": "#c9a27f", "both": "#a58fc0"}
PLAN_COLOR = "#e07000"
FONT_SIZE = 12
HELP = (
    "<small>Cost model ([LIU] Table 4.1), explored without running anything: <b>Pt</b> is the "
    "time-order selectivity, the chance that an event of one item comes before one of the next (½ for "
    "random order); <b>P</b> is the selectivity of one condition between two items (1 = no condition); "
    "<b>× rate</b> scales how often the chosen type occurs. The plan Chase would choose under them is "
    "drawn; <i>the plan that ran</i> brings the real one back.</small>"
)


def lattice_layout(graph: nx.DiGraph) -> dict:
    """name -> (x, y) of the lattice alone (v0 on top, general above specific), as ``ECubeView`` lays it out."""
    drawing, *_ = lattice_drawing(graph, [])
    return {name: (node.x, node.y) for name, node in drawing.nodes.items()}


def lattice_drawing(graph: nx.DiGraph, extra: list):
    """``graph_drawing`` of v0, the lattice's edges (unlabelled, they rank the queries) and the ``extra``
    edges ``[(source, query, label)]`` of the plan and Chase's graph: an extra edge along a lattice edge
    takes its place (one line, labelled), the others do not rank the queries."""
    edges = [(u, v, "") for u, v in graph.edges]
    roots = [n for n in graph.nodes if graph.in_degree(n) == 0]
    edges += [(ROOT, n, "") for n in roots]
    index = {(u, v): k for k, (u, v, _) in enumerate(edges)}
    loose = set()
    for u, v, label in extra:
        if (u, v) in index and not edges[index[u, v]][2]:
            edges[index[u, v]] = (u, v, label)
        else:
            index.setdefault((u, v), len(edges))
            loose.add(len(edges))
            edges.append((u, v, label))
    names = [ROOT, *graph.nodes]
    drawing = graph_drawing(
        {n: n for n in names}, edges, rankdir="TB", source=ROOT, fontsize=FONT_SIZE, loose=frozenset(loose)
    )
    return drawing, edges, {(u, v): drawing.edges[k] for k, (u, v, _) in enumerate(edges)}


def relation_text(cube, general: str, specific: str) -> str:
    """The OLAP operation a lattice edge stands for ([LIU] §4.2): the concepts it refines and the
    items it inserts, 1-based positions of the specific query ([LIU] Ex 9)."""
    data = cube.graph.edges[general, specific]
    g_items, s_items = cube.shapes[general].items, cube.shapes[specific].items
    embedding = data["refinement"].embedding
    parts = [
        f"{g_items[g]} → {s_items[s]} at {s + 1}" for g, s in enumerate(embedding) if not g_items[g].same_as(s_items[s])
    ]
    parts += [f"insert {item} at {k + 1}" for k, item in enumerate(s_items) if k not in embedding]
    return f"{general} → {specific} ({data['kind']} drill-down): " + "; ".join(parts)


def parse_insertion(text: str) -> tuple:
    """``(item, position)`` from the typed "item position" (``!D 2``, ``D n 3``); a ``ValueError`` that
    says what to type otherwise.

    >>> parse_insertion("!D n 2")
    ('!D n', 2)
    >>> parse_insertion("foo")
    Traceback (most recent call last):
    ...
    ValueError: type an item and the 1-based position to insert it at, e.g. "!D 2" or "D d 3" (got "foo")
    """
    item, _, position = text.strip().rpartition(" ")
    if not item.strip() or not position.isdigit() or int(position) < 1:
        raise ValueError(
            f'type an item and the 1-based position to insert it at, e.g. "!D 2" or "D d 3" (got "{text.strip()}")'
        )
    return item.strip(), int(position)


class ECubeView(widgets.VBox):
    """The lattice of ``cube`` over ``events``, its plan, and drill-down / roll-up buttons.

    Parameters
    ----------
    cube : ``cepkit.ECube``, or a mapping name -> query (then ``hierarchy`` builds the cube)
    events : the stream the cube runs on (DataFrame, dicts or Events); None shows a cube that has already
        run, with its kept results
    """

    def __init__(self, cube, events=None, hierarchy=None):
        self.cube = cube if isinstance(cube, cepkit.ECube) else cepkit.ECube(cube, hierarchy)
        if events is not None:
            self.results = self.cube.run(as_stream(events))
        elif self.cube.results and self.cube.last_plan is not None:
            self.results = self.cube.results
        else:
            raise ValueError("ECubeView needs events, or a cube that has run")
        self.counts = {name: len(m) for name, m in self.results.items()}
        self.streaming: Optional[cepkit.ecube.StreamingCube] = None  # set by ``from_batches``
        self.live: Optional[LiveView] = None
        self.figure = self._empty_figure()
        self.plot = PlotlyView()
        wide = {"description_width": "initial"}
        self.query_picker = widgets.Dropdown(
            description="query", options=list(self.cube.queries), style=wide, layout={"width": "max-content"}
        )
        self.operation = widgets.Dropdown(
            description="operation", style=wide, layout={"width": "max-content", "max_width": "calc(100% - 4px)"}
        )  # long labels: in a narrow output, cut (its margins are 2 px) rather than past the edge
        self.insert = widgets.Text(
            placeholder="item and position, e.g. !D 2", description="or insert", style=wide, layout={"width": "280px"}
        )
        self.drill_button = widgets.Button(description="drill down", icon="arrow-down", layout={"width": "auto"})
        self.roll_button = widgets.Button(description="roll up", icon="arrow-up", layout={"width": "auto"})
        self.show_candidates = widgets.Checkbox(
            description="every candidate edge (Chase's graph)", value=False, indent=False, layout={"width": "auto"}
        )
        self.show_cached = widgets.Checkbox(
            description="kept results' arrows (cached, cost 0)", value=False, indent=False, layout={"width": "auto"}
        )
        self.what_if_plan = None  # a plan under the sliders' statistics and costs, when they moved
        units, types = self.cube.units, sorted(self.cube.statistics.type_counts)
        self.pt = widgets.FloatSlider(
            value=units.Pt,
            min=0.05,
            max=0.95,
            step=0.05,
            description="Pt",
            style=wide,
            tooltip="time-order selectivity: the chance an event of one item comes before one of the next",
        )
        self.selectivity = widgets.FloatSlider(
            value=units.P,
            min=0.05,
            max=1.0,
            step=0.05,
            description="P",
            style=wide,
            tooltip="selectivity of one condition between two items",
        )
        self.rate_type = widgets.Dropdown(
            options=types, description="rate of", style=wide, layout={"width": "max-content"}
        )
        self.rate = widgets.FloatLogSlider(
            value=1.0,
            base=10,
            min=-1,
            max=1,
            step=0.1,
            description="× rate",
            style=wide,
            tooltip="how often the chosen type occurs, scaled",
        )
        self.reset = widgets.Button(description="the plan that ran", icon="undo", layout={"width": "auto"})
        for control in (self.pt, self.selectivity, self.rate_type, self.rate):
            control.observe(lambda _: self.explore(), names="value")
        self.reset.on_click(lambda _: self._reset_what_if())
        self.status = widgets.HTML()
        self.table = widgets.HTML()
        self.query_picker.observe(lambda _: self._refresh_operations(), names="value")
        for toggle in (self.show_candidates, self.show_cached):
            toggle.observe(lambda _: self._draw_plan(), names="value")
        self.drill_button.on_click(lambda _: self.apply("drill_down"))
        self.roll_button.on_click(lambda _: self.apply("roll_up"))
        wrap = widgets.Layout(flex_flow="row wrap", align_items="center")
        controls = widgets.HBox(
            [self.query_picker, self.operation, self.insert, self.drill_button, self.roll_button], layout=wrap
        )
        toggles = widgets.HBox([self.show_cached, self.show_candidates], layout=wrap)
        explorer = widgets.HBox([self.pt, self.selectivity, self.rate_type, self.rate, self.reset], layout=wrap)
        super().__init__(
            [self.plot, controls, toggles, explorer, widgets.HTML(HELP), self.status, self.table], layout=full_width()
        )
        self.add_class("cepkit-ecube-view")
        self._redraw()

    @classmethod
    def from_batches(
        cls, cube, batches, *, keep: bool = False, show: Optional[str] = None, view: Optional[dict] = None
    ) -> "ECubeView":
        """A view of ``cube`` over a stream in micro-batches (DataFrames or lists of event dicts, e.g.
        ``cepkit.widgets.live.replay``), fed through ``cube.stream(keep=keep)``: the first batch now, the others
        by ``run()`` (this thread) or ``start()`` (a background thread; Stop ends either). After each batch the
        table and the hovers count every query's matches so far, the plan is redrawn as Chase adapts it, and
        a ``LiveView`` below (status, timeline, the latest matches of query ``show``, by default the first)
        shows the stream. Drill-down and roll-up answer while the stream runs (``StreamingCube.drill_down``)."""
        stream = cube.stream(keep=keep)
        batches = iter(batches)
        first = _frame(next(batches, []))
        found = stream.extend(first)
        self = cls(cube)
        self.streaming = stream
        self.counts = {name: len(m) for name, m in found.items()}
        shown = show or next(iter(cube.queries))
        self.live = LiveView(title=f"stream · {shown}: {cube.queries[shown].text.splitlines()[0][:80]}", **(view or {}))
        self.live.add(first.set_axis(range(len(first))), list(found[shown]))

        def feed():
            for batch in batches:
                frame = _frame(batch)
                start = self.streaming.events
                started = time.perf_counter()
                new = self.streaming.extend(frame)
                for name, m in new.items():
                    self.counts[name] = self.counts.get(name, 0) + len(m)
                self.live.add(
                    frame.set_axis(range(start, start + len(frame))),
                    list(new.get(shown, [])),
                    seconds=time.perf_counter() - started,
                )
                self._redraw()
                yield
            if not self.live.stopped:
                for name, m in self.streaming.close().items():
                    self.counts[name] = self.counts.get(name, 0) + len(m)
                self._redraw()

        self.live._feed = feed()
        self.children = (*self.children, self.live)
        self._redraw()
        return self

    def run(self, batches: Optional[int] = None) -> "ECubeView":
        """Feed the stream's batches in this thread, all of them or ``batches`` more (``from_batches``)."""
        self._require_live().run(batches)
        return self

    def start(self) -> "ECubeView":
        """Feed the stream's batches in a background thread; Stop ends it."""
        self._require_live().start()
        return self

    def _require_live(self) -> LiveView:
        if self.live is None:
            raise ValueError("this view has no stream to feed: build it with ECubeView.from_batches")
        return self.live

    @property
    def _so_far(self) -> str:
        return " so far" if self.streaming is not None else ""

    def trace(self, name: str):
        """The figure's trace called ``name`` (one of ``TRACES``)."""
        return self.figure.data[TRACES.index(name)]

    def __repr__(self):
        plan = self.cube.last_plan
        return f"ECubeView(queries={len(self.cube.queries)}, cost={plan.cost:.4g}, alone={plan.scratch_cost:.4g})"

    # ------------------------------------------------------------------ operations
    def operations(self, name: str) -> dict:
        """label -> (method, keyword arguments) of the OLAP operations available on query ``name``: a
        concept one level finer or coarser at each position, and removing an item (pattern roll-up)."""
        query = self.cube.queries[name]
        hierarchy = query.hierarchy
        items = [item for item in self.cube.shapes[name].items]
        out = {}
        for position, item in enumerate(items, 1):
            concepts = (item.concept,) if hierarchy is None or hierarchy.attribute is None else item.value_concepts
            for concept in concepts if hierarchy is not None else ():
                for child in hierarchy.children.get(concept, ()):
                    out[f"{position}: {concept} → {child} (concept drill-down)"] = (
                        "drill_down",
                        {"concept": [(concept, child, position)]},
                    )
                for parent in hierarchy.parents(concept):
                    out[f"{position}: {concept} → {parent} (concept roll-up)"] = (
                        "roll_up",
                        {"concept": [(concept, parent, position)]},
                    )
            positives = sum(i.positive for i in items)
            if len(items) > 1 and (not item.positive or positives > 1):
                text = ("" if item.positive else "!") + item.concept
                out[f"{position}: remove {text} (pattern roll-up)"] = ("roll_up", {"pattern": [(text, position)]})
        return out

    def apply(self, method: str) -> Optional[cepkit.Matches]:
        """Run the chosen operation (or the typed insertion, for a drill-down) on the picked query."""
        name = self.query_picker.value
        typed = self.insert.value.strip()
        try:
            target = self.streaming if self.streaming is not None else self.cube
            if method == "drill_down" and typed:
                found = target.drill_down(name, pattern=[parse_insertion(typed)])
            else:
                chosen = self.operations(name).get(self.operation.value)
                if chosen is None or chosen[0] != method:
                    self.status.value = f"<span style='color:#b00'>pick a {method.replace('_', '-')} operation</span>"
                    return None
                found = getattr(target, method)(name, **chosen[1])
        except (cepkit.QueryError, ValueError) as err:
            self.status.value = f"<span style='color:#b00'>{html.escape(str(err))}</span>"
            return None
        new = next(n for n, q in self.cube.queries.items() if q == found.query)
        step = self.cube.last_plan.step(new)
        self.status.value = (
            f"<b>{html.escape(new)}</b> = <code>{html.escape(str(found.query))}</code>: "
            f"{len(found)} matches, {html.escape(self._how(step))}"
        )
        if self.streaming is None:
            self.results = self.cube.results
            self.counts = {n: len(m) for n, m in self.results.items()}
        else:
            self.counts[new] = len(found) if new not in self.counts else self.counts[new]
        self.what_if_plan = None
        self.insert.value = ""
        self.query_picker.options = list(self.cube.queries)
        self.query_picker.value = new
        self._redraw()
        return found

    # ------------------------------------------------------------------ cost-model explorer ([LIU] Table 4.1)
    @property
    def shown_plan(self):
        """The plan drawn: the what-if plan while the sliders have moved, else the plan that ran."""
        return self.what_if_plan or self.cube.last_plan

    def explore(self):
        """Re-plan under the sliders (Pt, P, one type's rate scaled) and draw that plan; nothing runs."""
        units = dataclasses.replace(self.cube.units, Pt=self.pt.value, P=self.selectivity.value)
        statistics = self.cube.statistics.scaled(self.rate_type.value, self.rate.value)
        self.what_if_plan = self.cube.what_if(statistics, units)
        plan = self.what_if_plan
        reuse = ", ".join(f"{s.query}←{s.source} ({s.direction})" for s in plan.steps if s.source) or "none"
        self.status.value = (
            f"<b>what-if plan</b> (not run): cost {plan.cost:.4g}, each alone "
            f"{plan.scratch_cost:.4g}; reuse: {html.escape(reuse)}"
        )
        self._draw_plan()
        return plan

    def _reset_what_if(self) -> None:
        self.what_if_plan = None
        self.status.value = ""
        self._draw_plan()

    # ------------------------------------------------------------------ drawing
    def _empty_figure(self) -> go.Figure:
        figure = go.Figure()
        for kind in ("concept", "pattern", "both"):
            figure.add_scatter(
                name=f"{kind} edges",
                mode="lines",
                hoverinfo="skip",
                line={
                    "color": KIND_COLOR[kind],
                    "width": 1.5,
                    "dash": "solid" if kind == "concept" else "dash" if kind == "pattern" else "dot",
                },
            )
        figure.add_scatter(
            name="candidate edges", mode="lines", hoverinfo="skip", line={"color": "#f0b27a", "width": 1, "dash": "dot"}
        )
        text = {"size": FONT_SIZE, "family": FONT}
        figure.add_scatter(
            name="candidate labels",
            mode="text",
            textposition="middle center",
            textfont={**text, "color": "#b9770e"},
            hoverinfo="skip",
        )
        figure.add_scatter(name="plan edges", mode="lines", hoverinfo="skip", line={"color": PLAN_COLOR, "width": 3})
        figure.add_scatter(
            name="plan labels",
            mode="text",
            textposition="middle center",
            textfont={**text, "color": "#7a3d00"},
            hoverinfo="skip",
        )
        figure.add_scatter(
            name="relations",
            mode="markers",
            hovertemplate="%{hovertext}<extra></extra>",
            marker={"size": 9, "color": "#9aa7b4", "symbol": "diamond"},
        )
        figure.add_scatter(
            name="queries",
            mode="markers+text",
            textposition="middle center",
            textfont=text,
            hovertemplate="%{hovertext}<extra></extra>",
            marker={"color": "#f2f5f8", "line": {"color": "#1f3b57", "width": 1.5}},
        )
        figure.update_layout(
            showlegend=False,
            plot_bgcolor="white",
            hovermode="closest",
            dragmode=False,
            margin={"l": 10, "r": 10, "t": 40, "b": 10},
            font={"family": FONT},
            xaxis={"visible": False, "fixedrange": True},
            yaxis={"visible": False, "scaleanchor": "x", "scaleratio": 1, "fixedrange": True},
        )
        figure.update_traces(cliponaxis=False)  # a node at the drawing's edge spills into the margin, not cut
        return figure

    def _redraw(self) -> None:
        self._draw_plan()
        self.table.value = self._table()
        self._refresh_operations()

    def plan_edges(self) -> list:
        """``[(source, query, label)]`` of the plan drawn; a query kept from the run (cached, cost 0) only
        when ``show_cached`` is ticked."""
        return [
            (s.source or ROOT, s.query, f"{s.direction} {s.cost:.3g}")
            for s in self.shown_plan.steps
            if s.direction != "cached" or self.show_cached.value
        ]

    def candidate_edges(self) -> list:
        """``[(source, query, label)]`` of Chase's graph ([LIU] §4.3) that the plan did not take;
        empty unless ``show_candidates`` is ticked."""
        if not self.show_candidates.value:
            return []
        taken = {(u, v) for u, v, _ in self.plan_edges()}
        return [
            (u, v, f"{d['direction']} {d['cost']:.3g}")
            for u, v, d in self.shown_plan.graph.edges(data=True)
            if d["direction"] != "cached" and (u, v) not in taken
        ]

    def _draw_plan(self) -> None:
        """Lay the lattice, the plan and the candidate edges out together (so dot places every label) and
        draw them."""
        cube = self.cube
        plan, candidates = self.plan_edges(), self.candidate_edges()
        drawing, _, paths = lattice_drawing(cube.graph, plan + candidates)
        self.drawing = drawing
        on_plan = {(u, v) for u, v, _ in plan}
        for kind in ("concept", "pattern", "both"):
            self.trace(f"{kind} edges").update(
                **edge_lines(
                    paths[u, v] for u, v, k in cube.graph.edges(data="kind") if k == kind and (u, v) not in on_plan
                )
            )
        for name, edges in (("plan", plan), ("candidate", candidates)):
            self.trace(f"{name} edges").update(**edge_lines(paths[u, v] for u, v, _ in edges))
            self.trace(f"{name} labels").update(
                x=[paths[u, v].label[0] for u, v, _ in edges],
                y=[paths[u, v].label[1] for u, v, _ in edges],
                text=[label for *_, label in edges],
            )
        lattice = list(cube.graph.edges)
        self.trace("relations").update(
            x=[paths[e].middle[0] for e in lattice],
            y=[paths[e].middle[1] for e in lattice],
            hovertext=[relation_text(cube, u, v) for u, v in lattice],
        )
        names = [ROOT] + list(cube.queries)
        node = drawing.nodes
        self.trace("queries").update(
            x=[node[n].x for n in names],
            y=[node[n].y for n in names],
            text=names,
            marker={"size": [node[n].size for n in names]},
            hovertext=[self._hover(n) for n in names],
        )
        self.figure.layout.annotations = [
            arrowhead(paths[u, v].tip, paths[u, v].points[-1], PLAN_COLOR, 2) for u, v, _ in plan
        ]
        what = "what-if plan" if self.what_if_plan is not None else "plan"
        shown = self.shown_plan
        self.figure.layout.title = (
            f"{what} cost {shown.cost:.4g} (each query alone: {shown.scratch_cost:.4g}); orange: evaluation order"
        )
        margin = self.figure.layout.margin
        self.figure.layout.height = int(drawing.height) + margin.t + margin.b
        self.figure.layout.xaxis.range = [0, drawing.width]
        self.figure.layout.yaxis.range = [0, drawing.height]
        self.plot.min_width = natural_width(self.figure)
        self.plot.show(self.figure)

    def _refresh_operations(self) -> None:
        name = self.query_picker.value
        self.operation.options = list(self.operations(name)) if name is not None else []

    @staticmethod
    def _how(step) -> str:
        if step.direction == "cached":
            return "kept from the run"
        if step.source is None:
            return f"from scratch (cost {step.cost:.3g})"
        return f"{step.direction} from {step.source} by {step.method} (cost {step.cost:.3g})"

    def _hover(self, name: str) -> str:
        if name == ROOT:
            return "v0: evaluation from scratch"
        step = self.cube.last_plan.step(name)
        return (
            f"<b>{html.escape(name)}</b>: {html.escape(str(self.cube.queries[name]))}<br>"
            f"{self.counts.get(name, 0)} matches{self._so_far}; {html.escape(self._how(step))}"
        )

    def _table(self) -> str:
        rows = "".join(
            f"<tr><td><b>{html.escape(s.query)}</b></td><td><code>{html.escape(str(self.cube.queries[s.query]))}"
            f"</code></td><td>{self.counts.get(s.query, 0)}</td><td>{html.escape(self._how(s))}</td></tr>"
            for s in self.cube.last_plan.steps
        )
        return (
            f"{TABLE_CSS}<table class='cepkit-table cepkit-ecube'><tr><th>query</th><th>pattern</th><th>matches{self._so_far}</th>"
            f"<th>computed</th></tr>{rows}</table>"
        )


def _frame(batch) -> pd.DataFrame:
    """A batch as a DataFrame numbered from 0 (a list of event dicts, or a slice of a larger frame)."""
    frame = batch if isinstance(batch, pd.DataFrame) else pd.DataFrame(list(batch))
    return frame.reset_index(drop=True)
