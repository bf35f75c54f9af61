"""NEXT/LAST/MAX(φ) inside a pattern compiled by [CEL] Theorem 4's closure (docs/automaton-engine.md,
``closure.py``): the selection becomes part of the letters, so it runs wherever φ stands (inside ``+``,
around another selection, with conditions on enclosing variables, under every top-level strategy and
CONSUME BY), always agreeing with the reference."""

import pytest
from hypothesis import assume, given, settings

import cepkit
from cepkit.lang import ast as A
from cel_formulas import PHI1, PHI2, PHI3
from cepkit.datasets import cel_fire_sensors
from strategies import assert_agrees, selection_everywhere_queries, streams
from tests.runtime.test_microbatch import assert_same, many_keys_and_cuts

RANKED = ("NEXT", "LAST", "MAX")

RANKED = ("NEXT", "LAST", "MAX")


def ev(text: str, **columns) -> list:
    """``"A1 B2"``: events of type A at ts 1, B at ts 2 (one letter, then the ts)."""
    return [
        {"type": tok[0], "ts": int(tok[1:]), **{k: v[i] for k, v in columns.items()}}
        for i, tok in enumerate(text.split())
    ]


def runs_by_closure(query: str) -> bool:
    """Where the closure applies: no window, no STRICT around a selection, no selection around or inside
    a MAX."""
    parsed = cepkit.parse(query)
    ranked = [n for n in parsed.ast.pattern.walk() if isinstance(n, A.Strategy) and n.name in RANKED]
    strict = [n for n in parsed.ast.pattern.walk() if isinstance(n, A.Strategy) and n.name == "STRICT"]
    nested = any(i is not o and any(n is i for n in o.pattern.walk()) for o in ranked for i in ranked)
    with_max = any(n.name == "MAX" for n in ranked)
    return parsed.within is None and not strict and parsed.strategy != "STRICT" and not (with_max and nested)


@settings(max_examples=150, deadline=None)
@given(selection_everywhere_queries(), streams())
def test_agrees_with_the_reference_wherever_the_selection_stands(query, events):
    """The closure compiles every query it applies to (none is refused) and finds the reference's matches;
    the others run by filtering or are refused, naming the engines that can run them."""
    if not runs_by_closure(query):
        try:
            cepkit.match(query, [], engine="automaton")
        except cepkit.QueryError:
            assume(False)
    try:
        cepkit.match(query, events, engine="reference")
    except cepkit.QueryError as err:  # a nested + over a longer stream: past the reference's budget
        assume("search budget" not in err.reason)
        raise
    got = assert_agrees(query, events, "automaton")
    if runs_by_closure(query):
        assert got.info["nested_selection"] == "closure"


@pytest.mark.parametrize(
    "query, stream, expected",
    [
        # refused by the filtering plan: inside +, nested, under a top strategy, CONSUME BY, outer conditions
        # the second iteration's rivals include (A1, B6), which starts inside the first: no two iterations
        ("(NEXT(A a ; B b) ; C c)+", "A1 A2 B3 C4 A5 B6 C7", [(0, 2, 3), (0, 2, 6), (0, 5, 6)]),
        ("NEXT(LAST(A a ; B b) ; C c) ; D d", "A1 A2 B3 C4 A5 B6 C7 D8", None),
        ("SELECT LAST * PATTERN NEXT(A a ; B b) ; C c", "A1 A2 B3 A4 B5 C6", None),
        ("NEXT(A a ; B b) ; C c CONSUME BY ANY", "A1 B2 C3 A4 B5 C6 C7", None),
        ("A x ; LAST((B b FILTER x.v > 2) OR C c) ; D d", "A0 B1 C2 D3 A4 B5 D6", None),
        ("A a ; LAST(B+ b ; C c) ; D d PARTITION BY id", "A1 A2 B3 B4 B5 C6 C7 D8 D9", None),
        ("(MAX(A a ; B+ b) ; C c)+", "A1 B2 B3 C4 A5 B6 C7", None),
        ("SELECT NEXT * PATTERN MAX(A a ; B+ b) ; C c CONSUME BY ANY", "A1 B2 A3 B4 C5 B6 C7", None),
    ],
)
def test_queries_the_filtering_plan_refused(query, stream, expected):
    events = ev(stream, v=list(range(len(stream.split()))), id=[i % 2 for i in range(len(stream.split()))])
    got = assert_agrees(query, events, "automaton")
    assert got.info["nested_selection"] == "closure"
    assert len(got) > 0
    if expected is not None:
        assert got.positions() == expected


def test_a_window_keeps_the_filtering_plan():
    """Under a window a better run of φ may leave the window before φ's match ends, so the tracker's
    classes (one run per state) are not enough: the filtering plan runs, and says so."""
    events = ev("A1 A3 B5 C6")
    got = assert_agrees("NEXT(A a ; B b) ; C c WITHIN 3", events, "automaton")
    assert got.info["nested_selection"] == "filter"
    assert got.positions() == [(1, 2, 3)]


@settings(max_examples=60, deadline=None)
@given(selection_everywhere_queries(), streams(max_size=12))
def test_the_matcher_agrees_with_the_run(query, events):
    """Pushed event by event (each key's trackers in the matcher), the same matches as the batch run."""
    assume(runs_by_closure(query))
    matcher = cepkit.Matcher(query, engine="automaton")
    pushed = [m.key for e in events for m in matcher.push(e)] + [m.key for m in matcher.close()]
    assert sorted(pushed) == sorted(m.key for m in cepkit.match(query, events, engine="automaton"))


@settings(max_examples=40, deadline=None)
@given(selection_everywhere_queries(types=("A", "B", "C", "D")), many_keys_and_cuts())
def test_micro_batches_extend_as_they_push(query, data):
    """``Matcher.extend`` carries each key's trackers from batch to batch: cut anywhere, the same matches
    as pushing the events one by one."""
    assume(runs_by_closure(query))
    rows, cuts = data
    assert_same(query, rows, cuts, "frame", engine="automaton")


@pytest.mark.parametrize("position0", ["T", "H"])
@pytest.mark.parametrize(
    "formula, name, expected",
    [
        (PHI1, "NEXT", [(1, 2), (1, 8)]),  # [CEL] §3's strategies on S: [paper], full sets derived
        (PHI1, "LAST", [(1, 2), (5, 8)]),
        (PHI2, "NEXT", [(1, 2), (2, 5), (1, 8)]),
        (PHI2, "LAST", [(1, 2), (2, 5), (5, 8)]),
        (PHI3, "NEXT", [(3, 4, 6, 7)]),
        (PHI3, "LAST", [(3, 4, 6, 7)]),
        (PHI1, "MAX", [(1, 2), (1, 8), (5, 8)]),
        (PHI2, "MAX", [(1, 2), (2, 5), (1, 8), (5, 8)]),
        (PHI3, "MAX", [(3, 4, 6, 7)]),
    ],
)
def test_the_papers_strategies_as_sub_patterns(formula, name, expected, position0):
    """[CEL]'s strategy examples on the running stream S, the strategy written around the formula (a
    sub-pattern, compiled by the closure) give the paper's outputs; followed by any later event, each
    output extends to every later position."""
    events = cel_fire_sensors(position0)
    got = cepkit.match(f"{name}({formula})", events, engine="automaton")
    assert got.info["nested_selection"] == "closure"
    assert got.positions() == expected
    later = cepkit.match(f"{name}({formula}) ; ANY w", events, engine="automaton").positions()
    assert sorted(later) == sorted(c + (w,) for c in expected for w in range(c[-1] + 1, len(events)))
