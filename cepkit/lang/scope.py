"""Condition scoping: the place where each condition of a query is evaluated (docs/language.md §2, §10 rules 7, 11).

``scoped(query)`` turns a query into one normalized pattern tree that the reference evaluator and the
engines consume:

- ``WHERE c`` becomes a filter on the whole pattern;
- the condition items of a ``SEQ``/``AND`` (NEEL style, ``SEQ(R r, O o, r.id = o.id)``) become a filter on
  that ``SEQ``/``AND``;
- each conjunct that mentions variables of a negation (``!``) or ``EXISTS`` moves inside it, into the
  innermost negation that sees all of its variables: "there is no b with ..." ([LIU] §5.1.2, the
  predicate scoping test of [LIU] §7.2.4). Every other conjunct stays where it was written and filters the
  match;
- a conjunct that mentions variables of two unrelated negations belongs to neither: a ``QueryError``
  (rule 7), raised by ``cepkit.parse``.

>>> from cepkit.lang.parser import parse_tree
>>> from cepkit.lang.printer import pretty
>>> print(pretty(scoped(parse_tree("SEQ(A x, !B y, C z, x.f <= y.f and y.f <= z.f and x.f < z.f)"))))
SEQ(A AS x, !(B AS y FILTER x.f <= y.f and y.f <= z.f), C AS z) FILTER x.f < z.f
"""

from __future__ import annotations

from typing import Optional

from . import ast as A
from ..errors import QueryError


def scoped(query: A.QueryNode, text: Optional[str] = None) -> A.Pattern:
    """The pattern of ``query`` with every condition at its place (see the module docstring).

    Raises ``QueryError`` (with a caret into ``text``) for a conjunct mixing two unrelated negations.
    """
    pattern = query.pattern
    if query.where is not None:
        pattern = A.Filter(pattern, query.where, span=query.where.span)
    return _Scoper(text).place(pattern, {})


class _Scoper(A.Visitor):
    """Rebuilds a pattern top-down; ``moved`` maps id(negation node) -> conjuncts that go inside it."""

    def __init__(self, text: Optional[str]):
        self.text = text

    def place(self, node, moved: dict):
        return self.visit(node, moved)

    # ------------------------------------------------------------------ nodes holding conditions
    def visit_filter(self, node: A.Filter, moved):
        stay, moved = self._route(node.pattern, A.conjuncts(node.cond), moved)
        return _filtered(self.place(node.pattern, moved), stay, node.span)

    def visit_seq(self, node, moved):
        conditions = [c for item in node.items if isinstance(item, A.Expr) for c in A.conjuncts(item)]
        stay, moved = self._route(node, conditions, moved)
        items = tuple(self.place(item, moved) for item in node.items if not isinstance(item, A.Expr))
        return _filtered(type(node)(items, span=node.span), stay, node.span)

    visit_and = visit_seq

    # ------------------------------------------------------------------ negations receive conditions
    def visit_not(self, node, moved):
        if isinstance(node.item, A.Expr):  # the grammar lets '!'/EXISTS take a condition item: no meaning
            word = "EXISTS" if isinstance(node, A.Exists) else "!"
            raise QueryError.at(
                node,
                f"{word} must apply to a pattern, not to a condition (write the condition as a filter, or 'not ...')",
                self.text,
            )
        item = self.place(node.item, moved)
        extra = moved.get(id(node), ())
        if extra:
            item = _filtered(item, extra, node.item.span)
        return type(node)(item, span=node.span)

    visit_exists = visit_not

    # ------------------------------------------------------------------ structure only
    def visit_or(self, node, moved):
        return A.Or(tuple(self.place(i, moved) for i in node.items), span=node.span)

    def visit_plus(self, node, moved):
        return A.Plus(self.place(node.pattern, moved), span=node.span)

    def visit_strategy(self, node, moved):
        return A.Strategy(node.name, self.place(node.pattern, moved), span=node.span)

    def visit_atom(self, node, moved):
        return node

    # ------------------------------------------------------------------ routing
    def _route(self, below: A.Node, conditions, moved: dict) -> tuple:
        """Split ``conditions`` (conjuncts written at ``below``) into those that stay and those that move
        into a negation inside ``below``; returns (staying conjuncts, updated ``moved``)."""
        chains = _negation_chains(below)
        stay, moved = [], dict(moved)
        for conjunct in conditions:
            target = self._target(conjunct, chains)
            if target is None:
                stay.append(conjunct)
            else:
                moved[id(target)] = moved.get(id(target), ()) + (conjunct,)
        return stay, moved

    def _target(self, conjunct: A.Expr, chains: dict):
        """The innermost negation that sees every variable of ``conjunct`` (None: it filters the match)."""
        mentioned = [(var, chains[var]) for var in A.variables_in(conjunct) if chains.get(var)]
        if not mentioned:
            return None
        deepest_var, deepest = max(mentioned, key=lambda vc: len(vc[1]))
        for var, chain in mentioned:
            if chain is _AMBIGUOUS or deepest is _AMBIGUOUS:
                raise QueryError.at(
                    conjunct,
                    f"variable {var!r} is defined in several negations (OR branches); "
                    "write this condition inside the negation it belongs to",
                    self.text,
                )
            if list(map(id, deepest[: len(chain)])) != list(map(id, chain)):
                raise QueryError.at(
                    conjunct,
                    f"this condition mentions {var!r} and {deepest_var!r}, variables of "
                    "two different negations, so it belongs to neither (docs/language.md §10 "
                    "rule 7); write it inside one of them",
                    self.text,
                )
        return deepest[-1]


_AMBIGUOUS = ("ambiguous",)


def _negation_chains(node: A.Node) -> dict:
    """var -> the Not/Exists nodes (outermost first) enclosing its definition, for every variable defined in
    ``node``; ``()`` for a positive variable, ``_AMBIGUOUS`` for a name defined under two different chains."""
    chains: dict = {}

    def walk(n, chain):
        if isinstance(n, A.Atom) and n.var:
            previous = chains.setdefault(n.var, chain)
            if previous is _AMBIGUOUS or list(map(id, previous)) != list(map(id, chain)):
                chains[n.var] = _AMBIGUOUS
            return
        if isinstance(n, A.Expr):
            return
        inner = chain + (n,) if isinstance(n, (A.Not, A.Exists)) else chain
        for child in n.children():
            walk(child, inner)

    walk(node, ())
    return chains


def _filtered(pattern: A.Pattern, conditions, span) -> A.Pattern:
    condition = A.conjoin(conditions)
    return pattern if condition is None else A.Filter(pattern, condition, span=span)
