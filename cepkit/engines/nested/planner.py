"""The Plan-Finder ([LIU] §5.4): which plan runs a query, and how its SEQs share their construction.

[LIU] §5.4 searches the partitions of a normal form's conjuncts into groups evaluated together, by a cost
model it does not publish; the partitions number Bell(d) for d conjuncts (B_7 = 877, Eq 5.59). Here:

**Plans** (chosen per query, on the stream's statistics, when ``plan="auto"``):

- ``shared`` (``shared``): every sub-query once as a column, the SEQs built as columns with their gaps'
  ``!``/``EXISTS`` as bounds; possible when the query's top is an OR of SEQs of single events whose
  sub-queries have summaries (``summaries``), on a batch run;
- ``nested``: nested iterative execution ([LIU] §5.1.4), each candidate checked against its sub-queries'
  views (``caching``) or summaries;
- ``normal form``: the query rewritten to NEEL's normal form (``cepkit.rewrite``) and run shared or nested,
  where the rewriting exists and keeps every match.

**Cost model** (estimated microseconds; the constants are this machine's orders of magnitude, only their
ratios matter). With n events, W events per window, a fraction f_T of events of each item's type (a
conditioned atom counts 1/2), a chain of items i..k has about

    rows(i..k) = n f_k  prod_{i <= j < k} (f_j W)  / (k - i)!      (ordered choices inside one window, [CSV] Eq 1)

halved for each ``!``/``EXISTS`` in its gaps. Nested execution pays ``C_EVENT`` per event for its
triggers plus, per outer candidate (``rows`` of the whole SEQ, gaps not applied: P1), ``C_CANDIDATE`` and
per ``!``/``EXISTS`` either ``C_LOOKUP`` (a summary) or ``C_WITNESS`` per event of its scope (a view's
witnesses, validated in Python). Shared execution pays ``C_COLUMN`` per event per atom and sub-query
(the masks and summaries), ``C_COLUMN`` per row of each distinct suffix or prefix it builds, and
``C_CANDIDATE`` per row for conditions on several variables. The cheapest runs; ``info["plan"]`` gives
the estimates.

**Groups.** A shared plan builds each SEQ right to left (sharing suffixes, [LIU] Ex 28) or left to right
(sharing prefixes, Ex 27), and memoises every partial column by its items and gaps, so SEQs built in the
same direction with a common suffix (prefix) build it once. Merging two groups of one direction is then
free, and splitting one never saves work: the partitions worth comparing are the 2^d choices of a
direction per SEQ, not Bell(d). The Plan-Finder tries all of them up to ``EXHAUSTIVE`` SEQs (their cost is
the sum of ``rows`` over the distinct partial columns they build), and beyond that starts from the cheaper
uniform choice and flips one SEQ at a time while that lowers the cost. The groups reported are the SEQs
that share a partial column.

**Caching** (when nested execution runs and ``caching=`` was not given): a view or summary costs
``C_VIEW`` per event and sub-query whether or not it is read, then ``C_LOOKUP`` per lookup; without
caching each lookup computes its scope afresh, ``C_RECOMPUTE`` per scope event (about W / (items + 1)).
Caching pays when a sub-query's results are reused across enough outer candidates in a window; the
Plan-Finder then picks A-CSV, which ``bench/nested.py`` measures as fast as B-CSV and P-CSV within the noise
(12x / 50x over no caching at [CSV]'s 500 / 1000 s windows, B-CSV 12x / 44x), where [CSV] §8 ranks B-CSV
first; else no caching (cheapest at the 100 s window, 2 candidates).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from .operators import Leaf, Select, WinAnd, WinOr, WinSeq, top_composites, top_seqs

C_EVENT = 3.0  # nested: one trigger of the root per event
C_CANDIDATE = 8.0  # nested: one outer candidate built and validated; shared: one condition check per row
C_LOOKUP = 1.5  # a summary lookup
C_WITNESS = 2.0  # one event of a scope scanned through a view
C_COLUMN = 0.02  # one element of a numpy column
C_RECOMPUTE = 16.0  # no caching: one scope event of a sub-query computed afresh (bench [CSV] 500 s: 0.15 s / 9,518)
C_VIEW = 0.5  # caching: one event kept in a sub-query's view or summary (bench [CSV] 100 s: under 1 ms at 2,000 events)
CACHED = "a"  # the mode chosen where caching pays: A-CSV (as fast as B-CSV and P-CSV in bench/nested.py)
EXHAUSTIVE = 10  # SEQs whose 2^d directions are all tried


@dataclass
class StreamStats:
    """What the cost model reads from the stream: its size, each type's share, events per window."""

    n: int
    shares: dict
    per_window: float

    @classmethod
    def of(cls, execution) -> "StreamStats":
        counts: dict = {}
        for part in execution.parts.values():
            for t, c in part.type_counts().items():
                counts[t] = counts.get(t, 0) + c
        n = sum(counts.values())
        if not n:
            return cls(0, {}, 0.0)
        shares = {t: c / n for t, c in counts.items()}
        w = execution.window
        keys = max(1, len(execution.parts))
        if w is None:
            per_window = n / keys
        elif w.events:
            per_window = min(w.amount, n / keys)
        else:
            span = max(p.times.items[-1] for p in execution.parts.values() if p.n) - min(
                p.times.items[0] for p in execution.parts.values() if p.n
            )
            per_window = min(n / keys, n / keys * w.seconds / span) if span > 0 else n / keys
        return cls(n, shares, max(per_window, 1.0))

    def share(self, op) -> float:
        if isinstance(op, Leaf):
            return 1.0 if op.type is None else self.shares.get(op.type, 0.0)
        if isinstance(op, Select):
            return self.share(op.child) / 2
        if isinstance(op, WinOr):
            return min(1.0, sum(self.share(b) for b in op.branches))
        return 1.0

    def rows(self, parts: tuple, gates: int = 0) -> float:
        """Chains of ``parts`` (single events) inside one window, halved per gap ``!``/``EXISTS``."""
        if not parts:
            return 0.0
        k = len(parts) - 1
        estimate = self.n * self.share(parts[-1])
        for p in parts[:-1]:
            estimate *= self.share(p) * self.per_window
        return estimate / math.factorial(k) / 2**gates


