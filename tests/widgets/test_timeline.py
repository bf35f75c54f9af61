"""MatchTimeline without a browser: traces, colours and groups, selection (set or clicked), sampling,
aggregation, time zones, retractions."""

import pandas as pd
import pytest
import traitlets

import cepkit
from cepkit.runtime import Stream
from cepkit.widgets import MatchTimeline
from cepkit.widgets.figures import FIGURE_CONFIG
from cepkit.widgets.timeline import PALETTE, late_positions

# [CEL] §2: the outputs of φ1 on the Figure 1 stream, with their bindings.
PHI1 = [cepkit.Match.of({"x": 1, "y": 2}), cepkit.Match.of({"x": 1, "y": 8}), cepkit.Match.of({"x": 5, "y": 8})]


def points(trace):
    """The (x, y) vertices of a polyline trace, None separators dropped."""
    return [(x, y) for x, y in zip(trace.x, trace.y) if x is not None]


def drawn_matches(timeline) -> set:
    """Indices of the matches drawn, over every match trace."""
    return {k for trace in timeline.match_traces() for k in trace.customdata if k is not None}


def test_lanes_follow_first_appearance_and_every_event_is_drawn(farm):
    timeline = MatchTimeline(farm, PHI1)
    assert [t.name for t in timeline.figure.data] == [
        "event density",
        "events",
        "withdrawn",
        "match #0",
        "match #1",
        "match #2",
        "late insertions",
        "events around the pick",
        "selected",
    ]
    assert timeline.figure.layout.yaxis.ticktext == ("T", "H")
    events = timeline.trace("events")
    assert list(events.x) == list(range(9))
    assert list(events.y) == [0, 0, 1, 1, 0, 0, 0, 1, 1]
    assert "tmp = 45" in events.hovertext[1] and "id = 0" in events.hovertext[1]


def test_each_match_is_a_polyline_through_its_events_in_order(farm):
    timeline = MatchTimeline(farm, PHI1)
    traces = timeline.match_traces()
    assert [list(t.x) for t in traces] == [[1, 2, None], [1, 8, None], [5, 8, None]]
    assert [list(t.customdata) for t in traces] == [[0, 0, None], [1, 1, None], [2, 2, None]]
    assert len({t.line.color for t in traces}) == 3  # a colour per match
    # matches sharing an event (8) are drawn apart, each near its events' lanes
    y_of_8 = [y for t in traces for x, y in points(t) if x == 8]
    assert len(set(y_of_8)) == 2 and all(abs(y - 1) < 0.3 for y in y_of_8)
    assert "x = 1, y = 8" in traces[1].hovertext[0]


def test_selecting_a_match_highlights_it_and_lists_its_events(farm):
    timeline = MatchTimeline(farm, PHI1)
    assert len(timeline.trace("selected").x) == 0
    timeline.selected = 2
    assert [x for x, _ in points(timeline.trace("selected"))] == [5, 8]
    assert (
        "match #2" in timeline.details.value
        and "position'>5</td><td class='key'>x</td><td class='key'>T</td>" in timeline.details.value
    )
    timeline.selected = None
    assert len(timeline.trace("selected").x) == 0
    with pytest.raises(traitlets.TraitError):
        timeline.selected = 3


def test_a_part_of_a_larger_result_is_numbered_as_the_larger_one(farm):
    """A sample (the Spark Workbench's: some matches of a Spark result, only their events) names each match
    by its number in the whole result and each event by its position in the whole stream."""
    ids, positions = [7, 120, 4031], [100 + 10 * p for p in range(len(farm))]
    timeline = MatchTimeline(farm, PHI1, numbering=(ids, positions))
    assert [t.name for t in timeline.match_traces()] == ["match #7", "match #120", "match #4031"]
    assert timeline.match_traces()[1].hovertext[0].startswith("match #120")
    assert "position 110 ·" in timeline.trace("events").hovertext[1]
    timeline.selected = 2
    assert (
        "match #4031" in timeline.details.value
        and "position'>150</td><td class='key'>x</td><td class='key'>T</td>" in timeline.details.value
    )


