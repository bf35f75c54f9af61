"""Shared helpers for the browser tests: one headless JupyterLab over a copy of ``notebooks/``, Debian's
Chromium through Playwright, a time budget per test, and DOM checks a person would make by eye.

Fixtures:

- ``lab``: a JupyterLab server (one per session) serving a copy of every notebook, so the repository's
  notebooks are never saved over; ``lab.url(name)`` opens one in a workspace of its own (a page restores
  nothing an earlier test opened: a restored notebook would start its own kernel, and its cells would count
  as not yet run).
- ``page``: a fresh 1400x1000 Chromium page; ``page.script_errors`` collects page errors and console errors
  (but ``SLOW_WIDGET_INIT``, logged or thrown, counted in ``page.slow_widget_inits``).
- ``open_notebook``: ``open_notebook(page, name, budget)`` opens a notebook, runs every cell and waits until
  every cell of it has run (or fails naming the step the budget ran out on, or the first traceback).
- ``budget``: ``budget(seconds)`` makes a ``Budget``, the time every wait of one test draws on.

Without ``/usr/bin/chromium`` (``make test`` installs it) or playwright, every test using them is skipped with
the reason. Screenshots go to ``test-artifacts/`` (``ARTIFACTS``).
"""

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 1000}
# anywidget 0.11 logs this when a model's ES module is not bound 2 s after the model was made; on a loaded
# machine the page's one import of plotly.js (0.3-0.6 s for the basic bundle cepkit ships, 2.4-4.3 s at load
# 7 for plotly.py's whole one: bench/plotly_import.py) can push an anywidget model made at the same moment past
# that limit. Its first drawing is unaffected, but anywidget then drops that model's later
# state updates (docs/status.md, Widgets). Counted apart (``page.slow_widget_inits``, printed), not a script error.
SLOW_WIDGET_INIT = "[anywidget] Failed to initialize model."
# the tour's query (bad weather, then a departure an hour late, at one airport), which several tests run
TOUR_QUERY = """PATTERN (STORM AS w OR SNOW AS w OR FOG AS w) ; DELAYED_DEPARTURE AS d
WHERE d.dep_delay >= 60
WITHIN 3 hours
PARTITION BY origin"""


def _playwright():
    try:
        import playwright.sync_api as api
    except ImportError:
        pytest.skip("playwright is not installed (extra 'browser')")
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing (apt-get install chromium)")
    return api


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_settings(directory: Path) -> None:
    """Render every cell (no windowing, so figures below the fold exist) and keep the news popup away."""
    settings = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
    }
    for name, values in settings.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


