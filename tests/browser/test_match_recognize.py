"""The Workbench with a MATCH_RECOGNIZE query in headless Chromium, at 800 and 1,400 px: the editor takes
the notation (a misspelt column underlined, "did you mean" under it), Run shows the matches in the grid and
on the timeline, the SQL rows tab pages the query's output rows, Explain says why the picked match's rows
are a match. Screenshots: ``test-artifacts/match-recognize-<width>.png``, ``match-recognize-rows-<width>.png``."""

import re

import pytest

BUDGET_S = 240
CELLS = [
    """import numpy as np, pandas as pd
import cepkit
from cepkit.widgets import Workbench
rng = np.random.default_rng(1)
prices = pd.DataFrame({"type": "tick", "ts": np.arange(400), "id": rng.integers(0, 4, 400),
                       "price": rng.integers(0, 20, 400)})
QUERY = '''SELECT * FROM prices MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
    MEASURES FIRST(DOWN.ts) AS top, LAST(UP.ts) AS back, COUNT(DOWN.*) AS falls
    PATTERN (DOWN+ UP+) DEFINE DOWN AS prise < PREV(price), UP AS price > PREV(price))'''
expected = cepkit.sql(QUERY.replace("prise", "price"), prices)
workbench = Workbench(prices, query=QUERY)
print("expected rows", len(expected))
workbench"""
]

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.mark.parametrize("width", [800, 1400])
def test_match_recognize_runs_in_the_workbench(lab, page, open_notebook, budget, dom, artifacts, width):
    budget = budget(BUDGET_S)
    page.set_viewport_size({"width": width, "height": 1000})
    name = lab.write_notebook(f"match-recognize-{width}.ipynb", CELLS)
    open_notebook(page, name, budget)
    expected = int(re.search(r"expected rows (\d+)", page.locator(".jp-OutputArea-output").first.inner_text())[1])
    assert expected > 10
    workbench = page.locator(".jp-OutputArea-output").filter(has=page.locator(".cepkit-editor")).first
    editor = workbench.locator(".cepkit-editor .cm-content")
    budget.wait(editor, "the editor")

    # the misspelt column: underlined where it is, "did you mean" in the diagnostics line, Run disabled
    underline = workbench.locator(".cepkit-editor .cm-lintRange-error")
    budget.until(lambda: underline.count() == 1 and underline.inner_text() == "prise", "the column underlined", page)
    assert "did you mean 'price'?" in workbench.locator(".cepkit-diagnostics").inner_text()
    run = workbench.get_by_role("button", name="Run")
    assert run.is_disabled()
    underline.dblclick()  # the word selected, then typed over
    page.keyboard.type("price", delay=10)
    budget.until(lambda: run.is_enabled(), "Run enabled", page)
    assert "MATCH_RECOGNIZE" in workbench.locator(".cepkit-diagnostics").inner_text()

    run.click()
    budget.wait(workbench.get_by_text(re.compile(r"\d+ match(es)? by engine match_recognize")), "the run's status")
    status = workbench.get_by_text(re.compile(r"by engine match_recognize")).inner_text()
    shown = int(re.search(r"(\d+) match", status)[1])
    assert shown == expected  # no empty matches here: one output row per match
    assert f"{expected} output rows" in workbench.inner_text()
    info = workbench.locator(".cepkit-results").get_by_text(re.compile(r"of \d+ matches"))
    budget.until(lambda: f"of {expected} matches" in info.inner_text(), "the grid's count", page)
    assert not dom.undrawn_figures(page)
    assert dom.cut_at_the_right(workbench) == []
    dom.screenshot(page, workbench, artifacts / f"match-recognize-{width}.png")

    workbench.get_by_role("tab", name="SQL rows").click()
    rows_info = workbench.get_by_text(re.compile(r"of \d+ rows"))
    budget.until(
        lambda: rows_info.count() and f"of {expected} rows" in rows_info.first.inner_text(), "the SQL rows' count", page
    )
    assert "falls" in workbench.inner_text()  # a measure's column
    assert dom.cut_at_the_right(workbench) == []
    dom.screenshot(page, workbench, artifacts / f"match-recognize-rows-{width}.png")

    workbench.locator("table.cepkit-grid tbody tr").first.click()  # pick the grid's first match
    workbench.get_by_role("tab", name="Explain").click()
    budget.until(lambda: re.search(r"are match \d+", workbench.inner_text()), "Explain of the picked match", page)
    assert not page.script_errors, page.script_errors
