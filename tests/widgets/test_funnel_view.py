"""The Funnel tab: ``FunnelView`` shows cepkit.funnel's counts in its figure and every partial match in its
table, the same as the reference's; in the Workbench it follows the last run, and a query that is no
sequence of steps says why."""

import cepkit
from cepkit.recipes import get
from cepkit.widgets import FunnelView, Workbench
from cepkit.widgets.workbench import TABS

FUNNEL = get("funnel")


def test_the_view_shows_the_references_funnel_and_every_partial_match():
    events = FUNNEL.events()
    view = FunnelView(FUNNEL.query, events)
    expected = cepkit.funnel(FUNNEL.query, events, engine="reference")
    assert view.funnel.equals(expected)
    assert view.partial.equals(cepkit.partial_matches(FUNNEL.query, events, engine="reference"))
    trace = view.figure.figure["data"][0]
    assert trace["type"] == "bar" and list(trace["x"]) == expected["candidates"].tolist()
    assert [label.split()[-1] for label in trace["y"]] == ["v", "s", "p"]
    assert view.table.count == len(view.partial) > 0  # every row is in the table, paged
    completed = int(expected["candidates"].iloc[-1])
    assert f"{completed} completed, {len(view.partial)} stopped" in view.summary.value


def test_the_workbench_funnel_tab_follows_the_run_and_explains_a_refusal():
    wb = Workbench(FUNNEL.events(), query=FUNNEL.query)
    wb.run()
    wb.tabs.selected_index = TABS.index("Funnel")
    view = wb.tabs.children[TABS.index("Funnel")].children[0]
    assert isinstance(view, FunnelView) and view.funnel["candidates"].iloc[-1] == len(FUNNEL.planted)
    wb.editor.value = "SEQ(Visit v, !Signup s, Purchase p) PARTITION BY user"  # a negation: steps v and p
    wb.run()
    shown = wb.tabs.children[TABS.index("Funnel")].children[0]
    assert shown.funnel["variable"].tolist() == ["v", "p"]
    wb.editor.value = "SEQ(Visit v, EXISTS Signup s, Purchase p) PARTITION BY user"
    wb.run()
    shown = wb.tabs.children[TABS.index("Funnel")].children[0]
    assert "partial matches need a sequence of steps" in shown.value
