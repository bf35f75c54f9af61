"""``cepkit.partial_matches`` and ``cepkit.funnel``: what a sequence query reached where it did not complete
(the definition: ``cepkit.runtime.partial``). Each prefix query runs on the engine asked for, over the
stream built once."""

from __future__ import annotations

from typing import Optional

import pandas as pd

from .partial import funnel_table, partial_table, steps_of
from .api import prefix_matches, prepare
from .columns import as_events, renamed_fields
from .stream import Stream


def _prefix_matches(query, events, engine: str, hierarchy, type, ts, options) -> tuple:
    q = prepare(query, None, hierarchy)
    steps = steps_of(q)
    with renamed_fields(type=type, ts=ts):
        stream = Stream.from_any(as_events(events, type=type, ts=ts))
    return steps, prefix_matches(steps, stream, engine, options), stream


def progress(
    query,
    events,
    engine: str = "auto",
    hierarchy=None,
    *,
    type: Optional[str] = None,
    ts: Optional[str] = None,
    **options,
) -> tuple:
    """(``funnel(...)``, ``partial_matches(...)``) from one run of the prefix queries (the Workbench's
    Funnel tab shows both)."""
    steps, found, stream = _prefix_matches(query, events, engine, hierarchy, type, ts, options)
    return funnel_table(steps, found), partial_table(steps, found, stream.times)


def partial_matches(
    query,
    events,
    engine: str = "auto",
    hierarchy=None,
    *,
    type: Optional[str] = None,
    ts: Optional[str] = None,
    **options,
) -> pd.DataFrame:
    """The candidates of a sequence query that did not complete: one row per event that starts the
    sequence without starting a match, with the step it reached, the step it stopped before, the bindings
    of the earliest way it got there and whether the stream went past its window (``timed_out``).

    Parameters
    ----------
    query : str or Query
        The query text (docs/language.md), or a parsed ``Query``.
    events : DataFrame, pyarrow Table, iterable of dicts or Event, or Stream
        The events, as ``cepkit.match`` takes them.
    engine : str, default "auto"
        The engine, as in ``cepkit.match``.
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to.
    type, ts : str, optional
        The columns (or dict keys) holding each event's type and time, when they are not ``type`` and ``ts``.
    **options
        As in ``cepkit.match``.

    Returns
    -------
    pandas.DataFrame
        ``start``, ``step``, ``stopped_before``, one column per variable (its position, null when not
        reached) and ``timed_out``.

    Raises
    ------
    QueryError
        The query does not parse, is not a sequence this covers (saying why), or does not fit the data.
    EventError
        An event is malformed (named by position and field).

    See Also
    --------
    funnel : how many candidates reached each step.

    Examples
    --------
    >>> import cepkit
    >>> events = [{"type": "Visit", "ts": 0}, {"type": "Signup", "ts": 60}, {"type": "Visit", "ts": 100},
    ...           {"type": "Purchase", "ts": 200}, {"type": "Visit", "ts": 5000}]
    >>> print(cepkit.partial_matches("Visit v ; Signup s ; Purchase p WITHIN 10 min", events).to_string(index=False))
     start  step stopped_before  v    s    p  timed_out
         2     1              s  2 <NA> <NA>       True
         4     1              s  4 <NA> <NA>      False

    The visit at position 2 never saw a signup after it within 10 minutes, and the stream went on past
    them; the one at 4 is still open when the stream ends.

    A step may be an iteration (``T+ x``: its binding is the tuple of its events) or a negation: one between
    two steps holds from the step after it; a leading or trailing one is the last step, the absence
    (``!T``), so the partial matches of an abandoned-cart query are the carts that were checked out:

    >>> cart = "SEQ(AddToCart a, !Checkout c) WITHIN 30 min"
    >>> shop = [{"type": "AddToCart", "ts": 0}, {"type": "Checkout", "ts": 60}, {"type": "AddToCart", "ts": 120}]
    >>> cepkit.partial_matches(cart, shop)[["start", "step", "stopped_before", "a"]].values.tolist()
    [[0, 1, 'c', 0]]

    Nested patterns, EXISTS, other strategies and CONSUME BY are refused with a ``QueryError`` at the part.
    """
    steps, found, stream = _prefix_matches(query, events, engine, hierarchy, type, ts, options)
    return partial_table(steps, found, stream.times)


def funnel(
    query,
    events,
    engine: str = "auto",
    hierarchy=None,
    *,
    type: Optional[str] = None,
    ts: Optional[str] = None,
    **options,
) -> pd.DataFrame:
    """Per step of a sequence query, how many candidates (events that can start it) got at least that far
    within the window: the last row counts those that completed.

    Parameters
    ----------
    query : str or Query
        The query text (docs/language.md), or a parsed ``Query``.
    events : DataFrame, pyarrow Table, iterable of dicts or Event, or Stream
        The events, as ``cepkit.match`` takes them.
    engine : str, default "auto"
        The engine, as in ``cepkit.match``.
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to.
    type, ts : str, optional
        The columns (or dict keys) holding each event's type and time, when they are not ``type`` and ``ts``.
    **options
        As in ``cepkit.match``.

    Returns
    -------
    pandas.DataFrame
        One row per step: ``step``, ``variable``, ``type``, the ``candidates`` that got that far and their
        ``share`` of the first step's.

    Raises
    ------
    QueryError
        The query does not parse, is not a sequence this covers (saying why), or does not fit the data.
    EventError
        An event is malformed (named by position and field).

    See Also
    --------
    partial_matches : each candidate that did not complete.

    Examples
    --------
    >>> import cepkit
    >>> events = [{"type": "Visit", "ts": 0}, {"type": "Signup", "ts": 60}, {"type": "Visit", "ts": 100},
    ...           {"type": "Purchase", "ts": 200}, {"type": "Visit", "ts": 5000}]
    >>> cepkit.funnel("Visit v ; Signup s ; Purchase p WITHIN 10 min", events)[["variable", "candidates"]].values.tolist()
    [['v', 3], ['s', 1], ['p', 1]]
    """
    steps, found, _ = _prefix_matches(query, events, engine, hierarchy, type, ts, options)
    return funnel_table(steps, found)
