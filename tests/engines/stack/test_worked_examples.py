"""Every worked example of [LIU] ch. 2, ch. 3 (Examples 1-8), with the boundary readings of docs/references.md
E1-E2. Events are written as in the thesis: ``a3`` is an A with ts 3."""

import cepkit
from cepkit.runtime import Stream, get_engine

from engines.stack.labelled_streams import arrivals, labelled

SEQ_ABNCD = "SEQ(A a, B b, !C c, D d) WITHIN 10"


def run(query, text, **options):
    return cepkit.match(query, arrivals(text), engine="stack", **options)


def matcher_after(query, text, **options):
    """The stack engine's incremental matcher after every arrival of ``text`` (to look at its state)."""
    plan = get_engine("stack").compile(cepkit.parse(query), **options)
    matcher = plan.matcher()
    for event in Stream.from_any(arrivals(text)):
        matcher.push(event)
    return matcher


def held_labels(matcher, slot, text):
    names = text.split()
    return {
        names[inst.event.position]
        for core in matcher.cores.values()
        for part in core.parts.values()
        for inst in part.stacks[slot].items
    }


# ----------------------------------------------------------------------------- [LIU] §2.3 (Fig 2.1, Ex 1)
def test_we1_pointers_and_depth_first_construction():
    text = "g1 a5 a6 t15"
    matcher = matcher_after("SEQ(G g, A a, T t)", text)
    (part,) = matcher.cores[()].parts.values()
    g_stack, a_stack, t_stack = part.stacks
    assert [i.rip for i in a_stack.items] == [1, 1]  # a5 -> g1, a6 -> g1
    (t15,) = t_stack.items
    assert a_stack.items[t15.rip - 1].event.ts == 6  # t15.ptr = a6, the top of the A stack
    assert labelled(run("SEQ(G g, A a, T t)", text).positions(), text) == {("g1", "a5", "t15"), ("g1", "a6", "t15")}


# ----------------------------------------------------------------------------- [LIU] §3.6.1 (Fig 3.1(c), Ex 2, 6)
WE9 = "a3 c5 b6 d10 d17 POG<C,10> d8"
TRUTH_WE9 = {("a3", "b6", "d8"), ("a3", "b6", "d10")}


def test_we9_conservative_holds_until_the_punctuation_then_emits_unsorted():
    m = run(SEQ_ABNCD, WE9, disorder="conservative")
    assert labelled(m.positions(), WE9) == TRUTH_WE9
    emitted = [(labelled([d.positions], WE9).pop(), WE9.split()[d.emitted_at]) for d in m.deltas]
    # <a3,b6,d10> waits in the holding set until POG<C,10> (c5 is outside [6,10]); d8's match is safe at
    # once because POGNeg[C] = 10 >= 8 (the ">=" reading of Ex 6, docs/references.md E1): output order d10, then d8.
    assert emitted == [(("a3", "b6", "d10"), "POG<C,10>"), (("a3", "b6", "d8"), "d8")]


def test_we9_kslack_with_enough_slack_is_correct_but_late():
    m = run(SEQ_ABNCD, WE9, disorder="kslack", k=9)
    assert labelled(m.positions(), WE9) == TRUTH_WE9
    # the clock never passes 10 + 9 = 19, so <a3,b6,d10> only comes out at the end-of-stream flush
    assert {d.emitted_at for d in m.deltas} == {len(WE9.split()) - 1}
    assert m.info["dropped"] == []


def test_we9_kslack_with_too_small_slack_loses_exactly_the_late_match():
    m = run(SEQ_ABNCD, WE9, disorder="kslack", k=5)
    # d10 was released when d17 arrived (10 < 17 - 5), so d8 cannot be placed: <a3,b6,d8> is lost
    assert labelled(m.positions(), WE9) == {("a3", "b6", "d10")}
    assert [WE9.split()[p] for p in m.info["dropped"]] == ["d8"]


def test_we9_naive_window_purge_would_lose_the_late_match():
    # In order, a3 is purged when d17 arrives (17 - 3 > 10): the late d8 cannot be matched any more. The
    # out-of-order modes keep it: the aggressive one inserts <a3,b6,d8> when d8 arrives.
    m = run(SEQ_ABNCD, WE9, disorder="aggressive")
    assert labelled(m.positions(), WE9) == TRUTH_WE9
    late = [d for d in m.deltas if WE9.split()[d.emitted_at] == "d8"]
    assert [(d.sign, labelled([d.positions], WE9).pop()) for d in late] == [("+", ("a3", "b6", "d8"))]


# ----------------------------------------------------------------------------- [LIU] §3.3 (Obs 2, Fig 3.1(d), Ex 3)
WE10 = "a3 c5 b6 a7 d8 d10 b11 f17 b4"
TRUTH_WE10 = {("a3", "b6", "d8"), ("a3", "b6", "d10")}


def test_we10_late_positive_does_not_resurrect_blocked_matches():
    # The late b4 builds <a3,b4,d8> and <a3,b4,d10>; c5 lies between b4 and d, so both are rejected: the
    # negation store must still hold c5 (a window purge at f17 would have dropped it).
    for options in ({"disorder": "aggressive"}, {"disorder": "conservative", "max_delay": 13}):
        m = run(SEQ_ABNCD, WE10, **options)
        assert labelled(m.positions(), WE10) == TRUTH_WE10, options
        assert all(d.sign == "+" for d in m.deltas)
        assert labelled([d.positions for d in m.deltas], WE10) == TRUTH_WE10


