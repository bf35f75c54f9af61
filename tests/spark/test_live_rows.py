"""``watermark.Live.rows`` builds Spark streaming's output rows from the matches' columns (issue 11): the
frame must be the one a dict per ``Match`` gave (dtypes included), whatever the engine returned (a
``MatchList``, a list, both in one call). Pure pandas: the keys' buffers driven as Spark drives them
(``key_streams.run_stream``), every call's rows checked against the per-match construction."""

import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.lang import ast as A
from cepkit.lang.printer import pretty
from cepkit.runtime.match_arrays import MatchArrays
from cepkit.runtime.match_list import MatchList
from cepkit.spark.groups import LAST, POS, RANK, GroupMatcher, plan_split, whole_history
from cepkit.spark.watermark import FED, TIME, Horizon, KeyBuffer, Live, advance
from strategies import flat_seq_queries, streams, unary_queries

sys.path.insert(0, str(Path(__file__).parent))
from key_streams import COLUMNS, run_stream, stream_frame  # noqa: E402


def rows_by_match(group, found: list, events) -> pd.DataFrame:
    """The rows of the matches of ``found`` (results in turn) built as before issue 11, one dict per
    ``Match`` and the positions looked up in dicts: the definition the columnar rows must equal."""
    events = pd.DataFrame(events)  # a key's buffer: columns
    matches = [m for result in found for m in result]
    if not matches:
        return pd.DataFrame(columns=group.output_columns)
    fed = events[events[FED].notna()]
    position = dict(zip(fed[FED].astype("int64").tolist(), fed[POS].astype("int64").tolist()))
    row_of = dict(zip(fed[FED].astype("int64").tolist(), range(len(fed))))
    out, lasts = [], []
    for rank, m in enumerate(matches):
        row = {LAST: position[m.last], RANK: rank, "positions": [position[p] for p in m.positions]}
        for var in group.variables:
            value = m.bindings.get(var)
            if value is not None:
                value = [position[p] for p in value] if isinstance(value, tuple) else position[value]
            row[var] = value
        out.append(row)
        lasts.append(row_of[m.last])
    frame = pd.DataFrame(out, columns=[LAST, RANK, "positions", *group.variables])
    for var in group.variables:
        if var not in group.kleene:
            frame[var] = frame[var].astype("Int64")
    for key in group.split.keys:
        frame[key] = fed[key].to_numpy()[lasts]
    return frame


def split_in_two(found: list) -> list:
    """The same matches as two results of the other kinds: a ``MatchList`` of the first half (its columns
    made from objects), a plain list of the rest (as when ``close`` adds a list to a batch's MatchList)."""
    matches = [m for result in found for m in result]
    half = len(matches) // 2
    return [MatchList(MatchArrays.from_matches(matches[:half])), matches[half:]]


@contextmanager
def checked_rows(calls: list):
    """Every ``Live.rows`` call checked against ``rows_by_match``, and again on its matches split in two;
    ``calls`` collects (what the call's rows hold, their number) per call."""
    real = Live.rows

    def rows(self, found, events, match_ids=None):
        got = real(self, found, events)
        pd.testing.assert_frame_equal(got, rows_by_match(self.group, found, events))
        pd.testing.assert_frame_equal(real(self, split_in_two(found), events), got)
        group = self.group
        seen = {f"rows of {'+'.join(sorted({type(f).__name__ for f in found if len(f)}))}" if len(got) else "no rows"}
        seen |= {"an unbound variable" for var in group.variables if got[var].isna().any()}
        seen |= {"a Kleene list" for var in group.kleene & set(group.variables) if got[var].notna().any()}
        seen |= {"several keys" for key in group.split.keys if got[key].nunique() > 1}
        calls.append((seen, len(got)))
        return got if match_ids is None else real(self, found, events, match_ids)

    with mock.patch.object(Live, "rows", rows):
        yield


def windowed(queries):
    """The queries, with a window where they had none (a stream needs one: it bounds the buffers)."""

    def window(drawn):
        text, amount, unit = drawn
        node = cepkit.parse(text).ast
        return text if node.within is not None else pretty(replace(node, within=A.Window(amount, unit)))

    return st.tuples(queries, st.integers(4, 12), st.sampled_from([None, "EVENTS"])).map(window)


@st.composite
def arrivals(draw):
    events = draw(streams(min_size=1, max_size=20))
    delay = draw(st.integers(0, 4))
    jitter = np.array(draw(st.lists(st.floats(0, delay), min_size=len(events), max_size=len(events))))
    return events, jitter, draw(st.integers(1, 5)), delay, draw(st.sets(st.integers(0, 4)))


