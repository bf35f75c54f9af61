"""Making many Python objects from arrays at once: tuples and lists of rows, ints shared where values
repeat, and the cyclic garbage collector paused meanwhile."""

from __future__ import annotations

import contextlib
import gc

import numpy as np

# positions() shares one int per position value when the cells outnumber the values' range this much
# (Kleene rows). A;B;C's rows hold each position ~2 times: sharing there would save a third of
# positions()' memory at 10M rows and cost ~50 % more time (bench/README.md, end to end, memory)
SHARED_INTS = 4


def row_tuples(matrix: np.ndarray) -> list:
    """The rows of a matrix as tuples (one list per column, zipped)."""
    if not matrix.shape[1]:
        return [()] * len(matrix)
    return list(zip(*[column.tolist() for column in matrix.T]))


def shared_ints(values: np.ndarray) -> np.ndarray:
    """Integers as they should become Python ints: as they are, or, when the values repeat (Kleene
    matches share most positions; A;B;C's rows each position ~3 times), as an object array holding one
    int per value of their range (indexing it is cheaper than allocating an int per cell: 45 vs 70 ms
    for 1.2M cells, and an int is 32 bytes)."""
    if not len(values):
        return values
    low = int(values.min())
    span = int(values.max()) - low + 1
    if len(values) < SHARED_INTS * span:
        return values
    return np.arange(low, low + span).astype(object)[values - low]


def row_lists(offsets: np.ndarray, flat: list) -> list:
    """The CSR rows of ``flat`` (a list) as lists (with the collector paused: see ``position_tuples``)."""
    bounds = offsets.tolist()
    with collector_paused():
        return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


@contextlib.contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector while an engine builds many acyclic objects (matches, their
    bindings): each collection their allocations trigger traverses every live object, the stream's events
    included, which took 2-3x longer than building the matches (bench/README.md, stack section).
    Reference counting still frees everything."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
