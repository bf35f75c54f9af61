"""``Matcher.pusher`` on the ``ses`` engine (``engines/ses/step.py``, issue 23): the kept events as growing
arrays and ``kernel.close_windows`` called when an event closes a window that may hold a match; every
push's matches (their order and ``emitted_at``) equal ``Matcher.push``'s, mixed with ``push`` and
``extend`` too, and the result is ``cepkit.match``'s and the reference's."""

from hypothesis import HealthCheck, given, settings
from strategies import set_query_variants, streams

import cepkit
from cepkit.engines.ses.step import SesStep
from tests.runtime.test_pusher import COLUMNS, agree, by_push, by_pusher, gappy_rows, pushed_for_long

TYPES = ("C", "P", "D", "B")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(set_query_variants(strategies=("ALL", "STNM", "ROBUST_STNM")), streams(types=TYPES, max_size=25, null_one_in=4))
def test_the_ses_pusher_returns_what_push_cepkit_match_and_the_reference_return(query, rows):
    expected = agree(query, rows, "ses")
    if by_push(query, rows, "ses")[1]:
        return  # some pushes raised (an attribute a type showed late): those events are not in the result
    events = [{k: v for k, v in row.items() if v is not None} for row in rows]
    found = cepkit.match(query, events, engine="ses")
    keys = sorted(key for key, _, _ in expected)
    assert keys == sorted(m.key for m in found)
    assert keys == sorted(m.key for m in cepkit.match(query, events, engine="reference"))


QUERIES = [
    "A a ; B b ; C c WITHIN 10 s",
    "A+ a ; B b WITHIN 5 s",
    "A a ; B b ; C c WITHIN 10 s PARTITION BY id",
    "SEQ({A a, B+ b}, {C c}) WHERE a.id = c.id WITHIN 6 s",
    "SELECT STNM * A+ a ; B b WHERE a[i].v > a[i-1].v WITHIN 5 s",
    "SELECT ROBUST_STNM * A a ; B b ; C c WHERE a.v < c.v WITHIN 4 s PARTITION BY id",
    "A a ; B b WHERE a.v > 2 AND b.v < a.v WITHIN 3 s",
    "A a ; B b ; C c WITHIN 4 EVENTS PARTITION BY id",
    "SEQ({A a, B+ b}, {C c}) WITHIN 5 EVENTS",
    "SELECT STNM * A+ a ; B b WHERE a[i].v > a[i-1].v WITHIN 6 EVENTS PARTITION BY id",
]


def test_the_step_runs_long_streams_as_push_does():
    """3,000 events (times with gaps longer than the windows, ties) through the step, which compacts and
    grows its arrays: each push's matches are ``push``'s, and the step ran them (no fallback)."""
    rows = gappy_rows(3000)
    for query in QUERIES:
        matcher = cepkit.Matcher(query, engine="ses")
        step = matcher.pusher(COLUMNS)._step
        assert isinstance(step, SesStep), query
        expected, _, _ = by_push(query, rows, "ses")
        got, _, matcher = by_pusher(query, rows, "ses")
        assert got == expected and len(expected) >= 10, query
        assert matcher._inc.stepping is None  # handed back at close
        assert sorted(m.key for m in matcher.matches) == sorted(
            m.key for m in cepkit.match(query, rows, engine="reference")
        )


def test_the_step_keeps_at_most_a_window_and_hands_back_the_open_windows():
    matcher = pushed_for_long("ses")
    kept = matcher._inc.stepping.one.kept
    assert kept.n - kept.lo <= 6 and kept.size <= 64
    matcher.push({"type": "C", "ts": 20000.0, "id": 19999 // 3 % 500})  # the open windows handed back
    assert matcher._inc.stepping is None and sum(len(w) for w in matcher._inc.windows.values()) <= 6


def test_a_join_key_that_is_not_a_number_moves_to_push():
    """A string where the join reads a number: the kernel would not take it, so the step hands back and
    pushes from there; the matches are push's."""
    query = "A a ; B b WHERE a.v != b.v WITHIN 5 s"
    rows = [{"type": "AB"[i % 2], "ts": i, "v": i % 4, "id": 0} for i in range(40)]
    rows[21]["v"] = "x"
    rows[22]["v"] = "y"
    assert agree(query, rows, "ses")
    matcher = cepkit.Matcher(query, engine="ses")
    push = matcher.pusher(COLUMNS)
    for row in rows:
        push(*(row[c] for c in COLUMNS))
    assert push._step.usable is False and matcher._inc.stepping is None


def test_queries_outside_the_kernel_keep_push():
    for query in (
        "A a ; B b WHERE a.v + 1 < b.v WITHIN 3 s",  # a key that is not an attribute
        "A a ; B b WITHIN 3 s RETURN a",
    ):
        assert cepkit.Matcher(query, engine="ses").pusher(COLUMNS)._step is None, query
