"""Every engine's end-to-end rate on the user's path (issue 11: "measure and say in bench/README.md what each
engine's end-to-end rate is"): ``cepkit.match(query, frame, engine=e).positions()`` timed from a pandas
DataFrame (CPU seconds of this process), for each engine that takes the query, with the ratio to the
fastest engine of the same query in the same run (the machine is shared: read the ratios), warm (a first
call, untimed, pays parsing and compiling). The positions are checked equal across engines.

    python bench/engines.py [--events 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import cepkit  # noqa: E402
from cepkit.runtime.registry import engines_supporting, query_requirements  # noqa: E402
from end_to_end import frame_of  # noqa: E402
from streams import best_of  # noqa: E402

QUERIES = [
    "A a ; B b ; C c WITHIN 10 s",
    "SEQ(A a, !C c, B b) WITHIN 10 s",
    "A a ; B b ; C c WITHIN 10 s PARTITION BY id",
    "A+ a ; B b WITHIN 5 s",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    frame = frame_of(args.events)
    frame["id"] = frame["v"] % 5
    print(
        f"{args.events} events (types A-D uniform, one per second), best of {args.repeat} in CPU seconds, "
        f"load {open('/proc/loadavg').read().split()[0]}"
    )
    print(f"{'query':44} {'engine':10} {'matches':>8} {'seconds':>8} {'events/s':>10} {'µs/match':>9} {'x fastest':>9}")
    for text in QUERIES:
        required = query_requirements(cepkit.parse(text), {})
        rows, expected = [], None
        for engine in engines_supporting(required):

            def call(name=engine.name):
                return cepkit.match(text, frame, engine=name).positions()

            call()  # untimed: parsing, compiling and numba's first call are paid once per session
            seconds, found = best_of(args.repeat, call, clock=time.process_time)
            if expected is None:
                expected = found
            assert found == expected, f"{engine.name} disagrees on {text}"
            rows.append((engine.name, len(found), seconds))
        fastest = min(s for _, _, s in rows)
        for name, matches, seconds in sorted(rows, key=lambda r: r[2]):
            per_match = f"{seconds / matches * 1e6:9.3g}" if matches else f"{'-':>9}"
            print(
                f"{text:44} {name:10} {matches:8d} {seconds:8.3f} {args.events / seconds:10.3g} {per_match} "
                f"{seconds / fastest:9.1f}"
            )


if __name__ == "__main__":
    main()
