"""How queries split into groups, and the time slicing that never loses nor duplicates a match at a slice
border (``cepkit.spark.groups``), checked in pure pandas against the reference engine, without Spark."""

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

import cepkit
from cepkit.spark.frames import Layout
from cepkit.spark.groups import (
    _TYPE_BOUND,
    HOME,
    LAST,
    POS,
    RANK,
    SLICE,
    TS,
    EventColumns,
    GroupMatcher,
    OneGroupWarning,
    named_types,
    output_variables,
    plan_split,
    warn_single,
)
from strategies import flat_seq_queries, set_query_variants, streams, unary_queries

COLUMNS = EventColumns(("v", "id"), "number")
# the events' Spark schema, for the Arrow schema ``cepkit.spark.match`` gives the workers (no session needed)
EVENT_SCHEMA = T.StructType(
    [
        T.StructField("type", T.StringType()),
        T.StructField("ts", T.DoubleType()),
        T.StructField("v", T.LongType()),
        T.StructField("id", T.LongType()),
    ]
)


def run_in_slices(query: str, events: list, length: float) -> pd.DataFrame:
    """What ``cepkit.spark.match`` does with a sliced query, with pandas in Spark's place."""
    q = cepkit.parse(query)
    split = plan_split(q)
    split = split.by_time() if split.kind == "partition" else split
    frame = pd.DataFrame(events, columns=["type", "ts", "v", "id"])
    frame[POS] = np.arange(len(frame))
    frame[TS] = frame["ts"]
    coord = (frame[POS] if split.axis == "position" else frame["ts"]).to_numpy(dtype=float)
    split = split.with_length(coord.min(), coord.max(), slices=1, length=length)
    first, last, home = split.slice_span(coord, np.floor)
    frame[HOME] = home
    copies = [
        frame.iloc[[i]].assign(**{SLICE: k}) for i in range(len(frame)) for k in range(int(first[i]), int(last[i]) + 1)
    ]
    matcher = GroupMatcher(q, "reference", {}, COLUMNS, split)
    shuffled = pd.concat(copies).sample(frac=1, random_state=len(copies))  # a Spark partition's rows
    schema = to_arrow_schema(Layout.of(EVENT_SCHEMA, q).match_schema(q))
    # the Arrow batches the workers write (``match_batch``), read back as pandas with nullable integers
    found = [
        matcher.match_batch(group, schema).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
        for group in matcher.groups(shuffled)
    ]
    out = pd.concat(found, ignore_index=True)
    order = sorted(range(len(out)), key=lambda i: (out[LAST][i], tuple(out["positions"][i]), out[RANK][i]))
    return out.iloc[order].reset_index(drop=True)


def assert_slices_agree(match_rows, query: str, events: list, length: float):
    local = cepkit.match(query, events, engine="reference")
    variables = list(output_variables(cepkit.parse(query)))
    expected = match_rows(local.to_pandas().reindex(columns=["positions", *variables]), variables)
    assert match_rows(run_in_slices(query, events, length), variables) == expected, (query, length)


def sliced(query: str) -> bool:
    split = plan_split(cepkit.parse(query))
    return split.kind == "slices" or split.sliceable


lengths = st.one_of(st.integers(1, 12), st.floats(0.3, 15, allow_nan=False))


@settings(max_examples=30, deadline=None)
@given(
    streams(min_size=1, max_size=12, ties=True),
    unary_queries(strategies=("ALL", "NEXT", "LAST", "MAX", "STRICT", "PARTITION_STRICT"), max_depth=2),
    lengths,
)
def test_slices_give_every_match_once_cel_fragment(match_rows, events, query, length):
    """Issue 3: time slicing never loses or duplicates a match at slice borders, whatever the slice length
    (shorter than the window too); strategies compare windowed matches (docs/language.md §10.3); under PARTITION
    BY with a time window every slice holds every key."""
    assume(sliced(query))
    assert_slices_agree(match_rows, query, events, length)


@settings(max_examples=30, deadline=None)
@given(streams(min_size=1, max_size=12, ties=True), flat_seq_queries(strategies=("ALL", "STRICT", "STNM")), lengths)
def test_slices_give_every_match_once_with_negation(match_rows, events, query, length):
    """Leading and trailing negations look up to a window beyond the match (docs/language.md §10.4): slices
    receive a window of events on both sides."""
    assume(sliced(query))
    assert_slices_agree(match_rows, query, events, length)


@settings(max_examples=25, deadline=None)
@given(
    streams(types=("C", "P", "D", "B"), min_size=1, max_size=10),
    set_query_variants(strategies=("ALL", "STNM", "ROBUST_STNM")),
    lengths,
)
def test_slices_give_every_match_once_ses_fragment(match_rows, events, query, length):
    """SES sets with Kleene variables, robust skip-till-next-match ([SES] Def 6.2 looks at full matches
    after the candidate) and RETURN projections."""
    assume(sliced(query))
    assert_slices_agree(match_rows, query, events, length)


def test_a_match_on_a_slice_border_is_reported_by_its_owner_only():
    """Slices of length 2 over a window of 3: the matches cross one or two borders, each is reported once."""
    events = [{"type": t, "ts": i, "v": 0, "id": 0} for i, t in enumerate("ABABABAB")]
    found = run_in_slices("SEQ(A a, B b) WITHIN 3", events, 2)
    assert [tuple(p) for p in found["positions"]] == [(0, 1), (0, 3), (2, 3), (2, 5), (4, 5), (4, 7), (6, 7)]


