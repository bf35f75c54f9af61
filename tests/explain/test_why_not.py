"""``cepkit.why_not`` on long streams: its bounded search samples the whole stream."""

import pandas as pd
import pytest

import cepkit


def test_the_search_covers_the_whole_stream_not_its_first_candidates():
    """issue 21: with more candidates than the budget, why_not judged the first ones (January of the flights
    year) and missed a closer one later in the stream (May). Pair i has a.v = i: the closest is the last."""
    events = [e for i in range(1000) for e in ({"type": "A", "ts": 2 * i, "v": i}, {"type": "B", "ts": 2 * i + 1})]
    misses = cepkit.why_not("SEQ(A a, B b) WHERE a.v > 5000 WITHIN 1", events, limit=3, budget=50)
    assert misses[0].positions == (1998, 1999) and not misses.complete
    assert 0 < misses.searched <= 50 and "taken evenly over the whole stream from 1,000" in misses.summary()
    assert max(p for m in misses for p in m.positions) == 1999


def test_reasons_print_datetimes_in_the_time_zone_asked_for():
    """A view in a time zone (the Workbench's ``tz``) reads its reasons in that zone, not in UTC."""
    import pandas as pd

    events = pd.DataFrame(
        {"type": ["A", "B"], "ts": pd.to_datetime(["2013-06-02 16:00:00", "2013-06-02 16:02:30"], utc=True)}
    )
    query = "SEQ(A a, B b) WITHIN 2 min"
    (utc,) = [r.message for r in cepkit.explain(query, events, (0, 1)).reasons if "span" in r.message]
    assert "at ts 2013-06-02 16:00:00+00:00 to event 1 at ts 2013-06-02 16:02:30+00:00" in utc
    (new_york,) = [
        r.message for r in cepkit.explain(query, events, (0, 1), tz="America/New_York").reasons if "span" in r.message
    ]
    assert "at ts 2013-06-02 12:00:00-04:00 to event 1 at ts 2013-06-02 12:02:30-04:00" in new_york
    misses = cepkit.why_not(query, events, tz="America/New_York")
    assert any("12:00:00-04:00" in r.message for m in misses for r in m.reasons)


def test_a_misspelt_type_is_named_where_no_candidate_exists():
    """A type no event has leaves nothing to judge: "0 near misses among 0 candidates" said nothing of why."""
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 2}]
    misses = cepkit.why_not("SEQ(A a, Bb b)", events)
    assert len(misses) == 0 and [w.reason for w in misses.absent] == [
        "no event of type 'Bb' in the stream; did you mean 'B'?"
    ]
    assert "did you mean 'B'?\n  SEQ(A a, Bb b)\n           ^^^^" in str(misses)
    assert "did you mean" in misses._repr_html_()
    assert cepkit.why_not("SEQ(A a, B b)", events).absent == []


def test_own_type_and_ts_columns_and_the_users_query_in_errors():
    """``cepkit.match(q, clicks, type=, ts=)`` found nothing and why_not/explain did not take ``type=``/``ts=``;
    an attribute one type lacks was blamed on the relaxed query why_not runs, printed in its own words."""
    clicks = pd.DataFrame(
        {
            "event": ["view", "buy", "view", "buy"],
            "when": ["2024-05-01 10:00", "2024-05-01 10:20", "2024-05-01 11:00", "2024-05-01 11:03"],
            "amount": [None, 5.0, None, 50.0],
        }
    )
    query = "view v ; buy b WHERE b.amount > 10 WITHIN 10 min"
    assert cepkit.match(query, clicks, type="event", ts="when").positions() == [(2, 3)]
    misses = cepkit.why_not(query.replace("> 10", "> 100"), clicks, type="event", ts="when")
    assert [m.positions for m in misses][:1] == [(2, 3)]
    assert cepkit.explain(query, clicks, (2, 3), type="event", ts="when").is_match
    text = "view v ; buy b WHERE v.amout > 10 WITHIN 10 min"  # no event has an amout
    with pytest.raises(cepkit.QueryError, match=r"unknown attribute 'amout' of 'v'.*\n  view v ; buy b WHERE"):
        cepkit.why_not(text, clicks, type="event", ts="when")


def test_the_budget_a_relaxation_leaves_goes_to_the_others():
    """Each relaxation had budget / (relaxations left) however few candidates the others had: 75 of 405 were
    judged while the summary said the budget of 300 was spent."""
    events = [{"type": t, "ts": i, "v": 200, "w": 0} for i, t in enumerate("AB" * 100)]
    misses = cepkit.why_not("SEQ(A a, B b) WHERE a.v > 100 and b.w > 100 WITHIN 5", events, budget=30)
    # only dropping `b.w > 100` finds candidates (dropping the window or `a.v > 100` leaves `b.w > 100`)
    assert misses.searched == 30 and "the budget of 30 candidates was spent" in misses.stopped
