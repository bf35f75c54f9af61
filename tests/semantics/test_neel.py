"""NEEL negation, EXISTS and AND ([LIU] §5.1.2 and §7; docs/language.md §2, §10.4, §10.7, §10.11)."""

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


def test_ex17_sequence(reference):
    """[LIU] Ex 17: SEQ(Recycle r, Washing w) over {r1, w2, w3} gives {r1,w2}, {r1,w3}."""
    assert reference("SEQ(Recycle r, Washing w)", neel_hospital("ex17")) == [(0, 1), (0, 2)]


def test_ex18_and_any_order(reference):
    """[LIU] Ex 18: AND(Recycle r, Washing w) over {w1, r2, w3} gives {r2,w1}, {r2,w3}."""
    assert reference("AND(Recycle r, Washing w)", neel_hospital("ex18")) == [(0, 1), (1, 2)]


def test_ex19_negation_in_and_covers_the_window(reference):
    """[LIU] Ex 19: AND(Recycle, Washing, !Checking) over {c1, w2, r3} gives nothing: inside
    AND, !X must hold over the whole window, c1 included."""
    assert reference("AND(Recycle r, Washing w, !Checking c)", neel_hospital("ex19")) == []


def test_ex20_or_over_the_window_ending_at_8(reference):
    """[LIU] Ex 20: OR(Checking[insType="scalpels"], Sharpening[insID=15]) over H_4 at time 8
    gives {c6}, {s8}; c2 lies outside the window [4, 8]."""
    query = "OR(Checking c FILTER c.insType = 'scalpels', Sharpening s FILTER s.insID = 15)"
    stream = neel_hospital("ex20")
    in_window = stream[stream["ts"].between(4, 8)]
    assert [tuple(in_window["e"].iloc[list(p)]) for p in reference(query, in_window.reset_index(drop=True))] == [
        ("Checking6",),
        ("Sharpening8",),
    ]
    assert reference(query, stream) == [(1,), (2,), (3,)]  # the whole stream: c2 too


def test_t5_negation_needs_for_all(reference, events):
    """[LIU] §5.1.1: SEQ(A, !SEQ(B, !C, D), E) over {a1,b2,d4,c6,d8,e10} does not return {a1,e10}:
    (b2, d4) has no C between them."""
    assert reference("SEQ(A a, !SEQ(B b, !C c, D d), E e)", events("A1 B2 D4 C6 D8 E10")) == []


def test_t6_double_negation(reference):
    """[LIU] §5.2.2, Q2 = SEQ(R,W,!SEQ(S,!D,C),O); r1,w2,s3,c4,o5 gives nothing; r1,w2,s3,d4,c5,o6 gives
    {r1,w2,o6}."""
    assert reference(Q2, neel_hospital("q2_reject")) == []
    assert reference(Q2, neel_hospital("q2_accept")) == [(0, 1, 5)]


def test_t7_ex21_every_sharpening_checking_pair(reference):
    """[LIU] §5.2.5 Ex 21: Q4 gives nothing on r1,s2,c3,s4,d5,c6,o7, because of (s2, c3) (the naive
    NPDR1 rewrite Q4' would accept)."""
    assert reference(Q4, neel_hospital("ex21")) == []


def test_t8_ex22_composite_last_instance(reference, events):
    """[LIU] §5.2.5 Ex 22: with E = SEQ(C, O) on {c2,c3,o4,o5}, {c2,o4} also matches SEQ(E, !E):
    no E lies wholly after o4."""
    found = reference("SEQ(SEQ(C c, O o), !SEQ(C c2, O o2))", events("C2 C3 O4 O5"))
    assert (0, 2) in found and found == [(0, 2), (1, 2), (0, 3), (1, 3)]


def test_t15_figure_5_5_errata(reference):
    """docs/references.md E7: on r,w,c1,s2,d3,c4,o, Q1 rejects because (s2,d3,c4) matches (the literal
    Fig 5.5 would accept through c1)."""
    assert reference(Q1, neel_hospital("fig55_errata")) == []


@pytest.mark.parametrize(
    "name, expected", [("q1_accept", [(0, 1, 2)]), ("q1_reject", []), ("q1_accept_no_disinfection", [(0, 1, 4)])]
)
def test_t16_q1(reference, name, expected):
    """[LIU] Fig 5.1, Q1 accepts r1,w2,o3, rejects r1,w2,s3,d4,c5,o6, accepts r1,w2,s3,c4,o5."""
    assert reference(Q1, neel_hospital(name)) == expected


