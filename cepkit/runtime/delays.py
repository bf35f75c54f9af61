"""The delay options of the out-of-order modes (docs/language.md §6): ``k=`` and ``max_delay=``, parsed once for
every engine and for Spark streams.

``max_delay`` is one bound for the whole stream (the language's form) or a mapping from event type (or a
concept, or ``"*"`` for every type not named) to its own bound (the stack engine's per-source guarantees,
docs/stack-engine.md).

``MaxDelay`` resolves a bound per type. The language's form is one bound D for the whole stream: no event
arrives after an event whose ts exceeds its own by more than D. A mapping gives each type its own bound,
[LIU] §3.6.1's guarantees per source: ``max_delay={"A": 5, "B": "2 min"}`` promises that no A arrives
after an event (of any type) whose ts exceeds the A's by more than 5, and no B more than 120 behind.

- A type missing from the mapping has no max-delay guarantee: only punctuations complete it. The key
  ``"*"`` gives every type not named (by itself or a concept above it) a bound.
- A key may name a concept of the query's hierarchy: the promise covers every type below it. Several
  keys covering one type are several promises; the smallest holds (``{"Alarm": 5, "Fire": 9}`` bounds
  Fire by 5).
- A concept is complete when every type it covers is: its bound is the largest of its children's, unless
  a smaller one is promised on it by name (``"*"`` is no promise on a concept). An event whose type is
  the concept itself is held to that bound.
- ``ANY`` (a negated ``ANY``) covers every type: its bound is the largest of the mapping's, and there is
  none without ``"*"``.

``of(name)`` is the bound for an event type, a concept or ``None`` (ANY); ``math.inf`` means none.

``Punctuations`` holds the other guarantee: a PUNCTUATION event ``of`` T at ts p promises no more T (or types
below concept T) with ts <= p.
"""

from __future__ import annotations

import datetime as _dt
import math
import numbers
from collections.abc import Mapping
from typing import Optional

from ..errors import EventError
from ..lang.parser import parse_tree
from .event_record import PUNCTUATION

EVERY_OTHER_TYPE = "*"


def delay_seconds(value, name: str) -> float:
    """A delay option in seconds: a number (the ts's scale), a timedelta, or text such as ``"5 min"``."""
    if isinstance(value, bool) or value is None:
        raise TypeError(f"{name} must be a number, a timedelta or a duration such as '5 s', not {value!r}")
    if isinstance(value, numbers.Real):
        seconds = float(value)
    elif isinstance(value, _dt.timedelta) or hasattr(value, "total_seconds"):
        seconds = value.total_seconds()
    elif isinstance(value, str):
        window = parse_tree(f"A a WITHIN {value}").within
        if window.events:
            raise ValueError(f"{name} is a time, not a number of events: {value!r}")
        seconds = window.seconds
    else:
        raise TypeError(f"{name} must be a number, a timedelta or a duration such as '5 s', not {value!r}")
    if seconds < 0:
        raise ValueError(f"{name} must not be negative, got {value!r}")
    return seconds


def max_delay_option(value):
    """``max_delay=``: one bound (``delay_seconds``), or a mapping from event type (or concept, or ``"*"`` for
    every type not named) to its own bound, each parsed like the scalar (docs/stack-engine.md)."""
    if not isinstance(value, Mapping):
        return delay_seconds(value, "max_delay")
    if not value:
        raise ValueError(
            "max_delay={} bounds no type: name event types (or '*' for all others), or leave "
            "max_delay out to rely on punctuations"
        )
    out = {}
    for name, bound in value.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"max_delay's keys are event type names (or '*' for every other type), not {name!r}")
        if name == PUNCTUATION:
            raise ValueError(
                f"max_delay[{PUNCTUATION!r}]: punctuations are promises, not events; they need no delay bound"
            )
        out[name] = delay_seconds(bound, f"max_delay[{name!r}]")
    return out


def longest_delay(max_delay) -> float:
    """How late any event may arrive under a parsed ``max_delay``: the bound itself, or the largest of a
    mapping's; ``math.inf`` when a mapping leaves some type unbounded (no ``"*"``)."""
    if not isinstance(max_delay, Mapping):
        return max_delay
    return max(max_delay.values()) if EVERY_OTHER_TYPE in max_delay else math.inf


