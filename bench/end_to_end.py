"""The user's path against the kernel and a brute-force loop (issue 11, "Targets").

For each query, engine and stream size it times, from a pandas DataFrame of (type, ts, v) (types A-D
uniform, one event per second, v uniform in 0..99):

- **e2e positions**: ``cepkit.match(query, frame, engine=...)`` then ``.positions()``;
- **e2e arrays**: the same ``cepkit.match`` then ``.position_arrays()`` (the positions as numpy arrays,
  no Python tuple per match);
- **e2e pandas**: the same ``cepkit.match`` then ``.to_pandas()`` (the match call is timed once and
  counted in each);
- **kernel**: the engine's own ``plan.run`` on a stream prepared beforehand (the columns it returns,
  not ordered, no ``Matches``), and for the automaton ``plan.count`` (Algorithm 1 without enumeration);
- **brute**: a pure-Python loop written for that one query, building the same position tuples from the
  frame's columns as lists (its count is checked against ``len(positions())``).

It prints events/s and the ratios measured in the same run: **e2e/kernel** (time; the issue's target is
within 3x when matches < events), **x brute** (e2e positions over brute time: at least 3x), **x OpenCEP**
(end-to-end events/s over the ~8,000 events/s the issue measured for OpenCEP: at least 100x); for the
output-bound Kleene queries **µs/match** for e2e, arrays and brute and the ratios brute/e2e and
brute/arrays (the target: 3x). ``cepkit.match`` keeps compiled plans (its plan cache), so its repeated
calls (best of several) are warm; **arrays cold** times the same calls with the cache emptied before
each (parse, compile and determinization included). ``--memory ROWS`` then measures peak memory over a
ROWS-row frame (A;B;C W=10 s, with the 10 % filter and without, automaton and stack), one fresh process per
measurement: ``cepkit.match`` alone (what issue 11's target, peak under 3x the frame, names) and followed by
each of ``position_arrays()``, ``to_arrow()``, ``positions()`` and ``to_pandas()``; ``--memory-probe ROWS
[--filtered] [--engine E] [--then CALL | --stages]`` is one such measurement (``--stages``: each stage of
``cepkit.match`` and each call after it, with its tracemalloc peak).
``--profile`` prints cProfile's top functions of one e2e call.

    python bench/end_to_end.py --quick            # 200k events, W=10 s, a few queries (about a minute)
    python bench/end_to_end.py                    # 200k and 1M events, W=10 s and 100 s, Kleene, memory
    python bench/end_to_end.py --profile          # where the e2e time goes on A;B;C, W=10 s, 200k
    python bench/end_to_end.py --filtered-rows --memory 0   # Q1, Q2 with the 10 % filter, 200k and 1M
"""

from __future__ import annotations

import argparse
import bisect
import cProfile
import itertools
import json
import pstats
import subprocess
import sys
import time

import numpy as np
import pandas as pd

import cepkit
from cepkit.runtime.api import clear_plan_cache
from cepkit.runtime.stream import Stream
from cepkit.runtime.selection import select_engine
from streams import best_of

OPENCEP_EVENTS_PER_S = 8_000
SEQUENCES = {"Q1": "ABC", "Q2": "ABCD"}  # CEL paper Table 1: A;B;C and A;B;C;D
FILTER = 10  # x.v < 10 on every atom: 10 % of the events


def frame_of(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "type": rng.choice(np.array(list("ABCD"), dtype=object), n),
            "ts": np.arange(n, dtype=float),
            "v": rng.integers(0, 100, n),
        }
    )


def atom(t: str, var: str, filtered: bool) -> str:
    return f"({t} AS {var} FILTER {var}.v < {FILTER})" if filtered else f"{t} AS {var}"


def query_text(name: str, window: int, filtered: bool) -> str:
    if name in SEQUENCES:
        body = " ; ".join(atom(t, t.lower(), filtered) for t in SEQUENCES[name])
    elif name == "Q3":
        body = (
            f"({atom('A', 'a', filtered)} OR {atom('B', 'b', filtered)} OR {atom('C', 'c', filtered)}) ; "
            f"{atom('D', 'd', filtered)}"
        )
    elif name == "Q4":
        body = f"({atom('A', 'a', filtered)})+ ; {atom('B', 'b', filtered)}"
    else:  # Q5
        body = f"({atom('A', 'a', filtered)})+ ; ({atom('B', 'b', filtered)})+ ; {atom('C', 'c', filtered)}"
    return f"{body} WITHIN {window} s"


