"""``ECubeView``: the E-Cube lattice of a set of queries, the plan Chase chose, and OLAP drill-down / roll-up
(digest 000a §3 and §7, items 1-2).

Queries are drawn by level of generality (the lattice's topological generations: the most general on
top), under the virtual query v0 that stands for "from scratch". Grey lines are the refinement relations,
coloured by kind (concept, pattern, both); the thick arrows are the evaluation plan, one per query, from
the query (or v0) whose results it reuses, labelled with the direction (g→s, s→g, scratch) and the
cost-model estimate (tick *every candidate edge* to see all of Chase's graph, each edge with its direction
and cost). The hover of a query shows its text, its matches and how it was computed; the
diamond on a relation shows the OLAP operation it stands for (``TX → D at 1``, ``insert !D at 2``).

Pick a query and an operation (a concept one level finer or coarser at a position, an item removed, or
an item typed in to insert) and press *drill down* / *roll up*: the cube adds the new query, re-plans with
the kept results at no cost, answers it, and the drawing updates. The sliders explore the cost model
(digest §7 item 7): Pt, the condition selectivity P and one type's rate; the plan Chase would choose under
them is drawn (nothing runs) until *the plan that ran* brings the real one back. Only the public API is used:
``cepkit.ECube`` (``run``, ``graph``, ``last_plan``, ``drill_down``, ``roll_up``).
"""
from __future__ import annotations

import dataclasses
import html
from typing import Optional

import ipywidgets as widgets
import networkx as nx
import plotly.graph_objects as go

import cepkit

from .execution import as_stream

ROOT = "v0"
TRACES = ("concept edges", "pattern edges", "both edges", "candidate edges", "candidate labels", "plan edges",
          "plan labels", "relations", "queries")
KIND_COLOR = {"concept": "#7fa7c9", "pattern": "#c9a27f", "both": "#a58fc0"}
PLAN_COLOR = "#e07000"


def lattice_layout(graph: nx.DiGraph) -> dict:
    """name -> (x, y): v0 on top, then the lattice's generations (general first), each row centred."""
    positions = {ROOT: (0.0, 0.0)}
    for depth, generation in enumerate(nx.topological_generations(graph), start=1):
        row = sorted(generation, key=list(graph.nodes).index)
        for k, name in enumerate(row):
            positions[name] = (k - (len(row) - 1) / 2, -float(depth))
    return positions


def relation_text(cube, general: str, specific: str) -> str:
    """The OLAP operation a lattice edge stands for (digest §7 item 1): the concepts it refines and the
    items it inserts, 1-based positions of the specific query (WE-3)."""
    data = cube.graph.edges[general, specific]
    g_items, s_items = cube.shapes[general].items, cube.shapes[specific].items
    embedding = data["refinement"].embedding
    parts = [f"{g_items[g]} → {s_items[s]} at {s + 1}" for g, s in enumerate(embedding)
             if not g_items[g].same_as(s_items[s])]
    parts += [f"insert {item} at {k + 1}" for k, item in enumerate(s_items) if k not in embedding]
    return f"{general} → {specific} ({data['kind']} drill-down): " + "; ".join(parts)


def _segments(pairs, positions) -> dict:
    xs, ys = [], []
    for u, v in pairs:
        xs.extend([positions[u][0], positions[v][0], None])
        ys.extend([positions[u][1], positions[v][1], None])
    return {"x": xs, "y": ys}


