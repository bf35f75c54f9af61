"""``QueryEditor``: the Workbench's query editor, CodeMirror 6 in an anywidget.

Colours for the language's keywords, event types, variables, strings, numbers and comments; completion
(as you type, or Ctrl-Space) of the grammar's keywords, the stream's event types (quoted when they are no
plain name: ``"Structure Fire"``) and variables, and after ``v.`` the attributes of ``v``'s type in the stream;
the kernel's parse error (and warnings) underlined at its span, its message on hover and in the gutter.

The JavaScript is ``cepkit-editor.js``, shipped in the package (bundled from ``scripts/editor/editor.js`` with
CodeMirror's npm packages by ``scripts/build-editor.sh``): no CDN at run time. docs/decisions.md ("The query
editor") says why CodeMirror through anywidget.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional

import anywidget
import traitlets

import cepkit
from cepkit import match_recognize
from cepkit.lang.parser import KEYWORDS

EDITOR_BUNDLE = Path(__file__).parent / "cepkit-editor.js"
# The words completion offers: the grammar's keywords ("i", the index of a Kleene step, is no word to offer),
# and MATCH_RECOGNIZE, the word that turns the editor to the SQL notation; in that notation, its own words.
COMPLETED_KEYWORDS = sorted((KEYWORDS - {"i"}) | {"match_recognize"})
SQL_KEYWORDS = sorted(match_recognize.KEYWORDS)


class QueryEditor(anywidget.AnyWidget):
    """A code editor for cepkit queries; ``value`` is its text (set it to replace the text).

    ``types`` and ``attributes`` (type -> names) feed completion; ``for_stream(stream)`` sets both from a
    stream. ``show(text, errors, warnings)`` underlines ``QueryError``s of ``text`` at their line, column and
    width (shown only while the editor holds that text).

    >>> from cepkit.widgets.execution import as_stream
    >>> editor = QueryEditor("A a ; B b")
    >>> editor.for_stream(as_stream([{"type": "A", "v": 1}, {"type": "Structure Fire", "w": 2}]))
    >>> editor.types, editor.attributes
    (['A', 'Structure Fire'], {'A': ['ts', 'v'], 'Structure Fire': ['ts', 'w']})
    >>> try:
    ...     cepkit.parse("A a ; B b WITHN 3")
    ... except cepkit.QueryError as err:
    ...     editor.show("A a ; B b WITHN 3", [err])
    >>> [(d["line"], d["column"], d["width"], d["severity"]) for d in editor.diagnostics["items"]]
    [(1, 11, 5, 'error')]
    """

    _esm = EDITOR_BUNDLE.read_text(encoding="utf-8")
    value = traitlets.Unicode("", help="the query text").tag(sync=True)
    placeholder = traitlets.Unicode("").tag(sync=True)
    rows = traitlets.Int(4, help="the editor's least height, in lines").tag(sync=True)
    keywords = traitlets.List(traitlets.Unicode(), COMPLETED_KEYWORDS).tag(sync=True)
    types = traitlets.List(traitlets.Unicode(), help="the stream's event types (completion, colour)").tag(sync=True)
    attributes = traitlets.Dict(help="event type -> its attributes (completion after 'v.')").tag(sync=True)
    diagnostics = traitlets.Dict(
        {"text": "", "items": []}, help="{'text': the text judged, 'items': [{line, column, width, severity, message}]}"
    ).tag(sync=True)

    def __init__(self, value: str = "", **kwargs):
        super().__init__(value=value, **kwargs)
        self._copied: Optional[Callable[[bool], None]] = None
        self.on_msg(self._on_message)

    def for_stream(self, stream) -> None:
        """Complete the types of ``stream`` (a ``cepkit.runtime.Stream``) and each type's attributes (with ts)."""
        names = sorted(map(str, stream.type_names)) if len(stream) else []
        self.attributes = {name: ["ts", *sorted(stream.attributes_of(frozenset({name})))] for name in names}
        self.types = names

    def use_notation(self, sql: bool) -> None:
        """Complete and colour MATCH_RECOGNIZE's words (``sql``) or cepkit's."""
        self.keywords = SQL_KEYWORDS if sql else COMPLETED_KEYWORDS

    def show(self, text: str, errors: Iterable = (), warnings: Iterable = ()) -> None:
        """Underline ``errors`` (red) and ``warnings`` (amber), ``QueryError``s of ``text``; those without a
        line and column are not drawn (the Workbench's diagnostics line says them)."""
        items = [
            {"line": e.line, "column": e.column, "width": max(e.width, 1), "severity": severity, "message": e.reason}
            for severity, found in (("error", errors), ("warning", warnings))
            for e in found
            if isinstance(e, cepkit.QueryError) and e.line is not None and e.column is not None
        ]
        self.diagnostics = {"text": text, "items": items}

    def copy(self, text: str, done: Optional[Callable[[bool], None]] = None) -> None:
        """Put ``text`` on the page's clipboard; ``done(ok)`` is called with whether the page could (a page
        served over plain http from another host may not)."""
        self._copied = done
        self.send({"event": "copy", "text": text})

    def _on_message(self, _, content, buffers) -> None:
        if isinstance(content, dict) and content.get("event") == "copied" and self._copied is not None:
            self._copied(bool(content.get("ok")))

    def complete(self) -> None:
        """Open the completion list at the cursor, as Ctrl-Space does (for a demo, or a test)."""
        self.send({"event": "complete"})

    def __repr__(self):
        return f"QueryEditor({self.value!r})"
