"""MATCH_RECOGNIZE conformance cases: the classic examples of the SQL:2016 row pattern recognition
literature (the V-shape over a ticker, empty matches, exclusion, PERMUTE, reluctant quantifiers, SKIP
variants, Flink's WITHIN), each written as our own case with its expected rows worked out by hand from the
standard's rules (docs/language.md §13), and run on both matchers."""

import pandas as pd
import pytest

import cepkit
from cepkit.errors import QueryError

MATCHERS = ["auto", "reference"]

TICKER = pd.DataFrame(
    {
        "symbol": ["ACME"] * 20,
        "day": list(range(1, 21)),
        "price": [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 14, 24, 23, 22],
    }
)

V_SHAPE = """
SELECT * FROM ticker MATCH_RECOGNIZE (
    PARTITION BY symbol
    ORDER BY day
    MEASURES STRT.day AS start_day, LAST(DOWN.day) AS bottom_day, LAST(UP.day) AS end_day
    ONE ROW PER MATCH
    AFTER MATCH SKIP TO LAST UP
    PATTERN (STRT DOWN+ UP+)
    DEFINE DOWN AS DOWN.price < PREV(DOWN.price),
           UP AS UP.price > PREV(UP.price)
)"""


def rows(frame):
    return [tuple(r) for r in frame.itertuples(index=False)]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_v_shape_one_row_per_match(matcher):
    out = cepkit.sql(V_SHAPE, {"ticker": TICKER}, matcher=matcher)
    assert list(out.columns) == ["symbol", "start_day", "bottom_day", "end_day"]
    assert rows(out) == [("ACME", 5, 6, 10), ("ACME", 10, 12, 13), ("ACME", 14, 16, 18)]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_v_shape_all_rows_per_match_running_and_final(matcher):
    query = V_SHAPE.replace(
        "MEASURES STRT.day AS start_day, LAST(DOWN.day) AS bottom_day, LAST(UP.day) AS end_day",
        "MEASURES LAST(DOWN.day) AS bottom, FINAL LAST(UP.day) AS end_day, MATCH_NUMBER() AS n, "
        "CLASSIFIER() AS var, COUNT(*) AS len, FINAL COUNT(*) AS total",
    ).replace("ONE ROW PER MATCH", "ALL ROWS PER MATCH")
    out = cepkit.sql(query, TICKER, matcher=matcher)
    assert list(out.columns) == ["symbol", "day", "bottom", "end_day", "n", "var", "len", "total", "price"]
    got = [
        (r.day, r.n, r.var, None if pd.isna(r.bottom) else int(r.bottom), r.end_day, r.len, r.total)
        for r in out.itertuples()
    ]
    assert got == [
        (5, 1, "STRT", None, 10, 1, 6),
        (6, 1, "DOWN", 6, 10, 2, 6),
        (7, 1, "UP", 6, 10, 3, 6),
        (8, 1, "UP", 6, 10, 4, 6),
        (9, 1, "UP", 6, 10, 5, 6),
        (10, 1, "UP", 6, 10, 6, 6),
        (10, 2, "STRT", None, 13, 1, 4),
        (11, 2, "DOWN", 11, 13, 2, 4),
        (12, 2, "DOWN", 12, 13, 3, 4),
        (13, 2, "UP", 12, 13, 4, 4),
        (14, 3, "STRT", None, 18, 1, 5),
        (15, 3, "DOWN", 15, 18, 2, 5),
        (16, 3, "DOWN", 16, 18, 3, 5),
        (17, 3, "UP", 16, 18, 4, 5),
        (18, 3, "UP", 16, 18, 5, 5),
    ]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_skip_past_last_row_is_the_default(matcher):
    out = cepkit.sql(V_SHAPE.replace("AFTER MATCH SKIP TO LAST UP", ""), {"ticker": TICKER}, matcher=matcher)
    # After the first V (5..10) the search resumes at day 11: 11 (STRT) 12 (DOWN) 13 (UP).
    assert rows(out) == [("ACME", 5, 6, 10), ("ACME", 11, 12, 13), ("ACME", 14, 16, 18)]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_skip_to_next_row_gives_overlapping_matches(matcher):
    data = pd.DataFrame({"t": range(5), "v": [1, 2, 3, 4, 0]})
    query = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES FIRST(A.t) AS s, LAST(A.t) AS e
        AFTER MATCH SKIP TO NEXT ROW PATTERN (A{2,}) DEFINE A AS A.v > 0)"""
    assert rows(cepkit.sql(query, data, matcher=matcher)) == [(0, 3), (1, 3), (2, 3)]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_reluctant_quantifiers_prefer_fewer_rows(matcher):
    data = pd.DataFrame({"t": range(6), "v": [1, 1, 1, 1, 1, 1]})
    greedy = (
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES COUNT(A.*) AS a, COUNT(B.*) AS b "
        "PATTERN (A+ B*) DEFINE A AS v = 1, B AS v = 1)"
    )
    assert rows(cepkit.sql(greedy, data, matcher=matcher)) == [(6, 0)]
    reluctant = greedy.replace("A+ B*", "A+? B*")
    assert rows(cepkit.sql(reluctant, data, matcher=matcher)) == [(1, 5)]
    both = greedy.replace("A+ B*", "A+? B*?")
    assert rows(cepkit.sql(both, data, matcher=matcher)) == [(1, 0)] * 6


@pytest.mark.parametrize("matcher", MATCHERS)
def test_alternation_prefers_the_left_branch(matcher):
    data = pd.DataFrame({"t": range(3), "v": [1, 1, 1]})
    query = (
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH "
        "PATTERN ((B | A)+) DEFINE A AS v = 1, B AS v = 1)"
    )
    assert cepkit.sql(query, data, matcher=matcher)["c"].tolist() == ["B", "B", "B"]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_empty_matches_shown_omitted_and_unmatched_rows(matcher):
    data = pd.DataFrame({"t": range(4), "v": [0, 1, 0, 1]})
    base = (
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES MATCH_NUMBER() AS n, COUNT(*) AS c {rows} "
        "PATTERN (A*) DEFINE A AS v = 1)"
    )
    one = cepkit.sql(base.format(rows="ONE ROW PER MATCH"), data, matcher=matcher)
    # t=0: an empty match; t=1: A; t=2: empty; t=3: A.
    assert rows(one) == [(1, 0), (2, 1), (3, 0), (4, 1)]
    show = cepkit.sql(base.format(rows="ALL ROWS PER MATCH SHOW EMPTY MATCHES"), data, matcher=matcher)
    assert rows(show[["t", "n", "c"]]) == [(0, 1, 0), (1, 2, 1), (2, 3, 0), (3, 4, 1)]
    omit = cepkit.sql(base.format(rows="ALL ROWS PER MATCH OMIT EMPTY MATCHES"), data, matcher=matcher)
    assert rows(omit[["t", "n", "c"]]) == [(1, 2, 1), (3, 4, 1)]
    plus = base.replace("A*", "A+")
    unmatched = cepkit.sql(plus.format(rows="ALL ROWS PER MATCH WITH UNMATCHED ROWS"), data, matcher=matcher)
    assert [(r.t, None if pd.isna(r.n) else int(r.n)) for r in unmatched.itertuples()] == [
        (0, None),
        (1, 1),
        (2, None),
        (3, 2),
    ]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_exclusion_hides_rows_from_all_rows_per_match(matcher):
    data = pd.DataFrame({"t": range(4), "v": [1, 2, 3, 9]})
    query = (
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES CLASSIFIER() AS c, FINAL COUNT(*) AS n "
        "ALL ROWS PER MATCH PATTERN (A {- B+ -} C) DEFINE A AS v = 1, B AS v < 9, C AS v = 9)"
    )
    out = cepkit.sql(query, data, matcher=matcher)
    assert rows(out[["t", "c", "n"]]) == [(0, "A", 4), (3, "C", 4)]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_permute_prefers_the_listed_order(matcher):
    data = pd.DataFrame({"t": range(4), "v": [2, 1, 1, 2]})
    query = (
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH "
        "PATTERN (PERMUTE(A, B)) DEFINE A AS v = 1, B AS v = 2)"
    )
    assert rows(cepkit.sql(query, data, matcher=matcher)[["t", "c"]]) == [(0, "B"), (1, "A"), (2, "A"), (3, "B")]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_anchors_and_subsets(matcher):
    data = pd.DataFrame({"k": ["x", "x", "x", "y", "y"], "t": [0, 1, 2, 0, 1], "v": [1, 2, 3, 5, 4]})
    query = """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY k ORDER BY t
        MEASURES SUM(U.v) AS total, LAST(U.v) AS last_u
        PATTERN (^ A B* $) SUBSET U = (A, B) DEFINE B AS v > PREV(v))"""
    assert rows(cepkit.sql(query, data, matcher=matcher)) == [("x", 6, 3)]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_conditions_on_other_variables(matcher):
    data = pd.DataFrame({"t": range(6), "p": [10, 12, 11, 13, 30, 9]})
    query = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t MEASURES A.t AS a, LAST(B.t) AS b
        PATTERN (A B+) DEFINE B AS B.p > A.p AND B.p < A.p + 5)"""
    found = cepkit.match_recognize.find(cepkit.match_recognize.parse(query), data, matcher)
    assert found.info["matcher"] == ("reference" if matcher == "reference" else "vm")
    out = cepkit.match_recognize.output(found)
    assert [(int(r.a), int(r.b)) for r in out.itertuples()] == [(0, 3)]