class Lab:
    """A running JupyterLab: ``url(notebook)`` is the page that opens ``notebook``."""

    def __init__(self, base: str, token: str, root: Path):
        self.base, self.token, self.root = base, token, root
        self.pages = 0

    def url(self, notebook: str) -> str:
        self.pages += 1
        return f"{self.base}/lab/workspaces/page{self.pages}/tree/{notebook}?reset&token={self.token}"

    def kernels(self) -> list:
        return json.load(urllib.request.urlopen(f"{self.base}/api/kernels?token={self.token}", timeout=10))

    def shutdown_kernels(self) -> None:
        """Stop every kernel (a notebook's kernel would otherwise keep its memory and its Spark session, and
        a busy one the CPU the next test needs); fails if one is still there."""
        for kernel in self.kernels():
            urllib.request.urlopen(
                urllib.request.Request(f"{self.base}/api/kernels/{kernel['id']}?token={self.token}", method="DELETE"),
                timeout=30,
            )
        left = self.kernels()
        assert not left, f"kernels still running after their test: {left}"

    def write_notebook(self, name: str, cells: list) -> str:
        """A notebook of code ``cells`` (strings) beside the copied ones; returns its name."""
        import nbformat

        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        notebook.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
        }
        nbformat.write(notebook, self.root / name)
        return name

    def without_spark(self, notebook: str) -> str:
        """A copy of ``notebook`` that ends before its Spark section (the first code cell that imports
        ``cepkit.spark``, the markdown cells right above it, and every cell after); returns its name, or
        ``notebook`` when it has no such cell. Such a section prints text or shows a Workbench on Spark: nbval
        runs it and checks its results, and ``test_spark_live.py`` looks at that Workbench in the browser."""
        import nbformat

        original = nbformat.read(self.root / notebook, as_version=4)
        cells = original.cells
        first = next((i for i, c in enumerate(cells) if c.cell_type == "code" and "cepkit.spark" in c.source), None)
        if first is None:
            return notebook
        while first > 0 and cells[first - 1].cell_type == "markdown":
            first -= 1
        original.cells = cells[:first]
        name = notebook.replace(".ipynb", "-local.ipynb")
        nbformat.write(original, self.root / name)
        return name


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A headless JupyterLab serving a copy of ``notebooks/`` (shut down, with its kernels, at the end)."""
    _playwright()
    root = tmp_path_factory.mktemp("lab")
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        shutil.copy(notebook, root / notebook.name)
    lab_settings(root / "settings")
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(root / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(root / "workspaces"),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    log = open(root / "jupyter.log", "w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=root,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # a loaded machine (2 cores, several test runs)
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("JupyterLab did not start:\n" + (root / "jupyter.log").read_text()[-3000:])
                time.sleep(0.5)
        yield Lab(base, token, root)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="session")
def chromium():
    api = _playwright()
    with api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium, lab, request):
    """A fresh page; ``page.script_errors`` lists page errors and console errors. Its last look is saved as
    ``test-artifacts/<test name>.png``, then the notebooks' kernels stop."""
    ARTIFACTS.mkdir(exist_ok=True)
    page = chromium.new_page(viewport=VIEWPORT)
    page.script_errors, page.slow_widget_inits = [], []

    def error(text: str) -> None:
        (page.slow_widget_inits if text == SLOW_WIDGET_INIT else page.script_errors).append(text)

    # anywidget logs its 2 s limit (console) or leaves it as an unhandled rejection (a page error): counted alike
    page.on("pageerror", lambda thrown: error(str(thrown)))
    page.on("console", lambda message: error(message.text) if message.type == "error" else None)
    try:
        yield page
    finally:
        if page.slow_widget_inits:  # kept where a person looks: test-artifacts/
            with open(ARTIFACTS / "slow-widget-inits.txt", "a") as log:
                log.write(f"{request.node.name}: {len(page.slow_widget_inits)} x {SLOW_WIDGET_INIT!r}\n")
        try:
            page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"))
        finally:
            page.close()
            lab.shutdown_kernels()


