"""The automaton sorts each event's matches as it enumerates them and says so (``MatchArrays.sorted_within_last``),
so ``Matches`` does not sort them again: whenever it says so, its rows, put in order of last position (a
stable sort, as ``Matches`` does), are exactly the general ordering of the same matches (``output_order``,
LANGUAGE.md §10.2: identity, order, each once); when it cannot key a group (ties on positions, spans past
a machine word) it says nothing and the general ordering applies. Agreement with the reference is
``test_against_reference``'s."""
import numpy as np
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.engines.automaton.evaluate import run_all
from cepkit.runtime.events import Stream
from cepkit.runtime.matches import Matches, MatchArrays, output_order
from cepkit.runtime.registry import select_engine
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


def checked(rows: MatchArrays) -> None:
    event(f"sorted_within_last={rows.sorted_within_last}")      # both kinds occur (--hypothesis-show-statistics)
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
@given(st.sampled_from(["A+ a ; B b", "A+ a ; B+ b ; C c", "(A a ; B b)+ ; C c", "(A+ a OR B b) ; C c"]),
       st.sampled_from(["", " WITHIN 6 s", " WITHIN 5 EVENTS", " PARTITION BY id", " WITHIN 9 s PARTITION BY id"]),
       streams(max_size=16, ids=2))
def test_kleene_queries_are_sorted_in_the_kernel(pattern, clauses, events):
    """The Kleene shapes of issue 11 keep the promise (nothing there ties on positions or spans a word)."""
    rows = drawn_rows(pattern + clauses, events)
    assert rows.sorted_within_last
    check_promise(rows)


def test_the_bench_kleene_query_is_sorted_and_agrees_with_the_reference():
    rng = np.random.default_rng(3)
    events = [{"type": str(t), "ts": float(i)} for i, t in enumerate(rng.choice(list("ABCD"), 60))]
    query = "A+ a ; B b WITHIN 12 s"
    rows = batch_rows(query, events)
    assert rows.sorted_within_last and len(rows) > 100
    check_promise(rows)
    assert_agrees(query, events, "automaton")


def test_ties_on_positions_are_left_to_the_general_ordering():
    """``A a OR A b`` binds one event two ways: same positions, bindings decide the order."""
    events = [{"type": t, "ts": i} for i, t in enumerate("AABAB")]
    query = "(A a OR A b)+ ; B c"
    rows = batch_rows(query, events)
    assert not rows.sorted_within_last
    check_promise(rows)
    assert_agrees(query, events, "automaton")


def test_a_span_past_a_word_is_left_to_the_general_ordering():
    """Matches spanning more than 62 positions cannot be keyed in one word: the general ordering sorts them,
    while a run whose groups all fit keeps the promise."""
    events = [{"type": "A", "ts": 0}] + [{"type": "C", "ts": i} for i in range(1, 70)] + \
        [{"type": "A", "ts": 70}, {"type": "B", "ts": 71}]
    wide = batch_rows("A a ; B b", events)
    assert [m.positions for m in Matches(wide, "automaton")] == [(0, 71), (70, 71)]
    assert not wide.sorted_within_last
    narrow = batch_rows("A a ; B b WITHIN 10 s", events)
    assert narrow.sorted_within_last and [m.positions for m in narrow] == [(70, 71)]
    assert_agrees("A a ; B b", events, "automaton")


def test_partitions_come_group_by_group_and_are_put_in_order_of_last_position():
    events = [{"type": t, "ts": i, "id": i % 2} for i, t in enumerate("AABBAABB")]
    query = "A+ a ; B b PARTITION BY id"
    rows = batch_rows(query, events)
    last = [m.positions[-1] for m in rows]
    assert rows.sorted_within_last and last != sorted(last)      # sub-stream after sub-stream
    check_promise(rows)
    assert_agrees(query, events, "automaton")


def test_outputs_say_unordered_when_a_group_cannot_be_keyed():
    stream = Stream.from_any([{"type": "A", "ts": 0}, {"type": "A", "ts": 1}, {"type": "B", "ts": 2}])
    _, plan = select_engine(cepkit.parse("(A a OR A b)+ ; B c"), "automaton", {})
    outputs = run_all(plan.program, stream).outputs
    assert len(outputs) and not outputs.ordered
    outputs.clear()
    assert outputs.ordered


def test_big_groups_on_few_positions_are_placed_and_others_radix_sorted():
    """A group of 128 events or more is placed by its keys compressed to the positions it uses when they
    are few (``nodes._place_dense``) and radix-sorted otherwise; ties on positions still fall back."""
    dense = [{"type": t, "ts": i} for i, t in enumerate("CAACAAAADAAAB")]       # 9 As: 511 subsets, one group
    rows = batch_rows("A+ a ; B b", dense)
    assert rows.sorted_within_last and len(rows) == 511
    check_promise(rows)
    spread = [{"type": t, "ts": i} for i, t in enumerate("AB" * 20 + "C")]    # 210 events on 40 positions
    rows = batch_rows("A a ; B b ; C c", spread)
    assert rows.sorted_within_last and len(rows) == 210
    check_promise(rows)
    tied = [{"type": t, "ts": i} for i, t in enumerate("AAAAAB")]            # 3^5 - 1 events, ties on positions
    rows = batch_rows("(A a OR A b)+ ; B c", tied)
    assert not rows.sorted_within_last and len(rows) == 242
    check_promise(rows)
    assert_agrees("A+ a ; B b", dense, "automaton")
