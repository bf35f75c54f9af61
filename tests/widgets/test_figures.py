"""``PlotlyView`` without a browser: the state the page draws from, plotly.js shared by every view, clicks."""

import gzip
import json

import plotly
import plotly.graph_objects as go
import pytest

from cepkit.widgets.figures import FIGURE_CONFIG, Click, PlotlyView, plotly_js


def test_every_view_refers_to_one_plotly_js_holding_the_library():
    first, second = PlotlyView(), PlotlyView(go.Figure(go.Bar(y=[1])))
    assert first.plotly is second.plotly is plotly_js()
    source = first.plotly.source
    assert source.startswith(b"/**") and b"module.exports" in source and len(source) > 1_000_000
    # the basic bundle, of the plotly.js version plotly.py draws for (scripts/update-plotly-js.sh)
    assert plotly_js().version == "basic-" + plotly.offline.get_plotlyjs_version()
    state = first.get_state()
    assert state["plotly"] == f"IPY_MODEL_{plotly_js().model_id}" and "source" not in state  # sent once, not per view


def test_a_trace_type_outside_the_bundle_is_refused_with_what_it_has():
    view = PlotlyView(go.Figure(go.Scatter(y=[1])))
    with pytest.raises(ValueError, match="heatmap is not in cepkit's plotly.js bundle .*bar, pie, scatter"):
        view.show(go.Figure(go.Heatmap(z=[[1]])))
    assert view.figure["data"][0]["type"] == "scatter"  # the figure on show is kept


def test_show_sends_the_figure_whole_as_plotly_json():
    view = PlotlyView()
    assert view.figure == {} and view.config == FIGURE_CONFIG and "responsive" not in FIGURE_CONFIG
    view.show(go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="a"), {"height": 320}))
    assert [t["name"] for t in view.figure["data"]] == ["a"] and view.figure["layout"]["height"] == 320
    view.show({"data": [{"type": "bar", "y": [5]}], "layout": {}})
    assert view.figure["data"][0]["type"] == "bar"
    assert repr(view) == "PlotlyView(traces=1, height=450)"


def test_the_page_gets_the_figure_gzipped_in_one_binary_buffer():
    hovers = [f"position {i} · <b>DELAYED_DEPARTURE</b> · 2013-05-20 14:00:00 EDT<br>origin = JFK" for i in range(2000)]
    view = PlotlyView(go.Figure(go.Scatter(x=list(range(2000)), y=[0] * 2000, hovertext=hovers, name="a")))
    state = view.get_state()
    assert "figure" not in state and state["packed"] is view.packed  # the bytes go as a buffer, not as JSON
    assert json.loads(gzip.decompress(view.packed)) == view.figure
    assert len(view.packed) * 10 < len(json.dumps(view.figure))
    view.show({"data": [{"type": "scatter", "y": [float("nan"), 1.0]}], "layout": {}})
    assert json.loads(gzip.decompress(view.packed))["data"][0]["y"] == [None, 1.0]  # JSON.parse reads it


def test_clicks_reach_every_callback_until_removed(click):
    view = PlotlyView(go.Figure(go.Scatter(x=[1, 2], y=[3, 4], customdata=[7, 8], name="a")))
    heard = []
    view.on_click(heard.append)
    click(view, 0, 1)
    view._handle_custom_msg({"event": "other"}, [])  # other messages are ignored
    view.on_click(heard.append, remove=True)
    click(view, 0, 0)
    assert heard == [Click(curve=0, index=1, customdata=8, trace="a")]
