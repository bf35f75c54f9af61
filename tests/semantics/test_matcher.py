"""The reference's incremental plan: re-evaluation of the prefix, matches reported once final
(cepkit.semantics.evaluate, docs/decisions.md)."""

from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from strategies import flat_seq_queries, streams, unary_queries


def pushes(query, stream):
    """[(position pushed, positions reported then)], then the matches reported by close()."""
    matcher = cepkit.Matcher(query, engine="reference")
    steps = [(k, [m.positions for m in matcher.push(e)]) for k, e in enumerate(stream)]
    return steps, [m.positions for m in matcher.close()], matcher


def test_positive_matches_are_reported_on_their_last_event(events):
    steps, closing, _ = pushes("A a ; B b", events("A0 B1 B2"))
    assert steps == [(0, []), (1, [(0, 1)]), (2, [(0, 2)])] and closing == []


def test_trailing_negation_waits_for_an_event_beyond_its_scope(events):
    """docs/language.md §10.4: the match is final once an event with ts > first + w has arrived, or at close()."""
    steps, closing, _ = pushes("SEQ(A a, B b, !C c) WITHIN 5 s", events("A0 B2 X5 X6"))
    assert steps == [(0, []), (1, []), (2, []), (3, [(0, 1)])] and closing == []
    steps, closing, _ = pushes("SEQ(A a, B b, !C c) WITHIN 5 s", events("A0 B2 C4 X9"))
    assert all(not found for _, found in steps) and closing == []
    steps, closing, _ = pushes("SEQ(A a, B b, !C c) WITHIN 5 s", events("A0 B2"))
    assert closing == [(0, 1)]


def test_without_window_a_trailing_negation_waits_for_close(events):
    steps, closing, _ = pushes("SEQ(A a, B b, !C c)", events("A0 B2 X50"))
    assert all(not found for _, found in steps) and closing == [(0, 1)]


def test_trailing_exists_is_final_as_soon_as_a_witness_arrives(events):
    """docs/language.md §10.11: a trailing EXISTS waits like a trailing negation, but a witness settles it."""
    steps, closing, _ = pushes("SEQ(A a, EXISTS B b) WITHIN 3 s", events("A0 B2 X9"))
    assert steps == [(0, []), (1, [(0,)]), (2, [])]


def test_event_window_scope_closes_when_its_last_position_arrives(events):
    steps, _, _ = pushes("SEQ(A a, !C c) WITHIN 2 EVENTS", events("A0 X1 X2"))
    assert steps == [(0, []), (1, [(0,)]), (2, [])]


def test_next_waits_for_the_rivals_it_compares_with(events):
    """A strategy reports a match once every better rival with the same last position is settled."""
    query = "SELECT LAST * FROM S WHERE SEQ(A a, B b, !C c) WITHIN 4 s"
    steps, closing, _ = pushes(query, events("A0 A1 B2 X5 C5 X9"))
    # At X5, a0's match is settled but LAST prefers a1's, whose scope (2, 5] is still open; C5 blocks a1's.
    assert steps[3][1] == [] and steps[4][1] == [(0, 2)] and closing == []


def test_emitted_at_is_the_arrival_of_the_event_that_settled_it(events):
    _, _, matcher = pushes("SEQ(A a, B b, !C c) WITHIN 5 s", events("A0 B2 X6"))
    assert [(m.positions, m.emitted_at) for m in matcher.matches] == [((0, 1), 2)]


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        flat_seq_queries(strategies=("ALL", "NEXT", "STRICT")),
        unary_queries(strategies=("ALL", "LAST", "MAX"), max_depth=2),
    ),
    streams(max_size=8),
    st.sampled_from([None, "ANY"]),
)
def test_incremental_reports_exactly_the_batch_matches(query, events, consume):
    """Pushing event by event then closing reports the batch result, each match once, never a match the
    complete stream does not have (three-valued finality is sound)."""
    if consume:
        query += f" CONSUME BY {consume}"
    expected = {m.key for m in cepkit.match(query, events, engine="reference")}
    steps, closing, matcher = pushes(query, events)
    keys = [m.key for m in matcher.matches]
    assert len(keys) == len(set(keys)) and set(keys) == expected
    for m in matcher.matches:
        assert m.emitted_at is not None and m.emitted_at >= max(m.positions)
