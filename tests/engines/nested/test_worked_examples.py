"""The worked examples of [LIU] ch. 5 and [CSV] on the ``nested`` engine, under every caching mode and through
the normal form: the same matches as the sources give (and as the reference, tests/semantics/test_neel.py)."""

import pytest

import cepkit
from cepkit.datasets import neel_hospital, neel_predicate_scoping

Q1 = "SEQ(Recycle r, Washing w, !SEQ(Sharpening s, Disinfection d, Checking c), Operating o)"
Q2 = "SEQ(Recycle r, Washing w, !SEQ(Sharpening s, !Disinfection d, Checking c), Operating o)"
Q4 = "SEQ(Recycle r, !SEQ(Sharpening s, !Disinfection d, Checking c), Operating o)"
R_Q1 = (
    "PATTERN SEQ(Recycle r, Wash w, !AND(Sharpen s, Disinfect d, s.roomID = d.roomID, s.id = r.id, "
    "d.id = r.id), Operate o, r.id = o.id, r.id = w.id) WITHIN 10 minutes"
)

MODES = [{"caching": mode} for mode in ("a", "p", "b", None)] + [{"rewrite": True}]


@pytest.fixture(params=MODES, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def nested(request):
    """``nested(query, events)`` -> positions() of the nested engine with one set of options."""

    def run(query, events):
        found = cepkit.match(query, events, engine="nested", **request.param)
        assert found.engine == "nested"
        return found.positions()

    return run


def events(spec, **attrs):
    """``"A0 X1 B2"`` -> event dicts (type, ts from the digits)."""
    out = []
    for k, token in enumerate(spec.split()):
        head = token.rstrip("0123456789")
        out.append({"type": head, "ts": int(token[len(head) :]), **{a: v[k] for a, v in attrs.items()}})
    return out


def test_t1_ex17_sequence(nested):
    """[LIU] Ex 17: SEQ(Recycle, Washing) over {r1, w2, w3} gives {r1,w2}, {r1,w3}."""
    assert nested("SEQ(Recycle r, Washing w)", neel_hospital("ex17")) == [(0, 1), (0, 2)]


def test_t2_ex18_and(nested):
    """[LIU] Ex 18: AND(Recycle, Washing) over {w1, r2, w3} gives {r2,w1}, {r2,w3}."""
    assert nested("AND(Recycle r, Washing w)", neel_hospital("ex18")) == [(0, 1), (1, 2)]


def test_t3_ex19_negation_in_and_covers_the_window(nested):
    """[LIU] Ex 19: AND(Recycle, Washing, !Checking) over {c1, w2, r3} gives nothing."""
    assert nested("AND(Recycle r, Washing w, !Checking c)", neel_hospital("ex19")) == []


def test_t4_ex20_or(nested):
    """[LIU] Ex 20: OR(Checking[insType="scalpels"], Sharpening[insID=15]) over the window [4, 8] gives {c6}, {s8}."""
    query = "OR(Checking c FILTER c.insType = 'scalpels', Sharpening s FILTER s.insID = 15)"
    stream = neel_hospital("ex20")
    in_window = stream[stream["ts"].between(4, 8)].reset_index(drop=True)
    assert [tuple(in_window["e"].iloc[list(p)]) for p in nested(query, in_window)] == [("Checking6",), ("Sharpening8",)]


def test_t5_negation_needing_for_all_runs_nested(nested):
    """[LIU] §5.2.2: SEQ(A, !SEQ(B, !C, D), E) on {a1,b2,d4,c6,d8,e10} does not return {a1,e10}; outside Lcons,
    so it always runs nested (the normal form is refused)."""
    assert nested("SEQ(A a, !SEQ(B b, !C c, D d), E e)", events("A1 B2 D4 C6 D8 E10")) == []
    info = cepkit.match("SEQ(A a, !SEQ(B b, !C c, D d), E e)", events("A1 E2"), engine="nested", rewrite=True).info
    assert info["execution"] == "nested" and "for all" in info["rewrite"]["reason"]


def test_t6_q2_double_negation(nested):
    """[LIU] §5.2.2, Q2 gives nothing on r1,w2,s3,c4,o5 and {r1,w2,o6} on r1,w2,s3,d4,c5,o6."""
    assert nested(Q2, neel_hospital("q2_reject")) == []
    assert nested(Q2, neel_hospital("q2_accept")) == [(0, 1, 5)]


def test_t7_ex21_every_sharpening_checking_pair(nested):
    """[LIU] Ex 21: Q4 gives nothing on r1,s2,c3,s4,d5,c6,o7 because of (s2, c3)."""
    assert nested(Q4, neel_hospital("ex21")) == []


def test_t8_ex22_composite_last_instance(nested):
    """[LIU] Ex 22: with E = SEQ(C, O) on {c2,c3,o4,o5}, {c2,o4} also matches SEQ(E, !E)."""
    assert nested("SEQ(SEQ(C c, O o), !SEQ(C c2, O o2))", events("C2 C3 O4 O5")) == [(0, 2), (1, 2), (0, 3), (1, 3)]


def test_t15_figure_5_5_errata(nested):
    """docs/references.md E7: on r,w,c1,s2,d3,c4,o, Q1 rejects because (s2,d3,c4) matches."""
    assert nested(Q1, neel_hospital("fig55_errata")) == []


@pytest.mark.parametrize(
    "name, expected", [("q1_accept", [(0, 1, 2)]), ("q1_reject", []), ("q1_accept_no_disinfection", [(0, 1, 4)])]
)
def test_t16_q1(nested, name, expected):
    """[LIU] Fig 5.1, Q1 accepts r1,w2,o3, rejects r1,w2,s3,d4,c5,o6, accepts r1,w2,s3,c4,o5."""
    assert nested(Q1, neel_hospital(name)) == expected


def test_t19_predicate_scoping(nested):
    """[LIU] §7.2.4: q1 returns {a1,c0}; q2, with x.f <= z.f outside the negation, does not."""
    stream = neel_predicate_scoping()
    assert nested("SEQ(A x, !(B y), C z, x.f <= y.f and y.f <= z.f)", stream) == [(0, 3)]
    assert nested("SEQ(A x, !(B y), C z, x.f <= y.f and y.f <= z.f and x.f <= z.f)", stream) == []


def test_t21_r_q1_correlated_negated_and(nested):
    """[CSV] Fig 2: ⟨r1,w2,o11⟩ and ⟨r1,w2,o20⟩ are filtered by ⟨s3,d10⟩; in different rooms both pass."""
    stream = neel_hospital("rq1")
    assert nested(R_Q1, stream) == []
    stream.loc[stream["e"] == "Disinfect10", "roomID"] = 2
    assert nested(R_Q1, stream) == [(0, 1, 4), (0, 1, 6)]


def test_t23_negated_and_between_neighbours(nested):
    """[CSV] Ex 2: SEQ(R, !AND(S, D), W, O) emits ⟨r1,w12,o18⟩ iff nothing matches AND(S,D) in (1, 12)."""
    assert nested("SEQ(R r, !AND(S s, D d), W w, O o)", events("R1 S3 D5 W12 O18")) == []
    assert nested("SEQ(R r, !AND(S s, D d), W w, O o)", events("R1 S3 W12 D14 O18")) == [(0, 2, 4)]


@pytest.mark.parametrize(
    "query, spec, expected",
    [
        # docs/language.md §10.4: leading / trailing scopes, EVENTS windows, nested SEQ bounds, AND clipping
        ("SEQ(!C c, A a, B b) WITHIN 5 s", "C0 A3 B6", [(1, 2)]),
        ("SEQ(!C c, A a, B b) WITHIN 5 s", "C1 A3 B6", []),
        ("SEQ(A a, B b, !C c) WITHIN 5 s", "A0 B2 C5", []),
        ("SEQ(A a, B b, !C c) WITHIN 5 s", "A0 B2 C6", [(0, 1)]),
        ("SEQ(A a, B b, !C c) WITHIN 3 EVENTS", "A0 B1 X2 C3", [(0, 1)]),
        ("SEQ(A a, SEQ(!X x, B b), C c)", "A0 X1 B2 C3", []),
        ("SEQ(A a, SEQ(!X x, B b), C c)", "X0 A1 B2 C3", [(1, 2, 3)]),
        ("SEQ(X x, AND(A a, B b, !C c), Y y)", "C0 X1 A2 B3 Y4 C5", [(1, 2, 3, 4)]),
        ("AND(A a, B b, !C c) WITHIN 4 s", "C0 A3 B5", [(1, 2)]),
        ("AND(A a, !A b)", "A0", [(0,)]),  # docs/language.md §10.11: own events never block
        ("SEQ(A a, !SEQ(B b, C c), D d)", "B0 A1 C2 D3", [(1, 3)]),  # a negated composite lies inside
        ("SEQ(A a, !OR(B b, C c), D d)", "A0 C1 D2", []),
        ("SEQ(A a, EXISTS B b, !X x, C c)", "A0 X1 B2 C3", []),  # EXISTS bounds nothing
    ],
)
def test_scopes(nested, query, spec, expected):
    """docs/language.md §10.4 and §10.11 (the nested negation details), as tests/semantics/test_neel.py."""
    assert nested(query, events(spec)) == expected
