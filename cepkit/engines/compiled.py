"""numba helpers the compiled engines' kernels share (automaton, rcep, ses, and E-Cube's and MATCH_RECOGNIZE's
kernels): the decorator that compiles a function when numba is installed (the plain Python function
otherwise, as the kernels' pure-Python twins run), a comparison by operator code, array growth, a
kernel's machine code for arguments whose types never change (``entry``: no numba dispatch per call),
and the order of rows of positions (CSR offsets: output order, docs/language.md §10.2, or by (position,
slot) pairs; rcep and ses).

Cold start (docs/status.md, "Runtime"): numba caches the machine code beside the sources (``__pycache__``).
Where that is read-only (a system install) the kernels are cached in the user's cache instead
(``~/.cache/cepkit/numba``, else a private temporary directory), seeded with what the install's own
``__pycache__`` holds (``cepkit warmup`` run by whoever installed it), so a user finds those kernels
compiled. While numba compiles an engine's kernels for the first time (seconds), a note says so once
(``compile_note``)."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

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
    decorate = numba.njit(cache=True, nogil=True, inline="always" if inline else "never", **options)
    cache = kernel_cache(os.path.dirname(os.path.abspath(fn.__code__.co_filename)))
    if cache is None:
        return decorate(fn)
    saved, numba.config.CACHE_DIR = numba.config.CACHE_DIR, cache  # read as numba picks the cache's place
    try:
        return decorate(fn)
    finally:
        numba.config.CACHE_DIR = saved


def writable(directory: str) -> bool:
    """Whether numba can cache in ``directory`` (its own test: create it, then a file in it)."""
    try:
        os.makedirs(directory, exist_ok=True)
        tempfile.TemporaryFile(dir=directory).close()
    except OSError:
        return False
    return True


def _private(directory: Path) -> bool:
    """``directory`` made if missing, the user's own and writable by no one else (machine code is run
    from it: a shared temporary directory must not be another user's)."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = directory.stat()
    except OSError:
        return False
    return mode.st_uid == os.getuid() and not mode.st_mode & 0o022 and writable(str(directory))


@lru_cache(maxsize=None)
def kernel_cache(source_dir: str) -> Optional[str]:
    """The directory numba should cache the kernels of ``source_dir`` in, as ``NUMBA_CACHE_DIR``: None
    where numba's own choice serves (``NUMBA_CACHE_DIR`` set, or ``__pycache__`` beside the sources
    writable); else the user's cache (``~/.cache/cepkit/numba``), or a private temporary directory when
    there is none (numba's own fallback, ``~/.cache/numba``, fails without a writable home). The
    machine code in the read-only ``__pycache__`` is copied there first, where missing."""
    if numba.config.CACHE_DIR:
        return None
    pycache = os.path.join(source_dir, "__pycache__")
    if writable(pycache):
        return None
    from ..grammars import cache_dir

    user = cache_dir()
    root = user / "numba" if user is not None else Path(tempfile.gettempdir()) / f"cepkit-numba-{os.getuid()}"
    if not _private(root):
        return None
    from numba.core.caching import _CacheLocator  # where numba puts a source directory's cache under it

    target = root / _CacheLocator.get_suitable_cache_subpath(os.path.join(source_dir, "x.py"))
    try:
        target.mkdir(exist_ok=True)
        for name in os.listdir(pycache) if os.path.isdir(pycache) else ():
            if name.endswith((".nbi", ".nbc")) and not (target / name).exists():
                partial = target / f".{name}.{os.getpid()}"
                shutil.copyfile(os.path.join(pycache, name), partial)
                os.replace(partial, target / name)  # whole or not at all for a process starting alongside
    except OSError:
        pass  # unseeded: numba compiles what it does not find
    return str(root)


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


# ----------------------------------------------------------------------------- the compile note
# CPU seconds numba takes to compile an engine's kernels on a clean cache, by module prefix
# (bench/cold_start.py); the note is given for these, the others take a second or less
COMPILE_SECONDS = {
    "cepkit.engines.automaton.": ("the automaton's", 10),
    "cepkit.engines.ses.": ("ses's", 15),
    "cepkit.engines.rcep.": ("rcep's", 15),
    "cepkit.match_recognize.": ("MATCH_RECOGNIZE's", 5),
}
log = logging.getLogger("cepkit")
_noted: set = set()  # the engines whose compilation this process has announced
_listeners: list = []  # callables given the note instead of the log (``compile_note``)


def compile_note(module: str) -> Optional[str]:
    """The note for numba starting to compile a function of ``module`` the first time in this process for
    its engine, if that takes seconds; None otherwise (and after)."""
    for prefix, (whose, seconds) in COMPILE_SECONDS.items():
        if module.startswith(prefix) and prefix not in _noted:
            _noted.add(prefix)
            return (
                f"compiling {whose} kernels once, ~{seconds} s (numba caches them; `cepkit warmup` "
                "compiles every engine's ahead)"
            )
    return None


def say(note: str) -> None:
    """Give ``note`` to the listeners (a Workbench's status line) or else to the log, or to standard
    error where logging is not set up."""
    if _listeners:
        for listener in list(_listeners):
            listener(note)
    elif log.hasHandlers():
        log.info(note)
    else:
        print(f"cepkit: {note}", file=sys.stderr, flush=True)


def listen(listener: Callable[[str], None]) -> Callable[[], None]:
    """Give the compile notes to ``listener`` until the returned function is called."""
    _listeners.append(listener)
    return lambda: _listeners.remove(listener)


if COMPILED:
    from numba.core import event as _event

    class _CompileNote(_event.Listener):
        def on_start(self, e):
            try:
                note = compile_note(e.data["dispatcher"].py_func.__module__)
                if note is not None:
                    say(note)
            except Exception:  # pragma: no cover - a note never stops a compilation
                pass

        def on_end(self, e):
            pass

    _event.register("numba:compile", _CompileNote())
