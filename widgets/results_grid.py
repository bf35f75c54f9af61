"""``ResultsGrid``: the matches of a run as a data grid, one row per match, sortable, filterable, exportable.

The grid is itables' ``ITable`` widget (DataTables in the browser; docs/decisions.md says why): sorting by
any column, a search box and a filter per column, paging, a CSV button that exports the rows the filters
keep, and ``selected_rows`` synced with the kernel, which is how a row picked here highlights its match on
the timeline (``selected``) and a match clicked on the timeline picks its row.

Columns: those of ``Matches.to_pandas(fields=...)`` (``match``, ``positions``, each variable's position(s) and
the chosen ``fields`` of its events, ``x.origin``; a Kleene variable lists each of its events' values), plus
``start`` and ``end`` (first and last event times) and each variable's type and ts.
"""
from __future__ import annotations

import html
import keyword
from typing import Iterable, Optional

import ipywidgets as widgets
import pandas as pd
import traitlets
from itables.widget import ITable

import cepkit

from .figures import format_value, full_width, plural
from .timeline import EventCanvas

MAX_ROWS = 5000            # rows sent to the browser; the frame (``frame``) has every match
GRID_OPTIONS = {"select": {"style": "single"}, "buttons": ["pageLength", "csvHtml5"], "column_filters": "header",
                "pageLength": 10, "lengthMenu": [10, 25, 100], "scrollX": True, "maxBytes": 0, "showIndex": False,
                "classes": "display compact cell-border", "style": "width: 100%; margin: 0"}


def match_frame(canvas: EventCanvas, matches, fields: Iterable[str] = ()) -> pd.DataFrame:
    """One row per match: ``Matches.to_pandas(fields=...)`` with the chosen ``fields`` of every variable, plus
    start and end (in the canvas's time zone) and each variable's type and ts; lists shown as "4, 6"."""
    variables = matches.variables()
    frame = matches.to_pandas(fields=[f"{v}.{f}" for v in variables for f in fields])
    empty = [c for c in frame.columns[len(variables) + 2:] if frame[c].isna().all()]
    frame = frame.drop(columns=empty).rename(columns={"match_id": "match"})   # y.tmp of an H: no such value
    times, types = canvas.stream.times, canvas.stream.types
    ordered = [canvas.logical(ps) for ps in frame["positions"]]
    frame.insert(1, "start", [canvas.x[ps[0]] if ps else None for ps in ordered])
    frame.insert(2, "end", [canvas.x[ps[-1]] if ps else None for ps in ordered])
    for v in reversed(variables):
        bound = [b if isinstance(b, (list, tuple)) else ([] if pd.isna(b) else [int(b)]) for b in frame[v]]
        at = frame.columns.get_loc(v) + 1
        frame.insert(at, f"{v}.ts", [", ".join(canvas.time_label(times[p]) for p in ps) for ps in bound])
        frame.insert(at, f"{v}.type", [", ".join(dict.fromkeys(types[p] for p in ps)) for ps in bound])
    for column in frame.columns:
        if frame[column].map(lambda value: isinstance(value, (list, tuple))).any():
            frame[column] = frame[column].map(lambda value: ", ".join(format_value(x) for x in value)
                                              if isinstance(value, (list, tuple)) else value)
    return frame