def test_clicking_a_match_selects_it_and_an_event_does_not(farm, click):
    timeline = MatchTimeline(farm, PHI1)
    names = [t["name"] for t in timeline.plot.figure["data"]]
    click(timeline.plot, names.index("events"), 5)
    assert timeline.selected is None
    click(timeline.plot, names.index("match #1"), 1)
    assert timeline.selected == 1
    selected = timeline.plot.figure["data"][names.index("selected")]
    assert [x for x in selected["x"] if x is not None] == [1, 8]  # the page was sent the highlighted match
    click(timeline.plot, names.index("selected"), 0)
    assert timeline.selected == 1


def test_set_matches_sends_a_new_figure_whole(farm):
    timeline = MatchTimeline(farm, PHI1)
    figure = timeline.figure
    timeline.selected = 0
    timeline.set_matches(PHI1[:1])
    assert timeline.figure is not figure and timeline.plot in timeline.children
    assert [t["name"] for t in timeline.plot.figure["data"]].count("match #0") == 1
    assert "match #1" not in [t["name"] for t in timeline.plot.figure["data"]]
    assert timeline.selected is None
    assert [x for x in timeline.trace("match #0").x] == [1, 2, None]
    assert repr(timeline) == "MatchTimeline(events=9, matches=1, selected=None)"


def test_kleene_bindings_show_on_each_of_their_events(farm):
    # [CEL] §2, φ3: {3,4,6,7} with y iterating over 4 and 6
    timeline = MatchTimeline(farm, [cepkit.Match.of({"x": 3, "y": (4, 6), "z": 7})])
    texts = [t for t in timeline.trace("match #0").hovertext if t]
    assert texts[1].startswith("match #0 · y") and "y = (4, 6)" in texts[1]


