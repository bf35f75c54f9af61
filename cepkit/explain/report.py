"""What ``cepkit.explain`` and ``cepkit.why_not`` return: reasons pointing into the query text, and their
rendering for a terminal (carets, like a ``QueryError``) and for Jupyter (the query text underlined)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from ..errors import caret_snippet

KINDS = (
    "type",
    "order",
    "condition",
    "window",
    "negation",
    "exists",
    "partition",
    "strategy",
    "consume",
    "return",
    "limit",
    "satisfied",
)

FAILED_COLOUR, SATISFIED_COLOUR, UNDECIDED_COLOUR = "#d62728", "#2ca02c", "#b07d00"


@dataclass(frozen=True)
class Reason:
    """One reason of a verdict, in the language's terms.

    ``kind`` is one of ``KINDS``; ``message`` one sentence with the values seen; ``span`` the (start, end)
    character offsets of the part of the query it is about, None when it is about the stream alone;
    ``events`` the positions it is about; ``values`` what was read (e.g. ``{"x.tmp": 35}``), so a reason can
    be checked again by whoever doubts it.
    """

    kind: str
    message: str
    span: Optional[tuple] = None
    events: tuple = ()
    values: Mapping = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.kind != "satisfied"


@dataclass
class Explanation:
    """Whether ``candidate`` is a match of ``query`` over the events, and why (``reasons``).

    ``candidate`` holds the bindings judged (var -> position, or tuple of positions for a Kleene variable),
    or the positions when no binding of them to the pattern exists; ``positions`` the sorted positions.
    ``stopped`` says why the verdict is undecided (the reference's search budget was spent before the
    selection could be judged: ``is_match`` is then False, ``reasons`` hold what was judged), None when
    it is decided.
    """

    query: str
    candidate: object
    positions: tuple
    is_match: bool
    reasons: list
    stopped: Optional[str] = None

    @property
    def decided(self) -> bool:
        """Whether the verdict is known (the judgement was not stopped early)."""
        return self.stopped is None

    @property
    def colour(self) -> str:
        """The verdict's colour in views: green a match, red not a match, amber undecided."""
        if not self.decided:
            return UNDECIDED_COLOUR
        return SATISFIED_COLOUR if self.is_match else FAILED_COLOUR

    @property
    def failures(self) -> list:
        """The reasons that are not ``satisfied``."""
        return [r for r in self.reasons if r.failed]

    def verdict(self) -> str:
        shown = _show_candidate(self.candidate)
        if self.stopped is not None:
            return f"{shown} is undecided, stopped early: {self.stopped}"
        return f"{shown} is a match" if self.is_match else f"{shown} is not a match"

    def __str__(self):
        lines = [self.verdict() + ":"]
        for reason in self.reasons:
            mark = "ok" if reason.kind == "satisfied" else reason.kind
            lines.append(f"- [{mark}] {reason.message}")
            if reason.span is not None:
                line, column, width = _line_column(self.query, reason.span)
                lines.append(caret_snippet(self.query, line, column, width))
        return "\n".join(lines)

    def __repr__(self):
        return f"<Explanation: {self.verdict()}, {len(self.failures)} failed clause(s)>"

    def query_html(self) -> str:
        """The query text as HTML, each reason's part underlined (red: failed, green: satisfied)."""
        return underlined(self.query, self.reasons)

    def _repr_html_(self):
        colour = self.colour
        items = "".join(
            f"<li><b style='color:{SATISFIED_COLOUR if not r.failed else FAILED_COLOUR}'>"
            f"{html.escape(r.kind)}</b>: {html.escape(r.message)}</li>"
            for r in self.reasons
        )
        return (
            f"<div class='cepkit-explanation'><p><b style='color:{colour}'>{html.escape(self.verdict())}</b></p>"
            f"<pre style='white-space:pre-wrap'>{self.query_html()}</pre><ul>{items}</ul></div>"
        )


