"""The SES worked examples ([SES] Figs 1.3-6.1) and the STNM / ROBUST_STNM definitions (Def 6.1, 6.2,
docs/references.md E11, docs/decisions.md)."""

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import set_queries, streams

import cepkit
from cepkit.lang import ast as A
from cepkit.lang.printer import pretty
from cepkit.datasets import ses_chemo, ses_stocks

CHEMO_P1 = (
    "PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE c.PID = p.PID and p.PID = d.PID and d.PID = b.PID "
    "and prev(p.V) < p.V WITHIN 15 days"
)
CHEMO_P2 = "PATTERN SEQ({C c, P+ p}, {B b}) WHERE c.PID = p.PID and p.PID = b.PID and prev(p.V) < p.V WITHIN 15 days"
CHEMO_CH1 = "PATTERN SEQ({C c, P+ p}, {B b}) WHERE c.PID = p.PID and p.PID = b.PID WITHIN 15 days"
STOCKS_CH1 = (
    "PATTERN SEQ({GOOG g1, IBM i1}, {GOOG g2, IBM i2}, {GOOG g3, IBM i3}) WHERE g1.P < g2.P and "
    "g2.P < g3.P and i1.P < i2.P and i2.P < i3.P WITHIN 100 ms"
)
STOCKS_P3 = (
    "PATTERN SEQ({GOOG s1}, {GOOG s2}, {GOOG+ s3}, {GOOG s4}) WHERE s1.P < s2.P and s2.P < s3.P and "
    "prev(s3.P) < s3.P and s1.V < s4.V and s2.V < s4.V and s3.V < s4.V WITHIN 100 ms"
)


def named(query, stream, strategy=None):
    """Each match as {var: event name or tuple of names}, as the thesis writes them, in output order."""
    names = stream["e"]
    return [
        {var: tuple(names.iloc[list(v)]) if isinstance(v, tuple) else names.iloc[v] for var, v in m.bindings.items()}
        for m in cepkit.match(query, stream, engine="reference", strategy=strategy)
    ]


def chemo(c, p, b, d=None):
    match = {"c": c, "p": p, "b": b}
    return match if d is None else {**match, "d": d}


def same(found, expected):
    assert sorted(map(sorted_items, found)) == sorted(map(sorted_items, expected))


def sorted_items(match):
    return sorted(match.items())


# ----------------------------------------------------------------------------- chemo, chapters 3-6
def test_chemo_p1_all_matches():
    """[SES] Fig. 3.1, Ex 3.4: Γ has 11 matches; b/e15 is too late, ⟨e6,e11⟩ and ⟨e9,e11⟩ do not rise."""
    expected = [chemo("e1", p, "e12", "e5") for p in [("e3",), ("e10",), ("e3", "e10")]] + [
        chemo("e8", p, b, "e7") for p in [("e6",), ("e9",), ("e11",), ("e6", "e9")] for b in ("e13", "e14")
    ]
    same(named(CHEMO_P1, ses_chemo(3)), expected)


@pytest.mark.parametrize("strategy", ["STNM", "ROBUST_STNM"])
def test_chemo_p1_skip_till_next_match(strategy):
    """[SES] Fig. 3.1, Ex 3.5 (STNM, 3 matches; Fig 3.2 shows the last) and (derived here) RSTNM: the same 3; b/e14 is
    not STNM because e13 comes first."""
    expected = [
        chemo("e1", ("e3", "e10"), "e12", "e5"),
        chemo("e8", ("e9",), "e13", "e7"),
        chemo("e8", ("e6", "e9"), "e13", "e7"),
    ]
    same(named(CHEMO_P1, ses_chemo(3), strategy), expected)


def test_chemo_p2_whole_stream():
    """[SES] Fig. 3.1, P2 = (⟨{c,p+},{b}⟩, Θ, 15 d) (derived here): |Γ| = 11; STNM (and RSTNM) give 3 matches."""
    assert len(named(CHEMO_P2, ses_chemo(3))) == 11
    expected = [chemo("e1", ("e3", "e10"), "e12"), chemo("e8", ("e6", "e9"), "e13"), chemo("e8", ("e9",), "e13")]
    same(named(CHEMO_P2, ses_chemo(3), "STNM"), expected)
    same(named(CHEMO_P2, ses_chemo(3), "ROBUST_STNM"), expected)


