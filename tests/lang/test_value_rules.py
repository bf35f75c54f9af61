"""One set of value rules (``cepkit.lang.values``), four evaluators: the reference (``holds``), the compiled
closures (``compile_condition``), and the two numpy evaluators over columns (``cepkit.engines.unary`` for
a whole stream, ``cepkit.engines.stack.columns`` for rows of partial matches). On random conditions about
one event and random events whose attributes are numbers, strings, booleans, huge integers or missing
(null), all four give the same verdicts, or all raise an ``EventError``; and where the shared column
rules (``condition_values``) decide without falling back, they agree with the reference too."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepkit import EventError, parse
from cepkit.engines.stack.columns import Columns
from cepkit.engines.unary import StreamColumns, unary_truth
from cepkit.lang.compiled import compile_condition
from cepkit.lang.values import NotVectorizable, condition_values
from cepkit.runtime.stream import Stream
from cepkit.semantics.conditions import holds

ATTRIBUTES = ("v", "w", "s")
VALUES = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.sampled_from([0.5, -1.5, 2.0, 2**60, 2**53]),
    st.sampled_from(["x", "y", ""]),
    st.booleans(),
)


def literal(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'"
    return repr(value) if value >= 0 else f"({value})"


@st.composite
def values_text(draw, depth=2) -> str:
    kind = draw(st.sampled_from(["attr", "attr", "literal", "ts"] + (["neg", "arith"] if depth else [])))
    if kind == "attr":
        return f"a.{draw(st.sampled_from(ATTRIBUTES))}"
    if kind == "ts":
        return "a.ts"
    if kind == "literal":
        return literal(draw(VALUES))
    if kind == "neg":
        return f"-({draw(values_text(depth - 1))})"
    op = draw(st.sampled_from(["+", "-", "*", "/"]))
    return f"({draw(values_text(depth - 1))} {op} {draw(values_text(depth - 1))})"


@st.composite
def conditions_text(draw, depth=2) -> str:
    kind = draw(st.sampled_from(["compare", "compare", "in", "bare"] + (["and", "or", "not"] if depth else [])))
    if kind == "compare":
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        return f"{draw(values_text())} {op} {draw(values_text())}"
    if kind == "in":
        options = draw(st.lists(VALUES, min_size=1, max_size=3))
        return f"{draw(values_text(1))} IN ({', '.join(literal(v) for v in options)})"
    if kind == "bare":
        return draw(values_text(1))
    if kind == "not":
        return f"NOT ({draw(conditions_text(depth - 1))})"
    return f"({draw(conditions_text(depth - 1))}) {kind.upper()} ({draw(conditions_text(depth - 1))})"


@st.composite
def events(draw) -> list:
    out = []
    for i in range(draw(st.integers(1, 6))):
        attrs = {name: draw(VALUES) for name in ATTRIBUTES if draw(st.integers(0, 3))}
        out.append({"type": "A", "ts": i, **attrs})
    return out


def verdicts(evaluate):
    """A list of booleans, or "EventError"."""
    try:
        return [bool(x) for x in evaluate()]
    except EventError:
        return "EventError"


@settings(max_examples=400, deadline=None)
@given(conditions_text(), events())
def test_the_four_evaluators_agree_on_values_with_nulls(text, rows):
    cond = parse(f"A a FILTER {text}").ast.pattern.cond
    stream = Stream.from_any(rows)
    every = list(stream)
    n = len(every)

    reference = verdicts(lambda: [holds(cond, {"a": 0}, (e,)) for e in every])

    def access(node):
        return (lambda e: e.get(node.attr)), (lambda e: e.position)

    closure = compile_condition(cond, access)
    assert verdicts(lambda: [closure(e) for e in every]) == reference, text
    assert verdicts(lambda: unary_truth(cond, "a", StreamColumns(stream), np.ones(n, bool))) == reference, text
    assert verdicts(lambda: Columns(stream).test(cond, {"a": np.arange(n)}, n)) == reference, text

    columns = StreamColumns(stream)
    try:
        held = condition_values(cond, lambda node: columns.column(node.attr))
    except NotVectorizable:
        return
    assert reference != "EventError", text  # the column rules never decide what the reference refuses
    assert np.broadcast_to(held, (n,)).tolist() == reference, text


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a.v < 2", [True, False, False, False]),  # null: false
        ("NOT (a.v < 2)", [False, True, True, True]),  # and not of it true
        ("a.v / 0 = a.v / 0", [False] * 4),  # a division by zero is null
        ("a.v != null", [False] * 4),  # a comparison with null is false, != too
        ("a.s < 'b'", [True, False, False, True]),  # strings order, a missing string is null
        ("a.v IN (1, 3)", [True, False, True, False]),
        ("a.v - 2", [True, False, True, False]),  # a bare value: not null and not zero
    ],
)
def test_the_rules_on_worked_values(text, expected):
    rows = [
        {"type": "A", "v": 1, "s": "a"},
        {"type": "A", "v": 2},
        {"type": "A", "v": 3, "s": "c"},
        {"type": "A", "s": "a"},
    ]
    rows[3]["v"] = None
    cond = parse(f"A a FILTER {text}").ast.pattern.cond
    stream = Stream.from_any(rows)
    n = len(rows)
    assert [holds(cond, {"a": 0}, (e,)) for e in stream] == expected
    assert unary_truth(cond, "a", StreamColumns(stream), np.ones(n, bool)).tolist() == expected
    assert Columns(stream).test(cond, {"a": np.arange(n)}, n).tolist() == expected
