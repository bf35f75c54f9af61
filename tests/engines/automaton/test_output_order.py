"""The automaton writes each event's matches in order as it enumerates them and says so
(``MatchArrays.sorted_within_last``), so ``Matches`` does not sort them again: whenever it says so, its rows,
put in order of last position (a stable sort, as ``Matches`` does), are exactly the general ordering of the
same matches (``output_order``, docs/language.md §10.2: identity, order, each once). A group is walked forward
from its first positions (``nodes._forward_group``); where two successors of a node share a position it is
sorted by keys instead (``_write_group``); when neither can order it (ties on positions; shared positions
and a span past a machine word) the kernel says nothing and the general ordering applies. Agreement with
the reference is ``test_against_reference``'s."""

import numpy as np
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.engines.automaton import nodes
from cepkit.engines.automaton.evaluate import Evaluator, Inputs, Outputs, run_all
from cepkit.runtime.stream import Stream
from cepkit.runtime.match_arrays import MatchArrays
from cepkit.runtime.match_record import output_order
from cepkit.runtime.matches import Matches
from cepkit.runtime.selection import select_engine
from strategies import assert_agrees, cel_queries, streams, unary_queries


def batch_rows(query: str, events):
    """What the automaton's batch run returns for ``query``: ``MatchArrays``, or a list (none found, or
    NEXT/LAST/MAX and CONSUME BY ANY across partitions, which replay the matcher)."""
    _, plan = select_engine(cepkit.parse(query), "automaton", {})
    return plan.run(Stream.from_any(events))


def drawn_rows(query: str, events) -> MatchArrays:
    """``batch_rows`` of a drawn query, the formulas the engine refuses and the list results skipped."""
    try:
        found = batch_rows(query, events)
    except cepkit.QueryError as err:
        assume("LP-normal form grows past" not in err.reason)
        raise
    assume(isinstance(found, MatchArrays))
    return found


def forward_walks(query: str, events) -> list:
    """What ``nodes._forward_group`` returns for each group of roots the batch run completes (events
    written, or 0 when it leaves the group to the keys); the stream must be small enough that no root is
    enumerated before the end (the arena and the roots' room do not fill up)."""
    _, plan = select_engine(cepkit.parse(query), "automaton", {})
    program = plan.program
    evaluator = Evaluator(program)
    runs = evaluator.new_runs()
    for batch in Inputs(program, Stream.from_any(events)).batches(program.letters.none):
        runs = evaluator.run(batch, runs)
    roots, n = evaluator.roots, int(evaluator.roots.n[0])
    outputs = Outputs()
    forward = nodes.forward_room(len(evaluator.arena.pos))
    done, first = [], 0
    while first < n:
        last = first + 1
        while last < n and roots.emit[last] == roots.emit[first]:
            last += 1
        done.append(
            nodes._forward_group(
                evaluator.arena,
                roots.node,
                roots.key[first],
                roots.limit[first],
                roots.emit[first],
                first,
                last,
                outputs.pos,
                outputs.var,
                outputs.end,
                outputs.emits,
                0,
                0,
                outputs.spare,
                forward,
            )
        )
        first = last
    return done


def described(m) -> tuple:
    return m.positions, sorted(m.bindings.items()), m.sign


def check_promise(rows: MatchArrays) -> None:
    expected = [described(m) for m in output_order(list(rows))]
    assert [described(m) for m in Matches(rows, "automaton")] == expected
    if rows.sorted_within_last:
        last = [m.positions[-1] for m in rows]
        as_given = [described(rows[i]) for i in np.argsort(last, kind="stable").tolist()]
        assert as_given == expected
        positions = [m.positions for m in rows]
        assert len(set(positions)) == len(positions)
    if rows.groups_in_order:
        assert [described(m) for m in rows] == expected


def checked(rows: MatchArrays) -> None:
    # both kinds occur (--hypothesis-show-statistics)
    event(f"sorted_within_last={rows.sorted_within_last}, groups_in_order={rows.groups_in_order}")
    check_promise(rows)


@settings(max_examples=200, deadline=None)
@given(unary_queries(max_depth=3), streams(min_size=4, max_size=14))
def test_enumeration_order_is_the_output_order(query, events):
    checked(drawn_rows(query, events))