# ----------------------------------------------------------------------------- chemo, chapter 1
def test_chemo_chapter1_skip_till_any_match():
    """[SES] Fig. 1.4(b), Fig 1.6 (derived here): STAM gives 7 matches."""
    expected = [chemo("e1", ("e3",), "e8")] + [
        chemo("e6", p, b) for p in [("e5",), ("e7",), ("e5", "e7")] for b in ("e9", "e10")
    ]
    same(named(CHEMO_CH1, ses_chemo(1)), expected)


@pytest.mark.parametrize("strategy", ["STNM", "ROBUST_STNM"])
def test_chemo_chapter1_skip_till_next_match(strategy):
    """[SES] Fig. 1.4(b), Fig 1.5(b) (derived here): 3 matches; e8 is skipped (other patient), e9 preferred to e10."""
    expected = [chemo("e1", ("e3",), "e8"), chemo("e6", ("e5", "e7"), "e9"), chemo("e6", ("e7",), "e9")]
    same(named(CHEMO_CH1, ses_chemo(1), strategy), expected)


def test_chemo_chapter1_contiguity():
    """[SES] Fig. 1.4(b): contiguity gives nothing (e8 lies between e7 and e9); partitioned contiguity (Fig 1.4(c))
    gives ⟨e5,e6,e7,e9⟩ and ⟨e6,e7,e9⟩."""
    assert named(CHEMO_CH1, ses_chemo(1), "STRICT") == []
    found = cepkit.match(CHEMO_CH1 + " PARTITION BY PID", ses_chemo(1), engine="reference", strategy="PARTITION_STRICT")
    names = ses_chemo(1)["e"]
    assert sorted(tuple(names.iloc[list(p)]) for p in found.positions()) == [
        ("e5", "e6", "e7", "e9"),
        ("e6", "e7", "e9"),
    ]


def test_the_ladder_of_strategies_on_chemo():
    """[SES] Figs 1.4-1.6 (the chemotherapy ladder): contiguity 0, partitioned contiguity 2, STNM 3, STAM 7."""
    counts = [
        len(
            cepkit.match(
                CHEMO_CH1 + (" PARTITION BY PID" if s == "PARTITION_STRICT" else ""),
                ses_chemo(1),
                engine="reference",
                strategy=s,
            ).positions()
        )
        for s in ("STRICT", "PARTITION_STRICT", "STNM", "ALL")
    ]
    assert counts == [0, 2, 3, 7]


# ----------------------------------------------------------------------------- stocks
@pytest.mark.parametrize("strategy", ["ALL", "STNM", "ROBUST_STNM"])
def test_stocks_chapter1_unique_match(strategy):
    """[SES] Fig. 1.3: the unique match under every strategy, {g1/e1, i1/e2, g2/e4, i2/e3, g3/e6, i3/e5}."""
    assert named(STOCKS_CH1, ses_stocks(1), strategy) == [
        {"g1": "e1", "i1": "e2", "g2": "e4", "i2": "e3", "g3": "e6", "i3": "e5"}
    ]


def test_stocks_chapter1_sequential_pattern_finds_nothing():
    """[SES] Fig. 1.3: the sequential pattern ⟨g1,i1,g2,i2,g3,i3⟩ finds nothing."""
    sequential = STOCKS_CH1.replace(
        "SEQ({GOOG g1, IBM i1}, {GOOG g2, IBM i2}, {GOOG g3, IBM i3})",
        "SEQ(GOOG g1, IBM i1, GOOG g2, IBM i2, GOOG g3, IBM i3)",
    )
    assert named(sequential, ses_stocks(1)) == []


def stock(s1, s2, s3, s4):
    return {"s1": s1, "s2": s2, "s3": s3, "s4": s4}


STNM_P3 = [
    stock("e1", "e4", ("e5", "e6"), "e7"),
    stock("e3", "e4", ("e5", "e6"), "e7"),
    stock("e4", "e5", ("e6",), "e7"),
]


def test_stocks_p3_all_matches_with_the_fix():
    """[SES] Ex 6.5, docs/references.md E17: the thesis lists 9 matches, Def 3.2 gives 11 (adding {s1/e1, s2/e5, s3/⟨e6⟩, s4/e7}
    and {s1/e3, s2/e5, s3/⟨e6⟩, s4/e7})."""
    found = named(STOCKS_P3, ses_stocks(6))
    listed = (
        STNM_P3
        + [stock(s1, "e4", s3, "e7") for s1 in ("e1", "e3") for s3 in (("e5",), ("e6",))]
        + [stock("e71", "e74", ("e76",), s4) for s4 in ("e77", "e78")]
    )
    missing = [stock("e1", "e5", ("e6",), "e7"), stock("e3", "e5", ("e6",), "e7")]
    assert len(listed) == 9
    same(found, listed + missing)


