"""``ResultsGrid``: the matches of a run as a data grid, one row per match, searched, sorted, paged, exported.

The grid is a ``PagedTable`` (docs/decisions.md says why not itables): the rows stay in the kernel and the page
gets the rows on show, so it holds every match of a run (a year of flights, a million events) and its search
and sort see every match; the line under it says which rows are on show of how many, and its CSV button
downloads every match the search keeps (not the page). "to DataFrame" puts every match in a notebook
variable. ``selected`` is the picked match's index, which is how a row picked here highlights its match on
the timeline and a match clicked on the timeline pages the grid to its row.

Columns: those of ``Matches.to_pandas(fields=...)`` (``match``, ``positions``, each variable's position(s) and
the chosen ``fields`` of its events, ``x.origin``; a Kleene variable lists each of its events' values), plus
``start`` and ``end`` (first and last event times) and each variable's type and ts; times are in the
timeline's time zone. The page's rows are built from the match arrays of those rows only; search, sort and
export build the whole table once per run (and fields).
"""

from __future__ import annotations

import html
import keyword
from typing import Iterable, Optional

import ipywidgets as widgets
import numpy as np
import pandas as pd
import traitlets

import cepkit

from .figures import full_width, plural
from .paged_table import PagedTable, TableData, cell_text
from .timeline import EventCanvas, row_extremes


def _bound_lists(kind: str, value) -> list:
    """A variable's positions per match as lists (empty when unbound), from ``Matches.binding_columns``."""
    if kind == "kleene":
        offsets, positions, bound = value
        flat, bounds = positions.tolist(), offsets.tolist()
        return [flat[a:b] if ok else [] for a, b, ok in zip(bounds[:-1], bounds[1:], bound.tolist())]
    return [v if isinstance(v, list) else ([] if v is None else [v]) for v in value]


def match_frame(
    canvas: EventCanvas, matches, fields: Iterable[str] = (), rows=None, names: Optional[dict] = None
) -> pd.DataFrame:
    """One row per match (of ``rows``, match indices, when given): ``Matches.to_pandas(fields=...)`` with the
    chosen ``fields`` of every variable, plus start and end, the PARTITION BY key (a column per attribute,
    e.g. ``origin``: which airport a match is at) and each variable's type and ts (times in the canvas's time
    zone), labelled with the user's own ``names`` of those columns (``{"ts": "when"}``: ``a.when``); Kleene
    variables' values as lists. Built from the match arrays (no ``Match``)."""
    own_type, own_ts = (names or {}).get("type", "type"), (names or {}).get("ts", "ts")
    stream = canvas.stream
    if rows is not None:
        picked = np.asarray(rows, dtype=np.int64)
        matches = cepkit.Matches(matches.arrays.take(picked), matches.engine, matches.query, stream=stream)
    elif matches.stream is None:
        matches = cepkit.Matches(matches.arrays, matches.engine, matches.query, stream=stream)
    variables = matches.variables()
    frame = matches.to_pandas(fields=[f"{v}.{f}" for v in variables for f in fields])
    empty = [c for c in frame.columns[len(variables) + 2 :] if frame[c].isna().all()]
    frame = frame.drop(columns=empty).rename(columns={"match_id": "match"})  # y.tmp of an H: no such value
    if rows is not None:
        frame["match"] = picked
    arrays = matches.arrays
    low, high = row_extremes(arrays.offsets, arrays.positions, stream.times)
    frame.insert(1, "start", canvas.time_values(low))
    frame.insert(2, "end", canvas.time_values(high))
    keys = [k for k in getattr(matches.query, "partition_by", ()) if k in stream.frame.columns]
    if keys:  # every event of a match has the same key: its first event's
        offsets = arrays.offsets
        first = arrays.positions[np.minimum(offsets[:-1], max(len(arrays.positions) - 1, 0))]
        for at, key in enumerate(keys, start=3):
            values = stream.frame[key].iloc[first].to_numpy() if len(arrays.positions) else []
            frame.insert(at, key if key not in frame.columns else f"key {key}", values)
    types = stream.types
    for v, (kind, value) in reversed(list(matches.binding_columns().items())):
        at = frame.columns.get_loc(v) + 1
        if kind == "single":
            bound = value >= 0
            where = np.where(bound, value, 0)
            frame.insert(at, f"{v}.{own_ts}", canvas.time_values(np.where(bound, stream.times[where], np.nan)))
            frame.insert(at, f"{v}.{own_type}", np.where(bound, types[where], None))
        else:
            lists = _bound_lists(kind, value)
            flat = iter(canvas.time_values(stream.times[np.asarray([p for ps in lists for p in ps], dtype=np.int64)]))
            frame.insert(at, f"{v}.{own_ts}", [[next(flat) for _ in ps] for ps in lists])
            frame.insert(at, f"{v}.{own_type}", [", ".join(dict.fromkeys(types[p] for p in ps)) for ps in lists])
    return frame