def run_on(query, data, matcher):
    """The output rows, after checking which matcher ran: the VM when asked for "auto"."""
    found = cepkit.match_recognize.find(cepkit.match_recognize.parse(query), data, matcher)
    assert found.info["matcher"] == ("reference" if matcher == "reference" else "vm"), found.info
    return rows(cepkit.match_recognize.output(found))


@pytest.mark.parametrize("matcher", MATCHERS)
def test_running_average_in_define(matcher):
    """AVG in DEFINE is running: the rows mapped to A so far and the tried row. From day 1 the averages are
    12, 14.5, 16, 17.25, then 94 / 5 = 18.8 at day 5 (not below 18): A+ stops at day 4. Day 5 (25) fails
    alone; from day 6: 12, 13.5, 15.67, 17.75, then 19.2; days 10 and 11 fail alone; day 12 (15) and then
    20 at day 13; days 13, 14 fail; from day 15: 14, 13, 13.33, 16, 17.4, then 109 / 6 at day 20."""
    query = """SELECT * FROM ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY day
        MEASURES FIRST(A.day) AS first_day, LAST(A.day) AS last_day, COUNT(*) AS n
        PATTERN (A+) DEFINE A AS AVG(A.price) < 18)"""
    assert run_on(query, TICKER, matcher) == [
        ("ACME", 1, 4, 4),
        ("ACME", 6, 9, 4),
        ("ACME", 12, 12, 1),
        ("ACME", 15, 19, 5),
    ]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_count_in_define_bounds_a_run(matcher):
    """A rise of at most three days (COUNT(UP.*) counts the tried row): days 2-5 rise, so the first match
    takes 2-4 and day 5 starts the next; 7-10 rise (7-9, then 10); 13 and 17-18 rise."""
    query = """SELECT * FROM ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY day
        MEASURES FIRST(UP.day) AS first_day, LAST(UP.day) AS last_day
        PATTERN (UP+) DEFINE UP AS price > PREV(price) AND COUNT(UP.*) <= 3)"""
    assert run_on(query, TICKER, matcher) == [
        ("ACME", 2, 4),
        ("ACME", 5, 5),
        ("ACME", 7, 9),
        ("ACME", 10, 10),
        ("ACME", 13, 13),
        ("ACME", 17, 18),
    ]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_aggregates_in_define_skip_nulls(matcher):
    """SQL's aggregates skip nulls. From t=1 (A, 5): U's average at t=2 is 5 (the null skipped), at t=3 6,
    at t=4 (5 + 7 + 1) / 3 < 5 and B.v is counted twice: the match ends at t=3. From t=4 (A, 1): 5 at t=5,
    still 5 over t=6 and t=7 (nulls). MEASURES are FINAL at the last row: B.v counted once, U's average."""
    data = pd.DataFrame({"t": range(1, 8), "v": pd.array([5, None, 7, 1, 9, None, None], dtype="Int64")})
    query = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t
        MEASURES A.t AS a, LAST(B.t) AS last_b, COUNT(B.v) AS nb, AVG(U.v) AS avg_u
        PATTERN (A B+) SUBSET U = (A, B)
        DEFINE A AS v IS NOT NULL, B AS AVG(U.v) >= A.v OR COUNT(B.v) = 0)"""
    assert run_on(query, data, matcher) == [(1, 3, 1, 6.0), (4, 7, 1, 5.0)]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_v_shape_with_logical_offsets(matcher):
    """Flink's documented V-shape, written with logical offsets (Flink takes no PREV in DEFINE): 25 falls
    to 18, 15, 14 and rises to 24, above the down row before the last; worked by hand."""
    ticker = pd.DataFrame(
        {
            "symbol": "ACME",
            "rowtime": pd.Timestamp("2011-04-01 10:00:00") + pd.to_timedelta(range(11), unit="s"),
            "price": [12, 17, 19, 21, 25, 18, 15, 14, 24, 25, 19],
        }
    )
    query = """SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY rowtime
        MEASURES START_ROW.rowtime AS start_tstamp, LAST(PRICE_DOWN.rowtime) AS bottom_tstamp,
                 LAST(PRICE_UP.rowtime) AS end_tstamp
        ONE ROW PER MATCH AFTER MATCH SKIP TO LAST PRICE_UP
        PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
        DEFINE PRICE_DOWN AS (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price)
                             OR PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1),
               PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1))"""
    out = cepkit.sql(query, ticker, matcher=matcher)
    at = lambda s: pd.Timestamp(f"2011-04-01 10:00:0{s}")  # noqa: E731
    assert rows(out) == [("ACME", at(4), at(7), at(8))]


@pytest.mark.parametrize("matcher", MATCHERS)
def test_within_bounds_a_match_in_time(matcher):
    data = pd.DataFrame(
        {
            "ts": pd.to_datetime(["2024-01-01 00:00", "2024-01-01 00:04", "2024-01-01 00:09", "2024-01-01 00:12"]),
            "kind": ["a", "b", "b", "b"],
        }
    )
    query = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES COUNT(B.*) AS bs
        PATTERN (A B+) WITHIN INTERVAL '10' MINUTE DEFINE A AS kind = 'a', B AS kind = 'b')"""
    # 00:12 is 12 minutes after A: outside; 00:09 is inside (Flink: less than the interval after the start).
    assert rows(cepkit.sql(query, data, matcher=matcher)) == [(2,)]


