"""numba helpers the compiled engines' kernels share (rcep, ses): the decorator that compiles a function
when numba is installed (the plain Python function otherwise, as the kernels' pure-Python twins run), a
comparison by operator code, and array growth."""

from __future__ import annotations

import numpy as np

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is in the dev/bench/fast extras
    njit = None

OP_CODES = {"<": 0, "<=": 1, ">": 2, ">=": 3, "=": 4, "!=": 5}


def compiled(fn):
    """``fn`` compiled by numba (cached, without the GIL) when numba is installed; ``fn`` itself otherwise."""
    return fn if njit is None else njit(cache=True, nogil=True)(fn)


@compiled
def phi(op, a, b):
    """``a φ b`` for the operator whose code ``OP_CODES`` gives."""
    if op == 0:
        return a < b
    if op == 1:
        return a <= b
    if op == 2:
        return a > b
    if op == 3:
        return a >= b
    if op == 4:
        return a == b
    return a != b


@compiled
def grow(array, size):
    """``array`` copied into one at least ``size`` long (twice as long, at least)."""
    bigger = np.empty(max(size, 2 * len(array)), dtype=array.dtype)
    bigger[: len(array)] = array
    return bigger
