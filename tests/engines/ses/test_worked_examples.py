"""The ``ses`` engine on every worked example of [SES] (and docs/references.md E10-E17), each citing its
example. Matches are written as the thesis writes them, one string per match: ``"b=e12 c=e1 d=e5 p=e3+e10"``.
"""

import pytest

import cepkit
from cepkit.datasets import ses_chemo, ses_stocks
from cepkit.engines.ses import SesAutomaton, permutation_automata
from cepkit.engines.ses.execution import run_window, run_window_robust
from cepkit.engines.ses.windows import Entry, MatchWindow
from cepkit.runtime.stream import Stream
from cepkit.runtime.registry import get_engine

# P1 and P2 with Θ as the thesis writes it (Ex 3.2): the drug is the attribute L, not the event type.
P1 = (
    "PATTERN SEQ({ANY c, ANY+ p, ANY d}, {ANY b}) WHERE c.L = 'C' and p.L = 'P' and d.L = 'D' and b.L = 'B' "
    "and c.PID = p.PID and p.PID = d.PID and d.PID = b.PID and prev(p.V) < p.V WITHIN 15 days"
)
P2 = "PATTERN SEQ({C c, P+ p}, {B b}) WHERE c.PID = p.PID and p.PID = b.PID and prev(p.V) < p.V WITHIN 15 days"
CHAPTER1 = "PATTERN SEQ({C c, P+ p}, {B b}) WHERE c.PID = p.PID and p.PID = b.PID WITHIN 15 days"
STOCKS1 = (
    "PATTERN SEQ({GOOG g1, IBM i1}, {GOOG g2, IBM i2}, {GOOG g3, IBM i3}) "
    "WHERE g1.P < g2.P and g2.P < g3.P and i1.P < i2.P and i2.P < i3.P WITHIN 100 ms"
)
P3 = (
    "PATTERN SEQ({ANY s1}, {ANY s2}, {ANY+ s3}, {ANY s4}) WHERE s1.S = 'GOOG' and s2.S = 'GOOG' and "
    "s3.S = 'GOOG' and s4.S = 'GOOG' and s1.P < s2.P and s2.P < s3.P and prev(s3.P) < s3.P and s1.V < s4.V "
    "and s2.V < s4.V and s3.V < s4.V WITHIN 100 ms"
)
STRATEGIES = ["ALL", "STNM", "ROBUST_STNM"]


def described(query, frame, strategy="ALL", **options) -> list:
    """The ses engine's matches, each as the thesis names them, sorted."""
    names = frame["e"].tolist()
    found = cepkit.match(query, frame, engine="ses", strategy=strategy, **options)
    return sorted(
        " ".join(
            f"{var}={'+'.join(names[i] for i in value) if isinstance(value, tuple) else names[value]}"
            for var, value in sorted(m.bindings.items())
        )
        for m in found
    )


def plan_of(query, **options):
    return get_engine("ses").compile(cepkit.parse(query), **options)


def window_names(frame, positions) -> list:
    return [frame["e"].iloc[p] for p in positions]


# ----------------------------------------------------------------------------- chemo, chapters 3-6 ([SES] Fig. 3.1)
P1_ALL = ["b=e12 c=e1 d=e5 p=e3", "b=e12 c=e1 d=e5 p=e10", "b=e12 c=e1 d=e5 p=e3+e10"] + [
    f"b={b} c=e8 d=e7 p={p}" for p in ("e6", "e9", "e11", "e6+e9") for b in ("e13", "e14")
]
P1_STNM = ["b=e12 c=e1 d=e5 p=e3+e10", "b=e13 c=e8 d=e7 p=e9", "b=e13 c=e8 d=e7 p=e6+e9"]


