"""Spark Structured Streaming's per-key work without Spark (``cepkit.spark.watermark``): this checkout's
``Live.rows`` and ``advance`` against another revision's ``watermark.py`` (default: fbbeba7, before the
rows came from the match arrays), in the same run.

The baseline module is read with ``git show REV:cepkit/spark/watermark.py`` and loaded as a module of
``cepkit.spark`` (so it runs on this checkout's engines and groups: only its own code differs). One key's
events (``end_to_end.frame_of``: types A-D uniform, one event per second, v in 0..99, a key ``id``) arrive
in micro-batches of ``--batch`` events, the watermark trailing the latest ts by 2 s, then a last watermark
past everything, as ``match_stream``'s stateful processor calls ``advance``. It times, in CPU seconds of
this process, best of ``--repeat``:

- **rows**: ``Live.rows`` alone over every call's matches (recorded once from a run, each repeat on fresh
  copies, so neither side reads ``Match`` objects an earlier call made);
- **advance**: every call of ``advance`` from the first micro-batch to the last (buffer, sort, matcher,
  rows, retention: one key's whole streaming work but Spark's own).

The frames both sides return are checked equal (``pandas.testing.assert_frame_equal``, dtypes included).

    python bench/live_rows.py                         # 100k events, 1k-event batches, automaton and stack
    python bench/live_rows.py --against main --events 20000
    python bench/live_rows.py --profile               # cProfile of advance (warm), A+;B, automaton

``--spark CHECKOUT`` runs the same through Spark instead (``cepkit.spark.match_stream`` on local[2]): the
events (``--events``, a key ``id`` changing every 10 events, ``--keys`` values) written as Parquet files of
``--batch`` rows, read one file per micro-batch, the matches counted by ``foreachBatch``, until the
stream is read (``availableNow``); wall time from start to end, after a small warm-up stream. This
checkout against CHECKOUT (a worktree of the baseline: ``git worktree add --detach /tmp/base fbbeba7``),
each side in a process of its own run outside both checkouts (Spark's Python workers put the working
directory first on ``sys.path``), the sides taking turns for ``--rounds`` rounds.

    python bench/live_rows.py --spark /tmp/base --events 200000 --batch 40000 --engines automaton

``--processor CHECKOUT``: many keys, few events each per micro-batch (where pandas' fixed cost per call
dominated): ``match_stream``'s stateful processor itself (``_KeyMatcher``: rows in, the buffer read from
and written to an in-memory state as bytes, timers) driven as Spark drives it, ``--keys`` keys with
``--batch`` events each per call, this checkout against CHECKOUT's, each side in a process of its own,
CPU seconds per key and call:

    python bench/live_rows.py --processor /tmp/base --keys 200 --batch 5 --events 5000 --engines stack
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.util
import json
import os
import pathlib
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

import cepkit
import cepkit.spark.watermark as current
from cepkit.runtime.match_list import MatchList
from cepkit.runtime.match_record import Match
from cepkit.spark.groups import POS, TS, EventColumns, GroupMatcher, plan_split
from end_to_end import frame_of
from streams import source_at

QUERIES = (
    ("A;B;C W=10 s", "A a ; B b ; C c WITHIN 10 s"),
    ("A+;B W=10 s", "A+ a ; B b WITHIN 10 s"),
    ("(A|B);C W=10 s", "(A AS a OR B AS b) ; C c WITHIN 10 s"),
    ("A;B;C W=10 s by id", "A a ; B b ; C c WITHIN 10 s PARTITION BY id"),
)
COLUMNS = EventColumns(("v", "id"), "number")
DELAY_US = 2_000_000


def baseline(revision: str):
    """The revision's ``cepkit/spark/watermark.py`` as a module of this checkout's ``cepkit.spark``."""
    source = source_at(revision, "cepkit/spark/watermark.py")
    spec = importlib.util.spec_from_loader("cepkit.spark._baseline_watermark", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "cepkit.spark"
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    exec(compile(source, f"{revision}:cepkit/spark/watermark.py", "exec"), module.__dict__)
    return module


def key_frame(n: int) -> pd.DataFrame:
    frame = frame_of(n)
    frame["id"] = 7
    frame[TS] = frame["ts"]
    frame[POS] = np.arange(n, dtype=np.int64)
    frame[current.TIME] = (frame["ts"] * 1_000_000).astype("int64")
    return frame


def calls(frame: pd.DataFrame, batch: int) -> list:
    """(new rows, watermark) of each call: micro-batches, then a watermark past everything."""
    out = []
    for at in range(0, len(frame), batch):
        chunk = frame.iloc[at : at + batch]
        out.append((chunk, int(chunk[current.TIME].max()) - DELAY_US))
    return out + [(None, 2**62)]


def streamed(module, matcher: GroupMatcher, frame: pd.DataFrame, batch: int, record=None) -> list:
    """Every call's output rows; ``record`` (a list) collects each call's (matches, events) for ``rows``."""
    horizon = module.Horizon.of(matcher.split)
    buffer, live, out = module.KeyBuffer(frame.iloc[:0].copy()), None, []
    original = module.Live.rows
    if record is not None:

        def rows(self, found, events, *ids):
            record.append((self, found, events))
            return original(self, found, events, *ids)

        module.Live.rows = rows
    try:
        for new, watermark in calls(frame, batch):
            found, buffer, _, live = module.advance(buffer, new, watermark, matcher, horizon, live)
            out.append(found)
    finally:
        module.Live.rows = original
    return out


def fresh(found):
    """The same matches (a result, or a list of results) with no ``Match`` object made yet."""
    if isinstance(found, MatchList):
        return MatchList(found.arrays.copy())
    return [fresh(f) for f in found] if found and not isinstance(found[0], Match) else found


def timed(fn, repeat: int) -> float:
    """The fastest of ``repeat`` runs in CPU seconds, each from a collected heap (no collection owed to an
    earlier run; the collection itself not timed)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def measure(old, query: str, engine: str, frame: pd.DataFrame, batch: int, repeat: int) -> dict:
    q = cepkit.parse(query)
    matcher = GroupMatcher(q, engine, {}, COLUMNS, plan_split(q))
    recorded = {current: [], old: []}
    mine = streamed(current, matcher, frame, batch, recorded[current])
    theirs = streamed(old, matcher, frame, batch, recorded[old])
    for a, b in zip(mine, theirs):
        pd.testing.assert_frame_equal(a, b)
    matches = sum(len(f) for f in mine)
    kinds = {type(found).__name__ for _, found, _ in recorded[old]}

    def rows_of(module):
        copies = [[(live, fresh(found), events) for live, found, events in recorded[module]] for _ in range(repeat)]

        def run():
            for live, found, events in copies.pop():
                module.Live.rows(live, found, events)

        return run

    rows_new, rows_old = timed(rows_of(current), repeat), timed(rows_of(old), repeat)
    advance_new = timed(lambda: streamed(current, matcher, frame, batch), repeat)
    advance_old = timed(lambda: streamed(old, matcher, frame, batch), repeat)
    return {
        "matches": matches,
        "found": "/".join(sorted(kinds)),
        "rows_old": rows_old,
        "rows_new": rows_new,
        "advance_old": advance_old,
        "advance_new": advance_new,
    }


