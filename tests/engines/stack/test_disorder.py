"""Out-of-order modes ([LIU] ch. 3, docs/language.md §6): once the stream is complete, the net result of
every mode equals the in-order result over the stream sorted by (ts, position), on random streams with
random bounded and unbounded delays; conservative output is permanently valid; K-slack with a too-small
K loses exactly the matches of the events it had to drop. ``max_delay`` per event type (issue 5) at the
end."""

import cepkit
import pytest
from cepkit.semantics import evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import dropped_by_kslack, flat_seq_queries, shuffled_arrivals, streams

# Out of order, windows are in time (EVENTS windows and STRICT/STNM are refused, see test_errors.py).
time_queries = flat_seq_queries().filter(lambda q: "EVENTS" not in q)


@st.composite
def disordered(draw, max_size=12):
    """(arrivals, largest ts delay): an in-order stream shuffled with a bounded or an unbounded delay."""
    events = draw(streams(min_size=3, max_size=max_size, ties=draw(st.booleans())))
    bound = draw(st.sampled_from([2, 4, None, "type"]))
    if bound == "type":  # every event of one type arrives late, after all the others (late negatives)
        kind = draw(st.sampled_from(["A", "B", "C"]))
        arrived = [e for e in events if e["type"] != kind] + shuffled_arrivals(
            [e for e in events if e["type"] == kind], draw, None
        )
    else:
        arrived = shuffled_arrivals(events, draw, bound)
    delay, clock = 0, float("-inf")
    for e in arrived:
        delay = max(delay, clock - e["ts"])
        clock = max(clock, e["ts"])
    return arrived, delay


def truth(query, arrived, skip=(), hierarchy=None):
    """The reference's matches over ``arrived`` minus the positions ``skip``, read in logical order (ts,
    then arrival position) and reported with arrival positions: the meaning of every out-of-order mode."""
    kept = [p for p in range(len(arrived)) if p not in skip]
    found = evaluate(query, [arrived[p] for p in kept], hierarchy=hierarchy)
    return sorted(
        (tuple(kept[i] for i in m.positions), tuple(sorted((v, kept[i]) for v, i in m.bindings.items()))) for m in found
    )


def keys(matches):
    return sorted(m.key for m in matches)


@settings(max_examples=150, deadline=None)
@given(time_queries, disordered(), st.booleans())
def test_aggressive_converges(query, case, bounded_state):
    arrived, delay = case
    options = {"max_delay": delay} if bounded_state else {}
    m = cepkit.match(query, arrived, engine="stack", disorder="aggressive", **options)
    assert keys(m) == truth(query, arrived)
    alive = set()
    for d in m.deltas:  # a retraction withdraws a match emitted before and not yet withdrawn
        if d.sign == "+":
            alive.add(d.key)
        else:
            assert d.key in alive
            alive.remove(d.key)
    assert sorted(alive) == keys(m)


@settings(max_examples=150, deadline=None)
@given(time_queries, disordered())
def test_conservative_with_max_delay_is_permanently_valid(query, case):
    arrived, delay = case
    m = cepkit.match(query, arrived, engine="stack", disorder="conservative", max_delay=delay)
    expected = truth(query, arrived)
    assert keys(m) == expected
    assert all(d.sign == "+" for d in m.deltas) and len(m.deltas) == len(expected)


@st.composite
def punctuated(draw):
    """Disordered arrivals with valid punctuations: ``of`` T at ts p only when no later T has ts ≤ p."""
    arrived, _ = draw(disordered())
    out = []
    for i, event in enumerate(arrived):
        out.append(event)
        if draw(st.integers(0, 2)) == 0:
            kind = draw(st.sampled_from(["A", "B", "C"]))
            later = [e["ts"] for e in arrived[i + 1 :] if e["type"] == kind]
            ts = (min(later) - 1) if later else max(e["ts"] for e in arrived)
            out.append({"type": "PUNCTUATION", "of": kind, "ts": ts})
    return out


@settings(max_examples=150, deadline=None)
@given(time_queries, punctuated())
def test_conservative_with_punctuations(query, arrived):
    m = cepkit.match(query, arrived, engine="stack", disorder="conservative")
    assert keys(m) == truth(query, arrived)
    assert all(d.sign == "+" for d in m.deltas)