@settings(max_examples=100, deadline=None)
@given(cel_queries(strategies=("ALL", "STRICT", "PARTITION_STRICT")), streams(min_size=4, max_size=12))
def test_enumeration_order_with_every_clause(query, events):
    checked(drawn_rows(query, events))


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["A+ a ; B b", "A+ a ; B+ b ; C c", "(A a ; B b)+ ; C c", "(A+ a OR B b) ; C c"]),
    st.sampled_from(["", " WITHIN 6 s", " WITHIN 5 EVENTS", " PARTITION BY id", " WITHIN 9 s PARTITION BY id"]),
    streams(max_size=16, ids=2),
)
def test_kleene_queries_are_sorted_in_the_kernel(pattern, clauses, events):
    """The Kleene shapes of issue 11 keep the promise (nothing there ties on positions or spans a word)."""
    rows = drawn_rows(pattern + clauses, events)
    assert rows.sorted_within_last
    check_promise(rows)


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(["A+ a ; B b", "A+ a ; B+ b ; C c", "A a ; B b ; C c"]),
    st.sampled_from(["", " WITHIN 40 s", " WITHIN 70 EVENTS", " PARTITION BY id"]),
    streams(types=("A", "B", "C") + ("D",) * 9, min_size=60, max_size=90, ties=False, ids=2),
)
def test_spans_past_a_word_are_walked_forward(pattern, clauses, events):
    """Sparse streams: matches spanning more than 62 positions, windows cutting some starts off."""
    rows = drawn_rows(pattern + clauses, events)
    event(f"a span past 62 positions: {any(m.positions[-1] - m.positions[0] > 62 for m in rows)}")
    assert rows.sorted_within_last
    check_promise(rows)


def test_the_bench_kleene_query_is_sorted_and_agrees_with_the_reference():
    rng = np.random.default_rng(3)
    events = [{"type": str(t), "ts": float(i)} for i, t in enumerate(rng.choice(list("ABCD"), 60))]
    query = "A+ a ; B b WITHIN 12 s"
    rows = batch_rows(query, events)
    assert rows.sorted_within_last and rows.groups_in_order and len(rows) > 100
    check_promise(rows)
    copied = rows.copy()  # the same rows in arrays of their own: the same promises
    assert copied.sorted_within_last and copied.groups_in_order
    check_promise(copied)
    assert_agrees(query, events, "automaton")


def test_ties_on_positions_are_left_to_the_general_ordering():
    """``A a OR A b`` binds one event two ways: same positions, bindings decide the order."""
    events = [{"type": t, "ts": i} for i, t in enumerate("AABAB")]
    query = "(A a OR A b)+ ; B c"
    rows = batch_rows(query, events)
    assert not rows.sorted_within_last
    check_promise(rows)
    assert_agrees(query, events, "automaton")


def test_a_span_past_a_word_is_walked_forward():
    """The forward walk needs no key: matches spanning more than 62 positions are written in order too."""
    events = (
        [{"type": "A", "ts": 0}]
        + [{"type": "C", "ts": i} for i in range(1, 70)]
        + [{"type": "A", "ts": 70}, {"type": "B", "ts": 71}]
    )
    wide = batch_rows("A a ; B b", events)
    assert wide.sorted_within_last and [m.positions for m in wide] == [(0, 71), (70, 71)]
    check_promise(wide)
    assert forward_walks("A a ; B b", events) == [2]
    assert_agrees("A a ; B b", events, "automaton")


def test_after_small_groups_a_span_past_a_word_is_walked_forward_too():
    """Groups after a small one are sorted by keys first; one they cannot key goes to the forward walk."""
    events = [{"type": t, "ts": i} for i, t in enumerate("AB" + "A" + "C" * 70 + "AB")]
    rows = batch_rows("A a ; B b", events)
    assert rows.sorted_within_last and [m.positions for m in rows] == [(0, 1), (0, 74), (2, 74), (73, 74)]
    check_promise(rows)
    assert_agrees("A a ; B b", events, "automaton")


SHARED = "A x ; ((A a ; C c) OR (A b ; D d)) ; B e"  # an A after x may be a (then C) or b (then D)


