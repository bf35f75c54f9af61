"""Micro-batches through the incremental path (issue 11): ``Matcher.extend(DataFrame)`` batch after batch
against ``cepkit.match`` over the whole frame and against ``push`` per event, in the same run.

The stream is ``end_to_end.frame_of`` (types A-D uniform, one event per second, v in 0..99) with a key
``id`` that changes every 10 events (``--keys`` distinct values). For each query and engine it times, from
the frame:

- **match**: ``cepkit.match(query, frame, engine=...)`` (its ``Matches`` ordered, objects lazy);
- **extend B**: a ``Matcher`` fed ``frame.iloc[a:a + B]`` batch after batch, then ``close`` (``keep=False``:
  the matches go to the caller, as a ``MatchList`` or a list; ``keep=True`` rows also keep them);
- **push**: the same Matcher fed the frame's rows as dicts (made beforehand, not timed) one ``push`` each.

Every timing is the best of ``--repeat`` runs, in CPU seconds of this process (steadier than the wall
clock on a shared machine); the match counts of every row are checked equal. Ratios: **/match** (time over
``cepkit.match``'s: the issue asks for about 1) and **push/x** (push's time over the row's).

    python bench/microbatch.py                        # 200k events, automaton and stack
    python bench/microbatch.py --events 50000 --engines automaton
    python bench/microbatch.py --profile              # cProfile of extend, 1k batches, A;B;C, automaton
    python bench/microbatch.py --profile --engines stack     # the same on the stack engine
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import cepkit
from end_to_end import frame_of
from streams import best_of

QUERIES = (
    ("A;B;C W=10 s", "A a ; B b ; C c WITHIN 10 s"),
    ("A+;B W=10 s", "A+ a ; B b WITHIN 10 s"),
    ("A;B;C W=10 s by id", "A a ; B b ; C c WITHIN 10 s PARTITION BY id"),
    ("A;!C;B W=10 s", "SEQ(A a, !C c, B b) WITHIN 10 s"),  # the stack's (auto's pick for negation)
    ("A;B;!C W=10 s", "SEQ(A a, B b, !C c) WITHIN 10 s"),
)  # matches wait across batches
BATCHES = (1_000, 10_000)


def runs(engine: str, query: str) -> bool:
    try:
        cepkit.Matcher(query, engine=engine)
        return True
    except cepkit.QueryError:  # outside the engine's fragment (the stack has no Kleene, the automaton no negation)
        return False


def stream(n: int, keys: int):
    frame = frame_of(n)
    frame["id"] = (frame.index // 10) % keys
    return frame


def extended(query: str, engine: str, frame, size: int, keep: bool) -> int:
    matcher = cepkit.Matcher(query, engine=engine, keep=keep)
    found = 0
    for at in range(0, len(frame), size):
        found += len(matcher.extend(frame.iloc[at : at + size]))
    return found + len(matcher.close())


def pushed(query: str, engine: str, rows: list) -> int:
    matcher = cepkit.Matcher(query, engine=engine, keep=False)
    found = 0
    for row in rows:
        found += len(matcher.push(row))
    return found + len(matcher.close())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--engines", nargs="+", default=["automaton", "stack"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    frame = stream(args.events, args.keys)
    rows = frame.to_dict("records")
    warm = frame.iloc[:5000]
    for engine in args.engines:  # compile the kernels (numba) outside the timings
        for _, query in QUERIES:
            if not runs(engine, query):
                continue
            cepkit.match(query, warm, engine=engine)
            extended(query, engine, warm, 1000, False)
    if args.profile:
        query = QUERIES[0][1]
        cProfile.runctx(
            "extended(query, engine, frame, 1000, False)",
            globals(),
            {"query": query, "frame": frame, "engine": args.engines[0]},
            "/tmp/microbatch.prof",
        )
        pstats.Stats("/tmp/microbatch.prof").sort_stats("tottime").print_stats(25)
        return
    print(f"{args.events:,} events, {args.keys} keys; CPU seconds, best of {args.repeat}", flush=True)
    print(
        f"{'query':<20} {'engine':<10} {'call':<16} {'seconds':>8} {'ev/s':>11} {'/match':>7} {'push/x':>7} "
        f"{'matches':>8}",
        flush=True,
    )
    for label, query in QUERIES:
        for engine in (e for e in args.engines if runs(e, query)):
            calls = [("match", lambda: len(cepkit.match(query, frame, engine=engine)), args.repeat)]
            for size in BATCHES:
                for keep in (False, True):
                    calls.append(
                        (
                            f"extend {size // 1000}k" + (" keep" if keep else ""),
                            lambda size=size, keep=keep: extended(query, engine, frame, size, keep),
                            args.repeat,
                        )
                    )
            calls.append(("push", lambda: pushed(query, engine, rows), 1))
            timed = [(name, *best_of(repeat, call, clock=time.process_time)) for name, call, repeat in calls]
            counts = {found for _, _, found in timed}
            assert len(counts) == 1, (label, engine, timed)
            match_time, push_time = timed[0][1], timed[-1][1]
            for name, seconds, found in timed:
                print(
                    f"{label:<20} {engine:<10} {name:<16} {seconds:8.3f} {args.events / seconds:11,.0f} "
                    f"{seconds / match_time:7.2f} {push_time / seconds:7.1f} {found:8,}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