# ----------------------------------------------------------------------------- [LIU] §3.6.1 (Alg. 2, Ex 5)
def test_we11_pog_set_purge_removes_a7():
    # SEQ(B,A,B,D,F) within 10, POGs <B,17> and <D,17> after b4: the backward pass finds b4/b6, the
    # forward pass finds b11 (checking = 11) and then no D in [11, 17]: a7 is purged. This needs the
    # ">=" boundary of the forward test (POG >= e.ts + W), docs/references.md E1, not the printed ">".
    text = WE10 + " POG<B,17> POG<D,17>"
    query = "SEQ(B b1, A a, B b2, D d, F f) WITHIN 10"
    before = matcher_after(query, WE10, disorder="conservative")
    assert "a7" in held_labels(before, 1, WE10)
    after = matcher_after(query, text, disorder="conservative")
    assert "a7" not in held_labels(after, 1, text)
    assert "a3" not in held_labels(after, 1, text)  # nothing after a3 within 10 can be a D after a B either
    assert (
        run(query, text, disorder="conservative").positions()
        == run(query, " ".join(sorted(WE10.split(), key=lambda s: int(s[1:])))).positions()
        == []
    )


# ----------------------------------------------------------------------------- [LIU] §3.6.1 (Alg. 1, Ex 4)
def test_we12_single_pog_purges_b1_when_no_a_is_held():
    # SEQ(A,B,!C,D) within 7 with only b1 and d2 in state: POG<A,1> purges b1 ("no A precedes b1 within
    # W"). The text also lists a0 as received, which would block the purge; we test the reading without it.
    query = "SEQ(A a, B b, !C c, D d) WITHIN 7"
    text = "b1 d2 POG<A,1>"
    matcher = matcher_after(query, text, disorder="conservative")
    assert held_labels(matcher, 1, text) == set()
    assert held_labels(matcher, 2, text) == {"d2"}  # d2 is kept: no guarantee about B
    with_a0 = "a0 b1 d2 POG<A,1>"
    assert held_labels(matcher_after(query, with_a0, disorder="conservative"), 1, with_a0) == {"b1"}


# ----------------------------------------------------------------------------- [LIU] §3.6.2 (Fig 3.1(a), Ex 7/8)
def test_we13_aggressive_retracts_only_what_it_emitted():
    query = "SEQ(A a, !C c, B b) WITHIN 10"
    text = "a3 c5 a7 b11 c9"
    m = run(query, text, disorder="aggressive")
    deltas = [(d.sign, labelled([d.positions], text).pop(), text.split()[d.emitted_at]) for d in m.deltas]
    # at b11 only <a7,b11> is emitted (<a3,b11> is blocked by c5); c9 makes {<a3,b11>, <a7,b11>} spurious,
    # but only <a7,b11> was emitted, so only it is retracted
    assert deltas == [("+", ("a7", "b11"), "b11"), ("-", ("a7", "b11"), "c9")]
    assert m.positions() == []


def test_we13_extension_late_a10_inserts():
    query = "SEQ(A a, !C c, B b) WITHIN 10"
    text = "a3 c5 a7 b11 c9 a10"
    m = run(query, text, disorder="aggressive")
    assert [(d.sign, labelled([d.positions], text).pop()) for d in m.deltas][-1] == ("+", ("a10", "b11"))
    assert labelled(m.positions(), text) == {("a10", "b11")}


# ----------------------------------------------------------------------------- [LIU] §5.1.2 (negation bounds)
def test_predicate_scoping_test_of_000b():
    # H = {a1(f=1), b2(f=2), c3(f=3), c0(f=0)}, c0 the last C: a conjunct that mentions the negated y goes
    # inside "there is no y with ..."; q1 returns {a1,c0} (no y with 1 <= y.f <= 0) but not {a1,c3} (b2
    # blocks it); q2 adds x.f <= z.f, an outer filter, and so loses {a1,c0}.
    events = [
        {"type": "A", "ts": 1, "f": 1},
        {"type": "B", "ts": 2, "f": 2},
        {"type": "C", "ts": 3, "f": 3},
        {"type": "C", "ts": 4, "f": 0},
    ]
    q1 = "SEQ(A x, !B y, C z, x.f <= y.f and y.f <= z.f)"
    assert cepkit.match(q1, events, engine="stack").positions() == [(0, 3)]
    assert cepkit.match(q1 + " WHERE x.f <= z.f", events, engine="stack").positions() == []


def test_ex17_sequence_and_negation_scopes_are_open():
    # Ex 17: SEQ(Recycle r, Washing w) over {r1, w2, w3} gives {r1,w2}, {r1,w3}; the "last instance" idiom
    # SEQ(E e1, !E e2) needs open scopes, so an event never blocks itself.
    events = [{"type": "Recycle", "ts": 1}, {"type": "Washing", "ts": 2}, {"type": "Washing", "ts": 3}]
    assert cepkit.match("SEQ(Recycle r, Washing w)", events, engine="stack").positions() == [(0, 1), (0, 2)]
    assert cepkit.match("SEQ(Washing w, !Washing w2)", events, engine="stack").positions() == [(2,)]
