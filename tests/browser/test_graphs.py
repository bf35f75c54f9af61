"""The graph widgets in a real browser: a small notebook using ``AutomatonView`` (a CEL automaton with
PARTITION BY, [CEL]'s φ3, the SES automaton of notebook 06 with its set-state names), ``ECubeView``
(notebook 09's workload after a drill-down) and ``RewriteView`` (notebook 07's Q1) run in JupyterLab in
headless Chromium (``conftest.py``). Each widget is screenshotted into ``test-artifacts/graphs-*.png`` and
checked in the DOM as a person would by eye: no text of the automaton and lattice drawings overlaps another
text or a node it does not belong to, every figure fills its output's width, the toggle labels are whole.
"""

import json

import pytest

NOTEBOOK = "graphs-widgets.ipynb"
BUDGET_S = 240

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]  # one JupyterLab, beside no other
CELLS = [
    """import cepkit
import numpy as np
from cepkit.datasets import ses_chemo
from cepkit.engines.ses.inspect import SesRun
from cepkit.widgets import AutomatonView, ECubeView, RewriteView""",
    # the tour's query: long labels converging on the final state, runs with their partition key
    """kinds = ["FOG", "DELAYED_DEPARTURE", "STORM", "DELAYED_DEPARTURE", "SNOW", "DELAYED_DEPARTURE"]
flights = [{"type": t, "ts": 60 * i, "origin": ["JFK", "LGA"][i % 2], "dep_delay": 90} for i, t in enumerate(kinds)]
tour = AutomatonView("(STORM AS w OR SNOW AS w OR FOG AS w) ; DELAYED_DEPARTURE AS d "
                     "WHERE d.dep_delay >= 60 WITHIN 3 hours PARTITION BY origin", flights)
tour.step = 4
tour""",
    """phi3 = ("(H AS x ; (T AS y FILTER y.id = 1)+ ; H AS z) "
        "FILTER (x.hum < 30 and z.hum > 60 and x.id = 1 and z.id = 1)")
farm = AutomatonView(phi3, cepkit.datasets.cel_fire_sensors())
farm.step = 8
farm""",
    """P1 = ("PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE c.PID = p.PID and p.PID = d.PID and d.PID = b.PID "
      "and prev(p.V) < p.V WITHIN 15 days")
chemo = ses_chemo(3)
ses = AutomatonView(SesRun(P1, strategy="STNM"), chemo.iloc[:13])
ses.step = 12
ses""",
    """COMPANIES = cepkit.Hierarchy({"Computer": ["DELL", "INTC", "MSFT"], "Finance": ["QQQ", "FCF", "ROM"],
                              "Education": ["EFC", "ANAT", "OREL"]})
rng = np.random.default_rng(7)
tickers = ["DELL", "INTC", "MSFT", "QQQ", "FCF", "ROM", "EFC", "ANAT", "OREL"]
trades = [{"type": t, "ts": round(i * 0.002, 3), "price": int(p)}
          for i, (t, p) in enumerate(zip(rng.choice(tickers, 800), rng.integers(10, 100, 800)))]
W = " WITHIN 20 ms"
cube = ECubeView({"w1": "SEQ(INTC i, !MSFT m, FCF f)" + W, "w1_rom": "SEQ(INTC i, !MSFT m, FCF f, ROM r)" + W,
                  "q16": "SEQ(Computer c, Finance f, Education e)" + W, "q17": "SEQ(Computer c, Finance f, EFC e)" + W},
                 trades, COMPANIES)
cube.query_picker.value = "q17"
cube.operation.value = next(op for op in cube.operations("q17") if "drill-down" in op)
cube.apply("drill_down")
cube""",
    """Q1 = "SEQ(Recycle r, Washing w, !SEQ(Sharpening s, Disinfection d, Checking c), Operating o)"
rewrite = RewriteView(Q1)
rewrite.step = 2
rewrite""",
]


@pytest.fixture
def widgets_notebook(lab):
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
        for source in CELLS
    ]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (lab.root / NOTEBOOK).write_text(json.dumps(notebook))
    return NOTEBOOK


