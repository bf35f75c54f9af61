"""``cepkit.why_not`` and ``cepkit.explain`` on the tour's stream (January 2013 flights and weather, ~29k events),
as ratios to ``cepkit.match`` of the same query on the same input, measured in the same run.

The user's path takes the DataFrame; when one stream is judged many times, converting it once to a ``Stream``
saves the conversion (the second block). Each time is the best of ``--repeat`` runs.

    python bench/why_not.py              # 3 runs each
    python bench/why_not.py --repeat 1
"""

from __future__ import annotations

import argparse

import cepkit
from cepkit.runtime import Stream
from streams import best_of

FOGGY = """PATTERN FOG AS f ; DELAYED_DEPARTURE AS d
WHERE f.visib < 0.25 and d.dep_delay >= 240
WITHIN 1 hour
PARTITION BY origin"""  # notebook 10: returns nothing
WIDER = """PATTERN FOG AS f ; DELAYED_DEPARTURE AS d
WHERE f.visib <= 0.25 and d.dep_delay >= 60
WITHIN 3 hours
PARTITION BY origin"""  # notebook 10: 173 matches under ALL
CANDIDATE = (11326, 11396)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    events = cepkit.datasets.flight_events(months=[1], kinds=["weather", "departures"])
    cepkit.parse(FOGGY)  # the grammar is built once per process: not part of any measurement
    print(f"{len(events):,} events\n")
    for label, data in (("DataFrame (the user's path)", events), ("Stream converted once", Stream.from_any(events))):
        base, found = best_of(args.repeat, lambda: cepkit.match(FOGGY, data))
        rows = [("cepkit.match(FOGGY)", base, f"{len(found)} matches")]
        seconds, misses = best_of(args.repeat, lambda: cepkit.why_not(FOGGY, data))
        rows.append(
            (
                "cepkit.why_not(FOGGY)",
                seconds,
                f"{len(misses)} near misses of {misses.searched} judged, complete={misses.complete}",
            )
        )
        for strategy in ("LAST", "STNM"):
            seconds, e = best_of(args.repeat, lambda: cepkit.explain(WIDER, data, CANDIDATE, strategy=strategy))
            rows.append((f"cepkit.explain(WIDER, {strategy})", seconds, e.failures[0].kind))
        print(label)
        print(f"  {'call':34} {'seconds':>8} {'x match':>8}  result")
        for name, seconds, note in rows:
            print(f"  {name:34} {seconds:8.3f} {seconds / base:8.1f}  {note}")
        print()


if __name__ == "__main__":
    main()
