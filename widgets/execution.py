"""Running a query for a widget: the public API, a fallback engine, progress and Cancel on long runs.

Widgets hold no engine logic. They run queries through ``cepkit.match`` / ``cepkit.Matcher`` and, when the
chosen engine cannot run a query (a ``QueryError`` from engine selection), run it on the engine the
registry picks for it (``engine="auto"``: the best-ranked that supports it, ``reference`` last), and say
so in ``Run.note``. Errors in the query itself (syntax, well-formedness, a
strategy that needs PARTITION BY) are raised before any engine is asked, so they are never "fallen back"
from.

Long runs (``PROGRESS_MIN_EVENTS`` events or more, with a ``progress`` callback) go through the columnar
path: the widget's ``Stream`` (built once per widget, never as ``Event`` objects) is cut into slices that
``cepkit.Matcher.extend`` takes as columns, calling ``progress(done, total)`` after each; a slice is sized
to take about ``SLICE_SECONDS``, so a ``Cancelled`` raised by ``progress`` (the Cancel button) stops the run
within a second. ``Matcher`` returns the same matches as ``cepkit.match`` (every engine's conformance suite
checks it). One call to ``cepkit.match`` runs instead (progress at its end only, Cancel when it returns) for
an engine whose ``Matcher`` would push the slices event by event (``Matcher.columnar`` is False: slower
than its batch run), for ``reference`` (the meaning, brute force), and for the out-of-order modes, whose
retractions only ``cepkit.match`` collects in ``Matches.deltas``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

import cepkit
from cepkit.runtime import Stream

# The strategies a user picks between (docs/language.md §5); PARTITION_STRICT is STRICT under PARTITION BY.
STRATEGIES = ("ALL", "NEXT", "LAST", "MAX", "STRICT", "STNM", "ROBUST_STNM")
ORACLE = "reference"
PROGRESS_MIN_EVENTS = 2000
FIRST_SLICE = 2000  # events in the first slice of a long run; the next ones are sized by its speed
SLICE_SECONDS = 0.25  # what a slice should take: a Cancel is heard between slices
MAX_SLICE = 1_000_000


class Cancelled(Exception):
    """Raised from a run's progress callback when the user pressed Cancel; the run stops there."""


@dataclass(frozen=True)
class Run:
    """The outcome of one widget run: the matches, wall time, and why another engine ran it, if one did."""

    matches: cepkit.Matches
    seconds: float
    note: str = ""

    @property
    def engine(self) -> str:
        return self.matches.engine


def failure_text(err: Exception, query, strategy: Optional[str] = None) -> tuple:
    """(what went wrong, what to try) for a run of ``query`` (under ``strategy``, else its own) that raised
    ``err``, as a widget says it (a run
    in a thread has no traceback anyone sees). What to try is '' but for a result too large for memory from a
    Kleene ``+`` under ALL, which has a match for every subset of its events.

    >>> failure_text(MemoryError("Unable to allocate 87.1 TiB"), cepkit.parse("A a ; B+ b WITHIN 3 s"))[1][:38]
    'Under strategy ALL a Kleene + has a ma'
    """
    said = getattr(err, "reason", None) or f"{type(err).__name__}: {str(err)[:300]}"
    hint = ""
    if isinstance(err, MemoryError) and "kleene" in query.features and (strategy or query.strategy) == "ALL":
        hint = (
            "Under strategy ALL a Kleene + has a match for every subset of its events: "
            "pick the strategy NEXT, LAST or MAX for one per start."
        )
    return said, hint


def as_stream(events, type: Optional[str] = None, ts: Optional[str] = None) -> Stream:
    """Events (DataFrame, dicts, Events or a Stream) as one validated ``Stream``, converted once per widget;
    ``type``/``ts`` name the own columns of the type and time, as for ``cepkit.match``."""
    return Stream.from_any(cepkit.as_events(events, type=type, ts=ts))


def run_query(
    query,
    events,
    engine: str = "auto",
    strategy: Optional[str] = None,
    hierarchy=None,
    progress: Optional[Callable[[int, int], None]] = None,
    **options,
) -> Run:
    """Run ``query`` over ``events`` on ``engine``, falling back to the registry's pick (``"auto"``; then
    ``reference``) when that engine cannot.

    >>> run = run_query("A a ; B b", [{"type": "A"}, {"type": "B"}], engine="reference")
    >>> run.matches.positions(), run.engine, run.note
    ([(0, 1)], 'reference', '')
    """
    parsed = cepkit.parse(query, hierarchy)
    if strategy is not None:
        parsed = parsed.with_strategy(strategy)  # raises for a strategy the query cannot take
    stream = as_stream(events)
    started = time.perf_counter()
    try:
        matches = _run_on(parsed, stream, engine, progress, options)
        note = ""
    except cepkit.QueryError as gap:
        if engine == ORACLE:
            raise
        # the registry's pick (an STNM query on the stack, not the brute-force reference), reference last
        matches = _run_on(parsed, stream, "auto" if engine != "auto" else ORACLE, progress, options)
        note = f"engine {engine!r} could not run this query, so {matches.engine!r} did: {gap.reason}"
    return Run(matches, time.perf_counter() - started, note)


def _run_on(query, stream: Stream, engine: str, progress, options: dict) -> cepkit.Matches:
    incremental = (
        progress is not None and len(stream) >= PROGRESS_MIN_EVENTS and options.get("disorder", "reject") == "reject"
    )
    if incremental:
        stream.require_order()  # the same EventError cepkit.match raises
        try:
            matcher = cepkit.Matcher(query, engine=engine, schema=stream, **options)  # checked as match checks
        except NotImplementedError:  # the engine has no incremental mode
            matcher = None
        if matcher is not None and matcher.engine != ORACLE and matcher.columnar:
            return _push_slices(matcher, stream, progress)
    if progress is not None:
        progress(0, len(stream))
    matches = cepkit.match(query, stream, engine=engine, **options)
    if progress is not None:
        progress(len(stream), len(stream))
    return matches


def _push_slices(matcher: cepkit.Matcher, stream: Stream, progress) -> cepkit.Matches:
    """``stream`` through ``matcher.extend`` a slice of columns at a time, each sized to take about
    ``SLICE_SECONDS`` (by the speed of the slices before it), ``progress`` called after each."""
    total, done, size = len(stream), 0, FIRST_SLICE
    progress(0, total)
    while done < total:
        started = time.perf_counter()
        matcher.extend(stream.take(slice(done, done + size)))
        done = min(done + size, total)
        progress(done, total)
        took = max(time.perf_counter() - started, 1e-4)
        size = int(min(max(size * SLICE_SECONDS / took, FIRST_SLICE), MAX_SLICE, size * 8))
    matcher.close()
    # as cepkit.match returns them: in order, retraction-free (disorder="reject"), so with no deltas (the
    # Matcher's would be every emission, made into Match objects when read), reading the stream for fields
    found = matcher.result()
    return cepkit.Matches(found.arrays, found.engine, found.query, stream=stream)
