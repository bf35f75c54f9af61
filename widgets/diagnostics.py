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
        return Checked(None, f"<pre style='color:#b00'>{html.escape(str(err))}</pre>", (err,))
    warnings = tuple(cepkit.type_warnings(query, schema))
    if warnings:  # it runs, but finds nothing of those types: said before Run, not after
        return Checked(
            query, "".join(f"<pre style='color:#9a6700'>⚠ {html.escape(str(w))}</pre>" for w in warnings), (), warnings
        )
    features = ", ".join(sorted(query.features)) or "none"
    return Checked(
        query,
        f"<small style='color:#070'>✓ checked against {of} types and columns · strategy "
        f"{query.strategy} · features: {html.escape(features)}</small>",
    )


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
