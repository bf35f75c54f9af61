"""SES engine benchmarks ([SES] §4.7, §5.4, §6.5): the experiments of the thesis's chapters 4-6, on seeded synthetic
chemo-like and stock-like streams. Every table prints ratios against a baseline measured in the same run.

1. automaton vs brute force (Fig 4.12): one set of 1..5 variables, pairwise exclusive or not; the brute force
   runs |B|! sequential automata; greedy A (Alg 2) window by window, in Python.
2. vs the reference evaluator, on streams small enough for it.
3. window size (Fig 4.13, Table 4.1) and 4. stream size (Fig 4.14): time per event against the smallest.
5. two-phase evaluation on / off (Fig 5.5-5.7): P_set, P_seq, P_onco and P_nyse; calls to A and time; the
   gain as the stream grows.
6. robust STNM, backtracking vs find-all-then-filter (Fig 6.7): time as the window grows.
7. the SES automaton vs the brute force through ``cepkit.match`` (both in the columnar kernel), k = 1..8,
   under STNM (the thesis's greedy setting) and ALL.
8. the chemo-like set queries end to end from a DataFrame, events/s (Θ's PID equalities or PARTITION BY PID).

    python bench/ses.py            # the full run (several minutes)
    python bench/ses.py --quick    # small sizes, a smoke check
"""

from __future__ import annotations

import argparse
import math
import random
import time

from tqdm import tqdm

import cepkit
from cepkit.engines.ses.execution import run_window
from cepkit.engines.ses.windows import Entry
from cepkit.runtime import Stream
from cepkit.runtime.api import clear_plan_cache
from cepkit.runtime.registry import get_engine

DRUGS = "CPDRHB"  # C, P, D, R: drugs; H: hemoglobin, B: blood count (chemo-like types)
MORE = DRUGS + "GL"  # G: glucose, L: leukocytes, for sets of up to 8 exclusive variables (section 7)
PID_CHAIN = {"P_onco": "cdprbh", "P1": "cpdb"}
DAY = 86400.0


def chemo_like(n: int, patients: int, seed: int = 0, types: str = DRUGS) -> Stream:
    """``n`` events of ``patients`` patients over time, about ten a day in all; each patient's doses and counts
    come in random order; ``V`` is the dose or count (rising doses are common)."""
    rng = random.Random(seed)
    t, rows = 0.0, []
    for _ in range(n):
        t += rng.expovariate(10 / DAY)
        kind = rng.choice(types)
        rows.append({"type": kind, "ts": t, "PID": rng.randrange(patients), "V": rng.randrange(1000)})
    return Stream.from_any(rows)


def stock_like(n: int, symbols=("GOOG", "IBM", "AAPL", "MSFT"), seed: int = 0) -> Stream:
    """``n`` trades, a few milliseconds apart; each symbol's price is a random walk, volumes are random."""
    rng = random.Random(seed)
    price = {s: 100.0 for s in symbols}
    t, rows = 0.0, []
    for _ in range(n):
        t += rng.uniform(0.001, 0.01)
        symbol = rng.choice(symbols)
        price[symbol] += rng.uniform(-1, 1)
        rows.append({"type": symbol, "ts": t, "S": symbol, "P": round(price[symbol], 2), "V": rng.randrange(1000)})
    return Stream.from_any(rows)


def one_set(k: int, exclusive: bool, days: float, rising: bool = False) -> str:
    """⟨{v1..vk}⟩ over one patient: distinct drugs (exclusive) or alternating C/P (not exclusive); ``rising``
    also asks v1.V < v2.V < ... < vk.V, so few of the partial matches complete."""
    types = [MORE[i] if exclusive else "CP"[i % 2] for i in range(k)]
    members = ", ".join(f"{t} v{i}" for i, t in enumerate(types))
    conditions = [f"v0.PID = v{i}.PID" for i in range(1, k)]
    if rising:
        conditions += [f"v{i - 1}.V < v{i}.V" for i in range(1, k)]
    where = f" WHERE {' and '.join(conditions)}" if conditions else ""
    return f"PATTERN SEQ({{{members}}}){where} WITHIN {days} days"


