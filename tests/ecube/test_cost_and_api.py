"""The cost model ([LIU] §4.4, Table 4.1) on measured and given statistics, and the ECube API's edges: refusals
with carets, names, unrelated queries, attribute hierarchies."""

import pytest

import cepkit
from cepkit.ecube import CostModel, ECube, Statistics, UnitCosts, shape_of
from cepkit.runtime.stream import Stream

COMPANIES = {"Computer": ["DELL", "INTC", "MSFT"], "Finance": ["QQQ", "FCF", "ROM"]}


def shape(text, hierarchy=COMPANIES):
    return shape_of(cepkit.parse(text, hierarchy))


def test_statistics_are_measured_per_type_value_and_window():
    events = [{"type": t, "ts": i, "loc": loc} for i, (t, loc) in enumerate([("A", "x"), ("B", "y"), ("A", "y")])]
    stats = Statistics.measure(Stream.from_any(events), attribute="loc")
    assert (stats.type_counts, stats.length, stats.duration) == ({"A": 2, "B": 1}, 3, 2.0)
    assert stats.value_counts[("A", "y")] == 1
    assert stats.window_fraction(shape("SEQ(A a, B b) WITHIN 1")) == 0.5
    assert stats.window_fraction(shape("SEQ(A a, B b) WITHIN 3 EVENTS")) == 1.0
    assert stats.window_fraction(shape("SEQ(A a, B b)")) == 1.0


def test_estimates_follow_table_4_1():
    stats = Statistics({"INTC": 100, "FCF": 100, "MSFT": 100, "QQQ": 100}, length=400, duration=400.0)
    model = CostModel(stats, UnitCosts(P=1.0))
    two = shape("SEQ(INTC i, FCF f) WITHIN 10")
    # |R_2| = n_FCF · |S_INTC| · Pt = 100 · (100 · 10/400) · 1/2
    assert model.results(two) == pytest.approx(125.0)
    assert model.scratch_cost(two) == pytest.approx(200 + 100 + 125)  # NumRE·C_app + Σ|R_k|·C_access
    blocked = model.results(shape("SEQ(INTC i, !MSFT m, FCF f) WITHIN 10"))
    assert blocked == pytest.approx(125.0 * 0.75**2.5)  # (1 − Pt·Pt) per negated event
    concept = model.results(shape("SEQ(Computer c, FCF f) WITHIN 10"))
    assert concept == pytest.approx(125.0 * 2)  # DELL has no trades: INTC, MSFT


def test_given_statistics_choose_the_regime():
    """[LIU] §4.6: general-to-specific pays when the general query's results are few (re-reading them is cheap);
    when the child is rare, its results are cheap to compute alone and to merge up."""
    queries = {"general": "SEQ(Computer c, Finance f) WITHIN 10", "child": "SEQ(INTC c, Finance f) WITHIN 10"}
    cube = ECube(queries, COMPANIES)
    busy_child = Statistics({"INTC": 1000, "DELL": 10, "MSFT": 10, "QQQ": 500, "FCF": 500}, 2020, 2020.0)
    plan = cube.plan(statistics=busy_child)
    assert (plan.step("general").source, plan.step("child").source) == (None, "general")
    assert plan.cost < plan.scratch_cost
    rare_child = Statistics({"INTC": 5, "DELL": 1000, "MSFT": 1000, "QQQ": 500, "FCF": 500}, 3005, 3005.0)
    assert cube.plan(statistics=rare_child).step("child").direction in ("scratch", "g→s")
    with pytest.raises(ValueError, match="events or statistics"):
        ECube(queries, COMPANIES).plan()


@pytest.mark.parametrize(
    "query, what",
    [
        ("SEQ(A a, B+ b)", "Plus items"),
        ("SEQ(A a, ANY x)", "ANY"),
        ("SELECT NEXT * PATTERN SEQ(A a, B b)", "NEXT"),
        ("SEQ(A a, B b) RETURN a", "RETURN"),
        ("SEQ(!A a)", "positive"),
    ],
)
def test_queries_outside_the_fragment_are_refused_with_a_caret(query, what):
    with pytest.raises(cepkit.QueryError, match=what) as err:
        ECube({"q": query})
    assert "^" in str(err.value)


def test_names_and_relations_are_checked():
    cube = ECube(["SEQ(Computer c, FCF f)", "SEQ(QQQ q, ROM r)"], COMPANIES)
    assert list(cube.queries) == ["q1", "q2"] and cube.graph.number_of_edges() == 0
    with pytest.raises(ValueError, match="already has"):
        cube.add("q1", "SEQ(A a)")
    cube.run([{"type": "INTC", "ts": 0}, {"type": "FCF", "ts": 1}])
    with pytest.raises(cepkit.QueryError, match="not related"):
        cube.derive("q1", "q2")
    with pytest.raises(cepkit.EventError, match="out of order"):
        cube.run([{"type": "INTC", "ts": 1}, {"type": "FCF", "ts": 0}])


def test_attribute_concepts_refine_like_types():
    places = cepkit.Hierarchy({"TX": ["Dallas", "Austin"], "OK": ["Tulsa"]}, attribute="loc")
    events = [{"type": "Move", "ts": i, "loc": loc} for i, loc in enumerate(["Dallas", "Austin", "Tulsa", "Tulsa"])]
    cube = ECube({"state": "SEQ(Move a, Move b) WHERE a.loc = 'TX' and b.loc = 'OK'"}, places)
    cube.run(events)
    city = cube.drill_down("state", concept=[("TX", "Dallas", 1)])
    assert cube.last_plan.step("state.1").source == "state"
    assert city.positions() == [(0, 2), (0, 3)]
    assert [m.key for m in city] == [m.key for m in cepkit.match(city.query, events, engine="reference")]
    assert [e for e in cube.graph.edges(data="kind")] == [("state", "state.1", "concept")]