def test_t19_predicate_scoping():
    """[LIU] §5.1.2 / §7.2.4: q1 returns {a1,c0} (no y with 1 <= y.f <= 0), not {a1,c3} (b2 blocks);
    q2, with the implied conjunct x.f <= z.f outside the negation, does not return {a1,c0}."""
    q1 = "SEQ(A x, !(B y), C z, x.f <= y.f and y.f <= z.f)"
    q2 = "SEQ(A x, !(B y), C z, x.f <= y.f and y.f <= z.f and x.f <= z.f)"
    stream = neel_predicate_scoping()
    assert cepkit.match(q1, stream, engine="reference").positions() == [(0, 3)]
    assert cepkit.match(q2, stream, engine="reference").positions() == []
    in_where = "SEQ(A x, !(B y), C z) WHERE x.f <= y.f and y.f <= z.f"
    assert cepkit.match(in_where, stream, engine="reference").positions() == [(0, 3)]


def test_t21_r_q1_correlated_negated_and(reference):
    """[CSV] §1.1 ([CSV] Fig 2): ⟨r1,w2,o11⟩ is filtered by ⟨s3,d10⟩ and ⟨r1,w2,o20⟩ by ⟨s3,d10⟩ (and
    ⟨s13,d10⟩ is no match: d10 precedes s13 — AND allows it); the output is empty."""
    stream = neel_hospital("rq1")
    assert reference(R_Q1, stream) == []
    stream.loc[stream["e"] == "Disinfect10", "roomID"] = 2  # sharpened and disinfected in different rooms
    assert reference(R_Q1, stream) == [(0, 1, 4), (0, 1, 6)]


def test_t23_negated_and_between_neighbours(reference, events):
    """[CSV] Ex 2: SEQ(R, !AND(S, D), W, O) emits ⟨r1,w12,o18⟩ iff nothing matches AND(S,D)
    inside (1, 12)."""
    query = "SEQ(R r, !AND(S s, D d), W w, O o)"
    assert reference(query, events("R1 S3 D5 W12 O18")) == []
    assert reference(query, events("R1 S3 W12 D14 O18")) == [(0, 2, 4)]


# ----------------------------------------------------------------------------- scopes, docs/language.md §10.4
def test_leading_negation_looks_back_from_the_last_event(reference, events):
    """docs/language.md §10.4: a leading !p finds no match at or after (last ts − w) and before the first event."""
    query = "SEQ(!C c, A a, B b) WITHIN 5 s"
    assert reference(query, events("C0 A3 B6")) == [(1, 2)]  # scope [1, 3): c0 is outside
    assert reference(query, events("C1 A3 B6")) == []  # at (last − w) exactly: inside
    assert reference("SEQ(!C c, A a, B b)", events("C0 A3 B6")) == []  # no WITHIN: from the stream's start


def test_trailing_negation_looks_forward_from_the_first_event(reference, events):
    """docs/language.md §10.4: a trailing !p finds none after the last event and at or before (first ts + w)."""
    query = "SEQ(A a, B b, !C c) WITHIN 5 s"
    assert reference(query, events("A0 B2 C5")) == []
    assert reference(query, events("A0 B2 C6")) == [(0, 1)]


def test_event_windows_bound_the_negation_scope(reference, events):
    """docs/language.md §10.4: for n EVENTS, from (last − n + 1) up to (first + n − 1)."""
    assert reference("SEQ(A a, B b, !C c) WITHIN 3 EVENTS", events("A0 B1 C2")) == []
    assert reference("SEQ(A a, B b, !C c) WITHIN 3 EVENTS", events("A0 B1 X2 C3")) == [(0, 1)]
    assert reference("SEQ(!C c, A a, B b) WITHIN 3 EVENTS", events("C0 X1 A2 B3")) == [(2, 3)]
    assert reference("SEQ(!C c, A a, B b) WITHIN 3 EVENTS", events("X0 C1 A2 B3")) == []


