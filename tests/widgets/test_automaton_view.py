"""AutomatonView without a browser, on automata compiled by ``cepkit.automaton`` from the formulas of
digest 004 §3 over the farm-sensor stream of Figure 1."""
import html

import networkx as nx
import numpy as np
import pytest
import traitlets

import cepkit
from cepkit.widgets import AutomatonView
from cepkit.widgets.automaton_view import TRACES, edge_paths, state_name
from cel_formulas import PHI1, PHI3, FIGURE2

# Digest 004 §3, "Figure 2 CEA": CEs that begin and end with an H and hold some T events above 40.
FIGURE2_OUTPUTS = {(2, 3), (2, 7), (2, 5, 7), (3, 7), (3, 5, 7), (2, 8), (2, 5, 8), (3, 8), (3, 5, 8), (7, 8)}


def assert_labels_abbreviate_their_hover(labels):
    """Each edge label is its full text (the hover) or the predicate cut short, the mark always kept."""
    for text, hover in zip(labels.text, labels.hovertext):
        hover = html.unescape(hover)
        predicate, mark = hover.rsplit(" / ", 1)
        assert text.endswith(f" / {mark}")
        shown = text[:-len(f" / {mark}")]
        assert shown == predicate or (shown.endswith("…") and predicate.startswith(shown[:-1]))


def separators(trace) -> int:
    return sum(x is None for x in trace.x)


def test_states_transitions_and_marks_are_drawn():
    view = AutomatonView(PHI1)
    a = view.automaton
    assert [t.name for t in view.figure.data] == list(TRACES)
    assert list(view.trace("states").text) == [state_name(s) for s in a.states]
    assert len(view.trace("final states").x) == len(a.finals) > 0
    marked = sum(t.mark == "•" for t in a.transitions)
    assert separators(view.trace("• transitions")) == marked > 0
    assert separators(view.trace("◦ transitions")) == len(a.transitions) - marked > 0
    labels = view.trace("transition labels")
    assert sorted(html.unescape(h) for h in labels.hovertext) == sorted(f"{t.predicate} / {t.mark}"
                                                                        for t in a.transitions)
    assert_labels_abbreviate_their_hover(labels)
    assert view.trace("◦ transitions").line.dash == "dot"
    assert any(ann.text == "start" for ann in view.figure.layout.annotations)
    assert f"{len(a.states)} states, {len(a.transitions)} transitions" in view.summary.value
    assert repr(view) == f"AutomatonView(states={len(a.states)}, transitions={len(a.transitions)}, step=0/0)"


def test_an_automaton_already_compiled_is_drawn_as_is():
    compiled = cepkit.automaton(PHI3)
    assert AutomatonView(compiled).automaton is compiled


def test_layers_run_left_to_right_from_the_initial_state():
    view = AutomatonView(PHI3)
    a = view.automaton
    assert view.positions[a.initial][0] == 0
    assert all(view.positions[f][0] > 0 for f in a.finals)


def test_self_loops_at_one_state_nest_and_hang_away_from_layer_neighbours():
    graph = nx.MultiDiGraph()
    graph.add_edge(0, 1, predicate="H", mark="•")
    graph.add_edge(1, 1, predicate="TRUE", mark="◦")
    graph.add_edge(1, 1, predicate="T", mark="•")
    positions = {0: (0, 0.0), 1: (1, 0.0)}
    loops = [points for _, points, _ in edge_paths(graph, positions) if np.allclose(points[0], points[-1])]
    assert sorted(p[:, 1].max() for p in loops)[0] < sorted(p[:, 1].max() for p in loops)[1]
    positions = {0: (1, 1.0), 1: (1, 0.0)}                # a neighbour above in the same layer: hang below
    assert all(p[:, 1].max() <= 1e-9 for _, p, where in edge_paths(graph, positions) if where == "bottom center")
    assert sum(where == "bottom center" for *_, where in edge_paths(graph, positions)) == 2


def test_stepping_highlights_active_states_and_lists_partial_matches(farm):
    view = AutomatonView(PHI3, farm)
    a = view.automaton
    assert view.step == 0 and list(view.trace("active states").text) == [state_name(a.initial)]
    assert "no event read yet" in view.panel.value
    view.step = 4                                   # after H@3 (x): some run holds the partial match (3,)
    assert any((3,) in runs for runs in view.active().values())
    assert "(3,)" in view.panel.value
    view.step = 8                                   # after H@7 (z): digest 004 §3, ⟦φ3⟧ completes here
    assert "completed here</b>: (3, 4, 6, 7), (3, 6, 7), (3, 4, 7)" in view.panel.value
    finals = [s for s, runs in view.active().items() if runs and s in a.finals]
    assert set(view.trace("active states").text) >= {state_name(s) for s in finals} and finals


def test_every_output_of_figure2_is_reported_at_its_last_event(farm):
    view = AutomatonView(FIGURE2, farm)
    completed = set()
    for k in range(1, len(view.steps) + 1):
        view.step = k
        step = view.steps[k - 1]
        completed.update(m.positions for m in step.matches)
        assert all(m.positions[-1] == step.position and str(m.positions) in view.panel.value for m in step.matches)
    assert completed == FIGURE2_OUTPUTS == set(cepkit.match(FIGURE2, farm, engine="reference").positions())


def test_buttons_and_slider_move_the_step(farm):
    view = AutomatonView(PHI1, farm)
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


def test_long_streams_are_stepped_through_a_prefix_and_say_so(farm):
    view = AutomatonView(PHI1, farm * 3, max_steps=10)
    assert len(view.steps) == 10 and view.slider.max == 10
    assert "first 10 of 27 events" in view.panel.value


def test_a_query_outside_cel_is_a_query_error_naming_engines():
    with pytest.raises(cepkit.QueryError) as err:
        AutomatonView("SEQ(T x, !H h, T z)")
    assert err.value.engines and "automaton" not in err.value.engines


def test_long_labels_keep_clear_of_states_and_show_whole_on_hover():
    """The tour's query: three long DELAYED_DEPARTURE predicates converge on the final state."""
    from cepkit.widgets.automaton_view import CHAR_WIDTH, LINE_HEIGHT, STATE_BOX, _box, _overlap
    view = AutomatonView("(STORM AS w OR SNOW AS w OR FOG AS w) ; DELAYED_DEPARTURE AS d "
                         "WHERE d.dep_delay >= 60 WITHIN 3 hours PARTITION BY origin")
    labels = view.trace("transition labels")
    assert {html.unescape(h) for h in labels.hovertext} == {f"{t.predicate} / {t.mark}"
                                                            for t in view.automaton.transitions}
    assert any("…" in text for text in labels.text)
    assert_labels_abbreviate_their_hover(labels)
    states = [_box(xy, "middle center", STATE_BOX, STATE_BOX) for xy in view.positions.values()]
    boxes = [_box((x, y), side, len(text) * CHAR_WIDTH, LINE_HEIGHT)
             for x, y, side, text in zip(labels.x, labels.y, labels.textposition, labels.text)]
    assert not any(_overlap(label, state) for label in boxes for state in states)
