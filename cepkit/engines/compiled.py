"""numba helpers the compiled engines' kernels share (automaton, rcep, ses, and E-Cube's and MATCH_RECOGNIZE's
kernels): the decorator that compiles a function when numba is installed (the plain Python function
otherwise, as the kernels' pure-Python twins run), a comparison by operator code, array growth, a
kernel's machine code for arguments whose types never change (``entry``: no numba dispatch per call),
and the order of rows of positions (CSR offsets: output order, docs/language.md §10.2, or by (position,
slot) pairs; rcep and ses)."""

from __future__ import annotations

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is in the dev/bench/fast extras
    numba = None

COMPILED = numba is not None and not numba.config.DISABLE_JIT
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


if COMPILED:
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx, array, index):
        """Ask the processor to bring ``array[index]``'s cache line in (``llvm.prefetch``: a read, into every
        cache level), not waiting for it; ``index`` must be in range (no check is made)."""

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            byte = ir.IntType(8).as_pointer()
            fn = cgutils.get_or_insert_function(
                builder.module,
                ir.FunctionType(ir.VoidType(), [byte, ir.IntType(32), ir.IntType(32), ir.IntType(32)]),
                "llvm.prefetch.p0i8",
            )
            at = builder.bitcast(builder.gep(data, [args[1]]), byte)
            builder.call(fn, [at] + [ir.Constant(ir.IntType(32), v) for v in (0, 3, 1)])
            return context.get_dummy_value()

        return types.none(array, index), codegen

else:  # pragma: no cover - numba is in the dev/bench/fast extras

    def prefetch(array, index):
        """Nothing to do where nothing is compiled."""


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


@jit(nrt=False)
def row_less(offsets, positions, i, j):
    """Whether row i's positions come before row j's as tuples do (a prefix first)."""
    a, a_end, b, b_end = offsets[i], offsets[i + 1], offsets[j], offsets[j + 1]
    while a < a_end and b < b_end:
        if positions[a] != positions[b]:
            return positions[a] < positions[b]
        a += 1
        b += 1
    return a == a_end and b < b_end


@jit
def shared_pairs(offsets, positions, slots, i, j):
    """How many leading (position, slot) pairs rows i and j have in common."""
    a, b, n = offsets[i], offsets[j], min(offsets[i + 1] - offsets[i], offsets[j + 1] - offsets[j])
    k = 0
    while k < n and positions[a + k] == positions[b + k] and slots[a + k] == slots[b + k]:
        k += 1
    return k


@jit
def pairs_less(offsets, positions, slots, i, j):
    """Whether row i's (position, slot) pairs come before row j's as tuples do (a prefix first)."""
    k = shared_pairs(offsets, positions, slots, i, j)
    a, b = offsets[i] + k, offsets[j] + k
    if a == offsets[i + 1] or b == offsets[j + 1]:
        return a == offsets[i + 1] and b < offsets[j + 1]
    if positions[a] != positions[b]:
        return positions[a] < positions[b]
    return slots[a] < slots[b]


@jit
def output_less(offsets, positions, i, j):
    """Whether row i comes before row j in output order: by last position, then as position tuples."""
    a, b = positions[offsets[i + 1] - 1], positions[offsets[j + 1] - 1]
    if a != b:
        return a < b
    return row_less(offsets, positions, i, j)


@jit
def row_order(offsets, positions, slots, output):
    """The row numbers in order (a stable bottom-up merge sort): ``output``, output order (by last
    position, then as position tuples: ``output_less``), else by (position, slot) pairs (``pairs_less``)."""
    n = len(offsets) - 1
    order = np.arange(n)
    spare = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):  # stable: a tie takes the left run's row
                later = False
                if j < hi and i < mid:
                    if output:
                        later = output_less(offsets, positions, order[j], order[i])
                    else:
                        later = pairs_less(offsets, positions, slots, order[j], order[i])
                if j == hi or (i < mid and not later):
                    spare[k] = order[i]
                    i += 1
                else:
                    spare[k] = order[j]
                    j += 1
        order, spare = spare, order
        width *= 2
    return order


_entries: dict = {}  # (kernel, signature of the arguments) -> machine code


def entry(kernel, args: tuple):
    """``kernel``'s machine code for the types of ``args``, to be called without numba's dispatch, which
    types every argument on every call (~30 arrays for ``advance``: 5-15 µs, more than a one-event step).
    Only for a caller whose argument types never change (each array's dtype, dimensions and layout, each
    tuple's shape); without numba, the function itself. Found once per signature (``signature``):
    numba's typing of the ~50 arrays of ``advance`` and ``enumerate_roots`` cost ~0.8 ms per run."""
    if not COMPILED:
        return kernel
    key = (kernel, signature(args))
    code = _entries.get(key)
    if code is None:
        code = _entries[key] = kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))
    return code


def signature(value):
    """All numba's type of ``value`` depends on (an array's dtype, dimensions, layout, whether writeable
    and aligned; a tuple's class and items; a scalar's class, and whether an int fits int64), cheaper to
    find than that type."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        return value.dtype, value.ndim, flags.c_contiguous, flags.f_contiguous, flags.writeable, flags.aligned
    if isinstance(value, tuple):
        return (type(value),) + tuple(signature(item) for item in value)
    if type(value) is int:
        return int, -(1 << 63) <= value < (1 << 63)
    return type(value)