class ResultsGrid(widgets.VBox):
    """The matches of one run as a grid; ``selected`` is the picked match's index (None when none is)."""

    selected = traitlets.Int(None, allow_none=True, help="index of the picked match, or None")

    def __init__(self, canvas: EventCanvas, fields: Iterable[str] = ()):
        self.canvas = canvas
        self.matches = cepkit.Matches([], "none")
        self.attributes = sorted(str(c) for c in canvas.stream.frame.columns if c not in ("type", "ts"))
        self.fields_picker = widgets.TagsInput(value=[], allowed_tags=self.attributes, allow_duplicates=False,
                                               placeholder="add a field (attribute)",
                                               layout=widgets.Layout(width="50%", min_width="220px"))
        self.fields_picker.observe(lambda _: self._refill(), "value")
        self.export_name = widgets.Text(placeholder="variable name", layout=widgets.Layout(width="180px"))
        self.export_button = widgets.Button(description="to DataFrame", icon="table",
                                            tooltip="put the rows in a pandas DataFrame variable of the notebook")
        self.export_button.on_click(lambda _: self.export())
        self.message = widgets.HTML()
        self.note = widgets.HTML()
        self.grid = ITable(pd.DataFrame({"match": []}), **GRID_OPTIONS)
        self.grid.observe(self._on_grid_rows, "selected_rows")
        fields_label = widgets.HTML("<small>fields</small>", layout=widgets.Layout(width="auto"))
        self.toolbar = widgets.HBox([fields_label, self.fields_picker, widgets.Box(layout=widgets.Layout(flex="1")),
                                     self.export_name, self.export_button],
                                    layout=widgets.Layout(width="100%", align_items="center", flex_flow="row wrap"))
        super().__init__([self.toolbar, self.message, self.note, self.grid], layout=full_width())
        self.add_class("cepkit-results")
        self.fields = list(fields)

    # ------------------------------------------------------------------ public
    @property
    def fields(self) -> list:
        return list(self.fields_picker.value)

    @fields.setter
    def fields(self, names: Iterable[str]) -> None:
        names = list(names)
        unknown = [n for n in names if n not in self.attributes]
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(map(repr, unknown))}: the events have "
                             f"{', '.join(self.attributes) or 'no attributes'}")
        self.fields_picker.value = names

    def set_matches(self, matches: "cepkit.Matches") -> None:
        self.matches = matches
        self.selected = None
        self.set_stale(False)
        self._refill()

    def frame(self) -> pd.DataFrame:
        """Every match as a row (not only the ``MAX_ROWS`` the grid shows)."""
        return match_frame(self.canvas, self.matches, self.fields)

    def export(self, name: Optional[str] = None) -> Optional[pd.DataFrame]:
        """Put ``frame()`` in the notebook's variable ``name`` (the name box by default); returns the frame."""
        name = (name if name is not None else self.export_name.value).strip()
        if not name.isidentifier() or keyword.iskeyword(name):
            self._say(f"{name!r} is not a Python variable name: use letters, digits and _ "
                      "(not starting with a digit)", error=True)
            return None
        try:
            from IPython import get_ipython
            shell = get_ipython()
        except ImportError:
            shell = None
        frame = self.frame()
        if shell is None:
            self._say("no notebook kernel to put the variable in: use the workbench's results_frame()", error=True)
            return frame
        shell.user_ns[name] = frame
        self._say(f"<code>{html.escape(name)}</code> holds the {plural(len(frame), 'row')} × "
                  f"{plural(len(frame.columns), 'column')}")
        return frame

    def set_stale(self, stale: bool) -> None:
        """Grey the rows out, with a word why, when the query was edited after this run."""
        if stale:
            self.add_class("cepkit-stale")
        else:
            self.remove_class("cepkit-stale")

    # ------------------------------------------------------------------ internals
    def _say(self, text: str, error: bool = False) -> None:
        self.message.value = f"<small style='color:{'#b00' if error else '#555'}'>{text}</small>"

    def _refill(self) -> None:
        frame = match_frame(self.canvas, self.matches, self.fields).head(MAX_ROWS)
        self.note.value = (f"<small>the grid lists the first {MAX_ROWS:,} of {len(self.matches):,} matches; "
                           "export has them all</small>" if len(self.matches) > MAX_ROWS else "")
        self.grid.update(frame if len(frame) else pd.DataFrame({"match": []}), selected_rows=[])
        self._show_selection()

    @traitlets.observe("selected")
    def _on_selected(self, change) -> None:
        self._show_selection()

    def _show_selection(self) -> None:
        rows = [self.selected] if self.selected is not None and self.selected < MAX_ROWS else []
        if list(self.grid.selected_rows) != rows:
            self.grid.selected_rows = rows

    def _on_grid_rows(self, change) -> None:
        rows = change["new"]
        picked = rows[0] if rows else None
        if picked != self.selected:
            self.selected = picked