@pytest.mark.parametrize("two_phase", [True, False], ids=["two-phase", "plain"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_chemo_p1(strategy, two_phase):
    """[SES] Ex 3.4-3.5: Γ of P1 has 11 matches (Ex 3.4; b/e15 is 19 days late, ⟨e6,e11⟩ and ⟨e9,e11⟩ do not rise); STNM
    has 3 (Ex 3.5, one of them starting at e7, and b/e14 loses to e13); RSTNM the same 3 (derived)."""
    expected = P1_ALL if strategy == "ALL" else P1_STNM
    assert described(P1, ses_chemo(3), strategy, two_phase=two_phase) == sorted(expected)


def test_chemo_match_windows_ex_4_5():
    """[SES] Ex 4.5: with τ = 15 days, W1 = ⟨e1..e13⟩ and W2 = ⟨e2..e14⟩, 13 events each (plain Alg 1)."""
    frame = ses_chemo(3)
    windows = plan_of(P1, two_phase=False).match_windows(Stream.from_any(frame)).set_index("start")
    assert window_names(frame, windows.loc[0, "positions"]) == [f"e{i}" for i in range(1, 14)]
    assert window_names(frame, windows.loc[1, "positions"]) == [f"e{i}" for i in range(2, 15)]


def test_chemo_w1_instance_fig_4_6():
    """[SES] Fig. 4.6, the trace of W1 (derived here): e1 → {c}, e3 → {c,p}, e5 → {c,p,d}, e10 takes the p
    loop (111.5 < 116.5), e12 → {c,p,d,b}; every other event is ignored, e2 because {c} has no b-edge."""
    frame = ses_chemo(3)
    plan = plan_of(P1, two_phase=False)
    stream = Stream.from_any(frame)
    window = [Entry(e, e.time, plan.vars_of(e)) for e in stream.events[:13]]
    trace: list = []
    run_window(plan.compiled[0], window, keep_skips=False, trace=trace)
    c, p, d, b = (1 << plan.index[v] for v in "cpdb")
    steps = {
        "e1": (c, ["e1"], [], [], []),
        "e3": (c | p, ["e1"], ["e3"], [], []),
        "e5": (c | p | d, ["e1"], ["e3"], ["e5"], []),
        "e10": (c | p | d, ["e1"], ["e3", "e10"], ["e5"], []),
        "e12": (c | p | d | b, ["e1"], ["e3", "e10"], ["e5"], ["e12"]),
    }
    current = None
    for position, instances in trace:
        current = steps.get(frame["e"].iloc[position], current)
        state, *bound = current
        expected = tuple(tuple(stream.events[int(n[1:]) - 1] for n in names) for names in bound)
        assert (state, expected) in instances


def test_chemo_p2_and_the_calls_to_a():
    """[SES] ch. 5, P2 (counted here): |Γ| = 11, STNM 3 matches; the same two-phase run: the same 3 matches with 3 calls to A in the
    two-phase evaluation, against 15 for the plain method."""
    frame = ses_chemo(3)
    assert len(described(P2, frame)) == 11
    expected = ["b=e12 c=e1 p=e3+e10", "b=e13 c=e8 p=e6+e9", "b=e13 c=e8 p=e9"]
    calls = {}
    for two_phase in (True, False):
        found = cepkit.match(P2, frame, engine="ses", strategy="ROBUST_STNM", two_phase=two_phase)
        calls[two_phase] = found.info["evaluated"]
        assert described(P2, frame, "STNM", two_phase=two_phase) == expected
        assert described(P2, frame, "ROBUST_STNM", two_phase=two_phase) == expected
    assert calls == {True: 3, False: 15}


def test_a_on_w1_and_w2_ex_5_3():
    """[SES] Ex 5.3: A(P2, W1) = {{c/e1, p/⟨e3,e10⟩, b/e12}} and A(P2, W2) = ∅, A being SESExec (Alg 2) on the
    plain windows W1 = ⟨e1..e13⟩ and W2 = ⟨e2..e14⟩ of Ex 4.5 (W2 starts with the blood count e2)."""
    frame = ses_chemo(3)
    plan = plan_of(P2, two_phase=False)
    events = Stream.from_any(frame).events
    names = frame["e"].tolist()

    def a(first, last):
        window = [Entry(e, e.time, plan.vars_of(e)) for e in events[first - 1 : last]]
        return [
            {v: [names[e.position] for e in b[plan.index[v]]] for v in "cpb"}
            for b in run_window(plan.compiled[0], window, keep_skips=False)
        ]

    assert a(1, 13) == [{"c": ["e1"], "p": ["e3", "e10"], "b": ["e12"]}]
    assert a(2, 14) == []


def test_filtered_windows_ex_5_4_and_candidates_ex_5_5():
    """[SES] Ex 5.4 (docs/references.md E14): filtering keeps L ∈ {C, P, B}: W′1 = ⟨e1..e4, e6, e8..e13⟩ (11 events, as Ex 5.5 counts;
    the text writes "..e12") and W′2 = ⟨e2..e4, e6, e8..e14⟩. Ex 5.5: W′1 is a candidate, W′2 is not,
    e2 being neither c nor p (5.2). Without the PID equalities, no partitioning gets in the way."""
    frame = ses_chemo(3)
    query = "PATTERN SEQ({C c, P+ p}, {B b}) WHERE prev(p.V) < p.V WITHIN 15 days"
    windows = plan_of(query).match_windows(Stream.from_any(frame)).set_index("start")
    assert window_names(frame, windows.loc[0, "positions"]) == ["e1", "e2", "e3", "e4", "e6"] + [
        f"e{i}" for i in range(8, 14)
    ]
    assert window_names(frame, windows.loc[1, "positions"]) == ["e2", "e3", "e4", "e6"] + [
        f"e{i}" for i in range(8, 15)
    ]
    assert windows.loc[0, "evaluated"] and not windows.loc[1, "evaluated"]


def test_partitioned_windows_ex_5_8():
    """[SES] Ex 5.8 (docs/references.md E15): X = {PID}; W′1 splits into ⟨e1,e2,e3,e10,e12⟩ and ⟨e4,e6,e8,e9,e11,e13⟩ (the text
    omits e13). Patient 2's own window runs on to e14 (19 − 6 ≤ 15 days)."""
    frame = ses_chemo(3)
    plan = plan_of(P2)
    assert plan.partition_attributes == ("PID",)
    windows = plan.match_windows(Stream.from_any(frame)).set_index("start")
    assert windows.loc[0, "key"] == (1,) and windows.loc[3, "key"] == (2,)
    assert window_names(frame, windows.loc[0, "positions"]) == ["e1", "e2", "e3", "e10", "e12"]
    assert window_names(frame, windows.loc[3, "positions"]) == ["e4", "e6", "e8", "e9", "e11", "e13", "e14"]


def p2_window():
    """A match window of P2 (sets {c, p+}, {b}) and patient 1's events e1, e2, e3, e10, e12, e15 as entries."""
    plan = plan_of(P2)
    stream = Stream.from_any(ses_chemo(3))
    entries = {e.attrs["e"]: Entry(e, e.time, plan.vars_of(e)) for e in stream.events}
    return MatchWindow(plan.sets, plan.first_set, plan.arity), entries, plan


def test_summary_statistics_fig_5_4():
    """[SES] Fig. 5.4 (patient 1, docs/references.md E16): S as (c, p, b) and conditions 5.1-5.4 after each event; dequeuing e1 (when
    e15 arrives, 22 − 3 > 15) zeroes c, which resets b. The figure's e9/e11 are e10/e12."""
    window, entries, _ = p2_window()
    rows = []
    for name in ("e1", "e2", "e3", "e10", "e12"):
        window.append(entries[name])
        rows.append((tuple(window.stats.counters), window.conditions()))
    window.popleft()
    rows.append((tuple(window.stats.counters), window.conditions()))
    F, T = False, True
    assert rows == [
        ((1, 0, 0), (F, T, F, F)),
        ((1, 0, 0), (F, T, F, F)),
        ((1, 1, 0), (T, T, T, F)),
        ((1, 2, 0), (T, T, T, F)),
        ((1, 2, 1), (T, T, T, T)),
        ((0, 2, 0), (T, F, F, F)),
    ]


def test_bit_vectors_ex_5_9():
    """[SES] Ex 5.9: event vectors ē1 = 100, ē2 = 001, ē3 = 010; status s̄ = 111 at the start (1: the counter
    is zero) and 001 after e1..e3; previous-set masks b̄1 = 000, b̄2 = 110."""
    window, entries, _ = p2_window()
    stats = window.stats
    assert [stats.bits(entries[n].vars) for n in ("e1", "e2", "e3")] == ["100", "001", "010"]
    assert stats.bits() == "111"
    for name in ("e1", "e2", "e3"):
        window.append(entries[name])
    assert stats.bits() == "001"
    assert [stats.bits(m) for m in stats.previous] == ["000", "110"]


def test_counter_fix():
    """docs/references.md E12: on ⟨x1 B, x2 C, x3 P, x4 B⟩ the literal dequeue rule zeroes b's counter when x1 (which never
    raised it) leaves, and the match {c/x2, p/x3, b/x4} is skipped; decrementing only raised counters keeps it."""
    events = [{"type": t, "ts": i, "PID": 1, "V": 1} for i, t in enumerate("BCPB")]
    query = P2.replace("15 days", "10")
    found = cepkit.match(query, events, engine="ses")
    assert found.positions() == [(1, 2, 3)] and found.info["evaluated"] == 1
    plan = plan_of(query)
    window = MatchWindow(plan.sets, plan.first_set, plan.arity)
    for event in Stream.from_any(events):
        window.append(Entry(event, event.time, plan.vars_of(event)))
    window.popleft()
    assert window.stats.counters == [1, 1, 1] and window.candidate


def test_greedy_stnm_misses_what_robust_stnm_keeps():
    """[SES] Thm 6.3 on the chemo stream (derived here): ask for a blood count at least 9 days after every rising
    prednisone dose. STNM greedily extends p with e10 (patient 1) and e9 (patient 2), after which no count comes
    late enough, and finds nothing; RSTNM lets e10 and e9 block only if they lead to a match, and keeps
    {c/e1, p/⟨e3⟩, b/e12} and {c/e8, p/⟨e6⟩, b/e13}, as the reference does."""
    nadir = P2.replace("WITHIN", "and b.ts - p.ts >= 9 days WITHIN")
    frame = ses_chemo(3)
    assert described(nadir, frame, "STNM") == []
    assert described(nadir, frame, "ROBUST_STNM") == ["b=e12 c=e1 p=e3", "b=e13 c=e8 p=e6"]
    for strategy in STRATEGIES:
        assert cepkit.match(nadir, frame, engine="ses", strategy=strategy) == cepkit.match(
            nadir, frame, engine="reference", strategy=strategy
        )


# ----------------------------------------------------------------------------- chemo, chapter 1 ([SES] Fig. 1.4(b))
@pytest.mark.parametrize(
    "strategy,expected",
    [
        ("ALL", ["b=e8 c=e1 p=e3"] + [f"b={b} c=e6 p={p}" for p in ("e5", "e7", "e5+e7") for b in ("e9", "e10")]),
        ("STNM", ["b=e8 c=e1 p=e3", "b=e9 c=e6 p=e5+e7", "b=e9 c=e6 p=e7"]),
        ("ROBUST_STNM", ["b=e8 c=e1 p=e3", "b=e9 c=e6 p=e5+e7", "b=e9 c=e6 p=e7"]),
    ],
)
def test_chemo_chapter_1(strategy, expected):
    """[SES] Figs 1.5-1.6: STAM gives 7 matches; STNM 3 (Fig 1.5(b): e8 is another patient's,
    e9 is preferred to e10), and RSTNM the same (checked against the reference)."""
    frame = ses_chemo(1)
    assert described(CHAPTER1, frame, strategy) == sorted(expected)
    reference = cepkit.match(CHAPTER1, frame, engine="reference", strategy=strategy)
    assert cepkit.match(CHAPTER1, frame, engine="ses", strategy=strategy) == reference


@pytest.mark.parametrize("strategy", ["STRICT", "PARTITION_STRICT"])
def test_contiguity_is_left_to_other_engines(strategy):
    """[SES] Fig. 1.4(c): (partitioned) contiguity is a strategy of the reference, not of SES's automaton; asking ses for it
    is a QueryError that names the engines that have it."""
    with pytest.raises(cepkit.QueryError, match="reference") as error:
        cepkit.match(CHAPTER1 + " PARTITION BY PID", ses_chemo(1), engine="ses", strategy=strategy)
    assert "ses" in str(error.value) and strategy in str(error.value)


# ----------------------------------------------------------------------------- stocks ([SES] Figs 1.3, 6.1(a))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_stocks_chapter_1(strategy):
    """[SES] Fig. 1.3: the unique match {g1/e1, i1/e2, g2/e4, i2/e3, g3/e6, i3/e5} under every strategy; the sequential
    pattern ⟨g1, i1, g2, i2, g3, i3⟩ (singleton sets) finds nothing."""
    frame = ses_stocks(1)
    assert described(STOCKS1, frame, strategy) == ["g1=e1 g2=e4 g3=e6 i1=e2 i2=e3 i3=e5"]
    sequential = STOCKS1.replace(
        "SEQ({GOOG g1, IBM i1}, {GOOG g2, IBM i2}, {GOOG g3, IBM i3})",
        "SEQ(GOOG g1, IBM i1, GOOG g2, IBM i2, GOOG g3, IBM i3)",
    )
    assert described(sequential, frame, strategy) == []
    # covering every interleaving with sequential patterns takes 2!·2!·2! = 8 of them (the brute force's)
    assert len(permutation_automata([("g1", "i1"), ("g2", "i2"), ("g3", "i3")], kleene=())) == 8


P3_STNM = ["s1=e1 s2=e4 s3=e5+e6 s4=e7", "s1=e3 s2=e4 s3=e5+e6 s4=e7", "s1=e4 s2=e5 s3=e6 s4=e7"]


@pytest.mark.parametrize("robust", ["backtrack", "filter"])
def test_stocks_p3(robust):
    """[SES] Ex 6.4-6.5: STNM 3 matches (Ex 6.4; the e71 run fails, e72 taken greedily as s2); RSTNM adds {s1/e71, s2/e74,
    s3/⟨e76⟩, s4/e77} (Ex 6.5; not s4/e78, e77 completes first); Γ has 11 matches, not the 9 the thesis
    lists (docs/references.md E17: {s1/e1, s2/e5, s3/⟨e6⟩, s4/e7} and {s1/e3, s2/e5, s3/⟨e6⟩, s4/e7} are missing there)."""
    frame = ses_stocks(6)
    assert described(P3, frame, "STNM") == P3_STNM
    assert described(P3, frame, "ROBUST_STNM", robust=robust) == sorted(P3_STNM + ["s1=e71 s2=e74 s3=e76 s4=e77"])
    listed = (
        P3_STNM
        + [f"s1={s1} s2=e4 s3={s3} s4=e7" for s1 in ("e1", "e3") for s3 in ("e5", "e6")]
        + [f"s1=e71 s2=e74 s3=e76 s4={s4}" for s4 in ("e77", "e78")]
    )
    missing = ["s1=e1 s2=e5 s3=e6 s4=e7", "s1=e3 s2=e5 s3=e6 s4=e7"]
    assert described(P3, frame) == sorted(listed + missing)


def test_stocks_p3_automaton_ex_6_6():
    """[SES] Ex 6.6: a chain ∅ → {s1} → {s1,s2} → {s1,s2,s3} → {s1..s4}; δ1, δ2, δ3 bind s1, s2, s3, δ4 is the
    s3 self-loop, δ5 binds s4."""
    automaton = SesAutomaton.build([("s1",), ("s2",), ("s3",), ("s4",)], kleene={"s3"})
    assert [(t.label, sorted(t.source), t.var) for t in automaton.transitions] == [
        ("δ1", [], "s1"),
        ("δ2", ["s1"], "s2"),
        ("δ3", ["s1", "s2"], "s3"),
        ("δ4", ["s1", "s2", "s3"], "s3"),
        ("δ5", ["s1", "s2", "s3"], "s4"),
    ]


@pytest.mark.parametrize("omit", [["e75"], []], ids=["without-e75", "with-e75"])
def test_backtracking_ex_6_10(omit):
    """[SES] Ex 6.10/6.11 on W = ⟨e71,e72,e73,e74,e76,e77,e78⟩ (e75 omitted): (δ1,1) and (δ2,2) are added; the
    window ends unaccepted, so (δ2,2) is popped and the run resumes at W[3]; (δ2,4) and (δ3,5) follow; e77 fires
    δ4 and δ5, siblings (δ4,6) and (δ5,6); the δ5 branch is accepted, the δ4 branch is blocked by it (had it
    backtracked, it would give s4/e78, which is not RSTNM). (derived here) With e75, the same match. With the
    lookahead cut (not in the thesis), neither (δ2,2) nor (δ4,6) is grown: no later trade could be s3 above
    645, nor s4 above e77's volume."""
    frame = ses_stocks(6)
    names = ["e71", "e72", "e73", "e74", "e75", "e76", "e77", "e78"]
    frame = frame[frame["e"].isin(names) & ~frame["e"].isin(omit)].reset_index(drop=True)
    assert described(P3, frame, "ROBUST_STNM") == ["s1=e71 s2=e74 s3=e76 s4=e77"]
    assert described(P3, frame, "STNM") == []
    if omit:
        plan = plan_of(P3, two_phase=False)
        window = [Entry(e, e.time, plan.vars_of(e)) for e in Stream.from_any(frame)]
        trace: list = []
        run_window_robust(plan.compiled[0], window, trace, lookahead=False)
        assert trace == [
            ("push", 1, 1),
            ("push", 2, 2),
            ("backtrack", 2, 2),
            ("push", 2, 4),
            ("push", 3, 5),
            ("push", 4, 6),
            ("push", 5, 6),
            ("accept", 5, 6),
            ("blocked", 4, 6),
        ]
        trace = []
        run_window_robust(plan.compiled[0], window, trace)
        assert trace == [
            ("push", 1, 1),
            ("cut", 2, 2),
            ("push", 2, 4),
            ("push", 3, 5),
            ("cut", 4, 6),
            ("push", 5, 6),
            ("accept", 5, 6),
        ]


# ----------------------------------------------------------------------------- decisions (docs/decisions.md)
def test_kleene_variable_in_the_last_set():
    """Decided (docs/decisions.md): a finished match is its own prefix, so under STNM and ROBUST_STNM a
    later event of the window extending a Kleene variable of the last set disqualifies it (Alg 2 keeps looping
    in qf); ALL keeps every match. On A1 B2 X3 X4 B5 with SEQ(A a, B+ b)."""
    events = [{"type": t, "ts": i + 1} for i, t in enumerate("ABXXB")]
    query = "PATTERN SEQ(A a, B+ b) WITHIN 10"
    assert cepkit.match(query, events, engine="ses").positions() == [(0, 1), (0, 1, 4), (0, 4)]
    for strategy in ("STNM", "ROBUST_STNM"):
        assert cepkit.match(query, events, engine="ses", strategy=strategy).positions() == [(0, 1, 4)]
    assert cepkit.match(query.replace("10", "3"), events, engine="ses", strategy="STNM").positions() == [(0, 1)]
    for text in (query, query.replace("10", "3")):  # the reference decides the same (docs/decisions.md)
        for strategy in STRATEGIES:
            assert cepkit.match(text, events, engine="ses", strategy=strategy) == cepkit.match(
                text, events, engine="reference", strategy=strategy
            )


def test_partition_invariance():
    """docs/references.md E11: the transitive closure Θ_eq⁺ is added to Θ before compiling; Γ is unchanged,
    and STNM and ROBUST_STNM become partition-invariant. Sets {a, c}, {b} with a.PID = b.PID and
    b.PID = c.PID on A1 C2 C3 B4 (PIDs 1 2 1 1): the compiled Θ holds a.PID = c.PID, so c2 does not extend the
    prefix {a1}; STNM finds {a1, c3, b4} unpartitioned, as partitioned, as with a.PID = c.PID written out, as
    ROBUST_STNM and ALL, and every strategy's windows are partitioned on X = {PID} (Def 5.3), as in the
    reference."""
    events = [{"type": t, "ts": i + 1, "PID": pid} for i, (t, pid) in enumerate(zip("ACCB", (1, 2, 1, 1)))]
    query = "PATTERN SEQ({A a, C c}, {B b}) WHERE a.PID = b.PID and b.PID = c.PID WITHIN 10"
    closed = query.replace("WITHIN", "and a.PID = c.PID WITHIN")
    assert cepkit.match(query, events, engine="ses").info["closure"] == ["a.PID = c.PID"]
    assert cepkit.match(closed, events, engine="ses").info["closure"] == []
    for strategy in STRATEGIES:
        for text in (query, query + " PARTITION BY PID", closed):
            for two_phase in (True, False):
                found = cepkit.match(text, events, engine="ses", strategy=strategy, two_phase=two_phase)
                assert found.positions() == [(0, 2, 3)], (text, strategy, two_phase)
                assert found == cepkit.match(text, events, engine="reference", strategy=strategy)
                assert found.info["partition_attributes"] == (("PID",) if two_phase else ())
