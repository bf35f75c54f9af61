"""MATCH_RECOGNIZE in the Workbench (docs/language.md §13): the editor takes the SQL notation beside
cepkit's own, over the Workbench's events as a table (their columns: ``type``, ``ts``, the attributes; the first two
under the user's own names when the Workbench was given ``type=``/``ts=``).

A run finds the matches with ``cepkit.match_recognize.find`` (the rows of each match, the standard's
semantics) and gives two views of them: the matches as ``cepkit.Matches`` over the stream, so the
timeline, the results grid and picking work as for any query; and the query's own output rows (MEASURES,
ONE ROW or ALL ROWS PER MATCH) in the "SQL rows" tab. Explain says, for the picked match or any event,
why the rows from there are (or are not) a match (``cepkit.match_recognize.why_not``). The engine and
strategy pickers do not apply: the standard fixes both (AFTER MATCH SKIP and the pattern's preferment).
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass
from typing import Optional

import ipywidgets as widgets
import numpy as np
import pandas as pd

import cepkit
from cepkit import match_recognize as mr

from .diagnostics import Checked, error_html
from .execution import Run
from .figures import full_width, plural
from .paged_table import PagedTable, TableData

POSITION = "__cepkit_position"  # each row's position in the Workbench's stream, carried through the sort
NOT_FOR_SQL = ("Automaton", "Strategies", "Funnel", "Rewrite")  # tabs of cepkit's own language only


def table(stream, columns: Optional[dict] = None) -> pd.DataFrame:
    """The stream's events as the table the query reads: its type and ts columns under the user's own names
    (``columns``, the Workbench's ``type=``/``ts=``), each row's position in ``POSITION``."""
    renames = {canonical: own for canonical, own in (columns or {}).items() if own != canonical}
    return stream.frame.rename(columns=renames, copy=False).assign(**{POSITION: stream.positions})


def check_text(text: str, stream, columns: Optional[dict] = None) -> Checked:
    """The editor's MATCH_RECOGNIZE text parsed and its columns checked against the stream's, named as the
    user's own (``columns``; line, column, caret and "did you mean" on an error)."""
    try:
        query = mr.parse(text)
        mr.run.check_columns(query, table(stream, columns).columns.drop(POSITION))
    except cepkit.QueryError as err:
        return Checked(None, error_html(err), (err,))
    return Checked(
        query,
        "<small style='color:#070'>✓ MATCH_RECOGNIZE (SQL row pattern recognition, "
        "docs/language.md §13) over the events' columns: checked</small>",
    )


@dataclass(frozen=True)
class RecognizeRun(Run):
    """A MATCH_RECOGNIZE run: ``matches`` (the non-empty ones, as cepkit ``Matches``), the query's output
    ``rows``, and ``found`` (per match of ``matches``, its index among the query's matches)."""

    query: Optional[object] = None
    rows: Optional[pd.DataFrame] = None
    matched: Optional[object] = None
    found: Optional[np.ndarray] = None


def run(query, stream, columns: Optional[dict] = None) -> RecognizeRun:
    """Run ``query`` over the stream's events as a table (``table``)."""
    started = time.perf_counter()
    frame = table(stream, columns)
    matched = mr.find(query, frame)
    rows = mr.output(matched).drop(columns=[POSITION], errors="ignore")
    matches, found = matched.as_matches(matched.rows[POSITION].to_numpy(), stream)
    seconds = time.perf_counter() - started
    empty = len(matched) - len(matches)
    note = (
        f"MATCH_RECOGNIZE ({matched.info['matcher']} matcher): {plural(len(rows), 'output row')} in the "
        "SQL rows tab"
        + (f"; {plural(empty, 'empty match', 'empty matches')} there only (no rows to draw)" if empty else "")
    )
    return RecognizeRun(matches, seconds, note, query, rows, matched, found)


def rows_view(last: RecognizeRun) -> widgets.Widget:
    """The query's output rows, every one paged, searched and exported as CSV."""
    table = PagedTable(noun="row", selectable=False, csv_name="match_recognize.csv", layout=full_width())
    rows = last.rows
    table.set_data(TableData(len(rows), lambda: rows, lambda ids: rows.iloc[ids]))
    return table


class RecognizeExplain(widgets.VBox):
    """Why the rows from an event on are a match or not: the picked match's first event, or any position."""

    def __init__(self, last: RecognizeRun, stream, columns: Optional[dict] = None):
        self.last = last
        self.stream = stream
        self.columns = columns
        self.position = widgets.BoundedIntText(
            value=0, min=0, max=max(len(stream) - 1, 0), description="event", layout=widgets.Layout(width="180px")
        )
        self.button = widgets.Button(description="Why (not)?", icon="question")
        self.button.on_click(lambda _: self.explain_position(self.position.value))
        self.text = widgets.HTML(
            "<small>Pick a match, or give an event's position and press <i>Why (not)?</i>: "
            "what the rows from there map to, or the condition that fails.</small>"
        )
        super().__init__([widgets.HBox([self.position, self.button]), self.text], layout=full_width())

    def explain_match(self, i: int) -> None:
        """The picked match (index into the run's ``matches``)."""
        matched = self.last.matched
        k = int(self.last.found[i])
        part = int(matched.part[k])
        first = int(matched.bounds[part, 0])
        self._show(int(matched.start[k]) - first, self._key(first), int(matched.rows[POSITION].iloc[matched.start[k]]))

    def explain_position(self, position: int) -> None:
        """Why the rows from the event at ``position`` (in the stream) are or are not a match."""
        rows = self.last.matched.rows
        at = np.flatnonzero(rows[POSITION].to_numpy() == position)
        if not len(at):
            self.text.value = f"<pre>no event at position {position}</pre>"
            return
        bounds = self.last.matched.bounds
        part = int(np.searchsorted(bounds[:, 0], at[0], side="right") - 1)
        first = int(bounds[part, 0])
        self._show(int(at[0]) - first, self._key(first), position)

    def _key(self, first: int):
        keys = list(self.last.query.partition)
        if not keys:
            return None
        values = tuple(self.last.matched.rows.iloc[first][keys])
        return values[0] if len(values) == 1 else values

    def _show(self, start: int, key, position: int) -> None:
        frame = table(self.stream, self.columns)
        try:
            explanation = mr.why_not(self.last.query, frame, start=start, key=key)
        except cepkit.QueryError as err:
            self.text.value = error_html(err)
            return
        where = "" if key is None else f" of partition {html.escape(str(key))}"
        self.text.value = (
            f"<small>from the event at position {position}: row {start}{where} in ORDER BY order "
            "(the rows below are counted so)</small>"
            f"<pre>{html.escape(str(explanation))}</pre>"
        )


def not_for_sql(title: str) -> widgets.Widget:
    return widgets.HTML(
        f"<small>The {html.escape(title)} tab shows queries in cepkit's own language; a "
        "MATCH_RECOGNIZE query's matches are on the Timeline, its output rows in the SQL rows tab, "
        "and Explain says why rows are or are not a match.</small>"
    )
