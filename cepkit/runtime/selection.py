"""``engine=``: the engine that runs a query (by name, or ``"auto"``: the best-ranked one that supports
everything the query uses), its options checked, its plan put behind the out-of-order layer
(``cepkit.runtime.disorder``) when it does not run the requested mode itself."""

from __future__ import annotations

from ..errors import QueryError, did_you_mean
from ..lang.query import Query
from .disorder import layered
from .registry import Engine, Plan, engines_supporting, get_engine, query_requirements, supports


def select_engine(query: Query, name: str, options: dict) -> tuple:
    """(engine, plan) for ``engine=name`` or the best one for ``"auto"``; QueryError if none can run it."""
    required = query_requirements(query, options)
    if name != "auto":
        engine = get_engine(name)
        missing = [f for f in required if not supports(engine, [f])]
        if missing:
            feature = missing[0]
            others = [e.name for e in engines_supporting(required)]
            raise QueryError.at(
                required[feature], f"engine {engine.name!r} does not support {feature}", query.text, engines=others
            )
        _check_options(engine, options)
        return engine, _compile(engine, query, options)
    first_error = None
    for engine in engines_supporting(required):
        try:
            _check_options(engine, options)
            return engine, _compile(engine, query, options)
        except QueryError as err:
            first_error = first_error or err
    if first_error is not None:
        raise first_error
    raise QueryError.at(
        query.ast, "no engine supports this combination of features: " + ", ".join(required), query.text
    )


def _compile(engine: Engine, query: Query, options: dict) -> Plan:
    """The engine's own plan, or its in-order plan behind the out-of-order layer."""
    mode = options.get("disorder", "reject")
    if mode == "reject":
        return engine.compile(query, **{k: v for k, v in options.items() if k != "disorder"})
    if engine.runs_disorder(query, mode):
        return engine.compile(query, **options)
    return layered(engine, query, mode, options)


def _check_options(engine: Engine, options: dict) -> None:
    accepted = set(engine.options) | {"disorder"} | ({"k", "max_delay"} if len(engine.disorder) > 1 else set())
    unknown = set(options) - accepted
    if unknown:
        known = accepted | {"engine", "strategy", "hierarchy", "partial", "type", "ts"}  # (cepkit.match's own)
        raise TypeError(
            f"engine {engine.name!r} does not take option(s) {', '.join(sorted(unknown))}; "
            f"it takes: {', '.join(sorted(accepted))}{did_you_mean(sorted(unknown)[0], known)}"
        )
