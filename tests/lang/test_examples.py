"""docs/language.md §9: the examples that must parse and mean what their source paper says."""

import pytest

import cepkit
from cepkit.datasets import cel_fire_sensors, neel_hospital
from cepkit.lang import ast as A

PHI1 = "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)"
PHI3 = "(H AS x ; (T AS y FILTER y.id = 1)+ ; H AS z) FILTER (x.hum < 30 and z.hum > 60 and x.id = 1 and z.id = 1)"
CORE = "SELECT NEXT * FROM S WHERE T AS x ; H AS y FILTER x.tmp > 40"
NEEL = (
    "PATTERN SEQ(Recycle r, Wash w, !AND(Sharpen s, Disinfect d, s.roomID = d.roomID, s.id = r.id, "
    "d.id = r.id), Operate o, r.id = o.id, r.id = w.id) WITHIN 10 minutes"
)
SES = (
    "PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE c.PID = p.PID and p.PID = d.PID and d.PID = b.PID "
    "and b.V < 5000 WITHIN 15 days"
)
SASE = (
    "PATTERN SEQ(A a, B+ b, C c) WHERE b[i].price > b[i-1].price and avg(b.price) > a.price "
    "WITHIN 100 EVENTS PARTITION BY symbol"
)


def test_every_example_of_section_9_parses():
    for text in (PHI1, PHI3, CORE, NEEL, SES, SASE):
        query = cepkit.parse(text)
        assert cepkit.parse(cepkit.pretty(query.ast)) == query


@pytest.mark.parametrize("position0", ["T", "H"])
def test_phi1_fire_at_sensor_0(position0):
    # [CEL] §2, φ1: {1,2}, {1,8}, {5,8} [paper], whichever type position 0 has.
    found = cepkit.match(PHI1, cel_fire_sensors(position0), engine="reference")
    assert found.positions() == [(1, 2), (1, 8), (5, 8)]
    assert [m.bindings for m in found] == [{"x": 1, "y": 2}, {"x": 1, "y": 8}, {"x": 5, "y": 8}]


@pytest.mark.parametrize("position0", ["T", "H"])
def test_phi3_filter_inside_the_iteration(position0):
    # [CEL] §2, φ3: {3,4,6,7}, {3,4,7}, {3,6,7} [paper]; y is rebound in each iteration (a tuple outside).
    query = cepkit.parse(PHI3)
    plus = next(query.ast.pattern.find_all(A.Plus))
    assert isinstance(plus.pattern, A.Filter) and query.kleene_variables == {"y"}
    found = cepkit.match(query, cel_fire_sensors(position0), engine="reference")
    assert sorted(found.positions()) == [(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)]
    assert {m.bindings["y"] for m in found} == {(4, 6), (4,), (6,)}


def test_core_header_where_takes_the_pattern():
    # docs/language.md §9: with FROM, WHERE introduces the pattern and the FILTER belongs to it.
    query = cepkit.parse(CORE)
    assert query.ast.core_style and query.ast.source == "S" and query.strategy == "NEXT"
    assert query.where is None and isinstance(query.pattern, A.Filter)
    assert isinstance(query.pattern.pattern, A.Seq)
    # Under NXT the ≤next-least match per last position stays ([CEL] §4); T events above 40 are 1 and 5,
    # so {1,7} beats {5,7} and {1,8} beats {5,8}.
    found = cepkit.match(query, cel_fire_sensors(), engine="reference")
    assert found.positions() == [(1, 2), (1, 3), (1, 7), (1, 8)]


def test_neel_nested_negation_with_condition_items():
    query = cepkit.parse(NEEL)
    recycle, wash, negation, operate, *conditions = query.pattern.items
    assert [recycle.type, wash.type, operate.type] == ["Recycle", "Wash", "Operate"]
    assert isinstance(negation, A.Not) and isinstance(negation.item, A.And)
    assert [type(i).__name__ for i in negation.item.items] == ["Atom", "Atom", "Compare", "Compare", "Compare"]
    assert [cepkit.pretty(c) for c in conditions] == ["r.id = o.id", "r.id = w.id"]
    assert query.within.seconds == 600
    assert {"negation", "nested_negation", "condition_items", "correlated_filters"} <= query.features.keys()
    # [CSV] Fig 2: on its stream every candidate is filtered by a sharpen + disinfect.
    assert cepkit.match(query, neel_hospital("rq1"), engine="reference").positions() == []


def test_ses_sets_with_kleene_inside():
    query = cepkit.parse(SES)
    first, second = query.pattern.items
    assert isinstance(first, A.And) and isinstance(second, A.And)
    assert [type(i).__name__ for i in first.items] == ["Atom", "Plus", "Atom"]
    assert query.kleene_variables == {"p"}
    assert query.within.seconds == 15 * 86400
    assert len(A.conjuncts(query.where)) == 4


def test_sase_kleene_predicates_and_aggregates():
    query = cepkit.parse(SASE)
    rising, above_average = A.conjuncts(query.where)
    assert rising.left == A.Attr("b", "price", "i") and rising.right == A.Attr("b", "price", "i-1")
    assert above_average.left == A.Agg("avg", "b", "price")
    assert query.within == A.Window(100, "EVENTS") and query.partition_by == ("symbol",)
    assert {"kleene_conditions", "aggregates", "event_window", "partition"} <= query.features.keys()
