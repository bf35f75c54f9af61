"""Issue 15: any query text gives a tree or a QueryError with its caret on the right line, never a crash.

The limits (cepkit.lang.limits, docs/limits.md), line breaks other than ``\\n``, keywords used as names, the
caret under ``strategy=``, and the printer on numbers at the edge of the float range.
"""

import pytest

import cepkit
from cepkit.lang import ast as A
from cepkit.lang.limits import MAX_DEPTH, MAX_EVENT_WINDOW
from cepkit.lang.parser import KEYWORDS, _parser, parse_tree
from cepkit.lang.printer import pretty


def error_of(text, **kwargs) -> cepkit.QueryError:
    with pytest.raises(cepkit.QueryError) as caught:
        cepkit.parse(text, **kwargs)
    return caught.value


# ----------------------------------------------------------------------------- nesting depth
def test_parentheses_alone_add_no_depth():
    query = cepkit.parse("A a FILTER " + "(" * 250 + "a.v > 1" + ")" * 250)
    assert query == cepkit.parse("A a FILTER a.v > 1")


@pytest.mark.parametrize(
    "text, where",
    [
        ("A a FILTER " + "not " * 400 + "a.v > 1", "not "),
        ("A a FILTER " + "-" * 500 + "a.v > 1", "-"),
        ("A a FILTER " + " + ".join(["a.v"] * 1000) + " > 1", "a.v"),
        ("SEQ(" * 150 + "A a" + ")" * 150, "SEQ("),
        ("A a" + "+" * 300, "A a"),
    ],
)
def test_nesting_beyond_the_limit_is_a_query_error_with_a_caret(text, where):
    err = error_of(text)
    assert f"nests deeper than {MAX_DEPTH} levels" in err.reason
    assert err.line == 1 and text[err.column - 1 :].startswith(where)


def test_nesting_up_to_the_limit_parses_and_round_trips():
    text = "A a FILTER " + "not " * (MAX_DEPTH - 3) + "a.v > 1"
    query = cepkit.parse(text)
    assert cepkit.parse(str(query)) == query
    sum_text = "A a FILTER " + " + ".join(["a.v"] * (MAX_DEPTH - 2)) + " > 1"
    assert cepkit.match(sum_text, [{"type": "A", "v": 1}]).positions() == [(0,)]


def test_a_tree_built_too_deep_is_refused_before_printing():
    cond = A.Compare(">", A.Attr("a", "v"), A.Literal(1))
    for _ in range(MAX_DEPTH + 5):
        cond = A.BoolNot(cond)
    with pytest.raises(cepkit.QueryError, match="nests deeper"):
        cepkit.parse(A.QueryNode(pattern=A.Filter(A.Atom("A", "a"), cond)))


# ----------------------------------------------------------------------------- numbers
@pytest.mark.parametrize(
    "text, column",
    [
        ("a WITHIN 1e309 EVENTS", 3),
        ("A a WITHIN 1e309", 5),
        ("b WITHIN " + "9" * 310, 3),
        ("A a WITHIN " + "9" * 400, 5),
        ("A a FILTER a.v > 1e309", 18),
        ("A a FILTER a.v > -" + "9" * 400, 18),
        ("A a FILTER a.t > 1e305 days", 18),
    ],
)
def test_numbers_beyond_the_float_range_are_query_errors(text, column):
    err = error_of(text)
    assert "out of range" in err.reason and (err.line, err.column) == (1, column)


@pytest.mark.parametrize("engine", ["reference", "automaton", "stack", "ses", "nested", "rcep", "ecube"])
def test_huge_windows_never_overflow(engine):
    with pytest.raises(cepkit.QueryError, match="counts at most 10\\*\\*15 events"):
        cepkit.match("b WITHIN 9999999999999999999 EVENTS", [], engine=engine)
    events = [{"type": "b", "ts": t} for t in range(3)]
    big = cepkit.match(f"b WITHIN {MAX_EVENT_WINDOW} EVENTS", events, engine=engine)
    assert big.positions() == cepkit.match("b", events, engine="reference").positions()


def test_exact_ints_and_the_largest_floats_round_trip():
    for text in [
        "A a FILTER a.v = 100000000000000000000000000001",
        "A a FILTER a.v < 1.7976931348623157e+308",
        "A a WITHIN 1e300",
        f"A a WITHIN {MAX_EVENT_WINDOW} EVENTS",
    ]:
        tree = parse_tree(text)
        assert parse_tree(pretty(tree)) == tree
        assert "inf" not in pretty(tree)


