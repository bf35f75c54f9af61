"""``cepkit.Matcher`` on endless streams (issue 15): ``keep=False`` returns the matches and retains none, and
a push makes the data checks ``cepkit.match`` makes, judged on the events pushed so far."""

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.runtime.selection import select_engine

STREAM = [{"type": t, "ts": i, "id": i % 2, "v": i % 5} for i, t in enumerate("ABCABBCACBAC" * 3)]


def pushed(matcher, events) -> list:
    return [(m.key, m.sign, m.emitted_at) for m in matcher.extend(events) + matcher.close()]


@pytest.mark.parametrize("engine", ["reference", "automaton", "stack", "ses", "rcep", "nested"])
def test_keep_false_returns_what_keep_true_returns_and_keeps_nothing(engine):
    query = "A a ; B b ; C c WITHIN 5 s PARTITION BY id"
    kept = cepkit.Matcher(query, engine=engine)
    streamed = cepkit.Matcher(query, engine=engine, keep=False)
    expected = pushed(kept, STREAM)
    assert expected and pushed(streamed, STREAM) == expected
    assert [(m.key, m.sign, m.emitted_at) for m in kept.result().deltas] == expected
    for read in (lambda: streamed.result(), lambda: streamed.matches, lambda: streamed.deltas):
        with pytest.raises(ValueError, match="keep=False"):
            read()


def test_keep_false_still_returns_retractions():
    """Aggressive mode: a late C withdraws <a0, b1>; the caller gets the retraction, nothing is kept."""
    events = [{"type": "A", "ts": 0}, {"type": "B", "ts": 2}, {"type": "C", "ts": 1}]
    matcher = cepkit.Matcher("SEQ(A a, !C c, B b) WITHIN 10", engine="stack", disorder="aggressive", keep=False)
    assert [(m.positions, m.sign) for m in matcher.extend(events) + matcher.close()] == [((0, 1), "+"), ((0, 1), "-")]


def test_a_batch_run_logs_emissions_an_incremental_matcher_does_not():
    """The stack matcher's log of emissions serves a batch run's ``deltas`` only."""
    plan = select_engine(cepkit.parse("SEQ(A a, !C c, B b) WITHIN 10"), "stack", {"disorder": "aggressive"})[1]
    matcher = plan.matcher()
    for e in cepkit.runtime.Stream.from_any(STREAM):
        matcher.push(e)
    assert matcher.emissions is None and matcher.info()["emissions"] > 0
    found = cepkit.match("SEQ(A a, !C c, B b) WITHIN 10", STREAM, engine="stack", disorder="aggressive")
    assert len(found.deltas) >= len(found) > 0


# ----------------------------------------------------------------------------- the data checks
ATTRIBUTES = ("v", "w", "id")
EPOCH = dt.datetime(2024, 1, 1)


@st.composite
def checked_queries(draw) -> str:
    """Queries reading attributes the events may lack, partitioned by one, with windows of every kind."""
    a_attr, b_attr = draw(st.sampled_from(ATTRIBUTES)), draw(st.sampled_from(ATTRIBUTES))
    query = draw(
        st.sampled_from(
            [
                f"A a ; B b WHERE a.{a_attr} < b.{b_attr}",
                f"A a ; ANY x WHERE x.{b_attr} > 1",
                f"(A a FILTER a.{a_attr} > 0) ; B b",
                "A a ; B b",
            ]
        )
    )
    query += draw(st.sampled_from(["", " WITHIN 5", " WITHIN 5 s", " WITHIN 3 EVENTS"]))
    key = draw(st.sampled_from([None, *ATTRIBUTES]))
    return query + (f" PARTITION BY {key}" if key else "")


@st.composite
def checked_streams(draw) -> list:
    """Up to 8 events of types A-C, each with some of the attributes; ts numbers or datetimes."""
    dates = draw(st.booleans())
    events = []
    for i in range(draw(st.integers(1, 8))):
        event = {"type": draw(st.sampled_from("ABC")), "ts": EPOCH + dt.timedelta(seconds=i) if dates else i}
        event.update({name: draw(st.integers(0, 3)) for name in draw(st.sets(st.sampled_from(ATTRIBUTES)))})
        events.append(event)
    return events


