"""MATCH_RECOGNIZE on pandas: rows per second of ``cepkit.sql`` end to end (sort, DEFINE, matching,
MEASURES, the output DataFrame), beside baselines measured in the same run: pandas sorting the same
rows (the floor any engine pays) and the reference backtracking matcher (rows per second on a slice).

    python bench/match_recognize.py [--rows 1000000] [--keys 100]
    python bench/match_recognize.py --spark      # the flights year: Spark local[2] beside cepkit.sql

CPU seconds of this process (``time.process_time``), best of 3: the machine is shared.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import cepkit
from cepkit.match_recognize import find, parse
from streams import best_of

QUERIES = {
    "V-shape A B+ C": """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
        MEASURES FIRST(A.ts) AS start_ts, LAST(B.price) AS low, C.price AS back, COUNT(B.*) AS falls
        PATTERN (A B+ C) DEFINE B AS price < PREV(price), C AS price > PREV(price) + 5)""",
    "sequence A B C": """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
        MEASURES A.ts AS a, C.ts AS c
        PATTERN (A B C) DEFINE A AS price > 105, B AS price < PREV(price), C AS price > PREV(price))""",
    "all rows, A B+": """SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts
        MEASURES MATCH_NUMBER() AS n, CLASSIFIER() AS var, RUNNING AVG(B.price) AS avg_b
        ALL ROWS PER MATCH PATTERN (A B+) DEFINE A AS price > 108, B AS price < PREV(price))""",
}


def rows(n: int, keys: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": rng.integers(0, keys, n), "ts": np.arange(n),
                         "price": (100 + rng.normal(0, 5, n)).round(2)})


FLIGHTS = """SELECT * FROM flights MATCH_RECOGNIZE (PARTITION BY origin ORDER BY ts
    MEASURES W.ts AS weather_at, W.type AS weather, COUNT(D.*) AS delayed, AVG(D.dep_delay) AS mean_delay
    PATTERN (W D{5,}) WITHIN INTERVAL '3' HOUR
    DEFINE W AS type IN ('FOG', 'STORM', 'SNOW'), D AS type = 'DELAYED_DEPARTURE')"""


def spark_side_by_side() -> None:
    """The flights year (weather and departures): Spark on local[2] against cepkit.sql in this process, wall
    clock, best of 3 after a warm-up run of each (the first Spark job starts the Python workers)."""
    import cepkit.spark
    from cepkit.spark.recognize import read_columns

    year = cepkit.datasets.flight_events()
    frame = year[year.type.isin(["FOG", "STORM", "SNOW", "RAIN", "FAIR", "DELAYED_DEPARTURE", "ON_TIME_DEPARTURE"])]
    spark = cepkit.spark.session("local[2]", **{"spark.sql.shuffle.partitions": "2"})
    remote = spark.createDataFrame(frame).cache()
    remote.count()
    cepkit.sql(FLIGHTS, frame)
    cepkit.spark.sql(FLIGHTS, remote).collect()
    # Spark's own floor: the same shuffle into the same groups, each answered without matching.
    read = remote.select(*[c for c in remote.columns if c in read_columns(parse(FLIGHTS))])
    floor = lambda: read.groupBy("origin").applyInPandas(lambda g: g.head(1), read.schema).collect()  # noqa: E731
    floor()
    local_s, local = best_of(3, lambda: cepkit.sql(FLIGHTS, frame))
    spark_s, rows = best_of(3, lambda: cepkit.spark.sql(FLIGHTS, remote).collect())
    floor_s, _ = best_of(3, floor)
    assert len(rows) == len(local)
    print("| rows | matches | cepkit.sql s | cepkit.spark.sql s | Spark's group floor s | spark / local | "
          "spark / floor |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {len(frame):,} | {len(local)} | {local_s:.2f} | {spark_s:.2f} | {floor_s:.2f} | "
          f"{spark_s / local_s:.2f} | {spark_s / floor_s:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--slice", type=int, default=20_000, help="rows for the reference matcher")
    parser.add_argument("--spark", action="store_true", help="the flights year on Spark beside local")
    args = parser.parse_args()
    if args.spark:
        spark_side_by_side()
        return
    frame = rows(args.rows, args.keys)
    clock = time.process_time
    sort_s, _ = best_of(3, lambda: frame.sort_values(["id", "ts"], kind="stable"), clock)
    print(f"{args.rows:,} rows, {args.keys} keys; pandas sort_values(id, ts): {sort_s:.3f} s")
    print(f"| query | matches | output rows | cepkit.sql s | rows/s | sort / sql | vm / reference (per row) |")
    print("|---|---|---|---|---|---|---|")
    for name, text in QUERIES.items():
        cepkit.sql(text, frame.head(1000))  # compile the kernel once
        seconds, out = best_of(3, lambda: cepkit.sql(text, frame), clock)
        matched = find(parse(text), frame)
        part = frame.head(args.slice)
        ref_s, _ = best_of(1, lambda: find(parse(text), part, "reference"), clock)
        vm_s, _ = best_of(3, lambda: find(parse(text), part, "vm"), clock)
        print(f"| {name} | {len(matched):,} | {len(out):,} | {seconds:.3f} | {args.rows / seconds / 1e6:.2f} M | "
              f"{sort_s / seconds:.2f} | {ref_s / vm_s:.0f}x |")


if __name__ == "__main__":
    main()
