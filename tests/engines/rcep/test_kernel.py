"""The columnar run (``rcep.batch``: every trigger of a stream in one ``kernel.recompute`` call) gives the
matches of the event-by-event matcher and of the reference; its pure-Python twin (NUMBA_DISABLE_JIT=1,
the same functions uncompiled) gives the compiled kernel's."""

import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import kleene_queries, streams
from twins import assert_twins_agree

import cepkit
from cepkit.engines.rcep import RcepPlan
from cepkit.engines.rcep.batch import runs_columnar
from cepkit.runtime.stream import Stream
from cepkit.runtime.match_arrays import MatchArrays

COLUMNAR = ("ALL", "STRICT", "PARTITION_STRICT", "NEXT", "LAST", "MAX")


def _both(query: str, events, join: str = "hybrid") -> tuple:
    """(the plan's run, the matcher's matches) as sorted keys; the run must be the columnar one."""
    plan = RcepPlan(cepkit.parse(query), join)
    stream = Stream.from_any(events)
    found = plan.run(stream)
    matcher = plan.matcher()
    pushed = matcher.feed(stream) + matcher.close()
    return found, sorted(m.key for m in found), sorted(m.key for m in pushed)


@settings(max_examples=200, deadline=None)
@given(kleene_queries(strategies=COLUMNAR), streams(max_size=14, values=4, ids=2))
def test_columnar_run_agrees_with_the_matcher_and_the_reference(query, events):
    plan = RcepPlan(cepkit.parse(query))
    found, columnar, pushed = _both(query, events)
    assert columnar == pushed
    reference = [m.key for m in cepkit.match(query, events, engine="reference")]
    assert columnar == sorted(reference)
    if runs_columnar(plan):
        assert isinstance(found, MatchArrays)
        # the triggers in stream order, each one's matches sorted: the rows in output order without a sort
        assert [m.key for m in cepkit.match(query, events, engine="rcep")] == reference


@settings(max_examples=300, deadline=None)
@given(kleene_queries(strategies=("STNM", "ROBUST_STNM")), streams(max_size=14, values=4, ids=2))
def test_skip_till_next_strategies_are_emitted_where_the_matcher_releases_them(query, events):
    """STNM (``kernel.skip_till_next``: the candidates between the events of every ALL match tested against
    its prefixes) and ROBUST_STNM (``kernel.robust`` over every ALL match) in the kernel: the matches the
    matcher reports, pushed event by event, each at the same position (the first event past its first
    event's window, or its trigger when the stream ends first; STNM with a single last variable: its
    trigger, in the reference's order), and the reference's matches."""
    assume("CONSUME" not in query)
    plan = RcepPlan(cepkit.parse(query))
    stream = Stream.from_any(events)
    found = plan.run(stream)
    assert isinstance(found, MatchArrays) or not runs_columnar(plan, whole=True)
    matcher = plan.matcher()
    pushed = [m for event in stream for m in matcher.push(event)] + matcher.close()
    assert sorted((m.key, m.emitted_at) for m in found) == sorted((m.key, m.emitted_at) for m in pushed)
    reference = [m.key for m in cepkit.match(query, events, engine="reference")]
    assert sorted(m.key for m in found) == sorted(reference)
    if plan.query.strategy == "STNM" and not plan.slots[-1].kleene:
        assert [m.key for m in cepkit.match(query, events, engine="rcep")] == reference


OPS = ("<", "<=", ">", ">=", "=", "!=")


@st.composite
def walked_queries(draw) -> str:
    """STNM queries the walks (``kernel.next_match_walks``) run whole: joins, chains and constant tests
    over 2-4 variables, Kleene or not, typed A or B or ANY, so that one event often extends a prefix both
    as one more event of its Kleene slot and as the first of the next (the walk forks) and the scan of
    the two slots' members (``kernel._next_extensions``, merged) meets members of one slot only, of both,
    or of neither; a time or EVENTS window or none, partitioned or not."""
    names = [f"x{i}" for i in range(draw(st.integers(2, 4)))]
    kleene = [draw(st.booleans()) for _ in names]
    items = [f"{draw(st.sampled_from(['ANY', 'ANY', 'A', 'B']))}{'+' if k else ''} {v}" for v, k in zip(names, kleene)]
    conditions = []
    for _ in range(draw(st.integers(0, 3))):
        a, b = draw(st.permutations(names))[:2]
        conditions.append(f"{a}.v {draw(st.sampled_from(OPS))} {b}.v")
    for var, plus in zip(names, kleene):
        if plus and draw(st.booleans()):
            conditions.append(f"prev({var}.v) {draw(st.sampled_from(OPS))} {var}.v")
        if draw(st.integers(0, 3)) == 0:
            conditions.append(f"{var}.v {draw(st.sampled_from(OPS))} {draw(st.integers(0, 3))}")
    where = f" WHERE {' and '.join(conditions)}" if conditions else ""
    window = draw(st.sampled_from([" WITHIN 4 s", " WITHIN 7 s", " WITHIN 5 EVENTS", ""]))
    partition = draw(st.sampled_from(["", " PARTITION BY id"]))
    return f"SELECT STNM * PATTERN SEQ({', '.join(items)}){where}{window}{partition}"