@settings(max_examples=150, deadline=None)
@given(time_queries, disordered(), st.integers(0, 4))
def test_kslack_is_exact_with_enough_slack_and_loses_only_what_it_drops(query, case, k):
    arrived, delay = case
    enough = cepkit.match(query, arrived, engine="stack", disorder="kslack", k=delay)
    assert keys(enough) == truth(query, arrived) and enough.info["dropped"] == []
    small = cepkit.match(query, arrived, engine="stack", disorder="kslack", k=k)
    dropped = dropped_by_kslack(arrived, k)
    assert small.info["dropped"] == dropped
    assert keys(small) == truth(query, arrived, skip=set(dropped))


@settings(max_examples=60, deadline=None)
@given(time_queries, disordered())
def test_matcher_pushes_insertions_and_retractions(query, case):
    arrived, _ = case
    matcher = cepkit.Matcher(query, engine="stack", disorder="aggressive")
    log = [m for event in arrived for m in matcher.push(event)] + matcher.close()
    net = {}
    for m in log:
        net[m.key] = net.get(m.key, 0) + (1 if m.sign == "+" else -1)
    assert sorted(k for k, n in net.items() if n > 0) == truth(query, arrived)
    # the Matcher's own result is the net one, and its deltas are the emissions in order
    result = matcher.result()
    assert keys(result) == keys(matcher.matches) == truth(query, arrived)
    assert [(d.key, d.sign) for d in result.deltas] == [(d.key, d.sign) for d in log]


def test_matcher_result_withdraws_retracted_matches_we13():
    """[LIU] Ex 7/8 through a ``Matcher``: <a7,b11> is pushed at b11 and withdrawn at the late c9, so
    the Matcher's net result is empty, as ``cepkit.match``'s."""
    labels = "a3 c5 a7 b11 c9".split()
    matcher = cepkit.Matcher("SEQ(A a, !C c, B b) WITHIN 10", engine="stack", disorder="aggressive")
    pushed = [
        [(m.sign, m.positions) for m in matcher.push({"type": label[0].upper(), "ts": int(label[1:])})]
        for label in labels
    ]
    assert pushed == [[], [], [], [("+", (2, 3))], [("-", (2, 3))]]
    assert matcher.close() == [] and matcher.matches == []
    result = matcher.result()
    assert len(result) == 0 and [(d.sign, d.positions) for d in result.deltas] == [("+", (2, 3)), ("-", (2, 3))]


# Random flat queries rarely put a late negative inside a match; these always negate something.
negation_queries = st.builds(
    "{} {} {}".format,
    st.sampled_from(
        [
            "SEQ(A a, !B b, C c)",
            "SEQ(!B b, A a, C c)",
            "SEQ(A a, C c, !B b)",
            "SEQ(A a, !B b, C c, b.v >= a.v)",
            "SEQ(A a, !C c, A a2, !B b, C c2, b.id = a.id)",
        ]
    ),
    st.sampled_from(["", "WITHIN 3", "WITHIN 6"]),
    st.sampled_from(["", "PARTITION BY id"]),
)


@settings(max_examples=150, deadline=None)
@given(negation_queries, disordered(max_size=14))
def test_every_mode_converges_on_negations(query, case):
    arrived, delay = case
    expected = truth(query, arrived)
    for options in (
        {"disorder": "aggressive"},
        {"disorder": "aggressive", "max_delay": delay},
        {"disorder": "conservative", "max_delay": delay},
        {"disorder": "kslack", "k": delay},
    ):
        assert keys(cepkit.match(query, arrived, engine="stack", **options)) == expected, options


