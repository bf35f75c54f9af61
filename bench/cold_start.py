"""Cold start: a newcomer's first minutes, each step in a fresh interpreter, on a clean cache (a new
``NUMBA_CACHE_DIR`` and a new ``HOME``, so ``~/.cache/cepkit`` too: every kernel compiled, the grammar
tables built) and on the caches ``cepkit warmup`` filled (what ``scripts/setup.sh`` leaves):

- ``import cepkit``;
- the first ``cepkit.match(...).positions()`` on the flights year (``flight_events()``, 690k events) for
  each engine that runs the query below, and ``engine="auto"``; a second call for reference;
- the first ``Workbench(events)`` and its first ``run()`` on the same year and query;
- ``cepkit demo --no-spark`` (``make demo`` without Spark, whose start is Spark's): the time to its first
  output, its "match locally" step (the summary's wall seconds) and the whole run;
- ``cepkit warmup`` itself.

Wall and CPU seconds of the step (the machine is shared: CPU is the steadier figure; the flights year's
load is not counted in the first call), how many functions numba compiled during it, and for the clean
cache and after warmup the functions whose compilation took longest (top-level compilations, CPU seconds, callees
included). Ratios: CPU over the same run's first automaton call after warmup.

    python bench/cold_start.py              # ~3 min of CPU; --engines automaton,stack; --repeat 2; --no-demo
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

QUERY = (
    "PATTERN SEQ(ADVERSE_WEATHER w, DELAYED_DEPARTURE d) WHERE d.dep_delay >= 60 WITHIN 3 hours "
    "PARTITION BY origin"
)  # every engine runs it; "auto" picks the automaton
ENGINES = "auto,automaton,stack,ses,rcep,nested,ecube"

PRELUDE = """
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import cepkit
t1, c1 = time.perf_counter(), time.process_time()
compiled, open_, top = [], [], {}
try:
    from numba.core import event

    class Count(event.Listener):
        def on_start(self, e):
            open_.append(time.process_time())

        def on_end(self, e):
            took = time.process_time() - open_.pop()
            compiled.append(1)
            if not open_:  # a top-level compilation: its callees' are in it
                f = e.data["dispatcher"].py_func
                name = f.__module__.replace("cepkit.", "") + "." + f.__qualname__
                top[name] = top.get(name, 0.0) + took

    event.register("numba:compile", Count())
except ImportError:
    pass
from cepkit.datasets import FLIGHTS_HIERARCHY, flight_events
events = flight_events()
query, engine = sys.argv[1], sys.argv[2]
out = {"import": [t1 - t0, c1 - c0]}


def timed(step, run):
    del compiled[:]
    top.clear()
    t, c = time.perf_counter(), time.process_time()
    result = run()
    out[step] = [time.perf_counter() - t, time.process_time() - c]
    out[step + " compiled"] = len(compiled)
    out[step + " top"] = sorted(top.items(), key=lambda kv: -kv[1])[:6]
    return result
