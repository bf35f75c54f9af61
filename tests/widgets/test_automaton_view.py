"""AutomatonView without a browser, on automata compiled by ``cepkit.automaton`` from the formulas of
[CEL] §2 over the farm-sensor stream of Figure 1."""

import html

import pytest
import traitlets

import cepkit
from cepkit.widgets import AutomatonView
from cepkit.widgets.automaton_view import TRACES, edge_label, fired_transitions, natural_key, run_text, state_name
from cepkit.widgets.graph_layout import dot_available
from cel_formulas import PHI1, PHI3, FIGURE2

# [CEL] §2, "Figure 2 CEA": CEs that begin and end with an H and hold some T events above 40.
FIGURE2_OUTPUTS = {(2, 3), (2, 7), (2, 5, 7), (3, 7), (3, 5, 7), (2, 8), (2, 5, 8), (3, 8), (3, 5, 8), (7, 8)}


def assert_labels_show_their_hover(labels):
    """Each edge label is its full text (the hover), wrapped at spaces."""
    for text, hover in zip(labels.text, labels.hovertext):
        assert text.replace("<br>", " ") == html.unescape(hover)


def downstream(view, first, later) -> bool:
    """Whether state ``later`` is drawn after ``first``: right of it, or below it in a top-to-bottom drawing."""
    a, b = view.drawing.nodes[first], view.drawing.nodes[later]
    return b.x > a.x + 1 or b.y < a.y - 1


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
    assert sorted(html.unescape(h) for h in labels.hovertext) == sorted(
        f"{t.predicate} / {t.mark}" for t in a.transitions
    )
    assert_labels_show_their_hover(labels)
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
    assert all(downstream(view, a.initial, f) for f in a.finals)


def test_stepping_highlights_active_states_and_lists_partial_matches(farm):
    view = AutomatonView(PHI3, farm)
    a = view.automaton
    assert view.step == 0 and list(view.trace("active states").text) == [state_name(a.initial)]
    assert "no event read yet" in view.panel.value
    view.step = 4  # after H@3 (x): some run holds the partial match (3,)
    assert any((3,) in runs for runs in view.active().values())
    assert "<td>[3]</td>" in view.panel.value and "<td>[]</td>" in view.panel.value
    view.step = 8  # after H@7 (z): [CEL] §2, ⟦φ3⟧ completes here,
    # listed in output order (docs/language.md §10.2), as the engine enumerates an event's matches since kleene3
    assert "completed here</b>: [3, 4, 6, 7], [3, 4, 7], [3, 6, 7]" in view.panel.value
    finals = [s for s, runs in view.active().items() if runs and s in a.finals]
    assert set(view.trace("active states").text) >= {state_name(s) for s in finals} and finals


def test_every_output_of_figure2_is_reported_at_its_last_event(farm):
    view = AutomatonView(FIGURE2, farm)
    completed = set()
    for k in range(1, len(view.steps) + 1):
        view.step = k
        step = view.steps[k - 1]
        completed.update(m.positions for m in step.matches)
        assert all(m.positions[-1] == step.position and run_text(m.positions) in view.panel.value for m in step.matches)
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


TOUR = (
    "(STORM AS w OR SNOW AS w OR FOG AS w) ; DELAYED_DEPARTURE AS d "
    "WHERE d.dep_delay >= 60 WITHIN 3 hours PARTITION BY origin"
)


def text_box(x, y, text, size=12):
    """A label's box in points as dot measured it (Helvetica at the layout's font scale, about 0.6 em per
    character, 1.2 em per line)."""
    lines = text.split("<br>")
    width, height = 0.55 * size * max(map(len, lines)), 1.15 * size * len(lines)
    return x - width / 2, y - height / 2, x + width / 2, y + height / 2


