"""NEEL rewriting to normal form ([LIU] §5.2; ``cepkit.rewrite``): every rule on its example in the thesis, the
golden trace of Ex 25, the exact NPDR1 form of Ex 29, the nesting measure (Ex 26), the normal forms
(Ex 23/24), the refusals ([LIU] §5.2.2, Ex 21, Ex 22; [CSV] Fig 3), and, on random nested queries, the normal form has the query's
matches under the reference evaluator whenever every step is exact."""

import pytest
from hypothesis import given, settings

import cepkit
from cepkit.lang.rewrite import RULES, is_cnf, is_dnf, nesting, rewrite
from strategies import nested_queries, streams

Q1 = "SEQ(Recycle r, Washing w, !SEQ(Sharpening s, Disinfection d, Checking c), Operating o)"  # [LIU] §5.1, Fig 5.1
Q4 = "SEQ(Recycle r, !SEQ(Sharpening s, !Disinfection d, Checking c), Operating o)"  # Ex 21
EX25 = "SEQ(E1 e1, !SEQ(E2 e2, E3 e3), E4 e4, SEQ(!AND(E5 e5, E6 e6), E7 e7))"  # Ex 25 (Q6)


def rules(query, **kwargs):
    return [step.rule for step in rewrite(query, **kwargs).steps]


def normal_form(query, **kwargs):
    r = rewrite(query, **kwargs)
    assert r.normal, r.reason
    return r.normal_form


def same_matches(original, rewritten, events):
    expected = cepkit.match(original, events, engine="reference")
    got = cepkit.match(rewritten, events, engine="reference")
    assert [m.key for m in got] == [m.key for m in expected], (original, rewritten, events)


def events(spec):
    """ "A0 X1 B2" -> event dicts (type, ts from the digits)."""
    return [{"type": t.rstrip("0123456789"), "ts": int(t[len(t.rstrip("0123456789")) :])} for t in spec.split()]


# ----------------------------------------------------------------------------- flattening rules (Table 5.2)
@pytest.mark.parametrize(
    "query, rule, expected",
    [
        # FR1: SEQ(SEQ(E1..Ei, P), Ej..En) = SEQ(E1..En, P)
        ("SEQ(SEQ(A a, B b, a.v = b.v), C c)", "FR1", "A AS a ; B AS b ; C AS c FILTER a.v = b.v"),
        # FR2, [LIU] §5.2.3's own example: SEQ(A, SEQ(B, C, !D), E, F)
        ("SEQ(A a, SEQ(B b, C c, !D d), E e, F f)", "FR2", "SEQ(A AS a, B AS b, C AS c, !D AS d, E AS e, F AS f)"),
        # FR3 / FR4: AND inside AND (FR4 keeps the inner negation)
        ("AND(AND(A a, B b), C c)", "FR3", "AND(A AS a, B AS b, C AS c)"),
        ("AND(AND(A a, !B b, C c), D d)", "FR4", "AND(A AS a, !B AS b, C AS c, D AS d)"),
        # FR5: OR(OR(E1..Ei), Ej..En) = OR(E1..En)
        ("OR(OR(A a, B b), C c)", "FR5", "A AS a OR B AS b OR C AS c"),
        # FR6: an existential SEQ between positive neighbours becomes projected positive components (the FR6 proof's reading)
        ("SEQ(A a, EXISTS SEQ(B b, C c), D d)", "FR6", "A AS a ; B AS b ; C AS c ; D AS d RETURN a, d"),
        # FR7: AND(∃AND(E1..), Ej..) = AND(E1.., Ej..) with the witness projected away
        ("AND(EXISTS AND(B b, C c), D d)", "FR7", "AND(B AS b, C AS c, D AS d) RETURN d"),
    ],
)
def test_flattening_rules(query, rule, expected):
    """[LIU] §5.2.3, FR1-FR7."""
    assert rules(query)[0] == rule
    assert normal_form(query) == expected


# ----------------------------------------------------------------------------- distribution (Table 5.3)
@pytest.mark.parametrize(
    "query, rule, expected",
    [
        ("SEQ(A a, OR(B b, C c), D d)", "DR1", "A AS a ; B AS b ; D AS d OR A AS a ; C AS c ; D AS d"),
        ("AND(A a, OR(B b, C c))", "DR2", "AND(A AS a, B AS b) OR AND(A AS a, C AS c)"),
        (
            "SEQ(A a, EXISTS OR(B b, C c), D d)",
            "DR5",
            "SEQ(A AS a, EXISTS B AS b, D AS d) OR SEQ(A AS a, EXISTS C AS c, D AS d)",
        ),
        ("AND(A a, EXISTS OR(B b, C c))", "DR6", "AND(A AS a, EXISTS B AS b) OR AND(A AS a, EXISTS C AS c)"),
    ],
)
def test_distributive_rules(query, rule, expected):
    """[LIU] §5.2.4, DR1/DR2/DR5/DR6 (DR3 is in Ex 25, DR4 below)."""
    assert rules(query) == [rule]
    assert normal_form(query) == expected


