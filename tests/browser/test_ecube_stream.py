"""The streaming ``ECubeView`` (``ECubeView.from_batches``, notebook 09) in JupyterLab in headless Chromium, at
800 and 1,400 px: after three of five micro-batches the table counts each query's matches so far as a
second streaming cube fed the same batches does, the live panel below says three batches and their events,
the plan's figure is drawn and fills the output, and nothing spills past the output's right edge.
Screenshots: ``test-artifacts/ecube-stream-800.png``, ``ecube-stream-1400.png``."""

import re

import pytest

BUDGET_S = 240
CELLS = [
    """import cepkit
from cepkit.ecube.workloads import COMPANIES, concept_workload, trades
from cepkit.widgets import ECubeView
from cepkit.widgets.live import replay
hierarchy = cepkit.Hierarchy(COMPANIES)
events = trades(1000, seed=5)
view = ECubeView.from_batches(cepkit.ECube(concept_workload(), hierarchy), replay(events, every=400))
view.run(2)  # the first batch at once, two more here: three of five
expected = cepkit.ECube(concept_workload(), hierarchy).stream()
for batch in replay(events, every=400):
    if expected.batches == 3:
        break
    expected.extend(batch)
print("expected", {name: len(m) for name, m in expected.results.items()}, expected.events)""",
    "view",
]

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.mark.parametrize("width", [800, 1400])
def test_the_streaming_cube_view_counts_the_matches_so_far(lab, page, open_notebook, budget, dom, artifacts, width):
    budget = budget(BUDGET_S)
    page.set_viewport_size({"width": width, "height": 1000})
    open_notebook(page, lab.write_notebook(f"ecube-stream-{width}.ipynb", CELLS), budget)
    printed = page.get_by_text(re.compile(r"expected \{")).first
    budget.wait(printed, "the expected counts")
    counts, events = re.search(r"expected (\{.*\}) (\d+)", printed.inner_text()).groups()
    counts = {name: int(n) for name, n in re.findall(r"'(\w+)': (\d+)", counts)}
    view = page.locator(".cepkit-ecube-view").first
    budget.wait(view.locator(".js-plotly-plot .scatterlayer .trace").first, "the plan's figure")
    budget.wait(view.locator(".cepkit-live-batches").first, "the live panel")
    view.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    dom.screenshot(page, view, artifacts / f"ecube-stream-{width}.png")

    rows = view.locator("table.cepkit-ecube tr").evaluate_all(
        "rows => rows.slice(1).map(r => [...r.cells].map(c => c.textContent))"
    )
    assert {row[0]: int(row[2]) for row in rows} == counts and min(counts.values()) > 0
    assert "matches so far" in view.locator("table.cepkit-ecube").inner_text()
    stats = view.locator(".cepkit-live-stats").inner_text()
    assert "3 batches" in stats and f"{int(events):,} events" in stats, stats
    figure = dom.read_figure(view.locator(".js-plotly-plot").first)
    assert figure["texts"] and figure["height"] >= 100
    assert figure["width"] >= 0.97 * figure["output"], figure
    assert not dom.collisions(figure), dom.collisions(figure)
    spill = view.evaluate("""v => { const out = v.closest('.jp-OutputArea-output').getBoundingClientRect().right;
        const clipped = e => { for (let a = e.parentElement; a && a !== v; a = a.parentElement)  // scrolls inside
            if (getComputedStyle(a).overflowX !== 'visible' && a.getBoundingClientRect().right <= out + 1) return true;
            return false; };
        return [...v.querySelectorAll('*')].filter(e => e.offsetParent !== null
            && !(e instanceof SVGElement)  // plotly's drag handles reach past its figure: the figures are checked whole
            && e.getBoundingClientRect().right > out + 1 && !clipped(e)).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right - out)); }""")
    assert spill == [], spill
    wide = view.evaluate("""v => { const out = v.closest('.jp-OutputArea-output').getBoundingClientRect().right;
        return [...v.querySelectorAll('.js-plotly-plot')].map(f => Math.round(f.getBoundingClientRect().right - out))
            .filter(over => over > 1); }""")
    assert wide == [], f"figures past the output's right edge by {wide} px"
    # the latest matches' caption is read whole: it wraps inside the output (only the table scrolls sideways)
    caption = view.locator(".cepkit-live-grid small").first
    past = caption.evaluate("""c => Math.round(c.getBoundingClientRect().right
        - c.closest('.jp-OutputArea-output').getBoundingClientRect().right)""")
    assert past <= 1, f"the live grid's caption runs {past} px past the output"
    assert dom.undrawn_figures(page) == []
    assert not page.script_errors, page.script_errors
