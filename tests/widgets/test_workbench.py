"""Workbench without a browser: type in the editor, pick, press Run through the model, read the widgets."""

import re
import keyword

import numpy as np
import traitlets
import pandas as pd
import pytest

import cepkit
from cepkit.widgets import StrategyCompare, Workbench
from cepkit.widgets.execution import PROGRESS_MIN_EVENTS, Cancelled, run_query
from cepkit.widgets.workbench import TABS
from cel_formulas import PHI1


def engine_lacking(feature: str):
    """A registered engine (not reference) without ``feature``, or None."""
    matrix = cepkit.engines()
    lacking = [e for e in matrix.index if e != "reference" and not matrix.at[e, feature]]
    return lacking[0] if lacking else None


def test_parse_errors_show_live_with_their_caret(farm):
    wb = Workbench(farm)
    assert wb.run_button.disabled and "Type a query" in wb.diagnostics.value
    wb.editor.value = "T AS x ; H AS"
    assert wb.run_button.disabled
    assert "line 1, column" in wb.diagnostics.value and "^" in wb.diagnostics.value
    wb.editor.value = "T AS x ; H AS y"
    assert not wb.run_button.disabled and "✓ checked" in wb.diagnostics.value and "sequence" in wb.diagnostics.value


def test_attributes_are_checked_against_the_stream_as_you_type(farm):
    wb = Workbench(farm)
    wb.editor.value = "T AS x FILTER x.tmpp > 40"
    assert wb.run_button.disabled
    assert "unknown attribute &#x27;tmpp&#x27;" in wb.diagnostics.value and "✓" not in wb.diagnostics.value
    assert "tmp" in wb.diagnostics.value and "^" in wb.diagnostics.value  # what the events have
    wb.editor.value = "T AS x FILTER x.tmp > 40"
    assert not wb.run_button.disabled and "✓" in wb.diagnostics.value and "color:#b00" not in wb.diagnostics.value


def test_before_any_run_there_is_no_empty_result(farm):
    wb = Workbench(farm, query=PHI1)
    assert wb.results.layout.display == "none" and wb.status.value == "" and wb.results_frame() is None


def test_run_fills_the_results_grid_and_the_timeline(farm):
    wb = Workbench(farm, query=PHI1)
    wb.run_button.click()
    assert wb.matches.positions() == cepkit.match(PHI1, farm, engine="reference").positions()
    frame = wb.results_frame()
    assert frame["positions"].tolist() == ["1, 2", "1, 8", "5, 8"]
    assert frame[["x", "y", "x.type", "y.type"]].values.tolist() == [
        [1, 2, "T", "H"],
        [1, 8, "T", "H"],
        [5, 8, "T", "H"],
    ]
    assert frame["start"].tolist() == [1, 1, 5] and frame["end"].tolist() == [2, 8, 8]
    assert "3 matches" in wb.status.value and wb.matches.engine in wb.status.value
    assert wb.results.layout.display is None and wb.results.grid.count == 3
    assert [list(t.x) for t in wb.timeline.match_traces()] == [[1, 2, None], [1, 8, None], [5, 8, None]]
    assert repr(wb) == f"Workbench(events=9, query={PHI1!r}, matches=3)"


def test_chosen_fields_become_columns_and_unknown_ones_are_explained(farm):
    wb = Workbench(farm, query=PHI1)
    wb.run()
    wb.results.fields = ["tmp", "id"]
    frame = wb.results_frame()
    assert frame["x.tmp"].tolist() == [45, 45, 42] and frame["y.id"].tolist() == [0, 0, 0]
    assert "y.tmp" not in frame.columns  # H events have no tmp
    with pytest.raises(ValueError, match="unknown field.*'pressure'.*the events have"):
        wb.results.fields = ["pressure"]


def test_results_grid_and_timeline_select_together(farm):
    wb = Workbench(farm, query=PHI1)
    wb.run()
    wb.results.grid.selected = 1  # a row picked in the browser
    assert wb.timeline.selected == 1 and wb.selected == 1 and "match #1" in wb.timeline.details.value
    assert wb.selected_match.positions == (1, 8)
    assert wb.selected_events()["type"].tolist() == ["T", "H"]
    wb.timeline.selected = 2
    assert wb.results.grid.selected == 2 and wb.selected == 2
    wb.timeline.selected = None
    assert wb.results.grid.selected is None and wb.selected is None and wb.selected_events().empty
    wb.selected = 0  # picked from code (or by another view)
    assert wb.results.grid.selected == 0 and wb.timeline.selected == 0
    with pytest.raises(traitlets.TraitError, match="0..2"):
        wb.selected = 3


