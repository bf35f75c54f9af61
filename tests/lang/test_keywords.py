"""docs/language.md §2: keywords are case-insensitive; type and attribute names are case-sensitive."""

import re

import pytest

import cepkit

# Every keyword of the grammar appears in one of these queries.
QUERIES = [
    "SELECT NEXT x, y FROM S WHERE Temp AS x ; Hum AS y FILTER x.tmp > 40 WHERE x.id = y.id WITHIN 10 MINUTES "
    "PARTITION BY id CONSUME BY PARTITION",
    "PATTERN SEQ(A a, !AND(B b, C c), EXISTS OR(D d, E e), ANY z) WHERE a.v IN (1, 2) AND NOT a.w = NULL "
    "OR a.b = TRUE OR a.b = FALSE WITHIN 5 EVENTS CONSUME BY ANY RETURN a",
    "PATTERN A a ; B+ b WHERE FIRST(b).v < LAST(b).v AND PREV(b.v) < b.v AND COUNT(b) > 1 AND SUM(b.v) > 1 "
    "AND AVG(b.v) > 1 AND MIN(b.v) > 1 AND MAX(b.v) > 1 AND b.t < 3 DAYS CONSUME BY NONE",
    "SELECT MAX * PATTERN STRICT(A a) ; NXT(B b) ; LAST(C c) ; STNM(D d) ; ROBUST_STNM(E e) ; ALL(F f)",
    "SELECT PARTITION_STRICT * PATTERN A a ; B b WITHIN 2 H PARTITION BY id",
    "A a ; B b WITHIN 3 SECONDS",
    "A a ; B b WITHIN 3 MS",
    "A a ; B b WITHIN 3 s RETURN a LIMIT 2",
]
KEYWORDS = {
    "select",
    "next",
    "nxt",
    "from",
    "where",
    "as",
    "filter",
    "within",
    "minutes",
    "partition",
    "by",
    "consume",
    "pattern",
    "seq",
    "and",
    "exists",
    "or",
    "any",
    "in",
    "not",
    "null",
    "true",
    "false",
    "events",
    "return",
    "first",
    "last",
    "prev",
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "days",
    "strict",
    "stnm",
    "robust_stnm",
    "all",
    "partition_strict",
    "h",
    "seconds",
    "ms",
    "limit",
}


def respell(text: str, spell) -> str:
    """``text`` with every keyword respelled by ``spell``; names (types, variables, attributes) untouched."""
    return re.sub(r"[A-Za-z_]+", lambda m: spell(m.group(0)) if m.group(0).lower() in KEYWORDS else m.group(0), text)


def mixed_case(word: str) -> str:
    return "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(word))


@pytest.mark.parametrize("text", QUERIES)
@pytest.mark.parametrize("spell", [str.lower, mixed_case], ids=["lower", "mixed"])
def test_keywords_in_any_case_give_the_same_tree(text, spell):
    assert cepkit.parse(respell(text, spell)) == cepkit.parse(text)


def test_every_keyword_is_exercised():
    used = {w.lower() for text in QUERIES for w in re.findall(r"[A-Za-z_]+", text)}
    assert KEYWORDS <= used


def test_names_stay_case_sensitive():
    assert cepkit.parse("T x ; H y").ast != cepkit.parse("t x ; h y").ast
    assert cepkit.parse("T x FILTER x.Tmp > 1").ast != cepkit.parse("T x FILTER x.tmp > 1").ast
    with pytest.raises(cepkit.QueryError, match="unknown variable 'X'"):
        cepkit.parse("T x FILTER X.tmp > 1")
