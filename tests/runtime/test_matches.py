"""Matches: one entry per distinct (C, β), ordered by (max C, C) (docs/language.md §10.2)."""

import copy
import dataclasses
import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from cepkit import Match, Matches


def test_output_order_and_deduplication():
    ms = Matches(
        [
            Match((1, 8), {"x": 1, "y": 8}),
            Match((1, 2), {"x": 1, "y": 2}),
            Match((5, 8), {"x": 5, "y": 8}),
            Match((1, 2), {"x": 1, "y": 2}),
        ],
        engine="test",
    )
    assert ms.positions() == [(1, 2), (1, 8), (5, 8)]
    assert len(ms) == 3 and ms.engine == "test"


def test_same_positions_different_bindings_are_distinct_matches():
    ms = Matches([Match((0, 1), {"a": 0, "b": 1}), Match((0, 1), {"a": 1, "b": 0})], engine="t")
    assert len(ms) == 2 and ms.positions() == [(0, 1)]


def test_to_pandas_has_one_column_per_variable():
    ms = Matches([Match.of({"a": 0, "b": (1, 2)}), Match.of({"a": 3})], engine="t")
    df = ms.to_pandas()
    assert list(df.columns) == ["match_id", "positions", "a", "b"]
    assert df.loc[0, "positions"] == [0, 1, 2] and df.loc[0, "b"] == [1, 2]
    assert df.loc[1, "b"] is None


def test_retractions_stay_out_of_the_net_result():
    """(0, 2) was emitted, then withdrawn (aggressive mode): the deltas keep both emissions, the
    sequence holds the net result even when a "-" is handed to it."""
    kept, withdrawn = Match((0, 1), {"a": 0, "b": 1}), Match((0, 2), {"a": 0, "b": 2})
    retraction = Match((0, 2), {"a": 0, "b": 2}, sign="-")
    ms = Matches([kept, retraction], engine="t", deltas=[kept, withdrawn, retraction])
    assert ms.positions() == [(0, 1)]
    assert [(d.positions, d.sign) for d in ms.deltas] == [((0, 1), "+"), ((0, 2), "+"), ((0, 2), "-")]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=5, unique=True), st.one_of(st.none(), st.integers(0, 60)))
def test_a_named_match_is_the_match_made_with_its_bindings(positions, emitted_at):
    """``Match.named`` (a pusher's matches: the bindings dict made when first read) is the ``Match`` that
    ``made`` gives with ``dict(zip(names, positions))``: equal, same hash, key, repr, bindings, fields;
    pickled, copied and replaced as a plain ``Match``."""
    positions = tuple(sorted(positions))
    names = tuple(f"x{i}" for i in range(len(positions)))
    made = Match.made(positions, dict(zip(names, positions)), emitted_at)

    def named():
        return Match.named(positions, names, emitted_at)

    assert isinstance(named(), Match)
    assert named() == made and hash(named()) == hash(made) and named().key == made.key
    assert repr(named()) == repr(made) and named().bindings == made.bindings
    assert dataclasses.asdict(named()) == dataclasses.asdict(made)
    first = named()
    assert first.bindings is first.bindings  # made once, then kept
    for copied in (pickle.loads(pickle.dumps(named())), copy.copy(named()), copy.deepcopy(named())):
        assert type(copied) is Match and copied == made and copied.bindings == made.bindings
        assert copied.emitted_at == emitted_at and copied.sign == "+"
    replaced = dataclasses.replace(named(), emitted_at=99)
    assert replaced.bindings == made.bindings and replaced.emitted_at == 99 and replaced == made
    assert Matches([named(), made], engine="t").positions() == [positions]
