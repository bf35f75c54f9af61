"""RETURN keys reported once by the incremental matchers, and forgotten a window later (docs/language.md §10.2)."""

import random

import pytest

import cepkit
from cepkit.runtime.match_record import Match
from cepkit.runtime.reported_once import ReportedOnce


def test_a_key_is_reported_once_and_forgotten_a_window_after_its_report():
    seen = ReportedOnce(window_seconds=5)
    a, b = Match((0,), {"x": 0}), Match((1,), {"x": 1})
    assert seen.unreported([a, a], now=1.0) == [a]
    assert seen.unreported([a, b], now=6.0) == [b]  # 6 - 5 = 1: a may still recur
    assert len(seen) == 2
    assert seen.unreported([], now=6.5) == [] and len(seen) == 1  # a is forgotten, b (reported at 6) is kept
    assert seen.unreported([b], now=None) == []  # close() never forgets


def test_without_a_time_window_every_key_is_kept():
    seen = ReportedOnce(window_seconds=None)
    assert seen.unreported([Match((0,), {"x": 0})], now=0.0) and not seen.unreported([Match((0,), {"x": 0})], now=1e9)


QUERIES = {  # a projected-away variable makes several matches per reported key
    "automaton": "PATTERN SEQ(A a, B b) WITHIN 3 RETURN a",
    "rcep": "PATTERN SEQ(A a, B+ b) WHERE b[i].v > b[i-1].v WITHIN 3 RETURN a",
    "ses": "PATTERN SEQ({A a, B b}, {C c}) WITHIN 3 RETURN a",
}


@pytest.mark.parametrize("engine", sorted(QUERIES))
def test_long_streams_keep_few_keys_and_the_matcher_equals_the_batch_run(engine):
    rng = random.Random(7)
    events = [{"type": rng.choice("ABC"), "ts": t // 2, "v": rng.randint(0, 9)} for t in range(3000)]
    query = QUERIES[engine]
    batch = cepkit.match(query, events, engine=engine)
    matcher = cepkit.Matcher(query, engine=engine)
    pushed = [m.key for e in events for m in matcher.push(e)] + [m.key for m in matcher.close()]
    assert sorted(pushed) == sorted(m.key for m in batch) and len(batch) > 100
    kept = getattr(matcher._inc, "projected", None) or matcher._inc.reported
    assert len(kept) < 40  # a window's worth (3 s, 2 events a second), not the 3000-event stream's