class Budget:
    """Milliseconds left for the next wait, and the step that ran out when none are."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def ms(self, step: str) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"the {self.seconds} s budget ran out before: {step}")
        return left * 1000

    def wait(self, locator, step: str, state: str = "visible") -> None:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            locator.wait_for(timeout=self.ms(step), state=state)
        except PlaywrightTimeout:
            pytest.fail(f"the {self.seconds} s budget ran out while waiting for: {step}")

    def until(self, condition, step: str, page, poll_ms: int = 300, limit_s: Optional[float] = None):
        """Poll ``condition()`` until it is truthy (returns it) or the budget ends (fails naming ``step``); with
        ``limit_s``, raise TimeoutError after that many seconds instead."""
        give_up = time.monotonic() + limit_s if limit_s is not None else None
        while True:
            value = condition()
            if value:
                return value
            if give_up is not None and time.monotonic() > give_up:
                raise TimeoutError(step)
            page.wait_for_timeout(min(poll_ms, self.ms(step)))


@pytest.fixture
def budget():
    return Budget


def _run_all_cells(page) -> None:
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


SHOWN_NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook on show


def _cells_pending(page) -> int:
    """Code cells of the notebook on show not yet executed or still running (prompt ``[ ]:`` or ``[*]:``)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('%s .jp-CodeCell .jp-InputArea-prompt')]
        .filter(p => !/\\[\\d+\\]/.test(p.textContent)).length"""
        % SHOWN_NOTEBOOK
    )


def _open_notebook(page, lab: Lab, notebook: str, budget: Budget) -> None:
    page.goto(lab.url(notebook), timeout=budget.ms(f"the JupyterLab page of {notebook}"))
    budget.wait(page.get_by_text("| Idle"), f"{notebook}'s kernel to be idle")
    _run_all_cells(page)

    def started():
        return (
            page.locator(f"{SHOWN_NOTEBOOK} .jp-CodeCell .jp-InputArea-prompt")
            .filter(has_text=re.compile(r"\[[*\d]+\]"))
            .count()
        )

    try:  # Run All is sometimes lost in headless JupyterLab; retry once, if no cell started
        budget.until(started, "Run All", page, poll_ms=250, limit_s=15)
    except TimeoutError:
        _run_all_cells(page)

    def done():
        error = page.locator(f"{SHOWN_NOTEBOOK} [data-mime-type='application/vnd.jupyter.error']")
        if error.count():
            pytest.fail(f"{notebook} raised:\n{error.first.inner_text()[-2000:]}")
        return _cells_pending(page) == 0

    budget.until(done, f"every cell of {notebook} to run", page, poll_ms=500)


@pytest.fixture
def open_notebook(lab):
    """``open_notebook(page, name, budget)``: open ``notebooks/<name>`` (or a notebook ``lab.write_notebook``
    wrote) in JupyterLab and run every cell."""
    return lambda page, notebook, budget: _open_notebook(page, lab, notebook, budget)


# Text boxes (and node circles) of one plotly figure, in page pixels; texts of a trace lying on a node's
# centre are that node's name.
READ_FIGURE = """plot => {
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const texts = [...plot.querySelectorAll('.scatterlayer .textpoint text, .annotation-text')]
        .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0)
        .map(t => ({text: t.textContent, box: box(t)}));
    const nodes = [...plot.querySelectorAll('.scatterlayer .points path.point')]
        .map(p => box(p)).filter(b => b[2] - b[0] > 12);
    let output = plot.closest('.jp-OutputArea-output'), outer;      // the cell's output, not the widget's
    while (output && (outer = output.parentElement.closest('.jp-OutputArea-output'))) output = outer;
    const drawing = (plot.querySelector('.main-svg') || plot).getBoundingClientRect();
    return {texts, nodes, width: drawing.width, height: drawing.height,
            output: output.getBoundingClientRect().width};
}"""


def overlap(a, b, slack: float = 1.5) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def hits_circle(text, circle, slack: float = 1.5) -> bool:
    """Whether a text box reaches into a node's circle (not merely into the circle's bounding square)."""
    cx, cy, r = (circle[0] + circle[2]) / 2, (circle[1] + circle[3]) / 2, (circle[2] - circle[0]) / 2
    nearest_x, nearest_y = min(max(cx, text[0]), text[2]), min(max(cy, text[1]), text[3])
    return (nearest_x - cx) ** 2 + (nearest_y - cy) ** 2 < (r - slack) ** 2


def centred_on(text, circle) -> bool:
    return (
        abs((text[0] + text[2] - circle[0] - circle[2]) / 2) < 2
        and abs((text[1] + text[3] - circle[1] - circle[3]) / 2) < 2
    )


def collisions(figure: dict) -> list:
    """Pairs of texts that overlap (a text drawn twice at one place, an active state's name, counts once),
    and texts that reach into a node they are not the name of."""
    texts = list({(t["text"], tuple(round(v) for v in t["box"])): t for t in figure["texts"]}.values())
    found = [
        (a["text"], b["text"])
        for i, a in enumerate(texts)
        for b in texts[i + 1 :]
        if overlap(a["box"], b["box"]) and not (a["text"] == b["text"] and overlap(a["box"], b["box"], 0))
    ]
    found += [
        (t["text"], "a node")
        for t in texts
        for c in figure["nodes"]
        if not centred_on(t["box"], c) and hits_circle(t["box"], c)
    ]
    return found


# Elements (with their text) cut at the right: reaching past the inner right edge of their nearest ancestor
# that clips or scrolls sideways (ipywidgets' boxes all do: ``overflow: auto``, so content past a box's edge
# is hidden until one scrolls it), past their output's or the window's, or a text cut inside its own box (a
# button or tab title ending in "…"; not a grid cell cut with "…" on purpose, its whole text on hover). Inside
# a box that scrolls sideways by design (``SCROLLS_BY_DESIGN``: a wide table's box, a code line's, a drawing
# kept at its min_width) nothing counts as cut; a drawing's own shapes are the drawing's to place (an svg's
# children are not read, the svg is).
SCROLLS_BY_DESIGN = ".cepkit-scroll, .cepkit-table-scroll, .dt-scroll-body, .dt-scroll-head, .cepkit-plotly"
CUT_AT_THE_RIGHT = r"""output => {
    const byDesign = '__BY_DESIGN__';
    const inner = (p) => p.getBoundingClientRect().left + p.clientLeft + p.clientWidth;
    const windowEdge = Math.min(document.documentElement.clientWidth, output.getBoundingClientRect().right);
    // an inline element's right edge by its characters (not the space a wrapped line broke at, which
    // white-space: pre-wrap lets hang past the edge, unseen); only for the few the box test flags
    const inkRight = (e) => { let right = -Infinity;
        const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
        for (let n = walk.nextNode(); n; n = walk.nextNode())
            for (let i = 0; i < n.textContent.length; i++) { if (/\s/.test(n.textContent[i])) continue;
                const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
                for (const b of r.getClientRects()) right = Math.max(right, b.right); }
        return right; };
    const cut = (e) => {       // how many px of e are cut (0: none)
        const own = getComputedStyle(e).overflowX;
        if ((own === 'hidden' || own === 'clip') && e.innerText && e.scrollWidth > e.clientWidth + 1
            && !(getComputedStyle(e).textOverflow === 'ellipsis' && e.title === e.textContent))
            return e.scrollWidth - e.clientWidth;
        let edge = windowEdge, by = 'the output';
        for (let p = e.parentElement; p && p !== output; p = p.parentElement) {
            if (p.matches(byDesign)) return 0;
            if (getComputedStyle(p).overflowX !== 'visible') { edge = Math.min(edge, inner(p)); by = p.className; break; }
        }
        let past = Math.max(...[...e.getClientRects()].map(r => r.right)) - edge;
        if (past > 1 && getComputedStyle(e).display === 'inline') past = inkRight(e) - edge;
        return past > 1 ? `${Math.round(past)} px past ${String(by).slice(0, 40)}` : 0; };
    return [...output.querySelectorAll('*')]
        .filter(e => !e.ownerSVGElement && e.getClientRects().length && e.getBoundingClientRect().width > 0
                     && getComputedStyle(e).visibility !== 'hidden')
        .map(e => [e, cut(e)]).filter(([e, past]) => past)
        .map(([e, past]) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} `
             + `"${(e.innerText || '').slice(0, 40)}" (${past})`)
        .slice(0, 10); }""".replace("__BY_DESIGN__", SCROLLS_BY_DESIGN)


# The picked match's events table as a reader sees it: per row, its lines of text (the distinct tops of its
# text's line boxes), the lines of each of its key cells (position, variables, type, time), the lines of its
# attributes and how many their width needs at least (their pairs' widths over the cell's), and the cells
# whose text runs out of them (over their neighbours).
READ_EVENTS_TABLE = """table => {
    const lines = (e) => { const tops = new Set(), walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
        for (let n = walk.nextNode(); n; n = walk.nextNode()) { const range = document.createRange();
            range.selectNodeContents(n);
            for (const box of range.getClientRects()) if (box.width > 0) tops.add(Math.round(box.top)); }
        return tops.size; };
    return [...table.querySelectorAll('tbody tr')].map(tr => ({lines: lines(tr), height: tr.offsetHeight,
        keys: [...tr.querySelectorAll('td.key')].map(lines), attrs: lines(tr.querySelector('td.attrs')),
        attrs_needed: Math.ceil([...tr.querySelectorAll('td.attrs .pair')]
            .reduce((sum, pair) => sum + pair.getBoundingClientRect().width + 4, 0)
            / tr.querySelector('td.attrs').clientWidth),
        spilling: [...tr.querySelectorAll('td')].filter(td => td.scrollWidth > td.clientWidth + 1)
            .map(td => td.textContent)})); }"""


class Dom:
    """What a person checks by eye, read from the page."""

    @staticmethod
    def read_figure(plot) -> dict:
        """A figure's texts and node circles (page pixels), its drawing's size, its cell output's width."""
        return plot.evaluate(READ_FIGURE)

    collisions = staticmethod(collisions)

    @staticmethod
    def undrawn_figures(page, min_height: float = 100) -> list:
        """Figures on show that a person would see as missing: a cepkit ``PlotlyView`` with no plot drawn in it,
        or any plotly plot under ``min_height`` px high (text of each, for the failure message)."""
        return page.evaluate(
            """min => [...document.querySelectorAll('.cepkit-plotly, .js-plotly-plot')]
            .filter(e => e.offsetParent !== null)                          // on show
            .filter(e => !(e.classList.contains('js-plotly-plot') && e.closest('.cepkit-plotly')))
            .filter(e => {
                const plot = e.classList.contains('js-plotly-plot') ? e : e.querySelector('.js-plotly-plot');
                return !plot || !plot.querySelector('.main-svg') || plot.getBoundingClientRect().height < min; })
            .map(e => (e.innerText || '(no text)').slice(0, 80))""",
            min_height,
        )

    @staticmethod
    def cut_at_the_right(output) -> list:
        """Elements of a cell's ``output`` (a ``.jp-OutputArea-output``) cut at the right or reaching past it,
        outside a box that scrolls sideways by design (``CUT_AT_THE_RIGHT``): the first ten, with their text."""
        return output.evaluate(CUT_AT_THE_RIGHT)

    @staticmethod
    def read_events_table(table) -> list:
        """A match's events table (``table.cepkit-match-events``) as a reader sees it (``READ_EVENTS_TABLE``):
        per row, its lines of text, each key cell's lines, its attributes' lines and the fewest they need, the
        texts running out of their cells."""
        return table.evaluate(READ_EVENTS_TABLE)

    @staticmethod
    def width_ratio(element) -> float:
        """How much of its cell's output width a figure's drawing (its first svg) fills (1.0 = all of it)."""
        return element.evaluate("""e => {
            const drawing = e.querySelector('.main-svg') || e;
            let area = e.closest('.jp-OutputArea-output') || e.parentElement, outer;
            while (area && (outer = area.parentElement.closest('.jp-OutputArea-output'))) area = outer;
            return drawing.getBoundingClientRect().width / area.getBoundingClientRect().width; }""")

    @staticmethod
    def screenshot(page, element, path) -> None:
        """A screenshot of ``element`` whole: the page is made taller for an element the window cannot hold
        (JupyterLab scrolls inside the notebook, so an element screenshot would stitch its toolbars in)."""
        box, viewport = element.bounding_box(), dict(page.viewport_size)
        if box is not None and box["height"] > viewport["height"] - 200:
            page.set_viewport_size({"width": viewport["width"], "height": int(box["height"]) + 300})
        try:
            element.scroll_into_view_if_needed()
            element.screenshot(path=str(path))
        finally:
            page.set_viewport_size(viewport)

    @staticmethod
    def both_widths(page, element, name: str) -> None:
        """Screenshots of ``element`` in a 1,400 px window and an 800 px one (``ARTIFACTS/<name>-1400.png`` and
        ``-800.png``); the window is 1,400 px again after."""
        Dom.screenshot(page, element, ARTIFACTS / f"{name}-1400.png")
        page.set_viewport_size({"width": 800, "height": 1000})
        try:
            page.wait_for_timeout(500)
            Dom.screenshot(page, element, ARTIFACTS / f"{name}-800.png")
        finally:
            page.set_viewport_size(VIEWPORT)


@pytest.fixture
def dom():
    return Dom


@pytest.fixture
def artifacts() -> Path:
    """``test-artifacts/``, where screenshots go."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