def test_a_punctuation_on_a_concept_covers_the_types_below_it():
    hierarchy = {"Alarm": ["Fire", "Smoke"]}
    query = "SEQ(A a, !Alarm x, B b) WITHIN 10"
    events = [
        {"type": "A", "ts": 1},
        {"type": "B", "ts": 5},
        {"type": "PUNCTUATION", "of": "Alarm", "ts": 5},
        {"type": "Smoke", "ts": 7},
    ]
    m = cepkit.match(query, events, engine="stack", disorder="conservative", hierarchy=hierarchy)
    assert [(d.positions, d.emitted_at) for d in m.deltas] == [((0, 1), 2)]  # safe once Alarm is closed at 5
    # a Fire at 4 after the punctuation of Alarm at 5 broke its promise: dropped and counted (it would have
    # blocked the match already emitted), as the out-of-order layer and K-slack drop what they cannot place
    broken = events[:3] + [{"type": "Fire", "ts": 4}]
    found = cepkit.match(query, broken, engine="stack", disorder="conservative", hierarchy=hierarchy)
    assert found.info["dropped"] == [3] and keys(found) == truth(query, broken, skip={3}, hierarchy=hierarchy)


def test_conservative_waits_on_one_negation_scope_after_the_other():
    """The holding set is a heap per negation ([LIU] §3.6.1 ``safe(r)``, one test per negation slot):
    the match waits for ``POGNeg[C] >= b.ts`` and ``POGNeg[D] >= e.ts``, in whichever order they come."""
    query = "SEQ(A a, !C c, B b, !D d, E e) WITHIN 100"
    for first, second in (("C", "D"), ("D", "C")):
        matcher = cepkit.Matcher(query, engine="stack", disorder="conservative")
        outputs = [
            matcher.push(event)
            for event in (
                {"type": "A", "ts": 1},
                {"type": "B", "ts": 5},
                {"type": "E", "ts": 9},
                {"type": "PUNCTUATION", "of": first, "ts": 10},
                {"type": "PUNCTUATION", "of": second, "ts": 10},
            )
        ]
        assert [[m.positions for m in out] for out in outputs] == [[], [], [], [], [(0, 1, 2)]]
        assert matcher.close() == []


@settings(max_examples=40, deadline=None)
@given(flat_seq_queries(exists=True).filter(lambda q: "EVENTS" not in q and "EXISTS" in q), disordered())
def test_kslack_with_enough_slack_runs_exists_items(query, case):
    arrived, delay = case
    assert keys(cepkit.match(query, arrived, engine="stack", disorder="kslack", k=delay)) == truth(query, arrived)


# ----------------------------------------------------------------------------- max_delay per type (issue 5)
# ``max_delay={"A": 5, "B": "2 min"}``: no A arrives after an event whose ts exceeds its own by more than 5;
# a type the mapping does not bound ("*" aside) is completed by punctuations only (docs/stack-engine.md).
ALARMS = {"X": ["B", "C"]}  # a concept over two of the stream's types


def bound_of(mapping, kind, hierarchy=None):
    """The promised bound of events of ``kind`` (None: none): the smallest key on it or a concept above it,
    else "*"."""
    names = [kind] + [c for c, kids in (hierarchy or {}).items() if kind in kids]
    found = [mapping[n] for n in names if n in mapping]
    return min(found) if found else mapping.get("*")


@st.composite
def per_type_disordered(draw, hierarchy=None):
    """(arrivals, mapping): random bounds per type (some types left out, sometimes "*" or a concept), and
    an in-order stream delayed within them: each event arrives at ts + a delay up to its type's bound
    (an unbounded type anywhere up to 30), so any event arriving before it has ts <= its ts + bound."""
    events = draw(streams(min_size=3, max_size=12, ties=draw(st.booleans())))
    names = ["A", "B", "C", "*"] + list(hierarchy or ())
    mapping = {}
    for name in names:
        if draw(st.integers(0, 4)) > 0 if name in "ABC" else draw(st.booleans()):
            mapping[name] = draw(st.sampled_from([0, 1, 2, 4, 8]))
    if not mapping:
        mapping["A"] = draw(st.integers(0, 6))
    keyed = []
    for i, e in enumerate(events):
        bound = bound_of(mapping, e["type"], hierarchy)
        # as late as allowed, often: late events that only the right type's bound still admits
        delay = draw(st.integers(0, 30) if bound is None else st.one_of(st.just(bound), st.integers(0, bound)))
        keyed.append((e["ts"] + delay, draw(st.integers(0, 3)), i, e))
    return [e for *_, e in sorted(keyed, key=lambda k: k[:3])], mapping


