"""Micro-batches through the incremental path (issue 11): ``Matcher.extend(DataFrame | Table)`` batch by
batch, then ``close``, gives exactly what pushing the same events one by one gives (the matches, their
order, ``emitted_at``, deltas and the kept result), on every engine (the automaton's columnar batch and the
per-event default), with the same errors at the same positions, a rejected batch taken not at all."""

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.errors import EventError, QueryError
from cepkit.runtime.match_list import MatchList
from cepkit.runtime.registry import registered
from cepkit.runtime.selection import select_engine
from tests.engines.test_conformance import EVENTS, EXAMPLES, hierarchy_for
from strategies import cel_queries, flat_seq_queries, kleene_queries, streams, unary_queries

EPOCH = dt.datetime(2024, 1, 1)
FORMS = ("frame", "arrow", "categorical", "string", "datetime")


def as_batch(rows: list, form: str):
    """The rows as a micro-batch of the given form (the type column's dtype, Arrow, datetime ts)."""
    frame = pd.DataFrame(
        rows,
        columns=sorted({k for r in rows for k in r}, key=["type", "ts", "v", "id"].index) if rows else ["type", "ts"],
    )
    if form == "arrow":
        return pa.Table.from_pandas(frame, preserve_index=False)
    if form == "categorical":
        frame["type"] = frame["type"].astype(pd.CategoricalDtype(["A", "B", "C", "D"]))
    elif form == "string":
        frame["type"] = frame["type"].astype("string")
    elif form == "datetime":
        frame["ts"] = pd.to_datetime(EPOCH) + pd.to_timedelta(frame["ts"].astype(float), unit="s")
    return frame


def as_pushed(row: dict, form: str) -> dict:
    """The row as ``push`` gets it when the batch has ``form`` (a datetime ts for "datetime")."""
    if form == "datetime":
        return {**row, "ts": pd.Timestamp(EPOCH) + pd.Timedelta(seconds=float(row["ts"]))}
    return {k: v for k, v in row.items() if v is not None}


def outcome(found) -> list:
    return [(m.key, m.sign, m.emitted_at) for m in found]


def pushed_one_by_one(query, rows, form, **options):
    """(what each push and close returned, in order; the rejected rows with their errors; the matcher)."""
    matcher = cepkit.Matcher(query, hierarchy=hierarchy_for(query), **options)
    found, errors = [], []
    for i, row in enumerate(rows):
        try:
            found += matcher.push(as_pushed(row, form))
        except (EventError, QueryError) as err:
            errors.append((i, type(err), str(err)))
    return found + matcher.close(), errors, matcher


