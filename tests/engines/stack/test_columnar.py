"""The columnar in-order run (``cepkit.engines.stack.batch``) against the incremental stacks and the
reference, and its vectorized conditions (``columns``) against the compiled closures."""

import cepkit
import numpy as np
import pytest
from cepkit.engines.stack import batch
from cepkit.engines.stack.columns import Columns
from cepkit.engines.stack.conditions import compile_condition
from cepkit.lang import ast as A
from cepkit.runtime.event_record import Event
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import assert_agrees, flat_seq_queries, streams


def incremental(query, events):
    """The incremental matcher's emissions (``Matches.deltas`` came from it before the columnar run)."""
    plan = cepkit.engines.stack.StackEngine().compile(cepkit.parse(query))
    matcher = plan.matcher()
    found = [m for event in cepkit.runtime.Stream.from_any(events) for m in matcher.push(event)]
    return found + matcher.close()


@settings(max_examples=150, deadline=None)
@given(flat_seq_queries(strategies=("ALL", "STRICT", "PARTITION_STRICT", "STNM"), exists=True), streams(max_size=14))
def test_columnar_run_emits_what_the_incremental_matcher_emits_and_when(query, events):
    """Same matches, same ``emitted_at``: a trailing negation waits for its scope to pass, a trailing EXISTS
    for its witness (docs/language.md §10.11)."""
    columnar = cepkit.match(query, events, engine="stack")
    expected = sorted((m.key, m.emitted_at) for m in incremental(query, events))
    assert sorted((m.key, m.emitted_at) for m in columnar.deltas) == expected
    assert [m.emitted_at for m in columnar.deltas] == sorted(m.emitted_at for m in columnar.deltas)


@settings(max_examples=60, deadline=None)
@given(flat_seq_queries(), streams(max_size=14))
def test_small_chunks_give_the_same_matches(query, events):
    whole = cepkit.match(query, events, engine="stack")
    chunk = batch.CHUNK
    batch.CHUNK = 2  # anchors are extended two at a time: every chunk boundary is exercised
    try:
        assert_agrees(query, events, "stack")
        # each chunk's rows are written out as they are made: the same emissions in the same order
        assert [(m.key, m.emitted_at) for m in cepkit.match(query, events, engine="stack").deltas] == [
            (m.key, m.emitted_at) for m in whole.deltas
        ]
    finally:
        batch.CHUNK = chunk


def test_punctuations_take_no_position_in_order():
    events = [
        {"type": "A", "ts": 1, "id": 1},
        {"type": "PUNCTUATION", "of": "A", "ts": 1},
        {"type": "B", "ts": 2, "id": 1},
        {"type": "B", "ts": 3, "id": 2},
    ]
    m = cepkit.match("SEQ(A a, B b) WITHIN 2 EVENTS PARTITION BY id", events, engine="stack")
    assert m.positions() == [(0, 2)]


def test_a_long_stream_with_wide_windows_and_many_partitions_agrees_with_the_stacks():
    rng = np.random.default_rng(5)
    events = [
        {"type": "ABCD"[rng.integers(4)], "ts": int(t), "id": int(rng.integers(40)), "v": int(rng.integers(9))}
        for t in np.cumsum(rng.integers(0, 3, 3000))
    ]
    query = (
        "SEQ(A a, !C c, B b, D d) WHERE a.id = b.id and b.id = d.id and c.id = a.id and a.v < d.v "
        "WITHIN 30 PARTITION BY v"
    )
    assert sorted(m.key for m in cepkit.match(query, events, engine="stack")) == sorted(
        m.key for m in incremental(query, events)
    )


# ----------------------------------------------------------------------------- vectorized conditions
VALUES = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.sampled_from([0.5, -1.5, 2.0, 2**60, True, False]),
    st.sampled_from(["a", "b", ""]),
)
OPERANDS = st.one_of(
    st.builds(A.Attr, st.sampled_from(["x", "y"]), st.sampled_from(["v", "w", "ts"])), st.builds(A.Literal, VALUES)
)


def _values(depth=2):
    if depth == 0:
        return OPERANDS
    inner = _values(depth - 1)
    return st.one_of(OPERANDS, st.builds(A.Arith, st.sampled_from("+-*/"), inner, inner), st.builds(A.Neg, inner))


