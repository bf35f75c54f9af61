"""``Matcher.pusher`` on the ``rcep`` engine (``engines/rcep/step.py``, issue 23): the kept events as
growing arrays and one ``step.recompute_last`` call per trigger; every push's matches (their order and
``emitted_at``) equal ``Matcher.push``'s, mixed with ``push`` and ``extend`` too, and the result is
``cepkit.match``'s and the reference's."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import kleene_queries, streams

import cepkit
from cepkit.engines.rcep.step import RcepStep, runs
from cepkit.runtime.selection import select_engine
from tests.runtime.test_pusher import COLUMNS, agree, by_push, by_pusher, gappy_rows, pushed_for_long

TYPES = ("A", "B", "C")


def stepped(query) -> bool:
    try:
        _, plan = select_engine(cepkit.parse(query), "rcep", {})
    except cepkit.QueryError:
        return False
    return runs(plan)


STEPPED = kleene_queries(types=TYPES, strategies=("ALL", "STRICT", "PARTITION_STRICT", "MAX", "STNM")).filter(stepped)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.one_of(STEPPED, STEPPED, kleene_queries(types=TYPES)), streams(types=TYPES, max_size=25, null_one_in=4))
def test_the_rcep_pusher_returns_what_push_cepkit_match_and_the_reference_return(query, rows):
    try:
        expected, errors, _ = by_push(query, rows, "rcep")
    except cepkit.QueryError:  # outside rcep's fragment
        return
    agree(query, rows, "rcep")
    if errors:
        return  # some pushes raised (an attribute a type showed late): those events are not in the result
    events = [{k: v for k, v in row.items() if v is not None} for row in rows]
    keys = sorted(key for key, _, _ in expected)
    assert keys == sorted(m.key for m in cepkit.match(query, events, engine="rcep"))
    try:
        reference = cepkit.match(query, events, engine="reference")
    except cepkit.QueryError:  # its search budget spent (a long Kleene run): rcep's batch run stands for it
        return
    assert keys == sorted(m.key for m in reference)


QUERIES = [
    "A a ; B b ; C c WITHIN 10 s",
    "A+ a ; B b WITHIN 5 s",
    "A a ; B b ; C c WITHIN 10 s PARTITION BY id",
    "A a ; B b ; C+ c WHERE a.v < c.v WITHIN 6 s",
    "A+ a ; B b WHERE a[i].v > a[i-1].v AND a.id = b.id WITHIN 5 s",
    "SELECT MAX * A a ; B+ b ; C c WITHIN 4 s PARTITION BY id",
    "SELECT NEXT * A+ a ; B b WITHIN 3 s",
    "A a ; B b ; C c WITHIN 6 EVENTS PARTITION BY id",
    "A+ a ; ANY b WHERE b.v > 4 WITHIN 3 s",
    "A a ; B b PARTITION BY id",
    "SELECT STRICT * A a ; B+ b ; C c WITHIN 6 s",
    "SELECT PARTITION_STRICT * A a ; B b WITHIN 5 EVENTS PARTITION BY id",
    "SELECT STRICT * A+ a ; B b WHERE a[i].v >= a[i-1].v PARTITION BY id",
    "SELECT STNM * A a ; B b ; C c WITHIN 4 s",
    "SELECT STNM * A+ a ; B b WHERE a[i].v > a[i-1].v AND a.id = b.id WITHIN 5 s",
    "SELECT STNM * A a ; B+ b ; C c WHERE a.v < c.v WITHIN 6 EVENTS PARTITION BY id",
]


def test_the_step_runs_long_streams_as_push_does():
    """1,500 events (gaps longer than the windows, ties) through the step, which drops, compacts and
    grows its arrays: each push's matches are ``push``'s, and the step ran them."""
    rows = gappy_rows(1500)
    for query in QUERIES:
        assert isinstance(cepkit.Matcher(query, engine="rcep").pusher(COLUMNS)._step, RcepStep), query
        short = rows if "WITHIN" in query else rows[:300]  # (no window: every event stays)
        expected, _, _ = by_push(query, short, "rcep")
        got, _, matcher = by_pusher(query, short, "rcep")
        assert got == expected and len(expected) >= 10, query
        assert matcher._inc.stepping is None  # handed back at close
        assert sorted(m.key for m in matcher.matches) == sorted(m.key for m in cepkit.match(query, short))


def test_the_step_keeps_at_most_a_window():
    matcher = pushed_for_long("rcep")
    kept = matcher._inc.stepping.kept
    assert kept.n - kept.lo <= 12 and kept.size <= 64
    matcher.push({"type": "C", "ts": 20000.0, "id": 0})  # handed back as the matcher's window
    assert matcher._inc.stepping is None and matcher._inc.stats.stored <= 12


def test_queries_outside_the_step_keep_push():
    for query in (
        "A a ; B b WHERE a.v + 1 < b.v WITHIN 3 s",  # a key that is not an attribute
        "A a ; B b WITHIN 3 s RETURN a",
        "SELECT STNM * A a ; B+ b WITHIN 3 s",  # (a match waits: a later b may extend it)
    ):
        assert cepkit.Matcher(query, engine="rcep").pusher(COLUMNS)._step is None, query
