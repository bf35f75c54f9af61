"""``Matcher.extend`` with micro-batches on the ``ses`` engine: the open windows and the batch go through the
kernel together (``batch.evaluate``), and whatever the cuts into batches, pushes, extends and closes, the
emissions (matches, and the events that emitted them, in order) are those of pushing every event, and
the result is the reference's."""

import random

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import set_query_variants, streams

import cepkit
from cepkit.runtime.match_list import MatchList

TYPES = ("C", "P", "D", "B")
SCHEMA = [{"type": t, "ts": 0, "v": 0, "id": 0} for t in TYPES]  # the attributes, known before the first push


@st.composite
def rows_and_plan(draw, types=TYPES, values=6):
    """Events (now and then a punctuation) and a plan: consecutive segments, each pushed or extended."""
    rows = draw(streams(types=types, max_size=14, values=values, ids=2))
    for i in sorted(draw(st.lists(st.integers(0, len(rows)), max_size=2)), reverse=True):
        rows.insert(i, {"type": "PUNCTUATION", "ts": rows[i - 1]["ts"] if i else 0})
    cuts = sorted(set(draw(st.lists(st.integers(0, len(rows)), max_size=5))) | {0, len(rows)})
    ways = st.sampled_from(["push", "extend"])
    return rows, [(start, stop, draw(ways)) for start, stop in zip(cuts, cuts[1:])]


def frame(rows: list) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["type", "ts", "v", "id"]).astype({"ts": float})


def outcome(found) -> list:
    return [(m.key, m.emitted_at) for m in found]


def fed(query, rows, plan, engine="ses", schema=SCHEMA):
    matcher = cepkit.Matcher(query, engine=engine, schema=schema)
    found = []
    for start, stop, way in plan:
        if way == "push":
            found += [m for row in rows[start:stop] for m in matcher.push(row)]
        else:
            got = matcher.extend(frame(rows[start:stop]))
            assert isinstance(got, (list, MatchList))
            found += got
    return found + matcher.close(), matcher


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(set_query_variants(strategies=("ALL", "STNM", "ROBUST_STNM")), rows_and_plan())
def test_batches_emit_what_pushes_emit(query, rows_plan):
    rows, plan = rows_plan
    events = [{k: v for k, v in row.items()} for row in rows]
    pushed, _ = fed(query, events, [(0, len(rows), "push")])
    got, matcher = fed(query, events, plan)
    assert outcome(got) == outcome(pushed), plan
    assert sorted(m.key for m in matcher.matches) == sorted(
        m.key for m in cepkit.match(query, frame(rows), engine="reference")
    )


def chemo(n: int, patients: int, seed: int = 2) -> pd.DataFrame:
    rng = random.Random(seed)
    return pd.DataFrame(
        {
            "type": [rng.choice("CPDBX") for _ in range(n)],
            "ts": [i * 1800.0 for i in range(n)],
            "PID": [rng.randrange(patients) for _ in range(n)],
            "V": [rng.randrange(50) for _ in range(n)],
        }
    )


def test_micro_batches_at_size_run_in_the_kernel():
    """Thousands of events in batches of 1 to 400: the batch run's matches, emitted where the pushes emit
    them, every batch's as columns, and the open windows kept between batches stay within one window
    span of events per patient."""
    events = chemo(4000, 6)
    for query in (
        "SELECT STNM * PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE c.PID = p.PID and p.PID = d.PID and "
        "d.PID = b.PID and prev(p.V) < p.V WITHIN 1 days",
        "PATTERN SEQ({C c, D d}, B b) WHERE c.V < d.V WITHIN 12 EVENTS PARTITION BY PID",
    ):
        batch = cepkit.match(query, events, engine="ses")
        matcher = cepkit.Matcher(query, engine="ses")
        rng, start, found = random.Random(1), 0, []
        while start < len(events):
            stop = start + rng.choice([1, 7, 100, 400])
            got = matcher.extend(events.iloc[start:stop])
            assert isinstance(got, MatchList)
            found += got
            assert len(matcher._inc._tail) <= 6 * 60
            start = stop
        found += matcher.close()
        assert len(found) > 20
        assert sorted((m.key, m.emitted_at) for m in found) == sorted((m.key, m.emitted_at) for m in batch)
