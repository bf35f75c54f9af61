"""How far the reference evaluator (brute force, the oracle) scales: time per query as the stream grows.

Each time is the best of three runs, shown as a ratio to the smallest size measured in the same run. It tells
engine authors how long a differential test stream may be; speed is not the reference's goal.

    python bench/reference.py            # sizes 100 .. 1600
    python bench/reference.py --quick    # sizes 50 .. 200
"""

from __future__ import annotations

import argparse
import time

from tqdm import tqdm

import cepkit
from streams import uniform_stream

QUERIES = {
    "seq+negation": "SEQ(A a, B b, !C c, D d) WITHIN 10",
    "and+negation": "AND(A a, B b, !C c) WITHIN 5",
    "kleene rising": "SEQ(A a, B+ b, C c) WHERE prev(b.v) < b.v WITHIN 8",
    "nested kleene": "(A a ; (B b FILTER b.v > a.v)+ ; C c) WITHIN 8",
    "stnm sets": "PATTERN SEQ({A a, B+ b}, {C c}) WHERE a.id = b.id and b.id = c.id WITHIN 8",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    args = parser.parse_args()
    sizes = [50, 100, 200] if args.quick else [100, 200, 400, 800, 1600]
    rows = []
    with tqdm(total=len(sizes) * len(QUERIES), desc="reference") as bar:
        for name, query in QUERIES.items():
            strategy = "STNM" if name.startswith("stnm") else None
            cepkit.match(
                query, uniform_stream(20, ids=5), engine="reference", strategy=strategy
            )  # warm up: parse, imports
            base = None
            for n in sizes:
                stream = uniform_stream(n, ids=5)
                seconds = float("inf")
                for _ in range(3):  # best of three: a garbage collection or a busy neighbour is not the evaluator
                    start = time.perf_counter()
                    found = cepkit.match(query, stream, engine="reference", strategy=strategy)
                    seconds = min(seconds, time.perf_counter() - start)
                base = base or seconds
                rows.append((name, n, seconds, seconds / base, len(found)))
                bar.update()
    print(f"\n{'query':<15} {'events':>7} {'seconds':>9} {'x smallest':>11} {'matches':>8}")
    for name, n, seconds, ratio, count in rows:
        print(f"{name:<15} {n:>7} {seconds:>9.3f} {ratio:>11.1f} {count:>8}")


if __name__ == "__main__":
    main()