def per_type_delays(mapping):
    """The mapping as the user may write it: numbers, timedeltas or text."""
    import datetime as dt

    forms = (lambda v: v, lambda v: dt.timedelta(seconds=v), lambda v: f"{v} s")
    return {name: forms[(len(name) + int(v)) % 3](v) for name, v in mapping.items()}


def assert_permanently_valid_and_complete(query, arrived, mapping, hierarchy=None):
    expected = truth(query, arrived, hierarchy=hierarchy)
    matcher = cepkit.Matcher(
        query, engine="stack", disorder="conservative", hierarchy=hierarchy, max_delay=per_type_delays(mapping)
    )
    for event in arrived:  # permanently valid: never a match the in-order result lacks, never withdrawn
        for m in matcher.push(event):
            assert m.sign == "+" and m.key in expected
    assert all(m.sign == "+" for m in matcher.close())
    result = matcher.result()  # converges at close, each match emitted once
    assert keys(result) == expected and len(result.deltas) == len(expected)
    aggressive = cepkit.match(
        query, arrived, engine="stack", disorder="aggressive", hierarchy=hierarchy, max_delay=mapping
    )  # the same bounds bound the aggressive state
    assert keys(aggressive) == expected


@settings(max_examples=150, deadline=None)
@given(st.one_of(time_queries, negation_queries), per_type_disordered())
def test_conservative_with_per_type_max_delay_is_permanently_valid(query, case):
    arrived, mapping = case
    assert_permanently_valid_and_complete(query, arrived, mapping)


concept_queries = st.builds(
    "{} {}".format,
    st.sampled_from(
        [
            "SEQ(A a, !X x, A a2)",
            "SEQ(!X x, A a, C c)",
            "SEQ(A a, C c, !X x)",
            "SEQ(X x, !A a, X x2, !ANY y, A a2)",
            "SEQ(A a, !ANY y, B b)",
        ]
    ),
    st.sampled_from(["", "WITHIN 3", "WITHIN 6"]),
)


@settings(max_examples=100, deadline=None)
@given(concept_queries, per_type_disordered(ALARMS))
def test_per_type_max_delay_on_concepts_is_permanently_valid(query, case):
    """A concept (X over B and C) is complete once both of its types are; ANY only through "*"."""
    arrived, mapping = case
    assert_permanently_valid_and_complete(query, arrived, mapping, ALARMS)


def test_star_bounds_a_concepts_types_not_the_concept():
    """Found by `make soak`: with {"C": 2, "*": 0}, "*" bounds B (0) but not X over B and C, which is
    complete only when C is (2): the late C@2 falls between A@1 and A@3, so <a1, a3> is never emitted."""
    arrived = [
        {"type": "A", "ts": 1, "v": 0, "id": 0},
        {"type": "A", "ts": 3, "v": 0, "id": 0},
        {"type": "C", "ts": 2, "v": 0, "id": 0},
    ]
    assert_permanently_valid_and_complete("SEQ(A a, !X x, A a2)", arrived, {"C": 2, "*": 0}, ALARMS)
    found = cepkit.match(
        "SEQ(A a, !X x, A a2)",
        arrived,
        engine="stack",
        disorder="conservative",
        max_delay={"C": 2, "*": 0},
        hierarchy=ALARMS,
    )
    assert found.positions() == [] and found.deltas == []


def test_a_negated_any_waits_for_the_slowest_type():
    """Found by `make soak`: with {"A": 1, "*": 0} an A may arrive 1 late, so a negated ANY (every type)
    is complete only 1 behind the clock: A@6 arriving after B@7 lies between A@5 and B@7."""
    arrived = [
        {"type": "A", "ts": 5, "v": 0, "id": 0},
        {"type": "B", "ts": 7, "v": 0, "id": 0},
        {"type": "A", "ts": 6, "v": 0, "id": 0},
        {"type": "A", "ts": 8, "v": 0, "id": 0},
    ]
    assert_permanently_valid_and_complete("SEQ(A a, !ANY y, B b)", arrived, {"A": 1, "*": 0}, ALARMS)
    found = cepkit.match(
        "SEQ(A a, !ANY y, B b)", arrived, engine="stack", disorder="conservative", max_delay={"A": 1, "*": 0}
    )
    assert [(d.positions, d.sign) for d in found.deltas] == [((1, 2), "+")]  # <a6, b7>, never <a5, b7>


