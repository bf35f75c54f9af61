"""ScenarioView in JupyterLab in headless Chromium, at 800 and 1,400 px: changing a rate updates the summary,
"Open in a Workbench" shows the scenario's stream in a Workbench, and Run there lists the matches cepkit.match
gives. Screenshots: ``test-artifacts/scenario-<width>.png``."""

import re

import pytest

BUDGET_S = 240
CELLS = [
    """import cepkit
from cepkit.simulate import Scenario, choice, uniform
from cepkit.widgets import ScenarioView
shop = (Scenario(seed=3, duration=1800).add("AddToCart", rate="2/min", user=choice(range(10)))
        .add("Checkout", rate="1/min", user=choice(range(10)), total=uniform(5, 90)))
QUERY = "PATTERN SEQ(AddToCart a, !Checkout c) WITHIN 5 min PARTITION BY user"
view = ScenarioView(shop, QUERY)
view""",
]

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.mark.parametrize("width", [800, 1400])
def test_a_scenario_reaches_the_workbench_and_runs(lab, page, open_notebook, budget, dom, artifacts, width):
    budget = budget(BUDGET_S)
    page.set_viewport_size({"width": width, "height": 1100})
    open_notebook(page, lab.write_notebook(f"scenario-{width}.ipynb", CELLS), budget)
    view = page.locator(".cepkit-scenario").first
    budget.wait(view, "the scenario's controls")
    summary = view.get_by_text(re.compile(r"events \(")).first
    before = summary.inner_text()
    rate = view.locator(".widget-text", has_text="Checkout /min").locator("input")
    rate.fill("6")
    rate.press("Enter")
    budget.until(lambda: summary.inner_text() != before, "the summary after a rate change", page)
    view.get_by_role("button", name="Open in a Workbench").click()
    workbench = view.locator(".cepkit-workbench")
    budget.wait(workbench.locator(".cepkit-editor .cm-content"), "the workbench")
    assert "AddToCart a, !Checkout c" in workbench.locator(".cepkit-editor .cm-content").inner_text()
    run = workbench.get_by_role("button", name="Run")
    budget.until(lambda: run.is_enabled(), "Run enabled", page)
    run.click()
    budget.wait(workbench.get_by_text(re.compile(r"\d+ match(es)? by engine")), "the run's status")
    status = workbench.get_by_text(re.compile(r"\d+ match(es)? by engine")).first.inner_text()
    assert int(status.split()[0].replace(",", "")) > 0
    budget.wait(workbench.locator("table.cepkit-grid tbody tr").first, "the results grid's rows")
    view.scroll_into_view_if_needed()
    dom.screenshot(page, view, artifacts / f"scenario-{width}.png")
    assert not page.script_errors, page.script_errors
