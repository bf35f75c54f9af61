"""Run any cepkit query on Spark: batch (``match``) and Structured Streaming (``match_stream``).

The local engines do the matching, one group of events at a time, inside ``mapInPandas`` (batch) or
``transformWithStateInPandas`` (streaming); Spark groups, sorts and moves the rows. So every engine runs
on Spark unchanged and gives the positions ``cepkit.match`` gives on the same events.

>>> import cepkit.spark                                                    # doctest: +SKIP
>>> spark = cepkit.spark.session()                                         # doctest: +SKIP
>>> cepkit.spark.match("SEQ(A a, B b) WITHIN 10 s PARTITION BY id", spark.table("events")).show()  # doctest: +SKIP
"""
from .batch import match
from .groups import OneGroupWarning
from .session import session
from .streaming import late_events, match_stream

__all__ = ["match", "match_stream", "late_events", "session", "OneGroupWarning"]