class MaxDelay:
    """The resolved bounds of one ``max_delay=`` option (None, a number, or a type -> number mapping)."""

    def __init__(self, value=None, hierarchy=None):
        self.value = value
        self.hierarchy = hierarchy
        self.per_type = isinstance(value, Mapping)
        self._cache: dict = {}

    @property
    def bounded(self) -> bool:
        """Does some type have a max-delay guarantee?"""
        return self.value is not None

    def of(self, name: Optional[str]) -> float:
        """The delay bound of events of type (or concept) ``name``; None is ANY; ``math.inf``: no bound."""
        if self.value is None:
            return math.inf
        if not self.per_type:
            return self.value
        if name not in self._cache:
            self._cache[name] = self._resolve(name)
        return self._cache[name]

    def _promised(self, name: str) -> float:
        """The smallest bound promised by name on ``name`` or a concept above it (``"*"`` not included)."""
        best, todo, seen = math.inf, [name], set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            best = min(best, self.value.get(current, math.inf))
            if self.hierarchy is not None:
                todo.extend(self.hierarchy.parents(current))
        return best

    def _resolve(self, name: Optional[str]) -> float:
        if name is None:  # ANY covers every type: the largest bound, if "*" leaves no type unbounded
            return longest_delay(self.value)
        bound = self._promised(name)
        children = self.hierarchy.children.get(name, ()) if self.hierarchy is not None else ()
        if children:  # complete when every type below is (hierarchies are acyclic); "*" covers the
            return min(bound, max(self.of(child) for child in children))  # leaves, not the concept
        return bound if bound < math.inf else self.value.get(EVERY_OTHER_TYPE, math.inf)

    def worst(self, names) -> float:
        """The largest bound among ``names``: how late some event of one of them may still arrive."""
        return max((self.of(name) for name in names), default=-math.inf)

    def describe(self, name: Optional[str]) -> str:
        """How an error names the bound of ``name``."""
        if not self.per_type:
            return f"max_delay={self.value}"
        if name in self.value:
            return f"max_delay[{name!r}]={self.value[name]}"
        return f"max_delay for {name!r} (from {dict(self.value)!r}: {self.of(name)})"


def type_hierarchy(query):
    """The query's hierarchy of event types, or None (an ``attribute=`` hierarchy classifies values, not types)."""
    hierarchy = query.hierarchy
    return hierarchy if hierarchy is not None and hierarchy.attribute is None else None


def punctuated_type(event) -> str:
    """The type (or concept) a PUNCTUATION event closes; ``EventError`` when it names none."""
    of = event.get("of")
    if not isinstance(of, str):
        raise EventError(
            event.position,
            "of",
            "a PUNCTUATION event needs an attribute 'of' naming the event type it closes (or '*': every type)",
        )
    return of


ALL_TYPES = "*"  # a punctuation ``of`` it closes every type at once (as ``"*"`` in a max_delay mapping)


class Punctuations:
    """The largest punctuated ts per type or concept, and what it promises (a concept covers its types,
    ``"*"`` every type, the ANY type included)."""

    def __init__(self, hierarchy=None):
        self.hierarchy = hierarchy
        self.latest: dict = {}  # type or concept -> largest punctuated ts

    def punctuate(self, of: str, time: float) -> None:
        self.latest[of] = max(self.latest.get(of, -math.inf), time)

    def frontier(self, name: Optional[str]) -> float:
        """Largest ts through which events of type (or concept) ``name`` are complete, by punctuations on
        it, on a concept above it or on every type (``"*"``); -inf if none. ``None`` (the ANY type) is
        complete through the ``"*"`` punctuations only."""
        return max((self.latest.get(of, -math.inf) for of in self.closers(name)), default=-math.inf)

    def closers(self, name: Optional[str]) -> set:
        """The ``of`` values whose punctuations complete ``name``: ``"*"``, ``name`` and the concepts above it."""
        seen = {ALL_TYPES}
        todo = [] if name is None else [name]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if self.hierarchy is not None:
                todo.extend(self.hierarchy.parents(current))
        return seen
