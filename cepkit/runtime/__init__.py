"""Streams, events, matches, engine selection and the public match API."""

from .api import Matcher, check, match
from .event_record import Event
from .stream import Stream
from .match_record import Match
from .matches import Matches
from .registry import Engine, IncrementalPlan, Plan, engines, get_engine, register

__all__ = [
    "Matcher",
    "check",
    "match",
    "Event",
    "Stream",
    "Match",
    "Matches",
    "Engine",
    "IncrementalPlan",
    "Plan",
    "engines",
    "get_engine",
    "register",
]
