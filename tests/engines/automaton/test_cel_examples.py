"""Every worked example of [CEL] (CEL and CEA) run on the automaton engine, on both readings of the
lost type of position 0 of the running stream S ([CEL] §2: "every paper output must be identical")."""

import pytest

import cepkit
from cepkit.datasets import cel_fire_sensors
from cepkit.engines.automaton.compile import CEA, Transition
from cepkit.engines.automaton.evaluate import run_all
from cepkit.engines.automaton.plan import Program
from cepkit.engines.automaton.predicates import EVENT, Guard
from cepkit.lang import ast as A
from cepkit.runtime.stream import Stream
from cel_formulas import PHI1, PHI2, PHI3, PHI4, PHI5, FIGURE2


@pytest.fixture(params=["T", "H"], ids=["pos0=T", "pos0=H"])
def position0(request):
    return request.param


def positions(query, position0, strategy=None):
    found = cepkit.match(query, cel_fire_sensors(position0), engine="automaton", strategy=strategy)
    assert found.engine == "automaton"
    return found.positions()


def test_phi3_bindings(position0):
    """[CEL] §2, φ3: the filter on y sits inside the +; outside it y is the tuple of its positions."""
    found = cepkit.match(PHI3, cel_fire_sensors(position0), engine="automaton")
    assert sorted(m.bindings["y"] for m in found) == [(4,), (4, 6), (6,)]
    assert {(m.bindings["x"], m.bindings["z"]) for m in found} == {(3, 7)}


def test_phi4_is_outside_the_automaton(position0):
    """[CEL] §5: only unary formulas compile; correlation like φ4 is rejected, naming engines that can run it
    (and ``auto`` gets it from one of them, with φ3's output, derived)."""
    with pytest.raises(cepkit.QueryError) as err:
        cepkit.match(PHI4, cel_fire_sensors(position0), engine="automaton")
    assert "reference" in err.value.engines and "automaton" not in err.value.engines
    assert "^" in str(err.value)
    auto = cepkit.match(PHI4, cel_fire_sensors(position0))
    assert auto.engine != "automaton"
    assert auto.positions() == positions(PHI3, position0)


@pytest.mark.parametrize(
    "query, strategy, expected",
    [
        (PHI1, None, [(1, 2), (1, 8), (5, 8)]),  # [paper]
        (PHI1.replace("< 25", "<= 25"), None, [(1, 2), (1, 8), (5, 8)]),  # [paper]: "≤ 25" gives the same
        (PHI2, None, [(1, 2), (2, 5), (1, 8), (5, 8)]),  # [paper]: φ1's outputs plus {2,5}
        (PHI3, None, [(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)]),  # [paper]
        (PHI1, "STRICT", [(1, 2)]),  # [paper]
        (PHI1, "NEXT", [(1, 2), (1, 8)]),  # [paper]; full set (derived)
        (PHI1, "LAST", [(1, 2), (5, 8)]),  # [paper]; full set (derived)
        (PHI1, "MAX", [(1, 2), (1, 8), (5, 8)]),  # [paper]; full set (derived)
        (PHI3, "NEXT", [(3, 4, 6, 7)]),  # [paper]
        (PHI3, "LAST", [(3, 4, 6, 7)]),  # [paper]
        (PHI3, "MAX", [(3, 4, 6, 7)]),  # [paper]
        (PHI3, "STRICT", []),  # (derived)
        (PHI2, "STRICT", [(1, 2)]),  # (derived)
        (PHI2, "NEXT", [(1, 2), (2, 5), (1, 8)]),  # (derived)
        (PHI2, "LAST", [(1, 2), (2, 5), (5, 8)]),  # (derived)
        (PHI2, "MAX", [(1, 2), (2, 5), (1, 8), (5, 8)]),  # (derived)
    ],
)
def test_outputs_on_s(position0, query, strategy, expected):
    """[CEL] §2 and §4: φ1, φ2, φ3 and every row of "Selection strategies on S"."""
    assert positions(query, position0, strategy) == expected


@pytest.mark.parametrize(
    "text, why",
    [
        ("T AS x FILTER y.tmp > 40", "unknown variable 'y'"),  # not well-formed: y bound nowhere around it
        ("T AS x ; T AS x", "unsafe"),  # unsafe, hence unsatisfiable
    ],
)
def test_not_well_formed_and_unsafe_formulas_are_rejected(text, why):
    """[CEL] §5.1: a filter on a variable bound nowhere around it, and T AS x ; T AS x (unsatisfiable)."""
    with pytest.raises(cepkit.QueryError, match=why):
        cepkit.match(text, cel_fire_sensors(), engine="automaton")