def test_editing_after_a_run_greys_the_results_until_the_next_run(farm):
    wb = Workbench(farm, query=PHI1)
    wb.run()
    wb.editor.value = PHI1 + " "
    assert "edited since this run" in wb.status.value and "cepkit-stale" in wb.results._dom_classes
    assert "cepkit-stale" in wb.timeline._dom_classes
    wb.editor.value = PHI1
    assert "edited since" not in wb.status.value and "cepkit-stale" not in wb.results._dom_classes
    wb.editor.value = "T AS x ; H AS y"
    wb.run()
    assert "edited since" not in wb.status.value and "cepkit-stale" not in wb.results._dom_classes


def test_export_puts_the_rows_in_a_notebook_variable_and_refuses_bad_names(farm, monkeypatch):
    wb = Workbench(farm, query=PHI1)
    wb.run()
    for bad in ("1x", "my rows", "class", ""):
        assert wb.results.export(bad) is None and "not a Python variable name" in wb.results.message.value
    assert keyword.iskeyword("class")
    namespace = {}

    class Shell:
        user_ns = namespace

    monkeypatch.setattr("IPython.get_ipython", lambda: Shell)
    wb.results.export_name.value = "rows"
    wb.results.export_button.click()
    assert namespace["rows"]["positions"].tolist() == ["1, 2", "1, 8", "5, 8"]
    assert "3 rows" in wb.results.message.value


def test_bad_picks_are_explained(farm):
    with pytest.raises(ValueError, match="unknown engine 'stak'"):
        Workbench(farm, engine="stak")
    with pytest.raises(ValueError, match="unknown strategy 'FIRST'"):
        Workbench(farm, strategy="FIRST")


def test_strategy_picker(farm):
    # [CEL] §2: NXT(φ1) = {1,2}, {1,8}
    wb = Workbench(farm, query=PHI1, strategy="NEXT")
    wb.run()
    assert wb.matches.positions() == [(1, 2), (1, 8)]
    wb.strategy_picker.value = "LAST"
    wb.run()
    assert wb.matches.positions() == [(1, 2), (5, 8)]


def test_an_engine_that_cannot_run_the_query_hands_it_to_the_registrys_pick(farm):
    """Not straight to the brute-force reference: the engine ``"auto"`` picks (reference only when none can)."""
    query = "SEQ(T x, !H h, T z)"
    engine = engine_lacking("negation")
    if engine is None:
        pytest.skip("every registered engine supports negation")
    wb = Workbench(farm, query=query, engine=engine)
    run = wb.run()
    picked = cepkit.match(query, farm).engine
    assert run.engine == picked != engine and run.note and engine in run.note
    assert picked in wb.status.value and "could not run" in wb.status.value
    assert wb.matches.positions() == cepkit.match(query, farm, engine="reference").positions()


def test_errors_that_need_the_data_show_before_run(farm):
    wb = Workbench(farm, query="T AS x FILTER x.pressure > 3")
    assert wb.run() is None and wb.run_button.disabled
    assert "unknown attribute" in wb.diagnostics.value and wb.matches is None


