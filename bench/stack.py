"""Stack engine against the reference evaluator on growing in-order streams (issue 5: "faster than the
reference by orders of magnitude on long streams").

Three runs of each query on the same random stream, in this run:

- ``reference``: ``cepkit.match(..., engine="reference")``;
- ``incremental``: the stack engine's incremental matcher (``plan.matcher()``, SASE stacks event by event,
  what ``run`` did before the columnar run), and ``Matches`` over its result: the baseline;
- ``stack``: ``cepkit.match(..., engine="stack")``, the columnar run (``run s`` is the engine's own
  ``plan.run``; the rest is ``cepkit.match``'s parsing, checks and building the ``Matches``).

The stack timings are the best of ``--repeat`` runs; ratios are reference / stack and incremental / stack. The reference is skipped at a size when its
previous time, scaled linearly to that size, exceeds ``--reference-budget`` seconds (it grows at least
linearly); the stack runs go on to the largest size.

    python bench/stack.py                 # full run (about 10 minutes, most of it the reference)
    python bench/stack.py --quick         # small sizes, for a smoke check
"""

from __future__ import annotations

import argparse

from tqdm import tqdm

import cepkit
from cepkit.runtime import Stream
from cepkit.runtime.matches import Matches
from streams import best_of, uniform_stream

QUERIES = {  # the reference enumerates candidates inside the window, so wide windows and joins separate them
    "negation w=10": "SEQ(A a, B b, !C c, D d) WITHIN 10",
    "selective w=50": "SEQ(A a, B b, !C c, D d) WHERE a.v > 95 and d.v < 5 WITHIN 50",
    "join w=100": "SEQ(A a, !C c, B b) WHERE a.id = b.id WITHIN 100",
    "trailing w=100": "SEQ(A a, B b, !C c) WHERE a.id = b.id and c.id = a.id WITHIN 100",
    "equality w=200": "SEQ(A a, B b, !C c, D d) WHERE a.id = b.id and b.id = d.id and c.id = a.id WITHIN 200",
}


def incremental(query: str, stream: Stream) -> Matches:
    """The stacks event by event (the incremental matcher), as ``StackPlan.run`` did before issue 5."""
    q = cepkit.parse(query)
    matcher = cepkit.engines.stack.StackEngine().compile(q).matcher()
    for event in stream:
        matcher.push(event)
    matcher.close()
    return Matches(matcher.net(), "stack", q)


def engine_only(query: str, stream: Stream) -> list:
    return cepkit.engines.stack.StackEngine().compile(cepkit.parse(query)).run(stream)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument(
        "--reference-budget",
        type=float,
        default=120.0,
        help="skip the reference when its expected time exceeds this (seconds)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per stack timing (the best is kept)")
    args = parser.parse_args()
    sizes = [250, 1000, 4000] if args.quick else [1000, 10_000, 100_000]
    rows = []
    warm = uniform_stream(50, ids=10)  # imports and compiled grammars are not what we measure
    for engine in ("stack", "reference"):
        cepkit.match(next(iter(QUERIES.values())), warm, engine=engine)
    with tqdm(total=len(sizes) * len(QUERIES), desc="stack vs reference") as bar:
        for name, query in QUERIES.items():
            reference = None  # (size, seconds) of the last reference run
            for n in sizes:
                stream = uniform_stream(n, ids=10)
                stack_s, found = best_of(args.repeat, lambda: cepkit.match(query, stream, engine="stack"))
                run_s, _ = best_of(args.repeat, lambda: engine_only(query, stream))
                before_s, before = best_of(1, lambda: incremental(query, stream))
                assert before.positions() == found.positions(), (name, n)
                ref_s = None
                if reference is None or reference[1] * n / reference[0] <= args.reference_budget:
                    ref_s, expected = best_of(1, lambda: cepkit.match(query, stream, engine="reference"))
                    assert expected.positions() == found.positions(), (name, n)
                    reference = (n, ref_s)
                rows.append((name, n, len(found), ref_s, before_s, stack_s, run_s))
                bar.update()
    print(
        f"\n{'query':16} {'events':>7} {'matches':>7} {'reference s':>11} {'incremental s':>13} {'stack s':>8} "
        f"{'run s':>6} {'stack ev/s':>10} {'run ev/s':>9} {'ref/stack':>9} {'incr/stack':>10}"
    )
    for name, n, found, ref_s, before_s, stack_s, run_s in rows:
        ref = f"{ref_s:11.3f}" if ref_s is not None else f"{'-':>11}"
        ratio = f"{ref_s / stack_s:8.0f}x" if ref_s is not None else f"{'-':>9}"
        print(
            f"{name:16} {n:7d} {found:7d} {ref} {before_s:13.3f} {stack_s:8.3f} {run_s:6.3f} "
            f"{n / stack_s:10.0f} {n / run_s:9.0f} {ratio} {before_s / stack_s:9.1f}x"
        )


if __name__ == "__main__":
    main()