# ----------------------------------------------------------------------------- brute-force enumerators
def _relevant(types: list, values: list, filtered: bool) -> dict:
    """type -> its positions (passing the filter)."""
    out: dict = {}
    for i, (t, v) in enumerate(zip(types, values)):
        if not filtered or v < FILTER:
            out.setdefault(t, []).append(i)
    return out


def brute_sequence(types, ts, values, order: str, window: float, filtered: bool) -> list:
    """A;B;C... : for each event of the last type, every earlier chain inside the window."""
    by_type = _relevant(types, values, filtered)
    lists = [by_type.get(t, []) for t in order]
    out = []

    def extend(level: int, before: int, start: int, suffix: tuple):
        candidates = lists[level]
        lo = bisect.bisect_left(candidates, start)
        for i in candidates[lo : bisect.bisect_left(candidates, before)]:
            if level == 0:
                out.append((i,) + suffix)
            else:
                extend(level - 1, i, start, (i,) + suffix)

    for k in lists[-1]:
        start = bisect.bisect_left(ts, ts[k] - window)
        extend(len(order) - 2, k, start, (k,))
    return out


def brute_or(types, ts, values, window: float, filtered: bool) -> list:
    """(A OR B OR C) ; D."""
    by_type = _relevant(types, values, filtered)
    firsts = sorted(by_type.get("A", []) + by_type.get("B", []) + by_type.get("C", []))
    out = []
    for k in by_type.get("D", []):
        start = bisect.bisect_left(ts, ts[k] - window)
        out += [(i, k) for i in firsts[bisect.bisect_left(firsts, start) : bisect.bisect_left(firsts, k)]]
    return out


def _subsets(items: list):
    for size in range(1, len(items) + 1):
        yield from itertools.combinations(items, size)


def brute_kleene(types, ts, values, window: float, filtered: bool, two: bool) -> list:
    """A+ ; B (``two``: A+ ; B+ ; C): every non-empty subset of the window's As (then Bs) before the last."""
    by_type = _relevant(types, values, filtered)
    a_list, b_list = by_type.get("A", []), by_type.get("B", [])
    out = []
    for k in by_type.get("C" if two else "B", []):
        start = bisect.bisect_left(ts, ts[k] - window)
        a_in = a_list[bisect.bisect_left(a_list, start) : bisect.bisect_left(a_list, k)]
        if not two:
            out += [s + (k,) for s in _subsets(a_in)]
            continue
        b_in = b_list[bisect.bisect_left(b_list, start) : bisect.bisect_left(b_list, k)]
        for bs in _subsets(b_in):
            before = a_in[: bisect.bisect_left(a_in, bs[0])]
            out += [s + bs + (k,) for s in _subsets(before)]
    return out


def brute(name: str, frame_lists: tuple, window: float, filtered: bool) -> list:
    types, ts, values = frame_lists
    if name in SEQUENCES:
        return brute_sequence(types, ts, values, SEQUENCES[name], window, filtered)
    if name == "Q3":
        return brute_or(types, ts, values, window, filtered)
    return brute_kleene(types, ts, values, window, filtered, two=name == "Q5")


