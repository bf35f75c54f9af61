"""How the rcep engine reads a query (``cepkit.engines.rcep.pattern``) and what it refuses."""

import pytest

import cepkit
from cepkit.engines.rcep.pattern import KleenePattern


def roles(text):
    pattern = KleenePattern.from_query(cepkit.parse(text))
    return {
        "local": {s.var: len(s.local) for s in pattern.slots if s.local},
        "joins": [(j.left_slot, j.op, j.right_slot) for j in pattern.joins],
        "chains": [(c.slot, c.op) for c in pattern.chains],
        "residual": len(pattern.residual),
        "per_event": {s.var: len(s.per_event) for s in pattern.slots if s.per_event},
    }


def test_each_conjunct_gets_one_role():
    """[RCEP] §3.4: constant predicates Θᶜ are local tests, ``p_i.A φ p_j.A`` joins (oriented earlier
    variable first), NEXT chains; FIRST, aggregates and ``or`` over a Kleene variable are residual."""
    found = roles(
        "SEQ(Stock a, Stock+ b, Stock c) WHERE a.v > 3 and b.v < 10 and b.v > a.v * 2 "
        "and b[i].v > b[i-1].v and c.v >= first(b).w and count(b) > 2 and (b.v > 5 or b.v < 2)"
    )
    assert found == {
        "local": {"a": 1, "b": 1},
        "joins": [(0, "<", 1)],
        "chains": [(1, "<")],
        "residual": 3,
        "per_event": {},
    }


def test_first_and_last_on_a_monotone_chain_become_joins():
    """Q1's ``c.price < FIRST(b.price)`` with rising b: first(b) is b's minimum, so c is below every b ([RCEP] Example 2);
    the other direction (c above the minimum) is only an existential and stays residual."""
    assert roles("SEQ(S a, S+ b, S c) WHERE prev(b.p) < b.p and c.p < first(b).p")["joins"] == [(1, ">", 2)]
    assert roles("SEQ(S a, S+ b, S c) WHERE prev(b.p) < b.p and c.p > first(b).p")["residual"] == 1
    assert roles("SEQ(S a, S+ b) WHERE prev(b.p) > b.p and a.p > first(b).p")["joins"] == [(0, ">", 1)]
    assert roles("SEQ(S a, S+ b) WHERE prev(b.p) != b.p and a.p > first(b).p")["residual"] == 1


def test_conditions_inside_an_iteration_hold_per_event():
    found = roles(
        "SEQ(A a, (B b FILTER b.v > 1 or b.id = 0)+, (C c FILTER c.v > a.v)+, (D d FILTER d.v > a.v or d.id = 0)+)"
    )
    assert found["local"] == {"b": 1} and found["joins"] == [(0, "<", 2)] and found["per_event"] == {"d": 1}


@pytest.mark.parametrize(
    "query, what",
    [
        ("A a OR B b", "or"),
        ("SEQ(A a, !B b, C c)", "negation"),
        ("(A a ; B b)+ ; C c", "iteration of a composite"),
        ("SEQ(AND(A a, B b), C c)", "and"),
        ("NEXT(A a ; B+ b) ; C c", "nested_strategy"),
        ("SELECT ROBUST_STNM * PATTERN SEQ(A a, B+ b) WITHIN 5 CONSUME BY ANY", "CONSUME BY under ROBUST_STNM"),
        ("SELECT STNM * PATTERN SEQ(A a, B+ b) WITHIN 5 CONSUME BY ANY", "CONSUME BY under STNM"),
    ],
)
def test_refusals_name_the_engines_that_can(query, what):
    with pytest.raises(cepkit.QueryError, match=what) as refused:
        cepkit.match(query, [{"type": "A"}], engine="rcep")
    assert "reference" in refused.value.engines and "^" in str(refused.value)


def test_options_are_checked():
    with pytest.raises(ValueError, match="join= must be one of"):
        cepkit.match("A+ a", [{"type": "A"}], engine="rcep", join="sorted")
    with pytest.raises(TypeError, match="does not take option"):
        cepkit.match("A+ a", [{"type": "A"}], engine="rcep", lookahead=True)


def test_values_that_cannot_be_compared_name_the_event_and_field():
    events = [{"type": "A", "v": "high"}, {"type": "B", "v": 3}]
    with pytest.raises(cepkit.EventError, match="position 0, field 'v'"):
        cepkit.match("SEQ(A a, B+ b) WHERE a.v < b.v", events, engine="rcep")
    with pytest.raises(cepkit.EventError, match="field 'v'"):
        cepkit.match("SEQ(A a, B+ b) WHERE a.v * 2 < b.v", events, engine="rcep")
