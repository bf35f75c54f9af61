"""Every tutorial notebook in JupyterLab in headless Chromium, checked as a person would look at it: every cell
runs without a traceback, no script error on the page, every figure on show is drawn and fills its output's
width, and a screenshot of each output that holds a figure or a widget goes to ``test-artifacts/`` (named
``<notebook>-<n>.png``) to be looked at. nbval runs the same cells and checks their results; this test checks
what they look like. Notebook 10's ``ExplainView`` is also used: clicking an event on its strip takes it out of
the candidate, clicking it again puts it back. The tour has its own test, ``test_tour_notebook.py``.

A notebook's Spark section (notebook 12's last cell, which prints that Spark finds the local rows) is left out
here (``Lab.without_spark``): starting Spark in the page's kernel took 20-30 s, nbval runs it and checks its
result, and its output is text.
"""

import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted(
    p.name for p in (Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb") if not p.name.startswith("01-")
)
BUDGET_S = 240  # per notebook, from opening the page (2 cores shared with Spark tests)
MIN_WIDTH_RATIO = 0.95  # a figure fills at least this much of its output's width
CHOSEN = "rgb(214, 39, 40)"  # ExplainView's red: the candidate's events on the strip

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


def widget_outputs(page):
    """Output areas that are a plotly figure (JupyterLab's plotly renderer) or hold one, or an ipywidget."""
    return page.locator(".jp-OutputArea-output:is(.js-plotly-plot, :has(.js-plotly-plot, .jupyter-widgets))")


def check_explain_view(page, budget, dom, artifacts):
    """Notebook 10 ends with an ExplainView of the closest near miss: its verdict and the failing condition
    underlined show; clicking one of the candidate's (red) events on the strip removes it, clicking it again
    brings the verdict back."""
    output = page.locator(".jp-OutputArea-output").filter(has=page.locator(".cepkit-plotly")).last
    budget.wait(output.get_by_text("is not a match"), "the ExplainView's verdict")
    budget.wait(output.locator("u", has_text="f.visib < 0.25"), "the failing condition underlined")
    dom.screenshot(page, output, artifacts / "10-why-not-explain-view.png")
    box = output.locator("input[type='text']").first
    before = box.input_value()
    assert re.fullmatch(r"\d+,\d+", before), before

    def red_points():
        return output.locator(".js-plotly-plot .scatterlayer path.point").evaluate_all(
            f"""points => points.filter(p => p.style.fill === '{CHOSEN}').map(p => {{
                const r = p.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})"""
        )

    red = red_points()
    assert len(red) == 2, f"the candidate's two events drawn red on the strip, found {len(red)}"
    page.mouse.move(*red[1])
    page.mouse.click(*red[1])
    budget.until(lambda: box.input_value() != before, "the clicked event out of the candidate", page, poll_ms=100)
    remaining = box.input_value()
    assert re.fullmatch(r"\d+", remaining) and remaining in before.split(","), (before, remaining)
    budget.wait(output.get_by_text(f"({remaining},) is not a match"), "the one-event candidate explained")
    budget.until(lambda: len(red_points()) == 1, "the strip redrawn with one red event", page, poll_ms=100)
    page.mouse.move(*red[1])
    page.mouse.click(*red[1])
    budget.until(lambda: box.input_value() == before, "the event clicked back into the candidate", page, poll_ms=100)
    budget.wait(output.get_by_text(re.compile(r"\{f: \d+, d: \d+\} is not a match")), "the verdict again")
    budget.until(lambda: len(red_points()) == 2, "the strip redrawn with two red events", page, poll_ms=100)


EXTRA_CHECKS = {"10-why-not.ipynb": check_explain_view}


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_runs_and_its_figures_fill_their_outputs(notebook, lab, page, open_notebook, budget, dom, artifacts):
    budget = budget(BUDGET_S)
    open_notebook(page, lab.without_spark(notebook), budget)
    assert page.locator(".jp-OutputArea-output", has_text="Traceback").count() == 0
    undrawn = []

    def every_figure_drawn():
        undrawn[:] = dom.undrawn_figures(page)
        return not undrawn

    try:
        budget.until(every_figure_drawn, "every figure drawn", page, limit_s=60)
    except TimeoutError:
        pytest.fail(f"figures not drawn (or under 100 px high) 60 s after the last cell ran: {undrawn}")
    plots = page.locator(".js-plotly-plot:visible")
    narrow = []
    for i in range(plots.count()):
        ratio = dom.width_ratio(plots.nth(i))
        if ratio < MIN_WIDTH_RATIO:
            narrow.append((i, round(ratio, 2), plots.nth(i).inner_text()[:60]))
    outputs = widget_outputs(page)
    stem = notebook.removesuffix(".ipynb")
    for i in range(outputs.count()):
        dom.screenshot(page, outputs.nth(i), artifacts / f"{stem}-{i + 1}.png")
    assert not narrow, f"figures narrower than their output (index, ratio, text): {narrow}"
    if notebook in EXTRA_CHECKS:
        EXTRA_CHECKS[notebook](page, budget, dom, artifacts)
    assert not page.script_errors, page.script_errors
