"""Graph drawings for the widgets: Graphviz ``dot`` when it is installed, a layered layout otherwise.

``graph_drawing(nodes, edges)`` lays a small directed graph out and returns a ``Drawing`` in points
(1/72 inch, drawn 1:1 as CSS pixels): node centres and diameters, each edge as a polyline sampled from its
spline, the arrow's tip and the centre of its label. ``dot`` (Debian's ``graphviz``, which
``scripts/setup.sh`` installs) sizes every node to its label and places every edge label where it
overlaps no other label and no node; the widgets then draw the result with plotly, so hover, click and
highlighting keep working. ``dot`` is called as ``dot -Tjson0`` (no Python binding needed).

Without ``dot`` the fallback is the layered left-to-right layout below (the steps of Sugiyama et al.'s
layered drawing, kept small), with straight edges, arcs for parallel and backward ones, loops above their
node, and each label at the middle of its edge (labels may then touch):

1. *Cycle removal.* The back edges of a depth-first search from the source (and self-loops) are set
   aside, leaving a DAG; the drawing shows them as arcs running backwards.
2. *Layering.* Each node goes to the layer of its longest path from the source in that DAG, so every
   remaining edge points right and a chain of states reads left to right (breadth-first depth would put a state and its successor in one layer whenever a shortcut skips the first).
   Nodes the source does not reach form one last layer.
3. *Crossing reduction.* Inside each layer nodes are ordered by the barycenter of their neighbours in the
   adjacent layer, sweeping down and up a few times.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from typing import Optional

import networkx as nx
import numpy as np

FONT = "Helvetica, Arial, sans-serif"  # the widgets' text font; dot measures labels in Helvetica
# dot measures text a little larger than the browser draws it, so labels keep a margin around them
DOT_FONT_SCALE = 1.15
CHAR_WIDTH = 0.62  # em per character, the fallback's estimate of a label's width


@dataclass(frozen=True)
class Node:
    """A node's centre and diameter, in points."""

    x: float
    y: float
    size: float


