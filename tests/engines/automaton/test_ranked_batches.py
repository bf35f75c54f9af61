"""NEXT, LAST and MAX under PARTITION BY as a micro-batch (issue 21): ``AutomatonMatcher.extend`` computes
the letters, keys, sub-stream indices and gaps column-wise and steps the selectors only at the events a
letter reads (``_select_batch``). Checked against pushing the same events one by one (the same matches,
order and ``emitted_at``, batch cuts anywhere, keys whose window passes within a batch or between two)
and against the reference (``cepkit.match``, which now runs the ranked strategies as one batch)."""

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from strategies import cel_queries, unary_queries
from tests.runtime.test_microbatch import assert_same, many_keys_and_cuts

RANKED = ("NEXT", "LAST", "MAX")
KEYED_RANKED = st.one_of(
    unary_queries(types=("A", "B", "C", "D"), strategies=RANKED).filter(lambda q: "PARTITION BY" in q),
    cel_queries(types=("A", "B", "C", "D"), strategies=RANKED),
    st.sampled_from(
        [f"SELECT {s} * PATTERN A a ; B b WITHIN 8 s PARTITION BY id CONSUME BY PARTITION" for s in RANKED]
        + [f"SELECT {s} * PATTERN A a ; B+ b ; C c WITHIN 5 EVENTS PARTITION BY id" for s in RANKED]
    ),
)


@settings(max_examples=40, deadline=None)
@given(KEYED_RANKED, many_keys_and_cuts(), st.booleans())
def test_ranked_strategies_extend_as_they_push(query, data, keep):
    rows, cuts = data
    assert_same(query, rows, cuts, "frame", keep=keep, engine="automaton")


@settings(max_examples=40, deadline=None)
@given(KEYED_RANKED, many_keys_and_cuts())
def test_ranked_strategies_in_one_batch_agree_with_the_reference(query, data):
    rows, _ = data
    rows = [{k: v for k, v in r.items() if v is not None} for r in rows]
    try:
        expected = cepkit.match(query, rows, engine="reference")
        got = cepkit.match(query, rows, engine="automaton")
    except cepkit.QueryError:  # outside the automaton's fragment
        return
    assert got.positions() == expected.positions(), (query, rows)
    assert [m.key for m in got] == [m.key for m in expected], (query, rows)


def test_a_key_that_comes_back_after_its_window_starts_afresh_within_one_batch():
    """Under a 10 s window both keys are quiet for longer than the window before their B: their NEXT
    selectors restart (no A pairs with the later B); a later batch pairs key 1's new A with its new B.
    Under 30 s the same events pair per key."""
    frame = pd.DataFrame({"type": ["A", "A", "C", "B", "B"], "ts": [0, 1, 20, 21, 22], "id": [1, 2, 3, 1, 2]})
    wide = "SELECT NEXT * PATTERN A a ; B b WITHIN 30 s PARTITION BY id"
    assert sorted(cepkit.match(wide, frame, engine="automaton").positions()) == [(0, 3), (1, 4)]
    matcher = cepkit.Matcher(wide.replace("30 s", "10 s"), engine="automaton")
    assert matcher.extend(frame) == []
    assert [m.positions for m in matcher.extend(pd.DataFrame({"type": ["A", "B"], "ts": [23, 24], "id": [1, 1]}))] == [
        (5, 6)
    ]
