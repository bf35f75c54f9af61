"""The public entry points: ``cepkit.match`` (batch) and ``cepkit.Matcher`` (incremental)."""
from __future__ import annotations

import math
from typing import Optional

from ..errors import EventError, QueryError
from ..lang import ast as A
from ..lang.query import Query, parse
from .events import Stream, make_event
from .matches import Matches, collector_paused, output_order
from .registry import select_engine


def prepare(query, strategy: Optional[str] = None, hierarchy=None) -> Query:
    """Parse text (or re-use a Query) and apply a ``strategy=`` override."""
    q = parse(query, hierarchy)
    return q.with_strategy(strategy) if strategy is not None else q


def check_against_stream(query: Query, stream: Stream) -> None:
    """Errors that need the data: unknown attributes, partition keys, and unit-less windows on datetime ts."""
    if stream.ts_is_datetime and query.within is not None and not query.within.events and query.within.unit is None:
        raise QueryError.at(query.within, "WITHIN needs a unit (s, min, h, d...) or EVENTS when ts are datetimes",
                            query.text)
    if not len(stream):
        return
    all_attrs = stream.attributes_of()
    for key in query.partition_by:
        if key not in all_attrs and key not in ("type", "ts"):
            raise QueryError.at(query.ast, f"unknown attribute {key!r} in PARTITION BY; the events have: "
                                           f"{', '.join(sorted(all_attrs)) or 'no attributes'}", query.text)
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
        if not known and types is not None:
            continue  # no event of those types in this stream: nothing to check against
        if attr not in known:
            what = f"events of type {', '.join(sorted(types))}" if types is not None else "the events"
            raise QueryError.at(node, f"unknown attribute {attr!r} of {node.var!r}: {what} have "
                                      f"{', '.join(sorted(known)) or 'no attributes'}", query.text)


def _types_of(atoms, query: Query):
    """The event types a variable can bind (None: any type)."""
    if not atoms or any(a.type is None for a in atoms):
        return None
    if query.hierarchy is not None:
        return frozenset().union(*(query.hierarchy.covers(a.type) for a in atoms))
    return frozenset(a.type for a in atoms)


def match(query, events, engine: str = "auto", strategy: Optional[str] = None, hierarchy=None,
          **options) -> Matches:
    """All matches of ``query`` over ``events`` (a DataFrame, dicts or Events), in output order.

    >>> import cepkit
    >>> cepkit.match("A a ; B b", [{"type": "A"}, {"type": "B"}, {"type": "B"}]).positions()
    [(0, 1), (0, 2)]
    """
    q = prepare(query, strategy, hierarchy)
    stream = Stream.from_any(events)
    check_against_stream(q, stream)
    if options.get("disorder", "reject") == "reject":
        stream.require_order()
    chosen, plan = select_engine(q, engine, options)
    found = plan.run(stream)   # MatchArrays, or Match objects (engines pause the collector while they build them)
    with collector_paused():   # not around the run: an engine's cyclic garbage must still be collected
        # the emission log is read on demand (``Matches.deltas``): it may need every Match object
        return Matches(found, chosen.name, q, deltas=getattr(plan, "deltas", None), info=plan.info(),
                       stream=stream)


class Matcher:
    """Incremental matching: ``push`` one event at a time, get the matches it made final.

    >>> m = Matcher("A a ; B b", engine="reference")
    >>> m.push({"type": "A", "ts": 0}), [x.positions for x in m.push({"type": "B", "ts": 1})]
    ([], [(0, 1)])

    In an out-of-order mode that retracts (``disorder="aggressive"``), ``push`` also returns retractions
    (``sign="-"``); ``matches`` and ``result()`` hold the net result, ``deltas`` (and ``result().deltas``)
    every emission in order.
    """

    def __init__(self, query, engine: str = "auto", strategy: Optional[str] = None, hierarchy=None, **options):
        self.query = prepare(query, strategy, hierarchy)
        self.options = options
        chosen, plan = select_engine(self.query, engine, options)
        self.engine = chosen.name
        self._plan = plan
        self._inc = plan.matcher()
        self._position = 0
        self._max_time = -math.inf
        self._reject_disorder = options.get("disorder", "reject") == "reject"
        self.matches: list = []
        self.deltas: list = []

    def push(self, event) -> list:
        e = make_event(event, self._position)
        if self._reject_disorder and e.time < self._max_time:
            raise EventError(self._position, "ts", f"ts {e.ts!r} is earlier than an earlier event's; choose an "
                                                   "out-of-order mode with disorder=")
        self._max_time = max(self._max_time, e.time)
        self._position += 1
        return self._collect(self._inc.push(e))

    def extend(self, events) -> list:
        out = []
        for e in events:
            out.extend(self.push(e))
        return out

    def close(self) -> list:
        return self._collect(self._inc.close())

    def _collect(self, emitted) -> list:
        """Log the new emissions; a retraction withdraws the match it names from the net result."""
        new = output_order(emitted)
        self.deltas.extend(new)
        for m in new:
            if m.sign == "+":
                self.matches.append(m)
                continue
            for i in range(len(self.matches) - 1, -1, -1):
                if self.matches[i].key == m.key:
                    del self.matches[i]
                    break
        return new

    def result(self) -> Matches:
        return Matches(self.matches, self.engine, self.query, deltas=list(self.deltas))
