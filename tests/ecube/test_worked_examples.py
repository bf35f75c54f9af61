"""The E-Cube worked examples of [LIU] ch. 4 (Def 3-4, Examples 9-16) on ``cepkit.ECube``: the relations, the OLAP
operations, Chase's plan and costs, the reuse each strategy does, and the results, each equal to the
query's own (reference and stack engine)."""

import networkx as nx
import pytest

import cepkit
from cepkit.ecube import (
    ECube,
    chase,
    concept_drill_down,
    concept_roll_up,
    pattern_drill_down,
    pattern_roll_up,
    refinement,
    shape_of,
)
from cepkit.ecube.plan import ROOT, make_plan
from cepkit.ecube.reuse import Executor, JoinPattern
from cepkit.datasets import ecube_cities, ecube_example
from cepkit.runtime.stream import Stream

# [LIU] Fig 4.2, reconstructed from Examples 9-16 (the figure is not printed): USA > {TX, OK}; TX > {D, A, G}; OK > {T, O}; each city > its stations.
HIERARCHY = ecube_cities()

# Fig 4.1, with q4 and q7 as Ex 9 / Ex 14 / Def 3(I) require (docs/references.md E3).
QUERIES = {
    "q1": "SEQ(TX x, OK y)",
    "q2": "SEQ(D x, T y)",
    "q3": "SEQ(G g, A a, T t)",
    "q4": "SEQ(G g, !DBusStation n, A a, T t)",
    "q5": "SEQ(DBusStation x, TBusStation y, THospital z) WITHIN 48 hours",
    "q6": "SEQ(G g, A a, D d, T t)",
    "q7": "SEQ(G g, !D n, A a, T t)",
}


def events(*pairs):
    return [{"type": t, "ts": ts} for t, ts in pairs]


def assert_own_results(cube, results, stream):
    """Each query's matches are its own, by the reference and by the stack engine."""
    for name, got in results.items():
        for engine in ("reference", "stack"):
            alone = cepkit.match(cube.queries[name], stream, engine=engine)
            assert [m.key for m in got] == [m.key for m in alone], (name, engine)


def relation(general, specific):
    ref = refinement(*(shape_of(cepkit.parse(QUERIES[q], HIERARCHY)) for q in (general, specific)))
    return None if ref is None else ref.kind


# ----------------------------------------------------------------------------- [LIU] Defs 3-4: relations
@pytest.mark.parametrize(
    "general, specific, kind",
    [
        ("q1", "q2", "concept"),  # TX >c D, OK >c T
        ("q4", "q7", "concept"),  # a coarser negation is stricter: !DBusStation >c !D
        ("q3", "q6", "pattern"),  # adds D
        ("q3", "q7", "pattern"),  # adds !D
        ("q2", "q6", "pattern"),
        ("q1", "q3", "both"),  # G <c TX, T <c OK, and A added
    ],
)
def test_we2_refinement_relations(general, specific, kind):
    assert relation(general, specific) == kind
    assert relation(specific, general) is None


@pytest.mark.parametrize("a, b", [("q6", "q7"), ("q7", "q6"), ("q1", "q1")])
def test_we2_unrelated_pairs(a, b):
    """q6 and q7 are unrelated; a query is no concept refinement of itself (Def 3(III))."""
    assert relation(a, b) is None


def test_we2_the_lattice_of_fig_4_1():
    cube = ECube(QUERIES, HIERARCHY)
    edges = {(g, s): k for g, s, k in cube.graph.edges(data="kind")}
    assert {("q1", "q2"), ("q1", "q3"), ("q4", "q7"), ("q3", "q6"), ("q3", "q7"), ("q2", "q6"), ("q3", "q4")} <= set(
        edges
    )
    assert edges[("q4", "q7")] == "concept" and edges[("q1", "q3")] == "both"
    # q5 has its own window: the q2-q5 edge of Fig 4.1 is not exact without the same window ([LIU] §4.7), so none.
    assert not any("q5" in e for e in edges)


# ----------------------------------------------------------------------------- [LIU] Ex 9: OLAP operations
def test_we3_olap_operations():
    q = {name: cepkit.parse(text, HIERARCHY) for name, text in QUERIES.items()}
    assert pattern_drill_down(q["q3"], [("!D n", 2)]) == q["q7"]
    assert pattern_roll_up(q["q6"], [("G", 1), ("A", 2)]) == cepkit.parse("SEQ(D d, T t)", HIERARCHY)
    # The text lists only position 1, yet position 2 changes too (OK <-> T): docs/references.md E4.
    assert concept_drill_down(q["q1"], [("TX", "D", 1), ("OK", "T", 2)]) == q["q2"]
    assert concept_roll_up(q["q2"], [("D", "TX", 1), ("T", "OK", 2)]) == q["q1"]