def pushed(query, events, **options):
    """What each push returns (positions), then what close returns."""
    matcher = cepkit.Matcher(query, engine="stack", disorder="conservative", **options)
    return [[m.positions for m in matcher.push(e)] for e in events] + [[m.positions for m in matcher.close()]]


def test_a_per_type_bound_releases_a_match_earlier_than_the_largest_bound():
    """C (the negated type) arrives within 1, A and B within 10: the match <a1, b4> is safe once the clock
    passes 4 + 1; one bound for the whole stream would have to be 10 and wait for a ts of 14."""
    query = "SEQ(A a, !C c, B b) WITHIN 5"
    arrivals = [{"type": "A", "ts": 1}, {"type": "A", "ts": 6}, {"type": "B", "ts": 4}, {"type": "A", "ts": 15}]
    per_type = cepkit.match(
        query, arrivals, engine="stack", disorder="conservative", max_delay={"A": 10, "B": "10 s", "C": 1}
    )
    scalar = cepkit.match(query, arrivals, engine="stack", disorder="conservative", max_delay=10)
    assert [(d.positions, d.emitted_at) for d in per_type.deltas] == [((0, 2), 2)]
    assert [(d.positions, d.emitted_at) for d in scalar.deltas] == [((0, 2), 3)]
    # a negated type left out of the mapping has no max-delay guarantee: the match waits for the end ...
    assert pushed(query, arrivals, max_delay={"A": 10, "B": 10}) == [[], [], [], [], [(0, 2)]]
    # ... or for a punctuation on it; "*" bounds every type not named
    punctuated = arrivals[:3] + [{"type": "PUNCTUATION", "of": "C", "ts": 4}] + arrivals[3:]
    assert pushed(query, punctuated, max_delay={"A": 10, "B": 10}) == [[], [], [], [(0, 2)], [], []]
    assert pushed(query, arrivals, max_delay={"A": 10, "B": 10, "*": 1}) == [[], [], [(0, 2)], [], []]


def test_purges_keep_what_a_type_with_a_larger_bound_may_still_need():
    """A arrives in order, C up to 6 late: a10 must not purge a3 (a late C may still pair with it), and in
    aggressive mode b20 must not purge <a3, b4> (a late C may still retract it)."""
    events = [{"type": "A", "ts": 3}, {"type": "A", "ts": 10}, {"type": "C", "ts": 5}]
    for mode in ("conservative", "aggressive"):
        m = cepkit.match("SEQ(A a, C c) WITHIN 3", events, engine="stack", disorder=mode, max_delay={"A": 0, "C": 6})
        assert m.positions() == [(0, 2)]
    events = [{"type": "A", "ts": 3}, {"type": "B", "ts": 4}, {"type": "B", "ts": 20}, {"type": "C", "ts": 3.5}]
    m = cepkit.match(
        "SEQ(A a, !C c, B b) WITHIN 3",
        events,
        engine="stack",
        disorder="aggressive",
        max_delay={"A": 0, "B": 0, "C": 17},
    )
    assert m.positions() == [] and [(d.sign, d.positions) for d in m.deltas] == [("+", (0, 1)), ("-", (0, 1))]


def test_a_negated_concept_is_complete_when_every_type_below_it_is():
    hierarchy = {"Alarm": ["Fire", "Smoke"]}
    query = "SEQ(A a, !Alarm x, B b) WITHIN 10"
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 5}, {"type": "A", "ts": 7}, {"type": "A", "ts": 8}]
    both = {"Fire": 1, "Smoke": 3}  # Fire is complete before 5 at clock 6, Smoke at clock 8
    assert pushed(query, events, hierarchy=hierarchy, max_delay=both) == [[], [], [], [(0, 1)], []]
    assert pushed(query, events, hierarchy=hierarchy, max_delay={"Fire": 1}) == [[], [], [], [], [(0, 1)]]
    # a key on the concept bounds every type below it; several promises on one type: the smallest holds
    assert pushed(query, events, hierarchy=hierarchy, max_delay={"Alarm": 2}) == [[], [], [(0, 1)], [], []]
    assert pushed(query, events, hierarchy=hierarchy, max_delay={"Alarm": 9, "Fire": 1, "Smoke": 2}) == [
        [],
        [],
        [(0, 1)],
        [],
        [],
    ]
    # an event of a concept's own type is held to the concept's bound (the largest below it: 3)
    late = events[:3] + [{"type": "Alarm", "ts": 3}]
    found = cepkit.match(query, late, engine="stack", disorder="conservative", hierarchy=hierarchy, max_delay=both)
    assert found.info["dropped"] == [3]  # 4 below the clock: dropped, not used (the match was emitted)
    assert (
        cepkit.match(
            query, late, engine="stack", disorder="conservative", hierarchy=hierarchy, max_delay={"Fire": 1, "Smoke": 4}
        ).info["dropped"]
        == []
    )