def test_stocks_p3_stnm_ex_6_4():
    """[SES] Fig. 6.1(a), Ex 6.4: 3 STNM matches; the e71 run fails, e72 (645) being taken greedily as s2."""
    same(named(STOCKS_P3, ses_stocks(6), "STNM"), STNM_P3)


def test_stocks_p3_robust_stnm_ex_6_5():
    """[SES] Fig. 6.1(a), Ex 6.5: RSTNM adds {s1/e71, s2/e74, s3/⟨e76⟩, s4/e77}; the s4/e78 variant is not RSTNM
    because e77 completes a match first."""
    same(named(STOCKS_P3, ses_stocks(6), "ROBUST_STNM"), STNM_P3 + [stock("e71", "e74", ("e76",), "e77")])


@pytest.mark.parametrize("drop", [["e75"], []], ids=["without-e75", "with-e75"])
def test_backtracking_trace_result_ex_6_10(drop):
    """[SES] Fig. 6.1(a), Ex 6.10/6.11: on W = ⟨e71,e72,e73,e74,e76,e77,e78⟩ (e75 omitted) RSTNM accepts
    {s1/e71, s2/e74, s3/⟨e76⟩, s4/e77}; (derived here) with e75 included, the same."""
    stream = ses_stocks(6)
    stream = stream[
        stream["e"].isin(["e71", "e72", "e73", "e74", "e75", "e76", "e77", "e78"]) & ~stream["e"].isin(drop)
    ].reset_index(drop=True)
    assert named(STOCKS_P3, stream, "ROBUST_STNM") == [stock("e71", "e74", ("e76",), "e77")]
    assert named(STOCKS_P3, stream, "STNM") == []


# ----------------------------------------------------------------------------- definitions
def test_thm_6_1_containment(events):
    """[SES] §1.3, §6.2, Thm 6.1: Γ_stnm ⊆ Γ_rstnm ⊆ Γ, on both chemo streams and the stocks."""
    for query, stream in [(CHEMO_P1, ses_chemo(3)), (CHEMO_CH1, ses_chemo(1)), (STOCKS_P3, ses_stocks(6))]:
        keys = {
            s: {m.key for m in cepkit.match(query, stream, engine="reference", strategy=s)}
            for s in ("STNM", "ROBUST_STNM", "ALL")
        }
        assert keys["STNM"] <= keys["ROBUST_STNM"] <= keys["ALL"]


def test_kleene_variable_in_the_last_set_follows_alg_2(reference, events):
    """Decision (docs/decisions.md): the full match counts as its own prefix, so under STNM and
    ROBUST_STNM an event after the last one, within the window, that extends a Kleene variable of the last set
    into another match disqualifies the shorter match; ALL keeps every match."""
    query = "PATTERN SEQ(A a, B+ b) WITHIN 10"
    stream = events("A1 B2 X3 X4 B5")
    assert reference(query, stream) == [(0, 1), (0, 1, 4), (0, 4)]
    assert reference(query, stream, strategy="STNM") == [(0, 1, 4)]
    assert reference(query, stream, strategy="ROBUST_STNM") == [(0, 1, 4)]
    assert reference("PATTERN SEQ(A a, B+ b) WITHIN 3", stream, strategy="STNM") == [(0, 1)]  # b5 too late


def test_partition_invariance_errata_e11(reference, events):
    """docs/references.md E11, partition invariance: the transitive closure Θ_eq⁺ is added to Θ before
    compiling; Γ is unchanged, and STNM and ROBUST_STNM become partition-invariant. With sets {a,c},{b}
    and a.PID = b.PID, b.PID = c.PID on A1 C2 C3 B4 (PIDs 1 2 1 1), the prefix {a1} is judged with the implied
    a.PID = c.PID, so another patient's c2 does not extend it: STNM finds {a1, c3, b4} unpartitioned, the same
    as partitioned by PID or with a.PID = c.PID written out. ROBUST_STNM and ALL find it too."""
    stream = events("A1 C2 C3 B4", PID=[1, 2, 1, 1])
    query = "PATTERN SEQ({A a, C c}, {B b}) WHERE a.PID = b.PID and b.PID = c.PID WITHIN 10"
    written = query.replace("WITHIN", "and a.PID = c.PID WITHIN")
    for strategy in (None, "STNM", "ROBUST_STNM"):
        for text in (query, query + " PARTITION BY PID", written):
            assert reference(text, stream, strategy=strategy) == [(0, 2, 3)], (text, strategy)


