"""Errors that point at the offending input: a query's line and column with a caret, an event's position and field."""

from __future__ import annotations

import difflib
import os
from typing import Iterable, Optional, Sequence


def did_you_mean(word: str, choices: Iterable[str], keyword: bool = False, cutoff: float = 0.6) -> str:
    """``"; did you mean 'x'?"`` naming the choice closest to a misspelt ``word``, or ``""``: the same word in
    another case first, else the closest compared without case (``difflib``, at least ``cutoff`` alike).

    The one format of every "did you mean" in cepkit (the language's parser and checks, MATCH_RECOGNIZE's,
    columns, options, datasets), written last in the message. A name (a variable, column, type, table,
    option or value) is quoted as Python writes it; a keyword of the query's syntax (``keyword=True``: a
    clause, function, strategy or time unit, matched without case) is written bare, as it is typed:
    ``"; did you mean WITHIN?"``.

    >>> did_you_mean("prise", ["price", "volume"]), did_you_mean("PATERN", ["PATTERN", "DEFINE"], keyword=True)
    ("; did you mean 'price'?", '; did you mean PATTERN?')
    """
    choices = sorted({str(c) for c in choices})
    folded: dict = {}
    for choice in choices:
        folded.setdefault(choice.lower(), choice)
    close = [c for c in choices if c.lower() == word.lower() and c != word]
    if not close:
        close = [folded[c] for c in difflib.get_close_matches(word.lower(), list(folded), n=1, cutoff=cutoff)]
    if not close or (keyword and close[0].lower() == word.lower()):
        return ""
    return f"; did you mean {close[0]}?" if keyword else f"; did you mean {close[0]!r}?"


def shown(value) -> str:
    """A value of an event as an error message shows it: a datetime as written (``2024-05-01 10:03:00+00:00``,
    not ``Timestamp(...)``), a numpy scalar as the Python value it holds, anything else by ``repr``."""
    if hasattr(value, "isoformat"):
        return str(value)
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return repr(value.item())
    return repr(value)


def caret_snippet(text: str, line: int, column: int, width: int = 1) -> str:
    """The source line ``line`` (1-based) with a caret under ``column`` (1-based)."""
    lines = text.splitlines() or [""]
    src = lines[min(max(line, 1), len(lines)) - 1]
    return f"  {src}\n  {' ' * (column - 1)}{'^' * max(width, 1)}"


class QueryError(ValueError):
    """A query that does not parse, is not well-formed, or needs a feature the chosen engine lacks.

    ``line``/``column`` are 1-based; ``engines`` names the engines that do support a missing feature.
    """

    def __init__(
        self,
        message: str,
        text: Optional[str] = None,
        line: Optional[int] = None,
        column: Optional[int] = None,
        width: int = 1,
        engines: Sequence[str] = (),
    ):
        self.reason = message
        self.text = text
        self.line = line
        self.column = column
        self.width = width
        self.engines = tuple(engines)
        full = message
        if line is not None and column is not None:
            full = f"line {line}, column {column}: {message}"
            if text is not None:
                full += "\n" + caret_snippet(text, line, column, width)
        if self.engines:
            full += "\nengines that support it: " + ", ".join(self.engines)
        super().__init__(full)

    @classmethod
    def at(cls, node, message: str, text: Optional[str] = None, **kwargs) -> "QueryError":
        """An error located at an AST node's span (if it has one)."""
        span = getattr(node, "span", None)
        if span is None:
            return cls(message, text, **kwargs)
        line, col, end_line, end_col = span
        width = end_col - col if end_line == line and end_col > col else 1
        return cls(message, text, line, col, width, **kwargs)


class EventError(ValueError):
    """A bad event: names its position in the stream and the offending field."""

    def __init__(self, position: Optional[int], field: str, message: str):
        self.position = position
        self.field = field
        where = "an event without a position" if position is None else f"event at position {position}"
        super().__init__(f"{where}, field {field!r}: {message}")


class ColumnError(EventError):
    """A column of the data that is missing, or named twice by a mapping (``type=``, ``ts=``): names the column
    and the columns there are. An ``EventError`` (every event lacks it), reported without a position."""

    def __init__(self, field: str, message: str):
        ValueError.__init__(self, f"column {field!r}: {message}")
        self.position = 0
        self.field = field


class ResultTooLarge(MemoryError):
    """A result that cannot fit in this machine's memory, said before it is allocated: how many matches, how
    much memory, and what shrinks it. A ``MemoryError``, as numpy's own would be. ``matches`` and ``needed``
    are -1 past a 64-bit count; ``limit`` is the query's LIMIT when the engine could not use it to shrink the
    result; ``why`` what keeps the run from shrinking it (a LIMIT applied after the run by default);
    ``engines`` the engines that run it under a LIMIT."""

    def __init__(
        self,
        matches: int,
        needed: int,
        available: int,
        limit: Optional[int] = None,
        engines=(),
        why: Optional[str] = None,
    ):
        self.matches, self.needed, self.available, self.limit = matches, needed, available, limit
        self.engines = tuple(engines)
        many = f"at least {matches:,}" if matches >= 0 else "more than 2^63"
        size = f"{needed / 2**30:,.1f} GiB" if needed >= 0 else "more than 2^63 bytes"
        said = (
            f"the result has {many} more matches, {size} of positions, more than this machine's "
            f"{available / 2**30:,.1f} GiB of memory: "
        )
        if why is None and limit is not None:
            why = f"LIMIT {limit:,} does not shrink this run (with RETURN the result is cut after it)"
        if why is None:
            said += "add LIMIT n, choose a selection strategy (NEXT, LAST or MAX), or narrow the window"
        else:
            said += f"{why}; choose a selection strategy (NEXT, LAST or MAX), or narrow the window"
        if self.engines:
            said += "\nengines that run it under LIMIT: " + ", ".join(self.engines)
        super().__init__(said)


def memory_bytes() -> int:
    """This machine's physical memory (what a result may at most take)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_room(matches: int, needed: int, limit: Optional[int] = None, engines=()) -> None:
    """Raise ``ResultTooLarge`` before an engine allocates ``needed`` bytes for ``matches`` more matches
    beyond this machine's memory (numpy's own error names only the bytes: a Kleene query under ALL on a
    year of flights asked for 87 TiB). A negative count is one that overflowed 64 bits. ``limit`` and
    ``engines``: the query's LIMIT that the engine could not use, and the engines that can."""
    available = memory_bytes()
    if needed > available or needed < 0 or matches < 0:
        raise ResultTooLarge(max(matches, -1), max(needed, -1), available, limit, engines)


class TimeScaleWarning(UserWarning):
    """Numeric ts too large for seconds under a window with a time unit (``WITHIN 10 min``): epoch milliseconds,
    microseconds or nanoseconds, which cepkit would count as seconds (docs/language.md §10 rule 8); the message
    says which scale they look like and how to convert them."""


class AbsentTypeWarning(UserWarning):
    """``cepkit.match`` found nothing and the query names an event type no event has (a misspelling, another
    case): the message is ``cepkit.type_warnings``' error, with its caret and the closest type there is."""
