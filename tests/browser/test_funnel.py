"""The Workbench's Funnel tab in JupyterLab in headless Chromium, at 800 and 1,400 px: after a run of the funnel
recipe, opening the tab draws one bar per step with its count, says how many candidates completed and
stopped, and pages every partial match; nothing spills past the output's right edge and the page logs no
script error. Screenshots: ``test-artifacts/funnel-800.png``, ``funnel-1400.png``."""

import re

import pytest

BUDGET_S = 240
CELLS = [
    """import cepkit
from cepkit.recipes import get
from cepkit.widgets import Workbench
recipe = get("funnel")
expected = cepkit.funnel(recipe.query, recipe.events(), engine="reference")
partial = cepkit.partial_matches(recipe.query, recipe.events(), engine="reference")
print("expected", expected["candidates"].tolist(), len(partial))""",
    """workbench = Workbench(recipe.events(), query=recipe.query)
workbench.run()
workbench""",
]

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.mark.parametrize("width", [800, 1400])
def test_the_funnel_tab_draws_the_steps_and_pages_every_partial_match(
    lab, page, open_notebook, budget, dom, artifacts, width
):
    budget = budget(BUDGET_S)
    page.set_viewport_size({"width": width, "height": 1000})
    open_notebook(page, lab.write_notebook(f"funnel-{width}.ipynb", CELLS), budget)
    printed = page.get_by_text(re.compile(r"expected \[")).first
    budget.wait(printed, "the reference's funnel")
    counts, partial = re.search(r"expected \[(.*)\] (\d+)", printed.inner_text()).groups()
    counts = [int(c) for c in counts.split(",")]
    workbench = page.locator(".jp-OutputArea-output").filter(has=page.locator(".cepkit-editor")).first
    budget.wait(workbench.locator("table.cepkit-grid tbody tr").first, "the results grid's rows")
    workbench.locator(".lm-TabBar-tab", has_text="Funnel").click()
    view = workbench.locator(".cepkit-funnel")
    budget.wait(view.locator(".js-plotly-plot .main-svg").first, "the funnel's bars")
    view.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    dom.screenshot(page, workbench, artifacts / f"funnel-{width}.png")

    bars = view.locator(".js-plotly-plot .bars .point")
    assert bars.count() == len(counts) == 3
    labels = view.locator(".js-plotly-plot .bars text").evaluate_all("texts => texts.map(t => t.textContent)")
    assert [int(t.split()[0].replace(",", "")) for t in labels] == counts
    summary = view.locator(".cepkit-funnel-summary").inner_text()
    assert f"{counts[-1]} completed, {partial} stopped before the last step" in summary
    assert re.search(rf"\b{partial} partial matches\b", view.inner_text())
    assert view.locator("table.cepkit-grid tbody tr").count() >= 1
    spill = view.evaluate("""v => { const out = v.closest('.jp-OutputArea-output').getBoundingClientRect().right;
        return [...v.querySelectorAll('*')].filter(e => e.offsetParent !== null
            && !e.closest('.cepkit-table-scroll')          // the grid scrolls sideways inside its box
            && e.getBoundingClientRect().right > out + 1).length; }""")
    assert spill == 0
    assert dom.undrawn_figures(page) == []
    assert not page.script_errors, page.script_errors
