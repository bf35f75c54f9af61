"""The tour in a real browser: JupyterLab headless, ``notebooks/01-tour.ipynb`` opened in Debian's Chromium
through Playwright, every cell run, and the match timeline and the automaton checked to render as plotly
figures (STACK-NOTES §4). Screenshots go to ``test-artifacts/``.

The issue asks for under 3 minutes: every wait draws on one budget, ``BUDGET_S`` from the moment the page
opens (JupyterLab's start adds ~5 s before, shutting it down ~5 s after), so a slow run fails naming the
step that ran out instead of running on.

Skipped, with the reason, without ``/usr/bin/chromium`` (``make test`` installs it) or playwright.
"""
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
NOTEBOOK = "01-tour.ipynb"
DONE_MARKER = "tour complete"            # printed by the tour's last cell
BUDGET_S = 165                           # every wait of the test together, from opening the page

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (extra 'browser')")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("spark"),  # the tour starts Spark: never beside the other JVM-heavy tests

    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is missing (apt-get install chromium)"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_settings(directory: Path) -> None:
    """Render every cell (no windowing, so figures below the fold exist) and keep the news popup away."""
    settings = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                             "checkForUpdates": False},
    }
    for name, values in settings.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture
def jupyter_lab(tmp_path):
    """A headless JupyterLab serving a copy of the tour (so the repository's notebook is never saved over)."""
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, tmp_path / NOTEBOOK)
    lab_settings(tmp_path / "settings")
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"), "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    log = open(tmp_path / "jupyter.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("JupyterLab did not start:\n" + (tmp_path / "jupyter.log").read_text()[-3000:])
                time.sleep(0.5)
        yield f"{url}/lab/tree/{NOTEBOOK}?token={token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


class Budget:
    """Milliseconds left for the next wait, and the step that ran out when none are."""

    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def ms(self, step: str) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"the {BUDGET_S} s budget ran out before: {step}")
        return left * 1000

    def wait(self, locator, step: str) -> None:
        try:
            locator.wait_for(timeout=self.ms(step))
        except playwright_api.TimeoutError:
            pytest.fail(f"the {BUDGET_S} s budget ran out while waiting for: {step}")


def shown_plots(page) -> list:
    """Bounding boxes of the plotly figures on show."""
    return [box for box in (plot.bounding_box() for plot in page.locator(".js-plotly-plot:visible").all())
            if box is not None]


def run_all_cells(page) -> None:
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def test_tour_runs_in_chromium_and_draws_the_timeline_and_the_automaton(jupyter_lab):
    ARTIFACTS.mkdir(exist_ok=True)
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        script_errors = []
        page.on("pageerror", lambda error: script_errors.append(str(error)))
        page.on("console", lambda message: script_errors.append(message.text) if message.type == "error" else None)
        try:
            budget = Budget(BUDGET_S)
            page.goto(jupyter_lab, timeout=budget.ms("the JupyterLab page"))
            budget.wait(page.get_by_text("Python 3 (ipykernel) | Idle"), "the kernel to be idle")
            run_all_cells(page)
            try:                                   # STACK-NOTES §4: Run All is sometimes lost; retry once
                page.locator(".jp-OutputArea-output").first.wait_for(timeout=min(15_000, budget.ms("Run All")))
            except playwright_api.TimeoutError:
                run_all_cells(page)
            budget.wait(page.locator(".jp-OutputArea-output", has_text=DONE_MARKER), "the tour's last cell")
            timeline = page.locator(".js-plotly-plot").filter(has_text="matches").first
            automaton = page.locator(".js-plotly-plot").filter(has_text="start").first
            budget.wait(timeline, "the timeline figure")
            budget.wait(automaton, "the automaton figure")
            assert timeline.locator(".scatterlayer .trace").count() >= 3        # events, matches, selected...
            assert automaton.locator("text", has_text="q0").count() >= 1
            assert page.locator(".jp-OutputArea-output", has_text="Traceback").count() == 0
            # every figure on show was drawn: the tour's timeline, the automaton, the workbench's timeline (the
            # last may still be drawing when the first two are: poll, within the budget)
            shown = shown_plots(page)
            while not (len(shown) >= 3 and all(box["height"] > 100 for box in shown)):
                page.wait_for_timeout(min(500, budget.ms(f"three drawn figures (drawn so far: {shown})")))
                shown = shown_plots(page)
            assert not [e for e in script_errors if "TypeError" in e], script_errors
            timeline.scroll_into_view_if_needed()
            timeline.screenshot(path=str(ARTIFACTS / "01-tour-timeline.png"))
            automaton.scroll_into_view_if_needed()
            automaton.screenshot(path=str(ARTIFACTS / "01-tour-automaton.png"))
        finally:
            page.screenshot(path=str(ARTIFACTS / "01-tour.png"))
            browser.close()
