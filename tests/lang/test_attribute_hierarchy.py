"""Attribute hierarchies (docs/language.md §7, docs/decisions.md "Attribute hierarchies"): a comparison of the
hierarchy's attribute with a concept means "the value is the concept or below it"."""

import pytest

import cepkit
from cepkit.lang.hierarchy import expand_attribute_concepts
from cepkit.runtime.registry import registered

# [LIU] Fig 4.2 as values of a `loc` attribute: room < city < state.
PLACES = cepkit.Hierarchy({"TX": ["D", "A"], "D": ["DBusStation", "DHospital"], "A": ["AHospital"]}, attribute="loc")
EVENTS = [
    {"type": "Move", "loc": loc, "v": v}
    for loc, v in [("DBusStation", 1), ("AHospital", 2), ("OK", 3), ("D", 4), (None, 5), ("TX", 6)]
]


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("m.loc = 'TX'", [0, 1, 3, 5]),
        ("'D' = m.loc", [0, 3]),
        ("m.loc IN ('A', 'OK')", [1, 2]),
        ("m.loc != 'D'", [1, 2, 5]),  # a null stays false, as for any comparison
        ("not (m.loc = 'D')", [1, 2, 4, 5]),
        ("m.loc = 'DHospital'", []),  # a leaf is a plain value
    ],
)
def test_a_concept_matches_the_values_below_it(condition, expected):
    got = cepkit.match(f"Move m WHERE {condition}", EVENTS, hierarchy=PLACES)
    assert [p for (p,) in got.positions()] == expected


def test_ordering_compares_values_never_concepts():
    got = cepkit.match("Move m WHERE m.loc < 'E'", EVENTS[:4], hierarchy=PLACES)
    assert got.positions() == [(0,), (1,), (3,)]


def test_a_kleene_variable_is_quantified_per_event():
    got = cepkit.match("SEQ(Move+ m) WHERE m.loc != 'D'", EVENTS[:3], hierarchy=PLACES)
    assert got.positions() == [(1,), (1, 2), (2,)]


@pytest.mark.parametrize("engine", [e.name for e in registered()])
def test_event_types_are_not_classified_by_an_attribute_hierarchy(engine):
    events = [{"type": "DBusStation"}, {"type": "TX"}, {"type": "B"}]
    query = cepkit.parse("SEQ(TX t, B b)", hierarchy=PLACES)
    assert "hierarchy" not in query.features
    assert cepkit.match(query, events, engine=engine).positions() == [(1, 2)]


def test_engines_without_the_feature_refuse_it_naming_the_reference():
    with pytest.raises(cepkit.QueryError, match="attribute_hierarchy") as err:
        cepkit.match("Move m WHERE m.loc = 'TX'", EVENTS, hierarchy=PLACES, engine="stack")
    assert "reference" in err.value.engines


def test_the_expansion_is_a_plain_condition():
    query = cepkit.parse("Move m WHERE m.loc = 'D' and m.v > 1", hierarchy=PLACES)
    assert (
        cepkit.pretty(expand_attribute_concepts(query.where, PLACES))
        == "m.loc IN ('D', 'DBusStation', 'DHospital') and m.v > 1"
    )
    assert expand_attribute_concepts(query.where, None) is query.where
