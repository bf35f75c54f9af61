"""Streams, events, matches, engine selection and the public match API."""
from .api import Matcher, match
from .events import Event, Stream
from .matches import Match, Matches
from .registry import Engine, IncrementalPlan, Plan, engines, get_engine, register

__all__ = ["Matcher", "match", "Event", "Stream", "Match", "Matches", "Engine", "IncrementalPlan", "Plan",
           "engines", "get_engine", "register"]
