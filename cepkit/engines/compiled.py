"""numba helpers the compiled engines' kernels share (automaton, rcep, ses, and E-Cube's and MATCH_RECOGNIZE's
kernels): the decorator that compiles a function when numba is installed (the plain Python function
otherwise, as the kernels' pure-Python twins run), a comparison by operator code, and array growth."""

from __future__ import annotations

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is in the dev/bench/fast extras
    numba = None

OP_CODES = {"<": 0, "<=": 1, ">": 2, ">=": 3, "=": 4, "!=": 5}


def jit(fn=None, *, inline: bool = False, nrt: bool = True):
    """Compile ``fn`` with numba in nopython mode (cached, without the GIL) when available; return it
    unchanged otherwise. ``inline`` inlines it into its compiled callers (small helpers on the per-event
    path). ``nrt=False`` compiles a helper that allocates nothing without numba's reference counting: a
    compiled call otherwise counts a reference in and out on each array argument (two atomic operations
    each, inlined or not), which took a quarter of rcep's kernel, whose helpers run per candidate."""
    if fn is None:
        return lambda f: jit(f, inline=inline, nrt=nrt)
    if numba is None:
        return fn
    options = {} if nrt else {"_nrt": False}  # numba's flag for code that needs no reference counts
    return numba.njit(cache=True, nogil=True, inline="always" if inline else "never", **options)(fn)


@jit
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


@jit
def grow(array, size):
    """``array`` copied into one at least ``size`` long (twice as long, at least)."""
    bigger = np.empty(max(size, 2 * len(array)), dtype=array.dtype)
    bigger[: len(array)] = array
    return bigger