def test_dr4_distributes_a_disjunction_of_negations_in_an_and():
    """[LIU] §5.2.4 DR4 (ours: on any disjunction of boolean items), after NPDR3 made one."""
    assert rules("AND(A a, !AND(B b, C c))") == ["NPDR3", "DR4"]
    assert normal_form("AND(A a, !AND(B b, C c))") == "AND(A AS a, !B AS b) OR AND(A AS a, !C AS c)"


# ----------------------------------------------------------------------------- negation push-down (Table 5.4)
def test_ex25_golden_trace():
    """[LIU] §5.2.6-5.2.7 Ex 25: FR (the text's "FR1"; FR2 in Table 5.2's terms, the inner SEQ starts with
    a negation), NPDR3, NPDR2, DR, FR6 give the 4-disjunct DNF. Its ∃E2 is a projected positive component
    (the FR6 proof's reading), hence E2 AS e2 and the RETURN."""
    r = rewrite(EX25)
    assert [s.rule for s in r.steps] == ["FR2", "NPDR3", "NPDR2", "DR3", "FR6", "DR3", "FR5", "DR3", "FR5"]
    assert r.steps[0].new == "SEQ(E1 AS e1, !(E2 AS e2 ; E3 AS e3), E4 AS e4, !AND(E5 AS e5, E6 AS e6), E7 AS e7)"
    assert r.steps[1].new == "(!E5 AS e5 ∨ !E6 AS e6)"
    assert r.steps[2].new == "(!E2 AS e2 ∨ EXISTS SEQ(!E2 AS e2_1, E2 AS e2, !E3 AS e3))"
    assert r.normal_form == (
        "SEQ(E1 AS e1, !E2 AS e2, E4 AS e4, !E5 AS e5, E7 AS e7) OR "
        "SEQ(E1 AS e1, !E2 AS e2, E4 AS e4, !E6 AS e6, E7 AS e7) OR "
        "SEQ(E1 AS e1, !E2 AS e2_1, E2 AS e2, !E3 AS e3, E4 AS e4, !E5 AS e5, E7 AS e7) OR "
        "SEQ(E1 AS e1, !E2 AS e2_1, E2 AS e2, !E3 AS e3, E4 AS e4, !E6 AS e6, E7 AS e7) RETURN e1, e4, e7"
    )
    assert [s.nesting for s in r.steps][-1] == 0 and r.exact and is_dnf(r.result.pattern)
    for types in (["E1", "E2", "E3", "E4", "E5", "E7"], ["E1", "E2", "E4", "E6", "E7"], ["E1", "E3", "E2", "E4", "E7"]):
        same_matches(EX25, r.result, [{"type": t, "ts": ts} for ts, t in enumerate(types)])


def test_ex29_exact_npdr1_form_of_q1():
    """[LIU] §5.3.2 Ex 29, docs/references.md E7: NPDR1 (right to left) on Q1 gives the exact form with the last-instance
    negations, SEQ(R,W,!C,O) ∨ Proj SEQ(R,W,!D,C,!C,O) ∨ Proj SEQ(R,W,!S,D,!D,C,!C,O), not Fig 5.5."""
    assert normal_form(Q1, direction="right") == (
        "SEQ(Recycle AS r, Washing AS w, !Checking AS c, Operating AS o) OR "
        "SEQ(Recycle AS r, Washing AS w, !Disinfection AS d, Checking AS c, !Checking AS c_1, Operating AS o) OR "
        "SEQ(Recycle AS r, Washing AS w, !Sharpening AS s, Disinfection AS d, !Disinfection AS d_1, Checking AS c, "
        "!Checking AS c_1, Operating AS o) RETURN r, w, o"
    )
    assert rules(Q1, direction="right")[:2] == ["NPDR1", "NPDR1"]
    assert rules(Q1)[:2] == ["NPDR2", "NPDR2"]


