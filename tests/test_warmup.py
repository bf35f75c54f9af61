"""``cepkit warmup`` (``cepkit/warmup.py``): after it, a fresh interpreter's first queries find every numba
kernel they call in the cache and compile nothing (issue 22's cold start). Both runs use numba's default
cache (``__pycache__`` beside the sources), which ``scripts/setup.sh`` fills at install: seconds here; a
clean checkout compiles once (~40 s of CPU), as its first tests would anyway."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cepkit.engines.automaton import kernel

FIRST_QUERIES = textwrap.dedent("""
    import json
    from numba.core import event
    compiled = []

    class Count(event.Listener):
        def on_start(self, e):
            compiled.append(e.data["dispatcher"].py_func.__qualname__)

        def on_end(self, e):
            pass

    event.register("numba:compile", Count())
    import cepkit
    from cepkit.warmup import events
    frame = events(200)
    engines = {}
    for query in ["A x ; B y", "A x ; B+ y ; C z WITHIN 20", "A x ; B y PARTITION BY id"]:
        engines[query] = cepkit.match(query, frame).engine
        cepkit.match(query, frame.to_dict("records")).positions()
    cepkit.match("SEQ(A x, B y) WHERE x.v < y.v", frame, engine="rcep").positions()
    print(json.dumps({"compiled": compiled, "engines": engines}))
""")


def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=900, env={**os.environ, **env}
    )


@pytest.mark.skipif(not kernel.COMPILED, reason="numba is not installed or NUMBA_DISABLE_JIT is set")
def test_after_warmup_the_first_queries_compile_nothing():
    warmed = _run("import cepkit.warmup as w; print(len(w.warm_up()))")
    assert warmed.returncode == 0, warmed.stderr
    first = _run(FIRST_QUERIES)
    assert first.returncode == 0, first.stderr
    found = json.loads(first.stdout.strip().splitlines()[-1])
    assert "automaton" in found["engines"].values()  # the default choice compiles kernels: it was warmed
    assert found["compiled"] == []


def test_the_warmup_command_runs_every_engine_with_kernels():
    """Without numba the same command only runs the queries (the pure-Python path), quickly."""
    done = subprocess.run(
        [sys.executable, "-m", "cepkit", "warmup"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
    )
    assert done.returncode == 0, done.stderr
    engines = {line.split()[0] for line in done.stdout.splitlines()}
    assert engines == {"automaton", "rcep", "ses", "recognize"}
