"""The tour in a real browser: ``notebooks/01-tour.ipynb`` run in JupyterLab in headless Chromium
(``conftest.py``), the match timeline and the automaton checked to render as plotly figures.

Every wait draws on one budget, ``BUDGET_S`` from the moment the page opens, so a slow run fails naming the
step that ran out instead of running on.
"""

import pytest

NOTEBOOK = "01-tour.ipynb"
DONE_MARKER = "tour complete"  # printed by the tour's last cell
BUDGET_S = 300  # every wait together, from opening the page (load ~10 on 2 cores)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("spark"),
]  # the tour starts Spark: never beside the other JVM-heavy tests


def test_tour_runs_in_chromium_and_draws_the_timeline_and_the_automaton(page, open_notebook, budget, dom, artifacts):
    budget = budget(BUDGET_S)
    open_notebook(page, NOTEBOOK, budget)
    budget.wait(page.locator(".jp-OutputArea-output", has_text=DONE_MARKER), "the tour's last cell")
    timeline = page.locator(".js-plotly-plot[data-drawn-at]").filter(has_text="matches").first
    automaton = page.locator(".cepkit-automaton-view .js-plotly-plot[data-drawn-at]").first
    budget.wait(timeline, "the timeline figure drawn")
    budget.wait(automaton, "the automaton figure drawn")
    assert timeline.locator(".scatterlayer .trace").count() >= 3  # events, matches, selected...
    assert automaton.locator(".textpoint text", has_text="q0").count() >= 1
    assert page.locator(".jp-OutputArea-output", has_text="Traceback").count() == 0
    # every figure on show was drawn: the tour's timeline, the automaton, the workbench's timeline
    budget.until(
        lambda: page.locator(".js-plotly-plot[data-drawn-at]:visible").count() >= 3 and not dom.undrawn_figures(page),
        "three drawn figures",
        page,
    )
    assert all(dom.width_ratio(plot) > 0.95 for plot in page.locator(".js-plotly-plot:visible").all())
    assert not page.script_errors, page.script_errors
    dom.screenshot(page, timeline, artifacts / "01-tour-timeline.png")
    dom.screenshot(page, automaton, artifacts / "01-tour-automaton.png")
    workbench = page.locator(".jp-OutputArea-output").filter(has=page.locator(".cepkit-editor")).first
    dom.screenshot(page, workbench, artifacts / "01-tour-workbench.png")
    on_spark = page.locator(".jp-OutputArea-output").filter(has=page.locator(".cepkit-spark-workbench")).last
    budget.wait(on_spark.locator(".cepkit-paged-table tbody tr td").nth(1), "the Spark workbench's grid")
    dom.screenshot(page, on_spark, artifacts / "01-tour-spark-workbench.png")
