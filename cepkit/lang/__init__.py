"""The cepkit language: grammar, AST, parser, printer, checks (docs/language.md)."""

from . import ast
from .hierarchy import Hierarchy
from .printer import pretty
from .query import FEATURES, Query, parse

__all__ = ["ast", "Hierarchy", "pretty", "FEATURES", "Query", "parse"]
