"""Run any cepkit query on Spark: batch (``match``) and Structured Streaming (``match_stream``).

The local engines do the matching, one group of events at a time, inside ``mapInArrow`` (batch) or
``transformWithStateInPandas`` (streaming); Spark groups and moves the rows. So every engine runs
on Spark unchanged and gives the positions ``cepkit.match`` gives on the same events.

>>> import cepkit.spark                                                    # doctest: +SKIP
>>> spark = cepkit.spark.session()                                         # doctest: +SKIP
>>> cepkit.spark.match("SEQ(A a, B b) WITHIN 10 s PARTITION BY id", spark.table("events")).show()  # doctest: +SKIP

Choices where the language page (docs/language.md) and issue 3 leave room:

* Batch positions are ranks in the logical order (ts, then the ``position`` column, then the DataFrame's
  own row order), and ``match_id`` numbers the matches in output order, as locally. Both need global
  ranks, so ``match`` runs its jobs when called and returns checkpointed rows already in that order.
* A query is split by PARTITION BY key, else into overlapping time slices when it has a window, else it
  runs as one group with a ``OneGroupWarning`` (``groups``: why slicing loses and duplicates nothing).
  A PARTITION BY query with a time window is sliced too, every key in every slice, when the data spans
  a slice per shuffle partition: a few large keys then leave no core idle, and the slices' matches come
  out in order. Only the events of the types the query names are shuffled (``groups.named_types``).
* Only the columns the query reads travel to the engines; null and NaN keys meet in one group, since
  locally both are a missing attribute.
* Streaming needs a ts, an integer position column (reported as the positions) and a window; the
  out-of-order mode's bound becomes the watermark delay, later events are dropped and counted
  (``late_events``), ``match_id`` counts each key's matches, and the aggressive mode is refused since an
  append-only stream cannot retract (``streaming``, ``watermark``).
* ``cube_stream`` runs an ``ECube`` whose queries share PARTITION BY over a stream as ``match_stream`` runs
  one query: a streaming cube per key in the keyed state, the same watermark and recovery (``cube``).
* ``supervise`` starts a streaming query (a ``writeStream`` of ``match_stream``, ``cube_stream`` or a
  streaming ``sql``) and restarts it on its checkpoint when a batch stalls (``supervisor``).
* ``Job`` runs Spark work off the calling thread under a job tag, with its tasks' progress and a
  ``cancel()`` (classic and Connect sessions alike); ``with_positions`` numbers events once, so that a
  widget can run ``match`` on them and fetch a match's events by position (``jobs``, ``batch``).
"""

from .batch import match, with_positions
from .cube import cube_stream
from .recognize import sql
from .groups import OneGroupWarning
from .jobs import Cancelled, Job, Progress, active_session
from .session import session
from .streaming import late_events, match_stream
from .supervisor import StalledQueryWarning, Supervisor, supervise

__all__ = [
    "match",
    "match_stream",
    "cube_stream",
    "late_events",
    "supervise",
    "Supervisor",
    "StalledQueryWarning",
    "session",
    "sql",
    "with_positions",
    "Job",
    "Progress",
    "Cancelled",
    "active_session",
    "OneGroupWarning",
]
