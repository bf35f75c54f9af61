"""A punctuation of every type at once, ``{"type": "PUNCTUATION", "ts": t, "of": "*"}`` (issue 24): in the
conservative mode it completes every type the query reads (the ANY type too) through t, so matches come out
at the punctuation instead of at ``close`` (with an EVENTS window and no ``max_delay`` nothing else
completes a type), an event at or below it is dropped and listed, and the net result is the reference's
over the stream without the dropped events."""

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.errors import QueryError
from cepkit.runtime.delays import Punctuations
from strategies import flat_seq_queries, reference_without, shuffled_arrivals, streams
from tests.runtime.test_disorder import keys

ENGINES = ["automaton", "stack", "ses", "rcep", "nested"]


def every(ts) -> dict:
    return {"type": "PUNCTUATION", "ts": ts, "of": "*"}


def ev(spec: str) -> list:
    return [{"type": token[0], "ts": int(token[1:])} for token in spec.split()]


def pushed(query, events, engine):
    matcher = cepkit.Matcher(query, engine=engine, disorder="conservative")
    return [[m.positions for m in matcher.push(e)] for e in events], [m.positions for m in matcher.close()], matcher


def test_a_star_punctuation_completes_every_type_and_the_any_type():
    p = Punctuations()
    p.punctuate("A", 3.0)
    p.punctuate("*", 5.0)
    assert (p.frontier("A"), p.frontier("B"), p.frontier(None)) == (5.0, 5.0, 5.0)
    p.punctuate("B", 9.0)
    assert (p.frontier("A"), p.frontier("B"), p.frontier(None)) == (5.0, 9.0, 5.0)


@pytest.mark.parametrize("engine", ["automaton", "stack", "rcep", "nested"])
def test_an_events_window_releases_at_each_star_punctuation(engine):
    """``WITHIN 3 EVENTS`` and no ``max_delay``: before, only ``close`` released anything."""
    stream = ev("A1 B3 D6") + [every(6)] + ev("A8 B9") + [every(9)]
    each, at_close, matcher = pushed("A a ; B b WITHIN 3 EVENTS", stream, engine)
    assert each == [[], [], [], [(0, 1)], [], [], [(4, 5)]] and at_close == []
    named = ev("A1 B3 D6") + [{"type": "PUNCTUATION", "ts": 6, "of": "A"}]
    assert pushed("A a ; B b WITHIN 3 EVENTS", named, engine)[0] == [[], [], [], []]  # B still open


@pytest.mark.parametrize("engine", ["stack", "nested"])
@pytest.mark.parametrize(
    "query, released", [("SEQ(A a, B b, !C c, D d) WITHIN 10", (0, 1, 2)), ("SEQ(A a, !ANY x, B b) WITHIN 10", (0, 1))]
)
def test_a_negation_scope_closes_at_a_star_punctuation(engine, query, released):
    """A negated ANY was only completed by ``max_delay``; a late event below the punctuation is dropped."""
    stream = ev("A1 B3 D6") + [every(6), {"type": "C", "ts": 4}]
    each, at_close, matcher = pushed(query, stream, engine)
    assert each[3] == [released] and at_close == []
    result = cepkit.match(query, stream, engine=engine, disorder="conservative")
    assert result.info["dropped"] == [4]
    assert result.positions() == cepkit.match(query, stream[:4], engine="reference").positions()


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from(ENGINES))
def test_star_punctuations_keep_the_result_exact(data, engine):
    """Random flat sequences (negations included), arrivals at most 3 places late, a ``*`` punctuation
    after every few arrivals (at a ts some later arrivals may break: those are dropped): the net result is
    the reference's over the stream without the dropped events, and a conservative Matcher releases
    before ``close`` what the punctuations complete."""
    query = data.draw(flat_seq_queries(joins=False))
    try:
        cepkit.Matcher(query, engine=engine, disorder="conservative")
    except QueryError:
        assume(False)
    arrived = shuffled_arrivals(data.draw(streams(min_size=3, max_size=14, ties=False)), data.draw, max_delay=3)
    stream = []
    for i, e in enumerate(arrived):
        stream.append(e)
        if i % 4 == 3:
            stream.append(every(max(x["ts"] for x in arrived[: i + 1]) - data.draw(st.integers(0, 4))))
    result = cepkit.match(query, stream, engine=engine, disorder="conservative")
    assert keys(result) == reference_without(query, stream, skip=set(result.info.get("dropped", ())))