"""

MATCH = """
options = {} if engine == "auto" else {"engine": engine}
first = timed("first", lambda: cepkit.match(query, events, hierarchy=FLIGHTS_HIERARCHY, **options))
first.positions()
timed("second", lambda: cepkit.match(query, events, hierarchy=FLIGHTS_HIERARCHY, **options).positions())
out["engine"], out["matches"] = first.engine, len(first)
print(json.dumps(out))
"""

WORKBENCH = """
from cepkit.widgets import Workbench
wb = timed("build", lambda: Workbench(events, query=query, hierarchy=FLIGHTS_HIERARCHY))
run = timed("first", wb.run)
timed("second", wb.run)
out["engine"], out["matches"] = run.engine, len(run.matches)
print(json.dumps(out))
"""


def environment(cache: str, home: str) -> dict:
    return {**os.environ, "NUMBA_CACHE_DIR": cache, "HOME": home, "XDG_CACHE_HOME": os.path.join(home, ".cache")}


def child(code: str, env: dict, engine: str = "auto") -> dict:
    done = subprocess.run([sys.executable, "-c", code, QUERY, engine], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def command(args: list, env: dict, cwd: str) -> dict:
    """``args`` run with its output read as it comes: seconds to its first byte, wall and CPU of the whole
    run, and its standard output."""
    cpu, start = children_cpu(), time.perf_counter()
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    first = proc.stdout.read(1)
    first_at = time.perf_counter() - start
    rest = proc.stdout.read()
    if proc.wait():
        raise SystemExit((first + rest).decode(errors="replace"))
    return {
        "first output": first_at,
        "whole": [time.perf_counter() - start, children_cpu() - cpu],
        "stdout": (first + rest).decode(errors="replace"),
    }


def demo(env: dict) -> dict:
    with tempfile.TemporaryDirectory() as work:
        done = command([sys.executable, "-m", "cepkit", "demo", "--no-spark", "--output", "out"], env, work)
    found = re.search(r"match locally\s+([\d,]+)\s+([\d,]+)\s+(\w+)\s+([\d.]+)", done["stdout"])
    done["match"] = float(found.group(4)) if found else float("nan")
    done["engine"] = found.group(3) if found else "?"
    return done


def warm(env: dict) -> list:
    done = command([sys.executable, "-m", "cepkit", "warmup", "--quiet"], env, os.getcwd())
    return done["whole"]


def measure(args) -> dict:
    """Each step a fresh process on clean caches of its own, then each on the caches one ``cepkit warmup``
    filled."""
    steps = [
        (engine, lambda env, engine=engine: child(PRELUDE + MATCH, env, engine)) for engine in args.engines.split(",")
    ]
    steps.append(("workbench", lambda env: child(PRELUDE + WORKBENCH, env)))
    if args.demo:
        steps.append(("demo", demo))
    found: dict = {}
    for name, step in steps:
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as home:
            found[("clean", name)] = step(environment(cache, home))
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as home:
        env = environment(cache, home)
        found["warmup"] = warm(env)
        for name, step in steps:
            found[("warm", name)] = step(env)
    return found


def best(runs: list, *keys):
    """The smallest [wall, CPU] of ``runs`` at ``keys`` (each figure its own best)."""
    values = []
    for run in runs:
        value = run
        for key in keys:
            value = value[key]
        values.append(value)
    if isinstance(values[0], list):
        return [min(v[0] for v in values), min(v[1] for v in values)]
    return min(values)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--engines", default=ENGINES)
    parser.add_argument("--no-demo", dest="demo", action="store_false", help="skip cepkit demo --no-spark")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    passes = [measure(args) for _ in range(args.repeat)]
    engines = args.engines.split(",")
    base_engine = "automaton" if "automaton" in engines else engines[0]
    base = best(passes, ("warm", base_engine), "first")[1]
    rows, compiled = [], []
    for state, label in (("clean", "clean cache"), ("warm", "after warmup")):
        rows.append((f"import cepkit, {label}", best(passes, (state, base_engine), "import"), None))
    for engine in engines + ["workbench"]:
        run = passes[0][("clean", engine)]
        name = f"{engine} ({run['engine']})" if engine in ("auto", "workbench") else engine
        name += f", {run['matches']:,} matches"
        if engine == "workbench":
            rows.append(("Workbench(events): clean cache", best(passes, ("clean", engine), "build"), None))
        for state, label in (("clean", "clean cache"), ("warm", "after warmup")):
            step = best(passes, (state, engine), "first")
            rows.append((f"{name}: first, {label}", step, passes[0][(state, engine)]["first compiled"]))
        rows.append((f"{name}: second call", best(passes, ("warm", engine), "second"), None))
        compiled.append((f"{name}, clean cache", run["first"][1], run["first top"]))
        after = passes[0][("warm", engine)]
        compiled.append((f"{name}, after warmup", after["first"][1], after["first top"]))
    if args.demo:
        for state, label in (("clean", "clean cache"), ("warm", "after warmup")):
            runs = [p[(state, "demo")] for p in passes]
            engine = runs[0]["engine"]
            rows.append((f"demo --no-spark: first output, {label}", [min(r["first output"] for r in runs), None], None))
            rows.append((f"demo ({engine}): 'match locally', {label}", [min(r["match"] for r in runs), None], None))
            rows.append((f"demo --no-spark: whole run, {label}", best(runs, "whole"), None))
    rows.append(("cepkit warmup (whole run)", best(passes, "warmup"), None))
    print(
        f"{QUERY!r} on the flights year, best of {args.repeat} fresh processes, load {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end; x: CPU over {base_engine}'s first call after warmup"
    )
    print(f"| {'step':56} | {'wall s':>7} | {'CPU s':>6} | {'x':>6} | {'compiled':>8} |")
    print(f"|{'-' * 58}|{'-' * 9}|{'-' * 8}|{'-' * 8}|{'-' * 10}|")
    for name, (wall, cpu), count in rows:
        cpu_text, ratio = ("", "") if cpu is None else (f"{cpu:6.2f}", f"{cpu / base:6.1f}")
        print(f"| {name:56} | {wall:7.2f} | {cpu_text:>6} | {ratio:>6} | {'' if count is None else count:>8} |")
    print("\nLongest compilations of each first call (CPU s, callees included):")
    for name, cpu, top in compiled:
        if top:
            print(f"- {name} ({cpu:.1f} s): " + ", ".join(f"{f} {s:.1f}" for f, s in top))


if __name__ == "__main__":
    main()