def extended_by_batches(query, rows, cuts, form, rejected, **options):
    """The same through ``extend``: a batch that raises is sent again without the row it rejected (named
    by an EventError's position; for a data check's QueryError, the first of the rows ``push`` rejected)."""
    matcher = cepkit.Matcher(query, hierarchy=hierarchy_for(query), **options)
    found, errors = [], []
    bounds = [0, *sorted(cuts), len(rows)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        batch = list(range(a, b))
        while True:
            try:
                got = matcher.extend(as_batch([rows[i] for i in batch], form))
            except (EventError, QueryError) as err:
                if isinstance(err, EventError):
                    at = err.position - matcher._position
                else:
                    at = next(k for k, i in enumerate(batch) if i in rejected)
                errors.append((batch[at], type(err), str(err)))
                del batch[at]
                continue
            assert isinstance(got, (list, MatchList))
            found += got
            break
    return found + matcher.close(), errors, matcher


def assert_same(query, rows, cuts, form, keep=True, **options):
    try:
        cepkit.Matcher(query, hierarchy=hierarchy_for(query), **options)
    except QueryError:  # outside the engine's fragment (a random query's LP-normal form too large...)
        return []
    expected, push_errors, pushed = pushed_one_by_one(query, rows, form, keep=keep, **options)
    got, batch_errors, extended = extended_by_batches(
        query, rows, cuts, form, {i for i, *_ in push_errors}, keep=keep, **options
    )
    assert outcome(got) == outcome(expected), (query, rows, cuts, form)
    assert batch_errors == push_errors  # the same rows rejected, with the same errors and positions
    if keep:
        assert outcome(extended.deltas) == outcome(pushed.deltas)
        assert outcome(extended.matches) == outcome(pushed.matches)
        assert extended.result() == pushed.result()
        assert outcome(extended.result().deltas) == outcome(pushed.result().deltas)
    return expected


# ----------------------------------------------------------------------------- every engine, every feature
ENGINES = [e.name for e in registered()]
SPLITS = {"one batch": [], "batches of one": list(range(1, 11)), "an empty batch": [0, 4, 4, 7], "uneven": [2, 3, 9]}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("feature", sorted(EXAMPLES))
def test_every_engine_and_feature_extends_as_it_pushes(engine, feature):
    query = EXAMPLES[feature]
    try:
        select_engine(cepkit.parse(query, hierarchy=hierarchy_for(query)), engine, {})
    except QueryError:
        pytest.skip(f"{engine} does not run {feature}")
    for name, cuts in SPLITS.items():
        for keep in (True, False):
            assert_same(query, EVENTS, cuts, "frame", keep=keep, engine=engine)


@pytest.mark.parametrize("form", FORMS)
def test_every_form_of_a_batch(form):
    for query in ("A a ; B b ; C c WITHIN 6 s PARTITION BY id", "A+ a ; B b WITHIN 4 s", "A a ; B b ; C c"):
        assert_same(query, EVENTS, [3, 7], form, engine="automaton")
        assert_same(query, EVENTS, [3, 7], form, engine="stack" if "+" not in query else "rcep")


# ----------------------------------------------------------------------------- random queries and streams
@st.composite
def rows_and_cuts(draw, max_size=40, late=False):
    """In-order rows (some without ``v`` or ``id``: nulls in the batch; with ``late``, now and then a ts
    earlier than the one before) and the cut points of the micro-batches (repeats: empty batches)."""
    rows = draw(streams(types=("A", "B", "C"), max_size=max_size, null_one_in=20, late_one_in=12 if late else 0))
    n = len(rows)
    cuts = draw(st.lists(st.integers(0, n), max_size=6))
    return rows, cuts


COLUMNAR = unary_queries(strategies=("ALL", "STRICT", "PARTITION_STRICT"))  # what the kernel takes as a batch


@settings(max_examples=200, deadline=None)
@given(st.one_of(COLUMNAR, COLUMNAR, cel_queries()), rows_and_cuts(), st.sampled_from(FORMS), st.booleans())
def test_automaton_random_queries_and_batches(query, data, form, keep):
    """The columnar batch (ALL, STRICT, PARTITION BY, windows of both kinds, Kleene, CONSUME BY) and its
    per-event fallbacks (strategies, RETURN, CONSUME BY ANY with keys)."""
    rows, cuts = data
    assert_same(query, rows, cuts, form, keep=keep, engine="automaton")


@settings(max_examples=80, deadline=None)
@given(unary_queries(), rows_and_cuts(late=True), st.sampled_from(FORMS))
def test_late_events_and_data_errors_are_rejected_as_push_rejects_them(query, data, form):
    rows, cuts = data
    assert_same(query, rows, cuts, form, engine="automaton")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["stack", "reference"]), flat_seq_queries(max_len=3), rows_and_cuts(max_size=14), st.booleans())
def test_per_event_engines_random_queries_and_batches(engine, query, data, keep):
    rows, cuts = data
    assert_same(query, rows, cuts, "frame", keep=keep, engine=engine)


@settings(max_examples=40, deadline=None)
@given(kleene_queries(strategies=("ALL", "STRICT", "NEXT")), rows_and_cuts(max_size=16))
def test_rcep_random_queries_and_batches(query, data):
    rows, cuts = data
    assert_same(query, rows, cuts, "frame", engine="rcep")


