"""ECubeView without a browser: the lattice of [LIU] Fig 4.1 (§4), its plan, and drill-down / roll-up
through the buttons."""

import pytest

import cepkit
from cepkit.widgets import ECubeView
from cepkit.widgets.ecube_view import ROOT, TRACES, lattice_layout, parse_insertion

HIERARCHY = {"TX": ["D", "A", "G"], "OK": ["T", "OKC"], "D": ["DBusStation", "DHospital"]}
QUERIES = {"q1": "SEQ(TX x, OK y)", "q2": "SEQ(D x, T y)", "q3": "SEQ(G g, A a, T t)", "q6": "SEQ(G g, A a, D d, T t)"}
EVENTS = [
    {"type": t, "ts": i} for i, t in enumerate(["G", "DHospital", "A", "G", "A", "OKC", "DBusStation", "T", "A", "T"])
]


def segments(trace) -> int:
    return sum(x is None for x in trace.x)


def test_the_lattice_and_the_plan_are_drawn():
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    cube = view.cube
    assert [t.name for t in view.figure.data] == list(TRACES)
    assert list(view.trace("queries").text) == [ROOT, *QUERIES]
    planned = {(s.source or ROOT, s.query) for s in cube.last_plan.steps}
    kinds = [k for u, v, k in cube.graph.edges(data="kind") if (u, v) not in planned]  # a plan arrow replaces its line
    for kind in ("concept", "pattern", "both"):
        assert segments(view.trace(f"{kind} edges")) == kinds.count(kind)
    assert segments(view.trace("plan edges")) == len(QUERIES) == len(view.figure.layout.annotations)
    assert len(view.trace("plan labels").text) == len(QUERIES)
    assert all(label.split()[0] in ("scratch", "g→s", "s→g") for label in view.trace("plan labels").text)
    assert "plan cost" in view.figure.layout.title.text
    for name in QUERIES:
        assert (
            f"{len(cepkit.match(QUERIES[name], EVENTS, hierarchy=HIERARCHY))} matches"
            in view.trace("queries").hovertext[list(view.trace("queries").text).index(name)]
        )
    assert repr(view).startswith("ECubeView(queries=4")


def test_general_queries_are_drawn_above_specific_ones():
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    positions = lattice_layout(view.cube.graph)
    assert positions[ROOT][1] > max(y for n, (x, y) in positions.items() if n != ROOT)
    assert all(positions[g][1] > positions[s][1] for g, s in view.cube.graph.edges)


def test_the_operations_offered_follow_the_hierarchy():
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    ops = view.operations("q1")
    assert "1: TX → D (concept drill-down)" in ops and "2: OK → T (concept drill-down)" in ops
    assert "1: remove TX (pattern roll-up)" in ops
    assert not any("roll-up" in label and "concept" in label for label in ops)  # TX and OK are roots
    assert "1: D → TX (concept roll-up)" in view.operations("q2")


def test_the_drill_down_button_adds_the_query_re_plans_and_redraws():
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    view.query_picker.value = "q2"
    view.operation.value = "1: D → DBusStation (concept drill-down)"
    view.drill_button.click()
    new = view.query_picker.value
    assert new == "q2.1" and str(view.cube.queries[new]) == "DBusStation AS x ; T AS y"
    expected = cepkit.match("SEQ(DBusStation x, T y)", EVENTS)
    assert [m.key for m in view.results[new]] == [m.key for m in expected]
    assert list(view.trace("queries").text)[-1] == new
    kept = [s for s in view.cube.last_plan.steps if s.direction == "cached"]
    assert len(kept) == 4 and segments(view.trace("plan edges")) == 1  # "cached 0" arrows hidden...
    assert not any(label.startswith("cached") for label in view.trace("plan labels").text)
    view.show_cached.value = True  # ...unless asked for
    assert segments(view.trace("plan edges")) == 5 and "cached 0" in view.trace("plan labels").text
    step = view.cube.last_plan.step(new)
    assert step.source is not None and "g→s" in view.status.value  # answered from a kept result


def test_a_typed_insertion_and_a_roll_up():
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    view.query_picker.value = "q3"
    view.insert.value = "!D n 2"
    view.drill_button.click()
    assert str(view.cube.queries[view.query_picker.value]) == "SEQ(G AS g, !D AS n, A AS a, T AS t)"
    view.query_picker.value = "q6"
    view.operation.value = "3: remove D (pattern roll-up)"
    view.roll_button.click()
    assert view.query_picker.value == "q3"  # the roll-up is q3 itself: answered from its results
    assert "kept from the run" in view.status.value


def test_a_mismatched_button_or_a_bad_item_says_so():
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    view.query_picker.value = "q1"
    view.operation.value = "1: TX → D (concept drill-down)"
    view.roll_button.click()
    assert "pick a roll-up operation" in view.status.value
    view.insert.value = "!D 9"
    view.drill_button.click()
    assert "outside" in view.status.value and len(view.cube.queries) == 4
    for typed in ("foo", "!D x", "!D 0", "3"):
        view.insert.value = typed
        view.drill_button.click()
        assert (
            "type an item and the 1-based position" in view.status.value and "invalid literal" not in view.status.value
        )
    assert len(view.cube.queries) == 4


def test_typed_insertions_are_parsed():
    assert parse_insertion(" !D 2 ") == ("!D", 2) and parse_insertion("D d 3") == ("D d", 3)
    with pytest.raises(ValueError, match='got "foo"'):
        parse_insertion("foo")