@pytest.mark.parametrize(
    "stream",
    [
        "Recycle1 Washing2 Operating3",
        "Recycle1 Washing2 Sharpening3 Disinfection4 Checking5 Operating6",
        "Recycle1 Washing2 Sharpening3 Checking4 Operating5",
        "Recycle1 Washing2 Checking3 Sharpening4 Disinfection5 Checking6 Operating7",
    ],
)
@pytest.mark.parametrize("direction", ["left", "right"])
def test_both_unrollings_of_q1_keep_its_matches(stream, direction):
    """[LIU] §5.2.8: no confluence, NPDR1 and NPDR2 give different, equivalent DNFs (the streams of docs/references.md E7 and of Q1 of [LIU] Fig 5.1)."""
    same_matches(Q1, rewrite(Q1, direction=direction).result, events(stream))


def test_npdr3_and_npdr5_split_a_negated_and_or():
    """[LIU] §5.2.5 NPDR3 (!AND = ∨ of !) and NPDR5 (!OR = ∧ of !), then DR3 / the splice rule (ours)."""
    assert rules("SEQ(A a, !AND(B b, C c), D d)") == ["NPDR3", "DR3"]
    assert rules("SEQ(A a, !OR(B b, C c), D d)") == ["NPDR5", "splice"]
    assert normal_form("SEQ(A a, !OR(B b, C c), D d)") == "SEQ(A AS a, !B AS b, !C AS c, D AS d)"


def test_npdr4_flips_the_polarity_and_is_exact_without_a_window():
    """[LIU] §5.2.5 NPDR4: !AND(E1, !E2) = !E1 ∨ ∃E2. Under WITHIN the inner negation is bounded by the
    window around the witness, not by the scope: the same in a SEQ, not inside an AND (marked inexact)."""
    query = "SEQ(A a, !AND(B b, !C c), D d)"
    r = rewrite(query)
    assert [s.rule for s in r.steps] == ["NPDR4", "DR3"] and r.exact
    assert r.normal_form == "SEQ(A AS a, !B AS b, D AS d) OR SEQ(A AS a, EXISTS C AS c, D AS d)"
    for stream in ["A0 B1 D2", "A0 B1 C2 D3", "A0 C1 D2", "C0 A1 B2 D3"]:
        same_matches(query, r.result, events(stream))
    windowed = query + " WITHIN 2"  # in a SEQ the scope lies inside every witness's window: still exact
    assert rewrite(windowed).exact
    for stream in ["A0 B1 D2", "A0 B1 C2 D3", "A0 C1 B2 D3", "C0 A1 B2 D3", "A0 B1 C3 D2"]:
        same_matches(windowed, rewrite(windowed).result, sorted(events(stream), key=lambda e: e["ts"]))
    assert not rewrite("AND(A a, !AND(B b, !C c)) WITHIN 5").exact  # the AND's scope spans two windows


def test_npdr6_and_npdr7_make_an_existential_item_positive():
    """[LIU] §5.2.5 NPDR6 (!SEQ(.., ∃Ei, ..) = !SEQ(.., Ei, ..)) and NPDR7 (the same in AND)."""
    assert rules("SEQ(A a, !SEQ(B b, EXISTS C c, D d), E e)")[0] == "NPDR6"
    assert rules("SEQ(A a, !AND(B b, EXISTS C c), D d)")[:2] == ["NPDR7", "NPDR3"]
    for query in ["SEQ(A a, !SEQ(B b, EXISTS C c, D d), E e)", "SEQ(A a, !AND(B b, EXISTS C c), D d)"]:
        r = rewrite(query)
        for stream in ["A0 B1 C2 D3 E4", "A0 B1 D2 C3 E4", "A0 C1 B2 D3 E4"]:
            same_matches(query, r.result, events(stream))