def sequence(k: int, days: float) -> str:
    """P_seq = ⟨{v1}..{vk}⟩ over one patient."""
    items = ", ".join(f"{DRUGS[i]} v{i}" for i in range(k))
    same = " and ".join(f"v0.PID = v{i}.PID" for i in range(1, k))
    return f"PATTERN SEQ({items})" + (f" WHERE {same}" if same else "") + f" WITHIN {days} days"


def chained(variables: str) -> str:
    return " and ".join(f"{a}.PID = {b}.PID" for a, b in zip(variables, variables[1:]))


def p_onco(days: float) -> str:
    """P_onco = ⟨{c,d},{p+,r+},{b,h}⟩ of one patient ([SES] §5.4)."""
    return (
        f"PATTERN SEQ({{C c, D d}}, {{P+ p, R+ r}}, {{B b, H h}}) WHERE {chained(PID_CHAIN['P_onco'])} "
        f"WITHIN {days} days"
    )


def p1(days: float) -> str:
    """The running example P1 = ⟨{c,p+,d},{b}⟩ with rising p doses."""
    return (
        f"PATTERN SEQ({{C c, P+ p, D d}}, {{B b}}) WHERE {chained(PID_CHAIN['P1'])} and prev(p.V) < p.V "
        f"WITHIN {days} days"
    )


def p_nyse(ms: float) -> str:
    """P_nyse = ⟨{a+,g+},{i+}⟩: AAPL and GOOG rising, then IBM falling ([SES] §5.4)."""
    return (
        "PATTERN SEQ({AAPL+ a, GOOG+ g}, {IBM+ i}) WHERE prev(a.P) < a.P and prev(g.P) < g.P and "
        f"prev(i.P) > i.P WITHIN {ms} ms"
    )


def p_rise(ms: float) -> str:
    """Three or more rising GOOG trades, then one with a larger volume than each (P3 of [SES] Fig. 6.1(a))."""
    return (
        "PATTERN SEQ({GOOG s1}, {GOOG s2}, {GOOG+ s3}, {GOOG s4}) WHERE s1.P < s2.P and s2.P < s3.P and "
        f"prev(s3.P) < s3.P and s1.V < s4.V and s2.V < s4.V and s3.V < s4.V WITHIN {ms} ms"
    )


def timed(query: str, stream: Stream, **options) -> tuple:
    """(CPU seconds, matches, info) of one ``cepkit.match`` run."""
    start = time.process_time()
    found = cepkit.match(query, stream, **options)
    return time.process_time() - start, len(found), found.info


def table(title: str, header: tuple, rows: list) -> None:
    print(f"\n{title}")
    print("  ".join(f"{h:>12}" for h in header))
    for row in rows:
        print("  ".join(f"{c:>12.3f}" if isinstance(c, float) else f"{c!s:>12}" for c in row))


def greedy_a(query: str, stream: Stream) -> tuple:
    """Seconds spent in A by Alg 2's greedy run (the thesis's setting for Fig 4.12) over every plain match
    window: on the SES automaton, and on each of the brute force's sequential automata. The brute force's
    union is not the set pattern's STNM (each permutation is greedy on its own), so only the cost compares."""
    ses = get_engine("ses").compile(cepkit.parse("SELECT STNM * " + query), two_phase=False)
    brute = get_engine("ses").compile(cepkit.parse(query), two_phase=False, automaton="permutations")
    windows = [
        [Entry(stream[p], stream[p].time, ses.vars_of(stream[p])) for p in positions]
        for positions in ses.match_windows(stream)["positions"]
    ]
    seconds = []
    for automata in (ses.compiled, brute.compiled):
        start = time.perf_counter()
        for window in windows:
            for automaton in automata:
                run_window(automaton, window, keep_skips=False)
        seconds.append(time.perf_counter() - start)
    return tuple(seconds)


def automaton_vs_brute_force(quick: bool, bar) -> None:
    """Fig 4.12: one SES automaton against the |B|! sequential automata of the brute force, for one set of
    1..5 variables, pairwise exclusive (distinct drugs) or not (alternating C/P)."""
    stream = chemo_like(300 if quick else 1000, patients=1)
    greedy = []
    for exclusive in (True, False):
        for k in range(1, 5 if quick else 6):
            query = one_set(k, exclusive, days=1.5, rising=True)
            ses_a, brute_a = greedy_a(query, stream)
            greedy.append(("yes" if exclusive else "no", k, ses_a, brute_a, f"{brute_a / ses_a:.1f}x"))
            bar.update()
    title = f"one set {{v1..vk}} of one patient, rising V, 1.5 days, {len(stream)} events"
    table(
        f"1. SES automaton vs brute force, greedy A (Alg 2, Python) on every window ({title}); through "
        "cepkit.match: section 7",
        ("exclusive", "k", "ses A s", "brute A s", "brute/ses"),
        greedy,
    )