@settings(max_examples=250, deadline=None)
@given(walked_queries(), streams(max_size=12, values=4, ids=2))
def test_walks_take_the_earliest_extension_in_either_slot(query, events):
    """The walks' merged scan of a Kleene slot's members and the next slot's (an event tested in each slot
    it is a member of, the first that extends the prefix in either taken, both as two walks) give the
    reference's STNM matches, in its order when the last variable is single."""
    plan = RcepPlan(cepkit.parse(query))
    assume(runs_columnar(plan, whole=True))
    found = plan.run(Stream.from_any(events))
    assert isinstance(found, MatchArrays)
    reference = [m.key for m in cepkit.match(query, events, engine="reference")]
    assert sorted(m.key for m in found) == sorted(reference)
    if not plan.slots[-1].kleene:
        assert [m.key for m in found] == reference


def test_skip_till_next_match_judges_prefixes_on_the_implied_equalities():
    """docs/references.md E11: with ``a.PID = b.PID and b.PID = c.PID`` the closure adds ``a.PID = c.PID``,
    so C2 (PID 2) does not extend the prefix {a1} and STNM finds {a1, c3, b4} on A1 C2 C3 B4 (PIDs 1 2 1
    1), as the reference does; with a Kleene c, ``prev(c.PID) = c.PID`` joins the judge's chains too."""
    events = [{"type": t, "ts": i, "PID": p} for i, (t, p) in enumerate(zip("ACCB", (1, 2, 1, 1)))]
    for query, expected in (
        ("SELECT STNM * PATTERN SEQ(A a, C c, B b) WHERE a.PID = b.PID and b.PID = c.PID", [(0, 2, 3)]),
        ("SELECT STNM * PATTERN SEQ(A a, C+ c, B b) WHERE a.PID = b.PID and b.PID = c.PID", [(0, 2, 3)]),
    ):
        found = RcepPlan(cepkit.parse(query)).run(Stream.from_any(events))
        assert isinstance(found, MatchArrays)
        assert [m.positions for m in found] == expected
        assert [m.positions for m in cepkit.match(query, events, engine="reference")] == expected


@pytest.mark.parametrize("join", ["hybrid", "nested"])
def test_running_query_shapes_at_size(join):
    """Q1 (the inverted V, a chain and two joins) and Q2 (credit card, arithmetic in a join) over seeded
    streams of a few thousand events, partitioned: the kernel finds what the matcher finds."""
    rng = random.Random(3)
    price, stocks = [100.0] * 5, []
    for i in range(1500):
        k = rng.randrange(5)
        price[k] += rng.choice((-1, 1)) * rng.randrange(1, 4)
        stocks.append({"type": "Stock", "ts": i, "company": k, "price": price[k]})
    cards = [
        {"type": "Card", "ts": i, "cardID": rng.randrange(8), "amount": rng.randrange(1, 1000)} for i in range(1500)
    ]
    for query, events in [
        (
            "SEQ(Stock a, Stock+ b, Stock c) WHERE a.price < b.price and prev(b.price) < b.price and "
            "c.price < first(b).price WITHIN 40 PARTITION BY company",
            stocks,
        ),
        (
            "SEQ(Card a, Card+ b) WHERE a.amount >= b.amount * 5 and prev(b.amount) > b.amount "
            "WITHIN 60 PARTITION BY cardID",
            cards,
        ),
        (
            "SELECT STRICT * PATTERN SEQ(Stock a, Stock+ b) WHERE b[i].price > b[i-1].price and a.price < b.price "
            "WITHIN 30 EVENTS PARTITION BY company",
            stocks,
        ),
        # past 64 candidates a slot's matrices are Algorithm 2's, whole (below, columns read lazily)
        ("SEQ(Card a, Card b) WHERE a.amount >= b.amount * 5 WITHIN 600 PARTITION BY cardID", cards),
        (
            "SELECT STRICT * PATTERN SEQ(Stock a, Stock+ b) WHERE b[i].price > b[i-1].price and a.price < b.price "
            "WITHIN 300 EVENTS PARTITION BY company",
            stocks,
        ),
    ]:
        found, columnar, pushed = _both(query, events, join)
        assert isinstance(found, MatchArrays) and len(found) > 100
        assert columnar == pushed


