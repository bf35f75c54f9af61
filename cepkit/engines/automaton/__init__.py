"""The ``automaton`` engine: CEL compiled to complex event automata ([CEL], seed "Foundations of
Complex Event Processing", Bucchi, Grez, Riveros, Ugarte, PVLDB 2018).

The stages, one module each (as in CORE, the authors' later engine):

- ``compile``: fragment checks, LP-normal rewriting (push-down, Theorem 2's pop-up), Thompson
  construction with ε-removal (Theorem 3), STRICT sub-automata (Theorem 4);
- ``predicates``: each transition's unary predicate, evaluated once per event into a letter, column-wise;
- ``determinize``: lazy I/O-determinization keyed by the letter (Proposition 1);
- ``nodes`` and ``evaluate``: Algorithm 1 with persistent Ext/Union nodes, windows by max-start
  pruning, output-linear enumeration; ``kernel``: numba for the inner loops, with a pure-Python fallback;
- ``strategies``: NEXT, LAST and MAX by their own algorithms (Theorem 6);
- ``inspect``: the public view of the automaton (``cepkit.automaton``) for the widgets.

>>> import cepkit
>>> events = cepkit.datasets.cel_fire_sensors()
>>> cepkit.match("(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)", events,
...              engine="automaton").positions()
[(1, 2), (1, 8), (5, 8)]
"""

from __future__ import annotations

from ...lang.query import Query
from ...runtime.registry import DISORDER_MODES, Engine, Plan, register
from .inspect import Automaton, automaton


class AutomatonEngine(Engine):
    name = "automaton"
    rank = 10
    features = frozenset(
        {
            "sequence",
            "or",
            "kleene",
            "nested_kleene",
            "nesting",
            "unary_conditions",
            "condition_items",
            # binary conditions: only equalities PARTITION BY guarantees; compile rejects the others
            "binary_conditions",
            # unary filters on an enclosing variable (CEL φ5): Theorem 2's pop-up
            "correlated_filters",
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
            # STRICT(...) inside a pattern (linear, Theorem 4); NEXT/LAST/MAX inside one filter the matches
            # (compile.nested_selections says when)
            "nested_strategy",
        }
    )
    disorder = frozenset(DISORDER_MODES)  # through cepkit.runtime.disorder
    options = frozenset({"enumeration"})  # "ordered" (default) or "constant-delay" (plan.build_plan)
    description = (
        "CEL compiled to a complex event automaton, lazily determinized; constant update per event, "
        "output-linear enumeration, NEXT/LAST/MAX/STRICT algorithms ([CEL])"
    )

    def compile(self, query: Query, **options) -> Plan:
        from .plan import build_plan

        return build_plan(
            query, lambda node, what: self.unsupported(query, node, what), options.get("enumeration", "ordered")
        )


register(AutomatonEngine())

__all__ = ["AutomatonEngine", "Automaton", "automaton"]