# ----------------------------------------------------------------------------- measuring
def measure(name: str, engine: str, frame: pd.DataFrame, window: int, filtered: bool, repeat: int) -> dict:
    text = query_text(name, window, filtered)
    n = len(frame)
    # cold: each call parses and compiles again (the plan cache emptied first); the repeated calls after
    # the first find their plan in cepkit.match's cache (warm), as a notebook re-running a cell does
    cold_s, _ = best_of(repeat, lambda: (clear_plan_cache(), cepkit.match(text, frame, engine=engine)))
    match_s, found = best_of(repeat, lambda: cepkit.match(text, frame, engine=engine))
    positions_s, positions = best_of(repeat, found.positions)
    arrays_s, _ = best_of(repeat, found.position_arrays)
    pandas_s, _ = best_of(1, found.to_pandas)
    stream = Stream.from_any(frame)
    _, plan = select_engine(cepkit.parse(text), engine, {})
    kernel_s, _ = best_of(repeat, lambda: plan.run(stream))
    count_s = best_of(repeat, lambda: plan.count(stream))[0] if hasattr(plan, "count") else None
    lists = (frame["type"].tolist(), frame["ts"].tolist(), frame["v"].tolist())
    brute_s, brute_found = best_of(1, lambda: brute(name, lists, window, filtered))
    assert len(brute_found) == len(positions), (name, engine, window, filtered, len(brute_found), len(positions))
    e2e = match_s + positions_s
    return {
        "query": name + (" 10%" if filtered else ""),
        "W": window,
        "events": n,
        "engine": engine,
        "matches": len(found),
        "e2e pos ev/s": n / e2e,
        "e2e arrays ev/s": n / (match_s + arrays_s),
        "e2e pandas ev/s": n / (match_s + pandas_s),
        "kernel ev/s": n / kernel_s,
        "update ev/s": n / count_s if count_s else None,
        "e2e/kernel": e2e / kernel_s,
        "x brute": brute_s / e2e,
        "x OpenCEP": n / e2e / OPENCEP_EVENTS_PER_S,
        "µs/match e2e": 1e6 * e2e / max(len(found), 1),
        "µs/match arrays": 1e6 * (match_s + arrays_s) / max(len(found), 1),
        "µs/match arrays cold": 1e6 * (cold_s + arrays_s) / max(len(found), 1),
        "µs/match brute": 1e6 * brute_s / max(len(found), 1),
    }


AFTER_MATCH = ("position_arrays", "to_arrow", "positions", "to_pandas")  # what a user calls next


