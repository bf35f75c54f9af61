"""The delay options of the out-of-order modes (LANGUAGE.md §6): ``k=`` and ``max_delay=``, parsed once for
every engine and for Spark streams.

``max_delay`` is one bound for the whole stream (the language's form) or a mapping from event type (or a
concept, or ``"*"`` for every type not named) to its own bound (the stack engine's per-source guarantees,
docs/stack-engine.md).
"""
from __future__ import annotations

import datetime as _dt
import math
import numbers
from collections.abc import Mapping

from ..lang.parser import parse_tree
from .events import PUNCTUATION

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
        raise ValueError("max_delay={} bounds no type: name event types (or '*' for all others), or leave "
                         "max_delay out to rely on punctuations")
    out = {}
    for name, bound in value.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"max_delay's keys are event type names (or '*' for every other type), not {name!r}")
        if name == PUNCTUATION:
            raise ValueError(f"max_delay[{PUNCTUATION!r}]: punctuations are promises, not events; they need "
                             "no delay bound")
        out[name] = delay_seconds(bound, f"max_delay[{name!r}]")
    return out


def longest_delay(max_delay) -> float:
    """How late any event may arrive under a parsed ``max_delay``: the bound itself, or the largest of a
    mapping's; ``math.inf`` when a mapping leaves some type unbounded (no ``"*"``)."""
    if not isinstance(max_delay, Mapping):
        return max_delay
    return max(max_delay.values()) if EVERY_OTHER_TYPE in max_delay else math.inf
