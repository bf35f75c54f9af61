"""The Workbench over a million events in JupyterLab in Chromium (issue 21): once the kernel has computed a
view, the page shows it within 3 s: the timeline and the results grid after Run, the Explain tab and the
Strategies tab once clicked. Each view shows part of a large result and says so (the timeline samples the
matches and bins the unmatched events, the grid pages, Explain's strip holds the events around the
candidate, Strategies draws a sample per strategy).

The kernel's times come from a small widget of the notebook (``stamps``) that a ``selected_index`` observer
registered after the Workbench's own fills in (so once the tab is built: for Strategies, once its runs and
its figure are done); the page's, from the time the figure was drawn (``data-drawn-at``, set by cepkit's
plotly view) or, for the grid, the first poll that sees its rows (an upper bound). The 3 s hold on a quiet
machine; the bound is scaled by the load average per core above 1 (on 2 shared cores at load 20 the page
gets a tenth of a core), and the figures are written to ``test-artifacts/million-render.txt``. Screenshots:
``test-artifacts/million-*.png`` at 1,400 and 800 px.
"""

import json
import os
import time

import pytest

BUDGET_S = 420
RENDER_S = 3.0  # on a quiet machine; scaled by the load per core above 1 (the page's CPU share shrinks)
N = 1_000_000
CELLS = [
    f"""import json, threading, time
import ipywidgets as widgets
import numpy as np, pandas as pd
from cepkit.widgets import Workbench
rng = np.random.default_rng(0)
n = {N}
events = pd.DataFrame({{"type": rng.choice(list("ABCX"), n, p=[.01, .01, .01, .97]),
                        "ts": pd.Timestamp("2024-01-01", tz="UTC")
                              + pd.to_timedelta(np.cumsum(rng.integers(0, 3, n)), unit="s"),
                        "v": rng.integers(0, 100, n)}})
wb = Workbench(events, query="SEQ(A a, B b, C c) WITHIN 1 min", engine="automaton")
wb.run()
wb.selected = 5
times = {{"run": time.time()}}
stamps = widgets.HTML(json.dumps(times), layout=widgets.Layout(display="none"))
stamps.add_class("cepkit-test-stamps")

def stamp(name):
    times[name] = time.time()
    stamps.value = json.dumps(times)

def built(change):      # after the Workbench's own observer: the tab is built
    title = wb.tabs.get_title(change["new"])
    if title == "Strategies":
        threading.Thread(target=lambda: (wb.strategy_compare.wait(), stamp(title)), daemon=True).start()
    else:
        stamp(title)

wb.tabs.observe(built, "selected_index")
widgets.VBox([wb, stamps])""",
]

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


def kernel_time(page, name: str) -> float:
    """The kernel's time (epoch ms) of ``name`` from the stamps widget (0 before it is there)."""
    text = page.locator(".cepkit-test-stamps").first.text_content() or "{}"
    return json.loads(text).get(name, 0) * 1000


def drawn_at(plot) -> float:
    return float(plot.get_attribute("data-drawn-at") or 0)


def test_a_million_events_render_within_3_s_of_their_computation(lab, page, open_notebook, budget, dom, artifacts):
    budget = budget(BUDGET_S)
    open_notebook(page, lab.write_notebook("million.ipynb", CELLS), budget)
    workbench = page.locator(".cepkit-workbench").first
    late = {}

    # Run: the timeline (a sample of the matches, the unmatched events binned, said in its title) and the grid
    grid_rows = workbench.locator(".cepkit-paged-table tbody tr")
    budget.wait(grid_rows.first, "the results grid's first page")
    late["grid"] = page.evaluate("Date.now()") - kernel_time(page, "run")  # an upper bound
    timeline = workbench.locator(".js-plotly-plot[data-drawn-at]").first
    budget.wait(timeline, "the timeline drawn")
    late["timeline"] = drawn_at(timeline) - kernel_time(page, "run")
    title = timeline.locator(".gtitle").text_content()
    assert f"{N:,} events" in title and "binned" in title and "showing 300 of" in title, title
    info = workbench.locator(".cepkit-results .cepkit-table-info").first.inner_text()
    assert info.startswith("rows 1–10 of ") and grid_rows.count() == 10, info
    dom.screenshot(page, workbench, artifacts / "million-run-1400.png")

    for tab, view in (("Explain", ".cepkit-explain-view"), ("Strategies", ".cepkit-strategy-compare")):
        clicked = time.monotonic()
        workbench.locator(".lm-TabBar-tab", has_text=tab).first.click()
        plot = workbench.locator(f"{view} .js-plotly-plot[data-drawn-at]").first
        budget.wait(plot, f"the {tab} tab's figure")
        budget.until(lambda: kernel_time(page, tab), f"the kernel's time of the {tab} tab", page)
        late[tab] = drawn_at(plot) - kernel_time(page, tab)
        print(f"{tab}: {time.monotonic() - clicked:.1f} s from the click to the figure")
        if tab == "Explain":  # the strip shows the events around the candidate, and says so
            assert f"of the {N:,} events" in workbench.locator(f"{view} .gtitle").first.text_content()
        dom.screenshot(page, workbench, artifacts / f"million-{tab.lower()}-1400.png")
    table = workbench.locator(".cepkit-strategy-compare table").first.inner_text()
    assert all(s in table for s in ("NEXT", "MAX", "ROBUST_STNM")) and "reference" not in table, table
    assert "drawn" in workbench.locator(".cepkit-strategy-compare .gtitle").first.text_content()  # "n of N drawn"

    page.set_viewport_size({"width": 800, "height": 1000})
    page.wait_for_timeout(500)
    dom.screenshot(page, workbench, artifacts / "million-strategies-800.png")
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    bound = RENDER_S * max(1.0, load)
    (artifacts / "million-render.txt").write_text(
        f"load per core {load:.1f}, bound {bound:.1f} s\n"
        + "".join(f"{view}: {ms / 1000:.2f} s after its computation\n" for view, ms in late.items())
    )
    print(late, f"load per core {load:.1f}")
    assert all(ms < bound * 1000 for ms in late.values()), (late, bound)
    assert not page.script_errors, page.script_errors