def test_a_late_event_beyond_its_own_bound_is_dropped_and_counted():
    """One contract with K-slack, the out-of-order layer and Spark streams (docs/decisions.md): an event that
    broke its promise is dropped and listed in ``info["dropped"]`` (it was an ``EventError`` before; the layer
    and K-slack never raised), and the result is exact over the stream without it."""
    query = "SEQ(A a, !C c, B b) WITHIN 5"
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 9}, {"type": "C", "ts": 6}, {"type": "A", "ts": 2}]
    for mode in ("conservative", "aggressive"):
        found = cepkit.match(query, events, engine="stack", disorder=mode, max_delay={"A": 10, "C": 2})
        assert found.info["dropped"] == [2] and keys(found) == truth(query, events, skip={2})
        # the same events are all used when C may be 3 late; A (8 late) keeps its own bound of 10
        found = cepkit.match(query, events, engine="stack", disorder=mode, max_delay={"A": 10, "C": 3})
        assert found.info["dropped"] == [] and keys(found) == truth(query, events)
        found = cepkit.match(query, events, engine="stack", disorder=mode, max_delay={"A": 5, "C": 3})
        assert found.info["dropped"] == [3] and keys(found) == truth(query, events, skip={3})
        # a type without a bound may arrive as late as it likes
        assert keys(cepkit.match(query, events, engine="stack", disorder=mode, max_delay={"C": 3})) == truth(
            query, events
        )


def test_per_type_max_delay_is_checked():
    query, events = "SEQ(A a, !C c, B b) WITHIN 5", [{"type": "A", "ts": 1}]

    def run(max_delay, disorder="conservative"):
        return cepkit.match(query, events, engine="stack", disorder=disorder, max_delay=max_delay)

    with pytest.raises(ValueError, match="bounds no type"):
        run({})
    with pytest.raises(ValueError, match=r"max_delay\['C'\] must not be negative"):
        run({"C": -1})
    with pytest.raises(TypeError, match=r"max_delay\['C'\] must be a number"):
        run({"C": True})
    with pytest.raises(TypeError, match=r"max_delay\['C'\] must be a number"):
        run({"C": None})
    with pytest.raises(ValueError, match=r"max_delay\['C'\] is a time, not a number of events"):
        run({"C": "3 EVENTS"})
    with pytest.raises(TypeError, match="keys are event type names"):
        run({3: 1})
    with pytest.raises(ValueError, match="punctuations are promises"):
        run({"PUNCTUATION": 1})
    with pytest.raises(TypeError, match="max_delay= is an option"):
        run({"C": 1}, disorder="reject")
    assert len(run({"Unknown": 1, "C": "2 min"})) == 0  # keys naming types the query does not use are fine


def test_plans_with_per_type_max_delay_pickle():
    import pickle

    from cepkit.runtime.registry import get_engine

    plan = get_engine("stack").compile(
        cepkit.parse("SEQ(A a, !C c, B b) WITHIN 5"), disorder="conservative", max_delay={"C": "1 s", "*": 10}
    )
    clone = pickle.loads(pickle.dumps(plan))
    stream = cepkit.runtime.Stream.from_any([{"type": "A", "ts": 1}, {"type": "B", "ts": 3}, {"type": "A", "ts": 5}])
    assert [(m.key, m.emitted_at) for m in clone.run(stream)] == [(m.key, m.emitted_at) for m in plan.run(stream)]
    assert [m.emitted_at for m in clone.deltas()] == [2]
