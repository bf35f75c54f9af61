"""MATCH_RECOGNIZE over a stream (``cepkit/match_recognize/stream.py``): the rows out of every batch and
the close are the batch query's rows, however the rows are cut into batches, on both matchers."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepkit.errors import QueryError
from cepkit.match_recognize import RowStream, parse, sql

from .test_properties import CONDITIONS, OTHER_ROWS, frames, queries


def streamable(text: str) -> str:
    """The query as a stream takes it: one row per match, no anchors."""
    for rows in (
        "ALL ROWS PER MATCH WITH UNMATCHED ROWS",
        "ALL ROWS PER MATCH OMIT EMPTY MATCHES",
        "ALL ROWS PER MATCH",
    ):
        text = text.replace(rows, "ONE ROW PER MATCH")
    return text.replace("^", "A").replace("$", "B")


def by_partition(frame: pd.DataFrame, query) -> pd.DataFrame:
    """Rows of each partition in their order, partitions one after another (a stream interleaves them)."""
    if not query.partition or not len(frame):
        return frame.reset_index(drop=True)
    return frame.sort_values(list(query.partition), kind="stable").reset_index(drop=True)


def batch_outcome(query, frame):
    try:
        return by_partition(sql(query, frame), query)
    except QueryError as err:
        return str(err)


def stream_outcome(query, batches, watermarks):
    try:
        stream = RowStream(query)
        outs = [stream.push(batch, watermark) for batch, watermark in zip(batches, watermarks)]
        outs.append(stream.close())
        found = [out for out in outs if len(out)]
        return by_partition(pd.concat(found, ignore_index=True) if found else outs[-1], query)
    except QueryError as err:
        return str(err)


def same(got, expected):
    if isinstance(expected, str) or isinstance(got, str):
        assert got == expected
        return
    for name in got.columns:  # a measure null everywhere has no values to type it by: compare its nulls
        if expected[name].isna().all() or got[name].isna().all():
            assert got[name].isna().all() and expected[name].isna().all(), name
            got[name] = expected[name]
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), frames(), st.data())
def test_a_stream_in_order_gives_the_batch_rows(text, frame, data):
    """Rows pushed in ORDER BY order, cut anywhere (no watermark: every row pushed is settled)."""
    query = parse(streamable(text))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(frame)), max_size=4)))
    batches = [frame.iloc[a:b] for a, b in zip([0, *cuts], [*cuts, len(frame)])]
    same(stream_outcome(query, batches, [None] * len(batches)), batch_outcome(query, frame))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(CONDITIONS + OTHER_ROWS), frames(), st.data())
def test_a_stream_with_conditions_on_other_rows_gives_the_batch_rows(text, frame, data):
    """DEFINEs reading other variables' rows (the VM's registers), rows pushed in order, cut anywhere."""
    query = parse(streamable(text))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(frame)), max_size=4)))
    batches = [frame.iloc[a:b] for a, b in zip([0, *cuts], [*cuts, len(frame)])]
    same(stream_outcome(query, batches, [None] * len(batches)), batch_outcome(query, frame))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), frames(), st.data())
def test_a_stream_out_of_order_within_the_watermark_gives_the_batch_rows(text, frame, data):
    """Each batch shuffled; the watermark after a batch is the earliest time of the batches after it, so no
    row is late: rows wait until the watermark passes them, then match in ORDER BY order."""
    query = parse(streamable(text).replace("ORDER BY ts", "ORDER BY ts, i"))
    frame = frame.assign(i=np.arange(len(frame)))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(frame)), max_size=4)))
    batches = [frame.iloc[a:b] for a, b in zip([0, *cuts], [*cuts, len(frame)])]
    seed = data.draw(st.integers(0, 2**16))
    batches = [b.sample(frac=1, random_state=seed) for b in batches]
    watermarks = [min((b.ts.min() for b in batches[i + 1 :] if len(b)), default=None) for i in range(len(batches))]
    watermarks = [frame.ts.max() + pd.Timedelta(days=1) if w is None and len(frame) else w for w in watermarks]
    same(stream_outcome(query, batches, watermarks), batch_outcome(query, frame))


def test_a_match_comes_out_when_it_is_decided():
    query = parse("""SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
        MEASURES FIRST(DOWN.ts) AS top, LAST(UP.ts) AS back, MATCH_NUMBER() AS n
        PATTERN (DOWN+ UP+) DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price))""")
    stream = RowStream(query)
    first = stream.push(pd.DataFrame({"id": 1, "ts": [1, 2, 3, 4], "price": [5, 3, 2, 4]}))
    assert first.empty  # UP+ may go on with the next row
    second = stream.push(pd.DataFrame({"id": 1, "ts": [5, 6], "price": [6, 1]}))
    assert second.to_dict("records") == [{"id": 1, "top": 2, "back": 5, "n": 1}]
    assert stream.partitions[(1,)].rows.ts.tolist() == [5, 6]  # PREV's row before the next start, and it
    assert stream.close().empty


def test_within_decides_when_the_watermark_passes_the_window():
    query = parse("""SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES COUNT(B.*) AS bs
        PATTERN (A B+) WITHIN INTERVAL '10' SECOND DEFINE A AS v = 0, B AS v > 0)""")
    at = lambda s: pd.Timestamp("2024-01-01") + pd.Timedelta(seconds=s)  # noqa: E731
    stream = RowStream(query)
    assert stream.push(pd.DataFrame({"ts": [at(0), at(1), at(2)], "v": [0, 1, 1]}), at(3)).empty
    out = stream.push(pd.DataFrame({"ts": [at(12)], "v": [5]}), at(11))  # no row to come joins the window
    assert out.bs.tolist() == [2]


@pytest.mark.parametrize(
    "text, message",
    [
        ("ALL ROWS PER MATCH PATTERN (A)", "ONE ROW PER MATCH only"),
        ("PATTERN (^A)", r"anchor \^"),
    ],
)
def test_what_a_stream_refuses(text, message):
    with pytest.raises(QueryError, match=message):
        RowStream(parse(f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts {text} DEFINE A AS v > 0)"))