def versus_reference(quick: bool, bar) -> None:
    """The engine against the brute-force oracle on the same queries and streams."""
    rows = []
    for n in (30, 60) if quick else (30, 60, 90):
        chemo, stocks = chemo_like(n, patients=2), stock_like(n, symbols=("GOOG", "IBM"), seed=1)
        for name, query, stream in (
            ("P1 ALL", p1(3), chemo),
            ("P1 STNM", "SELECT STNM * " + p1(3), chemo),
            ("rise RSTNM", "SELECT ROBUST_STNM * " + p_rise(100), stocks),
        ):
            ses_s, found, _ = timed(query, stream, engine="ses")
            ref_s, ref_found, _ = timed(query, stream, engine="reference", budget=10**8)
            assert ref_found == found, (name, n)
            rows.append((name, n, found, ses_s, ref_s, f"{ref_s / ses_s:.0f}x"))
            bar.update()
    table(
        "2. SES engine vs the reference evaluator",
        ("query", "events", "matches", "ses s", "reference s", "ref/ses"),
        rows,
    )


def window_growth(quick: bool, bar) -> None:
    """Fig 4.13: time per event grows linearly with the largest window |Ŵ| for exclusive variables."""
    stream = stock_like(4000 if quick else 20000)
    rows, base = [], None
    for ms in (25, 50, 100) if quick else (25, 50, 100, 200, 400):
        for strategy in ("STNM", "ROBUST_STNM"):
            seconds, found, info = timed(p_rise(ms), stream, engine="ses", strategy=strategy)
            base = base or {}
            base.setdefault(strategy, seconds)
            rows.append((strategy, ms, info["max_window"], found, seconds, f"{seconds / base[strategy]:.1f}x"))
            bar.update()
    table(
        f"3. window size: rising GOOG pattern over {len(stream)} trades",
        ("strategy", "window ms", "max |W|", "matches", "seconds", "x smallest"),
        rows,
    )


def stream_growth(quick: bool, bar) -> None:
    """Fig 4.14: roughly linear in the stream size."""
    rows, base = [], {}
    for n in (2500, 5000, 10000) if quick else (10000, 20000, 40000, 80000):
        for name, query, stream in (
            ("P1 STNM", "SELECT STNM * " + p1(10), chemo_like(n, patients=50)),
            ("rise RSTNM", "SELECT ROBUST_STNM * " + p_rise(100), stock_like(n)),
        ):
            seconds, found, _ = timed(query, stream, engine="ses")
            base.setdefault(name, seconds / n)
            rows.append((name, n, found, seconds, f"{n / seconds:.0f}", f"{seconds / n / base[name]:.2f}x"))
            bar.update()
    table("4. stream size", ("query", "events", "matches", "seconds", "events/s", "per event x"), rows)