@dataclass(frozen=True)
class EdgePath:
    """An edge as a polyline from its tail's border to its arrow's base, the arrow's tip, and the centre of
    its label (None for an unlabelled edge)."""

    points: np.ndarray
    tip: tuple
    label: Optional[tuple]

    @property
    def middle(self) -> tuple:
        return tuple(self.points[len(self.points) // 2])


@dataclass(frozen=True)
class Drawing:
    """A laid-out graph, in points with y upwards: ``nodes`` by name, ``edges`` in the order given."""

    nodes: dict
    edges: list
    width: float
    height: float
    engine: str  # "dot" or "layered"


def edge_lines(paths) -> dict:
    """``{"x": [...], "y": [...]}`` of edge paths for one plotly lines trace, each path up to its arrow's tip,
    separated by None."""
    xs, ys = [], []
    for path in paths:
        xs.extend([*path.points[:, 0], path.tip[0], None])
        ys.extend([*path.points[:, 1], path.tip[1], None])
    return {"x": xs, "y": ys}


def arrowhead(tip, base, color: str, width: float, **more) -> dict:
    """A plotly annotation drawing an arrowhead at ``tip`` coming from ``base`` (data coordinates, no text
    unless ``more`` gives one): an edge path's is ``arrowhead(path.tip, path.points[-1], ...)``."""
    return {
        "x": tip[0],
        "y": tip[1],
        "ax": base[0],
        "ay": base[1],
        "xref": "x",
        "yref": "y",
        "axref": "x",
        "ayref": "y",
        "showarrow": True,
        "arrowhead": 2,
        "arrowsize": 1,
        "arrowwidth": width,
        "arrowcolor": color,
        "text": "",
        **more,
    }


def dot_available() -> bool:
    return shutil.which("dot") is not None


def graph_drawing(
    nodes: dict,
    edges: list,
    rankdir: str = "LR",
    source=None,
    fontsize: int = 12,
    rings: frozenset = frozenset(),
    loose: frozenset = frozenset(),
) -> Drawing:
    """Lay out ``nodes`` (name -> label) and ``edges`` ([(tail, head, label or "")]): by ``dot`` when it is
    installed, else by the layered fallback from ``source`` (the first node, which dot puts first too, by
    default). Labels may hold line breaks (``\\n``); nodes in ``rings`` are drawn double-ringed (final
    states) and sized for it; the edges whose indices are in ``loose`` are drawn but do not rank the nodes.

    >>> d = graph_drawing({"a": "a", "b": "{b,c,d,p}"}, [("a", "b", "x / •")])
    >>> d.nodes["b"].size > d.nodes["a"].size and len(d.edges) == 1
    True
    """
    if dot_available():
        try:
            return dot_drawing(nodes, edges, rankdir, fontsize, rings, loose, source)
        except (OSError, subprocess.SubprocessError, ValueError, KeyError):
            pass  # a dot that fails is no worse than a missing one: draw the fallback
    return layered_drawing(nodes, edges, rankdir, source, fontsize, rings, loose)


def _quote(text: str) -> str:
    """A DOT double-quoted string showing ``text`` literally (line breaks kept as centred lines)."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot_source(
    nodes: dict,
    edges: list,
    rankdir: str,
    fontsize: int,
    rings: frozenset = frozenset(),
    loose: frozenset = frozenset(),
    source=None,
) -> str:
    size = round(fontsize * DOT_FONT_SCALE, 1)
    ids = {name: f"n{k}" for k, name in enumerate(nodes)}
    lines = [
        f"digraph {{ graph [rankdir={rankdir} nodesep=0.3 ranksep=0.35 pad=0.1]",
        f'node [shape=circle fontname="Helvetica" fontsize={size} margin=0.02]',
        f'edge [fontname="Helvetica" fontsize={size} arrowsize=0.8]',
    ]
    lines += [
        f"{ids[n]} [label={_quote(label)}{' shape=doublecircle' if n in rings else ''}]" for n, label in nodes.items()
    ]
    lines += [
        f'{ids[u]} -> {ids[v]} [id="e{k}" label={_quote(label)}{" constraint=false" if k in loose else ""}]'
        for k, (u, v, label) in enumerate(edges)
    ]
    lines.append(f"{{rank=min; {ids[next(iter(nodes)) if source is None else source]}}}")
    return "\n".join(lines + ["}"])


def dot_drawing(
    nodes: dict,
    edges: list,
    rankdir: str = "LR",
    fontsize: int = 12,
    rings: frozenset = frozenset(),
    loose: frozenset = frozenset(),
    source=None,
) -> Drawing:
    """The layout ``dot -Tjson0`` computes (raises ``OSError`` or ``CalledProcessError`` when dot fails)."""
    done = subprocess.run(
        ["dot", "-Tjson0"],
        input=dot_source(nodes, edges, rankdir, fontsize, rings, loose, source),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    graph = json.loads(done.stdout)
    names = {f"n{k}": name for k, name in enumerate(nodes)}
    placed = {}
    for obj in graph.get("objects", []):
        if "pos" not in obj:
            continue  # the rank=min subgraph
        x, y = _point(obj["pos"])
        placed[names[obj["name"]]] = Node(x, y, float(obj["width"]) * 72)
    paths = {}
    for edge in graph.get("edges", []):
        points, tip = _spline(edge["pos"])
        paths[int(edge["id"][1:])] = EdgePath(points, tip, _point(edge["lp"]) if "lp" in edge else None)
    *_, width, height = (float(v) for v in graph["bb"].split(","))
    return Drawing(placed, [paths[k] for k in range(len(edges))], width, height, "dot")


def _point(text: str) -> tuple:
    x, y = text.split(",")[:2]
    return float(x), float(y)


def _spline(pos: str, samples: int = 8) -> tuple:
    """(polyline, arrow tip) of a dot edge ``pos``: ``e,x,y`` (the tip) then the cubic B-spline's control
    points p0 c1 c2 p1 c1 c2 p2 ..., each piece sampled at ``samples`` points."""
    tokens = pos.split(";")[0].split()
    tip = next((_point(t[2:]) for t in tokens if t.startswith("e,")), None)
    control = np.array([_point(t) for t in tokens if not t.startswith(("e,", "s,"))])
    t = np.linspace(0, 1, samples)[:, None]
    pieces = [control[:1]]
    for k in range(0, len(control) - 3, 3):
        p0, p1, p2, p3 = control[k : k + 4]
        pieces.append(((1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t**2 * p2 + t**3 * p3)[1:])
    points = np.vstack(pieces)
    return points, tip if tip is not None else tuple(points[-1])


def natural_width(figure) -> int:
    """Pixels a drawing's figure needs at one unit per pixel (its x range and side margins): a narrower output
    would crowd its fixed-size labels, so the view scrolls instead (``PlotlyView.min_width``)."""
    left, right = figure.layout.xaxis.range
    return int(right - left + figure.layout.margin.l + figure.layout.margin.r)


# ---------------------------------------------------------------------------------------------- fallback
def layered_drawing(
    nodes: dict,
    edges: list,
    rankdir: str = "LR",
    source=None,
    fontsize: int = 12,
    rings: frozenset = frozenset(),
    loose: frozenset = frozenset(),
) -> Drawing:
    """The fallback without ``dot``: ``layered_layout`` spaced for the labels (layers left to right, or top
    to bottom for ``rankdir="TB"``), straight edges, arcs for parallel and backward ones, loops above their
    node, each label at the middle of its edge."""
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((u, v) for k, (u, v, _) in enumerate(edges) if k not in loose)
    grid = layered_layout(graph, next(iter(nodes)) if source is None else source)

    def width(text) -> float:
        return CHAR_WIDTH * fontsize * max(map(len, str(text).split("\n")))

    sizes = {
        n: max(2.2 * fontsize, width(label) + 1.2 * fontsize) + (8 if n in rings else 0) for n, label in nodes.items()
    }
    longest = max([width(label) for *_, label in edges] or [0])
    along, across = max(sizes.values()) + longest + 40, max(sizes.values()) + 3 * fontsize
    if rankdir == "TB":
        across += longest
        centres = {n: np.array([rank * across, -layer * along / 2]) for n, (layer, rank) in grid.items()}
    else:
        centres = {n: np.array([layer * along, rank * across]) for n, (layer, rank) in grid.items()}
    paths, seen = [], {}
    for u, v, label in edges:
        pair = (u, v) if u == v else frozenset((u, v))
        k = seen[pair] = seen.get(pair, -1) + 1
        if u == v:
            points = _loop(centres[u], sizes[u] / 2, k)
        else:
            skips = grid[v][0] - grid[u][0] != 1
            bend = 0.25 * k + (0.2 if skips else 0.0)
            points = _arc(centres[u], centres[v], -bend if (u, v) != tuple(sorted((u, v), key=str)) else bend)
            inside = (np.hypot(*(points - centres[u]).T) < sizes[u] / 2) | (
                np.hypot(*(points - centres[v]).T) < sizes[v] / 2
            )
            points = points[~inside]
        paths.append((points, label))
    low = np.min(list(centres.values()), axis=0) - max(sizes.values()) - longest / 2
    high = np.max(list(centres.values()), axis=0) + max(sizes.values()) + longest / 2
    placed = {n: Node(*(centres[n] - low), sizes[n]) for n in nodes}
    drawn = []
    for points, label in paths:
        points = points - low
        drawn.append(EdgePath(points[:-1], tuple(points[-1]), tuple(points[len(points) // 2]) if label else None))
    return Drawing(placed, drawn, *(high - low), "layered")


def _arc(p0, p2, bend: float, samples: int = 25) -> np.ndarray:
    """The quadratic Bézier from p0 to p2 whose control point is pushed ``bend`` (times the distance) to
    the left of the chord."""
    chord = p2 - p0
    control = (p0 + p2) / 2 + bend * np.array([-chord[1], chord[0]])
    t = np.linspace(0, 1, samples)[:, None]
    return (1 - t) ** 2 * p0 + 2 * (1 - t) * t * control + t**2 * p2


def _loop(centre, radius: float, k: int, samples: int = 25) -> np.ndarray:
    """The k-th self-loop at a node: a circle standing on it, larger for each further loop."""
    r = radius * (0.6 + 0.4 * k)
    angles = np.linspace(-np.pi / 3, 4 * np.pi / 3, samples)
    x, y = centre
    return np.column_stack([x + r * np.cos(angles), y + radius + r * (1 + np.sin(angles)) - r * 0.9])


def back_edges(graph: nx.DiGraph, source) -> set:
    """Edges ``(u, v)`` closing a cycle in a depth-first search from ``source`` (self-loops included).

    >>> sorted(back_edges(nx.DiGraph([(0, 1), (1, 2), (2, 1), (2, 2)]), 0))
    [(2, 1), (2, 2)]
    """
    on_path, done, found = set(), set(), set()
    stack = [(source, iter(graph.successors(source)))]
    on_path.add(source)
    while stack:
        node, successors = stack[-1]
        child = next(successors, None)
        if child is None:
            stack.pop()
            on_path.discard(node)
            done.add(node)
        elif child in on_path:
            found.add((node, child))
        elif child not in done:
            on_path.add(child)
            stack.append((child, iter(graph.successors(child))))
    return found


def layers(graph: nx.DiGraph, source) -> list:
    """Nodes grouped by their longest path from ``source`` once back edges are set aside; unreachable
    nodes form a last layer.

    >>> layers(nx.DiGraph([(0, 1), (0, 2), (1, 2), (2, 3), (3, 1), (4, 4)]), 0)
    [[0], [1], [2], [3], [4]]
    """
    reachable = nx.descendants(graph, source) | {source}
    closing = back_edges(graph, source)
    dag = nx.DiGraph((u, v) for u, v in graph.subgraph(reachable).edges() if (u, v) not in closing)
    dag.add_node(source)
    depth = {source: 0}
    for node in nx.topological_sort(dag):
        for child in dag.successors(node):
            depth[child] = max(depth.get(child, 0), depth[node] + 1)
    grouped = [[] for _ in range(max(depth.values()) + 1)]
    unreachable = []
    for node in graph.nodes:
        (grouped[depth[node]] if node in depth else unreachable).append(node)
    return grouped + ([unreachable] if unreachable else [])


def layered_layout(graph: nx.DiGraph, source, sweeps: int = 4) -> dict:
    """``{node: (x, y)}`` with x the layer and y the rank inside it, centred on 0, crossings reduced.

    >>> g = nx.DiGraph([("s", "b"), ("s", "a"), ("a", "t"), ("b", "t")])
    >>> layered_layout(g, "s")["t"]
    (2, 0.0)
    """
    ordered = layers(graph, source)
    neighbours = {n: (set(graph.predecessors(n)) | set(graph.successors(n))) - {n} for n in graph.nodes}
    for sweep in range(2 * sweeps):
        downward = sweep % 2 == 0
        indices = range(1, len(ordered)) if downward else range(len(ordered) - 2, -1, -1)
        for i in indices:
            fixed = {n: rank for rank, n in enumerate(ordered[i - 1 if downward else i + 1])}
            current = {n: rank for rank, n in enumerate(ordered[i])}
            ordered[i] = sorted(ordered[i], key=lambda n: (_barycenter(n, neighbours, fixed, current[n]), current[n]))
    return {n: (x, (len(layer) - 1) / 2 - rank) for x, layer in enumerate(ordered) for rank, n in enumerate(layer)}


def _barycenter(node, neighbours: dict, fixed: dict, current: int) -> float:
    ranks = [fixed[m] for m in neighbours[node] if m in fixed]
    return sum(ranks) / len(ranks) if ranks else current
