"""Cold start: the first ``cepkit.match`` in a fresh interpreter, on a clean numba cache (every kernel it
needs compiled) and on a cache ``cepkit warmup`` filled (what ``scripts/setup.sh`` leaves), for the
automaton, the stack and the default engine choice, with ``import cepkit``, the warm-up itself and a
second call for reference. Each run is a new process with its own ``NUMBA_CACHE_DIR``; wall and CPU
seconds (the machine is shared: CPU is the steadier figure), and how many functions numba compiled during
the first call (0 after the warm-up: everything came from the cache). Ratios are against the first call
on a warm cache, measured in the same run.

    python bench/cold_start.py             # --repeat 1; --events N for a larger first stream
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

QUERY = "A a ; B b ; C c WITHIN 10 s"  # one every engine here runs; "auto" picks the automaton

FIRST = """
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import cepkit
t1, c1 = time.perf_counter(), time.process_time()
compiled = []
try:
    from numba.core import event

    class Count(event.Listener):
        def on_start(self, e):
            compiled.append(e)

        def on_end(self, e):
            pass

    event.register("numba:compile", Count())
except ImportError:
    pass
from cepkit.warmup import events
frame = events({n})
engine = {engine!r}
options = {{}} if engine == "auto" else {{"engine": engine}}
chosen = cepkit.match({query!r}, frame, **options)
chosen.positions()
t2, c2 = time.perf_counter(), time.process_time()
cepkit.match({query!r}, frame, **options).positions()
t3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({{"import": [t1 - t0, c1 - c0], "first": [t2 - t1, c2 - c1], "second": [t3 - t2, c3 - c2],
                  "compiled": len(compiled), "engine": chosen.engine}}))
"""


def run(code: str, cache: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def warm(cache: str) -> list:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "import time, cepkit.warmup as w; w.warm_up(); print(time.process_time())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [time.perf_counter() - t0, float(done.stdout.split()[-1])]


def best(rows: list, key: str) -> list:
    return [min(r[key][0] for r in rows), min(r[key][1] for r in rows)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--events", type=int, default=64)
    parser.add_argument("--engines", default="auto,automaton,stack")
    args = parser.parse_args(argv)
    engines = args.engines.split(",")
    cold: dict = {e: [] for e in engines}
    warmed: dict = {e: [] for e in engines}
    warmups = []
    for _ in range(args.repeat):
        for engine in engines:
            code = FIRST.format(n=args.events, engine=engine, query=QUERY)
            with tempfile.TemporaryDirectory() as clean:
                cold[engine].append(run(code, clean))
        with tempfile.TemporaryDirectory() as filled:
            warmups.append(warm(filled))
            for engine in engines:
                code = FIRST.format(n=args.events, engine=engine, query=QUERY)
                warmed[engine].append(run(code, filled))
    base = best(warmed[engines[0]], "first")
    rows = [("import cepkit", best(warmed[engines[0]], "import"), None)]
    for engine in engines:
        name = f"{engine} ({warmed[engine][0]['engine']})" if engine == "auto" else engine
        rows += [
            (f"{name}: first, clean cache", best(cold[engine], "first"), cold[engine][0]["compiled"]),
            (f"{name}: first, after warmup", best(warmed[engine], "first"), warmed[engine][0]["compiled"]),
            (f"{name}: second call", best(warmed[engine], "second"), None),
        ]
    rows.append(("cepkit warmup (whole run)", [min(w[0] for w in warmups), min(w[1] for w in warmups)], None))
    print(
        f"{QUERY!r}, {args.events} events, best of {args.repeat} fresh processes; "
        f"ratio: CPU against {engines[0]}'s first call after warmup"
    )
    print(f"| {'':38} | {'wall s':>7} | {'CPU s':>6} | {'x':>6} | {'compiled':>8} |")
    print(f"|{'-' * 40}|{'-' * 9}|{'-' * 8}|{'-' * 8}|{'-' * 10}|")
    for name, (wall, cpu), compiled in rows:
        print(
            f"| {name:38} | {wall:7.2f} | {cpu:6.2f} | {cpu / base[1]:6.1f} | "
            f"{'' if compiled is None else compiled:>8} |"
        )


if __name__ == "__main__":
    main()
