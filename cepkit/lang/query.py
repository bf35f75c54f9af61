"""``cepkit.parse`` and the ``Query`` it returns: the AST plus what engines need to know about it."""

from __future__ import annotations

from dataclasses import fields
from functools import cached_property
from typing import Optional

from . import ast as A
from ..errors import QueryError, did_you_mean
from .checks import bound, check_well_formed, definitions, negated_vars
from .hierarchy import Hierarchy, as_hierarchy, attribute_concepts
from .limits import check_limits
from .parser import parse_tree
from .printer import pretty
from .scope import scoped

# The feature vocabulary engines declare support for (see cepkit.engines()).
FEATURES = (
    "sequence",
    "or",
    "and",
    "kleene",
    "nested_kleene",
    "negation",
    "exists",
    "nested_negation",
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
    "attribute_hierarchy",
    "strategy:STRICT",
    "strategy:PARTITION_STRICT",
    "strategy:NEXT",
    "strategy:LAST",
    "strategy:MAX",
    "strategy:STNM",
    "strategy:ROBUST_STNM",
    "nested_strategy",
)


class Query:
    """A parsed, checked query. Compares equal to another Query with the same tree and hierarchy.

    >>> q = parse("SEQ(A a, !B b, C c) WITHIN 10 s")
    >>> sorted(q.features)
    ['negation', 'sequence', 'time_window']
    """

    def __init__(self, ast: A.QueryNode, text: Optional[str] = None, hierarchy: Optional[Hierarchy] = None):
        self.ast = ast
        self.text = text if text is not None else pretty(ast)  # the text the tree's spans point into
        self.hierarchy = hierarchy

    # The clauses, for engines.
    pattern = property(lambda self: self.ast.pattern)
    where = property(lambda self: self.ast.where)
    within = property(lambda self: self.ast.within)
    partition_by = property(lambda self: self.ast.partition_by)
    consume = property(lambda self: self.ast.consume)
    select = property(lambda self: self.ast.select)

    @property
    def window_seconds(self) -> Optional[float]:
        """The length of a time window (``WITHIN n unit``, or unit-less in the ts's scale) in seconds; None
        for an ``EVENTS`` window or none."""
        within = self.ast.within
        return within.seconds if within is not None and not within.events else None

    @property
    def strategy(self) -> str:
        return self.ast.strategy or "ALL"

    @cached_property
    def variables(self) -> dict:
        """var -> defining Atom, for every variable of the pattern."""
        return definitions(self.ast.pattern)

    @cached_property
    def kleene_variables(self) -> frozenset:
        """Variables defined under a ``+``: bound to a tuple of positions outside their iteration."""
        return frozenset(v for plus in self.ast.pattern.find_all(A.Plus) for v in definitions(plus.pattern))

    @cached_property
    def scoped(self) -> A.Pattern:
        """The pattern with every condition where it is evaluated (WHERE and condition items as filters,
        conjuncts on negated variables inside their negation): see ``cepkit.lang.scope``."""
        return scoped(self.ast, self.text)

    @cached_property
    def features(self) -> dict:
        """feature name -> the first node that uses it (for error carets)."""
        return _features(self)

    def with_strategy(self, strategy: Optional[str]) -> "Query":
        """The same query under another top-level strategy (None or "ALL": every match). It keeps the text the
        user wrote: the tree's spans point into it, so errors show their caret there."""
        name = None if strategy is None else str(strategy).upper()
        name = "NEXT" if name == "NXT" else name
        if name is not None and name not in A.STRATEGIES:
            raise QueryError(
                f"unknown strategy {strategy!r}; the strategies: {', '.join(A.STRATEGIES)}, NXT"
                f"{did_you_mean(name, A.STRATEGIES)}"
            )
        name = None if name == "ALL" else name
        ast = A.QueryNode(**{**_fields(self.ast), "strategy": name}, span=self.ast.span)
        query = Query(ast, self.text, self.hierarchy)
        check_well_formed(ast, query.text)
        return query

    def __eq__(self, other):
        return isinstance(other, Query) and (self.ast, self.hierarchy) == (other.ast, other.hierarchy)

    def __hash__(self):
        return hash(self.ast)

    def __str__(self):
        return pretty(self.ast)

    def __repr__(self):
        return f"Query({pretty(self.ast)!r})"

    def _repr_markdown_(self):
        return f"`{pretty(self.ast)}` — features: {', '.join(sorted(self.features)) or 'none'}"


def _fields(node) -> dict:
    return {f.name: getattr(node, f.name) for f in fields(node) if f.name != "span"}