# ----------------------------------------------------------------------------- what is not flattenable
@pytest.mark.parametrize(
    "query, reason",
    [
        ("SEQ(A a, !SEQ(B b, !C c, D d), E e)", "for all"),  # [LIU] §5.2.2: needs "for all"
        (Q4, "for all"),  # Ex 21: naive NPDR1 is wrong
        # Ex 22: FR1 dissolves the composite E, NPDR2 unrolls !E, and the trailing witness (its "last
        # instance") cannot become positive without moving the window: no (wrong) normal form
        ("SEQ(SEQ(C c, O o), !SEQ(C c2, O o2))", "positive neighbours"),
        (
            "PATTERN SEQ(Recycle r, Wash w, !AND(Sharpen s, Disinfect d, s.roomID = d.roomID, s.id = r.id, "
            "d.id = r.id), Operate o, r.id = o.id, r.id = w.id) WITHIN 10 minutes",
            "relates d, s",
        ),  # [CSV] Fig 3
        ("SEQ(A a, AND(B b, C c), D d)", "outside Lcons"),  # SEQ(AND), Table 5.5
        ("SEQ(A a, !AND(B b, B c), D d)", "could match the same event"),
        ("SEQ(A a, (B b)+, C c)", "iterations"),
        ("SELECT MAX * PATTERN SEQ(A a, EXISTS SEQ(B b, C c), D d)", "selection strategy"),  # FR6 would change C
    ],
)
def test_refusals_name_the_reason(query, reason):
    """[LIU] §5.1.1 (Lcons), §3.3 (Ex 21, Ex 22), §6.4 ([CSV] Fig 3: predicates crossing the negation)."""
    r = rewrite(query)
    assert not r.normal and r.result is None
    assert reason in r.reason


def test_r_fig3_loses_no_predicate():
    """[CSV] §1.1: rewriting [CSV]'s Q1 would drop s.roomID = d.roomID; the rewriter refuses instead, and
    without the crossing predicate the rewriting is exact on the [CSV] Fig 2 stream ([CSV] Fig 2)."""
    from cepkit.datasets import neel_hospital

    simple = (
        "SEQ(Recycle r, Wash w, !AND(Sharpen s, Disinfect d, s.id = r.id, d.id = r.id), Operate o, "
        "r.id = o.id) WITHIN 10 minutes"
    )
    r = rewrite(simple)
    assert r.normal and r.exact and [s.rule for s in r.steps] == ["NPDR3", "DR3"]
    same_matches(simple, r.result, neel_hospital("rq1"))


# ----------------------------------------------------------------------------- measure and normal forms
def test_ex26_nesting_measure():
    """[LIU] §5.2.8 Ex 26: α(SEQ(SEQ(E1,!AND(E3,E4)),AND(E5,E6))) = 4, the inner part 3."""
    assert nesting(cepkit.parse("SEQ(SEQ(E1 a, !AND(E3 b, E4 c)), AND(E5 d, E6 e))").pattern) == 4
    assert nesting(cepkit.parse("SEQ(E1 a, !AND(E3 b, E4 c))").pattern) == 3
    assert nesting(cepkit.parse("SEQ(A a, !B b, C c)").pattern) == 0


def test_ex23_ex24_normal_forms():
    """[LIU] §5.2.6-5.2.7 Ex 23 (DNF) and Ex 24 (CNF); Th1: normal form iff α = 0."""
    dnf = cepkit.parse("SEQ(R r, W w) OR SEQ(R r, EXISTS W w, S s) OR SEQ(R r, !W w, S s)").pattern
    cnf = cepkit.parse("AND(SEQ(R r, W w), SEQ(R2 r2, EXISTS W w2, S s), SEQ(R3 r3, !W w3, S2 s2))").pattern
    assert is_dnf(dnf) and not is_cnf(dnf) and nesting(dnf) == 0
    assert is_cnf(cnf) and not is_dnf(cnf) and nesting(cnf) == 0
    assert not is_dnf(cepkit.parse("SEQ(A a, SEQ(B b, C c))").pattern)


def test_each_step_locates_the_rewritten_part():
    """The trace highlights the rewritten sub-pattern in the query before and after each step."""
    for query in (EX25, Q1, "SEQ(A a, !OR(B b, C c), D d) WITHIN 5 s"):
        r = rewrite(query)
        for before, after in zip(r.steps, r.steps[1:]):
            assert before.after == after.before
        for step in r.steps:
            start, end = step.span
            assert step.before[start:end].strip("()") in (step.old, step.old.strip("()"))
            start, end = step.span_after
            assert step.after[start:end].strip("()") in (step.new, step.new.strip("()"))
    assert set(RULES) >= {"FR1", "FR7", "DR1", "DR6", "NPDR1", "NPDR7", "splice"}


# ----------------------------------------------------------------------------- equivalence on random queries
@settings(max_examples=120, deadline=None)
@given(nested_queries(max_depth=3), streams(max_size=5))
def test_exact_rewritings_keep_every_match(query, stream):
    """[LIU] §5.2 / Th4: the normal form of a flattenable query has the query's matches (positions and
    bindings) under the reference evaluator whenever every step is exact."""
    r = rewrite(query)
    if r.normal and r.exact:
        assert nesting(r.result.pattern) == 0
        same_matches(query, r.result, stream)
    elif not r.normal:
        assert r.reason
