"""The tour in a real browser: ``notebooks/01-tour.ipynb`` run in JupyterLab in headless Chromium
(``conftest.py``), the match timeline, the automaton and the workbench checked to render as plotly figures.

The browser runs the tour up to its Spark section (``Lab.without_spark``): that section's cells start Spark
in the kernel (half a minute and more), nbval runs them and checks that Spark and the local engine agree, and
``test_spark_live.py`` checks the Workbench on Spark in the browser (its grid's rows, its sampled timeline, at
1,400 and 800 px). Without Spark the test shares the "browser" group's worker, not the Spark tests' one.

Every wait draws on one budget, ``BUDGET_S`` from the moment the page opens, so a slow run fails naming the
step that ran out instead of running on.
"""

import pytest

NOTEBOOK = "01-tour.ipynb"
BUDGET_S = 300  # every wait together, from opening the page (load ~10 on 2 cores)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


def test_tour_runs_in_chromium_and_draws_the_timeline_and_the_automaton(
    lab, page, open_notebook, budget, dom, artifacts
):
    budget = budget(BUDGET_S)
    local = lab.without_spark(NOTEBOOK)
    assert local != NOTEBOOK, "the tour has no Spark section any more: run it whole"
    open_notebook(page, local, budget)
    workbench = page.locator(".jp-OutputArea-output").filter(has=page.locator(".cepkit-editor")).first
    budget.wait(workbench, "the tour's workbench (its last cell before Spark)")
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
    dom.screenshot(page, workbench, artifacts / "01-tour-workbench.png")