def test_work_counts_what_reuse_saves():
    events = [{"type": t, "ts": i} for i, t in enumerate(["INTC", "QQQ", "DELL", "FCF", "INTC", "ROM"])]
    queries = {"general": "SEQ(Computer c, Finance f)", "child": "SEQ(INTC c, Finance f)"}
    alone = ECube(queries, COMPANIES)
    alone.run(events, directions=())
    assert alone.work == {"evaluations": 2, "events_read": 12}
    reused = ECube(queries, COMPANIES)
    reused.run(events)
    assert reused.work["events_read"] < alone.work["events_read"]
    assert ECube(queries, COMPANIES).work == {"evaluations": 0, "events_read": 0}


def test_a_query_added_after_the_run_is_computed_when_an_operation_reaches_it():
    events = [{"type": t, "ts": i} for i, t in enumerate(["INTC", "QQQ", "DELL", "FCF"])]
    cube = ECube({"general": "SEQ(Computer c, Finance f)"}, COMPANIES)
    cube.run(events)
    cube.add("child", "SEQ(INTC c, Finance f)")
    assert "child" not in cube.results
    got = cube.drill_down("general", concept=[("Computer", "INTC", 1)])
    assert got.query == cube.queries["child"] and got.positions() == [(0, 1), (0, 3)]
    assert cube.last_plan.step("child").source == "general"


BUSY_CHILD = Statistics({"INTC": 1000, "DELL": 10, "MSFT": 10, "QQQ": 500, "FCF": 500}, 2020, 2020.0)
RARE_CHILD = Statistics({"INTC": 5, "DELL": 1000, "MSFT": 1000, "QQQ": 500, "FCF": 500}, 3005, 3005.0)
REGIME_QUERIES = {"general": "SEQ(Computer c, Finance f) WITHIN 10", "child": "SEQ(INTC c, Finance f) WITHIN 10"}


def test_adaptation_installs_a_plan_only_past_theta_and_gamma():
    """[LIU] §4.5: re-plan when a rate drifts past θ; switch only for a predicted gain above γ (Table 4.1's
    units: no fixed cost per evaluation, the regimes the text describes)."""
    cube = ECube(REGIME_QUERIES, COMPANIES, units=UnitCosts())
    cube.plan(statistics=RARE_CHILD)
    assert cube.last_plan.step("general").source == "child"  # bottom-up while INTC is rare
    assert not cube.adapt(statistics=RARE_CHILD)  # no drift
    assert not cube.adapt(statistics=BUSY_CHILD, theta=1e9)  # drift below θ
    assert not cube.adapt(statistics=BUSY_CHILD, gamma=0.99)  # gain below γ
    assert cube.adapt(statistics=BUSY_CHILD)
    assert cube.last_plan.step("child").source == "general" and cube.statistics is BUSY_CHILD
    assert not cube.adapt(statistics=RARE_CHILD)  # back: the busy plan is near-optimal there too (< γ)


def test_the_fixed_cost_of_an_evaluation_makes_small_reuse_not_pay():
    """Each engine run a strategy makes costs ``C_eval`` more (0 in Table 4.1): with it, a specific-to-general
    union of a rare child and its delta queries no longer beats the general query alone."""
    cube = ECube(REGIME_QUERIES, COMPANIES, units=UnitCosts())
    union = cube.plan(statistics=RARE_CHILD).step("general")
    assert union.source == "child" and union.strategy.evaluations == len(union.strategy.deltas) == 1
    fixed = UnitCosts(C_eval=1e4)
    plain, charged = CostModel(RARE_CHILD, UnitCosts()), CostModel(RARE_CHILD, fixed)
    assert union.strategy.cost(charged) - union.strategy.cost(plain) == pytest.approx(1e4)
    assert cube.what_if(RARE_CHILD, units=fixed).step("general").source is None
    assert ECube(REGIME_QUERIES, COMPANIES).units == cepkit.ecube.cost.MEASURED


def test_segments_keep_their_plan_and_stay_exact():
    events = [{"type": t, "ts": i} for i, t in enumerate(["INTC", "QQQ", "DELL", "FCF", "INTC", "ROM", "MSFT", "FCF"])]
    cube = ECube(REGIME_QUERIES, COMPANIES)
    cube.run(events[:4], statistics=RARE_CHILD)
    plan = cube.last_plan
    later = cube.run(events[4:], keep_plan=True)
    assert cube.last_plan is plan
    for name, text in REGIME_QUERIES.items():
        alone = cepkit.match(text, events[4:], hierarchy=COMPANIES, engine="reference")
        assert [m.key for m in later[name]] == [m.key for m in alone]
    with pytest.raises(ValueError, match="first"):
        ECube(REGIME_QUERIES, COMPANIES).adapt(events)


def test_only_the_wanted_queries_and_their_sources_are_computed():
    events = [{"type": t, "ts": i} for i, t in enumerate(["INTC", "QQQ", "DELL", "FCF", "INTC", "ROM"])]
    queries = {**REGIME_QUERIES, "other": "SEQ(QQQ q, ROM r) WITHIN 10"}
    cube = ECube(queries, COMPANIES, units=UnitCosts())
    got = cube.run(events, statistics=RARE_CHILD, only=["general"])
    assert set(got) == {"general", "child"}  # general is derived from child under RARE_CHILD
    cube.run(events, statistics=BUSY_CHILD, only=["general"])
    assert set(cube.results) == {"general"}
