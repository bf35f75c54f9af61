"""``Matcher.extend`` with micro-batches on the ``rcep`` engine: the kept events and the batch go through the
batch kernel together (``open_window``, ``batch.run``), and whatever the cuts into batches, pushes,
extends and closes, the emissions (matches and the events that emitted them, in order) are those of
pushing every event, the kept result is ``cepkit.match``'s on the whole stream, and its matches the
reference's."""

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import kleene_queries

import cepkit
from cepkit.engines.rcep.batch import runs_columnar
from cepkit.runtime.match_list import MatchList
from cepkit.runtime.selection import select_engine
from tests.engines.ses.test_batches import fed as ses_fed, frame, outcome, rows_and_plan

TYPES = ("A", "B", "C")
SCHEMA = [{"type": t, "ts": 0, "v": 0, "id": 0} for t in TYPES]  # the attributes, known before the first push


def fed(query, rows, plan):
    return ses_fed(query, rows, plan, engine="rcep", schema=SCHEMA)


def in_kernel(query) -> bool:
    try:
        _, plan = select_engine(cepkit.parse(query), "rcep", {})
    except cepkit.QueryError:
        return False
    return runs_columnar(plan)


KERNEL_QUERIES = kleene_queries(types=TYPES).filter(in_kernel)
STNM_QUERIES = kleene_queries(types=TYPES, strategies=("STNM",))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    st.one_of(
        KERNEL_QUERIES, KERNEL_QUERIES, kleene_queries(types=TYPES), STNM_QUERIES.filter(in_kernel), STNM_QUERIES
    ),
    rows_and_plan(TYPES, values=4),
)
def test_batches_emit_what_pushes_emit(query, rows_plan):
    rows, plan = rows_plan
    try:
        pushed, _ = fed(query, rows, [(0, len(rows), "push")])
    except cepkit.QueryError:  # outside rcep's fragment
        return
    got, matcher = fed(query, rows, plan)
    assert outcome(got) == outcome(pushed), plan
    whole = cepkit.match(query, frame(rows), engine="rcep")
    assert matcher.result() == whole
    try:
        reference = cepkit.match(query, frame(rows), engine="reference")
    except cepkit.QueryError:  # its search budget spent (a long Kleene run): rcep's batch run stands for it
        return
    assert sorted(m.key for m in whole) == sorted(m.key for m in reference)


def stock(n: int, keys: int, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "type": rng.choice(["A", "B", "X"], n, p=[0.5, 0.2, 0.3]),
            "ts": np.arange(n, dtype=float),
            "id": rng.integers(0, keys, n),
            "price": rng.integers(0, 100, n),
        }
    )


def test_micro_batches_at_size_run_in_the_kernel():
    """Thousands of events in batches of 1 to 500: ``cepkit.match``'s matches, emitted where the pushes emit
    them, every batch's as columns, and the kept events stay within one window of events per key."""
    events = stock(3000, keys=4)
    for query, bound in (
        ("A+ a ; B b WHERE a[i].price > a[i-1].price WITHIN 20 s PARTITION BY id", 21 * 4),
        ("A a ; A+ b ; B c WHERE a.price < c.price WITHIN 12 EVENTS PARTITION BY id", 11 * 4),
        ("SELECT STRICT * PATTERN A+ a ; B b WITHIN 30 s", 31),
        ("SELECT STNM * PATTERN A a ; A+ b ; B c WHERE prev(b.price) < b.price and a.price < c.price WITHIN 9 s", 10),
    ):
        whole = cepkit.match(query, events, engine="rcep")
        matcher = cepkit.Matcher(query, engine="rcep")
        cuts = np.cumsum(np.random.default_rng(5).integers(1, 500, 40))
        bounds = [0, *cuts[cuts < len(events)].tolist(), len(events)]
        emitted = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            got = matcher.extend(events.iloc[a:b])
            assert isinstance(got, MatchList)
            assert len(matcher._inc.window.stream) <= bound
            emitted += got.arrays.emitted_at.tolist()
        matcher.close()
        assert matcher.result() == whole
        assert emitted == [m.positions[-1] for m in matcher.result()]  # each at its trigger, in order
        assert matcher.result().positions() == whole.positions()


def test_waiting_skip_till_next_matches_cross_batches_and_pushes():
    """STNM with a Kleene last variable: a match waits until its first event's window has passed (a later
    event may extend it), across micro-batches, pushes between them and ``close``: the emissions, in order
    and where they happen, are those of pushing every event."""
    events = stock(1500, keys=3)
    rng = np.random.default_rng(7)
    cuts = np.cumsum(rng.integers(1, 200, 30))
    bounds = [0, *cuts[cuts < len(events)].tolist(), len(events)]
    plan = [(a, b, "push" if rng.random() < 0.2 else "extend") for a, b in zip(bounds[:-1], bounds[1:])]

    def fed(query, plan):
        matcher, found = cepkit.Matcher(query, engine="rcep"), []
        for a, b, way in plan:
            if way == "push":
                found += [m for row in events.iloc[a:b].to_dict("records") for m in matcher.push(row)]
            else:
                found += matcher.extend(events.iloc[a:b])
        return found + matcher.close(), matcher

    for query in (
        "SELECT STNM * PATTERN A a ; B+ b WHERE a.price > b.price and prev(b.price) > b.price WITHIN 15 s "
        "PARTITION BY id",
        "SELECT STNM * PATTERN A a ; A+ b WHERE b[i].price > b[i-1].price and a.price < b.price WITHIN 8 EVENTS "
        "PARTITION BY id",
    ):
        pushed, _ = fed(query, [(0, len(events), "push")])
        got, matcher = fed(query, plan)
        assert len(pushed) > 50 and any(m.emitted_at != m.positions[-1] for m in pushed)
        assert outcome(got) == outcome(pushed)
        whole = cepkit.match(query, events, engine="rcep")
        assert matcher.result() == whole
        assert sorted(outcome(whole)) == sorted(outcome(pushed))
