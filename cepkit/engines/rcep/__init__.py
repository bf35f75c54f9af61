"""Engine ``rcep``: recomputation-based CEP for Kleene closure with complex predicates (Kammoun's thesis,
[RCEP] ch. 3).

Partial-match engines keep every partial match that may still complete: with a Kleene variable under
skip-till-any-match there are O(2^n) of them over n events of a window (Theorem 3). RCEP keeps only the
window's events, one *event tree* per variable (``trees``), and when an event arrives that can end a match
(it fits the last variable, a *trigger*) recomputes in one batch every match ending there (``plan``):
range queries on the trees, the hybrid join into bitvectors (``joins``, Algorithm 2) and a DFS over the
chains of each Kleene variable (Algorithm 3). Conditions are sorted into roles by ``pattern``.

Fragment: a SEQ of ``T x`` and ``T+ x`` items (ANY and hierarchy concepts as types), any conditions on
them (constant tests, joins between variables, ``prev``/``b[i-1]`` chains, ``first``/``last``/``b[k]``,
aggregates), WITHIN (time or EVENTS), PARTITION BY, CONSUME BY, RETURN, and the strategies ALL, STRICT,
PARTITION_STRICT, NEXT, LAST and MAX (each chooses among the matches ending at the trigger, which the
recomputation has all at hand), STNM (the thesis's STN, ``stnm``) and ROBUST_STNM ([SES] Def 6.2, judged
on the recomputed ALL matches), neither with CONSUME BY. Refused, naming the engines that run them: OR,
AND, negation, EXISTS, iterations of composite patterns and nested strategies.

``RcepPlan.run`` over a finite stream recomputes every trigger in one compiled call (``batch``,
``kernel``) when the query is all the kernel does, and so does a ``Matcher``'s ``extend`` with a
micro-batch (``open_window``: the events a later trigger may bind kept as columns); otherwise, and in a
``Matcher``'s ``push``, trigger by trigger.

Option ``join``: "hybrid" (default, Algorithm 2 with dominance reuse, one predicate at a time), "nested"
(the NLJoin baseline of [RCEP] §3.8) or "zorder" (all predicates between two variables at once: Z-regions and
region dominance, Algorithm 4, ``zorder``); all give the same matches. Choices the thesis leaves open are
in ``docs/rcep-engine.md``.

>>> import cepkit
>>> from cepkit.datasets import rcep_water
>>> q = ("PATTERN SEQ(Water+ b, Water c) WHERE b[i].vol > b[i-1].vol and count(b) >= 3 and c.pres <= 1 "
...      "WITHIN 10 PARTITION BY region")
>>> found = cepkit.match(q, rcep_water(), engine="rcep")
>>> len(found), found.info["triggers"]
(240, 3)
"""

from __future__ import annotations

from ...runtime.registry import DISORDER_MODES, Engine, register
from .pattern import KleenePattern, NotRcepPattern
from .plan import JOINS, RcepPlan


class RcepEngine(Engine):
    name = "rcep"
    rank = 40
    features = frozenset(
        {
            "sequence",
            "kleene",
            "nesting",
            "unary_conditions",
            "binary_conditions",
            "correlated_filters",
            "condition_items",
            "kleene_conditions",
            "aggregates",
            "time_window",
            "event_window",
            "partition",
            "consume",
            "projection",
            "any_type",
            "hierarchy",
            "strategy:STRICT",
            "strategy:PARTITION_STRICT",
            "strategy:NEXT",
            "strategy:LAST",
            "strategy:MAX",
            "strategy:STNM",
            "strategy:ROBUST_STNM",
        }
    )
    options = frozenset({"join"})
    disorder = frozenset(DISORDER_MODES)  # through cepkit.runtime.disorder
    description = (
        "recomputation over the window's events: event trees, range queries, hybrid join into "
        "bitvectors and Kleene chain enumeration on each trigger, no partial matches ([RCEP])"
    )

    def compile(self, query, join: str = "hybrid") -> RcepPlan:
        """The plan of a SEQ of (Kleene) variables; ``QueryError`` naming other engines for anything else.
        Out-of-order modes run the plan's matcher behind ``cepkit.runtime.disorder``."""
        for feature, node in query.features.items():
            if feature not in self.features:
                raise self.unsupported(query, node, feature)
        if join not in JOINS:
            raise ValueError(f"join= must be one of {', '.join(map(repr, JOINS))}, not {join!r}")
        try:
            KleenePattern.from_query(query)
        except NotRcepPattern as gap:
            raise self.unsupported(query, gap.node, gap.what) from None
        if query.strategy in ("STNM", "ROBUST_STNM") and "consume" in query.features:
            pattern = KleenePattern.from_query(query)
            if query.strategy == "ROBUST_STNM" or pattern.slots[-1].kleene:  # its matches are reported late
                what = "ROBUST_STNM" if query.strategy == "ROBUST_STNM" else "STNM with a Kleene last variable"
                raise self.unsupported(query, query.features["consume"], f"CONSUME BY under {what}")
        return RcepPlan(query, join)


register(RcepEngine())

__all__ = ["RcepEngine", "RcepPlan", "KleenePattern"]
