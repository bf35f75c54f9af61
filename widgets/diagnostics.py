"""The query editor's check as you type, for the local ``Workbench`` and the ``SparkWorkbench`` alike: the
query checked against the events' types and columns (``cepkit.check``: line and column with a caret, "did
you mean" for keywords and units), event types the events never have named with the closest one
(``cepkit.type_warnings``), and the empty editor's hint (where the language is described, an example over
the events' own types)."""

from __future__ import annotations

import html
from typing import NamedTuple, Optional

import pandas as pd

import cepkit


class Checked(NamedTuple):
    """What the editor shows of its text: the query (None when it does not check), the diagnostics line
    (HTML), and the ``QueryError``s the editor underlines."""

    query: Optional[cepkit.Query]
    html: str
    errors: tuple = ()
    warnings: tuple = ()


def check_text(text: str, schema, hierarchy=None, of: str = "the stream's") -> Checked:
    """The editor's ``text`` checked against ``schema`` (a ``Stream`` of the events, or of one event per type
    for a Spark DataFrame); ``of`` names the events in the ✓ line.

    >>> checked = check_text("A a ; B b WITHN 3 s", cepkit.runtime.Stream.from_any([{"type": "A"}]))
    >>> checked.query is None and "WITHIN" in checked.html
    True
    """
    if not text.strip():
        return Checked(None, hint(schema))
    try:
        query = cepkit.check(text, schema, hierarchy=hierarchy)  # attributes, keys, units
    except cepkit.QueryError as err:
        return Checked(None, error_html(err), (err,))
    warnings = tuple(cepkit.type_warnings(query, schema))
    if warnings:  # it runs, but finds nothing of those types: said before Run, not after
        return Checked(query, "".join(error_html(w, color="#9a6700", mark="⚠ ") for w in warnings), (), warnings)
    features = ", ".join(sorted(query.features)) or "none"
    return Checked(
        query,
        f"<small style='color:#070'>✓ checked against {of} types and columns · strategy "
        f"{query.strategy} · features: {html.escape(features)}</small>",
    )


def error_html(err: Exception, color: str = "#b00", mark: str = "") -> str:
    """An error as the widgets show it: its message wrapped between words, and a query's source line with its
    caret kept whole (scrolled sideways if too wide, never wrapped, so the caret stays under its column). A
    warning (``cepkit.type_warnings``) is shown the same way in its own ``color``, its message after ``mark``.

    >>> print(error_html(cepkit.QueryError("unexpected 'WITHN'", "A a WITHN 3", 1, 5, 5)))  # doctest: +ELLIPSIS
    <div style='color:#b00'><pre style='white-space:pre-wrap;...'>line 1, column 5: unexpected &#x27;WITHN&#x27;</pre><div class='cepkit-scroll'><pre style='white-space:pre;...'>  A a WITHN 3
          ^^^^^</pre></div></div>
    """
    lines = str(err).split("\n")
    located = isinstance(err, cepkit.QueryError) and None not in (err.line, err.column, err.text)
    snippet, rest = (lines[1:3], lines[:1] + lines[3:]) if located else ([], lines)
    wrapped = "white-space:pre-wrap;word-break:normal;overflow-wrap:break-word;margin:0"
    whole = "white-space:pre;margin:0"  # in TABLE_CSS's cepkit-scroll box: the widget stays within the output
    parts = [f"<pre style='{wrapped}'>{html.escape(mark + rest[0])}</pre>"]
    if snippet:
        parts.append(
            f"<div class='cepkit-scroll'><pre style='{whole}'>{html.escape(chr(10).join(snippet))}</pre></div>"
        )
    if rest[1:]:
        parts.append(f"<pre style='{wrapped}'>{html.escape(chr(10).join(rest[1:]))}</pre>")
    return f"<div style='color:{color}'>" + "".join(parts) + "</div>"


def hint(schema) -> str:
    """The empty editor's hint: where the language is described, and a query over the events' own types
    (the two most frequent)."""
    codes = pd.Series(schema.type_codes).value_counts().index[:2].tolist() if len(schema) else []
    types = [str(schema.type_names[c]) for c in codes] or ["A", "B"]
    first, second = types[0], types[-1]
    example = html.escape(f"{type_text(first)} AS x ; {type_text(second)} AS y")
    names = sorted(map(str, schema.type_names)) if len(schema) else []
    listed = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return (
        "<small>Type a query (the language: <code>docs/language.md</code>), e.g. "
        f"<code>{example}</code>" + (f"; the events' types: {html.escape(listed)}" if names else "") + ".</small>"
    )


def type_text(name: str) -> str:
    """An event type as a query writes it: as is, or in backquotes when it is not a plain name."""
    try:
        cepkit.parse(f"{name} AS x")
        return name
    except cepkit.QueryError:
        return f"`{name}`"
