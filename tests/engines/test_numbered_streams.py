"""``Plan.run`` on a stream numbered otherwise than 0..n-1 (``Stream.take``, ``Stream.numbered``: a part of a
larger stream, as the E-Cube and Spark feed engines) reports the events' positions, every engine alike."""

import numpy as np
import pytest

import cepkit
from cepkit.runtime.matches import Matches
from cepkit.runtime.selection import select_engine
from cepkit.runtime.stream import Stream

ENGINES = [e for e in cepkit.engines().index if e != "reference"]
QUERIES = [
    "SEQ(A a, B b) WITHIN 6",
    "A a ; B b ; C c WITHIN 10",
    "SEQ(A a, B b) WITHIN 6 PARTITION BY id",
    "SEQ(A a, B b) WITHIN 4 EVENTS",
    "SELECT NEXT * PATTERN A a ; B b",
]
WHOLE = Stream.from_any([{"type": "ABC"[i % 3], "ts": i, "id": i % 2} for i in range(30)])
PARTS = {
    "take": WHOLE.take(np.arange(3, 30, 2)),
    "numbered": WHOLE.take(np.arange(10)).numbered(np.arange(100, 110)),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("part", sorted(PARTS))
def test_plan_run_reports_positions(engine, query, part):
    stream = PARTS[part]
    try:
        _, plan = select_engine(cepkit.parse(query), engine, {})
    except cepkit.QueryError as err:
        assert err.engines
        return
    got = Matches(plan.run(stream), engine, stream=stream).positions()
    expected = cepkit.match(query, stream, engine="reference").positions()
    assert got == expected and len(expected)
    assert {p for m in got for p in m} <= set(stream.positions.tolist())