class NearMisses(list):
    """``cepkit.why_not``'s answer: the near misses (``Explanation``s), fewest failed clauses first.

    ``complete`` tells whether the bounded search was exhaustive; ``stopped`` says why not; ``searched``
    how many candidates were judged; ``absent`` the event types the query names that no event has (a
    ``QueryError`` each, at the type, with the closest type there is: ``cepkit.type_warnings``).
    """

    def __init__(
        self,
        explanations,
        complete: bool,
        stopped: Optional[str] = None,
        searched: int = 0,
        query: str = "",
        absent: Sequence = (),
    ):
        super().__init__(explanations)
        self.complete = complete
        self.stopped = stopped
        self.searched = searched
        self.query = query
        self.absent = list(absent)

    def summary(self) -> str:
        n, judged = len(self), self.searched
        head = (
            f"{n:,} near {'miss' if n == 1 else 'misses'} among {judged:,} "
            f"{'candidate' if judged == 1 else 'candidates'} judged"
        )
        return head + ("; the search was exhaustive" if self.complete else f"; stopped early: {self.stopped}")

    def __str__(self):
        return "\n\n".join([self.summary(), *map(str, self.absent), *map(str, self)])

    def _repr_html_(self):
        absent = "".join(f"<pre>{html.escape(str(w))}</pre>" for w in self.absent)
        return f"<p>{html.escape(self.summary())}</p>" + absent + "".join(e._repr_html_() for e in self)


# ----------------------------------------------------------------------------- spans
def node_span(node, text: str) -> Optional[tuple]:
    """(start, end) character offsets of an AST node's source span in ``text`` (None without one)."""
    span = getattr(node, "span", None)
    if span is None:
        return None
    line, column, end_line, end_column = span
    return _offset(text, line, column), _offset(text, end_line, end_column)


def _offset(text: str, line: int, column: int) -> int:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    return min(starts[min(line, len(starts)) - 1] + column - 1, len(text))


def _line_column(text: str, span: tuple) -> tuple:
    """(line, column, width) of an offset span, 1-based, for ``caret_snippet`` (a span over several lines
    is marked on its first line)."""
    start, end = span
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    line_end = text.find("\n", start)
    end = min(end, len(text) if line_end < 0 else line_end)
    return line, column, max(end - start, 1)


_CLAUSES = r"WITHIN|PARTITION\s+BY|CONSUME\s+BY|RETURN|LIMIT|WHERE|FILTER|SELECT|FROM|PATTERN"


def clause_span(text: str, keyword: str) -> Optional[tuple]:
    """(start, end) of a clause the tree keeps no node for (``PARTITION BY``, ``CONSUME BY``, ``RETURN``):
    from its keyword to the next clause's keyword or the end of the text."""
    found = re.search(rf"\b{keyword}\b", text, re.IGNORECASE)
    if found is None:
        return None
    after = re.search(rf"\b(?:{_CLAUSES})\b", text[found.end() :], re.IGNORECASE)
    end = found.end() + after.start() if after else len(text)
    return found.start(), len(text[:end].rstrip())


def strategy_span(text: str, name: str) -> Optional[tuple]:
    """(start, end) of the strategy word in a ``SELECT <strategy>`` header."""
    found = re.search(rf"\bSELECT\s+({name})\b", text, re.IGNORECASE)
    return found.span(1) if found else None


def underlined(text: str, reasons) -> str:
    """HTML of the query text with each reason's span underlined: red where a clause failed, green where
    one is satisfied (a failure wins where they overlap)."""
    colours = [None] * len(text)
    for reason in sorted(reasons, key=lambda r: r.failed):  # failures last: they paint over
        if reason.span is not None:
            start, end = reason.span
            for i in range(start, min(end, len(text))):
                colours[i] = FAILED_COLOUR if reason.failed else SATISFIED_COLOUR
    out, i = [], 0
    while i < len(text):
        j = i
        while j < len(text) and colours[j] == colours[i]:
            j += 1
        chunk = html.escape(text[i:j])
        out.append(
            chunk
            if colours[i] is None
            else f"<u style='text-decoration-color:{colours[i]};text-decoration-thickness:2px;"
            f"color:{colours[i]}'>{chunk}</u>"
        )
        i = j
    return "".join(out)


def _show_candidate(candidate) -> str:
    if isinstance(candidate, Mapping):
        return "{" + ", ".join(f"{var}: {value}" for var, value in candidate.items()) + "}"
    return str(tuple(candidate))