def test_we3_operations_check_what_they_are_given():
    q1 = cepkit.parse(QUERIES["q1"], HIERARCHY)
    with pytest.raises(cepkit.QueryError, match="not below"):
        concept_drill_down(q1, [("TX", "T", 1)])
    with pytest.raises(cepkit.QueryError, match="holds"):
        pattern_roll_up(q1, [("OK", 1)])
    with pytest.raises(cepkit.QueryError, match="outside"):
        pattern_drill_down(q1, [("A", 4)])


# ----------------------------------------------------------------------------- [LIU] Ex 10/11: Chase
WE4_FROM_V0 = {1: 10, 2: 9, 3: 12, 4: 13, 5: 9, 6: 15, 7: 14}
WE4_BETWEEN = {
    (1, 2): 3,
    (2, 1): 11,
    (1, 3): 5,
    (3, 1): 12,
    (2, 5): 4,
    (5, 2): 10,
    (2, 6): 7,
    (6, 2): 9,
    (3, 6): 6,
    (6, 3): 8,
    (3, 4): 4,
    (4, 3): 4,
    (3, 7): 3,
    (7, 3): 6,
    (4, 7): 5,
    (7, 4): 2,
}


def we4_graph():
    graph = nx.DiGraph()
    for q, w in WE4_FROM_V0.items():
        graph.add_edge(ROOT, f"q{q}", cost=w, method="scratch", direction="scratch", strategy=None)
    for (a, b), w in WE4_BETWEEN.items():
        graph.add_edge(f"q{a}", f"q{b}", cost=w, method="reuse", direction="reuse", strategy=None)
    return graph


def test_we4_the_minimum_arborescence_breaks_the_cycle_3_4_7():
    graph = we4_graph()
    cheapest = {v: min(graph.in_edges(v, data="cost"), key=lambda e: e[2])[0] for v in graph if v != ROOT}
    assert (cheapest["q3"], cheapest["q4"], cheapest["q7"]) == ("q4", "q7", "q3")  # the cycle
    tree = chase(graph)
    assert set(tree.edges) == {
        (ROOT, "q1"),
        ("q1", "q2"),
        ("q2", "q5"),
        ("q1", "q3"),
        ("q3", "q7"),
        ("q7", "q4"),
        ("q3", "q6"),
    }  # e(4,3) replaced by e(1,3)
    assert sum(graph.edges[e]["cost"] for e in tree.edges) == 33
    assert sum(WE4_FROM_V0.values()) == 82  # every query from scratch


def test_we4_the_order_is_a_valid_chase_order():
    plan = make_plan(we4_graph(), order_key=lambda n: n)
    order = plan.order
    assert order == ["q1", "q2", "q3", "q5", "q6", "q7", "q4"]
    assert all(order.index(s.source) < order.index(s.query) for s in plan.steps if s.source is not None)
    assert plan.cost == 33


# ----------------------------------------------------------------------------- [LIU] Ex 12: online filtering
def test_we5_no_general_match_means_no_work_for_the_specific_queries():
    stream = Stream.from_any(events(("G", 1), ("A", 2), ("D", 3)))  # no T: q3 finds nothing
    q3, q6 = (shape_of(cepkit.parse(QUERIES[q], HIERARCHY)) for q in ("q3", "q6"))
    executor = Executor(stream)
    none = executor.evaluate(q3)
    assert none.shape == (0, len(q3.positives))
    before = executor.evaluations
    assert JoinPattern(q3, q6, refinement(q3, q6).embedding).run(executor, none).shape == (0, len(q6.positives))
    assert executor.evaluations == before


# ----------------------------------------------------------------------------- [LIU] Ex 13/16: q1 <-> q2
WE6 = ecube_example("we6")


def test_we6_q2_and_q1_and_the_delta():
    cube = ECube({"q1": QUERIES["q1"], "q2": QUERIES["q2"]}, HIERARCHY)
    results = cube.run(WE6)
    assert results["q2"].positions() == [(0, 5), (3, 5)]  # {dh10,ts33}, {dh16,ts33}, as printed
    assert len(results["q1"]) == 10
    delta = set(results["q1"].positions()) - set(results["q2"].positions())
    assert delta == {(0, 2), (0, 6), (1, 2), (1, 5), (1, 6), (3, 6), (4, 5), (4, 6)}  # docs/references.md E5
    assert_own_results(cube, results, WE6)


def test_we6_general_to_specific_rereads_q1_and_keeps_q2():
    cube = ECube({"q1": QUERIES["q1"], "q2": QUERIES["q2"]}, HIERARCHY)
    cube.run(WE6)
    got = cube.derive("q2", "q1")  # Ex 13
    assert (got.info["method"], got.positions()) == ("filter_concept", [(0, 5), (3, 5)])


