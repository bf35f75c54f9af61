"""cepkit: an interactive workbench for complex event processing.

>>> import cepkit
>>> cepkit.match("T AS x ; H AS y", [{"type": "T"}, {"type": "H"}]).positions()
[(0, 1)]
"""

from .errors import EventError, QueryError
from .lang import Hierarchy, Query, parse, pretty
from .runtime import Event, Match, Matcher, Matches, check, match
from .runtime.api import type_warnings  # event types a query names that the events lack (did you mean)
from .runtime.columns import as_events, from_frames, from_wide  # the user's own columns and tables as events
from .runtime.partial_matches import funnel, partial_matches  # where a sequence stopped
from . import engines  # the built-in engines; calling it, cepkit.engines(), gives the capability matrix
from .engines.automaton import automaton  # the compiled automaton of a query ([CEL]), for the widgets
from .lang.rewrite import rewrite  # NEEL normal form with its step trace ([LIU] §5.2)
from .ecube import ECube  # many queries over one hierarchy, planned and evaluated together ([LIU] ch. 4)
from . import explain  # cepkit.explain(query, events, candidate): why is this a match, why is that not (issue 13)
from .explain import Explanation, why_not

__version__ = "0.1.0"
__all__ = [
    "EventError",
    "QueryError",
    "Hierarchy",
    "Query",
    "parse",
    "pretty",
    "Event",
    "Match",
    "Matcher",
    "Matches",
    "engines",
    "match",
    "check",
    "automaton",
    "ECube",
    "rewrite",
    "explain",
    "why_not",
    "Explanation",
    "as_events",
    "from_frames",
    "from_wide",
    "type_warnings",
    "partial_matches",
    "funnel",
]


def __getattr__(name):
    # Heavy or optional parts load on first use: cepkit.spark (PySpark), cepkit.datasets (pandas loaders),
    # cepkit.sql / cepkit.match_recognize (row pattern recognition), the recipes, scenarios and widgets the
    # README names after a plain ``import cepkit``.
    if name in ("spark", "datasets", "match_recognize", "recipes", "simulate", "widgets"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name == "sql":  # MATCH_RECOGNIZE over pandas (docs/language.md §13)
        from .match_recognize import sql

        return sql
    raise AttributeError(f"module 'cepkit' has no attribute {name!r}")
