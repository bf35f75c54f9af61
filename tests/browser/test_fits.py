"""Nothing of the Workbench or of a live view is cut at the right, in a 1,400 px window and an 800 px one:
no element reaches past the inner edge of the box that clips it (ipywidgets' boxes all scroll sideways, so
such an element would be hidden until one scrolled that box), past its output or the window, and neither
the Workbench nor its tabs' boxes scroll sideways (its 100%-wide children had 2 px margins each side: 4 px
of sideways scroll at 1,400 px). Checked after a run with a match picked (grid, timeline, the picked
match's events), on the Events tab, and on a live view after five batches (``Workbench.live``, the Live
tab). The results grid of the tour's PARTITION BY query reads at both widths: no header or cell cut in its
cell (a long one cut with "…" has its whole value on hover); wider than its box (11 columns, 1,138 px, in
the 968 px output of a 1,400 px window beside the file browser), the line under it names the columns out
of sight (headless Chromium draws no scroll bar, nor does a Mac until one scrolls), and scrolled to its end
the last column is whole and the match column still at the left. Screenshots:
``test-artifacts/fits-<what>-<width>.png``."""

import re

import pytest

from tests.browser.conftest import TOUR_QUERY

BUDGET_S = 300
CELLS = [
    f"""import cepkit
from cepkit.widgets import Workbench
from cepkit.widgets.live import replay
events = cepkit.datasets.flight_events(months=[1], kinds=["weather", "departures"])
fog_days = events[(events.ts >= "2013-01-13") & (events.ts < "2013-01-16")].reset_index(drop=True)
workbench = Workbench(fog_days, query='''{TOUR_QUERY}''', tz="America/New_York")
workbench.run()
workbench.selected = 0
workbench""",
    """live_bench = Workbench(fog_days, query='''SEQ(FOG w, DELAYED_DEPARTURE d) WITHIN 3 hours PARTITION BY origin''')
live = live_bench.live(replay(fog_days, every="6h"))
live.run(5)
live_bench""",
]

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

# The results grid as a reader sees it: its headers, those cut in their cell, the cells cut without "…" and
# their whole value on hover, the long cells (cut with "…") lacking that hover, how wide the table is and
# how wide its box.
READ_GRID = """grid => {
    const table = grid.querySelector('table.cepkit-grid'), box = table.parentElement;
    const clipped = e => e.scrollWidth > e.clientWidth + 1;
    const cells = [...table.querySelectorAll('tbody td')];
    return {headers: [...table.querySelectorAll('thead th')].map(th => th.textContent),
            cut_headers: [...table.querySelectorAll('thead th')].filter(clipped).map(th => th.textContent),
            cut_cells: cells.filter(td => clipped(td) && !td.classList.contains('cepkit-long')).map(td => td.textContent),
            long_without_hover: cells.filter(td => td.classList.contains('cepkit-long') && td.title !== td.textContent)
                .map(td => td.textContent),
            table: table.getBoundingClientRect().width, box: box.clientWidth,
            more: grid.querySelector('.cepkit-table-more').textContent,
            out_of_sight: [...table.querySelectorAll('thead th')].filter(th =>
                th.getBoundingClientRect().right > box.getBoundingClientRect().left + box.clientWidth + 1)
                .map(th => th.textContent)}; }"""
# The grid's box scrolled to its right end: the last column whole in view, and its first column (the match)
# still at the box's left (the box scrolled back after).
SCROLLED_TO_THE_END = """grid => {
    const table = grid.querySelector('table.cepkit-grid'), box = table.parentElement;
    box.scrollLeft = box.scrollWidth;
    const b = box.getBoundingClientRect(), row = table.querySelector('tbody tr');
    const last = row.lastElementChild.getBoundingClientRect(), first = row.firstElementChild.getBoundingClientRect();
    box.dispatchEvent(new Event('scroll'));
    const seen = {more: grid.querySelector('.cepkit-table-more').textContent, last_whole: last.left >= b.left - 1 && last.right <= b.left + box.clientWidth + 1,
                  first_at_left: Math.abs(first.left - b.left) <= 1,
                  first_text: document.elementFromPoint(first.left + 3, first.top + first.height / 2)
                      ?.closest('td') === row.firstElementChild};
    box.scrollLeft = 0;
    return seen; }"""

# how far the Workbench or any box or tab page of it scrolls sideways (0: none does)
SIDEWAYS = """e => [e, ...e.querySelectorAll('.widget-box, .widget-tab-contents')].filter(b => b.offsetParent)
    .map(b => b.scrollWidth - b.clientWidth).reduce((a, b) => Math.max(a, b), 0)"""


def test_nothing_is_cut_at_the_right(lab, page, open_notebook, budget, dom, artifacts):
    budget = budget(BUDGET_S)
    open_notebook(page, lab.write_notebook("fits.ipynb", CELLS), budget)
    outputs = page.locator(".jp-OutputArea-output").filter(has=page.locator(".cepkit-editor"))
    workbench, live = outputs.nth(0), outputs.nth(1)
    budget.wait(workbench.locator("table.cepkit-match-events"), "the picked match's events under the timeline")
    budget.wait(live.locator(".cepkit-live-batches", has_text=re.compile(r"^5 batches$")), "the live view's batches")

    def check(output, what: str) -> None:
        for width in (1400, 800):
            page.set_viewport_size({"width": width, "height": 1000})
            page.wait_for_timeout(500)
            output.scroll_into_view_if_needed()
            assert not dom.undrawn_figures(page), (what, width)
            assert dom.cut_at_the_right(output) == [], (what, width)
            box = output.locator(".cepkit-workbench").first
            assert box.evaluate(SIDEWAYS) == 0, (what, width)  # no box of it scrolls sideways
            dom.screenshot(page, output, artifacts / f"fits-{what}-{width}.png")
        page.set_viewport_size({"width": 1400, "height": 1000})

    grid = workbench.locator(".cepkit-results .cepkit-paged-table")
    for width in (1400, 800):  # the grid of the tour's PARTITION BY query reads at both widths
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(500)
        read = grid.evaluate(READ_GRID)
        print(width, read)
        assert read["headers"][:5] == ["match", "start", "end", "origin", "positions"], read
        assert not read["cut_headers"] and not read["cut_cells"] and not read["long_without_hover"], (width, read)
        if read["out_of_sight"]:  # the line under it names them; scrolled to its end, the match column stays
            assert read["more"].endswith(": " + ", ".join(read["out_of_sight"])), (width, read)
            grid.locator("table.cepkit-grid").scroll_into_view_if_needed()
            end = grid.evaluate(SCROLLED_TO_THE_END)
            assert end == {"more": "", "last_whole": True, "first_at_left": True, "first_text": True}, (width, end)
        else:
            assert read["more"] == "", (width, read)
    page.set_viewport_size({"width": 1400, "height": 1000})
    check(workbench, "workbench")
    workbench.locator(".lm-TabBar-tab", has_text="Events").first.click()
    budget.wait(workbench.get_by_text(re.compile(r"of [\d,]+ events")), "the Events grid")
    check(workbench, "events")
    check(live, "live")
    assert not page.script_errors, page.script_errors