@dataclass
class Choice:
    """The plan that ran and why (``Matches.info["plan"]``)."""

    plan: str
    why: str
    costs: dict = field(default_factory=dict)
    directions: list = field(default_factory=list)
    groups: list = field(default_factory=list)
    caching: dict | None = None  # a nested run's caching mode: {"chosen", "why", "costs"}

    def as_dict(self) -> dict:
        return {
            "chosen": self.plan,
            "why": self.why,
            "costs": self.costs,
            "directions": self.directions,
            "groups": self.groups,
            "caching": self.caching,
        }


def _keys(seq: WinSeq, direction: str) -> list:
    """The partial columns a SEQ builds in one direction: (key, parts, number of gap items)."""
    last = len(seq.parts) - 1
    if direction == "suffix":
        spans = [(seq.parts[k:], seq.gates[k + 1 :]) for k in range(last + 1)]
        return [(("suffix", p, g), p, sum(map(len, g))) for p, g in spans]
    spans = [(seq.parts[: k + 1], seq.gates[: k + 1]) for k in range(last + 1)]
    return [(("prefix", p, g), p, sum(map(len, g))) for p, g in spans]


def shared_cost(branches: list, directions: tuple, stats: StreamStats) -> float:
    """Columns built by the shared plan with these directions, each distinct partial column once."""
    seen: dict = {}
    for (seq, _), direction in zip(branches, directions):
        for key, parts, gates in _keys(seq, direction):
            seen.setdefault(key, stats.rows(parts, gates))
    conds = sum(stats.rows(seq.parts, len(seq.booleans)) for seq, c in branches if c)
    return C_COLUMN * sum(seen.values()) + C_CANDIDATE * conds


def choose_directions(branches: list, stats: StreamStats) -> tuple:
    """(directions, cost): the cheapest direction per SEQ (exhaustive up to ``EXHAUSTIVE`` SEQs, else a
    descent from the cheaper uniform choice)."""
    d = len(branches)
    if d <= EXHAUSTIVE:
        options = itertools.product(("suffix", "prefix"), repeat=d)
        best = min(options, key=lambda o: (shared_cost(branches, o, stats), o.count("prefix")))
        return best, shared_cost(branches, best, stats)
    best = min((("suffix",) * d, ("prefix",) * d), key=lambda o: shared_cost(branches, o, stats))
    cost = shared_cost(branches, best, stats)
    improved = True
    while improved:
        improved = False
        for i in range(d):
            flipped = best[:i] + ({"suffix": "prefix", "prefix": "suffix"}[best[i]],) + best[i + 1 :]
            c = shared_cost(branches, flipped, stats)
            if c < cost:
                best, cost, improved = flipped, c, True
    return best, cost


