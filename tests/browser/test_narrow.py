"""The workbench and the automaton drawing in an 800 px wide window with JupyterLab's file browser open (a
~370 px output: a laptop, a projector): nothing a person reads is cut at the right edge (the results grid and
a drawing wider than the output scroll inside themselves), the timeline fills its width with its legend above
it, the automaton's labels do not crowd one another, and the workbench's controls do not lie on one another.
A Kleene ``+`` (a match of 24 DELAYED_DEPARTUREs picked): the grid's rows stay one line (a list of times cut
with "…", whole on hover: they were 3-5 lines high), and the picked match's events table lists every event,
each a block: its position, variables, type and time on two lines at most, its attributes using the whole
width (rows were ~150 px high, a word per line in 18em cells). Screenshots: ``test-artifacts/narrow-*.png``.
"""

import re

import pytest

NARROW = {"width": 800, "height": 900}
BUDGET_S = 300
CELLS = [
    """import cepkit
from cepkit.widgets import AutomatonView, ExplainView, StrategyCompare, Workbench
events = cepkit.datasets.flight_events(months=[1], kinds=["weather", "departures"])
fog_day = events[(events.ts >= "2013-01-14") & (events.ts < "2013-01-15")].reset_index(drop=True)
QUERY = ('(STORM AS w OR FOG AS w) ; DELAYED_DEPARTURE AS d WHERE d.dep_delay >= 30 '
         'WITHIN 2 hours PARTITION BY origin')""",
    """workbench = Workbench(fog_day, query=QUERY, tz="America/New_York")
workbench.run()
workbench""",
    """AutomatonView(QUERY, fog_day.iloc[:40])""",
    """StrategyCompare(QUERY, fog_day)""",
    """ExplainView(QUERY, fog_day, workbench.matches[0].positions)""",
    """KLEENE = 'FOG AS w ; DELAYED_DEPARTURE+ AS d WHERE d.dep_delay >= 30 WITHIN 2 hours PARTITION BY origin'
kleene = Workbench(fog_day, query=KLEENE, strategy="NEXT", tz="America/New_York")
kleene.run()
kleene.selected = max(range(len(kleene.matches)), key=lambda k: len(kleene.matches[k].positions))
kleene""",
]

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

# How much of the box it is drawn in (its widget's parent: the output, or a tab's panel) a figure fills.
FILLED = """plot => {
    const box = plot.closest('.cepkit-plotly').parentElement, style = getComputedStyle(box);
    const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return plot.querySelector('.main-svg').getBoundingClientRect().width / room; }"""

# Pairs of the workbench's buttons, dropdowns and text boxes whose boxes intersect.
OVERLAPPING_CONTROLS = """root => {
    const boxes = [...root.querySelectorAll('button, select, input, textarea, .cepkit-editor, .widget-dropdown, .widget-text')]
        .filter(e => e.offsetParent !== null).map(e => [e, e.getBoundingClientRect()])
        .filter(([, r]) => r.width > 0 && r.height > 0);
    const out = [];
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
        const [a, r] = boxes[i], [b, s] = boxes[j];
        if (a.contains(b) || b.contains(a)) continue;
        const w = Math.min(r.right, s.right) - Math.max(r.left, s.left);
        const h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
        if (w > 1 && h > 1) out.push(`${a.tagName} "${a.innerText || a.value || ''}" / ${b.tagName} "${b.innerText || b.value || ''}"`);
    }
    return out.slice(0, 10); }"""


def test_workbench_and_automaton_in_an_800_px_window(lab, page, open_notebook, budget, dom, artifacts):
    budget = budget(BUDGET_S)
    page.set_viewport_size(NARROW)
    open_notebook(page, lab.write_notebook("narrow-check.ipynb", CELLS), budget)
    outputs = page.locator(".jp-OutputArea-output")
    workbench = outputs.filter(has=page.locator(".cepkit-editor")).first
    budget.wait(workbench.locator(".js-plotly-plot"), "the workbench's timeline")
    budget.wait(workbench.locator("table.cepkit-grid tbody tr").first, "the results grid's rows")
    views = {"workbench": workbench}
    for name, css in (
        ("automaton", ".cepkit-automaton-view"),
        ("strategies", ".cepkit-strategy-compare"),
        ("explain", ".cepkit-explain-view"),
    ):
        views[name] = outputs.filter(has=page.locator(css)).last
        budget.wait(views[name].locator(".js-plotly-plot"), f"the {name} figure")
    views["kleene"] = outputs.filter(has=page.locator(".cepkit-editor")).nth(1)
    budget.wait(views["kleene"].locator("table.cepkit-match-events"), "the Kleene match's events")

    for name, output in views.items():
        output.scroll_into_view_if_needed()
        page.wait_for_timeout(500)  # a redraw at the width just seen
        dom.screenshot(page, output, artifacts / f"narrow-{name}.png")
        assert dom.cut_at_the_right(output) == [], name
        plot = output.locator(".js-plotly-plot").first
        assert plot.evaluate(FILLED) > 0.97, name
        assert dom.collisions(dom.read_figure(plot)) == [], name
    # the timeline's legend above its plot area, which reaches the figure's right side (the lanes' names take
    # the left)
    timeline = workbench.locator(".js-plotly-plot").first
    legend, data = (timeline.locator(part).first.bounding_box() for part in (".legend", ".nsewdrag"))
    figure = timeline.bounding_box()
    assert legend["y"] + legend["height"] <= data["y"] + 1
    assert data["x"] + data["width"] > figure["x"] + figure["width"] - 50
    assert workbench.evaluate(OVERLAPPING_CONTROLS) == []
    # the type warning's message wraps inside the output (only its source line and caret scroll sideways)
    message = workbench.locator(".cepkit-diagnostics pre").first
    past = message.evaluate("""m => Math.round(m.getBoundingClientRect().right
        - m.closest('.jp-OutputArea-output').getBoundingClientRect().right)""")
    assert "no event of type 'STORM'" in message.inner_text() and past <= 1, past
    # the Kleene workbench: one line a grid row, a list of times whole on hover, the picked match's 24 events
    kleene = views["kleene"]
    heights = kleene.locator("table.cepkit-grid tbody tr").evaluate_all("rows => rows.map(r => r.offsetHeight)")
    assert len(heights) == 10 and max(heights) <= 1.3 * min(heights), heights
    long = kleene.locator("table.cepkit-grid td.cepkit-long").evaluate_all("cells => cells.map(c => c.title)")
    times = [t for t in long if ":" in t]  # d.ts (the others: positions, d's positions and types)
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    assert times and all(re.fullmatch(f"{when}(, {when})+", t) for t in times), long
    read = dom.read_events_table(kleene.locator("table.cepkit-match-events"))
    assert len(read) == 24, read  # each row: the key cells on two lines at most, the attributes at the full width
    assert all(
        r["keys"] == [1] * 4
        and r["lines"] - r["attrs"] <= 2
        and r["attrs"] <= r["attrs_needed"] + 1
        and not r["spilling"]
        for r in read
    ), read
    assert dom.undrawn_figures(page) == []
    assert not page.script_errors, page.script_errors
