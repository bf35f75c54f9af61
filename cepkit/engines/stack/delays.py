"""``max_delay``: how late each event type may arrive (digest 000a §2.4, LANGUAGE.md §6, issue 5).

The language's form is one bound D for the whole stream: no event arrives after an event whose ts
exceeds its own by more than D. The stack engine also takes a mapping from event type to its own bound,
the digest's "per source" guarantees: ``max_delay={"A": 5, "B": "2 min"}`` promises that no A arrives
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
"""
from __future__ import annotations

import math
from typing import Mapping, Optional

from ...runtime.delays import EVERY_OTHER_TYPE, longest_delay



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
        if name is None:   # ANY covers every type: the largest bound, if "*" leaves no type unbounded
            return longest_delay(self.value)
        bound = self._promised(name)
        children = self.hierarchy.children.get(name, ()) if self.hierarchy is not None else ()
        if children:   # complete when every type below is (hierarchies are acyclic); "*" covers the
            return min(bound, max(self.of(child) for child in children))   # leaves, not the concept
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
