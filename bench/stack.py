"""Stack engine against the reference evaluator on growing in-order streams (issue 5: "faster than the
reference by orders of magnitude on long streams").

Both engines run the same queries on the same random streams in this run; the table prints each one's
time and the ratio reference / stack. The reference is skipped once its previous size took more than
``--reference-budget`` seconds (it grows much faster than linearly); the stack engine goes on to the
largest size to show its throughput.

    python bench/stack.py                 # full run (a few minutes)
    python bench/stack.py --quick         # small sizes, for a smoke check
"""
from __future__ import annotations

import argparse
import time

from tqdm import tqdm

import cepkit
from streams import uniform_stream
from cepkit.runtime import Stream

QUERIES = {   # the reference enumerates candidates inside the window, so wide windows and joins separate them
    "negation w=10": "SEQ(A a, B b, !C c, D d) WITHIN 10",
    "selective w=50": "SEQ(A a, B b, !C c, D d) WHERE a.v > 95 and d.v < 5 WITHIN 50",
    "join w=100": "SEQ(A a, !C c, B b) WHERE a.id = b.id WITHIN 100",
    "trailing w=100": "SEQ(A a, B b, !C c) WHERE a.id = b.id and c.id = a.id WITHIN 100",
    "equality w=200": "SEQ(A a, B b, !C c, D d) WHERE a.id = b.id and b.id = d.id and c.id = a.id WITHIN 200",
}


def timed(query: str, stream: Stream, engine: str) -> tuple:
    start = time.perf_counter()
    found = cepkit.match(query, stream, engine=engine)
    return time.perf_counter() - start, len(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--reference-budget", type=float, default=30.0,
                        help="stop running the reference after a size that took longer (seconds)")
    args = parser.parse_args()
    sizes = [250, 500, 1000] if args.quick else [1000, 2000, 4000, 8000, 100_000]
    rows = []
    for engine in ("stack", "reference"):   # warm up: imports and compiled grammars are not what we measure
        timed(next(iter(QUERIES.values())), uniform_stream(50, ids=10), engine)
    with tqdm(total=len(sizes) * len(QUERIES), desc="stack vs reference") as bar:
        for name, query in QUERIES.items():
            reference_ok = True
            for n in sizes:
                stream = uniform_stream(n, ids=10)
                stack_s, found = timed(query, stream, "stack")
                ref_s = None
                if reference_ok:
                    ref_s, ref_found = timed(query, stream, "reference")
                    assert ref_found == found, (name, n, ref_found, found)
                    reference_ok = ref_s <= args.reference_budget
                rows.append((name, n, found, ref_s, stack_s))
                bar.update()
    print(f"\n{'query':16} {'events':>8} {'matches':>8} {'reference s':>12} {'stack s':>9} {'stack ev/s':>11} "
          f"{'ratio':>8}")
    for name, n, found, ref_s, stack_s in rows:
        ref = f"{ref_s:12.3f}" if ref_s is not None else f"{'-':>12}"
        ratio = f"{ref_s / stack_s:7.1f}x" if ref_s is not None else f"{'-':>8}"
        print(f"{name:16} {n:8d} {found:8d} {ref} {stack_s:9.3f} {n / stack_s:11.0f} {ratio}")


if __name__ == "__main__":
    main()