def parse(text, hierarchy=None) -> Query:
    """Parse and check a query (docs/language.md).

    Parameters
    ----------
    text : str, Query or QueryNode
        The query text; a ``Query`` is returned as it is (with ``hierarchy`` if another is given), an AST
        is printed and parsed again.
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to.

    Returns
    -------
    Query
        The checked query: its AST, text, hierarchy and ``variables``.

    Raises
    ------
    QueryError
        The text does not parse or the query is ill-formed: line, column and caret, and "did you mean"
        where one fits.
    TypeError
        ``text`` is neither text nor a query.

    Examples
    --------
    >>> parse("(T AS x ; H AS y) FILTER x.tmp > 40").variables.keys()
    dict_keys(['x', 'y'])
    """
    if isinstance(text, Query):
        if hierarchy is None or as_hierarchy(hierarchy) == text.hierarchy:
            return text
        return Query(text.ast, text.text, as_hierarchy(hierarchy))
    if isinstance(text, A.QueryNode):
        check_limits(text)  # before printing: the printer recurses
        text = pretty(text)
    if not isinstance(text, str):
        raise TypeError(f"a query is text or a Query, not {type(text).__name__}")
    ast = parse_tree(text)
    query = Query(ast, text, as_hierarchy(hierarchy))
    try:
        definitions(ast.pattern)
        check_well_formed(ast, text)
        query.scoped  # rules 7 and 11: a conjunct on two unrelated negations is an error at parse time
    except QueryError as err:
        if err.text is None and err.line is not None:
            raise QueryError(err.reason, text, err.line, err.column, err.width) from None
        raise
    return query


def _features(query: Query) -> dict:
    found: dict = {}

    def add(name, node):
        found.setdefault(name, node)

    def visit(node, depth_composite: int, in_plus: bool, scope: frozenset):
        if isinstance(node, A.Atom):
            if node.type is None:
                add("any_type", node)
            elif (
                query.hierarchy is not None
                and query.hierarchy.attribute is None
                and len(query.hierarchy.covers(node.type)) > 1
            ):
                add("hierarchy", node)
            return
        if isinstance(node, A.Expr):
            for comparison in attribute_concepts(node, query.hierarchy):
                add("attribute_hierarchy", comparison)
            # Arity is per conjunct: CEL's `x.tmp > 40 and y.hum < 25` is two unary filters ([CEL]).
            for conjunct in A.conjuncts(node):
                add("binary_conditions" if len(set(A.variables_in(conjunct))) > 1 else "unary_conditions", conjunct)
            mentioned = set(A.variables_in(node))
            if mentioned - scope:
                add("correlated_filters", node)
            for n in node.walk():
                if isinstance(n, A.Prev) or (isinstance(n, A.Attr) and n.index is not None):
                    add("kleene_conditions", n)
                elif isinstance(n, A.Agg):
                    add("aggregates", n)
            return
        composite = isinstance(node, (A.Seq, A.And, A.Or))
        if composite and depth_composite > 0:
            add("nesting", node)
        if isinstance(node, A.Seq) and sum(isinstance(i, A.Pattern) for i in node.items) > 1:
            add("sequence", node)
        elif isinstance(node, A.Or):
            add("or", node)
        elif isinstance(node, A.And):
            add("and", node)
        elif isinstance(node, A.Plus):
            add("nested_kleene" if in_plus else "kleene", node)
            if in_plus:
                add("kleene", node)
        elif isinstance(node, A.Strategy):
            add("nested_strategy", node)
        elif isinstance(node, (A.Not, A.Exists)):
            add("negation" if isinstance(node, A.Not) else "exists", node)
            if not isinstance(node.item, A.Atom):
                add("nested_negation", node)
        if isinstance(node, (A.Seq, A.And)):
            inner_scope = bound(node)
            for item in node.items:
                if isinstance(item, A.Expr):
                    add("condition_items", item)
                    visit(item, depth_composite + 1, in_plus, inner_scope | negated_vars(node))
                else:
                    visit(item, depth_composite + 1, in_plus, inner_scope)
            return
        if isinstance(node, A.Filter):
            visit(node.pattern, depth_composite, in_plus, scope)
            visit(node.cond, depth_composite, in_plus, bound(node.pattern) | negated_vars(node.pattern))
            return
        for child in node.children():
            visit(child, depth_composite + (1 if composite else 0), in_plus or isinstance(node, A.Plus), scope)

    ast = query.ast
    visit(ast.pattern, 0, False, frozenset())
    if ast.where is not None:
        visit(ast.where, 0, False, bound(ast.pattern) | negated_vars(ast.pattern))
    if ast.within is not None:
        add("event_window" if ast.within.events else "time_window", ast.within)
    if ast.partition_by:
        add("partition", ast)
    if ast.consume and ast.consume != "NONE":
        add("consume", ast)
    if ast.select is not None:
        add("projection", ast)
    if ast.strategy and ast.strategy != "ALL":
        add("strategy:" + ast.strategy, ast)
    for node in ast.pattern.find_all(A.Strategy):
        if node.name != "ALL":
            add("strategy:" + node.name, node)
    return found