def test_nested_seq_takes_bounds_from_the_enclosing_neighbours(reference, events):
    """docs/language.md §10.4: a negation with no positive neighbour on one side inside a nested SEQ takes that bound from the
    enclosing SEQ's neighbours of the nested item."""
    query = "SEQ(A a, SEQ(!X x, B b), C c)"
    assert reference(query, events("A0 X1 B2 C3")) == []
    assert reference(query, events("X0 A1 B2 C3")) == [(1, 2, 3)]
    assert reference("SEQ(A a, SEQ(B b, !X x), C c)", events("A0 B1 C2 X3")) == [(0, 1, 2)]


def test_and_negation_is_clipped_by_the_enclosing_neighbours(reference, events):
    """docs/language.md §10.4: inside AND, !p is checked from (last − w) to (first + w), clipped by the enclosing SEQ's
    neighbours when the AND is nested."""
    assert reference("AND(A a, B b, !C c) WITHIN 4 s", events("C0 A3 B5")) == [(1, 2)]
    assert reference("AND(A a, B b, !C c) WITHIN 4 s", events("C2 A3 B5")) == []
    assert reference("AND(A a, B b, !C c) WITHIN 4 s", events("A3 B5 C7")) == []
    query = "SEQ(X x, AND(A a, B b, !C c), Y y)"
    assert reference(query, events("X0 C1 A2 B3 Y4")) == []
    assert reference(query, events("C0 X1 A2 B3 Y4 C5")) == [(1, 2, 3, 4)]


def test_the_and_s_own_events_never_block_themselves(reference, events):
    """docs/language.md §10.11: in AND, the AND's own positive events never block its negations."""
    assert reference("AND(A a, !A b)", events("A0")) == [(0,)]
    assert reference("AND(A a, !A b)", events("A0 A1")) == []


def test_negated_composite_must_lie_inside_the_scope(reference, events):
    """docs/language.md §10.11: a negated composite has only to lie inside its scope, wholly."""
    query = "SEQ(A a, !SEQ(B b, C c), D d)"
    assert reference(query, events("B0 A1 C2 D3")) == [(1, 3)]
    assert reference(query, events("A0 B1 C2 D3")) == []


def test_negated_or(reference, events):
    """docs/language.md §10.11: !OR(...) is allowed: none of the branches may match."""
    query = "SEQ(A a, !OR(B b, C c), D d)"
    assert reference(query, events("A0 C1 D2")) == []
    assert reference(query, events("A0 E1 D2")) == [(0, 2)]


def test_exists_requires_a_witness_and_adds_no_event(reference, events):
    """docs/language.md §2: EXISTS p is !p with "some match"; existential items add nothing to C and bound nothing."""
    query = "SEQ(A a, EXISTS B b, C c)"
    assert reference(query, events("A0 B1 C2")) == [(0, 2)]
    assert reference(query, events("A0 C1 B2")) == []
    # EXISTS bounds nothing: the negation's scope runs from a to c, across the witness b.
    assert reference("SEQ(A a, EXISTS B b, !X x, C c)", events("A0 X1 B2 C3")) == []


def test_negation_inside_an_iteration(reference, events):
    """docs/language.md §10.11: a negation inside an iteration with no neighbour on one side takes that bound from the iterated
    item's neighbours in the enclosing SEQ; the match's own events never block."""
    query = "SEQ(A a, (SEQ(!X x, B b))+, C c)"
    assert reference(query, events("A0 B1 X2 B3 C4")) == [(0, 1, 4)]
    own = "SEQ(A a, (SEQ(!B x, B b))+, C c)"  # b1 blocks b2's iteration unless b1 is in the match
    assert reference(own, events("A0 B1 B2 C3")) == [(0, 1, 2, 3), (0, 1, 3)]


def test_conditions_on_negated_variables_in_where(reference, events):
    """docs/language.md §10.7: conditions mentioning negated variables, in WHERE or as items, belong to that negation."""
    query = "SEQ(A a, !B b, C c) WHERE b.v = a.v and a.v > 0"
    stream = events("A0 B1 C2", v=[1, 2, 0])
    assert reference(query, stream) == [(0, 2)]  # b1 has another v: it does not block
    assert reference(query, events("A0 B1 C2", v=[1, 1, 0])) == []


def test_seq_without_positive_item_is_rejected(events):
    """NEEL: SEQ and AND need a generating item ([LIU] §5.1.1)."""
    with pytest.raises(cepkit.QueryError, match="at least one positive item"):
        cepkit.match("SEQ(A a, !SEQ(!B b))", events("A0"), engine="reference")