def first_rejected_prefix(query, events):
    """(i, message) for the shortest prefix events[:i + 1] that ``match`` rejects with a QueryError."""
    for i in range(len(events)):
        try:
            cepkit.match(query, events[: i + 1], engine="reference")
        except cepkit.QueryError as err:
            return i, str(err)
    return None


def first_rejected_push(query, events):
    matcher = cepkit.Matcher(query, engine="reference")
    for i, event in enumerate(events):
        try:
            matcher.push(event)
        except cepkit.QueryError as err:
            return i, str(err)
    return None


@settings(max_examples=150, deadline=None)
@given(checked_queries(), checked_streams())
def test_a_push_is_rejected_exactly_when_match_rejects_the_events_up_to_it(query, events):
    """Unknown attributes, unknown PARTITION BY key, unit-less WITHIN on datetime ts: same push, same
    message. So whenever ``match`` over a stream raises, the Matcher raises at the latest at the first
    event that shows it (never a silent no-match). One designed exception: an attribute that no event of
    the prefix carries, even as a null ("events of type A have no attributes"), is an error for ``match``,
    which sees the whole data, and not for a push, since a later event may carry it (a Matcher's seen data
    drops nulls: ``runtime.api._nowhere``)."""
    pushed, batch = first_rejected_push(query, events), first_rejected_prefix(query, events)
    if pushed is None and batch is not None and "have no attributes" in batch[1]:
        assert "unknown attribute" in batch[1]
        return
    assert pushed == batch


def test_a_rejected_event_is_not_part_of_the_stream():
    matcher = cepkit.Matcher("A a ; B b WHERE b.v > 1")
    assert matcher.push({"type": "A", "ts": 0}) == []
    with pytest.raises(cepkit.QueryError, match="unknown attribute 'v' of 'b'"):
        matcher.push({"type": "B", "ts": 1, "w": 2})
    assert [m.positions for m in matcher.push({"type": "B", "ts": 2, "v": 2})] == [(0, 1)]


def test_schema_judges_pushes_on_the_whole_stream():
    """The first FOG lacks ``pressure``, a later one has it: ``match`` accepts the stream, so a Matcher
    given the stream as ``schema=`` does too; without it, the first FOG is all it knows of FOG."""
    events = [
        {"type": "FOG", "ts": 0, "visib": 1},
        {"type": "RAIN", "ts": 1},
        {"type": "FOG", "ts": 2, "pressure": 990},
        {"type": "RAIN", "ts": 3},
    ]
    query = "FOG f ; RAIN r WHERE f.pressure < 1000"
    expected = cepkit.match(query, events).positions()
    assert expected == [(2, 3)]
    with pytest.raises(cepkit.QueryError, match="pressure"):
        cepkit.Matcher(query).push(events[0])
    matcher = cepkit.Matcher(query, schema=events)
    assert [m.positions for m in matcher.extend(events) + matcher.close()] == expected
    with pytest.raises(cepkit.QueryError, match="pressur"):
        cepkit.Matcher("FOG f ; RAIN r WHERE f.pressur < 1000", schema=events)


def test_extend_takes_slices_of_a_stream_as_columns():
    """A widget's Stream, cut with ``Stream.take(slice)``, goes through ``extend`` without conversion; a slice
    that does not start at the next position is refused (issue 21)."""
    from cepkit.runtime import Stream

    events = [{"type": "AB"[i % 2], "ts": i, "v": i % 3} for i in range(60)]
    stream = Stream.from_any(events)
    query = "SEQ(A a, B b) WHERE a.v = b.v WITHIN 9"
    matcher = cepkit.Matcher(query, engine="stack", schema=stream)
    assert matcher.columnar
    for start in range(0, 60, 25):
        matcher.extend(stream.take(slice(start, start + 25)))
    matcher.close()
    assert matcher.result().positions() == cepkit.match(query, events, engine="reference").positions()
    with pytest.raises(ValueError, match="first event has position 30, but this Matcher expects position 0"):
        cepkit.Matcher(query, engine="stack").extend(stream.take(slice(30, 40)))
    # every engine takes micro-batches as columns but the reference, which re-evaluates on each push
    columnar = {e: cepkit.Matcher("A a ; B b WITHIN 5", engine=e).columnar for e in cepkit.engines().index}
    assert [e for e, yes in columnar.items() if not yes] == ["reference"]