PROCESSOR_QUERY = "SEQ(A a, B b) WHERE a.v <= b.v WITHIN 10 s PARTITION BY id"
PROCESSOR_OUTPUT = ["match_id", "positions", "a", "b", "id"]
SPARK_QUERIES = (("A;B;C W=10 s by id", QUERIES[3][1]), ("A+;B W=10 s by id", "A+ a ; B b WITHIN 10 s PARTITION BY id"))
SCHEMA = "type string, ts double, v long, id long, position long"


def spark_side(args) -> None:
    """One side of ``--spark``: a JSON line per query (wall seconds, matches)."""
    import cepkit.spark

    spark = cepkit.spark.session("local[2]", **{"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    workers = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("cepkit").__file__).collect()
    assert workers == [cepkit.__file__], (workers, cepkit.__file__)  # the workers run this side's cepkit
    for name, query in [("warm-up", SPARK_QUERIES[0][1])] + list(SPARK_QUERIES):
        folder = pathlib.Path(args.data) / ("warm" if name == "warm-up" else "events")
        counts = []
        run = pathlib.Path(args.data) / f"checkpoint-{len(list(pathlib.Path(args.data).glob('checkpoint-*')))}"
        stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(folder))
        found = cepkit.spark.match_stream(query, stream, engine=args.engines[0])
        start = time.perf_counter()
        running = (
            found.writeStream.foreachBatch(lambda batch, _: counts.append(batch.count()))
            .option("checkpointLocation", str(run))
            .trigger(availableNow=True)
            .start()
        )
        running.awaitTermination()
        seconds = time.perf_counter() - start
        print("RESULT " + json.dumps({"query": name, "seconds": seconds, "matches": sum(counts)}), flush=True)
    spark.stop()


def turns(checkout: str, rounds: int):
    """(side, environment) in turns, ``rounds`` times: "this" checkout's cepkit and "base", CHECKOUT's
    (first on the workers' PYTHONPATH), the first side alternating."""
    sides = [("this", None), ("base", checkout)]
    for r in range(rounds):
        for label, path in sides if r % 2 == 0 else sides[::-1]:
            env = dict(os.environ)
            paths = [path, str(pathlib.Path(__file__).resolve().parent), env.get("PYTHONPATH")]
            env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
            yield label, env


def spark_against(args) -> None:
    """This checkout against ``args.spark`` through Spark streaming, the sides taking turns."""
    with tempfile.TemporaryDirectory() as folder:
        frame = key_frame(args.events)[["type", "ts", "v"]]
        frame["id"] = (np.arange(len(frame)) // 10) % args.keys
        frame["position"] = np.arange(len(frame), dtype=np.int64)
        for name, rows in (("events", frame), ("warm", frame.iloc[:2_000])):
            (pathlib.Path(folder) / name).mkdir()
            for at in range(0, len(rows), args.batch):
                rows.iloc[at : at + args.batch].to_parquet(pathlib.Path(folder) / name / f"{at:012d}.parquet")
        times, matches = {}, {}
        for label, env in turns(args.spark, args.rounds):
            for old in pathlib.Path(folder).glob("checkpoint-*"):
                shutil.rmtree(old)
            command = [
                sys.executable,
                os.path.abspath(__file__),
                "--side",
                "--data",
                folder,
                "--engines",
                args.engines[0],
            ]
            done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=folder)
            if done.returncode:
                raise RuntimeError(f"the {label} side failed:\n" + "\n".join(done.stderr.splitlines()[-30:]))
            for line in done.stdout.splitlines():
                if line.startswith("RESULT "):
                    row = json.loads(line[len("RESULT ") :])
                    times.setdefault((label, row["query"]), []).append(row["seconds"])
                    matches.setdefault(row["query"], set()).add(row["matches"])
            print(f"{label} done", flush=True)
    print(
        f"{args.events} events in files of {args.batch} (one per micro-batch), {args.keys} keys, "
        f"{args.engines[0]}, wall s, {args.rounds} rounds"
    )
    for name, _ in SPARK_QUERIES:
        assert len(matches[name]) == 1, matches[name]  # both sides found as many matches
        base, this = times["base", name], times["this", name]
        print(
            f"{name:22} matches {matches[name].pop():>8}  base {' '.join(f'{t:.1f}' for t in base)}  "
            f"this {' '.join(f'{t:.1f}' for t in this)}  best base/this {min(base) / min(this):.2f}  "
            f"median {statistics.median(base) / statistics.median(this):.2f}"
        )


def processor_side(args) -> None:
    """One side of ``--processor``: ``match_stream``'s stateful processor driven per key and call, as Spark
    drives it but without Spark (``key_streams.Handle``: the state in memory, the buffer's bytes written and
    read each call); a JSON line with the best CPU seconds of ``--repeat`` and the matches."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "spark"))
    from key_streams import Handle, WatermarkAt

    from cepkit.spark.streaming import _KeyMatcher
    from cepkit.spark.watermark import TIME

    keys, per_call = args.keys, args.batch
    calls_count = max(1, args.events // (keys * per_call))
    q = cepkit.parse(PROCESSOR_QUERY)
    split = plan_split(q)
    matcher = GroupMatcher(q, args.engines[0], {}, COLUMNS, split)
    columns = ["type", "v", "id", TS, POS, TIME]
    n = keys * per_call * calls_count
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "type": rng.choice(list("AB"), n),
            "ts": np.sort(rng.uniform(0, calls_count * 2, n)),
            "v": rng.integers(0, 5, n),
            "id": np.tile(np.repeat(np.arange(keys), per_call), calls_count),
        }
    )
    frame[TS], frame[POS], frame[TIME] = frame["ts"], np.arange(n), (frame["ts"] * 1e6).astype("int64")
    calls = []  # (watermark ms, [(key, its rows)]) per micro-batch, the rows as Spark hands them over
    for c in range(calls_count):
        chunk = frame.iloc[c * keys * per_call : (c + 1) * keys * per_call]
        mark = (int(chunk[TIME].max()) - DELAY_US) // 1000
        calls.append((mark, [(k, rows[columns].reset_index(drop=True)) for k, rows in chunk.groupby("id")]))

    def run() -> int:
        handles = {k: Handle() for k in range(keys)}
        processor = _KeyMatcher(matcher, current.Horizon.of(split), columns, columns, PROCESSOR_OUTPUT, {}, False)
        processor.init(Handle())
        out = 0

        def on(key):
            processor.handle, processor.state = handles[key], handles[key].getValueState("cepkit", None)

        for mark, keyed in calls:
            for key, rows in keyed:
                on(key)
                out += sum(len(f) for f in processor.handleInputRows((key,), [rows], WatermarkAt(mark)))
        for key in range(keys):  # the last timers: every key flushed
            on(key)
            out += sum(len(f) for f in processor.handleExpiredTimer((key,), WatermarkAt(2**50), None))
        return out

    matches = run()  # (compiles and warms up first)
    seconds = timed(run, args.repeat)
    print("RESULT " + json.dumps({"seconds": seconds, "matches": matches, "calls": keys * (calls_count + 1)}))


def processor_against(args) -> None:
    """This checkout's processor against ``args.processor``'s, each in a process of its own, in turns."""
    results = {}
    for label, env in turns(args.processor, args.rounds):
        command = [sys.executable, os.path.abspath(__file__), "--processor-side", *sys.argv[1:]]
        done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
        if done.returncode:
            raise RuntimeError(f"the {label} side failed:\n" + "\n".join(done.stderr.splitlines()[-30:]))
        row = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
        results.setdefault(label, []).append(row)
    assert len({row["matches"] for rows in results.values() for row in rows}) == 1, results  # same matches
    base, this = (min(row["seconds"] for row in results[side]) for side in ("base", "this"))
    calls = results["this"][0]["calls"]
    print(
        f"{args.keys} keys, {args.batch} events per key and call, {calls} calls, {args.engines[0]}, "
        f"{results['this'][0]['matches']} matches; CPU s best of {args.repeat} x {args.rounds} rounds\n"
        f"| keys | events per key and call | base ms per key and call | this ms | x |\n|---|---|---|---|---|\n"
        f"| {args.keys} | {args.batch} | {base / calls * 1e3:.2f} | {this / calls * 1e3:.2f} | {base / this:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engines", nargs="+", default=["automaton", "stack"])
    parser.add_argument("--against", default="fbbeba7", help="the baseline revision of watermark.py")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--spark", metavar="CHECKOUT", help="through Spark streaming, against CHECKOUT's cepkit")
    parser.add_argument("--keys", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--processor", metavar="CHECKOUT", help="match_stream's processor per key and call, against CHECKOUT's"
    )
    parser.add_argument("--side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--processor-side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        return spark_side(args)
    if args.processor_side:
        return processor_side(args)
    if args.processor:
        return processor_against(args)
    if args.spark:
        return spark_against(args)
    frame = key_frame(args.events)
    if args.profile:
        q = cepkit.parse(QUERIES[1][1])
        matcher = GroupMatcher(q, "automaton", {}, COLUMNS, plan_split(q))
        streamed(current, matcher, frame, args.batch)  # (compiles and warms up first)
        profile = cProfile.Profile()
        profile.runcall(streamed, current, matcher, frame, args.batch)
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        return
    old = baseline(args.against)
    print(f"{args.events} events, batches of {args.batch}, CPU s best of {args.repeat}; baseline {args.against}")
    print(
        f"{'query':22} {'engine':10} {'matches':>8} {'found':>10} {'rows old':>9} {'rows new':>9} {'x':>6} "
        f"{'adv old':>8} {'adv new':>8} {'x':>6}"
    )
    for name, query in QUERIES:
        for engine in args.engines:
            try:
                cepkit.Matcher(query, engine=engine)
            except cepkit.QueryError:
                continue
            r = measure(old, query, engine, frame, args.batch, args.repeat)
            print(
                f"{name:22} {engine:10} {r['matches']:>8} {r['found']:>10} {r['rows_old']:>9.3f} "
                f"{r['rows_new']:>9.3f} {r['rows_old'] / r['rows_new']:>6.1f} {r['advance_old']:>8.3f} "
                f"{r['advance_new']:>8.3f} {r['advance_old'] / r['advance_new']:>6.1f}",
                flush=True,
            )


if __name__ == "__main__":
    sys.exit(main())
