"""``ExplainView``: candidates built by clicks on the strip's events, typed positions or a near miss; verdict,
reasons, query text."""

import pytest

import cepkit
from cepkit.widgets import ExplainView

PHI1 = "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)"


@pytest.fixture
def click_event(click):
    """Click the event at ``position`` on the view's strip (its one trace), as the browser reports it."""
    return lambda view, position: click(view.plot, 0, view._shown.index(position))


def test_clicking_events_builds_the_candidate_and_explains_it(click_event):
    click = click_event
    view = ExplainView(PHI1, cepkit.datasets.cel_fire_sensors())
    assert view.explanation is None and "x.tmp &gt; 40" in view.text.value
    click(view, 1)
    click(view, 5)
    assert view.candidate == (1, 5) and view.positions.value == "1,5"
    assert "is not a match" in view.verdict.value
    assert "event 5 has type T; `H AS y` needs H" in view.reasons.value
    assert "<u " in view.text.value and ">H AS y</u>" in view.text.value  # the failing atom underlined
    click(view, 5)
    click(view, 2)
    assert view.explanation.is_match and "is a match" in view.verdict.value
    assert view.figure.data[0].marker.color[view._shown.index(2)] == "#d62728"
    assert view.plot.figure["data"][0]["marker"]["symbol"][2] == "diamond"
    view.toggle(1)
    assert view.candidate == (2,)


def test_a_candidate_the_budget_left_undecided_reads_undecided():
    """The reference's search budget spent on the selection (tests/explain/test_budget.py): the view says
    undecided in amber, not "no match" in red."""
    view = ExplainView("SELECT LAST * PATTERN ((ANY+ a)+)+", [{"type": "A", "ts": i} for i in range(12)])
    view.candidate = (0, 11)
    assert not view.explanation.decided and "undecided" in repr(view)
    assert "is undecided, stopped early" in view.verdict.value and "#b07d00" in view.verdict.value
    assert "not a match" not in view.verdict.value


def test_typed_positions_and_bad_input():
    view = ExplainView(PHI1, cepkit.datasets.cel_fire_sensors())
    view.positions.value = "1, 8"
    assert view.candidate == (1, 8) and view.explanation.is_match
    view.positions.value = "1,99"
    assert "position 99 is not in the stream" in view.verdict.value
    view.positions.value = "one"
    assert "positions are numbers" in view.verdict.value
    view.clear.click()
    assert view.candidate == () and view.reasons.value == ""


def test_why_not_lists_near_misses_and_a_pick_explains_one():
    view = ExplainView("SEQ(T x, H y) WHERE x.tmp > 45 and y.hum < 19", cepkit.datasets.cel_fire_sensors())
    view.why.click()
    assert view.near_misses and view.misses.options
    assert " near miss" in view.misses_note.value
    view.misses.value = 0
    assert view.candidate == view.near_misses[0].positions
    assert "is not a match" in view.verdict.value and "condition" in view.reasons.value


def test_a_long_stream_shows_the_events_around_the_candidate():
    events = [{"type": "A" if i % 2 else "B", "ts": i} for i in range(2000)]
    view = ExplainView("SEQ(A a, B b) WITHIN 3", events, (1501, 1502), max_events=100)
    assert len(view._shown) == 100 and 1501 in view._shown
    assert view.explanation.is_match
    # the strip says it shows part of the stream, and which part
    assert (
        "positions 1,451 to 1,550 of the 2,000 events (the 100 around the candidate)" in view.figure.layout.title.text
    )
    whole = ExplainView("SEQ(A a, B b) WITHIN 3", events[:50], (1, 2))
    assert "<sup>" not in whole.figure.layout.title.text


def test_workbench_explain_tab_follows_the_picked_match_and_offers_why_not():
    from cepkit.widgets import Workbench
    from cepkit.widgets.workbench import TABS

    wb = Workbench(cepkit.datasets.cel_fire_sensors(), query=PHI1, strategy="NEXT")
    wb.run()
    wb.tabs.selected_index = TABS.index("Explain")
    (view,) = wb.tabs.children[TABS.index("Explain")].children
    assert isinstance(view, ExplainView) and view.explanation is None
    wb.selected = 1
    assert view.candidate == wb.selected_match.positions and view.explanation.is_match
    assert "NEXT keeps it" in view.reasons.value
    wb.editor.value = "SEQ(T x, H y) WHERE x.tmp > 45"
    wb.strategy_picker.value = "as written"
    wb.run()
    assert len(wb.matches) == 0
    (view,) = wb.tabs.children[TABS.index("Explain")].children
    assert "Why not?" in view.misses_note.value
    view.why.click()
    assert view.near_misses and "x.tmp &gt; 45" in view.misses.options[0][0].replace(">", "&gt;")
