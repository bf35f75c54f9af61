"""Seeded synthetic streams and the best-of-k timer shared by the benchmarks (run them from the repository: ``python bench/x.py``)."""

from __future__ import annotations

import pathlib
import random
import subprocess
import time

from cepkit.runtime import Stream


def uniform_stream(n: int, seed: int = 0, ids: int = 5, types: str = "ABCD") -> Stream:
    """One event per second, types uniformly from ``types``, ``id`` in 0..ids-1, ``v`` in 0..99."""
    rng = random.Random(seed)
    return Stream.from_any(
        [{"type": rng.choice(types), "ts": i, "id": rng.randrange(ids), "v": rng.randrange(100)} for i in range(n)]
    )


def best_of(k: int, fn, clock=time.perf_counter) -> tuple:
    """(the fastest of k runs of fn in seconds of ``clock``, its last result): the least disturbed run on a
    shared machine (``time.process_time`` counts this process's CPU only)."""
    best, out = float("inf"), None
    for _ in range(k):
        start = clock()
        out = fn()
        best = min(best, clock() - start)
    return best, out


def source_at(revision: str, path: str) -> str:
    """The text of ``path`` (from the repository's root) at git ``revision``: a baseline measured in the same run."""
    root = pathlib.Path(__file__).resolve().parent.parent
    return subprocess.run(
        ["git", "-C", str(root), "show", f"{revision}:{path}"], check=True, capture_output=True, text=True
    ).stdout
