"""``!``/``EXISTS`` items whose scope holds the candidate's own events (an AND's, docs/language.md §10.4):
answered from the sub-query's summary when none of those events can be in a witness, else from its columns
over the scope without them (``summaries.Region``), never from the view; against the reference evaluator."""

from hypothesis import given, settings, strategies as st

import cepkit
from strategies import assert_agrees, assert_matcher_agrees, streams

TYPES = ("A", "B", "C")


@st.composite
def and_scope_queries(draw):
    """An AND of atoms with a ``!``/``EXISTS`` over an atom, a SEQ of atoms (a ``!``/``EXISTS`` between
    them sometimes) or an OR of atoms, alone or between two atoms of a SEQ; few types, so the AND's own
    events often have a type the sub-query names; sometimes ANY, a unary condition, a window."""
    names = iter(f"x{k}" for k in range(20))

    def atom(types=TYPES + ("ANY",)):
        var = next(names)
        text = f"{draw(st.sampled_from(types))} {var}"
        return f"({text} FILTER {var}.v > {draw(st.integers(0, 4))})" if draw(st.integers(0, 3)) == 0 else text

    def sub():
        kind = draw(st.sampled_from(["atom", "seq", "or"]))
        if kind == "atom":
            return atom()
        if kind == "or":
            return f"OR({atom(TYPES)}, {atom(TYPES)})"
        items = [atom(TYPES), atom(TYPES)]
        if draw(st.booleans()):
            items.insert(1, draw(st.sampled_from(["!", "EXISTS "])) + atom(TYPES))
        return f"SEQ({', '.join(items)})"

    parts = [atom(TYPES) for _ in range(draw(st.integers(1, 3)))]
    boolean = draw(st.sampled_from(["!", "EXISTS "])) + sub()
    parts.insert(draw(st.integers(0, len(parts))), boolean)
    pattern = f"AND({', '.join(parts)})"
    if draw(st.booleans()):
        pattern = f"SEQ({atom(TYPES)}, {pattern}, {atom(TYPES)})"
    window = draw(st.sampled_from(["", " WITHIN 3 s", " WITHIN 5 s", " WITHIN 4 EVENTS"]))
    return pattern + window


@settings(max_examples=80, deadline=None)
@given(and_scope_queries(), streams(max_size=9), st.sampled_from(["a", "b", None]))
def test_and_scopes_give_the_reference_matches(query, events, caching):
    assert_agrees(query, events, "nested", caching=caching, plan="nested")


@settings(max_examples=30, deadline=None)
@given(and_scope_queries(), streams(max_size=9))
def test_the_matcher_on_and_scopes_reports_the_reference_matches(query, events):
    assert_matcher_agrees(query, events, "nested")


def test_an_and_scope_is_answered_without_the_view():
    """Own events of another type: the summary; of the sub-query's type: its columns without them."""
    events = [{"type": t, "ts": k} for k, t in enumerate("ABCABBCAB")]
    for query in ("AND(A a, B b, !C c) WITHIN 3 s", "AND(A a, B b, !B c) WITHIN 3 s"):
        found = assert_agrees(query, events, "nested", caching="a", plan="nested")
        assert found.info["cache"]["lookups"] == 0 and found.info["cache"]["summary_lookups"] > 0, query
    # B b is no witness to itself: only (0, 1) has no other B within 3 s
    found = cepkit.match("AND(A a, B b, !B c) WITHIN 3 s", events, engine="nested", plan="nested")
    assert found.positions() == [(0, 1)]
