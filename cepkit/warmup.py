"""Compile the numba kernels ahead of the first query: ``cepkit warmup`` (``scripts/setup.sh`` runs it
after installing), so that a notebook's first cell, a fresh Spark worker or a CI run finds machine code in
numba's cache instead of compiling it (~10 s of CPU for the automaton's kernels, docs/status.md).

The kernels are compiled by running each engine that has them on a few events, in the forms the engines
call them with (batch and incremental; one partition and PARTITION BY; the type column read by address).
Their machine code goes where numba caches it: ``__pycache__`` beside the sources, or, when that is
read-only (a system install), the user's cache (``~/.cache/cepkit/numba``), first seeded with what the
install's ``__pycache__`` holds (``cepkit/engines/compiled.py``): a ``cepkit warmup`` run by whoever
installed it serves every user. ``NUMBA_CACHE_DIR`` chooses another directory, e.g. one every Spark worker
of a cluster reads (``cepkit.spark.session`` passes it on to the executors). Without numba (no ``fast``
extra, or ``NUMBA_DISABLE_JIT=1``) there is nothing to compile and warming up only runs the queries.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np
import pandas as pd

# (query, engine): together they call every engine kernel in each form the engines use
QUERIES = [
    ("A a ; B b", "automaton"),
    ("A a ; B b WITHIN 5", "automaton"),
    ("A a ; (B b FILTER b.v > 1)+ ; C c WITHIN 10 s", "automaton"),
    ("A a ; B b ; C c PARTITION BY id", "automaton"),
    ("A a ; B b ; C c", "automaton"),  # ~1,500 matches on 64 events: the outputs grow (``count_roots``)
    ("SEQ(A a, B b) WHERE a.id = b.id", "rcep"),
    ("SEQ(A a, B+ b) WHERE a.id = b.id", "ses"),
]

# MATCH_RECOGNIZE's kernel (cepkit.sql)
RECOGNIZE = """SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES FIRST(DOWN.ts) AS top
    PATTERN (DOWN+ UP+) DEFINE DOWN AS v < PREV(v), UP AS v > PREV(v))"""


def events(n: int = 64) -> pd.DataFrame:
    """A small stream of types A-C with an id and a value, one event per second (an object type column:
    the factorizing kernel reads it by address)."""
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "type": np.array(list("ABC"), dtype=object)[rng.integers(0, 3, n)],
            "ts": np.arange(n, dtype=float),
            "id": rng.integers(0, 4, n),
            "v": rng.integers(0, 4, n),
        }
    )


def warm_up(verbose: bool = False) -> dict:
    """Run every query of ``QUERIES`` (batch and, for the automaton, incremental) and ``RECOGNIZE`` so
    that numba compiles and caches their kernels.

    Parameters
    ----------
    verbose : bool
        Print each query's seconds as it finishes.

    Returns
    -------
    dict
        The wall seconds each took, by (engine, query).

    Examples
    --------
    >>> from cepkit.warmup import warm_up
    >>> took = warm_up()                              # doctest: +SKIP
    >>> sorted({engine for engine, _ in took})        # doctest: +SKIP
    ['automaton', 'rcep', 'recognize', 'ses']
    """
    import cepkit

    frame, took = events(), {}

    def timed(engine: str, query: str, run) -> None:
        start = time.perf_counter()
        run()
        took[(engine, query)] = time.perf_counter() - start
        if verbose:
            print(f"{engine:10} {took[(engine, query)]:6.2f} s  {' '.join(query.split())}", flush=True)

    def automaton(query: str, engine: str) -> None:
        cepkit.match(query, frame, engine=engine).positions()
        if engine == "automaton":
            matcher = cepkit.Matcher(query, engine=engine)
            matcher.extend(frame.iloc[: len(frame) // 2])
            for row in frame.iloc[len(frame) // 2 :].to_dict("records"):
                matcher.push(row)
            matcher.close()
            push = cepkit.Matcher(query, engine=engine).pusher(tuple(frame.columns))  # its own kernel call
            for row in frame.itertuples(index=False):
                push(*row)

    with compile_notes(lambda note: None):  # compiling is what it is for: no note on the way
        for query, engine in QUERIES:
            timed(engine, query, lambda: automaton(query, engine))
        timed("recognize", RECOGNIZE, lambda: cepkit.sql(RECOGNIZE, {"t": frame}))
    return took


@contextmanager
def compile_notes(listener: Callable[[str], None]) -> Iterator[None]:
    """Within the block, the note numba's first compilation of an engine's kernels makes in this process
    ("compiling the automaton's kernels once, ~10 s ...") goes to ``listener`` (a Workbench's status line)
    instead of the log or standard error.

    Examples
    --------
    >>> from cepkit.warmup import compile_notes
    >>> notes = []
    >>> with compile_notes(notes.append):
    ...     pass                       # a first cepkit.match on a clean cache here appends its note
    >>> notes
    []
    """
    from .engines.compiled import listen

    stop = listen(listener)
    try:
        yield
    finally:
        stop()