def test_phi5_conditional_filter(position0):
    """[CEL] §5.2, φ5 (derived here): "if x > 40 the next matched event is a T, otherwise an H" (Theorem 2's pop-up)."""
    expected = {(1, 4), (1, 5), (1, 6), (5, 6), (4, 7), (6, 7), (4, 8), (6, 8)}
    if position0 == "T":
        expected |= {(0, 2), (0, 3), (0, 7), (0, 8)}
    assert set(positions(PHI5, position0)) == expected


def test_figure2_output():
    """[CEL] Figure 2 (derived here): with pos 0 = T these ten; with pos 0 = H twelve more, all starting at 0."""
    with_t = {(2, 3), (2, 7), (2, 5, 7), (3, 7), (3, 5, 7), (2, 8), (2, 5, 8), (3, 8), (3, 5, 8), (7, 8)}
    assert set(positions(FIGURE2, "T")) == with_t
    with_h = set(positions(FIGURE2, "H"))
    assert with_h > with_t and len(with_h - with_t) == 12 and all(p[0] == 0 for p in with_h - with_t)


def test_figure2_automaton_evaluated_as_drawn():
    """[CEL] Figure 2 built by hand (q0 -TRUE/◦-> q0, q0 -H/•-> q1, q1 -TRUE/◦-> q1, q1 -(T ∧ tmp>40)/•-> q1,
    q1 -H/•-> q2 final) and run by the engine's lazy determinization and Algorithm 1: the (derived)
    outputs, the same as the compiled FIGURE2 formula's on both readings of position 0."""
    h = Guard("H", frozenset({"H"}))
    t_hot = Guard("T", frozenset({"T"}), A.Compare(">", A.Attr(EVENT, "tmp"), A.Literal(40)))
    figure2 = CEA(
        3,
        0,
        frozenset({2}),
        (
            Transition(0, 0, Guard(), False),
            Transition(0, 1, h, True, "x"),
            Transition(1, 1, Guard(), False),
            Transition(1, 1, t_hot, True, "y"),
            Transition(1, 2, h, True, "z"),
        ),
    )
    program = Program(cepkit.parse(FIGURE2), figure2)
    found = {}
    for position0 in ("T", "H"):
        outputs = run_all(program, Stream.from_any(cel_fire_sensors(position0))).outputs
        found[position0] = {m.positions for m in program.matches(outputs)[0]}
        assert found[position0] == set(positions(FIGURE2, position0))
    assert found["T"] == {(2, 3), (2, 7), (2, 5, 7), (3, 7), (3, 5, 7), (2, 8), (2, 5, 8), (3, 8), (3, 5, 8), (7, 8)}
    extra = found["H"] - found["T"]
    assert found["H"] > found["T"] and len(extra) == 12 and all(p[0] == 0 for p in extra)


def test_figure2_automaton_shape():
    """[CEL] Figure 2: H/• into the loop state, (T ∧ tmp > 40)/• on it, H/• to the final state, TRUE/◦ skips."""
    a = cepkit.automaton("H AS x ; (T AS y FILTER y.tmp > 40)+ ; H AS z")
    labels = {(t.predicate, t.mark) for t in a.transitions}
    assert labels == {("TRUE", "◦"), ("H", "•"), ("T ∧ tmp > 40", "•")}
    loops = {t.src for t in a.transitions if t.src == t.dst and t.predicate == "T ∧ tmp > 40"}
    assert len(loops) == 1
    into_final = [t for t in a.transitions if t.dst in a.finals]
    assert into_final and all((t.predicate, t.mark, t.var) == ("H", "•", "z") for t in into_final)


def test_matcher_reports_phi1_as_each_event_arrives():
    """Matcher: push one event, get the matches it completes ([CEL] §9 contract)."""
    matcher = cepkit.Matcher(PHI1, engine="automaton")
    completed = {e["ts"]: [m.positions for m in matcher.push(e)] for e in cel_fire_sensors().to_dict("records")}
    assert completed == {0: [], 1: [], 2: [(1, 2)], 3: [], 4: [], 5: [], 6: [], 7: [], 8: [(1, 8), (5, 8)]}
