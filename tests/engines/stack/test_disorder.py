"""Out-of-order modes (digest 000a §2, LANGUAGE.md §6): once the stream is complete, the net result of
every mode equals the in-order result over the stream sorted by (ts, position), on random streams with
random bounded and unbounded delays; conservative output is permanently valid; K-slack with a too-small
K loses exactly the matches of the events it had to drop."""
import cepkit
import pytest
from cepkit.semantics import evaluate
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import flat_seq_queries, shuffled_arrivals, streams

# Out of order, windows are in time (EVENTS windows and STRICT/STNM are refused, see test_errors.py).
time_queries = flat_seq_queries().filter(lambda q: "EVENTS" not in q)


@st.composite
def disordered(draw, max_size=12):
    """(arrivals, largest ts delay): an in-order stream shuffled with a bounded or an unbounded delay."""
    events = draw(streams(min_size=3, max_size=max_size, ties=draw(st.booleans())))
    bound = draw(st.sampled_from([2, 4, None, "type"]))
    if bound == "type":   # every event of one type arrives late, after all the others (late negatives)
        kind = draw(st.sampled_from(["A", "B", "C"]))
        arrived = [e for e in events if e["type"] != kind] + shuffled_arrivals(
            [e for e in events if e["type"] == kind], draw, None)
    else:
        arrived = shuffled_arrivals(events, draw, bound)
    delay, clock = 0, float("-inf")
    for e in arrived:
        delay = max(delay, clock - e["ts"])
        clock = max(clock, e["ts"])
    return arrived, delay


def truth(query, arrived, skip=()):
    """The reference's matches over ``arrived`` minus the positions ``skip``, read in logical order (ts,
    then arrival position) and reported with arrival positions: the meaning of every out-of-order mode."""
    kept = [p for p in range(len(arrived)) if p not in skip]
    found = evaluate(query, [arrived[p] for p in kept])
    return sorted((tuple(kept[i] for i in m.positions), tuple(sorted((v, kept[i]) for v, i in m.bindings.items())))
                  for m in found)


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
    for d in m.deltas:   # a retraction withdraws a match emitted before and not yet withdrawn
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
            later = [e["ts"] for e in arrived[i + 1:] if e["type"] == kind]
            ts = (min(later) - 1) if later else max(e["ts"] for e in arrived)
            out.append({"type": "PUNCTUATION", "of": kind, "ts": ts})
    return out


@settings(max_examples=150, deadline=None)
@given(time_queries, punctuated())
def test_conservative_with_punctuations(query, arrived):
    m = cepkit.match(query, arrived, engine="stack", disorder="conservative")
    assert keys(m) == truth(query, arrived)
    assert all(d.sign == "+" for d in m.deltas)


def dropped_by_kslack(arrived, k):
    """Events K-slack cannot place: they arrive after an event with a larger (ts, position) was released,
    i.e. after one whose ts was already more than K below the largest ts seen."""
    out, clock = [], float("-inf")
    for p, e in enumerate(arrived):
        if any((e["ts"], p) < (r["ts"], q) and r["ts"] < clock - k for q, r in enumerate(arrived[:p])):
            out.append(p)
        else:
            clock = max(clock, e["ts"])
    return out


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
    """Digest 000a WE-13 through a ``Matcher``: <a7,b11> is pushed at b11 and withdrawn at the late c9, so
    the Matcher's net result is empty, as ``cepkit.match``'s."""
    labels = "a3 c5 a7 b11 c9".split()
    matcher = cepkit.Matcher("SEQ(A a, !C c, B b) WITHIN 10", engine="stack", disorder="aggressive")
    pushed = [[(m.sign, m.positions) for m in matcher.push({"type": label[0].upper(), "ts": int(label[1:])})]
              for label in labels]
    assert pushed == [[], [], [], [("+", (2, 3))], [("-", (2, 3))]]
    assert matcher.close() == [] and matcher.matches == []
    result = matcher.result()
    assert len(result) == 0 and [(d.sign, d.positions) for d in result.deltas] == [("+", (2, 3)), ("-", (2, 3))]


# Random flat queries rarely put a late negative inside a match; these always negate something.
negation_queries = st.builds(
    "{} {} {}".format,
    st.sampled_from(["SEQ(A a, !B b, C c)", "SEQ(!B b, A a, C c)", "SEQ(A a, C c, !B b)",
                     "SEQ(A a, !B b, C c, b.v >= a.v)", "SEQ(A a, !C c, A a2, !B b, C c2, b.id = a.id)"]),
    st.sampled_from(["", "WITHIN 3", "WITHIN 6"]),
    st.sampled_from(["", "PARTITION BY id"]))


@settings(max_examples=150, deadline=None)
@given(negation_queries, disordered(max_size=14))
def test_every_mode_converges_on_negations(query, case):
    arrived, delay = case
    expected = truth(query, arrived)
    for options in ({"disorder": "aggressive"}, {"disorder": "aggressive", "max_delay": delay},
                    {"disorder": "conservative", "max_delay": delay}, {"disorder": "kslack", "k": delay}):
        assert keys(cepkit.match(query, arrived, engine="stack", **options)) == expected, options


def test_a_punctuation_on_a_concept_covers_the_types_below_it():
    hierarchy = {"Alarm": ["Fire", "Smoke"]}
    query = "SEQ(A a, !Alarm x, B b) WITHIN 10"
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 5}, {"type": "PUNCTUATION", "of": "Alarm", "ts": 5},
              {"type": "Smoke", "ts": 7}]
    m = cepkit.match(query, events, engine="stack", disorder="conservative", hierarchy=hierarchy)
    assert [(d.positions, d.emitted_at) for d in m.deltas] == [((0, 1), 2)]   # safe once Alarm is closed at 5
    broken = events[:3] + [{"type": "Fire", "ts": 4}]
    with pytest.raises(cepkit.EventError) as err:
        cepkit.match(query, broken, engine="stack", disorder="conservative", hierarchy=hierarchy)
    assert err.value.position == 3



def test_conservative_waits_on_one_negation_scope_after_the_other():
    """The holding set is a heap per negation (digest 000a §2.4 ``safe(r)``, one test per negation slot):
    the match waits for ``POGNeg[C] >= b.ts`` and ``POGNeg[D] >= e.ts``, in whichever order they come."""
    query = "SEQ(A a, !C c, B b, !D d, E e) WITHIN 100"
    for first, second in (("C", "D"), ("D", "C")):
        matcher = cepkit.Matcher(query, engine="stack", disorder="conservative")
        outputs = [matcher.push(event) for event in (
            {"type": "A", "ts": 1}, {"type": "B", "ts": 5}, {"type": "E", "ts": 9},
            {"type": "PUNCTUATION", "of": first, "ts": 10}, {"type": "PUNCTUATION", "of": second, "ts": 10})]
        assert [[m.positions for m in out] for out in outputs] == [[], [], [], [], [(0, 1, 2)]]
        assert matcher.close() == []


@settings(max_examples=40, deadline=None)
@given(flat_seq_queries(exists=True).filter(lambda q: "EVENTS" not in q and "EXISTS" in q), disordered())
def test_kslack_with_enough_slack_runs_exists_items(query, case):
    arrived, delay = case
    assert keys(cepkit.match(query, arrived, engine="stack", disorder="kslack", k=delay)) == truth(query, arrived)