def test_keys_numpy_cannot_compute_take_the_matcher():
    """A string key, or ``ts`` (a datetime's own value), is compared by the language's rules, event by event."""
    events = [{"type": t, "ts": k, "v": v} for k, (t, v) in enumerate([("A", "x"), ("B", "y"), ("B", "z")])]
    found = RcepPlan(cepkit.parse("SEQ(A a, B+ b) WHERE a.v < b.v")).run(Stream.from_any(events))
    assert not isinstance(found, MatchArrays)
    assert sorted(m.positions for m in found) == [(0, 1), (0, 1, 2), (0, 2)]


def test_rows_come_in_output_order_where_an_event_may_extend_a_chain_or_start_the_next_slot():
    """The kernel enumerates left to right, offering each frame's next events in time order, so a trigger's
    rows come out in output order; where one event may both extend a Kleene slot and start the next one
    (same types) the trigger's rows are merge-sorted (``kernel._sort_tied``): the reference's order."""
    rng = random.Random(5)
    events = [{"type": rng.choice("AAB"), "ts": i, "id": rng.randrange(2), "v": rng.randrange(4)} for i in range(40)]
    for query in (
        "SEQ(A+ a, A+ b, ANY c) WHERE prev(a.v) <= a.v WITHIN 5 s PARTITION BY id",
        "SEQ(ANY a, A+ b, A+ c) WHERE a.v < c.v and prev(c.v) <= c.v WITHIN 5 s",
    ):
        found = RcepPlan(cepkit.parse(query)).run(Stream.from_any(events))  # the kernel's rows, as written
        assert isinstance(found, MatchArrays) and len(found) > 50
        reference = cepkit.match(query, events, engine="reference")
        assert [m.positions for m in found] == [m.positions for m in reference]
        assert [m.key for m in cepkit.match(query, events, engine="rcep")] == [m.key for m in reference]


TWIN_QUERIES = [
    "SEQ(A+ a, A+ b, ANY c) WHERE prev(a.v) <= a.v WITHIN 5 s PARTITION BY id",
    "A a ; B b ; C c WITHIN 4 s",
    "SEQ(A a, B+ b, C c) WHERE a.v < b.v and prev(b.v) <= b.v and c.v < last(b).v WITHIN 6 s PARTITION BY id",
    "SELECT STRICT * PATTERN SEQ(A a, B+ b) WHERE a.v != b.v WITHIN 8 EVENTS",
    "SEQ(A+ a, B b) WHERE b.v > a.v * 2 - 3 WITHIN 3 s",
    "SELECT NEXT * PATTERN SEQ(A a, B+ b, C c) WHERE a.v < b.v WITHIN 6 s PARTITION BY id",
    "SELECT LAST * PATTERN SEQ(A+ a, B+ b) WHERE a.v <= b.v WITHIN 5 s",
    "SELECT MAX * PATTERN SEQ(A a, B+ b) WHERE prev(b.v) < b.v WITHIN 6 s",
    "SELECT ROBUST_STNM * PATTERN SEQ(A a, B+ b, C c) WHERE a.v < b.v and prev(b.v) <= b.v WITHIN 5 s PARTITION BY id",
    "SELECT ROBUST_STNM * PATTERN SEQ(A+ a, B b) WHERE b.v > a.v WITHIN 6 EVENTS PARTITION BY id",
]


STNM_TWIN_QUERIES = [
    "SELECT STNM * PATTERN SEQ(A a, B b, C c) WHERE a.v < c.v WITHIN 4 s PARTITION BY id",
    "SELECT STNM * PATTERN SEQ(A a, B+ b, C c) WHERE a.v < b.v and prev(b.v) <= b.v WITHIN 5 s",
    "SELECT STNM * PATTERN SEQ(A+ a, B+ b) WHERE a.v <= b.v and prev(b.v) < b.v WITHIN 6 EVENTS PARTITION BY id",
    "SELECT STNM * PATTERN SEQ(A a, C c, B b) WHERE a.id = b.id and b.id = c.id WITHIN 6 s",
]


def test_python_twin_gives_the_compiled_kernels_matches():
    assert_twins_agree("rcep", "cepkit.engines.rcep.kernel", "recompute", TWIN_QUERIES)


def test_python_twin_of_skip_till_next_match():
    """STNM's walks (a whole stream) and ``skip_till_next`` (micro-batches of 40 events)."""
    assert_twins_agree("rcep", "cepkit.engines.rcep.kernel", "next_match_walks", STNM_TWIN_QUERIES)
    assert_twins_agree("rcep", "cepkit.engines.rcep.kernel", "skip_till_next", STNM_TWIN_QUERIES, batch=40)