@pytest.mark.parametrize(
    "query, kind, lookahead",
    [
        ("SEQ(A a, B b) WITHIN 5 s PARTITION BY id", "partition", 0.0),
        ("SEQ(A a, B b) WITHIN 4 EVENTS PARTITION BY id", "partition", 0.0),
        ("SEQ(A a, B b) WITHIN 5 s", "slices", 0.0),
        ("SEQ(A a, !B b, C c) WITHIN 5 s", "slices", 5.0),
        ("SEQ(A a, B b) WITHIN 5 s RETURN a", "slices", 5.0),
        ("SEQ(A a, B b) WITHIN 4 EVENTS", "slices", 0.0),
        ("SEQ(A a, B b)", "single", None),
        ("SEQ(A a, B b) WITHIN 5 s CONSUME BY ANY", "single", None),
        ("SEQ(A a, B b) WITHIN 5 s PARTITION BY id CONSUME BY PARTITION", "partition", 5.0),
        ("SEQ(A a, B b) WITHIN 5 s PARTITION BY id CONSUME BY ANY", "single", None),
        ("NEXT(A a ; B+ b) ; C c WITHIN 5 s", "single", None),
    ],
)
def test_plan_split(query, kind, lookahead):
    split = plan_split(cepkit.parse(query))
    assert split.kind == kind
    # Time slices serve PARTITION BY too, except for EVENTS windows (sub-stream positions) and history.
    assert split.sliceable == (
        kind == "slices" or (kind == "partition" and "EVENTS" not in query and "CONSUME" not in query)
    )
    if kind != "single":
        assert split.lookahead == lookahead
    if "EVENTS" in query:
        assert (split.axis, split.window) == ("position", 3.0)


def test_one_group_is_announced():
    with pytest.warns(OneGroupWarning, match="neither PARTITION BY nor WITHIN"):
        warn_single(plan_split(cepkit.parse("SEQ(A a, B b)")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_single(plan_split(cepkit.parse("SEQ(A a, B b) WITHIN 3")))


def test_default_slice_length_keeps_the_overlap_small():
    split = plan_split(cepkit.parse("SEQ(A a, !B b, C c) WITHIN 10 s")).with_length(0, 1000, slices=4)
    assert split.length == 250
    assert plan_split(cepkit.parse("SEQ(A a, !B b, C c) WITHIN 10 s")).with_length(0, 1000, slices=200).length == 80


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.integers(0, 3), max_size=30),
    st.randoms(use_true_random=False),
    st.sampled_from(["SEQ(A a, B b) WITHIN 5 s", "SEQ(A a, B b) WITHIN 5 s PARTITION BY id", "SEQ(A a, B b)"]),
)
def test_groups_are_a_partitions_rows_sorted_by_position(slices, rng, query):
    """A Spark partition's rows come in any order: one group per slice, else one of all the rows, each
    sorted by position, every row in exactly one group."""
    split = plan_split(cepkit.parse(query))
    frame = pd.DataFrame({POS: range(len(slices)), SLICE: slices})
    shuffled = frame.iloc[rng.sample(range(len(frame)), len(frame))]
    groups = list(GroupMatcher(cepkit.parse(query), "reference", {}, COLUMNS, split).groups(shuffled))
    for group in groups:
        assert list(group[POS]) == sorted(group[POS])
        assert list(group.index) == list(range(len(group)))
    if split.kind == "slices":
        assert [set(g[SLICE]) for g in groups] == [{k} for k in sorted(set(slices))]
    else:
        assert len(groups) == (1 if slices else 0)
    assert sorted(p for g in groups for p in g[POS]) == list(range(len(slices)))


# ----------------------------------------------------------------------------- the events a query can read
@settings(max_examples=60, deadline=None)
@given(
    streams(types=("A", "B", "C", "D", "E"), min_size=0, max_size=16, ids=2),
    st.one_of(
        unary_queries(types=("A", "B", "C"), strategies=("ALL", "NEXT", "LAST", "PARTITION_STRICT"), max_depth=2),
        flat_seq_queries(types=("A", "B", "C"), strategies=("ALL", "NEXT", "STNM")),
        set_query_variants(strategies=("ALL", "STNM", "ROBUST_STNM")),
    ),
)
def test_the_events_of_other_types_change_no_match(events, query):
    """``named_types``: matching only the events of the types the query names, each at its own position,
    gives the matches of the whole stream (what ``cepkit.spark.match`` shuffles); where other events count
    (STRICT, EVENTS windows, STNM, ANY), it keeps every type."""
    q = cepkit.parse(query)
    kept = named_types(q)
    if kept is None:
        assert _TYPE_BOUND & set(q.features)
        return
    frame = pd.DataFrame(events, columns=["type", "ts", "v", "id"])
    at = np.flatnonzero(frame["type"].isin(kept).to_numpy())
    whole = cepkit.match(q, frame, engine="reference").positions()
    pruned = cepkit.match(q, frame.iloc[at].reset_index(drop=True), engine="reference").positions()
    assert [tuple(int(at[i]) for i in p) for p in pruned] == whole


def test_named_types_follow_the_hierarchy_and_refuse_what_counts_others():
    """A concept names every type below it; engine options (an out-of-order mode's punctuation) keep all."""
    h = cepkit.Hierarchy({"Stock": ["Tech", "Energy"], "Tech": ["IBM", "MSFT"]})
    q = cepkit.parse("SEQ(Tech a, !Energy b, Oil c) WITHIN 5 s", hierarchy=h)
    assert named_types(q) == {"Tech", "IBM", "MSFT", "Energy", "Oil"}
    assert named_types(q, {"disorder": "conservative"}) is None
    for text in [
        "SEQ(A a, ANY b) WITHIN 5 s",
        "SELECT STRICT * PATTERN SEQ(A a, B b)",
        "SEQ(A a, B b) WITHIN 3 EVENTS",
    ]:
        assert named_types(cepkit.parse(text)) is None, text
