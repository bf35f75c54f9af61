"""Bad queries raise ``cepkit.QueryError`` (a ValueError) naming the line and column, with the offending
text and a caret under it (docs/language.md §8; issue 2: malformed query, unknown variable, unknown attribute)."""

import pandas as pd
import pytest

import cepkit
from cepkit import QueryError


def caret_lines(err: QueryError) -> tuple:
    """(source line, caret line) of the snippet in the message, without the snippet's indent."""
    lines = str(err).splitlines()
    return lines[1][2:], lines[2][2:]


def assert_points_at(err: QueryError, line: int, column: int, underlined: str):
    """The error is at (line, column) and its caret line underlines exactly ``underlined``."""
    assert (err.line, err.column) == (line, column)
    assert str(err).startswith(f"line {line}, column {column}: ")
    source, carets = caret_lines(err)
    start = len(carets) - len(carets.lstrip(" "))
    assert start == column - 1
    assert source[start : len(carets)] == underlined
    assert set(carets[start:]) == {"^"}


CASES = [
    # (query, line, column, underlined text, words of the message)
    ("SEQ(A a, B b", 1, 13, "", "ends too early"),
    ("A a ; ; B b", 1, 7, ";", "unexpected ';'"),
    ("A a FILTER a.v > 1 ; B b", 1, 20, ";", "unexpected ';'"),
    ("PATTERN SEQ(A a, B b)\nWHERE a.v > > 1", 2, 13, ">", "unexpected '>'"),
    ("A a FILTER a.v = 'open", 1, 18, "'", "unexpected character"),
    ("A a FILTER b.v > 1", 1, 12, "b.v", "unknown variable 'b'"),
    ("PATTERN A a ; B b\nWHERE a.v > c.v", 2, 13, "c.v", "unknown variable 'c'"),
    ("SEQ(A a, B b) RETURN a, z", 1, 25, "z", "unknown variable 'z'"),
    ("SELECT a, bb PATTERN SEQ(A a, B b)", 1, 11, "bb", "unknown variable 'bb'; did you mean 'b'?"),
    ("SEQ(A aa, B b) WHERE a.v > 1", 1, 22, "a.v", "unknown variable 'a'; did you mean 'aa'?"),
    ("(A a OR B b) ; C c FILTER a.v > 1", 1, 27, "a.v", "variable 'a' is not bound where this condition stands"),
    ("A x ; B x", 1, 7, "B x", "defined twice (first defined at line 1, column 1)"),
    ("A a ; (B b ; A a)", 1, 14, "A a", "can never match (unsafe"),
    # CEL calls this one safe (vdef+ leaves out iterated variables, [CEL] §5); the language still
    # defines each name once (docs/language.md §10 rule 11).
    ("(A a)+ ; A a", 1, 10, "A a", "defined once per query, except across OR branches"),
    (
        "SELECT PARTITION_STRICT * PATTERN A a ; B b",
        1,
        1,
        "SELECT PARTITION_STRICT * PATTERN A a ; B b",
        "PARTITION_STRICT needs PARTITION BY",
    ),
    (
        "A a ; B b WITHIN 10 fortnights",
        1,
        21,
        "fortnights",
        "expected CONSUME, EVENTS, LIMIT, PARTITION, RETURN, a time unit",
    ),
    ("A a ; B b WITHIN ten minutes", 1, 18, "ten", "expected a number"),
    ("A a ; B b WITHIN 2.5 EVENTS", 1, 11, "WITHIN 2.5 EVENTS", "must be an integer >= 1"),
    ("A a ; B b WITHIN 0 EVENTS", 1, 11, "WITHIN 0 EVENTS", "must be an integer >= 1"),
    ("SEQ(A a, !B b, C c, !D d, E e) WHERE b.v = d.v", 1, 38, "b.v = d.v", "two different negations"),
    ("A a ; B+ b WHERE b[i-2].v > 1", 1, 20, "i", "only b[i] and b[i-1]"),
    ("A a CONSUME BY EVERYTHING", 1, 16, "EVERYTHING", "expected ANY, PARTITION or NONE"),
    # the grammar's item := '!' item | EXISTS item | cond lets a negation take a bare condition: it means
    # nothing (docs/language.md §2, §8), so a QueryError, not the scoper's NotImplementedError (found by fuzzing)
    ("SEQ(A a, !(a.v > 0), B b)", 1, 10, "!(a.v > 0)", "must apply to a pattern"),
    ("SEQ(A a, EXISTS a.v > 0)", 1, 10, "EXISTS a.v > 0", "must apply to a pattern"),
]


