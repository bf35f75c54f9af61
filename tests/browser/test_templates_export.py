"""The Workbench's query editor, templates picker, figure download, "copy as code" and HTML report in
headless Chromium, at 800 and 1,400 px: typing ``p.`` offers the stream's attributes of ``p``'s type; a
misspelt keyword is underlined at its span; picking the fraud recipe fills the editor and Run shows its
matches; the timeline's modebar saves it as SVG; "Copy as code" shows the Python of that run; the report
written by ``to_html`` opens from disk with no script error, its timeline, automaton and funnel drawn and
every match in its table. Screenshots: ``test-artifacts/editor-completion-<width>.png``,
``editor-error-<width>.png``, ``templates-<width>.png``, ``report-<width>.png``."""

import re

import pytest

BUDGET_S = 240
CELLS = [
    """import cepkit
from cepkit.recipes import get
from cepkit.widgets import Workbench
fraud = get("fraud")
workbench = Workbench(fraud.events())
workbench""",
    """import time
while workbench.running or workbench.last_run is None:   # the Run the test clicks
    time.sleep(0.2)
workbench.to_html("report.html", title="fraud")
print("report written", len(workbench.matches))""",
]

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.mark.parametrize("width", [800, 1400])
def test_a_template_fills_the_editor_runs_and_exports(
    lab, chromium, page, open_notebook, budget, dom, artifacts, width
):
    budget = budget(BUDGET_S)
    page.set_viewport_size({"width": width, "height": 1000})
    name = lab.write_notebook(f"templates-{width}.ipynb", CELLS[:1])
    open_notebook(page, name, budget)
    workbench = page.locator(".jp-OutputArea-output").filter(has=page.locator(".cepkit-editor")).first
    editor = workbench.locator(".cepkit-editor .cm-content")
    budget.wait(editor, "the editor")

    # completion: after "p." the attributes of Purchase events (ts, amount, card), as a person sees them
    editor.click()
    page.keyboard.type("Purchase p WHERE p.", delay=20)
    options = page.locator(".cm-tooltip-autocomplete li")
    # the list shown while "Purchase" was typed (event types) may still be open: wait for the attributes'
    budget.until(lambda: any(o.startswith("amount") for o in options.all_inner_texts()), "the attributes' list", page)
    offered = options.all_inner_texts()
    assert any(o.startswith("amount") for o in offered) and any(o.startswith("card") for o in offered), offered
    colour = editor.evaluate("""el => { const s = [...el.querySelectorAll('span')].find(s => s.textContent === 'WHERE');
                                        return s ? getComputedStyle(s).color : null; }""")
    assert colour == "rgb(130, 80, 223)", colour  # the keyword's colour (scripts/editor/editor.js)
    dom.screenshot(
        page, workbench.locator(".cepkit-editor").locator(".."), artifacts / f"editor-completion-{width}.png"
    )
    page.keyboard.press("Enter")  # the first option taken
    budget.until(lambda: re.search(r"p\.\w+", editor.inner_text()), "the attribute completed", page)
    page.keyboard.press("Control+a")  # an iteration's event: b[i].
    page.keyboard.type("Purchase+ b WHERE b[i].", delay=20)
    budget.until(lambda: any(o.startswith("amount") for o in options.all_inner_texts()), "amount for b[i].", page)
    page.keyboard.press("Escape")

    # in MATCH_RECOGNIZE text the notation's words (MEASURES); back in cepkit's text, cepkit's (CONSUME)
    labels = page.locator(".cm-tooltip-autocomplete .cm-completionLabel")
    page.keyboard.press("Control+a")
    page.keyboard.type("SELECT * FROM events MATCH_RECOGNIZE (ORDER BY ts ME", delay=10)

    def offered(word):  # asked again until the kernel has switched the editor's words
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        page.keyboard.press("Escape")
        page.keyboard.press("Control+Space")
        try:  # the list opens a moment after the key
            labels.filter(has_text=re.compile(f"^{word}$")).first.wait_for(timeout=2000)
            return True
        except PlaywrightTimeout:
            return False

    budget.until(lambda: offered("MEASURES"), "MEASURES offered in SQL text", page)
    page.keyboard.press("Control+a")
    page.keyboard.type("A a CO", delay=10)
    budget.until(lambda: offered("CONSUME"), "CONSUME offered in cepkit text", page)
    page.keyboard.press("Escape")

    # a misspelt keyword: underlined at its span, its message in the diagnostics line
    page.keyboard.press("Control+a")
    page.keyboard.type("Purchase p ; Purchase q WITHN 10 m", delay=10)
    budget.until(lambda: set(labels.all_inner_texts()) == {"ms", "min"}, "the units after a number (no MAX)", page)
    page.keyboard.type("in", delay=10)
    page.keyboard.press("Escape")
    underline = workbench.locator(".cepkit-editor .cm-lintRange-error")
    budget.until(lambda: underline.count() == 1 and underline.inner_text() == "WITHN", "the error underlined", page)
    assert "WITHIN" in workbench.locator(".cepkit-diagnostics").inner_text()
    # the message wraps between words (JupyterLab's pre breaks anywhere); the caret line never wraps. Read in one
    # call: each keystroke's check replaces the pre elements, and a detached one has no computed style
    message, snippet = workbench.locator(".cepkit-diagnostics").evaluate(
        """d => [...d.querySelectorAll('pre')].slice(0, 2).map(p => ({
            wordBreak: getComputedStyle(p).wordBreak, whiteSpace: getComputedStyle(p).whiteSpace, text: p.innerText}))"""
    )
    assert message["wordBreak"] == "normal", message
    assert snippet["whiteSpace"] == "pre" and "^^^^^" in snippet["text"], snippet
    unit = editor.evaluate("""el => { const s = [...el.querySelectorAll('span')].find(s => s.textContent === 'min');
                                      return s ? getComputedStyle(s).fontStyle : null; }""")
    assert unit == "italic", unit  # "10 min": a unit, not the MIN aggregate
    dom.screenshot(page, workbench.locator(".cepkit-editor").locator(".."), artifacts / f"editor-error-{width}.png")

    picker = workbench.locator("select").filter(has=page.locator("option", has_text="templates…"))
    picker.select_option(label="Card testing: a tiny purchase, then a large one")
    budget.until(lambda: "small.amount < 5" in editor.inner_text(), "the template in the editor", page)
    budget.until(lambda: underline.count() == 0, "no error underlined", page)
    run = workbench.get_by_role("button", name="Run")
    budget.until(lambda: run.is_enabled(), "Run enabled", page)
    run.click()
    budget.wait(workbench.get_by_text(re.compile(r"3 matches by engine")), "the run's status")
    rows = workbench.locator("table.cepkit-grid tbody tr")
    budget.until(lambda: rows.count() == 3 and "no rows" not in rows.first.inner_text(), "the grid's 3 rows", page)
    timeline = workbench.locator(".js-plotly-plot").first  # the modebar's SVG button, in the page
    timeline.hover()
    with page.expect_download() as saved:
        timeline.locator(".modebar-btn[data-title='Download plot as an SVG']").click()
    svg = open(saved.value.path(), encoding="utf-8").read()
    assert svg.lstrip().startswith("<svg") and "match #2" in svg and saved.value.suggested_filename.endswith(".svg")
    workbench.get_by_role("button", name="Copy as code").click()
    code = workbench.locator("pre.cepkit-code")
    budget.wait(code, "the code of the run")
    assert "cepkit.match(QUERY, events" in code.inner_text() and "small.amount < 5" in code.inner_text()
    dom.screenshot(page, workbench, artifacts / f"templates-{width}.png")
    assert not page.script_errors, page.script_errors

    # the report: written by the kernel, opened from disk in a page of its own
    page.keyboard.press("Escape")
    cell = page.locator(".jp-Notebook .jp-Cell").last
    cell.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below, with the export code, run in the same kernel
    page.locator(".jp-Notebook .jp-Cell").last.locator(".cm-content").fill(CELLS[1])
    page.keyboard.press("Shift+Enter")
    budget.wait(page.get_by_text("report written 3"), "the report written")
    report = chromium.new_page(viewport={"width": width, "height": 1000})
    errors = []
    report.on("pageerror", lambda error: errors.append(str(error)))
    report.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    try:
        report.goto((lab.root / "report.html").as_uri())
        report.wait_for_selector(".js-plotly-plot .main-svg", timeout=30000)
        assert report.locator("table.results tbody tr").count() == 3
        assert "small.amount < 5" in report.locator("pre.query").inner_text()
        assert report.locator(".js-plotly-plot").count() == 3  # the timeline, the automaton, the funnel
        report.screenshot(path=str(artifacts / f"report-{width}.png"), full_page=True)
        assert errors == []
    finally:
        report.close()
