"""AutomatonView without a browser, on the CEA of digest 004 §3 Figure 2 (a hand-written automaton with
the interface of ``cepkit.automaton``, in conftest.py)."""
import numpy as np
import pytest
import traitlets

from cepkit.widgets import AutomatonView
from cepkit.widgets.automaton_view import TRACES, edge_paths
from cepkit.widgets.graph_layout import layered_layout

# Digest 004 §3, "Figure 2 CEA" [derived], with position 0 = T.
FIGURE2_OUTPUTS = {(2, 3), (2, 7), (2, 5, 7), (3, 7), (3, 5, 7), (2, 8), (2, 5, 8), (3, 8), (3, 5, 8), (7, 8)}


def separators(trace) -> int:
    return sum(x is None for x in trace.x)


def test_states_transitions_and_marks_are_drawn(figure2):
    view = AutomatonView(figure2)
    assert [t.name for t in view.figure.data] == list(TRACES)
    assert list(view.trace("states").text) == ["q0", "q1", "q2"]
    assert len(view.trace("final states").x) == 1
    assert separators(view.trace("• transitions")) == 3 and separators(view.trace("◦ transitions")) == 2
    assert sorted(view.trace("transition labels").text) == sorted(
        ["TRUE / ◦", "H / •", "TRUE / ◦", "T ∧ tmp > 40 / •", "H / •"])
    assert view.figure.data[TRACES.index("◦ transitions")].line.dash == "dot"
    assert any(a.text == "start" for a in view.figure.layout.annotations)
    assert "3 states, 5 transitions" in view.summary.value
    assert repr(view) == "AutomatonView(states=3, transitions=5, step=0/0)"


def test_layers_run_left_to_right_from_the_initial_state(figure2):
    view = AutomatonView(figure2)
    assert [view.positions[s][0] for s in (0, 1, 2)] == [0, 1, 2]


def test_self_loops_at_one_state_do_not_overlap(figure2):
    automaton = figure2
    graph = automaton.to_networkx()
    loops = [points for data, points in edge_paths(graph, layered_layout(graph, 0))
             if data["predicate"] in ("TRUE", "T ∧ tmp > 40") and np.allclose(points[0], points[-1])]
    heights = sorted(points[:, 1].max() for points in loops)
    assert len(loops) == 3 and heights[1] < heights[2]        # q1's two loops: one inside the other


def test_stepping_highlights_active_states_and_lists_partial_matches(farm, figure2):
    view = AutomatonView(figure2, farm)
    assert view.step == 0 and list(view.trace("active states").text) == ["q0"]
    assert "no event read yet" in view.panel.value
    view.step = 3                                   # after H@2: one run waits in q1 holding (2,)
    assert sorted(view.trace("active states").text) == ["q0", "q1"]
    assert "<td>q1</td><td>1</td><td>(2,)</td>" in view.panel.value
    view.step = 8                                   # after H@7: the runs ending there complete
    assert sorted(view.trace("active states").text) == ["q0", "q1", "q2"]
    assert "completed here</b>: (2, 5, 7), (2, 7), (3, 5, 7), (3, 7)" in view.panel.value


def test_every_output_of_figure2_is_reported_at_its_last_event(farm, figure2):
    view = AutomatonView(figure2, farm)
    completed = set()
    for k in range(1, len(view.steps) + 1):
        view.step = k
        completed.update(tuple(p) for p in view.steps[k - 1].matches)
        assert all(str(p) in view.panel.value for p in view.steps[k - 1].matches)
    assert completed == FIGURE2_OUTPUTS


def test_buttons_and_slider_move_the_step(farm, figure2):
    view = AutomatonView(figure2, farm)
    view.back.click()
    assert view.step == 0
    view.forward.click()
    view.forward.click()
    assert view.step == 2 and view.slider.value == 2
    view.slider.value = 9
    assert view.step == 9
    view.forward.click()
    assert view.step == 9
    with pytest.raises(traitlets.TraitError):
        view.step = 10


def test_long_streams_are_stepped_through_a_prefix_and_say_so(farm, figure2):
    view = AutomatonView(figure2, farm * 3, max_steps=10)
    assert len(view.steps) == 10 and view.slider.max == 10
    assert "first 10 of 27 events" in view.panel.value
