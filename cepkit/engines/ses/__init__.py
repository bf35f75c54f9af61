"""Engine ``ses``: sequenced event set patterns (Cadonna's thesis, [SES]).

A pattern is a sequence of sets of variables, ``SEQ({C c, P+ p, D d}, {B b})``: the events of a set may
come in any order, the sets one after the other, all within the window. The engine compiles it into one
SES automaton whose states are the subsets of variables bound so far (``automaton``), runs it over each
match window starting at the window's first event (``execution``), and, in the two-phase evaluation,
only over the filtered, partitioned candidate windows that can hold a match (``windows``).

Strategies: ALL (skip-till-any-match), STNM (Def 6.1) and ROBUST_STNM (Def 6.2, by backtracking). Options:

``two_phase`` (default True)
    filter, partition and prune match windows before running the automaton ([SES] ch. 5); results are the same.
``robust`` (default "backtrack")
    how ROBUST_STNM is computed: "backtrack" (Alg 4) or "filter" (all matches, then Def 6.2; Thm 6.2).
``lookahead`` (default True)
    in backtracking, do not grow a branch once some unbound variable has no event left in the window that
    it could take; Alg 4 as printed (False) tries every subset of a long run that fails late.
``automaton`` (default "ses")
    "permutations" runs the brute force of Ex 4.8, one sequential automaton per permutation of every set
    (for benchmarks and teaching). Under ALL it finds the SES automaton's matches; under STNM each
    permutation runs greedily on its own, as in [SES] Fig. 4.12's baseline, so it finds the SES
    automaton's STNM matches and also those of orders the greedy set run passes over (a cost baseline,
    not STNM); ROBUST_STNM is refused.

Decisions (``docs/decisions.md``): a WITHIN clause is optional, without one a match window runs to the end
of the stream (so matches are emitted only by ``close``); a Kleene variable in the last set makes a shorter
match give way to its extension under STNM and ROBUST_STNM (docs/decisions.md); the transitive closure Θ_eq⁺ of Θ's
equalities is added to Θ before compiling (docs/references.md E11), as the reference does, so STNM and ROBUST_STNM are
partition-invariant and every strategy's windows are partitioned on X (Def 5.3).

>>> import cepkit
>>> events = [{"type": "B", "ts": 0}, {"type": "A", "ts": 1}, {"type": "C", "ts": 2}]
>>> cepkit.match("SEQ({A a, B b}, {C c}) WITHIN 5", events, engine="ses").positions()
[(0, 1, 2)]
"""

from __future__ import annotations

from ...runtime.registry import DISORDER_MODES, Engine, register
from .automaton import SesAutomaton, Transition, permutation_automata
from .pattern import NotSesPattern, SetPattern
from .plan import SesPlan


class SesEngine(Engine):
    name = "ses"
    rank = 30
    features = frozenset(
        {
            "sequence",
            "and",
            "kleene",
            "nesting",
            "unary_conditions",
            "binary_conditions",
            "kleene_conditions",
            "condition_items",
            "correlated_filters",
            "time_window",
            "event_window",
            "partition",
            "projection",
            "any_type",
            "hierarchy",
            "strategy:STNM",
            "strategy:ROBUST_STNM",
        }
    )
    options = frozenset({"two_phase", "robust", "automaton", "lookahead"})
    disorder = frozenset(DISORDER_MODES)  # through cepkit.runtime.disorder
    description = (
        "SES automaton over match windows: sets of variables with Kleene +, two-phase filtered / "
        "partitioned / candidate windows, robust skip-till-next-match by backtracking ([SES])"
    )

    def compile(
        self, query, two_phase: bool = True, robust: str = "backtrack", automaton: str = "ses", lookahead: bool = True
    ) -> SesPlan:
        """The plan of a set pattern; ``QueryError`` naming other engines for anything outside it.
        Out-of-order modes run the plan's matcher behind ``cepkit.runtime.disorder``."""
        for feature, node in query.features.items():
            if feature not in self.features:
                raise self.unsupported(query, node, feature)
        try:
            pattern = SetPattern.from_query(query)
        except NotSesPattern as gap:
            raise self.unsupported(query, gap.node, gap.what) from None
        if robust not in ("backtrack", "filter"):
            raise ValueError(f"robust= must be 'backtrack' or 'filter', not {robust!r}")
        if automaton not in ("ses", "permutations"):
            raise ValueError(f"automaton= must be 'ses' or 'permutations', not {automaton!r}")
        if automaton == "permutations" and query.strategy not in ("ALL", "STNM"):
            raise ValueError(
                "automaton='permutations' (the brute force of Ex 4.8) runs under ALL or STNM only; "
                f"use automaton='ses' for {query.strategy}"
            )
        return SesPlan(
            query, pattern, two_phase=bool(two_phase), robust=robust, automaton=automaton, lookahead=bool(lookahead)
        )


register(SesEngine())

__all__ = ["SesEngine", "SesPlan", "SesAutomaton", "SetPattern", "Transition", "permutation_automata"]