def test_many_events_are_aggregated_and_the_title_says_so():
    n = 5000
    events = pd.DataFrame({"type": ["A", "B"] * (n // 2), "ts": range(n)})
    matches = [cepkit.Match.of({"a": 10, "b": 11}), cepkit.Match.of({"a": 4000, "b": 4001})]
    timeline = MatchTimeline(events, matches, max_events=1000)
    assert sorted(timeline.trace("events").x) == [10, 11, 4000, 4001]  # matched events stay individual
    density = timeline.trace("event density")
    assert 0 < len(density.x) <= 1000
    counted = sum(int(t.split()[0]) for t in density.hovertext)
    assert counted == n - 4
    assert "binned" in timeline.figure.layout.title.text and timeline.notes


def test_a_match_picked_on_a_binned_stream_draws_the_events_of_its_zoom(monkeypatch):
    """A bin of a long stream is wider than the zoom to a picked match: the events of the zoom are drawn one by
    one (at most ``AROUND``, the nearest, said under the figure), and let go when the pick is."""
    import cepkit.widgets.timeline as timeline_module

    n = 20_000
    events = pd.DataFrame({"type": ["A", "B"] * (n // 2), "ts": range(n)})
    matches = [cepkit.Match.of({"a": 10_000, "b": 10_001})]
    timeline = MatchTimeline(events, matches, max_events=1000)
    around = timeline.trace("events around the pick")
    assert not around.x and not around.showlegend
    timeline.selected = 0
    low, high = 9_981, 10_020  # the zoom: the span and a thousandth of the whole (20 s) on each side
    around = timeline.trace("events around the pick")
    assert list(around.customdata) == list(range(low, high + 1)) and list(around.x) == list(range(low, high + 1))
    assert around.showlegend and "Drawn around it" not in timeline.details.value
    monkeypatch.setattr(timeline_module, "AROUND", 10)
    timeline.selected = None
    timeline.selected = 0
    assert sorted(timeline.trace("events around the pick").customdata) == list(range(9_996, 10_006))
    assert "the 10 events nearest it of the 40 in this range" in timeline.details.value
    timeline.selected = None
    assert not timeline.trace("events around the pick").x


def test_many_matches_are_sampled_over_the_whole_time_range_and_the_title_says_so(farm):
    matches = [cepkit.Match.of({"x": i}) for i in reversed(range(9))]  # match k starts at ts 8 - k
    timeline = MatchTimeline(farm, matches, max_matches=4)
    starts = sorted(8 - k for k in drawn_matches(timeline))
    assert len(starts) == 4 and starts[0] == 0 and starts[-1] == 8  # both ends of the range
    assert "showing 4 of 9 matches, spread evenly" in timeline.figure.layout.title.text
    undrawn = next(k for k in range(9) if k not in drawn_matches(timeline))
    timeline.selected = undrawn  # an undrawn match can still be selected
    assert [x for x, _ in points(timeline.trace("selected"))] == [8 - undrawn]


def test_many_matches_cycle_colours_under_one_legend_entry(farm):
    matches = [cepkit.Match.of({"x": i % 9}) for i in range(20)]
    timeline = MatchTimeline(farm, matches)
    traces = timeline.match_traces()
    assert len(traces) == len(PALETTE) and drawn_matches(timeline) == set(range(20))
    assert {t.legendgroup for t in traces} == {"matches"} and [t.showlegend for t in traces].count(True) == 1


def test_group_by_colours_each_group_with_its_own_legend_entry(farm):
    matches = [cepkit.Match.of({"x": p}) for p in range(9)]
    timeline = MatchTimeline(farm, matches, group_by="id")
    names = sorted(t.name for t in timeline.match_traces())
    assert names == ["id = 0 (4)", "id = 1 (4)", "id = 2 (1)"]
    by_type = MatchTimeline(farm, matches, group_by=lambda m: "early" if m.positions[0] < 4 else "late")
    assert sorted(t.name for t in by_type.match_traces()) == ["group = early (4)", "group = late (5)"]
    with pytest.raises(ValueError, match="group_by must be .* one of the events' columns"):
        MatchTimeline(farm, matches, group_by="idd")


def test_datetime_ts_stay_datetimes():
    events = pd.DataFrame({"type": ["A", "B"], "ts": pd.to_datetime(["2013-01-01 05:00", "2013-01-01 06:30"])})
    timeline = MatchTimeline(events, [cepkit.Match.of({"a": 0, "b": 1})])
    assert pd.Timestamp(timeline.trace("events").x[1]) == pd.Timestamp("2013-01-01 06:30")
    assert timeline.figure.layout.xaxis.title.text == "ts (UTC)"


def test_a_time_zone_moves_the_axis_to_its_clocks_and_a_bad_one_is_explained():
    events = pd.DataFrame({"type": ["A", "B"], "ts": pd.to_datetime(["2013-01-01 05:00", "2013-07-01 06:30"])})
    timeline = MatchTimeline(events, [cepkit.Match.of({"a": 0, "b": 1})], tz="America/New_York")
    x = [pd.Timestamp(v) for v in timeline.trace("events").x]
    assert x == [pd.Timestamp("2013-01-01 00:00"), pd.Timestamp("2013-07-01 02:30")]  # EST, then EDT
    assert "EDT" in timeline.trace("events").hovertext[1]
    assert timeline.figure.layout.xaxis.title.text == "ts (America/New_York)"
    timeline.zone.value = "Mars/Olympus"
    assert "unknown time zone &#x27;Mars/Olympus" in timeline.zone_error.value and timeline.tz == "America/New_York"
    timeline.zone.value = "UTC"
    assert timeline.zone_error.value == "" and pd.Timestamp(timeline.trace("events").x[0]).hour == 5
    with pytest.raises(ValueError, match="unknown time zone"):
        MatchTimeline(events, tz="EST5")


def test_hovers_round_numbers_and_the_modebar_has_no_cloud_buttons():
    events = [{"type": "A", "ts": 0, "v": 6.904679999999999}]
    timeline = MatchTimeline(events, [cepkit.Match.of({"a": 0})])
    assert "v = 6.905<" in timeline.trace("match #0").hovertext[0] + "<"
    assert "sendDataToCloud" in FIGURE_CONFIG["modeBarButtonsToRemove"]
    assert timeline.plot.config == FIGURE_CONFIG
    assert "withdrawn" not in timeline.figure.layout.title.text  # no "· 0 withdrawn"
    assert timeline.figure.layout.title.text == "1 event · 1 match"


def test_bad_limits_are_explained(farm):
    with pytest.raises(ValueError, match="max_matches must be a whole number >= 1"):
        MatchTimeline(farm, max_matches=0)


def test_late_events_are_those_below_an_earlier_arrivals_ts():
    stream = Stream.from_any([{"type": "A", "ts": t} for t in (1, 5, 3, 6, 2, 6)])
    assert late_positions(stream) == {2, 4}


def test_retractions_are_withdrawn_and_late_insertions_starred():
    # Aggressive out-of-order mode ([LIU] ch. 3): A@1, C@5 arrive, then a late B@3. SEQ(A, !B, C) emitted
    # (0, 1) at once and withdraws it when B arrives; SEQ(A, B, C)-like results that use B are late insertions.
    events = [{"type": "A", "ts": 1}, {"type": "C", "ts": 5}, {"type": "B", "ts": 3}]
    emitted = cepkit.Match.of({"a": 0, "c": 1})
    inserted = cepkit.Match.of({"a": 0, "b": 2, "c": 1})
    deltas = [emitted, cepkit.Match(emitted.positions, emitted.bindings, "-", 2), inserted]
    matches = cepkit.Matches([inserted], "stack", deltas=deltas)
    timeline = MatchTimeline(events, matches)
    assert [x for x, _ in points(timeline.trace("withdrawn"))] == [1, 5]
    late = timeline.trace("late insertions")
    assert [x for x, _ in points(late)] == [1, 3, 5]  # logical order: A@1, B@3, C@5
    assert [s for s, x in zip(late.marker.symbol, late.x) if x is not None] == ["circle", "star", "circle"]
    assert "1 withdrawn" in timeline.figure.layout.title.text
    assert len(timeline.matches) == 1


def test_no_matches(farm):
    timeline = MatchTimeline(farm)
    assert timeline.match_traces() == [] and timeline.details.value == ""


def test_the_stack_engines_aggressive_mode_draws_retractions_and_late_insertions():
    # [LIU] ch. 3: A@1 and C@5 arrive, then the late B@3 and B@4, then C@6
    events = [
        {"type": "A", "ts": 1},
        {"type": "C", "ts": 5},
        {"type": "B", "ts": 3},
        {"type": "B", "ts": 4},
        {"type": "C", "ts": 6},
    ]
    negated = cepkit.match("SEQ(A a, !B b, C c) WITHIN 10", events, engine="stack", disorder="aggressive")
    timeline = MatchTimeline(events, negated)
    assert len(timeline.matches) == 0  # (0, 1) was emitted, then withdrawn
    assert [x for x, _ in points(timeline.trace("withdrawn"))] == [1, 5]
    positive = cepkit.match("SEQ(A a, B b, C c) WITHIN 10", events, engine="stack", disorder="aggressive")
    timeline = MatchTimeline(events, positive)
    late = timeline.trace("late insertions")
    assert sum(x is None for x in late.x) == len(positive.deltas) == 4  # every delta uses a late B
    starred = {x for x, s in zip(late.x, late.marker.symbol) if s == "star"}
    assert starred == {3, 4}