def test_successors_on_one_position_are_sorted_by_keys():
    """Two successors of a node on one position (here ``a`` and ``b`` after ``x``) would interleave their
    sub-walks: the forward walk leaves the group to the keys, which order it."""
    events = [{"type": t, "ts": i} for i, t in enumerate("AAACDB")]
    assert forward_walks(SHARED, events) == [0]
    rows = batch_rows(SHARED, events)
    assert rows.sorted_within_last and len(rows) == 6
    check_promise(rows)
    assert_agrees(SHARED, events, "automaton")


def test_shared_positions_past_a_word_are_left_to_the_general_ordering():
    events = [{"type": t, "ts": i} for i, t in enumerate("AA" + "F" * 70 + "ACDB")]
    assert forward_walks(SHARED, events) == [0]
    rows = batch_rows(SHARED, events)
    assert not rows.sorted_within_last and len(rows) == 6
    check_promise(rows)
    assert_agrees(SHARED, events, "automaton")


def test_partitions_come_group_by_group_and_are_put_in_order_of_last_position():
    events = [{"type": t, "ts": i, "id": i % 2} for i, t in enumerate("AABBAABB")]
    query = "A+ a ; B b PARTITION BY id"
    rows = batch_rows(query, events)
    last = [m.positions[-1] for m in rows]
    assert rows.sorted_within_last and last != sorted(last)  # sub-stream after sub-stream
    assert not rows.groups_in_order
    check_promise(rows)
    assert_agrees(query, events, "automaton")


def test_outputs_say_unordered_when_a_group_cannot_be_keyed():
    stream = Stream.from_any([{"type": "A", "ts": 0}, {"type": "A", "ts": 1}, {"type": "B", "ts": 2}])
    _, plan = select_engine(cepkit.parse("(A a OR A b)+ ; B c"), "automaton", {})
    outputs = run_all(plan.program, stream).outputs
    assert len(outputs) and not outputs.ordered
    outputs.clear()
    assert outputs.ordered


def test_big_groups_are_walked_forward_or_radix_sorted():
    """Big groups are walked forward, also after small groups (sorted by keys); one the walk leaves to
    the keys is radix-sorted (128 events or more); ties on positions still fall back."""
    dense = [{"type": t, "ts": i} for i, t in enumerate("CAACAAAADAAAB")]  # 9 As: 511 subsets, one group
    rows = batch_rows("A+ a ; B b", dense)
    assert rows.sorted_within_last and len(rows) == 511
    assert forward_walks("A+ a ; B b", dense) == [511]
    check_promise(rows)
    spread = [{"type": t, "ts": i} for i, t in enumerate("AB" * 20 + "C")]  # 210 events on 40 positions
    rows = batch_rows("A a ; B b ; C c", spread)
    assert rows.sorted_within_last and len(rows) == 210
    check_promise(rows)
    shared = [{"type": t, "ts": i} for i, t in enumerate("AACADACADACADAB")]
    query = "A x ; ((A a ; C c) OR (A b ; D d))+ ; B e"
    assert forward_walks(query, shared) == [0]
    rows = batch_rows(query, shared)
    assert rows.sorted_within_last and len(rows) == 370
    check_promise(rows)
    after_small = [{"type": t, "ts": i} for i, t in enumerate("AB")] + [{**e, "ts": e["ts"] + 2} for e in dense]
    rows = batch_rows("A+ a ; B b", after_small)  # sorted by keys until the big group, walked forward
    assert rows.sorted_within_last and len(rows) == 1 + 1023
    check_promise(rows)
    shared_after_small = [{"type": t, "ts": i} for i, t in enumerate("AACB")] + [
        {**e, "ts": e["ts"] + 4} for e in shared
    ]
    rows = batch_rows(query, shared_after_small)
    assert rows.sorted_within_last and len(rows) > 370
    check_promise(rows)
    tied = [{"type": t, "ts": i} for i, t in enumerate("AAAAAB")]  # 3^5 - 1 events, ties on positions
    rows = batch_rows("(A a OR A b)+ ; B c", tied)
    assert forward_walks("(A a OR A b)+ ; B c", tied) == [0]
    assert not rows.sorted_within_last and len(rows) == 242
    check_promise(rows)
    assert_agrees("A+ a ; B b", dense, "automaton")
    assert_agrees(query, shared, "automaton")
    assert_agrees(query, shared_after_small, "automaton")
