"""The results grid holds, pages, searches, sorts and exports every match, however many (issue 21: itables'
``update()`` kept 64 KB of rows, 819 of 2,957 flight matches, and dropped its CSV button)."""

import io

import numpy as np
import pandas as pd

from cepkit.widgets import Workbench
from cepkit.widgets.paged_table import PagedTable, TableData

N = 3000  # matches: ~100 bytes of JSON each, far beyond 64 KB


def many_matches() -> tuple:
    """N A;B pairs over a day of datetimes; the pair k has a.v = 100,000 + k."""
    ts = pd.date_range("2013-01-01", periods=2 * N, freq="2s", tz="UTC")
    events = pd.DataFrame({"type": ["A", "B"] * N, "ts": ts, "v": np.repeat(np.arange(N) + 100_000, 2)})
    return events, "SEQ(A a, B b) WHERE a.v = b.v WITHIN 5 s"


def csv_of(table: PagedTable) -> pd.DataFrame:
    sent = []
    table.send = lambda content, buffers=None: sent.append((content, buffers))
    table._handle_custom_msg({"event": "csv"}, [])
    ((content, buffers),) = sent
    assert content == {"event": "csv", "name": table.csv_name}
    return pd.read_csv(io.BytesIO(buffers[0]))


def test_the_grid_holds_pages_and_searches_every_match():
    events, query = many_matches()
    wb = Workbench(events, query=query, tz="America/New_York")
    wb.run()
    grid = wb.results.grid
    assert len(wb.matches) == N and grid.count == grid.total == N
    assert len(grid.rows) == grid.page_size and grid.info_text == f"rows 1–10 of {N:,} matches"
    grid.page_size = 100
    seen = []
    for page in range(N // 100):  # every match is on some page, in order
        grid.page = page
        seen += grid.ids
    assert seen == list(range(N))
    assert grid.info_text == f"rows {N - 99:,}–{N:,} of {N:,} matches"
    wb.results.fields = ["v"]
    grid = wb.results.grid
    grid.search = "102999"  # the last match: beyond what a 64 KB grid held
    assert grid.ids == [N - 1] and grid.total == 1
    assert grid.info_text == "rows 1–1 of 1 match the search keeps, of 3,000"
    columns = grid.columns
    assert grid.rows[0][columns.index("a.v")] == "102999"
    assert grid.rows[0][columns.index("start")] == "2012-12-31 22:19:56"  # New York, not UTC
    grid.search = ""
    grid.sort, grid.descending = "a.v", True
    assert grid.ids[:3] == [N - 1, N - 2, N - 3]


def test_csv_exports_every_match_after_every_run_not_the_page():
    events, query = many_matches()
    wb = Workbench(events, query=query)
    for _ in range(2):  # the button is there after each run, not only the first
        wb.run()
        assert wb.results.grid.csv_name
        exported = csv_of(wb.results.grid)
        assert len(exported) == N and exported["match"].tolist() == list(range(N))
    wb.results.grid.search = "B"  # every row binds a B: all kept
    assert len(csv_of(wb.results.grid)) == N
    wb.results.fields = ["v"]
    wb.results.grid.search = "10299"  # 102990..102999
    assert sorted(csv_of(wb.results.grid)["a.v"]) == list(range(102990, 103000))


def test_picking_on_the_timeline_pages_the_grid_to_the_match():
    events, query = many_matches()
    wb = Workbench(events, query=query)
    wb.run()
    wb.timeline.selected = 1234
    grid = wb.results.grid
    assert grid.selected == 1234 and 1234 in grid.ids and grid.page == 123
    grid.selected = 7  # a row clicked in the page
    assert wb.selected == 7 and wb.timeline.selected == 7


def test_the_events_tab_pages_every_event_and_follows_the_pick():
    events, query = many_matches()
    wb = Workbench(events, query=query)
    wb.run()
    wb.tabs.selected_index = wb.tabs.titles.index("Events")
    table = wb.events_table
    assert table.count == len(events) and table.columns[:3] == ["position", "type", "ts"]
    wb.selected = 2000  # match 2000 is events 4000, 4001
    assert table.selected == 4000 and 4000 in table.ids


def test_a_table_of_no_rows_says_so():
    table = PagedTable(noun="event")
    table.set_data(TableData(0, lambda: pd.DataFrame({"n": []})))
    assert table.rows == [] and table.info_text == "no events"


def test_a_kleene_variables_times_read_as_the_single_ones():
    """On the flights year ``d.ts`` of ``DELAYED_DEPARTURE+ AS d`` read "2013-01-13T07:19:00.000, ..." (the
    timeline's ISO x values) beside "2013-01-13 07:19:00" in ``w.ts``."""
    events = pd.DataFrame(
        {"type": ["A", "B", "B"], "ts": pd.date_range("2013-01-13 12:00", periods=3, freq="5min", tz="UTC")}
    )
    wb = Workbench(events, query="A a ; B+ b WITHIN 1 hour", tz="America/New_York")
    wb.run()
    rows = [dict(zip(wb.results.grid.columns, row)) for row in wb.results.grid.rows]
    assert {r["a.ts"] for r in rows} == {"2013-01-13 07:00:00"}
    assert sorted(r["b.ts"] for r in rows) == [
        "2013-01-13 07:05:00",
        "2013-01-13 07:05:00, 2013-01-13 07:10:00",
        "2013-01-13 07:10:00",
    ]
    both = [list(ts) for ts in wb.results.grid.data.whole()["b.ts"] if len(ts) == 2]
    assert both == [[pd.Timestamp("2013-01-13 07:05"), pd.Timestamp("2013-01-13 07:10")]]


def test_new_rows_are_fetched_once_on_the_picked_rows_page():
    """``set_data`` fills the page once (a Spark grid fetches each page it fills): resetting a search, a sort
    and the page used to fill the page shown at each reset."""
    rows = pd.DataFrame({"n": range(25)})
    fetched = []

    def page(ids):
        fetched.append(list(ids))
        return rows.iloc[ids]

    table = PagedTable()
    table.set_data(TableData(25, lambda: rows, page, columns=["n"]))
    table.search, table.page = "1", 1
    fetched.clear()
    table.set_data(TableData(25, lambda: rows, page, columns=["n"]), selected=12)
    assert fetched == [list(range(10, 20))] and (table.page, table.selected, table.search) == (1, 12, "")
    assert table.info() == "rows 11–20 of 25 rows"