def test_long_runs_show_progress_and_give_the_batch_result():
    n = PROGRESS_MIN_EVENTS * 3 + 700
    events = pd.DataFrame(
        {"type": ["A", "B", "C"] * (n // 3), "ts": range(n // 3 * 3), "v": [i // 3 % 5 for i in range(n // 3 * 3)]}
    )
    query = "SEQ(A a, B b) WHERE a.v = b.v WITHIN 4"
    oracle = cepkit.match(query, events, engine="reference").positions()
    for engine in ["stack", "reference"]:  # stack: slices of columns; reference: one batch
        seen = []
        run = run_query(query, events, engine=engine, progress=lambda done, total: seen.append((done, total)))
        assert seen[0] == (0, len(events)) and seen[-1] == (len(events), len(events))
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)
        assert len(seen) == 2 if engine == "reference" else len(seen) > 2  # slices: progress between them
        assert run.matches.positions() == oracle and len(oracle) == n // 3
    wb = Workbench(events, query=query)
    wb.run()
    assert wb.progress.value == wb.progress.max == len(events)
    assert wb.progress.layout.visibility == "hidden" and wb.cancel_button.layout.display == "none"


def test_a_cancelled_run_stops_at_once_and_keeps_the_last_run():
    n = PROGRESS_MIN_EVENTS * 5
    events = pd.DataFrame({"type": ["A", "B"] * (n // 2), "ts": range(n)})
    calls = []

    def cancel_at_second(done, total):
        calls.append(done)
        if len(calls) == 2:
            raise Cancelled()

    with pytest.raises(Cancelled):
        run_query("SEQ(A a, B b) WITHIN 1", events, engine="stack", progress=cancel_at_second)
    assert len(calls) == 2 and calls[1] < n  # no slice pushed after the Cancel
    wb = Workbench(events, query="SEQ(A a, B b) WITHIN 1")
    first = wb.run()
    states = []
    wb.progress.observe(
        lambda change: states.append((wb.run_button.disabled, wb.cancel_button.layout.display, wb.status.value)),
        "value",
    )
    wb.progress.observe(lambda change: wb.cancel() if change["new"] > 0 else None, "value")
    assert wb.run() is None  # cancelled after its first slice
    assert states and all(
        disabled and shown is None and "running" in status and "</b> by engine" not in status
        for disabled, shown, status in states
    )
    assert "cancelled" in wb.status.value and "last run" in wb.status.value
    assert wb.last_run is first and not wb.running and not wb.run_button.disabled
    assert wb.cancel_button.layout.display == "none"


def test_the_run_button_runs_a_long_stream_in_the_background():
    n = PROGRESS_MIN_EVENTS * 5
    events = pd.DataFrame({"type": ["A", "B"] * (n // 2), "ts": range(n)})
    wb = Workbench(events, query="SEQ(A a, B b) WITHIN 1")
    wb.run_button.click()
    run = wb.wait_run(timeout=60)
    assert run is not None and len(run.matches) == n // 2 and "5,000 matches</b> by engine" in wb.status.value


def test_a_run_that_fails_in_the_background_says_so_and_keeps_the_last_run(monkeypatch):
    """The flights year's ``DELAYED_DEPARTURE+`` under ALL asked numpy for 87 TiB: the Run button's thread
    died with it and the status still read "edited since this run", as if Run had not been pressed."""
    n = PROGRESS_MIN_EVENTS * 5
    events = pd.DataFrame({"type": ["A", "B"] * (n // 2), "ts": range(n)})
    wb = Workbench(events, query="SEQ(A a, B b) WITHIN 1")
    first = wb.run()
    wb.editor.value = "A a ; B+ b WITHIN 1"

    def too_large(*args, **kwargs):
        raise MemoryError("Unable to allocate 87.1 TiB for an array")

    monkeypatch.setattr("cepkit.widgets.workbench.run_query", too_large)
    wb.run_button.click()
    assert wb.wait_run(timeout=60) is first and not wb.running and not wb.run_button.disabled
    said = wb.status.value
    assert "the run failed</b>: MemoryError: Unable to allocate 87.1 TiB" in said, said
    assert "NEXT, LAST or MAX" in said and "the last run, greyed" in said
    assert "cepkit-stale" in wb.results._dom_classes
    with pytest.raises(MemoryError):  # called from Python, the caller gets the error itself
        wb.run()


def test_a_run_that_compiles_kernels_says_so_while_it_runs(farm, monkeypatch):
    """On a clean numba cache a first run compiles an engine's kernels for seconds: the status line says
    so during the run (the note ``cepkit.engines.compiled.say`` gives), then shows the result as usual."""
    from cepkit.engines import compiled

    note = "compiling the automaton's kernels once, ~10 s (numba caches them)"

    def compiling(*args, **kwargs):  # what numba's first compilation of the engine's kernels does
        compiled.say(note)
        return run_query(*args, **kwargs)

    monkeypatch.setattr("cepkit.widgets.workbench.run_query", compiling)
    wb = Workbench(farm, query="T AS x ; H AS y")
    seen = []
    wb.status.observe(lambda change: seen.append(change["new"]), "value")
    run = wb.run()
    assert run is not None and len(run.matches) > 0
    during = [value for value in seen if "compiling" in value]
    assert during and "running on engine" in during[0] and "automaton&#x27;s kernels once, ~10 s" in during[0]
    assert "compiling" not in wb.status.value  # the run's own status once it is done
    assert compiled._listeners == []  # the Workbench listens only while it runs


def test_tabs_build_their_views_when_opened(farm):
    wb = Workbench(farm, query=PHI1)
    wb.run()
    assert wb.strategy_compare is None  # seven runs wait until the tab is opened
    wb.tabs.selected_index = TABS.index("Strategies")
    assert wb.strategy_compare.counts()["NEXT"] == 2
    assert "<b>sequence</b>" in wb.engines_table.value
    assert wb.strategy_compare.runs["ALL"] is wb.last_run  # the run the Workbench made, not made again
    counts = wb.strategy_compare.counts()
    assert counts == StrategyCompare(PHI1, farm).counts()
    wb.strategy_picker.value = "NEXT"
    wb.run()  # the Strategies tab is open: built again at once
    assert wb.strategy_compare.runs["NEXT"] is wb.last_run and wb.strategy_compare.counts() == counts
    wb.tabs.selected_index = TABS.index("Events")
    grid = wb.tabs.children[TABS.index("Events")].children[0]
    assert "tmp" in grid.columns and grid.count == len(farm) and grid is wb.events_table


def test_a_tab_can_be_added(farm):
    wb = Workbench(farm, query=PHI1)
    wb.add_tab("Count", lambda w: __import__("ipywidgets").HTML(f"{len(w.matches)} found"))
    wb.run()
    wb.tabs.selected_index = len(wb.tabs.children) - 1
    assert wb.tabs.titles[-1] == "Count" and wb.tabs.children[-1].children[0].value == "3 found"
    with pytest.raises(ValueError, match="already a tab 'Count'"):
        wb.add_tab("Count", lambda w: None)


def test_automaton_tab(farm):
    wb = Workbench(farm, query=PHI1)
    wb.run()
    wb.tabs.selected_index = TABS.index("Automaton")
    view = wb.automaton_view
    assert view is not None and len(view.steps) == len(farm)
    assert wb.tabs.children[TABS.index("Automaton")].children == (view,)


def test_automaton_tab_explains_a_query_outside_cel(farm):
    wb = Workbench(farm, query="SEQ(T x, !H h, T z)")
    wb.run()
    wb.tabs.selected_index = TABS.index("Automaton")
    assert wb.automaton_view is None
    assert "cannot compile" in wb.tabs.children[TABS.index("Automaton")].children[0].value


def test_options_reach_the_engine_and_retractions_reach_the_timeline():
    events = [{"type": "A", "ts": 1}, {"type": "C", "ts": 5}, {"type": "B", "ts": 3}]
    wb = Workbench(events, query="SEQ(A a, !B b, C c) WITHIN 10", disorder="aggressive")
    run = wb.run()
    assert run.engine != "reference" and len(run.matches) == 0 and run.matches.deltas
    assert len(wb.timeline.trace("withdrawn").x) == 3 and "1 withdrawn" in wb.timeline.figure.layout.title.text


def test_a_misspelt_event_type_is_named_as_you_type_with_the_closest_one():
    """issue 21: ``DELAYED_DEPARTUER`` (or ``FOG`` for ``fog``) showed the green check, ran, and found nothing."""
    events = [{"type": "fog", "ts": 0}, {"type": "DELAYED_DEPARTURE", "ts": 1, "dep_delay": 90}]
    wb = Workbench(events)
    assert set(re.findall(r"[\w/.-]+\.md", wb.diagnostics.value)) == {"docs/language.md"}  # the only page named
    assert "<code>fog AS x ; DELAYED_DEPARTURE AS y</code>" in wb.diagnostics.value  # the stream's own types
    wb.editor.value = "FOG f ; DELAYED_DEPARTUER d"
    shown = wb.diagnostics.value
    assert "✓" not in shown and "did you mean &#x27;fog&#x27;?" in shown
    assert "did you mean &#x27;DELAYED_DEPARTURE&#x27;?" in shown and "^" in shown
    wb.editor.value = "fog f ; DELAYED_DEPARTURE d WITHN 1 h"
    assert "did you mean WITHIN?" in wb.diagnostics.value and wb.run_button.disabled
    wb.editor.value = "fog f ; DELAYED_DEPARTURE d WITHIN 1 hrs"
    assert "did you mean hours?" in wb.diagnostics.value and "the time units" in wb.diagnostics.value
    wb.editor.value = "fog f ; DELAYED_DEPARTURE d"
    assert "✓" in wb.diagnostics.value and len(wb.run().matches) == 1


def test_the_views_follow_the_picked_match_in_one_time_zone():
    """issue 21: Automaton stepped the first 200 events and Events showed the first 10,000 whatever was picked,
    the timeline did not zoom to the pick, and Explain showed UTC where the grid and timeline used ``tz``."""
    n = 3000
    events = pd.DataFrame(
        {"type": ["A", "B"] * (n // 2), "ts": pd.date_range("2013-06-01", periods=n, freq="1min", tz="UTC")}
    )
    wb = Workbench(events, query="SEQ(A a, B b) WITHIN 2 min", tz="America/New_York")
    wb.run()
    wb.selected = 1200  # events 2400 and 2401
    zoom = [pd.Timestamp(x) for x in wb.timeline.figure.layout.xaxis.range]
    assert zoom[0] < pd.Timestamp("2013-06-02 12:00") < pd.Timestamp("2013-06-02 12:01") < zoom[1]  # EDT
    assert zoom[1] - zoom[0] < pd.Timedelta("2h")
    wb.tabs.selected_index = TABS.index("Automaton")
    view = wb.automaton_view
    assert view.steps[0].position <= 2400 < view.steps[-1].position and "around the picked match" in view.notes[0]
    assert view.steps[view.step - 1].position == 2400  # opened at the match's first event
    assert "ts 2013-06-02 12:00:00 EDT" in view.panel.value  # not UTC's 16:00
    wb.tabs.selected_index = TABS.index("Events")
    assert 2400 in wb.events_table.ids and wb.events_table.selected == 2400
    shown = wb.events_table.data.rows(np.array([2400]))
    assert str(shown["ts"].iloc[0]) == "2013-06-02 12:00:00-04:00" and shown["position"].iloc[0] == 2400
    assert str(wb.events_table.data.whole()["ts"].iloc[2400]) == "2013-06-02 12:00:00-04:00"  # searched so
    wb.tabs.selected_index = TABS.index("Explain")
    explain = wb.tabs.children[TABS.index("Explain")].children[0]
    assert explain.canvas.tz == "America/New_York" and "EDT" in explain.canvas.event_text(2400)
    assert explain.plot.figure["layout"]["xaxis"]["title"]["text"] == "ts (America/New_York)"
    window = [r.message for r in explain.explanation.reasons if "span" in r.message]
    assert window and "at ts 2013-06-02 12:00:00-04:00 to event 2401" in window[0]  # the reasons too
    wb.selected = None
    assert wb.timeline.figure.layout.xaxis.autorange is True


def test_the_results_grid_names_each_matchs_partition_key():
    """A PARTITION BY query's matches each say their key (which airport): a column per key attribute, right
    after the match's times, that the search and the CSV see too."""
    events = cepkit.datasets.flight_events(months=[1], kinds=["weather", "departures"])
    text = "PATTERN FOG AS w ; DELAYED_DEPARTURE AS d WHERE d.dep_delay >= 60 WITHIN 3 hours PARTITION BY origin"
    wb = Workbench(events, query=text)
    wb.run()
    frame = wb.results_frame()
    assert list(frame.columns[:5]) == ["match", "start", "end", "origin", "positions"]
    assert frame["origin"].tolist() == [events.origin.iloc[p[0]] for p in cepkit.match(text, events).positions()]
    assert set(frame["origin"]) == {"EWR", "JFK", "LGA"}
    wb.editor.value = "PATTERN FOG AS w ; DELAYED_DEPARTURE AS d WITHIN 3 hours"
    wb.run()
    assert "origin" not in wb.results_frame().columns  # no PARTITION BY, no key
