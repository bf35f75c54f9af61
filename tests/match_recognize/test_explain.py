"""why_not on MATCH_RECOGNIZE: the verdict agrees with the matches found, and the text names the row and
the condition that failed."""

from hypothesis import HealthCheck, given, settings

from cepkit.errors import QueryError
from cepkit.match_recognize import find, parse, why_not
from cepkit.match_recognize.explain import to_text

from match_recognize.test_examples import TICKER, V_SHAPE
from match_recognize.test_properties import frames, queries


def test_the_v_shape_explained_row_by_row():
    # Day 1 (row 0): STRT maps, then DOWN at day 2 fails (17 < 12 is false).
    text = str(why_not(V_SHAPE, {"ticker": TICKER}, start=0, key="ACME"))
    assert text.startswith("row 0 starts no match.")
    assert "DOWN there is false (DOWN.price < PREV(DOWN.price): 17 < 12)" in text
    found = why_not(V_SHAPE, {"ticker": TICKER}, start=4, key="ACME")
    assert found.verdict == "match" and found.rows == tuple(range(4, 10))
    other = why_not(V_SHAPE, {"ticker": TICKER}, start=4, end=7, key="ACME")
    assert other.verdict == "other match" and "preferment" in other.text
    inside = why_not(V_SHAPE, {"ticker": TICKER}, start=6, key="ACME")
    assert inside.verdict == "inside a match" and "resumes the search at row 9" in inside.text


def test_a_partition_must_be_named():
    try:
        why_not(V_SHAPE, {"ticker": TICKER}, start=0)
    except QueryError as err:
        assert "key=" in str(err)
    else:
        raise AssertionError("no error")


def test_expressions_print_back_to_what_parses():
    query = parse(
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t PATTERN (A B) DEFINE B AS NOT (v + 1) * 2 > "
        "PREV(A.v, 2) AND (w IS NOT NULL OR v IN (1, 'x')) AND -v <> FIRST(A.v))"
    )
    condition = query.define("B")
    again = parse(f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t PATTERN (A B) DEFINE B AS {to_text(condition)})")
    assert again.define("B") == condition


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), frames())
def test_the_verdict_agrees_with_the_matches(text, frame):
    query = parse(text)
    try:
        matched = find(query, frame, "reference")
    except QueryError:
        return
    for part, found in enumerate(matched.found()):
        first, stop = matched.bounds[part]
        key = matched.rows.iloc[first]["k"] if query.partition else None
        starts = {m.start: m for m in found}
        for row in range(stop - first):
            verdict = why_not(query, frame, row, key=key).verdict
            covered = any(m.start < row < m.end for m in found)
            expected = "match" if row in starts else "inside a match" if covered else "no match"
            assert verdict == expected, (row, verdict)
