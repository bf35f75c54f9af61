"""Matches built from columns (``MatchArrays``) are the matches ``output_order`` gives on ``Match`` objects:
same identity, order, first occurrence kept; lazy ``Match`` objects equal eager ones; tables from the
columns equal the tables built row by row (docs/language.md §10.2)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import cepkit
from cepkit import Match, Matches
from cepkit.runtime.match_arrays import AT_LAST, MatchArrays
from cepkit.runtime.match_record import output_order

KLEENE = {"c", "d"}


@st.composite
def matches(draw):
    """A Match with single and Kleene bindings (possibly an empty Kleene tuple), unnamed positions too."""
    names = draw(st.lists(st.sampled_from("abcd"), unique=True, max_size=4))
    bindings = {}
    for name in names:
        if name in KLEENE:
            bindings[name] = tuple(draw(st.lists(st.integers(0, 6), unique=True, max_size=3)))
        else:
            bindings[name] = draw(st.integers(0, 6))
    extra = draw(st.lists(st.integers(0, 6), max_size=2))
    m = Match.of(bindings, extra)
    return Match(m.positions, bindings, draw(st.sampled_from("++-")), draw(st.none() | st.integers(0, 9)))


match_lists = st.lists(matches(), max_size=25).flatmap(
    lambda ms: st.lists(st.sampled_from(ms), max_size=40) if ms else st.just([])
)  # repeats, in any order


def columns_only(ms: list) -> MatchArrays:
    """The columns of ``ms`` with no Match object kept: every Match is built from the arrays."""
    c = MatchArrays.from_matches(ms)
    return MatchArrays(
        c.offsets,
        c.positions,
        c.bound_offsets,
        c.bound_positions,
        c.bound_variables,
        c.names,
        c.kleene,
        c.emitted_at,
        c.sign,
    )


def described(m: Match) -> tuple:
    return m.positions, list(m.bindings.items()), m.sign, m.emitted_at


def rows_table(expected: list) -> pd.DataFrame:
    """``to_pandas`` as it was built before columns: one dict per match."""
    variables = []
    for m in expected:
        variables += [v for v in m.bindings if v not in variables]
    rows = [
        {
            "match_id": i,
            "positions": list(m.positions),
            **{
                v: (list(m.bindings[v]) if isinstance(m.bindings.get(v), tuple) else m.bindings.get(v))
                for v in variables
            },
        }
        for i, m in enumerate(expected)
    ]
    return pd.DataFrame(rows, columns=["match_id", "positions", *variables])


@settings(max_examples=300, deadline=None)
@given(match_lists)
def test_columns_give_the_output_order_of_match_objects(ms):
    assert_output_order(ms)


@settings(max_examples=100, deadline=None)
@given(match_lists, st.integers(1, 3))
def test_passes_over_rows_a_slice_at_a_time_give_the_same_tables(ms, size):
    """Passes over all the rows (``variables``, ``binding_columns``, ``in_output_order``) read slices of
    ``row_arrays.SLICE`` rows: slices of 1-3 rows give the same results. (Patched inside the test.)"""
    with pytest.MonkeyPatch.context() as patch:
        for module in (cepkit.runtime.match_arrays, cepkit.runtime.matches):
            patch.setattr(module, "SLICE", size)
        assert_output_order(ms)
        expected = [m for m in output_order(m for m in ms if m.sign == "+")]
        ordered = MatchArrays.from_matches(expected)
        distinct = len({m.positions for m in expected}) == len(expected) and all(m.positions for m in expected)
        ordered.sorted_within_last = distinct
        assert ordered.in_output_order() == distinct
        if distinct and len({m.last for m in expected}) > 1:
            ordered = ordered.take(np.arange(len(expected))[::-1])
            ordered.sorted_within_last = True
            assert not ordered.in_output_order()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 30), min_size=3, max_size=3, unique=True), max_size=12),
    st.permutations(["a", "b", "c"]),
    st.sampled_from([[2, 0, 1], [0, 0, 1]]),
)
def test_columns_made_when_read_equal_given_ones(rows, names, pattern):
    """``emitted_at=AT_LAST`` and ``row_variables`` (columns an engine leaves to be made when read) give
    what the same columns written out give: Match objects, tables, variables, takes, the emission log."""
    rows = [sorted(r) for r in rows]
    n = len(rows)
    offsets, flat = np.arange(n + 1) * 3, np.array(rows, np.int64).reshape(-1)
    ids = np.array(pattern, np.int32)  # (a variable named twice in a row: the later position binds it)
    given_ = MatchArrays(offsets, flat, offsets, flat, np.tile(ids, n), names, [False] * 3, flat[2::3])
    lazy = MatchArrays(offsets, flat, offsets, flat, None, names, [False] * 3, AT_LAST, row_variables=ids)
    assert lazy._bound_variables is None and lazy._emitted_at is None
    a, b = Matches(given_, "t"), Matches(lazy, "t")
    pd.testing.assert_frame_equal(a.to_pandas(), b.to_pandas())
    assert a.to_arrow().equals(b.to_arrow()) and a.variables() == b.variables()
    assert a.positions() == b.positions() and a == b
    assert [described(m) for m in lazy] == [described(m) for m in given_]
    assert [described(lazy[i]) for i in range(n)] == [described(given_[i]) for i in range(n)]
    back = np.arange(n)[::-1]
    assert [described(m) for m in lazy.take(back)] == [described(m) for m in given_.take(back)]
    assert [described(m) for m in lazy.by_emission()] == [described(m) for m in given_.by_emission()]
    assert lazy.bound_variables.tolist() == given_.bound_variables.tolist()
    assert lazy.emitted_at.tolist() == given_.emitted_at.tolist()


def assert_output_order(ms):
    expected = output_order(m for m in ms if m.sign == "+")
    for got in (Matches(ms, "t"), Matches(columns_only(ms), "t")):
        assert [described(m) for m in got] == [described(m) for m in expected]
        assert len(got) == len(expected)
        assert got.positions() == list(dict.fromkeys(m.positions for m in expected))
        offsets, flat = got.position_arrays()
        assert [tuple(flat[a:b].tolist()) for a, b in zip(offsets[:-1], offsets[1:])] == got.positions()
        assert got.variables() == list(dict.fromkeys(v for m in expected for v in m.bindings))
        pd.testing.assert_frame_equal(got.to_pandas(), rows_table(expected))
        assert got.to_arrow().to_pylist() == [
            {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()}
            for row in rows_table(expected).astype(object).to_dict("records")
        ]
    assert Matches(ms, "t") == Matches(columns_only(ms), "t") == Matches(expected, "t")


@settings(max_examples=100, deadline=None)
@given(match_lists)
def test_lazy_matches_equal_eager_ones_one_at_a_time(ms):
    expected = output_order(m for m in ms if m.sign == "+")
    got = Matches(columns_only(ms), "t")
    for i in reversed(range(len(got))):  # indexing first, without building the others
        assert described(got[i]) == described(expected[i])
        assert got[i] is got[i]  # cached
    assert [described(m) for m in got[1:3]] == [described(m) for m in expected[1:3]]


def test_matches_from_match_objects_keep_the_objects():
    first, again = Match((0, 1), {"a": 0, "b": 1}, emitted_at=4), Match((0, 1), {"a": 0, "b": 1}, emitted_at=2)
    ms = Matches([again, first, again], "t")
    assert len(ms) == 1 and ms[0] is again


def test_engine_columns_from_bindings_name_positions_and_kleene_tuples():
    # rows (0 a, 1 b, 2 b) and (3 unnamed, 4 a): b is Kleene
    c = MatchArrays.from_bindings([0, 3, 5], [0, 1, 2, 3, 4], [0, 1, 1, -1, 0], ("a", "b"), [False, True], [2, 4])
    assert [described(m) for m in c] == [((0, 1, 2), [("a", 0), ("b", (1, 2))], "+", 2), ((3, 4), [("a", 4)], "+", 4)]
    assert [m.emitted_at for m in c.by_emission()] == [2, 4]
