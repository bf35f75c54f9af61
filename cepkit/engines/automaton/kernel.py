"""The compiled inner loops: numba when it is installed (the ``fast`` extra), plain Python otherwise.

Every kernel function is written once, in the subset of Python numba compiles, and decorated with
``engines.compiled.jit``. Without numba (or with ``NUMBA_DISABLE_JIT=1``) the same functions run as
Python, so both paths give identical results; the Python one is just slower. ``cache=True`` keeps the machine code between
sessions (in ``__pycache__``).
"""

from __future__ import annotations

from ..compiled import COMPILED, entry, numba, signature as _signature  # noqa: F401 (the automaton's names)


def name() -> str:
    """ "numba" or "python": which implementation the kernels run on."""
    return "numba" if COMPILED else "python"


# How many times an array the kernels take was replaced by a new one (grown, compacted): a caller that
# keeps an earlier call's arguments (``Evaluator.run_held``) checks them again only when this moved. Every
# replacement of one it keeps (the automaton's, the arena, scratch, runs, ``RunsTable``, outputs) calls
# ``replaced``.
replacements = [0]


def replaced() -> None:
    """An array some kernel takes was replaced by a new one (``replacements``)."""
    replacements[0] += 1