def two_phase(quick: bool, bar) -> None:
    """Fig 5.5-5.7: filtering, partitioning and candidate windows cut the calls to A; the gain is largest for
    sets over many interleaved patients, and grows with the window."""
    chemo = chemo_like(1500 if quick else 6000, patients=100)
    stocks = stock_like(3000 if quick else 12000, symbols=("GOOG", "IBM", "AAPL", "MSFT", "ORCL", "HPQ"))
    cases = [(f"P_set k={k}", one_set(k, True, 20), chemo) for k in ((2, 4) if quick else (2, 3, 4, 5))]
    cases += [(f"P_seq k={k}", sequence(k, 20), chemo) for k in ((2, 4) if quick else (2, 3, 4, 5))]
    cases += [(f"P_onco {d}d", p_onco(d), chemo) for d in ((10, 20) if quick else (10, 20, 40))]
    cases += [(f"P_nyse {ms}ms", p_nyse(ms), stocks) for ms in ((20, 40) if quick else (20, 40, 80))]
    rows = []
    for name, query, stream in cases:
        on_s, found, on = timed(query, stream, engine="ses")
        off_s, off_found, off = timed(query, stream, engine="ses", two_phase=False)
        assert off_found == found, name
        rows.append((name, found, off["evaluated"], on["evaluated"], off_s, on_s, f"{off_s / on_s:.1f}x"))
        bar.update()
    table(
        f"5. two-phase evaluation (ALL; chemo-like {len(chemo)} events / 100 patients, stock-like {len(stocks)})",
        ("pattern", "matches", "A calls off", "A calls on", "off s", "on s", "off/on"),
        rows,
    )
    rows = []
    for n in (750, 1500) if quick else (1500, 3000, 6000):
        stream = chemo_like(n, patients=100)
        on_s, found, _ = timed(one_set(3, True, 20), stream, engine="ses")
        off_s, _, _ = timed(one_set(3, True, 20), stream, engine="ses", two_phase=False)
        rows.append((n, found, off_s, on_s, f"{off_s / on_s:.1f}x"))
        bar.update()
    table(
        "5b. two-phase gain as the stream grows (P_set k=3, 20 days)",
        ("events", "matches", "off s", "on s", "off/on"),
        rows,
    )


def backtracking(quick: bool, bar) -> None:
    """Fig 6.7: robust STNM by backtracking against all matches then Def 6.2 (all+pp); the gap grows with the
    window, as all+pp enumerates every match. Alg 4 as printed (no lookahead) tries the subsets of every
    rising run that fails late."""
    stream = stock_like(1500 if quick else 5000, symbols=("GOOG", "IBM"))
    rows = []
    for ms in (20, 40, 60) if quick else (20, 40, 60, 80, 100):
        query = "SELECT ROBUST_STNM * " + p_rise(ms)
        bt_s, found, _ = timed(query, stream, engine="ses")
        plain_s, plain_found, _ = timed(query, stream, engine="ses", lookahead=False)
        pp_s, pp_found, _ = timed(query, stream, engine="ses", robust="filter")
        all_s, all_found, _ = timed(p_rise(ms), stream, engine="ses")
        assert pp_found == plain_found == found
        rows.append(
            (ms, found, all_found, bt_s, plain_s, all_s, pp_s, f"{plain_s / bt_s:.1f}x", f"{all_s / bt_s:.1f}x")
        )
        bar.update()
    table(
        f"6. robust STNM: backtracking vs find-all-then-filter ({len(stream)} GOOG/IBM trades; bt, Alg 4 and ALL in "
        "the kernel, all+pp = ALL then Def 6.2 in Python)",
        ("window ms", "RSTNM", "all matches", "bt s", "Alg 4 s", "ALL s", "all+pp s", "Alg 4/bt", "ALL/bt"),
        rows,
    )


