"""MATCH_RECOGNIZE in the Workbench: the editor checks it, Run finds the rows ``cepkit.sql`` finds, the
timeline and grid show its matches, the SQL rows tab its output rows, Explain why rows match or not."""

import pandas as pd
import pytest

import cepkit
from cepkit.widgets import Workbench

PRICES = pd.DataFrame({"type": "P", "ts": range(10), "id": [1, 2] * 5, "price": [5, 9, 3, 8, 2, 7, 4, 8, 6, 1]})
QUERY = """SELECT * FROM prices MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
    MEASURES FIRST(DOWN.ts) AS top, LAST(UP.ts) AS back, COUNT(DOWN.*) AS falls
    PATTERN (DOWN+ UP+) DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price))"""


def tab(wb, title):
    wb.tabs.selected_index = wb._tab_titles.index(title)
    return wb.tabs.children[wb._tab_titles.index(title)].children[0]


def test_a_match_recognize_query_runs_in_the_workbench():
    wb = Workbench(PRICES, query=QUERY)
    assert not wb.run_button.disabled and wb.engine_picker.disabled and wb.strategy_picker.disabled
    run = wb.run()
    expected = cepkit.sql(QUERY, PRICES)
    pd.testing.assert_frame_equal(run.rows, expected)
    assert len(expected) == 2
    # the matches on the timeline and in the grid: each one's events, by position in the stream
    assert wb.matches.positions() == [(3, 5, 7), (2, 4, 6, 8)]  # in output order: by last event
    assert wb.results.grid.count == 2
    assert tab(wb, "SQL rows").count == 2
    assert "Automaton tab shows queries in cepkit's own language" in tab(wb, "Automaton").value
    assert "rows = cepkit.sql(QUERY, events)" in wb.code()


def test_explain_follows_the_picked_match_and_says_why_not_for_an_event():
    wb = Workbench(PRICES, query=QUERY)
    wb.run()
    explain = tab(wb, "Explain")
    wb.selected = 1
    assert "are match 1" in explain.text.value and "position 2: row 1 of partition 1" in explain.text.value
    explain.explain_position(0)  # id 1 at ts 0: no row before it for DOWN's PREV
    assert "starts no match" in explain.text.value


def test_a_misspelt_column_is_named_with_its_line_column_and_a_suggestion():
    wb = Workbench(PRICES, query=QUERY.replace("DOWN AS price", "DOWN AS prise"))
    assert wb.run_button.disabled
    message = wb.diagnostics.value
    assert "line 3" in message and "did you mean &#x27;price&#x27;?" in message and "^^^^^" in message


@pytest.mark.parametrize("text", [QUERY, QUERY.replace("PATTERN", "ALL ROWS PER MATCH PATTERN")])
def test_the_report_holds_the_sql_rows(tmp_path, text):
    wb = Workbench(PRICES, query=text)
    wb.run()
    wb.to_html(tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert "<h2>SQL rows</h2>" in page and "falls" in page


def test_the_sql_reads_the_users_own_type_and_ts_columns():
    # Workbench(type=, ts=) renames the columns for cepkit's language; MATCH_RECOGNIZE reads the table as the
    # user wrote it (cepkit.sql over the same frame), not `type` and `ts`
    own = PRICES.rename(columns={"type": "kind", "ts": "day"}).assign(day=lambda f: f.day.astype(str))
    text = QUERY.replace("ORDER BY ts", "ORDER BY day").replace(".ts)", ".day)")
    wb = Workbench(own, query=text, type="kind", ts="day")
    assert not wb.run_button.disabled, wb.diagnostics.value
    run = wb.run()
    pd.testing.assert_frame_equal(run.rows, cepkit.sql(text, own.assign(day=own.day.astype(int))))
    wb = Workbench(own, query=QUERY, type="kind", ts="day")
    assert wb.run_button.disabled and "no column 'ts'" in wb.diagnostics.value.replace("&#x27;", "'")