@pytest.mark.parametrize("text, line, column, underlined, words", CASES)
def test_bad_query_points_at_the_problem(text, line, column, underlined, words):
    with pytest.raises(QueryError) as info:
        cepkit.parse(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert words in str(err)
    if underlined:
        assert_points_at(err, line, column, underlined)
    else:  # the end of the text: the caret stands just past it
        assert (err.line, err.column) == (line, column)
        source, carets = caret_lines(err)
        assert carets == " " * (column - 1) + "^" and len(source) == column - 1


@pytest.fixture
def sensors():
    return pd.DataFrame({"type": ["T", "H", "T"], "ts": [0, 1, 2], "tmp": [41, None, 20], "hum": [None, 20, None]})


def test_unknown_attribute_needs_the_stream_and_names_what_exists(sensors):
    with pytest.raises(QueryError) as info:
        cepkit.match("T AS x ; H AS y FILTER x.temp > 40", sensors)
    err = info.value
    assert "unknown attribute 'temp' of 'x': events of type T have tmp" in str(err)
    assert_points_at(err, 1, 24, "x.temp")


def test_unknown_attribute_inside_aggregate_and_partition_key(sensors):
    with pytest.raises(QueryError, match="unknown attribute 'humidity'") as info:
        cepkit.match("T x ; H+ y WHERE avg(y.humidity) > 1", sensors)
    assert_points_at(info.value, 1, 18, "avg(y.humidity)")
    with pytest.raises(QueryError, match="unknown attribute 'sensor' in PARTITION BY") as info:
        cepkit.match("T x ; H y PARTITION BY sensor", sensors)
    assert_points_at(info.value, 1, 24, "sensor")
    with pytest.raises(QueryError, match="the events have: hum, tmp; did you mean 'hum'") as info:
        cepkit.match("T x ; H y WITHIN 5 s\nPARTITION BY tmp, hmu", sensors)
    assert_points_at(info.value, 2, 19, "hmu")


def test_unit_less_window_over_datetime_ts_is_an_error():
    events = pd.DataFrame({"type": ["A", "B"], "ts": pd.to_datetime(["2024-01-01 10:00", "2024-01-01 10:05"])})
    with pytest.raises(QueryError, match="WITHIN needs a unit") as info:
        cepkit.match("A a ; B b WITHIN 10", events)
    assert_points_at(info.value, 1, 11, "WITHIN 10")


def test_several_lines_point_at_the_right_line():
    text = "PATTERN SEQ(A a,\n            B b,\n            C c)\nWHERE a.v = d.v\nWITHIN 5 s"
    with pytest.raises(QueryError) as info:
        cepkit.parse(text)
    assert_points_at(info.value, 4, 13, "d.v")


def test_a_hierarchy_with_a_cycle_is_a_query_error():
    with pytest.raises(QueryError, match="cycle"):
        cepkit.parse("Stock s", hierarchy={"Stock": ["Tech"], "Tech": ["Stock"]})


def test_not_text_is_a_type_error():
    with pytest.raises(TypeError, match="a query is text or a Query"):
        cepkit.parse(42)


def test_a_misspelt_keyword_gets_did_you_mean_and_a_wrong_unit_the_list_of_units():
    """issue 21: ``WITHN`` got "..." and ``3 hrs`` no list of the units."""
    with pytest.raises(QueryError) as err:
        cepkit.parse("SEQ(A a, B b) WITHN 10 s")
    assert err.value.reason.endswith("did you mean WITHIN?") and err.value.column == 15
    with pytest.raises(QueryError) as err:
        cepkit.parse("A a ; B b WHRE a.x = 1")
    assert err.value.reason.endswith("did you mean WHERE?")
    with pytest.raises(QueryError) as err:
        cepkit.parse("A a ; B b WITHIN 3 hrs")
    assert err.value.reason.endswith(
        "; the time units: ms, s, sec, secs, second, seconds, min, mins, minute, minutes, h, hour, hours, d, "
        "day, days; did you mean hours?"
    )  # the format of every "did you mean" (cepkit.errors.did_you_mean): last, a keyword bare
    with pytest.raises(QueryError) as err:
        cepkit.parse("A a ; B b WITHIN 3 fortnights")
    assert "did you mean" not in err.value.reason and "the time units: ms" in err.value.reason


def test_event_types_absent_from_the_stream_are_named_with_the_closest_one():
    events = [{"type": "fog"}, {"type": "DELAYED_DEPARTURE"}, {"type": "STORM"}]
    warnings = cepkit.type_warnings("SEQ(FOG f, !RAIN r, DELAYED_DEPARTUER d, ANY z)", events)
    assert [w.reason for w in warnings] == [
        "no event of type 'FOG' in the stream; did you mean 'fog'?",
        "no event of type 'RAIN' in the stream; its types: DELAYED_DEPARTURE, STORM, fog",
        "no event of type 'DELAYED_DEPARTUER' in the stream; did you mean 'DELAYED_DEPARTURE'?",
    ]
    assert (warnings[0].line, warnings[0].column) == (1, 5)
    hierarchy = cepkit.Hierarchy({"WEATHER": ["fog", "STORM"]})
    assert cepkit.type_warnings("WEATHER w ; DELAYED_DEPARTURE d", events, hierarchy) == []


@pytest.mark.parametrize(
    "text, column, word, hint",
    [
        ("SEQQ(A a, B b)", 1, "SEQQ", "did you mean SEQ?"),
        ("SEQ(A a, B+ b) WHERE avgg(b.v) > 1", 22, "avgg", "did you mean AVG?"),
        ("SELECT NXET * PATTERN SEQ(A a, B b)", 8, "NXET", "did you mean NEXT?"),
        ("SEQ(A a, B b) WHERE foo(a.v) > 1", 21, "foo", "the words there: SEQ, AND, OR, NEXT"),
    ],
)
def test_a_misspelt_operator_aggregate_or_strategy_is_named(text, column, word, hint):
    """``SEQQ(`` and ``avgg(`` said "unexpected '('" and ``SELECT NXET *`` "unexpected '*'", past the word."""
    with pytest.raises(QueryError) as err:
        cepkit.parse(text)
    assert hint in err.value.reason and repr(word) in err.value.reason
    assert_points_at(err.value, 1, column, word)


def test_a_misspelt_clause_after_a_number_gets_did_you_mean():
    """After ``> 1`` a unit may follow, and the list of units hid the misspelt clause."""
    with pytest.raises(QueryError) as err:
        cepkit.parse("SEQ(A a, B b) WHERE a.v > 1 PARTITON BY v")
    assert err.value.reason.endswith("did you mean PARTITION?")


def test_an_unknown_strategy_argument_is_named_with_the_strategies():
    """``strategy="NXET"`` said no engine supports the feature strategy:NXET."""
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 2}]
    with pytest.raises(QueryError, match=r"unknown strategy 'NXET'; the strategies: ALL, .*did you mean 'NEXT'\?"):
        cepkit.match("SEQ(A a, B b)", events, strategy="NXET")
    assert cepkit.match("SEQ(A a, B b)", events, strategy="all").positions() == [(0, 1)]