def test_errors_name_line_column_and_suggest():
    # one format with cepkit's own language (cepkit.errors.did_you_mean): the hint last, a keyword bare, a name
    # quoted
    data = pd.DataFrame({"t": [1], "v": [1]})
    with pytest.raises(QueryError, match=r"(?s)line 1, column \d+: unexpected 'PATERN'; expected .*") as err:
        cepkit.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t PATERN (A) DEFINE A AS v > 0)", data)
    assert err.value.reason.endswith("; did you mean PATTERN?")
    with pytest.raises(QueryError) as err:
        cepkit.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t PATTERN (A) DEFINE A AS v > PREVV(v))", data)
    assert (
        err.value.reason == "unknown function 'PREVV'; the functions are PREV, NEXT, FIRST, LAST, COUNT, SUM, "
        "AVG, MIN, MAX, CLASSIFIER, MATCH_NUMBER; did you mean PREV?"
    )
    with pytest.raises(QueryError) as err:
        cepkit.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t PATTERN (A B) DEFINE B AS v > AA.v)", data)
    assert err.value.reason == "'AA' is not a pattern variable or subset; did you mean 'A'?"
    with pytest.raises(QueryError) as err:
        cepkit.sql(
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t PATTERN (A) WITHIN INTERVAL '1' MINUT DEFINE A AS v > 0)", data
        )
    assert err.value.reason.endswith("the units are MILLISECOND, SECOND, MINUTE, HOUR, DAY; did you mean MINUTE?")
    with pytest.raises(QueryError) as err:
        cepkit.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t PATTERN (A) DEFINE A AS vv > 0)", data)
    assert err.value.reason == "no column 'vv' in t; the columns are t, v; did you mean 'v'?"
    with pytest.raises(QueryError) as err:
        cepkit.sql("SELECT * FROM tickr MATCH_RECOGNIZE (ORDER BY t PATTERN (A) DEFINE A AS v > 0)", {"ticker": data})
    assert err.value.reason == "FROM tickr: no such table; the tables are ticker; did you mean 'ticker'?"
    with pytest.raises(QueryError, match="not a variable of the pattern"):
        cepkit.sql("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t PATTERN (A) DEFINE B AS v > 0)", data)
    with pytest.raises(QueryError, match="lands on match 1's first row"):
        cepkit.sql(
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY t AFTER MATCH SKIP TO FIRST A PATTERN (A) DEFINE A AS v > 0)",
            data,
        )