def test_closure_reaches_kleene_variables(reference, events):
    """docs/references.md E11: Θ_eq⁺ runs through a Kleene variable (c.PID = p.PID and p.PID = b.PID give
    c.PID = b.PID, so another patient's B2 does not extend the prefix {c1}) and holds prev(p.PID) = p.PID
    for a Kleene p tied to another variable (another patient's P2 does not extend the prefix {p1}, on which
    Θ as written says nothing). Partitioned or not, STNM and ROBUST_STNM find the ALL match."""
    cases = [
        ("PATTERN SEQ({C c}, {P+ p, B b}) WHERE c.PID = p.PID and p.PID = b.PID WITHIN 10", "C1 B2 P3 B4"),
        ("PATTERN SEQ({P+ p, C c}, {B b}) WHERE c.PID = p.PID and p.PID = b.PID WITHIN 10", "P1 P2 C3 B4"),
    ]
    for query, spec in cases:
        stream = events(spec, PID=[1, 2, 1, 1])
        assert reference(query, stream) == [(0, 2, 3)]
        for strategy in ("STNM", "ROBUST_STNM"):
            for text in (query, query + " PARTITION BY PID"):
                assert reference(text, stream, strategy=strategy) == [(0, 2, 3)], (text, strategy)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    set_queries(strategies=("STNM", "ROBUST_STNM"), max_sets=3, max_set_size=2),
    streams(types=("C", "P", "D", "B"), min_size=5, max_size=9, ids=2),
    st.data(),
)
def test_stnm_is_partition_invariant(query, stream, data):
    """docs/references.md E11: with Θ_eq⁺ added, STNM and ROBUST_STNM are partition-invariant. Tie every variable
    of a random set pattern on ``id`` by a random spanning tree of equalities (so Θ_eq⁺ adds the other pairs,
    and prev(p.id) = p.id for Kleene p); PARTITION BY id then changes no match, and ALL stays the same too."""
    node = cepkit.parse(query).ast
    names = [a.var for a in node.pattern.find_all(A.Atom)]
    order = data.draw(st.permutations(names))
    ties = [
        A.Compare("=", A.Attr(order[data.draw(st.integers(0, k - 1))], "id"), A.Attr(order[k], "id"))
        for k in range(1, len(order))
    ]
    if len(order) == 1:  # a lone Kleene variable is tied to nothing: its own events must share the id
        ties += [
            A.Compare("=", A.Prev(A.Attr(plus.pattern.var, "id")), A.Attr(plus.pattern.var, "id"))
            for plus in node.pattern.find_all(A.Plus)
        ]
    written = A.conjuncts(node.where) if data.draw(st.booleans()) else ()  # the drawn conditions, or none
    tied = dataclasses.replace(node, where=A.conjoin(written + tuple(ties)))
    parted = dataclasses.replace(tied, partition_by=("id",))
    for strategy in (None, "STNM", "ROBUST_STNM"):
        got = [
            cepkit.match(pretty(n), stream, engine="reference", strategy=strategy or "ALL").positions()
            for n in (tied, parted)
        ]
        assert got[0] == got[1], (pretty(tied), strategy)


def test_nested_stnm(reference, events):
    """docs/language.md §5: STNM can wrap a sub-pattern: STNM(A a ; B+ b) keeps the greedy ⟨b2, b3⟩ only."""
    assert reference("STNM(A a ; B+ b) ; C c", events("A1 B2 B3 C4")) == [(0, 1, 2, 3)]
    assert reference("(A a ; B+ b) ; C c", events("A1 B2 B3 C4")) == [(0, 1, 2, 3), (0, 1, 3), (0, 2, 3)]


def test_stnm_needs_a_sequence_of_sets(events):
    """STNM is defined on SES patterns only ([SES] Def 6.1): elsewhere a QueryError with a caret."""
    with pytest.raises(cepkit.QueryError, match="sequences of sets"):
        cepkit.match("SEQ(A a, (B b ; C c)+)", events("A1"), engine="reference", strategy="STNM")
