"""The pure-Python twin of a numba kernel: the same script run compiled and with NUMBA_DISABLE_JIT=1."""

import json
import os
import subprocess
import sys

SCRIPT = """
import json, sys
import numpy as np
import pandas as pd
import cepkit
rng = np.random.default_rng(5)
events = [{"type": str(t), "ts": int(i // 2), "v": int(v), "id": int(k)}
          for i, (t, v, k) in enumerate(zip(rng.choice(list("ABCD"), 300), rng.integers(0, 6, 300),
                                            rng.integers(0, 3, 300)))]
batch = int(sys.argv[5])


def found(q):
    if not batch:
        return cepkit.match(q, events, engine=sys.argv[2])
    matcher = cepkit.Matcher(q, engine=sys.argv[2])
    got = [m for i in range(0, len(events), batch) for m in matcher.extend(pd.DataFrame(events[i : i + batch]))]
    return got + matcher.close()


results = [[[m.positions, sorted(m.bindings.items()), m.emitted_at] for m in found(q)] for q in json.loads(sys.argv[1])]
kernel = __import__(sys.argv[3], fromlist=["_"])
print(json.dumps({"compiled": hasattr(getattr(kernel, sys.argv[4]), "py_func"), "results": results}))
"""


def assert_twins_agree(engine: str, module: str, kernel: str, queries: list, batch: int = 0) -> None:
    """``cepkit.match`` of each query (on a seeded 300-event stream; ``batch`` > 0: a ``Matcher`` extended
    by micro-batches of that many events, then closed) gives the same matches, bindings and emission
    positions with ``module.kernel`` compiled and run as Python, and every query matches."""

    def run(env_extra: dict) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, json.dumps(queries), engine, module, kernel, str(batch)],
            env={**os.environ, **env_extra},
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        return json.loads(done.stdout)

    compiled, python = run({}), run({"NUMBA_DISABLE_JIT": "1"})
    assert not python["compiled"]
    assert python["results"] == compiled["results"]
    assert all(python["results"])
