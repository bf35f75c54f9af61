"""The public entry points: ``cepkit.match`` (batch) and ``cepkit.Matcher`` (incremental)."""

from __future__ import annotations

import datetime as _dt
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np
import pandas as pd

from ..errors import AbsentTypeWarning, EventError, QueryError, TimeScaleWarning, did_you_mean, shown
from ..lang import ast as A
from ..lang.query import Query, parse
from .columns import as_event, as_events, renamed_fields
from .event_record import PUNCTUATION, Event, _is_null, make_event
from .columns import is_arrow
from .stream import Stream
from .timestamps import missing_ts_error
from .match_list import MatchList
from .match_record import output_order
from .matches import Matches
from .python_objects import collector_paused
from .registry import IncrementalPlan
from .selection import select_engine
from .partial import matched_steps, partial_table, steps_of


def prepare(query, strategy: Optional[str] = None, hierarchy=None) -> Query:
    """Parse text (or re-use a Query) and apply a ``strategy=`` override."""
    q = parse(query, hierarchy)
    return q.with_strategy(strategy) if strategy is not None else q


PLAN_CACHE_SIZE = 32  # compiled queries kept per thread by ``cepkit.match``
_plan_cache = threading.local()


def _cached_plan(key) -> Optional[tuple]:
    """(Query, engine, plan) an earlier ``cepkit.match`` with the same ``key`` (query text, strategy,
    hierarchy, engine, options) compiled, the plan fresh (``Plan.fresh``); None when not kept. Parsing,
    compiling and (automaton) determinizing cost ~1-2 ms a call, as much as matching a small stream.

    The cache is per thread (a shared plan's lazily grown parts are not guarded for concurrent runs) and
    holds the ``PLAN_CACHE_SIZE`` most recently used queries, each unrun: every call gets a plan sharing
    its compiled parts and none of its run state (docs/decisions.md)."""
    cache = getattr(_plan_cache, "plans", None)
    hit = cache.get(key) if cache is not None and key is not None else None
    if cache is None or hit is None:
        return None
    cache.move_to_end(key)
    q, chosen, plan = hit
    return q, chosen, plan.fresh()


def clear_plan_cache() -> None:
    """Forget every plan this thread's ``cepkit.match`` kept: the next call of each query parses and
    compiles it again (what a benchmark of a first call, or a test of compiling, needs)."""
    _plan_cache.__dict__.pop("plans", None)


def _keep_plan(key, q: Query, chosen, plan) -> None:
    """Keep a newly compiled plan for ``_cached_plan`` (not when it cannot be shared or the key is None)."""
    unrun = plan.fresh() if key is not None else None
    if unrun is None:
        return
    cache = getattr(_plan_cache, "plans", None)
    if cache is None:
        cache = _plan_cache.plans = OrderedDict()
    cache[key] = (q, chosen, unrun)
    while len(cache) > PLAN_CACHE_SIZE:
        cache.popitem(last=False)