def test_a_cube_that_has_run_is_shown_without_running_again():
    cube = cepkit.ECube(QUERIES, HIERARCHY)
    results = cube.run(EVENTS)
    view = ECubeView(cube)
    assert view.results.keys() == results.keys()
    with pytest.raises(ValueError, match="has run"):
        ECubeView(cepkit.ECube(QUERIES, HIERARCHY))


def test_each_relation_names_its_olap_operation():
    """[LIU] Example 9: an edge shows the concept replacements and insertions it stands for."""
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    hovers = dict(zip(zip(view.trace("relations").x, view.trace("relations").y), view.trace("relations").hovertext))
    texts = set(hovers.values())
    assert len(texts) == view.cube.graph.number_of_edges()
    assert "q1 → q2 (concept drill-down): TX → D at 1; OK → T at 2" in texts
    assert "q3 → q6 (pattern drill-down): insert D at 3" in texts
    assert "q1 → q3 (both drill-down): TX → G at 1; OK → T at 3; insert A at 2" in texts


def test_the_candidate_edges_of_chase_show_on_demand():
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    assert segments(view.trace("candidate edges")) == 0
    view.show_candidates.value = True
    graph = view.cube.last_plan.graph
    # every edge of Chase's graph is drawn and labelled once: the plan's as plan arrows, the others dotted
    assert segments(view.trace("candidate edges")) + len(QUERIES) == graph.number_of_edges()
    assert sorted([*view.trace("candidate labels").text, *view.trace("plan labels").text]) == sorted(
        f"{d['direction']} {d['cost']:.3g}" for _, _, d in graph.edges(data=True)
    )
    view.show_candidates.value = False
    assert segments(view.trace("candidate edges")) == 0


def test_dot_places_every_label_clear_of_the_others_and_sizes_the_figure():
    from cepkit.widgets.graph_layout import dot_available

    if not dot_available():
        pytest.skip("Graphviz dot is not installed")
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    view.show_candidates.value = True
    assert view.drawing.engine == "dot"
    labels = [
        (x, y, t)
        for name in ("plan labels", "candidate labels")
        for x, y, t in zip(view.trace(name).x, view.trace(name).y, view.trace(name).text)
    ]
    boxes = [(x - 3.5 * len(t), y - 7, x + 3.5 * len(t), y + 7) for x, y, t in labels]
    assert not [
        (a, b)
        for i, a in enumerate(boxes)
        for b in boxes[:i]
        if min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])
    ]
    layout = view.figure.layout
    assert layout.width is None and layout.yaxis.scaleanchor == "x"  # the width is the output's
    assert layout.height == int(view.drawing.height) + layout.margin.t + layout.margin.b
    names = list(view.trace("queries").text)
    assert all(size >= 6.5 * len(name) for name, size in zip(names, view.trace("queries").marker.size))


def test_the_sliders_are_explained():
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    assert "time-order" in view.pt.tooltip and "condition" in view.selectivity.tooltip
    assert any("time-order selectivity" in getattr(child, "value", "") for child in view.children)


def test_the_cost_model_explorer_redraws_a_what_if_plan():
    """The cost-model explorer: sliders for a type's rate (and Pt, P) re-plan live; nothing runs."""
    view = ECubeView(QUERIES, EVENTS, HIERARCHY)
    ran = view.cube.last_plan
    view.rate_type.value = "T"
    view.rate.value = 10.0
    plan = view.what_if_plan
    assert plan is not None and view.cube.last_plan is ran and "what-if plan" in view.status.value
    assert plan.scratch_cost > ran.scratch_cost  # ten times the T events cost more everywhere
    assert list(view.trace("plan labels").text) == [f"{s.direction} {s.cost:.3g}" for s in plan.steps]
    assert view.figure.layout.title.text.startswith("what-if plan")
    view.pt.value = 0.2
    assert view.what_if_plan is not plan
    view.reset.click()
    assert view.what_if_plan is None and view.figure.layout.title.text.startswith("plan cost")


def test_a_streaming_cube_view_updates_as_batches_arrive():
    """``ECubeView.from_batches``: the counts after every batch are the matches so far (at the end, the batch
    cube's), the LiveView below shows the stream, and a drill-down answers while it runs."""
    from cepkit.ecube.workloads import COMPANIES, concept_workload, trades
    from cepkit.widgets.live import replay

    hierarchy = cepkit.Hierarchy(COMPANIES)
    events = trades(600, seed=5)
    view = ECubeView.from_batches(
        cepkit.ECube(concept_workload(), hierarchy), replay(events, every=400)
    )  # 200 trades each
    assert view.live.batches == 1 and "matches so far" in view.table.value
    view.run(1)
    assert view.live.batches == 2 and view.live.event_count == 400
    batch = cepkit.ECube(concept_workload(), hierarchy).run(events[:400])
    assert all(0 < view.counts[n] <= len(batch[n]) for n in batch)
    view.query_picker.value = "q17"
    view.operation.value = "3: EFC → Education (concept roll-up)"
    assert view.apply("roll_up") is not None  # lands on q16: its matches so far
    view.run()
    whole = cepkit.ECube(concept_workload(), hierarchy).run(events)
    assert view.counts == {n: len(m) for n, m in whole.items()}
    assert view.live.finished and f">{len(whole['q16'])}<" in view.table.value