def test_we6_specific_to_general_walks_only_the_uncovered_pointer_pairs():
    cube = ECube({"q1": QUERIES["q1"], "q2": QUERIES["q2"]}, HIERARCHY)
    cube.run(WE6)
    step = cube.candidates(cube.statistics).edges["q2", "q1"]["strategy"]
    assert sorted(str(d) for d in step.deltas) == ["SEQ(D, OK∖T)", "SEQ(TX∖D, OK∖T)", "SEQ(TX∖D, T)"]
    got = cube.derive("q1", "q2")  # Ex 16: q1 = q2 ∪ delta
    assert got.info["method"] == "union_concept"
    assert [m.key for m in got] == [m.key for m in cube.results["q1"]]


# ----------------------------------------------------------------------------- [LIU] Ex 14: q7 from q4
WE7 = ecube_example("we7")
WE7_QUERIES = {q: QUERIES[q] + " WITHIN 3" for q in ("q3", "q4", "q6", "q7")}


def test_we7_results():
    cube = ECube(WE7_QUERIES, HIERARCHY)
    results = cube.run(WE7)
    assert {q: m.positions() for q, m in results.items()} == {
        "q3": [(0, 2, 3), (4, 6, 7), (8, 9, 10)],
        "q4": [(4, 6, 7), (8, 9, 10)],
        "q6": [],
        "q7": [(8, 9, 10)],
    }
    assert_own_results(cube, results, WE7)


def test_we7_q7_filters_q4_by_the_coarser_negation():
    """Eq 4.5: !D is !DBusStation ∧ !DHospital ∧ !DShelter; a q4 result stays when neither of the other
    two lies in its gap: {g5,a7,t8} goes (DHospital6), {g9,a10,t11} stays."""
    cube = ECube(WE7_QUERIES, HIERARCHY)
    cube.run(WE7)
    got = cube.derive("q7", "q4")
    assert (got.info["method"], got.positions()) == ("filter_concept", [(8, 9, 10)])
    assert cube.last_plan.step("q7").source in ("q3", "q4")  # reuse, never from scratch


# ----------------------------------------------------------------------------- [LIU] Ex 15: q3 from q6
WE8 = ecube_example("we8")


def test_we8_q3_is_the_projection_of_q6_plus_the_delta():
    cube = ECube({"q3": QUERIES["q3"], "q6": QUERIES["q6"]}, HIERARCHY)
    results = cube.run(WE8)
    assert results["q6"].positions() == [(0, 1, 4, 5), (0, 2, 4, 5)]  # {g1,a5,d10,t15}, {g1,a6,d10,t15}
    step = cube.candidates(cube.statistics).edges["q6", "q3"]["strategy"]
    assert str(step.delta) == "SEQ(G, A, !D, T)"
    got = cube.derive("q3", "q6")
    assert got.info["method"] == "project_pattern"
    # π(q6) = {g1,a5,t15}, {g1,a6,t15}; t8's D pointer is null: the delta adds {g1,a5,t8}, {g1,a6,t8}.
    assert got.positions() == [(0, 1, 3), (0, 2, 3), (0, 1, 5), (0, 2, 5)]
    # The invariant q3 = π(q6) ⊎ SEQ(G,A,!D,T): the union is disjoint.
    projected = {(g, a, t) for g, a, _, t in results["q6"].positions()}
    delta = cepkit.match("SEQ(G g, A a, !D d, T t)", WE8, hierarchy=HIERARCHY).positions()
    assert projected.isdisjoint(delta) and projected | set(delta) == set(got.positions())
    assert_own_results(cube, results, WE8)


def test_every_query_of_fig_4_1_on_one_stream():
    stream = WE6.to_dict("records") + events(
        ("G", 40), ("DBusStation", 41), ("A", 42), ("D", 43), ("TBusStation", 44), ("THospital", 45), ("T", 46)
    )
    cube = ECube(QUERIES, HIERARCHY)
    results = cube.run(stream)
    assert set(results) == set(QUERIES)
    assert_own_results(cube, results, stream)
    plan = cube.last_plan
    assert plan.cost <= plan.scratch_cost
    assert any(s.source is not None for s in plan.steps)


@pytest.mark.parametrize(
    "directions, allowed",
    [
        (("g→s",), {"scratch", "g→s"}),  # [LIU] §4.6's top-down method
        (("s→g",), {"scratch", "s→g"}),  # bottom-up
        ((), {"scratch"}),  # every query alone, the state of the art
    ],
)
def test_the_methods_of_section_5_limit_the_directions(directions, allowed):
    cube = ECube(QUERIES, HIERARCHY)
    results = cube.run(WE6, directions=directions)
    assert {s.direction for s in cube.last_plan.steps} <= allowed
    assert_own_results(cube, results, WE6)
