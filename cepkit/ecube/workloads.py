"""The workloads of [LIU] §4.6 (Figs 4.10-4.14) over a seeded stream of stock trades, shared by
bench/ecube.py, bench/ecube_stream.py, the tests and notebook 09.

Trades of the nine tickers of the company hierarchy (Fig 4.10: Computer, Finance, Education, three tickers
each), ``ts`` in integer ticks so that no engine's float rounding meets a window's edge.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd

COMPANIES = {
    "Computer": ["DELL", "INTC", "MSFT"],
    "Finance": ["QQQ", "FCF", "ROM"],
    "Education": ["EFC", "ANAT", "OREL"],
}
TICKERS = [t for kids in COMPANIES.values() for t in kids]
WINDOW = " WITHIN 20"  # ts in ms (integers: no engine's float rounding at the window's edge)


# A skewed tape (shares of the trades, in %): large caps outside the hierarchy (AAPL, IBM, ORCL) and MSFT
# trade most, the workloads' other tickers 2-5 % each, so that W1-W3 stay within memory at 20,000 trades
SKEWED = {
    **{"AAPL": 20, "IBM": 18, "ORCL": 15, "MSFT": 25, "INTC": 5, "QQQ": 3, "DELL": 3, "FCF": 3},
    **{"ROM": 2, "EFC": 2, "ANAT": 2, "OREL": 2},
}


def trades(n: int, seed: int = 0, tickers=TICKERS, gap: float = 2, start: int = 0, weights=None) -> pd.DataFrame:
    """``n`` trades ``gap`` ticks apart (ms by default) from tick ``start * gap``, tickers uniform or drawn
    with ``weights`` (ticker -> weight, e.g. ``SKEWED``), price 10..99."""
    rng = random.Random(seed)
    if weights is not None:
        tickers = list(weights)
        kinds = rng.choices(tickers, [weights[t] for t in tickers], k=n)
    else:
        kinds = [rng.choice(tickers) for _ in range(n)]
    return pd.DataFrame(
        {
            "type": kinds,
            "ts": (np.arange(n) + start) * gap,
            "price": [rng.randrange(10, 100) for _ in range(n)],
        }
    )


def pattern_workload(workload: int, extensions=("ROM", "EFC", "ANAT", "OREL"), window: str = WINDOW) -> dict:
    """W1-W3: the shared SEQ(INTC, !MSFT, FCF), SEQ(DELL, INTC, !MSFT, FCF) or SEQ(QQQ, DELL, INTC, !MSFT,
    FCF), and one query per extension by a ticker."""
    shared = [[], ["DELL d"], ["QQQ q", "DELL d"]][workload - 1] + ["INTC i", "!MSFT m", "FCF f"]
    queries = {"shared": "SEQ(" + ", ".join(shared) + ")" + window}
    for ticker in extensions:
        queries[f"+{ticker}"] = "SEQ(" + ", ".join(shared + [f"{ticker} x"]) + ")" + window
    return queries


def concept_workload(window: str = WINDOW) -> dict:
    """W4/W5: q16 and its concept drill-downs."""
    return {
        "q16": "SEQ(Computer c, Finance f, Education e)" + window,
        "q17": "SEQ(Computer c, Finance f, EFC e)" + window,
        "q18": "SEQ(Computer c, QQQ f, EFC e)" + window,
    }


def depth_workload(depth: int, window: str = WINDOW) -> tuple:
    """(queries, hierarchy children): a chain of ``depth`` concepts L1 > L2 > ... > INTC (each level also
    holding one more ticker), and one query per level: SEQ(Lk c, FCF f)."""
    children = {f"L{k}": [f"L{k + 1}", TICKERS[(k + 3) % len(TICKERS)]] for k in range(1, depth)}
    children[f"L{depth}"] = ["INTC", "DELL"]
    queries = {f"L{k}": f"SEQ(L{k} c, FCF f)" + window for k in range(1, depth + 1)}
    return queries, children


def mixed_workloads(window: str = WINDOW) -> dict:
    """W7 and W8 (RCM, unplaced in Fig 4.10, read as ROM; q19, printed as q18, left out)."""
    w7 = {
        "q20": "SEQ(DELL a, QQQ b, ANAT c)",
        "q21": "SEQ(DELL a, QQQ b, ANAT c, ROM d)",
        "q23": "SEQ(DELL a, QQQ b, ANAT c, OREL d)",
        "q24": "SEQ(DELL a, QQQ b, ANAT c, INTC d)",
        "q22": "SEQ(FCF x, DELL a, QQQ b, ANAT c)",
        "q25": "SEQ(DELL a, QQQ b, ANAT c, INTC d, EFC e)",
        "q26": "SEQ(Computer a, Finance b, ANAT c)",
        "q27": "SEQ(DELL a, Finance b, ANAT c)",
        "q28": "SEQ(QQQ x, DELL a, Finance b, ANAT c)",
        "q16": "SEQ(Computer a, Finance b, Education c)",
    }
    w8 = {
        "q16": "SEQ(Computer a, Finance b, Education c)",
        "q29": "SEQ(Computer a, Finance b, OREL c)",
        "q30": "SEQ(INTC a, QQQ b, Education c)",
        "q31": "SEQ(INTC a, QQQ b, EFC c)",
        "q32": "SEQ(MSFT x, INTC a, QQQ b, EFC c)",
        "q33": "SEQ(INTC a, QQQ b, EFC c, DELL d)",
        "q34": "SEQ(Computer a, ROM b, Education c)",
        "q35": "SEQ(Computer a, ROM b, ANAT c)",
        "q36": "SEQ(INTC a, ROM b, ANAT c)",
    }
    return {name: {q: text + window for q, text in w.items()} for name, w in (("W7", w7), ("W8", w8))}


def every_workload(window: str = WINDOW) -> dict:
    """name -> (queries, hierarchy children): W1-W3, W4/W5, W7, W8 and a depth-4 concept chain."""
    out = {f"W{w}": (pattern_workload(w, window=window), COMPANIES) for w in (1, 2, 3)}
    out["W4/W5"] = (concept_workload(window), COMPANIES)
    out.update({name: (queries, COMPANIES) for name, queries in mixed_workloads(window).items()})
    out["depth 4"] = depth_workload(4, window)
    return out