CONDITIONS = st.recursive(
    st.one_of(
        st.builds(A.Compare, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _values(), _values()),
        st.builds(A.In, _values(1), st.lists(st.builds(A.Literal, VALUES), min_size=1, max_size=3).map(tuple)),
        _values(1),
    ),
    lambda inner: st.one_of(
        st.builds(A.BoolOp, st.sampled_from(["and", "or"]), st.lists(inner, min_size=2, max_size=2).map(tuple)),
        st.builds(A.BoolNot, inner),
    ),
    max_leaves=4,
)


def _event(position, values):
    v, w = values
    return Event("A", position, {k: x for k, x in (("v", v), ("w", w)) if x is not None}, position, float(position))


@settings(max_examples=400, deadline=None)
@given(CONDITIONS, st.lists(st.tuples(VALUES, VALUES), min_size=1, max_size=8), st.data())
def test_vectorized_conditions_follow_the_closures(cond, values, data):
    """Same truth values as the closures on every row, or the same EventError (nulls, mixed kinds, big
    integers, booleans, division by zero)."""
    events = [_event(p, v) for p, v in enumerate(values)]
    rows = {
        var: np.array(data.draw(st.lists(st.integers(0, len(events) - 1), min_size=3, max_size=3)))
        for var in ("x", "y")
    }
    closure = compile_condition(cond)
    try:
        expected = [closure({var: events[i] for var, i in zip(rows, row)}) for row in zip(*rows.values())]
    except cepkit.EventError:
        with pytest.raises(cepkit.EventError):
            Columns(events).test(cond, rows)
        return
    assert Columns(events).test(cond, rows).tolist() == expected


def test_a_constant_division_by_zero_is_null_in_the_columnar_run():
    """Found by `make soak`: `0 / 0` between two literals raised ZeroDivisionError in numpy's place;
    a division by zero is null (docs/language.md §10), so the condition is false and `not` of it true."""
    events = [{"type": "A", "ts": 0, "v": 1}, {"type": "B", "ts": 1, "v": 0}]
    for cond, expected in (("0 / 0 = 1", []), ("not (0 / 0 = 1)", [(0, 1)]), ("a.v / 0 = 1", [])):
        query = f"SEQ(A a, B b) WHERE {cond}"
        assert cepkit.match(query, events, engine="stack").positions() == expected
        assert cepkit.match(query, events, engine="reference").positions() == expected


def test_unorderable_values_name_the_event_in_the_columnar_run():
    events = [{"type": "A", "ts": 0, "v": 1}, {"type": "A", "ts": 1, "v": "x"}, {"type": "B", "ts": 2, "v": 0}]
    with pytest.raises(cepkit.EventError) as err:
        cepkit.match("SEQ(A a, B b) WHERE a.v > 0", events, engine="stack")
    assert err.value.position == 1 and "cannot compare" in str(err.value)


def test_equality_classes_follow_python_equality():
    """1, 1.0 and True are one equality-partition value, as in the stacks' dict (a null joins nothing)."""
    events = [
        {"type": "A", "ts": 0, "k": 1},
        {"type": "A", "ts": 1, "k": True},
        {"type": "A", "ts": 2},
        {"type": "B", "ts": 3, "k": 1.0},
        {"type": "B", "ts": 4, "k": "1"},
    ]
    m = cepkit.match("SEQ(A a, B b) WHERE a.k = b.k", events, engine="stack")
    assert m.positions() == [(0, 3), (1, 3)]
    assert m.info["partial_matches"] == 2  # b4's class ("1") has no A: only b3 is extended


@pytest.mark.parametrize(
    "query",
    [
        "ANY WHERE true",
        "A WHERE 5",
        "SEQ(A, A) WHERE 1 = 1",
        "SEQ(A, A) WHERE null",
        "SEQ(A, !B, A) WHERE true",
        "SEQ(A, EXISTS B, A, 1 = 1)",
    ],
)
def test_conditions_binding_no_variable_are_tested_per_row(query):
    """A condition over unnamed atoms binds no variable (docs/language.md §2: `Type [AS] var`, §3: literals; a
    null is false, docs/decisions.md "Nulls"): its column is one value broadcast to every row. Found by
    fuzzing (`ANY WHERE null` raised IndexError in the columnar run)."""
    events = [{"type": t, "ts": i} for i, t in enumerate("AABA")]
    assert [m.key for m in cepkit.match(query, events, engine="stack")] == [
        m.key for m in cepkit.match(query, events, engine="reference")
    ]
