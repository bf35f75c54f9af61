"""The compiled inner loops: numba when it is installed (the ``fast`` extra), plain Python otherwise.

Every kernel function is written once, in the subset of Python numba compiles, and decorated with
``engines.compiled.jit``. Without numba (or with ``NUMBA_DISABLE_JIT=1``) the same functions run as
Python, so both paths give identical results; the Python one is just slower. ``cache=True`` keeps the machine code between
sessions (in ``__pycache__``).
"""

from __future__ import annotations

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - exercised by the pure-Python test run
    numba = None

COMPILED = numba is not None and not numba.config.DISABLE_JIT


def name() -> str:
    """ "numba" or "python": which implementation the kernels run on."""
    return "numba" if COMPILED else "python"


_entries: dict = {}  # (kernel, signature of the arguments) -> machine code

# How many times an array the kernels take was replaced by a new one (grown, compacted): a caller that
# keeps an earlier call's arguments (``Evaluator.run_held``) checks them again only when this moved. Every
# replacement of one it keeps (the automaton's, the arena, scratch, runs, ``RunsTable``, outputs) calls
# ``replaced``.
replacements = [0]


def replaced() -> None:
    """An array some kernel takes was replaced by a new one (``replacements``)."""
    replacements[0] += 1


def entry(kernel, args: tuple):
    """``kernel``'s machine code for the types of ``args``, to be called without numba's dispatch, which
    types every argument on every call (~30 arrays for ``advance``: 5-15 µs, more than a one-event step).
    Only for a caller whose argument types never change (each array's dtype, dimensions and layout, each
    tuple's shape); without numba, the function itself. Found once per signature (``_signature``):
    numba's typing of the ~50 arrays of ``advance`` and ``enumerate_roots`` cost ~0.8 ms per run."""
    if not COMPILED:
        return kernel
    key = (kernel, _signature(args))
    code = _entries.get(key)
    if code is None:
        code = _entries[key] = kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))
    return code


def _signature(value):
    """All numba's type of ``value`` depends on (an array's dtype, dimensions, layout, whether writeable
    and aligned; a tuple's class and items; a scalar's class, and whether an int fits int64), cheaper to
    find than that type."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        return value.dtype, value.ndim, flags.c_contiguous, flags.f_contiguous, flags.writeable, flags.aligned
    if isinstance(value, tuple):
        return (type(value),) + tuple(_signature(item) for item in value)
    if type(value) is int:
        return int, -(1 << 63) <= value < (1 << 63)
    return type(value)
