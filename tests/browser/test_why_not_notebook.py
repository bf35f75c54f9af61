"""Notebook 10 in a real browser (``conftest.py``): every cell runs in JupyterLab in headless Chromium, the
``ExplainView`` at its end renders its verdict and the query text with the failing condition underlined; the
screenshot lands in ``test-artifacts/``."""
import pytest

NOTEBOOK = "10-why-not.ipynb"
BUDGET_S = 600                           # loads ~25 on 2 cores seen: the month of flights is loaded and judged

pytestmark = [pytest.mark.browser]


def test_why_not_notebook_renders_the_explain_view(page, open_notebook, budget, dom, artifacts):
    budget = budget(BUDGET_S)
    open_notebook(page, NOTEBOOK, budget)
    verdict = page.locator(".jp-OutputArea-output", has_text="is not a match").last
    budget.wait(verdict, "the ExplainView's verdict")
    underline = page.locator(".jp-OutputArea-output u", has_text="f.visib < 0.25").last
    budget.wait(underline, "the failing condition underlined")
    assert page.locator(".jp-OutputArea-output", has_text="Traceback").count() == 0
    assert not [e for e in page.script_errors if "TypeError" in e], page.script_errors
    verdict.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "10-why-not-explain-view.png"))