def joined(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its list cells as text ("4, 6"), as the grid shows them."""
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype == object and frame[column].map(lambda v: isinstance(v, (list, tuple))).any():
            frame[column] = frame[column].map(lambda v: cell_text(v) if isinstance(v, (list, tuple)) else v)
    return frame


def fields_picker(attributes: list) -> widgets.TagsInput:
    """The picker of the fields (the events' ``attributes``) a grid of matches shows for each match."""
    return widgets.TagsInput(
        value=[],
        allowed_tags=attributes,
        allow_duplicates=False,
        placeholder="add a field (attribute)",
        layout=widgets.Layout(width="50%", min_width="220px"),
    )


def known_fields(names: Iterable[str], attributes: list) -> list:
    """``names`` as a list, each one of the events' ``attributes`` (else a ValueError naming the others)."""
    names = list(names)
    unknown = [n for n in names if n not in attributes]
    if unknown:
        raise ValueError(
            f"unknown field(s) {', '.join(map(repr, unknown))}: the events have "
            f"{', '.join(attributes) or 'no attributes'}"
        )
    return names


class ResultsGrid(widgets.VBox):
    """The matches of one run as a grid; ``selected`` is the picked match's index (None when none is)."""

    selected = traitlets.Int(None, allow_none=True, help="index of the picked match, or None")

    def __init__(self, canvas: EventCanvas, fields: Iterable[str] = (), names: Optional[dict] = None):
        self.canvas = canvas
        self.names = names  # the user's names of the type and ts columns (Workbench(type=, ts=))
        self.matches = cepkit.Matches([], "none")
        self.attributes = sorted(str(c) for c in canvas.stream.frame.columns if c not in ("type", "ts"))
        self.fields_picker = fields_picker(self.attributes)
        self.fields_picker.observe(lambda _: self._refill(), "value")
        self.export_name = widgets.Text(placeholder="variable name", layout=widgets.Layout(width="180px"))
        self.export_button = widgets.Button(
            description="to DataFrame",
            icon="table",
            tooltip="put every match in a pandas DataFrame variable of the notebook",
        )
        self.export_button.on_click(lambda _: self.export())
        self.message = widgets.HTML()
        self.note = widgets.HTML()
        self.grid = PagedTable(noun="match", nouns="matches", csv_name="matches.csv", layout=full_width())
        self.grid.observe(self._on_grid_pick, "selected")
        fields_label = widgets.HTML("<small>fields</small>", layout=widgets.Layout(width="auto"))
        self.toolbar = widgets.HBox(
            [
                fields_label,
                self.fields_picker,
                widgets.Box(layout=widgets.Layout(flex="1")),
                self.export_name,
                self.export_button,
            ],
            layout=widgets.Layout(width="100%", align_items="center", flex_flow="row wrap"),
        )
        super().__init__([self.toolbar, self.message, self.note, self.grid], layout=full_width())
        self.add_class("cepkit-results")
        self.fields = list(fields)

    # ------------------------------------------------------------------ public
    @property
    def fields(self) -> list:
        return list(self.fields_picker.value)

    @fields.setter
    def fields(self, names: Iterable[str]) -> None:
        self.fields_picker.value = known_fields(names, self.attributes)

    def set_matches(self, matches: "cepkit.Matches") -> None:
        self.matches = matches
        self.selected = None
        self.set_stale(False)
        self._refill()

    def frame(self) -> pd.DataFrame:
        """Every match as a row, lists as text ("4, 6")."""
        return joined(self.grid.data.whole())

    def export(self, name: Optional[str] = None) -> Optional[pd.DataFrame]:
        """Put ``frame()`` in the notebook's variable ``name`` (the name box by default); returns the frame."""
        name = (name if name is not None else self.export_name.value).strip()
        if not name.isidentifier() or keyword.iskeyword(name):
            self._say(
                f"{name!r} is not a Python variable name: use letters, digits and _ (not starting with a digit)",
                error=True,
            )
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
        self._say(
            f"<code>{html.escape(name)}</code> holds the {plural(len(frame), 'row')} × "
            f"{plural(len(frame.columns), 'column')}"
        )
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
        matches, canvas, fields, names = self.matches, self.canvas, self.fields, self.names
        self.grid.set_data(
            TableData(
                len(matches),
                lambda: match_frame(canvas, matches, fields, names=names),
                lambda ids: match_frame(canvas, matches, fields, ids, names),
            )
        )
        zone = f"times in {canvas.tz}" if canvas.tz else ""
        self.note.value = f"<small>{zone}</small>" if zone else ""
        self._show_selection()

    @traitlets.observe("selected")
    def _on_selected(self, change) -> None:
        self._show_selection()

    def _show_selection(self) -> None:
        if self.grid.selected != self.selected:
            self.grid.show(self.selected)

    def _on_grid_pick(self, change) -> None:
        if change["new"] != self.selected:
            self.selected = change["new"]