def test_graph_widgets_are_legible_in_jupyterlab(page, widgets_notebook, open_notebook, budget, dom, artifacts):
    clock = budget(BUDGET_S)
    open_notebook(page, widgets_notebook, clock)
    views = {
        "automaton": page.locator(".cepkit-automaton-view"),
        "ecube": page.locator(".cepkit-ecube-view"),
        "rewrite": page.locator(".cepkit-rewrite-view"),
    }
    clock.until(
        lambda: (
            views["automaton"].count() == 3
            and views["ecube"].count() == 1
            and views["rewrite"].count() == 1
            and page.locator(".js-plotly-plot .scatterlayer").count() >= 4
        ),
        "the five widgets and their four figures",
        page,
    )
    assert not [e for e in page.script_errors if "Error" in e], page.script_errors
    names = ["tour", "farm", "ses"]
    problems, blank = {}, []
    for name, view in [*zip(names, views["automaton"].all()), ("ecube", views["ecube"].first)]:
        view.scroll_into_view_if_needed()
        clock.wait(view.locator(".js-plotly-plot .scatterlayer .trace").first, f"the {name} figure")
        dom.screenshot(page, view, artifacts / f"graphs-{name}.png")
        figure = dom.read_figure(view.locator(".js-plotly-plot").first)
        assert figure["texts"], name
        if figure["width"] < 0.97 * figure["output"]:
            problems[name] = f"the figure is {figure['width']:.0f} px wide in a {figure['output']:.0f} px output"
        if figure["height"] < 100:  # every drawing here is taller
            blank.append(name)
        if dom.collisions(figure):
            problems.setdefault(name, dom.collisions(figure))
    assert not problems, problems
    assert not blank, f"figures drawn under 100 px high: {blank}"
    assert "origin=JFK" in views["automaton"].first.inner_text()  # runs with their partition key
    rewrite = views["rewrite"].first
    dom.screenshot(page, rewrite, artifacts / "graphs-rewrite.png")
    cut = rewrite.locator(".widget-toggle-button").evaluate_all(
        "buttons => buttons.filter(b => b.scrollWidth > b.clientWidth + 1).map(b => b.textContent)"
    )
    assert not cut, f"toggle labels cut: {cut}"


OUTPUT = "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' jp-OutputArea-output ')][1]"  # a view's output
SQUEEZED = "tracks => tracks.map(t => t.getBoundingClientRect().width).filter(w => w < 100)"  # slider tracks
# Texts of a drawing that reach out of it (its main svg): cut at its edges, or drawn over what is beside it.
TEXTS_OUTSIDE = """plot => {
    const d = plot.querySelector('.main-svg').getBoundingClientRect();
    return [...plot.querySelectorAll('.scatterlayer .textpoint text, .annotation-text')]
        .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0)
        .filter(t => { const r = t.getBoundingClientRect();
            return r.left < d.left - 1 || r.right > d.right + 1 || r.top < d.top - 1 || r.bottom > d.bottom + 1; })
        .map(t => t.textContent); }"""


def test_graph_drawings_fit_an_800_px_window(page, widgets_notebook, open_notebook, budget, dom, artifacts):
    """In an 800 px window (the cell output ~370 px beside the file browser) the automata are drawn whole: no
    label overlaps another or a node it does not belong to, none reaches out of the drawing, the drawing
    fills its output (wider, at its min width, it scrolls in its own box: its labels keep their size), and
    the views and the rewrite view are cut nowhere at the right, and no slider's track is squeezed (the
    rewrite view's was 0 px wide between its buttons). Prints each drawing's width against its output's (the
    tour's automaton, at the width its labels need, is about twice the output's and scrolls). Screenshots
    ``graphs-*-800.png``."""
    clock = budget(BUDGET_S)
    page.set_viewport_size({"width": 800, "height": 1000})
    open_notebook(page, widgets_notebook, clock)
    automata, rewrite = page.locator(".cepkit-automaton-view"), page.locator(".cepkit-rewrite-view")
    clock.until(lambda: automata.count() == 3 and rewrite.count() == 1, "the automata and the rewrite view", page)
    problems = {}
    for name, view in zip(["tour", "farm", "ses"], automata.all()):
        view.scroll_into_view_if_needed()
        clock.wait(view.locator(".js-plotly-plot .scatterlayer .trace").first, f"the {name} figure")
        page.wait_for_timeout(300)
        dom.screenshot(page, view, artifacts / f"graphs-{name}-800.png")
        plot = view.locator(".js-plotly-plot").first
        figure = dom.read_figure(plot)
        assert figure["texts"] and figure["height"] > 100, name
        assert figure["output"] < 500, f"not the narrow output: {figure['output']:.0f} px"
        found = {
            "collisions": dom.collisions(figure),
            "texts out of the drawing": plot.evaluate(TEXTS_OUTSIDE),
            "cut at the right": dom.cut_at_the_right(view.locator(OUTPUT)),
            "sliders squeezed": view.locator(".widget-slider .slider-container").evaluate_all(SQUEEZED),
        }
        print(f"{name}: the drawing {figure['width']:.0f} px wide in a {figure['output']:.0f} px output")
        if figure["width"] < 0.97 * figure["output"]:
            found["narrow"] = f"{figure['width']:.0f} px wide in a {figure['output']:.0f} px output"
        problems.update({f"{name}: {k}": v for k, v in found.items() if v})
    view = rewrite.first
    view.scroll_into_view_if_needed()
    dom.screenshot(page, view, artifacts / "graphs-rewrite-800.png")
    problems["rewrite: cut at the right"] = dom.cut_at_the_right(view.locator(OUTPUT))
    problems["rewrite: toggle labels cut"] = view.locator(".widget-toggle-button").evaluate_all(
        "buttons => buttons.filter(b => b.scrollWidth > b.clientWidth + 1).map(b => b.textContent)"
    )
    # (its track was 0 px wide beside the Previous and Next buttons)
    problems["rewrite: sliders squeezed"] = view.locator(".widget-slider .slider-container").evaluate_all(SQUEEZED)
    assert not {k: v for k, v in problems.items() if v}, problems
    assert not [e for e in page.script_errors if "Error" in e], page.script_errors
