"""cepkit.widgets: the Jupyter workbench over cepkit's public API (ipywidgets 8; every figure a ``PlotlyView``).

- ``Workbench(events)``: query editor with live errors, engine and strategy pickers, results, and the views;
- ``MatchTimeline(events, matches)``: events by type lane on a time axis, each match linked in order;
- ``AutomatonView(query, events)``: the compiled CEA, stepped event by event;
- ``StrategyCompare(query, events)``: the query under every selection strategy, side by side;
- ``RewriteView(query)``: the NEEL rewriting to normal form, one rule per step ([LIU] §5.2);
- ``ECubeView(cube, events)``: the E-Cube lattice, the evaluation plan and drill-down / roll-up;
- ``FunnelView(query, events)``: candidates per step of a sequence and its partial matches (``cepkit.funnel``);
- ``ScenarioView(scenario)``: a seeded ``cepkit.simulate.Scenario`` shaped with controls, opened in a Workbench;
- ``ExplainView(query, events)``: why a candidate is (not) a match, and the near misses (``cepkit.why_not``);
- ``QueryEditor(text)``: the query editor (CodeMirror 6): colours, completion from the grammar and the stream,
  the parse error underlined;
- ``PlotlyView(figure)``: the plotly figure widget they all draw with (clicks reach Python via ``on_click``);
- ``SparkWorkbench`` (``Workbench(spark_dataframe)``): the Workbench on a Spark session, the result paged from
  Spark (``on_spark``);
- ``LiveView``: matches drawn as a stream's batches arrive, bounded, with Stop (``LiveView.from_batches`` over a
  local Matcher, ``LiveView.from_spark`` from Structured Streaming; ``replay`` makes batches of a DataFrame).

Widgets hold no engine logic: they call ``cepkit.parse``, ``cepkit.match``, ``cepkit.Matcher``,
``cepkit.engines``, ``cepkit.automaton``, ``cepkit.explain``, ``cepkit.why_not`` and ``cepkit.funnel``, and fall
back to the ``reference`` engine when the chosen engine cannot run a query.
"""

from .automaton_view import AutomatonView
from .ecube_view import ECubeView
from .execution import STRATEGIES, Run, run_query
from .explain_view import ExplainView
from .figures import PlotlyView
from .funnel_view import FunnelView
from .editor import QueryEditor
from .live import LiveView, replay
from .on_spark import SparkWorkbench
from .rewrite_view import RewriteView
from .scenario_view import ScenarioView
from .strategy_compare import StrategyCompare
from .timeline import MatchTimeline
from .workbench import Workbench

__all__ = [
    "AutomatonView",
    "ECubeView",
    "ExplainView",
    "FunnelView",
    "LiveView",
    "MatchTimeline",
    "PlotlyView",
    "QueryEditor",
    "RewriteView",
    "Run",
    "STRATEGIES",
    "ScenarioView",
    "SparkWorkbench",
    "StrategyCompare",
    "Workbench",
    "replay",
    "run_query",
]