def kernel_vs_brute_force(quick: bool, bar) -> None:
    """[SES] Fig 4.12 through ``cepkit.match`` (the columnar kernel for both), CPU seconds from a DataFrame:
    the SES automaton against the brute force's |B|! sequential automata, one set of k variables of one
    patient with rising V, pairwise exclusive (distinct types) or not (alternating C/P).

    7a is the thesis's setting, Alg 2's greedy run (STNM): every permutation's automaton runs greedily on its
    own over every candidate window, so its matches include the SES automaton's (checked) and more. 7b is
    ALL, where both find the same matches (checked) and every partial match of the brute force is one of the
    SES automaton's, repeated in the (k - j)! automata sharing its first j variables' order. "ses 1st s" is
    the first call (parsing and compiling the query), "ses s" the best of it and two more (the plan cache's
    plan); the brute force runs once (its time is all kernel). A row whose
    brute force would pass ``budget`` CPU seconds at k + 1 (its time grows about k-fold) is the last of its
    series. Then a log-scale chart of the ratios."""
    rows = []
    for mode, n, cases in (
        ("STNM", 3000 if quick else 30000, ((True, 6 if quick else 8), (False, 5 if quick else 6))),
        ("ALL", 500 if quick else 2000, ((True, 5 if quick else 6), (False, 5 if quick else 8))),
    ):
        frame = chemo_like(n, patients=1, types=MORE).frame.infer_objects().astype({"ts": float})
        budget = 5.0 if quick else 120.0
        for exclusive, top in cases:
            for k in range(1, top + 1):
                query = f"SELECT {mode} * " + one_set(k, exclusive, days=1.5, rising=True)
                clear_plan_cache()  # the first call parses and compiles; the next two reuse the plan
                first_s, found = _cpu(query, frame)
                ses_s = min([first_s] + [_cpu(query, frame)[0] for _ in range(2)])
                brute_s, brute_found = _cpu(query, frame, automaton="permutations")
                assert set(found) <= set(brute_found) if mode == "STNM" else brute_found == found
                rows.append(
                    (
                        mode,
                        n,
                        "yes" if exclusive else "no",
                        k,
                        len(found),
                        len(brute_found),
                        first_s,
                        ses_s,
                        brute_s,
                        brute_s / ses_s,
                    )
                )
                bar.update()
                if brute_s * (k + 1) > budget:
                    break
    table(
        "7. SES automaton vs brute force through cepkit.match (kernel; one set of k, rising V, 1.5 days, one "
        "patient; 7a STNM = Alg 2's greedy run, 7b ALL)",
        (
            "strategy",
            "events",
            "exclusive",
            "k",
            "ses matches",
            "brute matches",
            "ses 1st s",
            "ses s",
            "brute s",
            "brute/ses",
        ),
        rows,
    )
    print("\nbrute/ses, log scale (each # is a factor of 10^0.25)")
    for mode, _, exclusive, k, _, _, _, _, _, ratio in rows:
        print(f"  {mode:4} exclusive={exclusive:3} k={k}  {'#' * max(0, round(4 * math.log10(ratio)))} {ratio:.1f}x")


def set_throughput(quick: bool, bar) -> None:
    """The chemo-like set queries end to end: ``cepkit.match(query, frame).positions()`` from a DataFrame of
    n events over 200 patients, CPU seconds, best of three; P1 with Θ's PID equalities (windows partitioned
    on X, Def 5.3) and with PARTITION BY PID, under ALL and STNM."""
    n = 20000 if quick else 400000
    frame = chemo_like(n, patients=200).frame.infer_objects().astype({"ts": float})
    by_pid = "PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE prev(p.V) < p.V WITHIN 10 days PARTITION BY PID"
    rows = []
    for name, query in (
        ("P1", p1(10)),
        ("P1 by PID", by_pid),
        ("P1 STNM", "SELECT STNM * " + p1(10)),
        ("P1 by PID STNM", "SELECT STNM * " + by_pid),
        ("P_onco", p_onco(10)),
        ("P_set k=3", one_set(3, True, 20)),
        ("P_set k=5", one_set(5, True, 20)),
        ("P_seq k=3", sequence(3, 20)),
    ):
        seconds, found = min(_cpu(query, frame) for _ in range(3))
        rows.append((name, len(found), seconds, f"{n / seconds:.3g}"))
        bar.update()
    table(
        f"8. chemo-like set queries end to end ({n} events, 200 patients; ALL unless STNM)",
        ("pattern", "matches", "seconds", "events/s"),
        rows,
    )


def _cpu(query: str, frame, **options) -> tuple:
    """(CPU seconds, positions) of ``cepkit.match(query, frame, engine="ses").positions()``."""
    start = time.process_time()
    found = cepkit.match(query, frame, engine="ses", **options).positions()
    return time.process_time() - start, found


SECTIONS = {
    "kernel": (kernel_vs_brute_force, 21, 29),
    "throughput": (set_throughput, 8, 8),
    "brute": (automaton_vs_brute_force, 8, 10),
    "reference": (versus_reference, 6, 9),
    "window": (window_growth, 6, 10),
    "stream": (stream_growth, 6, 8),
    "two-phase": (two_phase, 14, 23),
    "backtracking": (backtracking, 3, 5),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append", help="run these sections only")
    args = parser.parse_args()
    chosen = args.only or list(SECTIONS)
    timed(p1(5), chemo_like(50, patients=2), engine="ses")  # warm up: imports and the grammar
    with tqdm(total=sum(SECTIONS[s][1 if args.quick else 2] for s in chosen), desc="ses bench") as bar:
        for name in chosen:
            SECTIONS[name][0](args.quick, bar)


if __name__ == "__main__":
    main()