class PeakRSS:
    """Peak resident memory of this process since ``reset`` (Linux: VmHWM, reset through
    /proc/self/clear_refs; elsewhere ``ru_maxrss``, which cannot be reset: ``resettable`` is then False and
    a peak may be an earlier one, such as building the frame)."""

    def __init__(self):
        self.resettable = True
        try:
            self.reset()
            self.resettable = "VmHWM" in open("/proc/self/status").read()
        except OSError:
            self.resettable = False

    @staticmethod
    def _status(field: str) -> int:
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise KeyError(field)

    def reset(self) -> None:
        if self.resettable:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")

    def now(self) -> int:
        return self._status("VmRSS") if self.resettable else self.peak()

    def peak(self) -> int:
        if self.resettable:
            return self._status("VmHWM")
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _settle() -> None:
    """Free what can be freed and give the C heap's free pages back, so that RSS counts live memory."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def memory_probe(rows: int, filtered: bool, engine: str, then: str, stages: bool) -> None:
    """Run in a subprocess: the peak RSS growth of ``cepkit.match`` (A;B;C, W=10 s) over a ``rows``-row
    frame, then of ``then`` (one of ``AFTER_MATCH``) on its result, with both held, as a user's line
    ``cepkit.match(...).then()`` does. Growth is over the RSS after the frame is built and a small
    warm-up call has compiled the kernels and imported what ``then`` needs, the peak reset there.

    ``stages``: instead, the stages of ``cepkit.match`` one by one (``Stream.from_any``, the engine's
    ``plan.run``, ``Matches``), each result held, then every ``AFTER_MATCH`` in turn (their results
    dropped), with each stage's peak over the same base and what stays held after it, and the tracemalloc
    peak of each stage (numpy's arrays and Python's objects, not numba's or Arrow's buffers).

    The frame's size is given as its arrays (``memory_usage()``: what it holds; the target is judged
    against it) and deep (each row's type string counted as if it had its own object, as pandas counts it)."""
    frame = frame_of(rows)
    text = query_text("Q1", 10, filtered)
    warm = cepkit.match(text, frame.head(20_000), engine=engine)
    for name in AFTER_MATCH:
        getattr(warm, name)()
    del warm
    frame_bytes = int(frame.memory_usage().sum())
    out = {
        "rows": rows,
        "query": text,
        "engine": engine,
        "then": then,
        "frame MB": frame_bytes / 1e6,
        "frame deep MB": int(frame.memory_usage(deep=True).sum()) / 1e6,
    }
    _settle()
    rss = PeakRSS()
    base = rss.now()
    rss.reset()
    if stages:
        return _memory_stages(frame, text, engine, rss, base, out)
    start = time.perf_counter()
    found = cepkit.match(text, frame, engine=engine)
    out.update(
        {
            "matches": len(found),
            "match peak MB": (rss.peak() - base) / 1e6,
            "match held MB": (rss.now() - base) / 1e6,
            "match seconds": time.perf_counter() - start,
        }
    )
    if then:
        start = time.perf_counter()
        result = getattr(found, then)()
        out["then seconds"] = time.perf_counter() - start
        del result
    peak = rss.peak() - base
    out.update(
        {
            "peak growth MB": peak / 1e6,
            "x frame": peak / frame_bytes,
            "x frame deep": peak / (out["frame deep MB"] * 1e6),
            "peak reset": rss.resettable,
        }
    )
    print(json.dumps(out))


def _memory_stages(frame, text, engine, rss, base, out) -> None:
    import tracemalloc
    from cepkit.runtime.matches import Matches

    frame_bytes = out["frame MB"] * 1e6
    tracemalloc.start()
    held = {}

    def stage(name, fn):
        if name in ("positions", "to_pandas"):  # millions of Python objects: tracing them would cost GBs
            tracemalloc.stop()
        traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else None
        tracemalloc.reset_peak()
        rss.reset()
        start = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - start
        peak = rss.peak() - base
        print(
            json.dumps(
                {
                    **out,
                    "stage": name,
                    "peak MB": peak / 1e6,
                    "x frame": peak / frame_bytes,
                    "held after MB": (rss.now() - base) / 1e6,
                    "traced peak MB": None if traced is None else (tracemalloc.get_traced_memory()[1] - traced) / 1e6,
                    "seconds": seconds,
                }
            ),
            flush=True,
        )
        return result

    q = cepkit.parse(text)
    held["stream"] = stage("Stream.from_any", lambda: Stream.from_any(frame))
    chosen, plan = select_engine(q, engine, {})
    held["found"] = stage("plan.run", lambda: plan.run(held["stream"]))
    held["matches"] = stage(
        "Matches", lambda: Matches(held.pop("found"), chosen.name, q, info=plan.info(), stream=held["stream"])
    )
    _settle()
    for name in AFTER_MATCH:
        stage(name, getattr(held["matches"], name))
        _settle()


def memory(rows: int, filtered: bool, engine: str = "automaton", then: str = "", stages: bool = False) -> list:
    """``memory_probe`` in a subprocess: its JSON lines, or the error."""
    done = subprocess.run(
        [sys.executable, __file__, "--memory-probe", str(rows), "--engine", engine]
        + ["--filtered"] * filtered
        + ["--then", then] * bool(then)
        + ["--stages"] * stages,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        return [
            {
                "rows": rows,
                "query": query_text("Q1", 10, filtered),
                "engine": engine,
                "then": then,
                "error": done.stderr.strip().splitlines()[-1:],
            }
        ]
    return [json.loads(line) for line in done.stdout.strip().splitlines() if line.startswith("{")]


def memory_table(rows: int, engines=("automaton", "stack")) -> pd.DataFrame:
    """Every engine, filtered and not, ``cepkit.match`` alone and followed by each of ``AFTER_MATCH``: one
    fresh process each (the target, peak under 3x the frame, is judged on ``cepkit.match``)."""
    lines = []
    for engine in engines:
        for filtered in (True, False):
            for then in ("", *AFTER_MATCH):
                found = memory(rows, filtered, engine, then)[-1]
                lines.append(found)
                print(json.dumps(found), flush=True)
    table = pd.DataFrame(lines)
    table["query"] = table["query"].map(lambda t: "A;B;C 10%" if "FILTER" in t else "A;B;C")
    table["then"] = table["then"].replace("", "(match alone)")
    return table[
        [
            c
            for c in (
                "engine",
                "query",
                "then",
                "matches",
                "match peak MB",
                "match held MB",
                "peak growth MB",
                "x frame",
                "x frame deep",
                "match seconds",
                "then seconds",
                "error",
            )
            if c in table
        ]
    ]


def profile(rows: int) -> None:
    frame = frame_of(rows)
    text = query_text("Q1", 10, False)
    cepkit.match(text, frame.head(10_000), engine="automaton").positions()  # compile the kernels
    profiler = cProfile.Profile()
    profiler.enable()
    cepkit.match(text, frame, engine="automaton").positions()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200k events, W=10 s, a few queries")
    parser.add_argument("--profile", action="store_true", help="cProfile one e2e call (A;B;C, W=10 s, 200k)")
    parser.add_argument(
        "--filtered-rows",
        action="store_true",
        help="only the 10 %% filter rows of Q1 and Q2, W=10 s, 200k and 1M events (input-bound)",
    )
    parser.add_argument("--memory", type=int, default=None, help="rows of the peak-memory run (0: none)")
    parser.add_argument(
        "--memory-probe",
        type=int,
        default=None,
        help="one memory measurement over this many rows (a fresh process: run one at a time)",
    )
    parser.add_argument("--filtered", action="store_true", help="--memory-probe: the 10 %% filter on every atom")
    parser.add_argument("--engine", default="automaton", help="--memory-probe: the engine")
    parser.add_argument(
        "--then",
        default="",
        choices=("",) + AFTER_MATCH,
        help="--memory-probe: what is called on the result of cepkit.match (held with it)",
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="--memory-probe: the stages of cepkit.match and each call after it, one by one",
    )
    args = parser.parse_args()
    if args.memory_probe:
        return memory_probe(args.memory_probe, args.filtered, args.engine, args.then, args.stages)
    if args.profile:
        return profile(200_000)
    sizes = [200_000] if args.quick else [200_000, 1_000_000]
    cases = [("Q1", 10, False), ("Q1", 10, True), ("Q2", 10, False), ("Q3", 10, False)]
    if not args.quick:
        cases += [("Q2", 10, True), ("Q3", 10, True), ("Q1", 100, True), ("Q2", 100, True), ("Q3", 100, True)]
    if args.filtered_rows:
        cases = [("Q1", 10, True), ("Q2", 10, True)]
    frames = {n: frame_of(n) for n in sizes}
    cepkit.match(query_text("Q1", 10, False), frames[sizes[0]].head(5000), engine="automaton")  # compile
    rows = []
    for n in sizes:
        for name, window, filtered in cases:
            for engine in ("automaton", "stack"):
                if engine == "stack" and name == "Q3":
                    continue  # OR: not in the stack engine's fragment
                rows.append(measure(name, engine, frames[n], window, filtered, 2 if n > 200_000 else 5))
                print(
                    pd.DataFrame(rows[-1:]).to_string(
                        index=False, header=len(rows) == 1, float_format=lambda x: f"{x:,.3g}"
                    ),
                    flush=True,
                )
    kleene = (
        [("Q4", 30, 2_000), ("Q5", 10, 2_000)]
        if args.quick
        else [("Q4", 30, 2_000), ("Q4", 10, 200_000), ("Q5", 10, 2_000), ("Q5", 10, 200_000)]
    )
    if args.filtered_rows:
        kleene = []
    for name, window, n in kleene:
        rows.append(measure(name, "automaton", frame_of(n), window, False, 5))
        print(
            pd.DataFrame(rows[-1:]).to_string(index=False, header=False, float_format=lambda x: f"{x:,.3g}"), flush=True
        )
    table = pd.DataFrame(rows)
    table["brute/e2e per match"] = table["µs/match brute"] / table["µs/match e2e"]
    table["brute/arrays per match"] = table["µs/match brute"] / table["µs/match arrays"]
    table["brute/arrays cold"] = table["µs/match brute"] / table["µs/match arrays cold"]
    print()
    print(table.to_string(index=False, float_format=lambda x: f"{x:,.3g}"))
    rows_mem = args.memory if args.memory is not None else (1_000_000 if args.quick else 10_000_000)
    if rows_mem:
        print("\npeak memory (growth over the RSS with the frame built; x frame: over the frame's arrays):")
        print(memory_table(rows_mem).to_string(index=False, float_format=lambda x: f"{x:,.3g}"))


if __name__ == "__main__":
    main()
