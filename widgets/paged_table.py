"""``PagedTable``: a table whose rows stay in the kernel; the page shows one page of them at a time.

The browser gets the rows of the page on show (10, 25 or 100 of them) as text, never the whole table, so a
table of a million rows costs the page what a table of ten does. Search, sort and paging are done in the
kernel over every row (``TableData``): each row is one line, a cell longer than 40 characters (a Kleene
variable's times) cut at 24em with "…", its whole text on hover (the picked match's events table, the CSV and
``frame()`` have it whole). The search box keeps the rows whose text contains what is typed (any
column, case ignored), a click on a column's header sorts every row by it (again: descending), and the line
under the table says which rows are on show of how many ("rows 11–20 of 139 matches the search keeps, of
2,957"). The CSV button sends the kernel's CSV of every row the search keeps, in the order shown (not the
page) to the browser as a download. ``selected`` is the picked row's id (a row of the whole table, not of
the page); setting it from Python pages to that row (``show``). docs/decisions.md says why not itables.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Callable, Optional

import anywidget
import numpy as np
import pandas as pd
import traitlets

from .figures import format_value

PAGE_SIZES = (10, 25, 100)


def cell_text(value) -> str:
    """A cell as the page shows it: lists joined by ", ", numbers rounded, nulls empty.

    >>> cell_text([4, 6]), cell_text(2.50001), cell_text(None), cell_text(pd.NaT), cell_text("JFK")
    ('4, 6', '2.5', '', '', 'JFK')
    """
    if isinstance(value, (list, tuple, np.ndarray)):
        return ", ".join(cell_text(v) for v in value)
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, (pd.Timestamp, datetime.datetime)):
        return str(value)
    return format_value(value.item() if isinstance(value, np.generic) else value)


@dataclass
class TableData:
    """The rows behind a ``PagedTable``: ``frame()`` every row (typed, built when first needed: sorting,
    searching or exporting need it), ``page(ids)`` the page's rows as the page shows them (by default
    ``frame()``'s rows as text), and ``size`` the number of rows. A row's id is its place in ``frame()``."""

    size: int
    frame: Callable[[], pd.DataFrame]
    page: Optional[Callable[[np.ndarray], pd.DataFrame]] = None
    columns: Optional[list] = None
    _cached: Optional[pd.DataFrame] = field(default=None, repr=False)

    def whole(self) -> pd.DataFrame:
        if self._cached is None:
            self._cached = self.frame()
        return self._cached

    def rows(self, ids: np.ndarray) -> pd.DataFrame:
        if self.page is not None:
            return self.page(ids)
        return self.whole().iloc[ids]

    def column_names(self) -> list:
        if self.columns is None:
            self.columns = [str(c) for c in self.rows(np.arange(min(self.size, 1))).columns]
        return self.columns


def sort_key(column: pd.Series) -> pd.Series:
    """What a column sorts by: lists by their first item, mixed objects by their text."""
    if column.dtype == object:
        firsts = column.map(lambda v: v[0] if isinstance(v, (list, tuple)) and len(v) else v)
        numbers = pd.to_numeric(firsts, errors="coerce")
        if numbers.notna().sum() == firsts.notna().sum():
            return numbers
        return firsts.map(lambda v: "" if v is None else str(v))
    return column


class PagedTable(anywidget.AnyWidget):
    """Rows paged from the kernel (``set_data(TableData)``), searched and sorted over every row, exported
    whole as CSV, one row picked (``selected``).

    >>> table = PagedTable(noun="event")
    >>> table.set_data(TableData(25, lambda: pd.DataFrame({"n": range(25)})))
    >>> table.rows[:2], table.info()
    ([['0'], ['1']], 'rows 1–10 of 25 events')
    >>> table.search = "2"; table.total, table.rows[:3]
    (7, [['2'], ['12'], ['20']])
    >>> table.show(22); table.page, table.selected
    (0, 22)
    """

    columns = traitlets.List(traitlets.Unicode()).tag(sync=True)
    rows = traitlets.List(help="the page's rows, as text").tag(sync=True)
    ids = traitlets.List(traitlets.Int(), help="the id of each row of the page").tag(sync=True)
    page = traitlets.Int(0).tag(sync=True)
    page_size = traitlets.Int(PAGE_SIZES[0]).tag(sync=True)
    sizes = traitlets.List(traitlets.Int(), list(PAGE_SIZES)).tag(sync=True)
    search = traitlets.Unicode("").tag(sync=True)
    sort = traitlets.Unicode("", help="the column the rows are sorted by ('' for their own order)").tag(sync=True)
    descending = traitlets.Bool(False).tag(sync=True)
    total = traitlets.Int(0, help="rows the search keeps").tag(sync=True)
    count = traitlets.Int(0, help="rows in all").tag(sync=True)
    selected = traitlets.Int(None, allow_none=True, help="id of the picked row, or None").tag(sync=True)
    selectable = traitlets.Bool(True).tag(sync=True)
    noun = traitlets.Unicode("row").tag(sync=True)
    nouns = traitlets.Unicode("").tag(sync=True)
    csv_name = traitlets.Unicode("", help="the CSV file's name ('' hides the CSV button)").tag(sync=True)
    busy = traitlets.Unicode("").tag(sync=True)
    info_text = traitlets.Unicode("", help="which rows are on show, of how many").tag(sync=True)

    _esm = r"""
    function button(text, title) {
      const b = document.createElement("button");
      b.textContent = text; b.title = title; b.className = "cepkit-page-button";
      return b;
    }
    const LONG = 40;   // characters: a longer cell (a Kleene variable's times) is cut at 24em with "…"
    function render({ model, el }) {
      el.classList.add("cepkit-paged-table");
      const bar = document.createElement("div"); bar.className = "cepkit-table-bar";
      const search = document.createElement("input");
      search.type = "search"; search.placeholder = "search every row"; search.className = "cepkit-table-search";
      const size = document.createElement("select"); size.className = "cepkit-page-size";
      const csv = button("CSV", "download every row the search keeps, as CSV"); csv.classList.add("cepkit-csv");
      const busy = document.createElement("span"); busy.className = "cepkit-table-busy";
      bar.append(search, size, csv, busy);
      const scroll = document.createElement("div"); scroll.className = "cepkit-table-scroll";
      const table = document.createElement("table"); table.className = "cepkit-grid";
      scroll.append(table);
      const foot = document.createElement("div"); foot.className = "cepkit-table-foot";
      const info = document.createElement("span"); info.className = "cepkit-table-info";
      const first = button("«", "first page"), prev = button("‹", "previous page");
      const next = button("›", "next page"), last = button("»", "last page");
      const pager = document.createElement("span"); pager.className = "cepkit-pager";
      const where = document.createElement("span");
      pager.append(first, prev, where, next, last);
      // a table wider than its box (the scroll bar may be hidden until one scrolls): the columns out of sight
      const more = document.createElement("span"); more.className = "cepkit-table-more";
      foot.append(info, more, pager);
      el.append(bar, scroll, foot);
      const hint = () => {
        const edge = scroll.getBoundingClientRect().left + scroll.clientWidth;
        const out = [...table.querySelectorAll("thead th")].filter((th) => th.getBoundingClientRect().right > edge + 1);
        more.textContent = !out.length ? "" : `scroll sideways → for ${out.length} more column` +
          `${out.length > 1 ? "s" : ""}: ${out.map((th) => th.textContent).join(", ")}`;
      };
      scroll.addEventListener("scroll", hint);
      new ResizeObserver(hint).observe(scroll);
      const pages = () => Math.max(1, Math.ceil(model.get("total") / model.get("page_size")));
      const go = (page) => { model.set("page", Math.min(Math.max(page, 0), pages() - 1)); model.save_changes(); };
      first.onclick = () => go(0); prev.onclick = () => go(model.get("page") - 1);
      next.onclick = () => go(model.get("page") + 1); last.onclick = () => go(pages() - 1);
      size.onchange = () => { model.set("page_size", Number(size.value)); model.set("page", 0); model.save_changes(); };
      let timer = null;
      search.oninput = () => {
        clearTimeout(timer);
        timer = setTimeout(() => { model.set("search", search.value); model.set("page", 0); model.save_changes(); }, 250);
      };
      csv.onclick = () => model.send({ event: "csv" });
      model.on("msg:custom", (msg, buffers) => {
        if (!msg || msg.event !== "csv" || !buffers.length) return;
        const blob = new Blob([buffers[0]], { type: "text/csv" });
        const link = document.createElement("a");
        link.href = URL.createObjectURL(blob); link.download = msg.name;
        document.body.append(link); link.click(); link.remove();
        setTimeout(() => URL.revokeObjectURL(link.href), 10000);
      });
      const draw = () => {
        const sizes = model.get("sizes");
        size.replaceChildren(...sizes.map((n) => { const o = document.createElement("option");
          o.value = String(n); o.textContent = `${n} rows`; return o; }));
        size.value = String(model.get("page_size"));
        if (document.activeElement !== search) search.value = model.get("search");
        csv.style.display = model.get("csv_name") ? "" : "none";
        busy.textContent = model.get("busy");
        const columns = model.get("columns"), sort = model.get("sort"), down = model.get("descending");
        const head = document.createElement("tr");
        for (const name of columns) {
          const th = document.createElement("th");
          th.textContent = name + (name === sort ? (down ? " ▼" : " ▲") : "");
          th.title = "sort every row by " + name;
          th.onclick = () => {
            model.set("descending", name === model.get("sort") ? !model.get("descending") : false);
            model.set("sort", name); model.set("page", 0); model.save_changes();
          };
          head.append(th);
        }
        const body = document.createElement("tbody");
        const ids = model.get("ids"), picked = model.get("selected");
        model.get("rows").forEach((row, i) => {
          const tr = document.createElement("tr");
          tr.dataset.id = String(ids[i]);
          if (ids[i] === picked) tr.classList.add("cepkit-picked");
          for (const cell of row) {        // a row is one line; the table scrolls sideways
            const td = document.createElement("td"); td.textContent = cell;
            if (cell.length > LONG) { td.className = "cepkit-long"; td.title = cell; }  // a Kleene list: … and a hover
            tr.append(td);
          }
          if (model.get("selectable")) tr.onclick = () => {
            model.set("selected", model.get("selected") === ids[i] ? null : ids[i]); model.save_changes(); };
          body.append(tr);
        });
        if (!ids.length) {
          const tr = document.createElement("tr"), td = document.createElement("td");
          td.colSpan = Math.max(columns.length, 1); td.className = "cepkit-empty";
          td.textContent = model.get("count") ? "no row contains the search" : "no rows";
          tr.append(td); body.append(tr);
        }
        const thead = document.createElement("thead"); thead.append(head);
        table.replaceChildren(thead, body);
        info.textContent = model.get("info_text");
        hint();
        where.textContent = `page ${model.get("page") + 1} of ${pages()}`;
        prev.disabled = first.disabled = model.get("page") <= 0;
        next.disabled = last.disabled = model.get("page") >= pages() - 1;
      };
      model.on("change", draw);
      draw();
    }
    export default { render };
    """
    _css = """
    .cepkit-paged-table { font-size: 13px; width: 100%; min-width: 0; }
    .cepkit-table-bar, .cepkit-table-foot { display: flex; flex-wrap: wrap; gap: 6px; align-items: center;
      margin: 4px 0; }
    .cepkit-table-foot { justify-content: space-between; }
    .cepkit-table-search { flex: 1 1 200px; max-width: 360px; padding: 2px 6px; }
    .cepkit-table-scroll { overflow-x: auto; max-width: 100%; }
    table.cepkit-grid { border-collapse: collapse; width: 100%; }
    table.cepkit-grid th { background: #f6f8fa; cursor: pointer; user-select: none; white-space: nowrap; }
    table.cepkit-grid th, table.cepkit-grid td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left;
      vertical-align: top; white-space: nowrap; }
    table.cepkit-grid td.cepkit-long { max-width: 24em; overflow: hidden; text-overflow: ellipsis; }
    /* a table wider than its box scrolls sideways: its first column (which row) stays at the left */
    table.cepkit-grid tbody tr { background: var(--jp-layout-color0, white); }
    table.cepkit-grid th:first-child, table.cepkit-grid td:first-child { position: sticky; left: 0; z-index: 1;
      background: inherit; box-shadow: inset -1px 0 #d0d7de, inset 0 -1px #d0d7de; }  /* (over the table's borders) */
    table.cepkit-grid thead tr { background: #f6f8fa; }
    table.cepkit-grid tbody tr:hover { background: #f0f6ff; }
    table.cepkit-grid tr.cepkit-picked, table.cepkit-grid tr.cepkit-picked:hover { background: #ffe3e3; }
    table.cepkit-grid td.cepkit-empty { color: #777; font-style: italic; }
    .cepkit-page-button { min-width: 28px; }
    .cepkit-pager span { margin: 0 6px; }
    .cepkit-table-busy { color: #9a6700; }
    .cepkit-table-more { color: #555; font-style: italic; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.data = TableData(0, lambda: pd.DataFrame())
        self.order: Optional[np.ndarray] = None  # the ids the search keeps, in the order shown (None: all)
        self._filling = True  # False while set_data resets the traits: the page is filled once, after
        self.on_msg(self._on_message)

    # ------------------------------------------------------------------ public
    def set_data(self, data: TableData, selected: Optional[int] = None) -> None:
        """Show other rows: no search, no sort, the row ``selected`` picked and its page shown (else none and
        the first page). The page is filled once (rows paged from Spark: each fill is a fetch)."""
        self.data = data
        self.order = None
        with self.hold_sync():
            self._filling = False
            try:
                self.selected = selected
                self.search, self.sort, self.descending = "", "", False
                self.page = 0 if selected is None else selected // self.page_size
            finally:
                self._filling = True
            self.columns = data.column_names()
            self.count = self.total = data.size
            self._fill()

    def show(self, row_id: Optional[int]) -> None:
        """Pick the row ``row_id`` and page to it (when the search keeps it)."""
        with self.hold_sync():
            self.selected = row_id
            if row_id is not None:
                at = row_id if self.order is None else np.flatnonzero(self.order == row_id)
                at = int(at) if np.ndim(at) == 0 else (int(at[0]) if len(at) else None)
                if at is not None and at // self.page_size != self.page:
                    self.page = at // self.page_size

    def kept(self) -> pd.DataFrame:
        """Every row the search keeps, in the order shown (the CSV's rows)."""
        whole = self.data.whole()
        return whole if self.order is None else whole.iloc[self.order]

    def csv(self) -> bytes:
        return self.kept().to_csv(index=False).encode()

    def info(self) -> str:
        nouns = self.nouns or self.noun + "s"
        if not self.total:
            return f"no {nouns}" if not self.count else f"no row of {self.count:,} {nouns} contains {self.search!r}"
        first = self.page * self.page_size + 1
        last = min(first + self.page_size - 1, self.total)
        of = (
            f"{self.total:,} {self.noun if self.total == 1 else nouns} the search keeps, of {self.count:,}"
            if self.total < self.count
            else f"{self.count:,} {self.noun if self.count == 1 else nouns}"
        )
        return f"rows {first:,}–{last:,} of {of}"

    def __repr__(self):
        return f"PagedTable(rows={self.count}, shown={len(self.rows)}, page={self.page}, selected={self.selected})"

    # ------------------------------------------------------------------ internals
    @traitlets.observe("search", "sort", "descending")
    def _reorder(self, change=None) -> None:
        if not self.search and not self.sort:
            self.order = None
        else:
            self.busy = "searching…" if self.search else "sorting…"
            try:
                whole = self.data.whole()
                ids = np.arange(len(whole))
                if self.search:
                    needle = self.search.lower()
                    hit = np.zeros(len(whole), dtype=bool)
                    for name in whole.columns:
                        hit |= whole[name].map(cell_text).str.lower().str.contains(needle, regex=False).to_numpy()
                    ids = ids[hit]
                if self.sort and self.sort in whole.columns:
                    key = sort_key(whole[self.sort].iloc[ids]).reset_index(drop=True)
                    ids = ids[
                        key.sort_values(
                            ascending=not self.descending, kind="stable", na_position="last"
                        ).index.to_numpy()
                    ]
                self.order = ids
            finally:
                self.busy = ""
        self.total = self.data.size if self.order is None else len(self.order)
        self._fill()

    @traitlets.observe("page", "page_size")
    def _paged(self, change) -> None:
        self._fill()

    def _fill(self) -> None:
        if not self._filling:
            return
        pages = max(1, -(-self.total // self.page_size))
        if self.page >= pages:
            self.page = pages - 1  # observed: fills again
            return
        start = self.page * self.page_size
        stop = min(start + self.page_size, self.total)
        ids = np.arange(start, stop) if self.order is None else self.order[start:stop]
        frame = self.data.rows(ids) if len(ids) else None
        with self.hold_sync():
            self.ids = [int(i) for i in ids]
            self.rows = [] if frame is None else [[cell_text(v) for v in row] for row in frame.itertuples(index=False)]
            self.info_text = self.info()

    def _on_message(self, _, content, buffers) -> None:
        if isinstance(content, dict) and content.get("event") == "csv" and self.csv_name:
            self.send({"event": "csv", "name": self.csv_name}, [self.csv()])
