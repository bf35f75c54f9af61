"""Three-valued truth for incremental evaluation (Kleene's logic).

A check over a stream prefix is ``True`` or ``False`` when no later event can change it, and ``None``
when it depends on events yet to come (a trailing negation whose scope is still open). Over a complete
stream every check is ``True`` or ``False``. A ``Matcher`` reports a match once it is definitely ``True``.
"""

from __future__ import annotations

from typing import Iterable, Optional

Truth = Optional[bool]


def all3(values: Iterable[Truth]) -> Truth:
    """False if any value is False, else None if any is None, else True (stops at the first False)."""
    result: Truth = True
    for value in values:
        if value is False:
            return False
        if value is None:
            result = None
    return result


def any3(values: Iterable[Truth]) -> Truth:
    """True if any value is True, else None if any is None, else False (stops at the first True)."""
    return not3(all3(not3(value) for value in values))


def not3(value: Truth) -> Truth:
    return None if value is None else not value
