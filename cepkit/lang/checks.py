"""Semantic checks run after parsing: unknown variables, duplicate (unsafe) definitions, well-formedness.

Each check raises ``QueryError`` located at the offending node (docs/language.md §2, §8, §10 rules 7, 10, 11).
"""

from __future__ import annotations

from . import ast as A
from ..errors import QueryError, did_you_mean


def definitions(node) -> dict:
    """var -> the Atom defining it, for every variable defined in ``node`` (negated ones included).

    A variable may be defined in several OR branches; anywhere else a second definition is an error
    (rule 10: ``T AS x ; T AS x`` never matches; rule 11: one definition per query).
    """
    if isinstance(node, A.Atom):
        return {node.var: node} if node.var else {}
    if isinstance(node, A.Or):
        merged = {}
        for branch in node.items:
            for var, atom in definitions(branch).items():
                merged.setdefault(var, atom)
        return merged
    merged = {}
    for child in node.children():
        if isinstance(child, A.Expr):
            continue
        for var, atom in definitions(child).items():
            if var in merged:
                first = merged[var]
                where = f" (first defined at line {first.span[0]}, column {first.span[1]})" if first.span else ""
                if _iterated(node, first) or _iterated(node, atom):
                    why = "a name is defined once per query, except across OR branches (docs/language.md §10 rule 11)"
                else:
                    why = "such a pattern can never match (unsafe, docs/language.md §10 rule 10)"
                raise QueryError.at(atom, f"variable {var!r} is defined twice{where}; {why}")
            merged[var] = atom
    return merged


def _iterated(node, atom) -> bool:
    """Whether ``atom`` stands inside a ``+`` below ``node``: CEL calls reusing its name outside that ``+``
    safe, but the language still gives every name one definition."""
    return any(atom is inner for plus in node.find_all(A.Plus) for inner in plus.find_all(A.Atom))


def bound(node) -> frozenset:
    """Variables a pattern binds positively (CEL bound(), with Kleene variables bound as tuples).

    OR binds what every branch binds; negated and existential items bind nothing outside themselves.
    """
    if isinstance(node, A.Atom):
        return frozenset({node.var} if node.var else ())
    if isinstance(node, A.Or):
        sets = [bound(i) for i in node.items]
        return frozenset.intersection(*sets) if sets else frozenset()
    if isinstance(node, (A.Seq, A.And)):
        return frozenset().union(*(bound(i) for i in node.items if isinstance(i, A.Pattern)))
    if isinstance(node, (A.Filter, A.Strategy, A.Plus)):
        return bound(node.pattern)
    return frozenset()


def negated_vars(node) -> frozenset:
    """Variables defined under any Not/Exists inside ``node``: conditions around it may mention them, and
    the scoping pass moves such conjuncts into their negation (rules 7 and 11)."""
    out = set()
    for n in node.find_all(A.Not, A.Exists):
        out |= set(definitions(n.item))
    return frozenset(out)


def check_well_formed(query: A.QueryNode, text=None) -> None:
    """Every condition mentions only variables bound around it ([CEL] §5.1), or negated in its own SEQ/AND; every
    SEQ/AND has a positive item."""
    defined = definitions(query.pattern)

    def check_expr(expr, visible: frozenset):
        for n in expr.walk():
            if isinstance(n, (A.Attr, A.Agg)) and n.var not in visible:
                if n.var not in defined:
                    raise QueryError.at(n, f"unknown variable {n.var!r}{did_you_mean(n.var, defined)}", text)
                raise QueryError.at(
                    n,
                    f"variable {n.var!r} is not bound where this condition stands "
                    "(a filter may use only variables of its own pattern or enclosing ones)",
                    text,
                )

    def visit(node, outer: frozenset):
        if isinstance(node, A.Filter):
            visit(node.pattern, outer)
            check_expr(node.cond, outer | bound(node.pattern) | negated_vars(node.pattern))
        elif isinstance(node, (A.Seq, A.And)):
            if not any(isinstance(item, A.Pattern) for item in node.items):  # NEEL ([LIU] §5.1.1)
                raise QueryError.at(
                    node,
                    f"{'SEQ' if isinstance(node, A.Seq) else 'AND'} needs at least one "
                    "positive item: negations, EXISTS and conditions add no events",
                    text,
                )
            inner = outer | bound(node)  # once per SEQ: per item, a long chain would take quadratic time
            scope = inner | negated_vars(node)
            for item in node.items:
                if isinstance(item, A.Expr):
                    check_expr(item, scope)
                else:
                    visit(item.item if isinstance(item, (A.Not, A.Exists)) else item, inner)
        elif isinstance(node, (A.Not, A.Exists)):
            visit(node.item, outer)
        elif isinstance(node, A.Or):
            for branch in node.items:
                visit(branch, outer)
        elif isinstance(node, (A.Plus, A.Strategy)):
            visit(node.pattern, outer)
        elif isinstance(node, A.Expr):
            check_expr(node, outer)

    visit(query.pattern, frozenset())
    top = bound(query.pattern) | negated_vars(query.pattern)
    if query.where is not None:
        check_expr(query.where, top)
    for var in query.select or ():
        if var not in defined:
            raise QueryError.at(
                query.name_at("select", var),
                f"RETURN/SELECT names unknown variable {var!r}{did_you_mean(var, defined)}",
                text,
            )
    if query.strategy == "PARTITION_STRICT" and not query.partition_by:
        raise QueryError.at(query, "PARTITION_STRICT needs PARTITION BY", text)
    window = query.within
    if window is not None and window.events and (window.amount < 1 or window.amount != int(window.amount)):
        raise QueryError.at(
            window, f"WITHIN n EVENTS counts whole events: n must be an integer >= 1, not {window.amount}", text
        )