def _cache_key(query, strategy, hierarchy, engine, options) -> Optional[tuple]:
    """The plan cache's key, or None when the call cannot be cached (a Query object, or an unhashable
    hierarchy or option value)."""
    if not isinstance(query, str):
        return None
    key = (query, strategy, hierarchy, engine, tuple(sorted(options.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def compiled(query: Query, engine: str = "auto") -> tuple:
    """(engine, plan) for a parsed ``query`` through ``cepkit.match``'s plan cache, keyed by its text and
    hierarchy as a ``cepkit.match`` call with that text would be: a plan never run, sharing compiled parts
    (E-Cube compiles its queries and helper queries this way)."""
    key = _cache_key(query.text, None, query.hierarchy, engine, {})
    cached = _cached_plan(key)
    if cached:
        return cached[1:]
    chosen, plan = select_engine(query, engine, {})
    _keep_plan(key, query, chosen, plan)
    return chosen, plan


def refuse_limit(query: Query, what: str, instead: str) -> None:
    """The QueryError for a LIMIT where ``what`` cannot keep the first n matches in output order."""
    if query.ast.limit is not None:
        raise QueryError.at(
            query.ast,
            f"{what} does not run LIMIT ({what.split('.')[-1]} reports matches group by "
            f"group, not in one output order): drop the LIMIT and {instead}; "
            "cepkit.match and cepkit.Matcher run it on every engine",
            query.text,
        )


def check(query, events, strategy: Optional[str] = None, hierarchy=None) -> Query:
    """Parse ``query`` and check it against ``events`` without matching: the errors ``cepkit.match``
    would raise before running an engine.

    Parameters
    ----------
    query : str or Query
        The query text (docs/language.md), or a parsed ``Query``.
    events : DataFrame, pyarrow Table, iterable of dicts or ``Event``, or Stream
        The events the query will run over.
    strategy : str, optional
        A selection strategy overriding the query's own.
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to.

    Returns
    -------
    Query
        The parsed query.

    Raises
    ------
    QueryError
        The query does not parse, or names an attribute the events do not have (per event type), a
        PARTITION BY key no event has, or a window without a unit over datetime ts.
    EventError
        An event is malformed (named by position and field), or a PARTITION BY value cannot be a key.

    Examples
    --------
    >>> import cepkit
    >>> cepkit.check("A a FILTER a.v > 1", [{"type": "A", "v": 2}]).variables.keys()
    dict_keys(['a'])
    >>> cepkit.check("A a FILTER a.speed > 1", [{"type": "A", "v": 2}])
    Traceback (most recent call last):
    ...
    cepkit.errors.QueryError: line 1, column 12: unknown attribute 'speed' of 'a': events of type A have v
      A a FILTER a.speed > 1
                 ^^^^^^^
    """
    q = prepare(query, strategy, hierarchy)
    check_against_stream(q, Stream.from_any(events))
    return q


def check_against_stream(query: Query, stream) -> None:
    """Errors that need the data: unknown attributes, partition keys, and unit-less windows on datetime ts
    (``stream``: a ``Stream``, or what a ``Matcher`` has seen)."""
    if stream.ts_is_datetime and query.within is not None and not query.within.events and query.within.unit is None:
        raise QueryError.at(
            query.within, "WITHIN needs a unit (s, min, h, d...) or EVENTS when ts are datetimes", query.text
        )
    if not len(stream):
        return
    if isinstance(stream, Stream):
        _check_time_scale(query, stream)
    all_attrs = stream.attributes_of()
    for key in query.partition_by:
        if key not in all_attrs and key not in ("type", "ts"):
            raise QueryError.at(
                query.ast.name_at("partition_by", key),
                f"unknown attribute {key!r} in PARTITION BY; the events have: "
                f"{', '.join(sorted(all_attrs)) or 'no attributes'}{did_you_mean(key, all_attrs)}",
                query.text,
            )
        if isinstance(stream, Stream):  # (a Matcher's SeenData holds no values)
            stream.require_hashable(key)
    atoms: dict = {}  # var -> every Atom defining it (a name may be defined in several OR branches)
    for atom in query.ast.pattern.find_all(A.Atom):
        if atom.var:
            atoms.setdefault(atom.var, []).append(atom)
    nodes = [query.ast.pattern] + ([query.where] if query.where is not None else [])
    for node in (n for root in nodes for n in root.walk()):
        if isinstance(node, A.Prev):
            node = node.arg
        attr = getattr(node, "attr", None)
        if not isinstance(node, (A.Attr, A.Agg)) or attr is None or attr in ("ts", "type"):
            continue
        types = _types_of(atoms.get(node.var, ()), query)
        known = stream.attributes_of(types) if types is not None else all_attrs
        if not known and types is not None and not _nowhere(stream, types, attr):
            continue  # no event of those types, or the attribute is there but null on them: nothing to check
        if attr not in known:
            what = f"events of type {', '.join(sorted(types))}" if types is not None else "the events"
            raise QueryError.at(
                node,
                f"unknown attribute {attr!r} of {node.var!r}: {what} have "
                f"{', '.join(sorted(known)) or 'no attributes'}{did_you_mean(attr, known)}",
                query.text,
            )


# numbers of seconds past this are past the year 5000: epoch ms, µs or ns counted as seconds
_SCALES = ((1e17, "nanoseconds", "ns"), (1e14, "microseconds", "us"), (1e11, "milliseconds", "ms"))


def _check_time_scale(query: Query, stream: Stream) -> None:
    """A ``TimeScaleWarning`` when numeric ts look like epoch ms/µs/ns under a window with a time unit, which
    counts them as seconds: ``WITHIN 2 min`` would span 120 ms of them, silently."""
    within = query.within
    if stream.ts_is_datetime or within is None or within.events or within.unit is None:
        return
    largest = float(np.nanmax(np.abs(stream.times)))
    for bound, scale, unit in _SCALES:
        if largest >= bound:
            warnings.warn(
                TimeScaleWarning(
                    f"the ts are numbers up to {largest:.4g}, counted as seconds (docs/language.md §10 rule 8), "
                    f"so WITHIN {within.amount:g} {within.unit} spans {within.seconds:g} of them: if they are epoch "
                    f"{scale}, pass datetimes (pandas.to_datetime(ts, unit={unit!r}, utc=True))"
                ),
                stacklevel=4,
            )
            return


def _nowhere(stream, types, attr: str) -> bool:
    """Whether ``stream`` has events of ``types`` and ``attr`` is in none of its events or columns, even as a
    null (a ``Stream``; a Matcher's ``SeenData`` drops nulls, so it cannot tell and says False)."""
    if not isinstance(stream, Stream) or not stream.type_in(types).any():
        return False
    return attr not in stream._declared and attr not in stream._attrs


def type_warnings(query, events, hierarchy=None) -> list:
    """What may make ``query`` find nothing in ``events`` though it runs: each event type it names that no
    event has (a misspelling, or another case: ``FOG`` where the data says ``fog``), as a ``QueryError`` at
    the type with the closest type the events have. Not an error: a type may be absent from one stream
    and not another (``match`` runs such a query and finds what it finds; when that is nothing, it warns
    with these, as ``cepkit.errors.AbsentTypeWarning``).

    Parameters
    ----------
    query : str or Query
        The query text, or a parsed ``Query``.
    events : DataFrame, pyarrow Table, iterable of dicts or Event, or Stream
        The events, as ``cepkit.match`` takes them.
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to (a type covered by a present one is no warning).

    Returns
    -------
    list of QueryError
        One per absent type, pointing at it in the query, with the closest present type.

    Raises
    ------
    QueryError
        The query does not parse.

    Examples
    --------
    >>> [w.reason for w in type_warnings("FOG f ; DELAYED_DEPARTUER d", [{"type": "fog"}, {"type": "DELAYED_DEPARTURE"}])]
    ["no event of type 'FOG' in the stream; did you mean 'fog'?", "no event of type 'DELAYED_DEPARTUER' in the stream; did you mean 'DELAYED_DEPARTURE'?"]
    """
    query = prepare(query, None, hierarchy)
    stream = events if isinstance(events, Stream) else Stream.from_any(events)
    present = set(stream.type_names) if len(stream) else set()
    if not present:
        return []
    names = sorted(present)
    found, seen = [], set()
    for atom in query.ast.pattern.find_all(A.Atom):
        if atom.type is None or atom.type in seen:
            continue
        seen.add(atom.type)
        covered = query.hierarchy.covers(atom.type) if query.hierarchy is not None else {atom.type}
        if present & set(covered):
            continue
        hint = (
            did_you_mean(atom.type, names)
            or f"; its types: {', '.join(names[:12])}{', ...' if len(names) > 12 else ''}"
        )
        found.append(QueryError.at(atom, f"no event of type {atom.type!r} in the stream{hint}", query.text))
    return found


def _types_of(atoms, query: Query):
    """The event types a variable can bind (None: any type)."""
    if not atoms or any(a.type is None for a in atoms):
        return None
    if query.hierarchy is not None:
        return frozenset().union(*(query.hierarchy.covers(a.type) for a in atoms))
    return frozenset(a.type for a in atoms)


def match(
    query,
    events,
    engine: str = "auto",
    strategy: Optional[str] = None,
    hierarchy=None,
    *,
    type: Optional[str] = None,
    ts: Optional[str] = None,
    partial: bool = False,
    **options,
) -> Matches:
    """All matches of ``query`` over ``events``, in output order (docs/language.md §10.2).

    Parameters
    ----------
    query : str or Query
        The query text (docs/language.md), or a parsed ``Query``.
    events : DataFrame, pyarrow Table, iterable of dicts or ``Event``, or Stream
        The events, one row each: a ``type`` column, an optional ``ts`` (numbers, datetimes or text read as
        either; the position when absent) and one column per attribute.
    engine : str, default "auto"
        The engine to run (``cepkit.engines()`` lists them); "auto" takes the first that supports the query.
    strategy : str, optional
        A selection strategy overriding the query's own (docs/language.md §5).
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to (docs/language.md §7).
    type, ts : str, optional
        The columns (or dict keys) holding each event's type and time, when they are not ``type`` and ``ts``.
    partial : bool, default False
        Also give ``matches.partial``: each candidate of a sequence query that did not complete, with the
        step it stopped before, the bindings it reached and whether its window closed before the stream's
        end (``cepkit.partial_matches``; defined in ``cepkit.runtime.partial``), computed on the same engine.
    **options
        ``disorder=`` ("reject", "kslack", "conservative", "aggressive") with ``k=`` or ``max_delay=`` for
        an out-of-order stream (docs/language.md §6); other options are the engine's.

    Returns
    -------
    Matches
        The matches as columns (``positions()``, ``to_pandas()``, ``to_arrow()``), ``Match`` objects on
        indexing; ``engine`` names the engine that ran.

    Raises
    ------
    QueryError
        The query does not parse (line, column and caret), names an attribute or PARTITION BY key the
        events lack, or needs a feature the engine lacks (naming the engines that have it); with
        ``partial=True``, a query partial matches do not cover (saying why).
    EventError
        An event is malformed (named by position and field), or the stream is out of order under
        ``disorder="reject"``.

    Examples
    --------
    >>> import cepkit
    >>> cepkit.match("A a ; B b", [{"type": "A"}, {"type": "B"}, {"type": "B"}]).positions()
    [(0, 1), (0, 2)]
    >>> clicks = [{"event_name": "view", "at": "2024-05-01 10:00"}, {"event_name": "buy", "at": "2024-05-01 10:02"}]
    >>> cepkit.match("view v ; buy b WITHIN 5 min", clicks, type="event_name", ts="at").positions()
    [(0, 1)]
    >>> found = cepkit.match("A a ; B b ; C c WITHIN 3", [{"type": t, "ts": i} for i, t in enumerate("ABACAAB")],
    ...                      partial=True)
    >>> found.positions(), found.partial[["start", "step", "stopped_before", "a", "b", "timed_out"]].values.tolist()
    ([(0, 1, 3)], [[2, 1, 'b', 2, <NA>, True], [4, 2, 'c', 4, 6, False], [5, 2, 'c', 5, 6, False]])
    """
    key = _cache_key(query, strategy, hierarchy, engine, options)
    cached = _cached_plan(key)
    q = cached[0] if cached else prepare(query, strategy, hierarchy)
    with renamed_fields(type=type, ts=ts):
        stream = Stream.from_any(as_events(events, type=type, ts=ts))
        check_against_stream(q, stream)
        if options.get("disorder", "reject") == "reject":
            stream.require_order()
    if cached:
        chosen, plan = cached[1:]
    else:
        chosen, plan = select_engine(q, engine, options)
        _keep_plan(key, q, chosen, plan)
    steps = steps_of(q) if partial else None  # a query partial matches do not cover: said before the run
    found = plan.run(stream)  # MatchArrays, or Match objects (engines pause the collector while they build them)
    with collector_paused():  # not around the run: an engine's cyclic garbage must still be collected
        # the emission log is read on demand (``Matches.deltas``): it may need every Match object
        result = Matches(
            found,
            chosen.name,
            q,
            deltas=getattr(plan, "deltas", None),
            info={**plan.info(), "disorder": options.get("disorder", "reject")},
            stream=stream,
            limit=q.ast.limit,
            own_names={"type": type, "ts": ts},
        )
    if steps is not None:
        result.partial = partial_table(steps, prefix_matches(steps, stream, chosen.name, options), stream.times)
    if not len(result) and len(stream):  # nothing found: say so if the query names a type no event has
        for absent in type_warnings(q, stream):
            warnings.warn(AbsentTypeWarning(str(absent)), stacklevel=2)
    return result


def quiet_match(query, events, **options) -> Matches:
    """``match`` for another answer's use (relaxed or prefix queries): no ``AbsentTypeWarning``, the answer
    says it once (``why_not``'s ``absent``) or the caller's own ``match`` does."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AbsentTypeWarning)
        return match(query, events, **options)


def prefix_matches(steps, stream: Stream, engine: str, options: dict) -> list:
    """The matches of each prefix query Q_1..Q_n of ``steps`` over ``stream`` on ``engine``, as
    ``cepkit.runtime.partial.matched_steps`` gives them (the partial matches' and the funnel's input)."""
    return [
        matched_steps(steps, k, quiet_match(prefix, stream, engine=engine, **options))
        for k, prefix in enumerate(steps.prefixes, start=1)
    ]


class Matcher:
    """Incremental matching: ``push`` one event at a time, get the matches it made final.

    Parameters
    ----------
    query : str or Query
        The query text, or a parsed ``Query``.
    engine : str, default "auto"
        The engine, as in ``cepkit.match``.
    strategy : str, optional
        A selection strategy overriding the query's own.
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to.
    keep : bool, default True
        Keep the matches (``matches``, ``deltas``, ``result()``); False for endless streams (below).
    schema : events, DataFrame or Stream, optional
        Events to check the query against at once, as ``cepkit.match`` would (below).
    type, ts : str, optional
        The fields (columns of a batch) holding the type and time, as in ``cepkit.match``.
    **options
        ``disorder=`` with ``k=`` or ``max_delay=``, as in ``cepkit.match``.

    Raises
    ------
    QueryError
        The query does not parse, or does not fit ``schema``, or has ``LIMIT`` with
        ``disorder="aggressive"``; later, a push whose event shows the query does not fit the data.
    EventError
        (from ``push`` and ``extend``) a malformed event, or a late one under ``disorder="reject"``.

    See Also
    --------
    cepkit.match : the whole stream at once.

    Notes
    -----
    In an out-of-order mode that retracts (``disorder="aggressive"``), ``push`` also returns retractions
    (``sign="-"``); ``matches`` and ``result()`` hold the net result, ``deltas`` (and ``result().deltas``)
    every emission in order.

    ``keep=False`` is for endless streams: the matches go to the caller of ``push``/``close`` and nothing
    is retained, so memory follows the engine's window, not the stream (``matches``, ``deltas`` and
    ``result()`` then raise). The default keeps them, for finite streams and notebooks
    (docs/decisions.md).

    The data is checked as ``match`` checks it (unknown attributes, unknown PARTITION BY key, a unit-less
    time window on datetime ts), judged on the events pushed so far: a push raises ``QueryError`` exactly
    when ``match`` over the events up to it would, before the event reaches the engine (so the first
    event of a type is taken as its schema). ``schema=`` (events, a DataFrame or a Stream; typically the
    whole finite stream about to be pushed) checks them at once, as ``match`` would, and judges later
    events on them and what was pushed (docs/decisions.md).

    ``type=`` and ``ts=`` name the fields (columns of a batch) holding the type and time, as in ``match``.

    Examples
    --------
    >>> m = Matcher("A a ; B b", engine="reference")
    >>> m.push({"type": "A", "ts": 0}), [x.positions for x in m.push({"type": "B", "ts": 1})]
    ([], [(0, 1)])
    >>> [x.positions for x in m.close()], len(m.result())
    ([], 1)
    """

    def __init__(
        self,
        query,
        engine: str = "auto",
        strategy: Optional[str] = None,
        hierarchy=None,
        keep: bool = True,
        schema=None,
        *,
        type: Optional[str] = None,
        ts: Optional[str] = None,
        **options,
    ):
        self.query = prepare(query, strategy, hierarchy)
        # the own columns of the events' type and ts (``match``'s)
        self.mapping: dict[str, Any] = {"type": type, "ts": ts}
        self.options = options
        chosen, plan = select_engine(self.query, engine, options)
        self.engine = chosen.name
        self.keep = keep
        self._plan = plan
        self._inc = plan.matcher()
        self._position = 0
        self._ts_given: Optional[bool] = None  # whether the events pushed carry a ts (push)
        self._max_time = -math.inf
        self._reject_disorder = options.get("disorder", "reject") == "reject"
        # LIMIT n: the matches still to report (None: no limit); at 0 the engine is fed no more events
        self._left = self.query.ast.limit
        if self._left is not None and options.get("disorder") == "aggressive":
            raise QueryError.at(
                self.query.ast,
                "LIMIT in an incremental Matcher reports the first n matches it emits, "
                "which disorder='aggressive' may retract later: use cepkit.match, or another "
                "disorder mode",
                self.query.text,
            )
        self._seen = SeenData()
        if schema is not None:
            with renamed_fields(**self.mapping):
                known = Stream.from_any(as_events(schema, **self.mapping))
            check_against_stream(self.query, known)
            self._seen = SeenData.of(known)
        self._matches: list = []
        self._deltas: list = []
        self._columns: list = []  # MatchLists kept as columns, after everything in the two lists

    @property
    def matches(self) -> list:
        """The net result so far (``keep=True`` only)."""
        self._require_kept("matches")
        self._materialize()
        return self._matches

    @property
    def deltas(self) -> list:
        """Every emission so far, retractions included (``keep=True`` only)."""
        self._require_kept("deltas")
        self._materialize()
        return self._deltas

    def push(self, event) -> list:
        """Feed one event; the matches it made final (and, under ``disorder="aggressive"``, retractions).

        Parameters
        ----------
        event : dict or Event
            The next event: ``type``, ``ts`` (the position when absent) and its attributes.

        Returns
        -------
        list of Match
            The new emissions, in output order.

        Raises
        ------
        EventError
            The event is malformed, or earlier than an earlier one under ``disorder="reject"``.
        QueryError
            The event shows the query does not fit the data (an attribute its type lacks).

        Examples
        --------
        >>> m = Matcher("A a ; B b")
        >>> m.push({"type": "A", "ts": 0}), [x.positions for x in m.push({"type": "B", "ts": 1})]
        ([], [(0, 1)])
        """
        with renamed_fields(**self.mapping):
            raw = as_event(event, self._position, **self.mapping)
            e = make_event(raw, self._position)
            given = (raw.get("ts") if isinstance(raw, Mapping) else raw.ts) is not None
            if given != self._ts_given:  # every event a ts, or none (then ts = position)
                if self._ts_given is not None:
                    raise missing_ts_error(self._position, given)
                self._ts_given = given
            if self._reject_disorder and e.time < self._max_time:
                raise _late(self._position, e.ts)
        learned = self._seen.with_event(e)
        if learned is not None:
            check_against_stream(self.query, learned)
            self._seen = learned
        self._max_time = max(self._max_time, e.time)
        self._position += 1
        found = self._inc.push(e) if self._left != 0 else []
        return self._collect(output_order(found) if found else [])

    @property
    def columnar(self) -> bool:
        """Whether the engine takes ``extend``'s micro-batches as columns (every engine but the reference: the
        automaton's kernel, the stack's columnar run, the ses and rcep kernels, the nested engine's shared plan,
        the cube's plan; some queries still go event by event, see ``extend``). False: its ``extend`` pushes
        a batch's events one by one, and a long finite stream runs faster through ``cepkit.match``."""
        return type(self._inc).extend is not IncrementalPlan.extend

    def pusher(self, columns) -> "Pusher":
        """A ``push`` for events that all come as values of the same ``columns``, without a dict per event
        and the checks a dict needs on every push.

        Parameters
        ----------
        columns : sequence of str
            The fields of every event, in the order the values come; they hold "type" and "ts" (or the
            ``type=``/``ts=`` names).

        Returns
        -------
        Pusher
            ``push(*values)``, returning what ``Matcher.push`` would.

        Raises
        ------
        ValueError
            ``columns`` lack the type or ts, or repeat a name.

        Notes
        -----
        ``push(*values)`` returns exactly what ``push(dict(zip(columns, values)))`` would, raising the same
        errors at the same positions (a None or NaN value is a missing attribute); it may be mixed with
        ``push`` and ``extend``. An event whose type was not seen yet, or that carries an attribute its type
        has not shown before, or whose ts is not an int or float goes through ``push`` (the schema is
        learned there); the others skip it. The automaton also holds back the events that cannot complete
        a match and runs them through its kernel with the next one that may (bench/matcher.py).

        Examples
        --------
        >>> m = Matcher("A a ; B b", engine="automaton")
        >>> push = m.pusher(("type", "ts", "v"))
        >>> push("A", 0, 1), [x.positions for x in push("B", 1.5, None)]
        ([], [(0, 1)])
        """
        return Pusher(self, tuple(columns))

    def extend(self, events):
        """Push every event of ``events`` in order; the new matches of them all, as the pushes would return
        them (each event's in output order, event after event).

        Parameters
        ----------
        events : iterable of dicts or Events, DataFrame, pyarrow Table or Stream
            The next events; a DataFrame, Table or Stream goes to the engine as a micro-batch (below).

        Returns
        -------
        list of Match or MatchList
            The new emissions.

        Raises
        ------
        EventError
            An event is malformed or late, as pushing it would raise (the batch is then not taken).
        QueryError
            An event shows the query does not fit the data.
        ValueError
            A Stream's first position is not the next one this matcher expects.

        Notes
        -----
        Dicts and Events are pushed one by one. A micro-batch as a DataFrame, a pyarrow Table or a
        ``Stream`` (a slice of a larger one, ``Stream.take``, whose first position is the next one this
        matcher expects: no conversion at all) goes to the engine as columns (the automaton runs it through its
        kernel, the stack its columnar run over the events that can still matter and the batch, ses its
        kernel over the windows still open and the batch, rcep its kernel over the events a later trigger may
        bind and the batch's triggers; other engines push its events): it is
        checked as a whole first, with the errors pushing its rows one by one would raise (the same first
        position and field), and a batch with an error is not taken at all (docs/decisions.md). The
        result is then a list or a ``MatchList``, which reads as the same list of ``Match`` objects.

        Examples
        --------
        >>> import pandas as pd
        >>> m = Matcher("A a ; B b")
        >>> [x.positions for x in m.extend(pd.DataFrame({"type": ["A", "B", "B"], "ts": [0, 1, 2]}))]
        [(0, 1), (0, 2)]
        """
        if isinstance(events, Stream) and len(events) and int(events.position_of(0)) != self._position:
            raise ValueError(
                f"the Stream's first event has position {int(events.position_of(0))}, but this "
                f"Matcher expects position {self._position} next"
            )
        if not (isinstance(events, (pd.DataFrame, Stream)) or is_arrow(events)):
            out = []
            for e in events:
                out.extend(self.push(e))
            return out
        stream = self._checked(events)
        self._position += len(stream)
        if len(stream):
            self._max_time = max(self._max_time, float(stream.times.max()))
        return self._collect(self._inc.extend(stream) if self._left != 0 else [])

    def close(self) -> list:
        """End the stream: the matches that were waiting for more events (a trailing negation, a
        conservative out-of-order mode).

        Returns
        -------
        list of Match
            The last emissions, in output order.

        Examples
        --------
        >>> m = Matcher("SEQ(A a, B b, !C c) WITHIN 2")       # a C may still come until ts 2
        >>> m.extend([{"type": "A", "ts": 0}, {"type": "B", "ts": 1}]), [x.positions for x in m.close()]
        ([], [(0, 1)])
        """
        found = self._inc.close() if self._left != 0 else []
        return self._collect(output_order(found) if found else [])

    def _checked(self, batch) -> Stream:
        """``batch`` as a Stream positioned after the events so far, judged as pushing its rows would judge
        them (``SeenData`` then knows them); the first row a push would reject raises, naming its position."""
        with renamed_fields(**self.mapping):
            try:
                batch = as_events(batch, first_position=self._position, **self.mapping)
                stream = Stream.from_any(batch, first_position=self._position)
            except EventError as err:
                # the rows before it may fail a check first (an error about every row has no position)
                rows = 0 if err.position is None else err.position - self._position
                if rows > 0:
                    head = batch.iloc[:rows] if isinstance(batch, pd.DataFrame) else batch.slice(0, rows)
                    self._judged(Stream.from_any(as_events(head, **self.mapping), first_position=self._position))
                raise
            self._seen = self._judged(stream)
        return stream

    def _judged(self, stream: Stream) -> "SeenData":
        """What is known once ``stream``'s events are pushed; raises what the first push to fail would:
        a ts earlier than an earlier event's (``disorder="reject"``), or a check of the data."""
        late = stream.first_disorder(self._max_time) if self._reject_disorder else None
        seen = self._seen
        for learned in seen.learning(stream, len(stream) if late is None else late):
            check_against_stream(self.query, learned)
            seen = learned
        if late is not None:
            raise _late(int(stream.position_of(late)), stream[late].ts)
        for key in self.query.partition_by:
            stream.require_hashable(key)
        return seen

    def _collect(self, new):
        """Log the new emissions (when kept); a retraction withdraws the match it names from the net result.
        A ``MatchList`` (a batch's matches as columns, never retractions) is kept as it is until someone
        reads ``matches`` or ``deltas``."""
        if self._passes_through():
            return new
        if self._left is not None and new:  # LIMIT: the first n emitted, then nothing
            new = new[: self._left]
            self._left -= len(new)
        if not self.keep or not new:
            return new
        if isinstance(new, MatchList):
            self._columns.append(new)
            return new
        self._materialize()
        self._deltas.extend(new)
        for m in new:
            if m.sign == "+":
                self._matches.append(m)
                continue
            for i in range(len(self._matches) - 1, -1, -1):
                if self._matches[i].key == m.key:
                    del self._matches[i]
                    break
        return new

    def _passes_through(self) -> bool:
        """Whether ``_collect`` returns whatever it is given as it is (no LIMIT, nothing kept): a pusher then
        skips the call."""
        return self._left is None and not self.keep

    def _materialize(self) -> None:
        """The kept ``MatchList``s (they follow everything in the lists) appended to ``matches`` and
        ``deltas`` as ``Match`` objects, in order."""
        for kept in self._columns:
            found = list(kept)
            self._matches.extend(found)
            self._deltas.extend(found)
        self._columns.clear()

    def result(self) -> Matches:
        """The net result so far, as ``cepkit.match`` returns it (``keep=True`` only).

        Returns
        -------
        Matches
            The kept matches, with every emission in ``deltas``.

        Raises
        ------
        ValueError
            The Matcher was made with ``keep=False``.

        Examples
        --------
        >>> m = Matcher("A a ; B b")
        >>> _ = m.extend([{"type": "A", "ts": 0}, {"type": "B", "ts": 1}])
        >>> m.result().positions()
        [(0, 1)]
        """
        self._require_kept("result()")
        if self._columns and not self._matches and not self._deltas:  # every match came as columns
            self._columns[:] = [MatchList.joined(self._columns)]
            joined = self._columns[0]
            return Matches(joined.arrays, self.engine, self.query, deltas=lambda: list(joined))
        return Matches(self.matches, self.engine, self.query, deltas=list(self.deltas))

    def _require_kept(self, what: str) -> None:
        if not self.keep:
            raise ValueError(
                f"Matcher(keep=False) keeps no matches, so it has no {what}: use what push() and "
                "close() return, or Matcher(keep=True)"
            )


class Pusher:
    """``Matcher.pusher``'s push (see there): the checks of ``Matcher.push`` per event, cheap where the
    types and attributes of the events are known already, then the engine's ``step`` (or its ``push``)."""

    def __init__(self, matcher: Matcher, columns: tuple):
        own = {canonical: name or canonical for canonical, name in matcher.mapping.items()}  # Matcher(type=, ts=)
        for canonical, name in own.items():
            if name not in columns:
                raise ValueError(f"a pusher's columns hold {name!r} (the events' {canonical}): got {list(columns)}")
            if canonical != name and canonical in columns:
                raise ValueError(f"a pusher's column {canonical!r} while {canonical}={name!r} names another")
        if len(set(columns)) != len(columns):
            raise ValueError(f"a pusher's columns are distinct: got {list(columns)}")
        self.matcher = matcher
        self.columns = columns  # the events' own names, as ``push`` takes them
        self._type_at, self._ts_at = columns.index(own["type"]), columns.index(own["ts"])
        names = tuple(
            "type" if i == self._type_at else "ts" if i == self._ts_at else name for i, name in enumerate(columns)
        )
        self._attributes = [(i, name) for i, name in enumerate(names) if name not in ("type", "ts")]
        # type -> the columns (index) its events have not shown yet: an event showing one is pushed as a
        # dict, so the Matcher learns it and checks the query against it; a type not in here too
        self._unknown: dict = {}
        self._step = matcher._inc.step(names)
        self._width = len(columns)
        self._limited = matcher._left is not None  # LIMIT n (without it, ``_left`` stays None)

    def __call__(self, *values) -> list:
        if len(values) != self._width:
            raise TypeError(f"push takes {len(self.columns)} values ({', '.join(self.columns)}), got {len(values)}")
        type_, ts = values[self._type_at], values[self._ts_at]
        unknown = self._unknown.get(type_) if type(type_) is str else None
        kind = type(ts)
        if unknown is None or (kind is not float and kind is not int):
            return self._pushed(values)
        for i in unknown:
            value = values[i]
            if value is not None and not (type(value) is float and value != value):
                return self._pushed(values)
        time = ts if kind is float else float(ts)
        if time - time != 0.0:  # NaN or infinite: push says why
            return self._pushed(values)
        m = self.matcher
        position = m._position
        if time < m._max_time:
            if m._reject_disorder:
                raise _late(position, ts)
        else:
            m._max_time = time
        m._position = position + 1
        if self._limited and m._left == 0:  # LIMIT reached: the engine is fed no more events
            return []
        step = self._step
        if step is not None:
            found = step(type_, time, values, position)
        else:
            attrs = {name: values[i] for i, name in self._attributes if not _is_null(values[i])}
            found = m._inc.push(Event(type_, ts, attrs, position, time))
            found = output_order(found) if found else found
        return m._collect(found) if found and not m._passes_through() else found

    def _pushed(self, values) -> list:
        """``Matcher.push`` of the event as a dict; afterwards its type is known with what ``SeenData`` knows."""
        found = self.matcher.push(dict(zip(self.columns, values)))
        type_ = values[self._type_at]
        known = self.matcher._seen.by_type.get(type_)
        if known is not None and type_ != PUNCTUATION and not self.matcher._seen.ts_is_datetime:
            self._unknown[type_] = tuple(i for i, name in self._attributes if name not in known)
        return found


def _late(position: int, ts) -> EventError:
    return EventError(
        position, "ts", f"ts {shown(ts)} is earlier than an earlier event's; choose an out-of-order mode with disorder="
    )


class SeenData:
    """What the events pushed into a ``Matcher`` so far (and its ``schema=`` events) say about the data, in
    the shape ``check_against_stream`` reads from a ``Stream``: attribute names per event type (and, for
    a variable of any type, a DataFrame's columns), whether a ts was a datetime, and (``len``) whether
    any event is known."""

    def __init__(self, by_type: Optional[dict] = None, ts_is_datetime: bool = False, columns=frozenset()):
        self.by_type = by_type or {}
        self.ts_is_datetime = ts_is_datetime
        self.columns = columns

    @classmethod
    def of(cls, stream: Stream) -> "SeenData":
        types = {stream.type_names[code] for code in np.unique(stream.type_codes).tolist()}  # (no Event per row)
        return cls(
            {t: stream.attributes_of(frozenset({t})) for t in types},
            stream.ts_is_datetime,
            frozenset(stream.attributes_of()),
        )

    def __len__(self) -> int:
        return len(self.by_type)

    def attributes_of(self, types: Optional[frozenset] = None) -> set:
        known = set(self.columns) if types is None else set()
        return known.union(*(names for t, names in self.by_type.items() if types is None or t in types))

    def with_event(self, event) -> Optional["SeenData"]:
        """What is known once ``event`` is added, when that is more than now (None otherwise): only then
        can the checks' answer change. The first event always tells something."""
        names = self.by_type.get(event.type)
        datetime_ts = isinstance(event.ts, (_dt.datetime, np.datetime64))
        if names is not None and names.issuperset(event.attrs) and datetime_ts <= self.ts_is_datetime:
            return None
        by_type = {**self.by_type, event.type: (names or set()) | set(event.attrs)}
        return SeenData(by_type, self.ts_is_datetime or datetime_ts, self.columns)

    def _knows(self, types, attributes) -> bool:
        """Whether every one of ``types`` is known with every one of ``attributes``: then no event of
        those types carrying only those attributes can tell something new."""
        for t in types:
            names = self.by_type.get(t)
            if names is None or not names.issuperset(attributes):
                return False
        return True

    def learning(self, stream: Stream, stop: int) -> list:
        """What is known after each of ``stream``'s first ``stop`` events that tells something new (those at
        which ``with_event`` would not return None), in order: found column-wise (the first event of each
        type, of each attribute per type, of a datetime ts) instead of event by event. The usual batch
        (types, attribute columns and ts kind all known) is answered from its schema alone."""
        codes, names = stream.type_codes[:stop], stream.type_names
        if stream.ts_is_datetime <= self.ts_is_datetime and self._knows(names, stream.attributes):
            return []
        new: dict = {}  # row -> type -> attributes first seen there
        present, first = np.unique(codes, return_index=True)
        for code, row in zip(present.tolist(), first.tolist()):
            if names[code] not in self.by_type:
                new.setdefault(row, {}).setdefault(names[code], set())
        known = [self.by_type.get(names[code], ()) for code in present.tolist()]
        for attr in stream.attributes:
            if all(attr in names_of_type for names_of_type in known):
                continue  # every type here has it already (the usual batch: nothing to find per row)
            has = np.flatnonzero(~stream.column(attr).null[:stop])
            carrying, first = np.unique(codes[has], return_index=True)
            for code, row in zip(carrying.tolist(), has[first].tolist()):
                if attr not in self.by_type.get(names[code], ()):
                    new.setdefault(row, {}).setdefault(names[code], set()).add(attr)
        datetime_ts = self.ts_is_datetime or stream.ts_is_datetime
        if datetime_ts > self.ts_is_datetime and stop:
            new.setdefault(0, {}).setdefault(names[codes[0]], set())
        out, by_type = [], self.by_type
        for row in sorted(new):
            by_type = {**by_type, **{t: by_type.get(t, set()) | attrs for t, attrs in new[row].items()}}
            out.append(SeenData(by_type, datetime_ts, self.columns))
        return out
