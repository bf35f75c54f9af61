"""The pure-Python fallback (no numba, or NUMBA_DISABLE_JIT=1) runs the very same kernel functions and
gives identical matches; the compiled kernel is used when numba is installed."""

import json
import os
import subprocess
import sys

import cepkit
from cepkit.engines.automaton import kernel

QUERIES = [
    "A a ; B b ; C c WITHIN 6 s",
    "(A+ a ; B b)+ ; C c WITHIN 8 EVENTS PARTITION BY id",
    "(A a FILTER a.v < 3) ; (B b OR C c) CONSUME BY ANY",
    "SELECT STRICT * PATTERN A a ; B+ b PARTITION BY id",
    "SELECT MAX * PATTERN A+ a ; B b WITHIN 5 s",
    # NEXT, LAST and MAX run their own kernel (``strategies.select``): windows, PARTITION BY, CONSUME BY
    "SELECT NEXT * PATTERN A a ; B+ b ; C c WITHIN 8 s PARTITION BY id",
    "SELECT LAST * PATTERN (A+ a ; B b)+ ; C c WITHIN 8 EVENTS PARTITION BY id CONSUME BY PARTITION",
    "SELECT MAX * PATTERN A a ; (B b OR C c) ; D d WITHIN 6 s PARTITION BY id CONSUME BY ANY",
]

SCRIPT = """
import json, sys
import numpy as np
import cepkit
from cepkit.engines.automaton import kernel
rng = np.random.default_rng(7)
events = [{"type": str(t), "ts": int(i // 2), "v": int(v), "id": int(k)}
          for i, (t, v, k) in enumerate(zip(rng.choice(list("ABCD"), 300), rng.integers(0, 6, 300),
                                            rng.integers(0, 3, 300)))]
results = [[[m.positions, sorted(m.bindings.items())] for m in cepkit.match(q, events, engine="automaton")]
           for q in json.loads(sys.argv[1])]
print(json.dumps({"kernel": kernel.name(), "results": results}))
"""


def _run(env_extra: dict) -> dict:
    env = {**os.environ, **env_extra}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(QUERIES)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout)


def test_python_fallback_gives_identical_matches():
    compiled = _run({})
    python = _run({"NUMBA_DISABLE_JIT": "1"})
    assert python["kernel"] == "python"
    assert compiled["kernel"] == kernel.name()
    assert python["results"] == compiled["results"]
    assert all(python["results"])  # every query matched something


def test_numba_is_used_when_installed():
    assert kernel.name() == ("numba" if kernel.numba is not None else "python")
    assert cepkit.match("A a ; B b", [{"type": "A"}, {"type": "B"}], engine="automaton").info["kernel"] == kernel.name()