def streamed_rows(query: str, arrival, engine: str) -> None:
    q = cepkit.parse(query)
    assume(q.within is not None and not whole_history(q))
    try:
        cepkit.runtime.selection.select_engine(q, engine, {})
    except cepkit.QueryError:
        assume(False)
    events, jitter, batches, delay, restarts = arrival
    calls = []
    with checked_rows(calls):
        run_stream(query, events, jitter, batches, delay, engine, restarts)
    for seen in {fact for facts, _ in calls for fact in facts}:
        event(f"a call with {seen}")


@pytest.mark.parametrize("engine", ["automaton", "reference"])
@settings(max_examples=150, deadline=None)
@given(query=windowed(unary_queries(max_depth=2)), arrival=arrivals())
def test_rows_from_columns_equal_rows_per_match(query, arrival, engine):
    """Plain SEQ, Kleene (lists), OR (None for the branch not taken), PARTITION BY id (one buffer holding
    several keys: each row takes its key from its last event), empty results; the automaton returns
    ``MatchList``s, the reference lists."""
    streamed_rows(query, arrival, engine)


@pytest.mark.parametrize("engine", ["stack", "reference"])
@settings(max_examples=30, deadline=None)
@given(query=windowed(flat_seq_queries(strategies=("ALL", "STNM"))), arrival=arrivals())
def test_rows_with_negation_and_waiting_matches(query, arrival, engine):
    """Negations hold matches back to a later call or to the matcher's ``close`` (a list after a batch's
    result); a lost matcher is rebuilt from the buffer (``restarts``)."""
    streamed_rows(query, arrival, engine)


def test_kleene_or_and_keys_in_one_call():
    """One worked case of every column kind: a Kleene list, an OR variable left unbound (None), singles
    as Int64 with <NA>, the key of each match's last event, and the ranks' positions (not the ranks)."""
    query = "(A+ a OR B b) ; C c WITHIN 10 s PARTITION BY id"
    events = [
        {"type": t, "ts": i, "v": 0, "id": k}
        for i, (t, k) in enumerate([("A", 1), ("A", 1), ("B", 2), ("C", 1), ("C", 2)])
    ]
    calls = []
    with checked_rows(calls):
        out = run_stream(query, events, np.zeros(len(events)), 1, 0, "automaton")
    assert "rows of MatchList" in set.union(*[facts for facts, _ in calls])
    got = sorted(zip(out["positions"].map(tuple), out["a"], out["b"].astype(object), out["c"], out["id"]), key=repr)
    assert got == sorted(
        [
            ((0, 1, 3), [0, 1], pd.NA, 3, 1),
            ((0, 3), [0], pd.NA, 3, 1),
            ((1, 3), [1], pd.NA, 3, 1),
            ((2, 4), None, 2, 4, 2),
        ],
        key=repr,
    )
    assert str(out["b"].dtype) == "Int64" and out["a"].dtype == object


def test_rows_of_a_buffer_whose_ranks_do_not_start_at_zero():
    """Later calls read buffers whose first fed events were dropped (ranks start past 0), and positions
    are the stream's own (a Kafka offset, say), not ranks."""
    q = cepkit.parse("A a ; B b WITHIN 2 s")
    split = plan_split(q)
    matcher, horizon = GroupMatcher(q, "automaton", {}, COLUMNS, split), Horizon.of(split)
    frame = stream_frame([{"type": "AB"[i % 2], "ts": 5 * (i // 2) + i % 2, "v": 0, "id": 0} for i in range(12)])
    frame[POS] = 1000 + 10 * np.arange(len(frame))
    buffer, live, calls, out, first_ranks = KeyBuffer(frame.iloc[:0]), None, [], [], []
    with checked_rows(calls):
        for part in np.array_split(np.arange(len(frame)), 6):
            rows = frame.iloc[part]
            first_ranks.append(buffer.events[FED].min() if FED in buffer.events else None)
            found, buffer, _, live = advance(buffer, rows, int(rows[TIME].max()) + 1, matcher, horizon, live)
            out += [list(p) for p in found["positions"]]
    assert out == [[1000 + 20 * i, 1010 + 20 * i] for i in range(6)]
    assert [n for _, n in calls] == [1] * 6 and first_ranks[2:] == [2, 4, 6, 8]
