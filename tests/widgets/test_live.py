"""``LiveView`` fed by a local Matcher over batches: every match of ``cepkit.match`` arrives, in order; the view
stays bounded (the last matches, a sample of the earlier ones, their events); late and dropped events are
counted; Stop ends a background feed; ``replay`` cuts a stream into batches of stream time."""

import numpy as np
import pandas as pd
import pytest

import cepkit
from widgets.live import LiveView, replay

QUERY = "SEQ(A a, B b) WHERE a.v < b.v WITHIN 5 s PARTITION BY id"


def stream(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "type": rng.choice(list("ABC"), n),
            "ts": np.sort(rng.uniform(0, n / 4, n)),
            "id": rng.integers(0, 4, n),
            "v": rng.integers(0, 10, n),
        }
    )


def test_every_match_arrives_and_the_view_stays_bounded():
    events = stream(4000)
    expected = cepkit.match(QUERY, events)
    live = LiveView.from_batches(QUERY, replay(events, every=25), view={"last": 10, "sample": 5, "context": 50})
    live.run()
    assert live.finished and live.batches == len(list(replay(events, every=25))) + 1  # and the closing one
    assert live.match_count == len(expected) > 100
    assert [m.positions for _, m in live.latest] == expected.positions()[-10:]
    assert len(live.earlier) == 5 and all(k < len(expected) - 10 for k, _ in live.earlier)
    assert all(m.positions == expected[k].positions for k, m in live.earlier)
    kept = {p for _, m in (*live.latest, *live.earlier) for p in m.positions}
    assert len(live.events) <= len(kept) + 50 < 200  # not the 4,000 events
    assert live.events.loc[sorted(kept), "v"].tolist() == events.v.iloc[sorted(kept)].tolist()
    title = live.timeline.figure.layout.title.text
    assert f"{len(expected)} matches so far, drawn: the last 10 and a sample of 5 of the {len(expected) - 10}" in title
    assert title.startswith("live · SEQ(A a, B b)")
    assert len(live.timeline.matches) == 15
    assert live.grid.value.count("<tr data-match=") == 10 and f"data-match='{len(expected) - 1}'" in live.grid.value
    assert "finished" in live.stats.value and "0 late" in live.stats.value


def test_late_events_are_counted_and_those_beyond_the_delay_dropped():
    events = pd.DataFrame({"type": list("ABABAB"), "ts": [0.0, 1, 10, 9, 12, 2], "id": 1, "v": [1, 2, 1, 2, 1, 2]})
    batches = [events.iloc[:3], events.iloc[3:]]
    live = LiveView.from_batches(QUERY, batches, delay=3)
    live.run()
    assert (live.late, live.dropped) == (2, 1)  # ts 9 arrives after 10 (late, kept); ts 2 after 12
    assert live.event_count == 5 and "2 late · 1 dropped" in live.stats.value
    assert live.match_count == len(cepkit.match(QUERY, events.drop(index=5).sort_values("ts", kind="stable")))


def test_stop_ends_a_background_feed():
    def endless():
        n = 0
        while True:
            yield stream(50, seed=n).assign(ts=lambda f: f.ts + 20 * n)
            n += 1

    live = LiveView.from_batches(QUERY, endless()).start()
    while live.batches < 3:
        live.wait(0.05)
    live.stop()
    live.wait(10)
    assert not live._thread.is_alive() and live.stopped and "stopped" in live.stats.value
    assert live.stop_button.disabled
    with pytest.raises(ValueError, match="only LiveView.from_spark on Spark Connect"):
        live.poll()  # a local feed pushes its batches; only a Connect feed's memory sinks are read


def test_replay_cuts_batches_of_stream_time():
    events = cepkit.datasets.flight_events(months=[1], kinds=["weather"])
    batches = list(replay(events, every="6h", batches=4))
    assert len(batches) == 4 and pd.concat(batches).equals(events.iloc[: sum(map(len, batches))])
    assert all(b.ts.max() - b.ts.min() < pd.Timedelta("6h") for b in batches)


def test_the_workbench_runs_its_query_live_in_a_tab():
    from widgets import Workbench

    events = stream(600)
    wb = Workbench(events.head(10), query=QUERY, strategy="NEXT")
    live = wb.live(replay(events, every=20), view={"last": 5})
    assert wb.tabs.titles[wb.tabs.selected_index] == "Live" and wb.tabs.children[wb.tabs.selected_index] is live
    live.run()
    assert live.match_count == len(cepkit.match(QUERY, events, strategy="NEXT")) > 0


class StoppedQuery:
    """A streaming query as a Spark feed holds it: active, or stopped with ``error`` (Spark's exception)."""

    def __init__(self, error=None):
        self.isActive, self.error, self.stopped = error is None, error, False

    def exception(self):
        return self.error

    def stop(self):
        self.stopped, self.isActive = True, False


def test_a_spark_feed_whose_query_failed_says_so_and_stops():
    """A Spark feed's matches query that died (Spark: "Python worker failed to connect back" when a worker
    starts slower than its fixed 10 s) is no longer shown as running with 0 matches: the view names the
    query and Spark's reason, and stops the other query."""
    live = LiveView()
    events, matches = StoppedQuery(), StoppedQuery(RuntimeError("Python worker failed to connect back.\n\tat ..."))
    live.queries.extend([events, matches])
    assert live._check_queries() and live.stopped and events.stopped
    assert "stopped: the matches query failed: Python worker failed to connect back." in live.stats.value
    assert "\tat" not in live.stats.value and live.stop_button.disabled


def test_a_spark_feeds_late_matches_keep_their_events():
    """A Spark feed emits a match once the watermark passes its window, batches after its events came and
    the latest ``context`` events moved on: the events a match still to come may hold (after the watermark
    less the window) are kept, so the late match is drawn with its events."""
    live = LiveView(context=2)
    live.horizon = 10.0
    events = pd.DataFrame({"type": ["A", "B"] + ["C"] * 6, "ts": [0.0, 5.0, 6, 7, 8, 9, 10, 11]})
    first = {"eventTime": {"watermark": "1970-01-01T00:00:00.000Z"}}
    live._add_spark_batch(events.iloc[:2], pd.DataFrame(columns=["a", "b", "positions"]), ["a", "b"], first)
    live._add_spark_batch(events.iloc[2:], pd.DataFrame(columns=["a", "b", "positions"]), ["a", "b"], first)
    assert {0, 1} <= set(live.events.index)  # beyond the latest two, but a match may still hold them
    later = {"eventTime": {"watermark": "1970-01-01T00:00:11.000Z"}}
    rows = pd.DataFrame({"a": [0], "b": [1], "positions": [[0, 1]]})
    live._add_spark_batch(events.iloc[:0], rows, ["a", "b"], later)
    frame, matches, numbers = live._window()
    assert numbers == [0] and frame["ts"].iloc[list(matches[0].positions)].tolist() == [0.0, 5.0]
    assert live.watermark == 11.0