class ECubeView(widgets.VBox):
    """The lattice of ``cube`` over ``events``, its plan, and drill-down / roll-up buttons.

    Parameters
    ----------
    cube : ``cepkit.ECube``, or a mapping name -> query (then ``hierarchy`` builds the cube)
    events : the stream the cube runs on (DataFrame, dicts or Events); None shows a cube that has already
        run, with its kept results
    """

    def __init__(self, cube, events=None, hierarchy=None, height: int = 460):
        self.cube = cube if isinstance(cube, cepkit.ECube) else cepkit.ECube(cube, hierarchy)
        if events is not None:
            self.results = self.cube.run(as_stream(events))
        elif self.cube.results and self.cube.last_plan is not None:
            self.results = self.cube.results
        else:
            raise ValueError("ECubeView needs events, or a cube that has run")
        self.height = height
        self.figure = go.FigureWidget(self._empty_figure())
        self.query_picker = widgets.Dropdown(description="query", options=list(self.cube.queries))
        self.operation = widgets.Dropdown(description="operation", layout={"width": "360px"})
        self.insert = widgets.Text(placeholder="item to insert, e.g. !D 2", description="or insert",
                                   layout={"width": "260px"})
        self.drill_button = widgets.Button(description="drill down", icon="arrow-down")
        self.roll_button = widgets.Button(description="roll up", icon="arrow-up")
        self.show_candidates = widgets.Checkbox(description="every candidate edge (Chase's graph)", value=False,
                                                indent=False)
        self.what_if_plan = None        # a plan under the sliders' statistics and costs, when they moved
        units, types = self.cube.units, sorted(self.cube.statistics.type_counts)
        self.pt = widgets.FloatSlider(value=units.Pt, min=0.05, max=0.95, step=0.05, description="Pt")
        self.selectivity = widgets.FloatSlider(value=units.P, min=0.05, max=1.0, step=0.05, description="P")
        self.rate_type = widgets.Dropdown(options=types, description="rate of")
        self.rate = widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.1, description="× rate")
        self.reset = widgets.Button(description="the plan that ran", icon="undo")
        for control in (self.pt, self.selectivity, self.rate_type, self.rate):
            control.observe(lambda _: self.explore(), names="value")
        self.reset.on_click(lambda _: self._reset_what_if())
        self.status = widgets.HTML()
        self.table = widgets.HTML()
        self.query_picker.observe(lambda _: self._refresh_operations(), names="value")
        self.show_candidates.observe(lambda _: self._draw_candidates(lattice_layout(self.cube.graph)), names="value")
        self.drill_button.on_click(lambda _: self.apply("drill_down"))
        self.roll_button.on_click(lambda _: self.apply("roll_up"))
        controls = widgets.HBox([self.query_picker, self.operation, self.insert, self.drill_button,
                                 self.roll_button])
        explorer = widgets.HBox([self.pt, self.selectivity, self.rate_type, self.rate, self.reset])
        super().__init__([self.figure, controls, self.show_candidates, explorer, self.status, self.table])
        self._redraw()

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
                    out[f"{position}: {concept} → {child} (concept drill-down)"] = \
                        ("drill_down", {"concept": [(concept, child, position)]})
                for parent in hierarchy.parents(concept):
                    out[f"{position}: {concept} → {parent} (concept roll-up)"] = \
                        ("roll_up", {"concept": [(concept, parent, position)]})
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
            if method == "drill_down" and typed:
                text, _, position = typed.rpartition(" ")
                found = self.cube.drill_down(name, pattern=[(text, int(position))])
            else:
                chosen = self.operations(name).get(self.operation.value)
                if chosen is None or chosen[0] != method:
                    self.status.value = f"<span style='color:#b00'>pick a {method.replace('_', '-')} operation</span>"
                    return None
                found = getattr(self.cube, method)(name, **chosen[1])
        except (cepkit.QueryError, ValueError) as err:
            self.status.value = f"<span style='color:#b00'>{html.escape(str(err))}</span>"
            return None
        new = next(n for n, q in self.cube.queries.items() if q == found.query)
        step = self.cube.last_plan.step(new)
        self.status.value = (f"<b>{html.escape(new)}</b> = <code>{html.escape(str(found.query))}</code>: "
                             f"{len(found)} matches, {html.escape(self._how(step))}")
        self.results = self.cube.results
        self.what_if_plan = None
        self.insert.value = ""
        self.query_picker.options = list(self.cube.queries)
        self.query_picker.value = new
        self._redraw()
        return found

    # ------------------------------------------------------------------ cost-model explorer (digest §7 item 7)
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
        self.status.value = (f"<b>what-if plan</b> (not run): cost {plan.cost:.4g}, each alone "
                             f"{plan.scratch_cost:.4g}; reuse: {html.escape(reuse)}")
        self._draw_plan(lattice_layout(self.cube.graph))
        return plan

    def _reset_what_if(self) -> None:
        self.what_if_plan = None
        self.status.value = ""
        self._draw_plan(lattice_layout(self.cube.graph))

    # ------------------------------------------------------------------ drawing
    def _empty_figure(self) -> go.Figure:
        figure = go.Figure()
        for kind in ("concept", "pattern", "both"):
            figure.add_scatter(name=f"{kind} edges", mode="lines", hoverinfo="skip",
                               line={"color": KIND_COLOR[kind], "width": 1.5,
                                     "dash": "solid" if kind == "concept" else "dash" if kind == "pattern" else "dot"})
        figure.add_scatter(name="candidate edges", mode="lines", hoverinfo="skip",
                           line={"color": "#f0b27a", "width": 1, "dash": "dot"})
        figure.add_scatter(name="candidate labels", mode="text", textfont={"size": 9, "color": "#b9770e"},
                           hoverinfo="skip")
        figure.add_scatter(name="plan edges", mode="lines", hoverinfo="skip", line={"color": PLAN_COLOR, "width": 3.5})
        figure.add_scatter(name="plan labels", mode="text", textfont={"size": 10, "color": "#7a3d00"},
                           hoverinfo="skip")
        figure.add_scatter(name="relations", mode="markers", hovertemplate="%{hovertext}<extra></extra>",
                           marker={"size": 9, "color": "#9aa7b4", "symbol": "diamond"})
        figure.add_scatter(name="queries", mode="markers+text", textposition="middle center",
                           hovertemplate="%{hovertext}<extra></extra>",
                           marker={"size": 38, "color": "#f2f5f8", "line": {"color": "#1f3b57", "width": 2}})
        figure.update_layout(showlegend=False, plot_bgcolor="white", height=self.height, hovermode="closest",
                             margin={"l": 10, "r": 10, "t": 30, "b": 10},
                             xaxis={"visible": False}, yaxis={"visible": False})
        return figure

    def _redraw(self) -> None:
        cube = self.cube
        positions = lattice_layout(cube.graph)
        for kind in ("concept", "pattern", "both"):
            pairs = [(u, v) for u, v, k in cube.graph.edges(data="kind") if k == kind]
            self.trace(f"{kind} edges").update(**_segments(pairs, positions))
        edges = list(cube.graph.edges)
        self.trace("relations").update(x=[(positions[u][0] + positions[v][0]) / 2 for u, v in edges],
                                       y=[(positions[u][1] + positions[v][1]) / 2 for u, v in edges],
                                       hovertext=[relation_text(cube, u, v) for u, v in edges])
        names = [ROOT] + list(cube.queries)
        self.trace("queries").update(x=[positions[n][0] for n in names], y=[positions[n][1] for n in names],
                                     text=names, hovertext=[self._hover(n) for n in names])
        self._draw_plan(positions)
        self.table.value = self._table()
        self._refresh_operations()

    def _draw_plan(self, positions: dict) -> None:
        """The plan's arrows, labels and title, and the candidate edges of its Chase graph."""
        plan = self.shown_plan
        self.trace("plan edges").update(**_segments([(s.source or ROOT, s.query) for s in plan.steps], positions))
        labels = {"x": [], "y": [], "text": []}
        for s in plan.steps:
            (x0, y0), (x1, y1) = positions[s.source or ROOT], positions[s.query]
            labels["x"].append(0.45 * x0 + 0.55 * x1)
            labels["y"].append(0.45 * y0 + 0.55 * y1)
            labels["text"].append(f"{s.direction} {s.cost:.3g}")
        self.trace("plan labels").update(**labels)
        arrows = [dict(x=positions[s.query][0], y=positions[s.query][1] + 0.12, ax=positions[s.source or ROOT][0],
                       ay=positions[s.source or ROOT][1] - 0.12, xref="x", yref="y", axref="x", ayref="y",
                       showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=2, arrowcolor=PLAN_COLOR, text="")
                  for s in plan.steps]
        self.figure.layout.annotations = arrows
        self._draw_candidates(positions)
        what = "what-if plan" if self.what_if_plan is not None else "plan"
        self.figure.layout.title = (f"{what} cost {plan.cost:.4g} (each query alone: {plan.scratch_cost:.4g}); "
                                    "orange: evaluation order")

    def _draw_candidates(self, positions: dict) -> None:
        """Every edge Chase chose from (digest §7 item 2), each labelled near its source with its
        direction and cost; empty unless ``show_candidates`` is ticked."""
        graph = self.shown_plan.graph
        edges = [(u, v, d) for u, v, d in graph.edges(data=True) if d["direction"] != "cached"] \
            if self.show_candidates.value else []
        self.trace("candidate edges").update(**_segments([(u, v) for u, v, _ in edges], positions))
        labels = {"x": [], "y": [], "text": []}
        for u, v, data in edges:
            (x0, y0), (x1, y1) = positions[u], positions[v]
            labels["x"].append(0.7 * x0 + 0.3 * x1)
            labels["y"].append(0.7 * y0 + 0.3 * y1)
            labels["text"].append(f"{data['direction']} {data['cost']:.3g}")
        self.trace("candidate labels").update(**labels)

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
        return (f"<b>{html.escape(name)}</b>: {html.escape(str(self.cube.queries[name]))}<br>"
                f"{len(self.results[name])} matches; {html.escape(self._how(step))}")

    def _table(self) -> str:
        rows = "".join(
            f"<tr><td><b>{html.escape(s.query)}</b></td><td><code>{html.escape(str(self.cube.queries[s.query]))}"
            f"</code></td><td>{len(self.results[s.query])}</td><td>{html.escape(self._how(s))}</td></tr>"
            for s in self.cube.last_plan.steps)
        return ("<table class='cepkit-ecube'><tr><th>query</th><th>pattern</th><th>matches</th>"
                f"<th>computed</th></tr>{rows}</table>")
