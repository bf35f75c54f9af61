"""The worked examples of CEL ([CEL] §2), on both readings of position 0 of the running stream S."""

import pytest

import cepkit
from cepkit.datasets import cel_fire_sensors
from cel_formulas import PHI1, PHI2, PHI3, PHI4, PHI5


def positions(query, position0, **kwargs):
    return cepkit.match(query, cel_fire_sensors(position0), engine="reference", **kwargs).positions()


def as_sets(found):
    return {frozenset(p) for p in found}


@pytest.fixture(params=["T", "H"], ids=["pos0=T", "pos0=H"])
def position0(request):
    """[CEL] §2: the type of position 0 is lost; every paper output must be the same either way."""
    return request.param


def test_done_criterion_of_issue_2():
    assert cepkit.match(
        "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)",
        cepkit.datasets.cel_fire_sensors(),
        engine="reference",
    ).positions() == [(1, 2), (1, 8), (5, 8)]


def test_phi1_fire_at_sensor_0(position0):
    """[CEL] §2 φ1: ⟦φ1⟧(S) = {1,2}, {1,8}, {5,8}; "≤ 25" instead of "< 25" gives the same."""
    assert positions(PHI1, position0) == [(1, 2), (1, 8), (5, 8)]
    assert positions(PHI1.replace("y.hum < 25", "y.hum <= 25"), position0) == [(1, 2), (1, 8), (5, 8)]


def test_phi2_either_order(position0):
    """[CEL] §2 φ2: φ1's outputs plus {2,5}."""
    assert positions(PHI2, position0) == [(1, 2), (2, 5), (1, 8), (5, 8)]


def test_phi3_iteration_with_filter_inside(position0):
    """[CEL] §2 φ3: temperatures at sensor 1 while humidity rises from below 30 to above 60."""
    assert positions(PHI3, position0) == [(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)]


def test_phi3_binds_the_iterated_variable_as_a_tuple(position0):
    """docs/language.md §10.6: outside its iteration, y is the tuple of its positions."""
    found = cepkit.match(PHI3, cel_fire_sensors(position0), engine="reference")
    assert sorted(m.bindings["y"] for m in found) == [(4,), (4, 6), (6,)]
    assert all(m.bindings["x"] == 3 and m.bindings["z"] == 7 for m in found)


def test_phi4_correlation_with_an_enclosing_variable(position0):
    """[CEL] §2 φ4 (correlated, not unary): (derived here) its output equals φ3's."""
    assert positions(PHI4, position0) == positions(PHI3, position0)


def test_phi5_conditional_formula():
    """[CEL] §2 φ5 (derived here): the eight outputs, plus four starting at 0 when position 0 is a T."""
    base = {(1, 4), (1, 5), (1, 6), (5, 6), (4, 7), (6, 7), (4, 8), (6, 8)}
    assert set(positions(PHI5, "H")) == base
    assert set(positions(PHI5, "T")) == base | {(0, 2), (0, 3), (0, 7), (0, 8)}


def test_figure_2_automaton_language():
    """[CEL] §2 Figure 2 written as a formula: CEs that begin and end with an H and contain some of the T
    events above 40 (zero or more)."""
    query = "(H AS a ; H AS b) OR (H AS a ; (T AS t FILTER t.tmp > 40)+ ; H AS b)"
    expected = {(2, 3), (2, 7), (2, 5, 7), (3, 7), (3, 5, 7), (2, 8), (2, 5, 8), (3, 8), (3, 5, 8), (7, 8)}
    assert set(positions(query, "T")) == expected
    with_h = set(positions(query, "H"))
    assert with_h >= expected and len(with_h - expected) == 12 and all(p[0] == 0 for p in with_h - expected)


STRATEGY_TABLE = [  # [CEL] §2, "Selection strategies on S"
    ("STRICT", PHI1, [(1, 2)]),
    ("NEXT", PHI1, [(1, 2), (1, 8)]),
    ("LAST", PHI1, [(1, 2), (5, 8)]),
    ("MAX", PHI1, [(1, 2), (1, 8), (5, 8)]),
    ("NEXT", PHI3, [(3, 4, 6, 7)]),
    ("MAX", PHI3, [(3, 4, 6, 7)]),
    ("LAST", PHI3, [(3, 4, 6, 7)]),
    ("STRICT", PHI3, []),
    ("STRICT", PHI2, [(1, 2)]),
    ("NEXT", PHI2, [(1, 2), (2, 5), (1, 8)]),
    ("LAST", PHI2, [(1, 2), (2, 5), (5, 8)]),
    ("MAX", PHI2, [(1, 2), (2, 5), (1, 8), (5, 8)]),
]


@pytest.mark.parametrize(
    "strategy, query, expected", STRATEGY_TABLE, ids=[f"{s}-{i}" for i, (s, _, _) in enumerate(STRATEGY_TABLE)]
)
def test_strategy_table(strategy, query, expected, position0):
    """[CEL] §2 strategy table: as a strategy= override, as SELECT <strategy> and as SEL(φ)."""
    assert positions(query, position0, strategy=strategy) == expected
    assert positions(f"SELECT {strategy} * FROM S WHERE {query}", position0) == expected
    assert positions(f"{strategy}({query})", position0) == expected


def test_nxt_spelling_and_cel_orders():
    """[CEL] §4: NXT is NEXT; {1,8} <next {5,8} and {5,8} <last {1,8}."""
    assert positions(PHI1, "T", strategy="NXT") == [(1, 2), (1, 8)]


def test_nested_strategy_inside_a_sequence():
    """docs/language.md §5: a strategy can wrap a sub-pattern; NEXT picks, per last H, the earliest T before it."""
    query = "NEXT((T AS x ; H AS y) FILTER x.id = 0 and y.id = 0) ; T AS z FILTER z.id = 1"
    found = positions(query, "H")
    assert found == [(1, 2, 4), (1, 2, 6)]


def test_not_well_formed_filter_is_rejected():
    """[CEL] §6-7: a filter on a variable bound nowhere around it is not well-formed."""
    with pytest.raises(cepkit.QueryError, match="unknown variable 'y'"):
        cepkit.parse("T AS x FILTER y.tmp > 40")


def test_unsafe_formula_is_rejected():
    """[CEL] §6-7: T AS x ; T AS x can never match (docs/language.md §10.10: a QueryError naming both)."""
    with pytest.raises(cepkit.QueryError, match="defined twice"):
        cepkit.parse("T AS x ; T AS x")


def test_lp_normal_rewrite_is_equivalent(position0):
    """[CEL] §5: the LP-normal form of φ1 gives φ1's output."""
    lp = "(T AS x FILTER (x.tmp > 40 and x.id = 0)) ; (H AS y FILTER (y.hum < 25 and y.id = 0))"
    assert positions(lp, position0) == positions(PHI1, position0)
