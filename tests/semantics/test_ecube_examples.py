"""The worked examples of [LIU] ch. 2-4 that the reference can run: stack evaluation (Ex 1), concept
hierarchies (Ex 13-16), and the in-order meaning of the out-of-order examples (Ex 2-8): the
reference evaluates in logical order whatever the arrival order, so its result is the ground truth the
out-of-order modes converge to (docs/language.md §6)."""

import cepkit
from cepkit.datasets import ecube_cities, ecube_example
from cepkit.semantics import evaluate


def named(query, name, hierarchy=None):
    """The matches as tuples of the thesis's event names, in output order."""
    stream = ecube_example(name)
    return [tuple(stream["e"].iloc[list(m.positions)]) for m in evaluate(query, stream, hierarchy=hierarchy)]


def test_we1_stack_pointers_result():
    """[LIU] Ex 1 (Fig 2.1): SEQ(G,A,T) gives <g1,a5,t15> and <g1,a6,t15>."""
    assert named("SEQ(G g, A a, T t)", "we1") == [("G1", "A5", "T15"), ("G1", "A6", "T15")]


def test_we6_concept_refinement():
    """[LIU] Ex 13/16: q2 = SEQ(D, T) gives {dh10,ts33}, {dh16,ts33}; q1 = SEQ(TX, OK) has 10 results whose
    delta over q2 has the 8 listed."""
    q1 = named("SEQ(TX x, OK y)", "we6", ecube_cities())
    q2 = named("SEQ(D x, T y)", "we6", ecube_cities())
    assert q2 == [("DHospital10", "TShelter33"), ("DHospital16", "TShelter33")]
    assert len(q1) == 10 and set(q2) <= set(q1)
    assert set(q1) - set(q2) == {
        ("DHospital10", "OHospital15"),
        ("DHospital10", "OShelter38"),
        ("AHospital12", "OHospital15"),
        ("AHospital12", "TShelter33"),
        ("AHospital12", "OShelter38"),
        ("DHospital16", "OShelter38"),
        ("AShelter18", "TShelter33"),
        ("AShelter18", "OShelter38"),
    }


def test_we7_negated_concepts():
    """[LIU] Ex 14, W = 3: q3, q4 = SEQ(G, !DBusStation, A, T), q7 = SEQ(G, !D, A, T) (a negated concept is
    stricter), q6 = ∅."""
    h = ecube_cities()
    assert named("SEQ(G g, A a, T t) WITHIN 3", "we7", h) == [
        ("G1", "A3", "T4"),
        ("G5", "A7", "T8"),
        ("G9", "A10", "T11"),
    ]
    assert named("SEQ(G g, !DBusStation x, A a, T t) WITHIN 3", "we7", h) == [("G5", "A7", "T8"), ("G9", "A10", "T11")]
    assert named("SEQ(G g, !D x, A a, T t) WITHIN 3", "we7", h) == [("G9", "A10", "T11")]
    assert named("SEQ(G g, A a, D d, T t) WITHIN 3", "we7", h) == []


def test_we8_pattern_refinement_invariant():
    """[LIU] Ex 15: q6 = SEQ(G,A,D,T) gives {g1,a5,d10,t15}, {g1,a6,d10,t15}; q3 = π(q6) ⊎ SEQ(G,A,!D,T),
    the delta being {g1,a5,t8}, {g1,a6,t8}."""
    q6 = named("SEQ(G g, A a, D d, T t)", "we8")
    assert q6 == [("G1", "A5", "D10", "T15"), ("G1", "A6", "D10", "T15")]
    q3 = named("SEQ(G g, A a, T t)", "we8")
    delta = named("SEQ(G g, A a, !D d, T t)", "we8")
    assert delta == [("G1", "A5", "T8"), ("G1", "A6", "T8")]
    projected = [tuple(e for e in m if not e.startswith("D")) for m in q6]
    assert sorted(q3) == sorted(projected + delta) and not set(projected) & set(delta)


def test_we9_ground_truth_ignores_the_punctuation():
    """[LIU] Ex 2 and 6 (Fig 3.1(c)), SEQ(A,B,!C,D) within 10: the true result is <a3,b6,d10> and <a3,b6,d8>
    (c5 lies outside [6, 10]); d17 is too far from a3; the punctuation is never matched."""
    assert named("SEQ(A a, B b, !C c, D d) WITHIN 10", "we9") == [("A3", "B6", "D10"), ("A3", "B6", "D8")]


def test_we10_late_b4_is_blocked_by_c5():
    """[LIU] Ex 3 (Fig 3.1(d)): the late b4 would give <a3,b4,d8>, <a3,b4,d10>, both blocked by c5; the true
    result is {a3,b6,d8}, {a3,b6,d10}."""
    assert sorted(named("SEQ(A a, B b, !C c, D d) WITHIN 10", "we10")) == [("A3", "B6", "D10"), ("A3", "B6", "D8")]


def test_we13_net_result_is_empty():
    """[LIU] Ex 7/8 (Fig 3.1(a)), SEQ(A,!C,B) within 10: <a3,b11> is blocked by c5 and <a7,b11> by the late
    c9, so the net result is empty; a late a10 then gives {a10,b11} (derived)."""
    assert named("SEQ(A a, !C c, B b) WITHIN 10", "we13") == []
    stream = ecube_example("we13")
    stream.loc[len(stream)] = {"type": "A", "ts": 10, "e": "A10"}
    assert [m.positions for m in evaluate("SEQ(A a, !C c, B b) WITHIN 10", stream)] == [(3, 5)]


def test_in_order_engines_reject_the_disordered_stream():
    """docs/language.md §1: cepkit.match rejects a disordered stream naming the first offending position."""
    try:
        cepkit.match("SEQ(A a, B b)", ecube_example("we13"), engine="reference")
    except cepkit.EventError as err:
        assert err.position == 4
    else:
        raise AssertionError("expected an EventError")