def groups_of(branches: list, directions: tuple, names: list) -> list:
    """The SEQs that share a partial column (connected through shared keys), as lists of their names."""
    owner: dict = {}
    parent = list(range(len(branches)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, ((seq, _), direction) in enumerate(zip(branches, directions)):
        for key, parts, _ in _keys(seq, direction):
            if len(parts) < 2 and len(branches) > 1 and key in owner:
                continue  # one item alone is an atom's events, not construction worth calling shared
            j = owner.setdefault(key, i)
            parent[find(i)] = find(j)
    clusters: dict = {}
    for i in range(len(branches)):
        clusters.setdefault(find(i), []).append(names[i])
    return list(clusters.values())


def nested_cost(root, shared: dict, stats: StreamStats, summarised: bool) -> float:
    """Nested iterative execution: a trigger per event, then every positive candidate and its lookups."""
    total = C_EVENT * stats.n
    for seq in top_seqs(root):
        candidates = stats.rows(seq.parts)
        per = C_CANDIDATE
        gap = stats.per_window / (len(seq.parts) + 1)
        for b in seq.booleans:
            cheap = summarised and shared[b.sub].refs is not None
            per += C_LOOKUP if cheap else C_WITNESS * gap
        total += candidates * per
    return total


def caching_costs(root, subqueries: int, stats: StreamStats) -> dict:
    """Nested execution's sub-query lookups with views or summaries (``CACHED``) and without (None)."""
    lookups = recompute = 0.0
    for top in top_composites(root):
        candidates = stats.rows(top.parts)  # each validates the !/EXISTS items of its positive parts too
        for op in _positive_composites(top):
            lookups += candidates * len(op.booleans)
            recompute += candidates * len(op.booleans) * stats.per_window / (len(op.parts) + 1)
    return {CACHED: C_VIEW * stats.n * subqueries + C_LOOKUP * lookups, None: C_RECOMPUTE * recompute}


def _positive_composites(op) -> list:
    """``op`` and the SEQs and ANDs among its positive items at any depth (not inside a sub-query)."""
    out, stack = [], [op]
    while stack:
        op = stack.pop()
        if isinstance(op, (WinSeq, WinAnd)):
            out.append(op)
            stack += op.parts
        elif isinstance(op, WinOr):
            stack += op.branches
        elif isinstance(op, Select):
            stack.append(op.child)
    return out


def choose_caching(root, subqueries: int, stats: StreamStats) -> tuple:
    """(mode, reason, costs): caching where its views are reused enough to repay keeping them."""
    costs = caching_costs(root, subqueries, stats)
    cached, none = round(costs[CACHED]), round(costs[None])
    if not subqueries:
        return CACHED, "no sub-query: caching changes nothing", {"A-CSV": cached, "none": none}
    if cached < none:
        why = (
            f"caching 'a' (A-CSV): views estimated {cached:,} µs against {none:,} µs recomputing each "
            f"sub-query per outer candidate (results reused across candidates; A-CSV, as fast as B-CSV and "
            f"P-CSV in bench/nested.py, is the simplest)"
        )
        return CACHED, why, {"A-CSV": cached, "none": none}
    why = (
        f"caching None: recomputing each sub-query per outer candidate estimated {none:,} µs against "
        f"{cached:,} µs keeping views (too few candidates per window to reuse them)"
    )
    return None, why, {"A-CSV": cached, "none": none}


def shared_fixed_cost(root, shared: dict, stats: StreamStats) -> float:
    """Masks and summaries: a column per atom and per sub-query over the stream."""
    atoms = sum(len(seq.parts) for seq in top_seqs(root))
    return C_COLUMN * stats.n * (atoms + 4 * len(shared)) + 0.3 * stats.n


def label(op) -> str:
    """A short text for an operator: ``SEQ(MSFT m, !SEQ(RIMM r, AMAT a), ORCL o)``."""
    if isinstance(op, Leaf):
        return " ".join(x for x in (op.type or "ANY", op.var) if x)
    if isinstance(op, Select):
        return label(op.child) + " [cond]"
    if isinstance(op, WinOr):
        return f"OR({', '.join(map(label, op.branches))})"
    items = (
        dict(zip(op.positions, map(label, op.parts)))
        if isinstance(op, WinSeq)
        else dict(enumerate(map(label, op.parts)))
    )
    for b in op.booleans:
        items[b.index if isinstance(op, WinSeq) else len(items)] = ("!" if b.negations % 2 else "EXISTS ") + label(
            b.sub
        )
    kind = "SEQ" if isinstance(op, WinSeq) else "AND"
    return f"{kind}({', '.join(items[k] for k in sorted(items))})"
