"""Engines behind one interface, and the registry of them.

An engine is a room with one door (docs/architecture.md): ``compile(query, **options) -> Plan``, then
``plan.run(stream) -> list[Match]`` or ``plan.matcher()`` for incremental use. It declares the query
features (``cepkit.lang.FEATURES``) and out-of-order modes it supports; ``engine="auto"``
(``cepkit.runtime.selection``) takes the best-ranked engine that supports everything the query uses.

The registry is a leaf: it imports no engine. The built-in engines are named in ``BUILTIN_ENGINES``
(name -> module), and a module is imported the first time its engine is asked for (the module registers
its engine with ``register`` when imported); ``registered()`` imports them all. A new built-in engine is
a module that calls ``register`` and a line in that table.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import Dict, Iterable, List, Optional

import pandas as pd

from ..errors import QueryError
from ..lang.query import FEATURES, Query
from .match_record import output_order

DISORDER_MODES = ("reject", "kslack", "conservative", "aggressive")


class IncrementalPlan(ABC):
    """Push events one at a time; get the matches that became final."""

    answers_at_close = False  # True: matches only come out of ``close`` (the out-of-order layer then
    # re-evaluates nothing before the stream is complete)

    @abstractmethod
    def push(self, event) -> list:
        """Feed the next event (a ``cepkit.Event`` with its arrival position); return newly final matches
        (in a retracting out-of-order mode, also retractions: ``Match`` with ``sign="-"``)."""

    def close(self) -> list:
        """The stream is complete: return the matches that were waiting for the future (trailing negation)."""
        return []

    def step(self, columns: tuple):
        """A faster ``push`` for ``cepkit.Matcher.pusher``: a callable ``step(type, time, values, position)``
        taking an event as its type, its time in seconds, its values of ``columns`` and its position, already
        checked, returning what ``push`` returns in output order; None (this default): the pusher builds an
        ``Event`` and calls ``push``."""
        return None

    def extend(self, stream):
        """Feed every event of ``stream`` (a ``Stream``; its positions are the events' positions) in order;
        return what pushing them one by one would, as ``cepkit.Matcher`` reports it: each push's matches in
        output order (docs/language.md §10.2), push after push, as a list or a ``MatchList``. This default
        pushes event by event (engines that are per-event by nature); an engine that can take a
        micro-batch as columns overrides it."""
        out = []
        for event in stream:
            found = self.push(event)
            if found:
                out += output_order(found)
        return out


class Plan(ABC):
    """A query compiled by one engine."""

    @abstractmethod
    def run(self, stream) -> list:
        """All matches over a finite ``Stream`` (any order; ``Matches`` sorts them)."""

    def matcher(self) -> IncrementalPlan:
        raise NotImplementedError(f"{type(self).__name__} has no incremental mode")

    def info(self) -> dict:
        """Engine-specific facts worth showing (automaton size, buffer sizes...)."""
        return {}

    def fresh(self) -> Optional["Plan"]:
        """A plan for the same query sharing this one's compiled parts but none of its run state, so a
        compiled query can be kept and run again (``cepkit.match``'s plan cache); None: this plan cannot
        be shared (the cache then compiles every call)."""
        return None


class Engine(ABC):
    name: str = ""
    rank: int = 100  # engine="auto" prefers lower ranks
    features: frozenset = frozenset()  # query features supported (cepkit.lang.FEATURES)
    disorder: frozenset = frozenset({"reject"})  # out-of-order modes: its own, or through runtime.disorder
    options: frozenset = frozenset()  # keyword options accepted besides disorder (and k, max_delay)
    description: str = ""

    def runs_disorder(self, query: Query, mode: str) -> bool:
        """Does ``compile`` run out-of-order ``mode`` itself for ``query``? Otherwise the registry puts the
        engine's in-order matcher behind the out-of-order layer (``cepkit.runtime.disorder``)."""
        return mode == "reject"

    @abstractmethod
    def compile(self, query: Query, **options) -> Plan:
        """Compile; raise ``QueryError`` (via ``unsupported``) for anything outside the engine's fragment."""

    def unsupported(self, query: Query, node, what: str) -> QueryError:
        """The error for a query outside this engine's fragment, naming the engines that can run it."""
        others = [e.name for e in engines_supporting(query_requirements(query, {})) if e.name != self.name]
        return QueryError.at(node, f"engine {self.name!r} does not support {what}", query.text, engines=others)


_REGISTRY: Dict[str, Engine] = {}

BUILTIN_ENGINES = {
    "reference": "cepkit.semantics.engine",
    "automaton": "cepkit.engines.automaton",
    "stack": "cepkit.engines.stack",
    "ses": "cepkit.engines.ses",
    "rcep": "cepkit.engines.rcep",
    "nested": "cepkit.engines.nested",
    "ecube": "cepkit.engines.ecube",
}
"""The built-in engines: name -> the module that registers it when imported."""


def register(engine: Engine) -> Engine:
    _REGISTRY[engine.name] = engine
    return engine


def registered() -> List[Engine]:
    """Every engine, built-in and registered, in order of rank (``engine="auto"`` tries them in turn)."""
    for name in BUILTIN_ENGINES:
        _load_builtin(name)
    return sorted(_REGISTRY.values(), key=lambda e: (e.rank, e.name))


def get_engine(name: str) -> Engine:
    """The engine called ``name`` (a built-in one's module is imported on first use)."""
    _load_builtin(name)
    if name not in _REGISTRY:
        raise QueryError(f"unknown engine {name!r}; engines: {', '.join(e.name for e in registered())}")
    return _REGISTRY[name]


def _load_builtin(name: str) -> None:
    module = BUILTIN_ENGINES.get(name)
    if module is not None and name not in _REGISTRY:
        importlib.import_module(module)  # the module registers its engine


def query_requirements(query: Query, options: dict) -> dict:
    """feature -> node, including the out-of-order mode requested by ``options``."""
    required = dict(query.features)
    mode = options.get("disorder", "reject")
    if mode not in DISORDER_MODES:
        raise QueryError(f"unknown disorder mode {mode!r}; choose one of {', '.join(DISORDER_MODES)}")
    if mode != "reject":
        required["disorder:" + mode] = query.ast
    return required


def supports(engine: Engine, required: Iterable[str]) -> bool:
    return all(f in engine.features or (f.startswith("disorder:") and f[9:] in engine.disorder) for f in required)


def engines_supporting(required) -> List[Engine]:
    return [e for e in registered() if supports(e, required)]


def engines() -> pd.DataFrame:
    """The capability matrix: one row per engine, one boolean column per feature and out-of-order mode."""
    rows = []
    for e in registered():
        row = {"engine": e.name, "rank": e.rank, "description": e.description}
        row.update({f: f in e.features for f in FEATURES})
        row.update({"disorder:" + m: m in e.disorder for m in DISORDER_MODES})
        rows.append(row)
    return pd.DataFrame(rows).set_index("engine")