def test_the_printer_refuses_non_finite_numbers():
    with pytest.raises(ValueError, match="no spelling"):
        pretty(A.QueryNode(pattern=A.Atom("A"), within=A.Window(float("inf"))))


# ----------------------------------------------------------------------------- line breaks
@pytest.mark.parametrize(
    "newline", ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
)
def test_every_line_break_counts_as_str_splitlines_counts_it(newline):
    text = f"A a ;{newline} B b FILTER c.v > 1"
    err = error_of(text)
    assert (err.line, err.column, err.width) == (2, 13, 3)
    assert str(err).endswith("   B b FILTER c.v > 1\n              ^^^")
    comment = f"A a # note{newline}; B b"
    assert cepkit.parse(comment) == cepkit.parse("A a ; B b")
    syntax = error_of(f"A a{newline}{newline} ; B b FILTER @")
    assert (syntax.line, syntax.column) == (3, 15)


def test_the_end_of_the_text_is_on_its_last_line():
    err = error_of("A a ;\r\n B b FILTER\r\n")
    assert (err.line, err.column) == (2, 12) and "ends too early" in err.reason


# ----------------------------------------------------------------------------- keywords as names
def test_every_word_of_the_grammar_but_the_units_is_a_keyword():
    import re

    words = set()
    for terminal in _parser().terminals:
        if terminal.name in (
            "UNIT",
            "NAME",
            "KLEENE_TYPE",
            "COMMENT",
            "WS",
            "STRING",
            "QUOTED_KLEENE",
            "SIGNED_NUMBER",
            "INT",
        ):
            continue
        pattern = re.sub(r"\\.|\(\?i:", "", terminal.pattern.value)  # escapes (\b, \s) and the case flag
        words |= {w.lower() for w in re.findall(r"[A-Za-z_]+", pattern)}
    assert words == KEYWORDS


@pytest.mark.parametrize("word", sorted(KEYWORDS))
def test_a_keyword_used_as_a_name_prints_backquoted_and_reads_back(word):
    tree = A.QueryNode(
        pattern=A.Seq(
            (A.Atom(word, word), A.Plus(A.Atom(word, "b")), A.Compare(">", A.Attr(word, word), A.Agg("count", word)))
        ),
        select=(word,),
        partition_by=("id",),
    )
    assert parse_tree(pretty(tree)) == tree


def test_seq_of_a_keyword_type_round_trips():
    query = cepkit.parse("SEQ(PATTERN a, B b)")
    assert query.variables["a"].type == "PATTERN"
    assert str(query) == "`PATTERN` AS a ; B AS b"
    assert cepkit.parse(str(query)) == query
    assert cepkit.parse("`seq` a ; `ANY`+ b").pattern == A.Seq((A.Atom("seq", "a"), A.Plus(A.Atom("ANY", "b"))))


def test_ecube_runs_a_keyword_type_and_reports_in_the_users_text():
    assert cepkit.match("COUNT", [{"type": "COUNT", "ts": 0}], engine="ecube").positions() == [(0,)]


# ----------------------------------------------------------------------------- the caret under strategy=
@pytest.mark.parametrize("engine", ["auto", "reference", "automaton", "stack"])
def test_strategy_keeps_the_caret_on_the_users_text(engine):
    with pytest.raises(cepkit.QueryError) as caught:
        cepkit.match("A a ; B b\n  FILTER c.v > 1", [], engine=engine, strategy="NEXT")
    assert (caught.value.line, caught.value.column) == (2, 10)
    assert str(caught.value).splitlines()[1:] == ["    FILTER c.v > 1", "           ^^^"]


def test_a_strategy_error_points_at_the_query():
    with pytest.raises(cepkit.QueryError, match="PARTITION_STRICT needs PARTITION BY") as caught:
        cepkit.match("A a ; B b", [], strategy="PARTITION_STRICT")
    assert "  A a ; B b" in str(caught.value)


# ----------------------------------------------------------------------------- long chains
def test_a_long_chain_parses():
    text = " ; ".join(f"A a{i}" for i in range(3000))
    query = cepkit.parse(text)
    assert len(query.pattern.items) == 3000 and cepkit.parse(str(query)) == query