@settings(max_examples=40, deadline=None)
@given(unary_queries(), rows_and_cuts(max_size=20))
def test_batches_give_what_match_gives(query, data):
    """Batch by batch the kept result is ``cepkit.match`` over the whole stream."""
    rows, cuts = data
    rows = [{k: v for k, v in r.items() if v is not None} for r in rows]
    try:
        expected = cepkit.match(query, rows, engine="automaton")
    except QueryError:
        return
    matcher = cepkit.Matcher(query, engine="automaton", schema=rows)
    bounds = [0, *sorted(cuts), len(rows)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        matcher.extend(as_batch(rows[a:b], "frame"))
    matcher.close()
    assert matcher.result() == expected
    assert matcher.result().positions() == expected.positions()


@st.composite
def many_keys_and_cuts(draw):
    """Rows of up to 16 keys, each key coming and going (time leaps of up to 12 s now and then, so a key's
    window passes, in a batch or between two, and the key comes back afresh), cut into many batches."""
    n = draw(st.integers(1, 90))
    ts, rows = 0, []
    for _ in range(n):
        ts += draw(st.sampled_from([0, 0, 1, 1, 2, 3, 12]))
        row = {
            "type": draw(st.sampled_from("ABCD")),
            "ts": ts,
            "v": draw(st.integers(0, 5)),
            "id": draw(st.integers(0, 15)),
        }
        if draw(st.integers(0, 29)) == 0:
            del row["id"]  # the key None
        rows.append(row)
    return rows, draw(st.lists(st.integers(0, n), max_size=14))


KEYED = st.one_of(
    unary_queries(types=("A", "B", "C", "D"), strategies=("ALL", "STRICT", "PARTITION_STRICT")).filter(
        lambda q: "PARTITION BY" in q
    ),
    st.sampled_from(
        [
            "A a ; B b WITHIN 8 s PARTITION BY id CONSUME BY PARTITION",
            "A a ; B+ b ; C c WITHIN 5 EVENTS PARTITION BY id",
            "(A a OR B b) ; C+ c ; D d WITHIN 6 s PARTITION BY id",
            "A+ a ; B b PARTITION BY id",
        ]
    ),
)


@settings(max_examples=200, deadline=None)
@given(KEYED, many_keys_and_cuts(), st.booleans())
def test_many_keys_in_one_kernel_call_per_batch(query, data, keep):
    """Every key of a batch goes through one kernel call (each from its carried runs): with many keys per
    batch, keys whose window passes within a batch or between two and that come back afterwards, the
    matches, their order and ``emitted_at`` are the pushes'."""
    rows, cuts = data
    assert_same(query, rows, cuts, "frame", keep=keep, engine="automaton")


# ----------------------------------------------------------------------------- windows across batches, keys
def test_windows_and_keys_carry_across_batches():
    """A long stream (many keys, each quiet longer than the window now and then, so its state is dropped
    and restarts) in batches of 1k-ish rows: the columnar path equals pushing, including EVENTS windows."""
    rng = np.random.default_rng(7)
    n = 3000
    frame = pd.DataFrame(
        {
            "type": rng.choice(list("ABCD"), n),
            "ts": np.cumsum(rng.integers(0, 3, n)).astype(float),
            "id": rng.integers(0, 8, n),
            "v": rng.integers(0, 10, n),
        }
    )
    rows = frame.to_dict("records")
    cuts = sorted(rng.choice(n, 4, replace=False).tolist())
    for query in (
        "A a ; B b ; C c WITHIN 10 s PARTITION BY id",
        "A a ; B+ b ; C c WITHIN 8 EVENTS PARTITION BY id",
        "(A a FILTER a.v > 3) ; B b ; C c WITHIN 30 s",
        "SELECT STRICT * PATTERN A a ; B b WITHIN 10 s",
        "A a ; B b WITHIN 20 s PARTITION BY id CONSUME BY PARTITION",
        "A+ a ; B b WITHIN 6 s",
    ):
        assert assert_same(query, rows, cuts, "frame", engine="automaton"), query


def test_a_batch_of_punctuations_and_an_empty_batch():
    matcher = cepkit.Matcher("A a ; B b WITHIN 5 s", engine="automaton")
    assert matcher.extend(pd.DataFrame({"type": [], "ts": []})) == []
    assert matcher.extend(pd.DataFrame({"type": ["A", "PUNCTUATION"], "ts": [0, 1]})) == []
    assert [m.positions for m in matcher.extend(pd.DataFrame({"type": ["PUNCTUATION", "B"], "ts": [2, 3]}))] == [(0, 3)]


# ----------------------------------------------------------------------------- errors
def test_the_first_late_row_is_named_and_nothing_of_the_batch_is_taken():
    matcher = cepkit.Matcher("A a ; B b WITHIN 5 s", engine="automaton")
    matcher.extend(pd.DataFrame({"type": ["A", "B"], "ts": [0, 1]}))
    with pytest.raises(EventError) as err:
        matcher.extend(pd.DataFrame({"type": ["A", "B", "A", "B"], "ts": [2, 3, 1, 0]}))
    assert (err.value.position, err.value.field) == (4, "ts")
    assert "ts 1 is earlier" in str(err.value)
    got = matcher.extend(pd.DataFrame({"type": ["A", "B"], "ts": [2, 3]}))
    assert [m.positions for m in got] == [(0, 3), (2, 3)]


def test_an_earlier_late_row_wins_over_a_later_bad_type():
    """Pushing would stop at the late row 1 before it reached the null type of row 2."""
    matcher = cepkit.Matcher("A a ; B b", engine="automaton")
    with pytest.raises(EventError) as err:
        matcher.extend(pd.DataFrame({"type": ["A", "B", None], "ts": [5, 1, 6]}))
    assert (err.value.position, err.value.field) == (1, "ts")
    with pytest.raises(EventError) as err:
        matcher.extend(pd.DataFrame({"type": ["A", "B", None], "ts": [5, 6, 7]}))
    assert (err.value.position, err.value.field) == (2, "type")


def test_a_data_check_fails_where_push_fails():
    """The first B lacks ``v``: pushing raises at it; the batch raises the same and is not taken, so the
    matcher knows nothing of B yet and the fixed batch goes through."""
    query = "A a ; B b WHERE b.v > 1"
    rows = [{"type": "A", "ts": 0}, {"type": "B", "ts": 1, "w": 2}, {"type": "B", "ts": 2, "v": 3}]
    pusher = cepkit.Matcher(query, engine="automaton")
    pusher.push(rows[0])
    with pytest.raises(QueryError) as pushed:
        pusher.push(rows[1])
    matcher = cepkit.Matcher(query, engine="automaton")
    with pytest.raises(QueryError) as batched:
        matcher.extend(pd.DataFrame(rows))
    assert str(batched.value) == str(pushed.value)
    assert [m.positions for m in matcher.extend(pd.DataFrame([rows[0], rows[2]]))] == [(0, 1)]


@pytest.mark.parametrize("form", ("frame", "arrow", "categorical"))
def test_a_batch_of_known_types_and_columns_still_learns_what_a_later_batch_brings(form):
    """Batches whose types and columns are all known are judged from their schema alone (no pass over the
    rows); a later batch's new column on a known type is still learned, and its first event of a new type
    (lacking ``c.v``) still raises where push raises."""
    query = "A a ; B b ; C c WHERE c.v > 0 WITHIN 10 s"
    rows = [
        {"type": "A", "ts": 0, "v": 1},
        {"type": "B", "ts": 1, "v": 2},  # everything new
        {"type": "A", "ts": 2, "v": 3},
        {"type": "B", "ts": 3, "v": 4},  # nothing new
        {"type": "A", "ts": 4, "v": 5, "id": 1},
        {"type": "B", "ts": 5, "v": 6},  # A has an id now
        {"type": "B", "ts": 6, "v": 7},
        {"type": "C", "ts": 7, "id": 2},  # the first C, without v
        {"type": "C", "ts": 8, "v": 1, "id": 3},
    ]
    assert_same(query, rows, [2, 4, 6, 8], form)
    pushed = pushed_one_by_one(query, rows, form)[2]
    extended = extended_by_batches(query, rows, [2, 4, 6, 8], form, {7})[2]
    assert extended._seen.by_type == pushed._seen.by_type == {"A": {"v", "id"}, "B": {"v"}, "C": {"v", "id"}}


def test_a_datetime_ts_after_known_number_batches_is_judged():
    """A batch of known types and columns whose ts turn datetime is judged (the window's missing unit)."""
    matcher = cepkit.Matcher("A a ; B b WITHIN 10", engine="automaton")
    for ts in ([0, 1], [2, 3]):
        matcher.extend(pd.DataFrame({"type": ["A", "B"], "ts": ts}))
    with pytest.raises(QueryError, match="WITHIN needs a unit"):
        matcher.extend(pd.DataFrame({"type": ["A", "B"], "ts": pd.to_datetime(["2024-01-01", "2024-01-02"])}))
    assert not matcher._seen.ts_is_datetime


def test_a_batch_with_two_columns_of_one_name_is_rejected_at_its_first_row():
    matcher = cepkit.Matcher("A a ; B b", engine="automaton")
    matcher.extend(pd.DataFrame({"type": ["A", "B"], "ts": [0, 1], "v": [1, 2]}))
    with pytest.raises(EventError) as err:
        matcher.extend(pd.DataFrame([["A", 2, 3, 4]], columns=["type", "ts", "v", "v"]))
    assert (err.value.position, err.value.field) == (2, "v")
    assert [m.positions for m in matcher.extend(pd.DataFrame({"type": ["B"], "ts": [3]}))] == [
        (0, 2)
    ]  # (the rejected row never happened)


def test_unhashable_keys_are_event_errors_naming_the_row():
    matcher = cepkit.Matcher("A a ; B b PARTITION BY k", engine="automaton")
    with pytest.raises(EventError) as err:
        matcher.extend(pd.DataFrame({"type": ["A", "B"], "ts": [0, 1], "k": [1, [1]]}))
    assert (err.value.position, err.value.field) == (1, "k")


# ----------------------------------------------------------------------------- what extend returns
def test_a_match_list_reads_as_the_list_it_stands_for():
    rows = [{"type": t, "ts": i} for i, t in enumerate("AABAB")]
    found = cepkit.Matcher("A a ; B b", engine="automaton").extend(pd.DataFrame(rows))
    listed = cepkit.Matcher("A a ; B b", engine="automaton").extend(rows)
    assert isinstance(found, MatchList) and isinstance(listed, list)
    assert len(found) == len(listed) == 5 and found == listed and listed == found and found != listed[:-1]
    assert found[0] == listed[0] and found[-1] == listed[-1] and found[1:3] == listed[1:3]
    assert list(found) == listed and found + [] == listed and [] + found == listed and repr(found) == repr(listed)
    assert bool(found) and [m.emitted_at for m in found] == [m.emitted_at for m in listed]


@pytest.mark.parametrize("engine", ["automaton", "stack", "ses"])
@pytest.mark.parametrize(
    "mode",
    [
        {"disorder": "kslack", "k": 3},
        {"disorder": "conservative", "max_delay": 3},
        {"disorder": "aggressive", "max_delay": 3},
    ],
)
def test_out_of_order_modes_extend_as_they_push(engine, mode):
    """Late rows are the modes' business, not errors: the batch goes through the mode's matcher (the
    out-of-order layer or the stack's own) event by event, retractions included."""
    rng = np.random.default_rng(3)
    rows = [
        {
            "type": "ABC"[int(rng.integers(0, 3))],
            "ts": max(0, i - int(rng.integers(0, 3))),
            "v": int(rng.integers(0, 5)),
            "id": int(rng.integers(0, 2)),
        }
        for i in range(60)
    ]
    found = []
    for query in ("SEQ(A a, B b, C c) WITHIN 6 s PARTITION BY id", "SEQ(A a, !C c, B b) WITHIN 5 s"):
        try:
            cepkit.Matcher(query, engine=engine, **mode)
        except (QueryError, TypeError):
            continue
        found += assert_same(query, rows, [7, 30, 31, 44], "frame", engine=engine, **mode)
    assert found