def overlap(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


@pytest.mark.skipif(not dot_available(), reason="Graphviz dot is not installed")
@pytest.mark.parametrize("query", [TOUR, FIGURE2, PHI3])
def test_dot_places_labels_clear_of_each_other_and_of_states(query):
    """The tour's three long DELAYED_DEPARTURE predicates converging on the final state, Figure 2's two
    branches, φ3's loops: no label box meets another or a state's circle."""
    view = AutomatonView(query)
    assert view.drawing.engine == "dot"
    labels = view.trace("transition labels")
    boxes = [text_box(x, y, text) for x, y, text in zip(labels.x, labels.y, labels.text)]
    assert not [
        (labels.text[i], labels.text[j]) for i in range(len(boxes)) for j in range(i) if overlap(boxes[i], boxes[j])
    ]
    for box in boxes:
        for node in view.drawing.nodes.values():
            nearest = min(max(node.x, box[0]), box[2]), min(max(node.y, box[1]), box[3])
            assert (nearest[0] - node.x) ** 2 + (nearest[1] - node.y) ** 2 >= (node.size / 2 - 1) ** 2


def test_state_circles_fit_their_names_and_the_figure_fits_the_drawing(monkeypatch):
    from cepkit.engines.ses.inspect import SesRun
    from cepkit.datasets import ses_chemo

    view = AutomatonView(
        SesRun(
            "PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE c.PID = p.PID and p.PID = d.PID "
            "and d.PID = b.PID WITHIN 15 days",
            strategy="STNM",
        ),
        ses_chemo(3).iloc[:13],
    )
    sizes = dict(zip(view.trace("states").text, view.trace("states").marker.size))
    assert sizes["{b,c,d,p}"] > 12 * 0.55 * len("{b,c,d,p}") and sizes["{b,c,d,p}"] > min(sizes.values())
    layout = view.figure.layout
    assert layout.width is None and layout.yaxis.scaleanchor == "x"  # the width is the output's
    assert layout.height == int(view.drawing.height) + layout.margin.t + layout.margin.b
    assert tuple(layout.yaxis.range) == (0, view.drawing.height)


def test_without_dot_the_layered_layout_draws_it(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    view = AutomatonView(TOUR)
    assert view.drawing.engine == "layered"
    assert len(view.trace("transition labels").text) == len(view.automaton.transitions)
    assert all(downstream(view, view.automaton.initial, f) for f in view.automaton.finals)


def test_natural_sort_of_state_names():
    assert sorted(["q10", "q2", "q1", "{b,c,d,p}", "{b}"], key=natural_key) == ["q1", "q2", "q10", "{b,c,d,p}", "{b}"]
    view = AutomatonView(
        "T AS a ; T AS b ; T AS c ; T AS d ; T AS e ; T AS f ; T AS g ; T AS h ; T AS i ; T AS j",
        [{"type": "T", "ts": i} for i in range(12)],
    )
    view.step = 11
    rows = [row.split("</td>")[0] for row in view.panel.value.split("<tr><td>")[1:]]
    assert "q10" in rows and rows == sorted(rows, key=natural_key) and rows.index("q2") < rows.index("q10")


def test_runs_are_position_lists_with_their_partition_key():
    events = [
        {"type": t, "ts": 60 * i, "origin": o, "dep_delay": 90}
        for i, (t, o) in enumerate([("FOG", "JFK"), ("STORM", "LGA"), ("DELAYED_DEPARTURE", "JFK")])
    ]
    view = AutomatonView(TOUR, events)
    view.step = 2
    assert "[0] origin=JFK" in view.panel.value and "[1] origin=LGA" in view.panel.value
    assert "<td>[]</td>" in view.panel.value  # the empty run has no key yet
    view.step = 3
    assert "completed here</b>: [0, 2] origin=JFK" in view.panel.value
    assert run_text(()) == "[]" and run_text((7,)) == "[7]"


def test_the_transition_that_fired_and_the_states_entered_are_highlighted(farm):
    view = AutomatonView(PHI3, farm)
    a = view.automaton
    assert view.fired() == [] and not view.trace("fired transitions").x
    view.step = 4  # H@3 (hum 25, id 1) is x: q0 -•-> q1, q0 loops ◦
    fired = [view.edges[k] for k in view.fired()]
    assert (0, 1, "•") in fired and (0, 0, "◦") in fired
    assert view.entered() == [1]  # the ◦ self-loop enters nothing
    assert list(view.trace("entered states").x) == [view.drawing.nodes[1].x]
    assert view.trace("fired transitions").x.count(None) == len(fired)
    assert "taken: q0 → q0 (◦), q0 → q1 (•)" in view.panel.value
    view.step = 8  # H@7 (z) completes: some • edge into the final state fired
    assert any(v in a.finals and mark == "•" for _, v, mark in (view.edges[k] for k in view.fired()))


def test_fired_transitions_follow_the_runs():
    edges = [(0, 0, "◦"), (0, 1, "•"), (1, 1, "•"), (1, 2, "◦")]
    assert fired_transitions(edges, {0: [()], 1: [(2,)]}, {0: [()], 1: [(2, 5)], 2: [(2,)]}, 5, 0) == [0, 2, 3]
    assert fired_transitions(edges, {0: [()]}, {0: [()]}, 5, 0) == [0]  # the event was skipped


def test_edge_labels_wrap_at_spaces_and_keep_the_mark():
    assert edge_label("H", "•") == "H / •"
    long = edge_label("DELAYED_DEPARTURE ∧ dep_delay >= 60 and origin = JFK and carrier = AA and x = 1", "•")
    assert long.endswith("/ •") and "…" in long and len(long.split("\n")) == 3
    assert all(len(line) <= 30 for line in long.split("\n"))
