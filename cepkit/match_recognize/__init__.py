"""MATCH_RECOGNIZE (SQL:2016 row pattern recognition) over pandas and Spark: docs/language.md §13.

``cepkit.sql(query, frames)`` runs it on pandas; ``cepkit.spark.sql`` on a Spark DataFrame.
"""

from .explain import Explanation, why_not
from .parser import KEYWORDS, is_recognize, parse
from .run import find, output, sql
from .stream import RowStream

__all__ = ["KEYWORDS", "is_recognize", "parse", "find", "output", "sql", "why_not", "Explanation", "RowStream"]
