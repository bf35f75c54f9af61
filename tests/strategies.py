"""Hypothesis strategies shared by the engines' differential tests: random streams and random queries of
each engine's fragment, printed as text so tests go through the public API exactly as users do.

Every engine is checked the same way (``assert_agrees``): same query, same events, same ``positions()``
and bindings as the ``reference`` engine.
"""

from __future__ import annotations

import functools
import itertools

from hypothesis import strategies as st

import cepkit
from cepkit.lang import ast as A
from cepkit.lang.printer import is_spelled_as_item, pretty

TYPES = ("A", "B", "C")


# ----------------------------------------------------------------------------- streams
@st.composite
def streams(draw, types=TYPES, min_size=0, max_size=10, ids=3, values=6, ties=True, null_one_in=0, late_one_in=0):
    """In-order event dicts with attributes ``v`` (0..values-1) and ``id`` (0..ids-1); ts non-decreasing
    (equal ts allowed when ``ties``), integer seconds. ``null_one_in``: about one ``v`` or ``id`` in that
    many is None (0: none); ``late_one_in``: about one event in that many has a ts earlier than the one
    before (0: none)."""
    n = draw(st.integers(min_size, max_size))
    ts, out = 0, []
    for _ in range(n):
        ts += draw(st.integers(0 if ties else 1, 3))
        event = {
            "type": draw(st.sampled_from(types)),
            "ts": ts,
            "v": draw(st.integers(0, values - 1)),
            "id": draw(st.integers(0, ids - 1)),
        }
        for name in ("v", "id") if null_one_in else ():
            if draw(st.integers(0, null_one_in - 1)) == 0:
                event[name] = None
        if late_one_in and draw(st.integers(0, late_one_in - 1)) == 0:
            event["ts"] = ts - draw(st.integers(1, 5))
        out.append(event)
    return out


def shuffled_arrivals(events, draw, max_delay=None):
    """A disordered arrival order of in-order ``events``: each event delayed by up to ``max_delay`` places
    (None: any permutation)."""
    keys = [
        i + (draw(st.integers(0, max_delay)) if max_delay is not None else draw(st.integers(0, 10**6)))
        for i in range(len(events))
    ]
    return [e for _, e in sorted(zip(keys, events), key=lambda p: p[0])]


# ----------------------------------------------------------------------------- conditions
def _attr(var):
    return st.builds(A.Attr, st.just(var), st.sampled_from(["v", "id"]))


@st.composite
def unary_conditions(draw, var):
    """A condition on one variable: comparisons with constants, IN, and/or/not of those."""
    atom = st.one_of(
        st.builds(
            A.Compare,
            st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
            _attr(var),
            st.builds(A.Literal, st.integers(0, 5)),
        ),
        st.builds(
            A.In, _attr(var), st.lists(st.builds(A.Literal, st.integers(0, 5)), min_size=1, max_size=3).map(tuple)
        ),
    )
    cond = draw(
        st.recursive(
            atom,
            lambda inner: st.one_of(
                st.builds(A.BoolOp, st.sampled_from(["and", "or"]), st.lists(inner, min_size=2, max_size=2).map(tuple)),
                st.builds(A.BoolNot, inner),
            ),
            max_leaves=3,
        )
    )
    return cond


def binary_condition(draw, left, right):
    op = draw(st.sampled_from(["=", "!=", "<", ">"]))
    attr = draw(st.sampled_from(["v", "id"]))
    return A.Compare(op, A.Attr(left, attr), A.Attr(right, attr))


# ----------------------------------------------------------------------------- CEL unary fragment
class _Names:
    def __init__(self):
        self._counter = itertools.count()

    def fresh(self):
        return f"x{next(self._counter)}"


@st.composite
def unary_patterns(draw, types=TYPES, max_depth=3, kleene=True, allow_or=True):
    """Random CEL patterns with unary filters only: atoms (optionally filtered), `;`, OR, `+` at any depth.
    Every variable is defined once (rule 11), so the formula is safe."""
    names = _Names()

    def build(depth):
        kinds = ["atom"]
        if depth < max_depth:
            kinds += ["seq", "seq"] + (["or"] if allow_or else []) + (["plus"] if kleene else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "atom":
            var = names.fresh()
            atom = A.Atom(draw(st.sampled_from(types)), var)
            if draw(st.booleans()):
                return A.Filter(atom, draw(unary_conditions(var)))
            return atom
        if kind == "seq":
            return A.Seq(tuple(build(depth + 1) for _ in range(draw(st.integers(2, 3)))))
        if kind == "or":
            return A.Or(tuple(build(depth + 1) for _ in range(2)))
        return A.Plus(build(depth + 1))

    return build(0)


@st.composite
def unary_queries(
    draw, types=TYPES, strategies=("ALL",), windows=True, partition=True, max_depth=3, kleene=True, allow_or=True
):
    """Query text in the CEL unary fragment, with optional window, PARTITION BY id and strategy."""
    pattern = draw(unary_patterns(types, max_depth, kleene, allow_or))
    within = None
    if windows and draw(st.booleans()):
        within = A.Window(draw(st.integers(1, 8)), draw(st.sampled_from([None, "s", "EVENTS"])))
    part = ("id",) if partition and draw(st.booleans()) else ()
    strategy = draw(st.sampled_from(strategies))
    if strategy == "PARTITION_STRICT" and not part:
        strategy = "STRICT"
    return pretty(
        A.QueryNode(pattern=pattern, within=within, partition_by=part, strategy=None if strategy == "ALL" else strategy)
    )


# ----------------------------------------------------------------------------- flat SEQ with negation (SASE)
@st.composite
def flat_seq_queries(
    draw,
    types=TYPES,
    max_len=4,
    negation=True,
    joins=True,
    strategies=("ALL",),
    windows=True,
    partition=True,
    exists=False,
):
    """``SEQ(T1 x0, !T2 x1, T3 x2, ...) WHERE ...``: positive atoms with negations anywhere (leading, middle,
    trailing; never two in a row), unary and binary (join) predicates, optional window, partition, strategy;
    with ``exists``, a negation may be an ``EXISTS`` item instead."""
    n = draw(st.integers(1, max_len))
    items, positives, negated = [], [], []
    for i in range(n):
        var = f"x{i}"
        prev_negated = bool(items) and isinstance(items[-1], (A.Not, A.Exists))
        if negation and not prev_negated and draw(st.integers(0, 3)) == 0:
            guard = A.Exists if exists and draw(st.booleans()) else A.Not
            items.append(guard(A.Atom(draw(st.sampled_from(types)), var)))
            negated.append(var)
        else:
            items.append(A.Atom(draw(st.sampled_from(types)), var))
            positives.append(var)
    if not positives:
        var = f"x{n}"
        items.append(A.Atom(draw(st.sampled_from(types)), var))
        positives.append(var)
    conds = []
    for var in positives + negated:
        if draw(st.integers(0, 2)) == 0:
            conds.append(draw(unary_conditions(var)))
    if joins and len(positives) >= 2:
        for _ in range(draw(st.integers(0, 2))):
            a, b = draw(st.permutations(positives))[:2]
            conds.append(binary_condition(draw, a, b))
    if joins:  # up to two per negation, so equalities may chain positives through a negated variable
        for var in negated:
            for _ in range(draw(st.integers(0, 2))):
                conds.append(binary_condition(draw, var, draw(st.sampled_from(positives))))
    has_edge_negation = isinstance(items[0], (A.Not, A.Exists)) or isinstance(items[-1], (A.Not, A.Exists))
    within = None
    if (windows and draw(st.booleans())) or (has_edge_negation and draw(st.booleans())):
        within = A.Window(draw(st.integers(1, 8)), draw(st.sampled_from([None, "EVENTS"])))
    part = ("id",) if partition and draw(st.booleans()) else ()
    strategy = draw(st.sampled_from(strategies))
    if strategy == "PARTITION_STRICT" and not part:
        strategy = "STRICT"
    return pretty(
        A.QueryNode(
            pattern=A.Seq(tuple(items)),
            where=A.conjoin(conds),
            within=within,
            partition_by=part,
            strategy=None if strategy == "ALL" else strategy,
        )
    )


# ----------------------------------------------------------------------------- SES set patterns
@st.composite
def set_queries(draw, types=("C", "P", "D", "B"), max_sets=3, max_set_size=3, strategies=("ALL",)):
    """``PATTERN SEQ({...}, {...}) WHERE ... WITHIN w`` with Kleene variables inside sets, constant and pairwise
    conditions and ``prev``."""
    names = _Names()
    sets, kleene, plain = [], [], []
    for _ in range(draw(st.integers(1, max_sets))):
        members = []
        for _ in range(draw(st.integers(1, max_set_size))):
            var = names.fresh()
            atom = A.Atom(draw(st.sampled_from(types)), var)
            if draw(st.integers(0, 3)) == 0:
                members.append(A.Plus(atom))
                kleene.append(var)
            else:
                members.append(atom)
                plain.append(var)
        sets.append(A.And(tuple(members)))
    variables = plain + kleene
    conds = []
    for var in variables:
        if draw(st.integers(0, 2)) == 0:
            conds.append(draw(unary_conditions(var)))
    if len(variables) >= 2:
        for _ in range(draw(st.integers(0, 2))):
            a, b = draw(st.permutations(variables))[:2]
            conds.append(binary_condition(draw, a, b))
    for var in kleene:
        if draw(st.integers(0, 2)) == 0:
            conds.append(
                A.Compare(draw(st.sampled_from(["<", ">", "<=", ">="])), A.Prev(A.Attr(var, "v")), A.Attr(var, "v"))
            )
    within = A.Window(draw(st.integers(2, 10)), None)
    strategy = draw(st.sampled_from(strategies))
    return pretty(
        A.QueryNode(
            pattern=A.Seq(tuple(sets)),
            where=A.conjoin(conds),
            within=within,
            strategy=None if strategy == "ALL" else strategy,
        )
    )


# ----------------------------------------------------------------------------- the differential check
def assert_agrees(query: str, events, engine: str, **options):
    """``engine`` gives the reference's matches (positions and bindings) for ``query`` over ``events``."""
    expected = cepkit.match(query, events, engine="reference")
    got = cepkit.match(query, events, engine=engine, **options)
    assert got.engine == engine
    assert got.positions() == expected.positions(), (query, events)
    assert [m.key for m in got] == [m.key for m in expected], (query, events)
    return got


def assert_matcher_agrees(query: str, events, engine: str, **options):
    """A ``Matcher`` pushed every event of ``events``, then closed, reports the reference's matches."""
    matcher = cepkit.Matcher(query, engine=engine, **options)
    reported = [m.key for e in events for m in matcher.push(e)] + [m.key for m in matcher.close()]
    assert sorted(reported) == sorted(m.key for m in cepkit.match(query, events, engine="reference")), (query, events)


# ----------------------------------------------------------------------------- any syntax tree (tests/lang)
# Every node kind in every place the grammar allows, with names that are never keywords. The trees are
# syntactic: variables need not be defined (round-trip tests use ``cepkit.lang.parser.parse_tree``).
SYNTAX_TYPES = ("A", "Stock", "T_1", "Structure Fire", "check-in", 'say "hi" \\ bye')  # (quoted: docs/language.md §2)
SYNTAX_VARS = ("a", "b2", "_x")
SYNTAX_ATTRS = ("v", "price", "PID")
SYNTAX_UNITS = (
    "ms",
    "s",
    "sec",
    "secs",
    "second",
    "seconds",
    "min",
    "mins",
    "minute",
    "minutes",
    "h",
    "hour",
    "hours",
    "d",
    "day",
    "days",
)
PATTERN_STRATEGIES = ("ALL", "NEXT", "LAST", "MAX", "STRICT", "STNM", "ROBUST_STNM", "PARTITION_STRICT")

_numbers = st.one_of(st.integers(-(10**20), 10**20), st.floats(allow_nan=False, allow_infinity=False))


def _attr_nodes():
    index = st.one_of(st.none(), st.integers(0, 20), st.sampled_from(["i", "i-1", "first", "last"]))
    return st.builds(A.Attr, st.sampled_from(SYNTAX_VARS), st.sampled_from(SYNTAX_ATTRS), index)


def _condition_leaves():
    return st.one_of(
        st.builds(A.Literal, st.one_of(_numbers, st.text(max_size=6), st.booleans(), st.none())),
        # a duration is finite in seconds (cepkit.lang.limits)
        st.builds(
            A.Duration,
            st.one_of(st.integers(-(10**20), 10**20), st.floats(-1e300, 1e300)),
            st.sampled_from(SYNTAX_UNITS),
        ),
        _attr_nodes(),
        st.builds(A.Agg, st.just("count"), st.sampled_from(SYNTAX_VARS), st.none()),
        st.builds(
            A.Agg,
            st.sampled_from(["sum", "avg", "min", "max"]),
            st.sampled_from(SYNTAX_VARS),
            st.sampled_from(SYNTAX_ATTRS),
        ),
        st.builds(A.Prev, st.builds(A.Attr, st.sampled_from(SYNTAX_VARS), st.sampled_from(SYNTAX_ATTRS))),
    )


def _foldable(node) -> bool:
    """The parser folds ``-5`` and ``-5 min`` into the literal: such a Neg is not a tree it builds."""
    return isinstance(node, A.Duration) or (
        isinstance(node, A.Literal) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    )


@functools.lru_cache(maxsize=None)
def condition_trees(max_leaves: int = 8):
    """Any condition: literals of every kind, durations, attributes (indexed, first/last), aggregates, prev,
    arithmetic, unary minus, comparisons, IN, and/or (two or more operands), not."""

    def extend(inner):
        return st.one_of(
            st.builds(A.Arith, st.sampled_from("+-*/"), inner, inner),
            st.builds(A.Neg, inner.filter(lambda n: not _foldable(n))),
            st.builds(A.Compare, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), inner, inner),
            st.builds(A.In, inner, st.lists(inner, min_size=1, max_size=3).map(tuple)),
            st.builds(A.BoolOp, st.sampled_from(["and", "or"]), st.lists(inner, min_size=2, max_size=3).map(tuple)),
            st.builds(A.BoolNot, inner),
        )

    return st.recursive(_condition_leaves(), extend, max_leaves=max_leaves)


@functools.lru_cache(maxsize=None)
def pattern_trees(max_leaves: int = 8):
    """Any pattern: atoms (typed, ANY, with or without a variable), SEQ/`;` (items may be negations,
    EXISTS and conditions), AND/`{}`, OR (two or more), FILTER, `+` (nested too), STRATEGY(...)."""
    atoms = st.builds(
        A.Atom, st.one_of(st.none(), st.sampled_from(SYNTAX_TYPES)), st.one_of(st.none(), st.sampled_from(SYNTAX_VARS))
    )

    def extend(inner):
        item_conds = condition_trees(3).filter(is_spelled_as_item)  # a string alone there is a type name
        negatable = st.one_of(inner, item_conds)
        item = st.one_of(
            inner,
            inner,
            item_conds,
            st.builds(A.Not, negatable),
            st.builds(A.Exists, negatable),
            st.builds(A.Not, st.builds(A.Not, inner)),
        )
        items = st.lists(item, min_size=1, max_size=3).map(tuple)
        return st.one_of(
            st.builds(A.Seq, items),
            st.builds(A.Seq, st.lists(inner, min_size=2, max_size=3).map(tuple)),
            st.builds(A.And, items),
            st.builds(A.Or, st.lists(inner, min_size=2, max_size=3).map(tuple)),
            st.builds(A.Filter, inner, condition_trees(4)),
            st.builds(A.Plus, inner),
            st.builds(A.Strategy, st.sampled_from(PATTERN_STRATEGIES), inner),
        )

    return st.recursive(atoms, extend, max_leaves=max_leaves)


@st.composite
def query_trees(draw, max_leaves: int = 8):
    """A whole ``QueryNode``: a pattern and any clauses, in the plain, PATTERN/RETURN or CORE-style form."""
    names = st.sampled_from(SYNTAX_VARS)
    window = st.one_of(
        st.none(),
        st.builds(A.Window, st.integers(0, 10**6), st.sampled_from((None, "EVENTS") + SYNTAX_UNITS)),
        st.builds(A.Window, st.floats(0, 1e6, allow_nan=False), st.sampled_from(SYNTAX_UNITS)),
    )
    core_style = draw(st.booleans())
    return A.QueryNode(
        pattern=draw(pattern_trees(max_leaves)),
        where=draw(st.one_of(st.none(), condition_trees(4))),
        within=draw(window),
        partition_by=tuple(draw(st.lists(st.sampled_from(SYNTAX_ATTRS), max_size=2))),
        consume=draw(st.sampled_from([None, "ANY", "PARTITION", "NONE"])),
        select=draw(st.one_of(st.none(), st.lists(names, min_size=1, max_size=3).map(tuple))),
        strategy=draw(st.one_of(st.none(), st.sampled_from(PATTERN_STRATEGIES))),
        source=draw(st.sampled_from(["S", "Stream1"])) if core_style else None,
        core_style=core_style,
        limit=draw(st.one_of(st.none(), st.integers(1, 10**6))),
    )


# ----------------------------------------------------------------------------- SES set patterns, every clause
@st.composite
def set_query_variants(draw, strategies=("ALL",), **kwargs):
    """``set_queries`` with the rest of the SES engine's fragment: singleton sets written as bare atoms, any
    window (n in the ts's scale, n EVENTS, none), PARTITION BY id, and a projection."""
    query = cepkit.parse(draw(set_queries(strategies=strategies, **kwargs))).ast
    sets = query.pattern.items
    pattern = A.Seq(tuple(s.items[0] if len(s.items) == 1 and draw(st.booleans()) else s for s in sets))
    within = draw(st.sampled_from([query.within, None, A.Window(draw(st.integers(1, 6)), "EVENTS")]))
    variables = sorted(v for s in sets for item in s.items for v in [getattr(item, "var", None) or item.pattern.var])
    select = None
    if draw(st.integers(0, 3)) == 0:
        select = tuple(draw(st.lists(st.sampled_from(variables), min_size=1, max_size=2, unique=True)))
    return pretty(
        A.QueryNode(
            pattern=pattern,
            where=query.where,
            within=within,
            strategy=query.strategy,
            partition_by=("id",) if draw(st.booleans()) else (),
            select=select,
        )
    )


# ----------------------------------------------------------------------------- CEL unary fragment, every clause
@st.composite
def cel_queries(
    draw, types=TYPES, strategies=("ALL", "STRICT", "PARTITION_STRICT", "NEXT", "LAST", "MAX"), max_depth=3
):
    """``unary_patterns`` with the rest of the automaton engine's fragment ([CEL]): ANY atoms, STRICT
    sub-patterns, a conditional filter on an enclosing variable (CEL φ5, Theorem 2's pop-up), a WHERE
    mixing unary comparisons on several variables with and/or (CEL's filter sugar), ``x.id = y.id`` under
    PARTITION BY id, a window, CONSUME BY, RETURN, and a top-level strategy."""
    from cepkit.lang.checks import bound

    pattern = draw(unary_patterns(types, max_depth))
    if draw(st.integers(0, 3)) == 0:  # some atom becomes ANY
        atoms = [a for a in pattern.find_all(A.Atom)]
        target = draw(st.sampled_from(atoms))
        pattern = pattern.transform(lambda n: A.Atom(None, n.var) if n is target else n)
    if draw(st.integers(0, 4)) == 0:  # a STRICT sub-pattern
        inner = [n for n in pattern.find_all(A.Seq, A.Plus, A.Or)]
        if inner:
            target = draw(st.sampled_from(inner))
            pattern = pattern.transform(lambda n: A.Strategy("STRICT", n) if n is target else n)
    if draw(st.integers(0, 2)) == 0:  # an enclosing variable filtered deep inside (φ5)
        atoms = [a for a in pattern.find_all(A.Atom)]
        target = draw(st.sampled_from(atoms))
        cond = draw(unary_conditions("c"))
        pattern = A.Seq(
            (
                A.Atom(draw(st.sampled_from(types)), "c"),
                pattern.transform(lambda n: A.Filter(n, cond) if n is target else n),
            )
        )
    top = sorted(bound(pattern))
    partition = ("id",) if draw(st.booleans()) else ()
    where = None
    if top and draw(st.booleans()):
        comparisons = [
            A.Compare(
                draw(st.sampled_from(["=", "<", ">="])),
                A.Attr(var, draw(st.sampled_from(["v", "id"]))),
                A.Literal(draw(st.integers(0, 5))),
            )
            for var in draw(st.lists(st.sampled_from(top), min_size=1, max_size=3))
        ]
        where = (
            comparisons[0]
            if len(comparisons) == 1
            else A.BoolOp(draw(st.sampled_from(["and", "or"])), tuple(comparisons))
        )
        if partition and len(top) >= 2 and draw(st.booleans()):
            a, b = draw(st.permutations(top))[:2]
            where = A.BoolOp("and", (where, A.Compare("=", A.Attr(a, "id"), A.Attr(b, "id"))))
    within = None
    if draw(st.booleans()):
        within = A.Window(draw(st.integers(1, 8)), draw(st.sampled_from([None, "s", "EVENTS"])))
    variables = sorted({a.var for a in pattern.find_all(A.Atom) if a.var})
    select = None
    if draw(st.integers(0, 3)) == 0:
        select = tuple(draw(st.lists(st.sampled_from(variables), min_size=1, max_size=2, unique=True)))
    strategy = draw(st.sampled_from(strategies))
    if strategy == "PARTITION_STRICT" and not partition:
        strategy = "STRICT"
    return pretty(
        A.QueryNode(
            pattern=pattern,
            where=where,
            within=within,
            partition_by=partition,
            consume=draw(st.sampled_from([None, "ANY", "PARTITION"])),
            select=select,
            strategy=None if strategy == "ALL" else strategy,
        )
    )


def _renamed(pattern, prefix):
    """``pattern`` with every variable prefixed (patterns drawn apart reuse the same names)."""
    return pattern.transform(
        lambda n: (
            A.Atom(n.type, prefix + n.var)
            if isinstance(n, A.Atom) and n.var
            else A.Attr(prefix + n.var, n.attr, n.index)
            if isinstance(n, A.Attr)
            else n
        )
    )


@st.composite
def nested_selection_queries(draw, types=TYPES):
    """A NEXT/LAST/MAX(φ) inside a larger pattern (docs/language.md §5: "a strategy can also wrap a
    sub-pattern"): φ and its surroundings are random unary patterns with distinct variables, optionally
    a window, PARTITION BY id, a WHERE on a variable of φ and a top-level STRICT."""
    inner = draw(unary_patterns(types, max_depth=2))
    outer = _renamed(draw(unary_patterns(types, max_depth=2)), "y")
    chosen = A.Strategy(draw(st.sampled_from(["NEXT", "LAST", "MAX"])), inner)
    shape = draw(st.sampled_from(["before", "after", "or"]))
    if shape == "before":
        pattern = A.Seq((chosen, outer))
    elif shape == "after":
        pattern = A.Seq((outer, chosen))
    else:
        pattern = A.Or((A.Seq((chosen, A.Atom(draw(st.sampled_from(types)), "z"))), outer))
    from cepkit.lang.checks import bound

    where = None
    if shape != "or" and bound(inner) and draw(st.booleans()):
        var = draw(st.sampled_from(sorted(bound(inner))))
        where = A.Compare(">", A.Attr(var, "v"), A.Literal(draw(st.integers(0, 4))))
    within = A.Window(draw(st.integers(1, 8)), draw(st.sampled_from([None, "EVENTS"]))) if draw(st.booleans()) else None
    return pretty(
        A.QueryNode(
            pattern=pattern,
            where=where,
            within=within,
            partition_by=("id",) if draw(st.booleans()) else (),
            strategy="STRICT" if draw(st.integers(0, 4)) == 0 else None,
        )
    )


@st.composite
def selection_everywhere_queries(draw, types=TYPES):
    """NEXT/LAST(φ) (MAX now and then) wherever a pattern may hold one: before, after or beside other
    items, inside ``+``, around another selection, with a condition inside φ on a variable outside it, a
    WHERE on φ's variables, under every top-level strategy, CONSUME BY and PARTITION BY; a window one time
    in five (where [CEL] Theorem 4's closure does not apply and the filtering plan or a refusal does)."""
    names = st.sampled_from(["NEXT", "NEXT", "LAST", "LAST", "MAX"])
    inner = draw(unary_patterns(types, max_depth=2))
    if draw(st.integers(0, 3)) == 0:  # a selection inside φ
        deeper = A.Strategy(draw(names), _renamed(draw(unary_patterns(types, max_depth=1)), "z"))
        inner = A.Seq((deeper, inner) if draw(st.booleans()) else (inner, deeper))
    outer = _renamed(draw(unary_patterns(types, max_depth=2, kleene=False)), "y")
    from cepkit.lang.checks import bound

    if draw(st.integers(0, 3)) == 0 and bound(outer):  # a condition inside φ on an enclosing variable
        var = draw(st.sampled_from(sorted(bound(outer))))
        inner = A.Filter(inner, A.Compare(">", A.Attr(var, "v"), A.Literal(draw(st.integers(0, 4)))))
    chosen = A.Strategy(draw(names), inner)
    shape = draw(st.sampled_from(["before", "after", "or", "plus", "plus inside"]))
    if shape == "before":
        pattern = A.Seq((chosen, outer))
    elif shape == "after":
        pattern = A.Seq((outer, chosen))
    elif shape == "or":
        pattern = A.Or((A.Seq((chosen, A.Atom(draw(st.sampled_from(types)), "w"))), outer))
    elif shape == "plus":
        pattern = A.Plus(A.Seq((chosen, A.Atom(draw(st.sampled_from(types)), "w"))))
    else:
        pattern = A.Seq((outer, A.Plus(chosen)))
    if any(isinstance(n, A.Attr) and n.var.startswith("y") for n in inner.walk()) and shape not in ("before", "after"):
        pattern = A.Seq((outer, chosen))  # the enclosing variable must be bound around φ
    where = None
    if shape in ("before", "after") and bound(inner) and draw(st.booleans()):
        var = draw(st.sampled_from(sorted(bound(inner))))
        where = A.Compare(">", A.Attr(var, "v"), A.Literal(draw(st.integers(0, 4))))
    within = A.Window(draw(st.integers(1, 8)), draw(st.sampled_from([None, "EVENTS"])))
    return pretty(
        A.QueryNode(
            pattern=pattern,
            where=where,
            within=within if draw(st.integers(0, 4)) == 0 else None,
            partition_by=("id",) if draw(st.booleans()) else (),
            consume=draw(st.sampled_from([None, None, "ANY", "PARTITION"])),
            strategy=draw(st.sampled_from([None, None, "NEXT", "LAST", "MAX", "STRICT"])),
        )
    )


# ----------------------------------------------------------------------------- Kleene with complex predicates (RCEP)
def _plain_value(draw, var):
    """``x.v``, ``x.v * 2`` or ``x.v + 1``: one side of a join, read from one event."""
    attr = A.Attr(var, draw(st.sampled_from(["v", "v", "id"])))
    shape = draw(st.integers(0, 3))
    if shape == 1:
        return A.Arith("*", attr, A.Literal(2))
    if shape == 2:
        return A.Arith("+", attr, A.Literal(1))
    return attr


@st.composite
def kleene_queries(
    draw, types=TYPES, max_len=3, strategies=("ALL", "STRICT", "PARTITION_STRICT", "NEXT", "LAST", "MAX")
):
    """``SEQ(T x0, T+ x1, ...)`` with RCEP's complex predicates ([RCEP] §3.4; docs/language.md §3): constant
    tests, joins ``f(x) φ g(y)`` between any two variables (∀ pairs), chains ``prev(b.v) φ b.v`` /
    ``b[i].v φ b[i-1].v``, FIRST-style ``first(b)``/``last(b)``/``b[1]``, aggregates, ``or`` over a Kleene
    variable, a condition inside an iteration (per event, possibly correlated); a window (mostly), PARTITION
    BY id, CONSUME BY, RETURN and a strategy."""
    n = draw(st.integers(1, max_len))
    items, kleene, names = [], [], [f"x{i}" for i in range(n)]
    for var in names:
        atom = A.Atom(draw(st.sampled_from(types)) if draw(st.integers(0, 7)) else None, var)
        if draw(st.booleans()):
            kleene.append(var)
            if draw(st.integers(0, 4)) == 0:  # a condition per iteration, maybe correlated with another var
                other = draw(st.sampled_from(names))
                inner = A.BoolOp(
                    "or",
                    (
                        A.Compare(draw(st.sampled_from(["<", ">="])), A.Attr(var, "v"), A.Attr(other, "v")),
                        A.Compare("=", A.Attr(var, "id"), A.Literal(0)),
                    ),
                )
                atom = A.Filter(atom, inner if other != var or draw(st.booleans()) else inner.args[0])
            items.append(A.Plus(atom))
        else:
            items.append(atom)
    conds = []
    for var in names:
        if draw(st.integers(0, 2)) == 0:
            conds.append(draw(unary_conditions(var)))
    for _ in range(draw(st.integers(0, 2)) if n >= 2 else 0):
        a, b = draw(st.permutations(names))[:2]
        conds.append(
            A.Compare(
                draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="])), _plain_value(draw, a), _plain_value(draw, b)
            )
        )
    for var in kleene:
        chain = draw(st.integers(0, 2))
        op = draw(st.sampled_from(["<", "<=", ">", ">=", "=", "!="]))
        if chain == 0:
            conds.append(A.Compare(op, A.Prev(A.Attr(var, "v")), A.Attr(var, "v")))
        elif chain == 1:
            conds.append(A.Compare(op, A.Attr(var, "v", "i"), A.Attr(var, "v", "i-1")))
        kind = draw(st.integers(0, 5))
        op = draw(st.sampled_from(["<", "<=", ">", ">=", "="]))
        if kind in (0, 1):  # FIRST-style: one event of var against another variable (or var itself)
            index = draw(st.sampled_from(["first", "last", "first", "last", 1, 2]))
            other = A.Attr(draw(st.sampled_from(names)), draw(st.sampled_from(["v", "v", "id"])))
            picked = A.Attr(var, "v", index)
            conds.append(A.Compare(op, picked, other) if draw(st.booleans()) else A.Compare(op, other, picked))
        elif kind == 4:
            func = draw(st.sampled_from(["count", "sum", "avg", "min", "max"]))
            conds.append(
                A.Compare(op, A.Agg(func, var, None if func == "count" else "v"), A.Literal(draw(st.integers(1, 6))))
            )
        elif kind == 5:
            conds.append(
                A.BoolOp(
                    "or",
                    (A.Compare(">", A.Attr(var, "v"), A.Literal(2)), A.Compare("<", A.Attr(var, "v"), A.Literal(2))),
                )
            )
    within = None
    if draw(st.integers(0, 4)):
        within = A.Window(draw(st.integers(1, 8)), draw(st.sampled_from([None, "s", "EVENTS"])))
    part = ("id",) if draw(st.integers(0, 2)) == 0 else ()
    strategy = draw(st.sampled_from(strategies))
    if strategy == "PARTITION_STRICT" and not part:
        strategy = "STRICT"
    select = None
    if n >= 2 and draw(st.integers(0, 4)) == 0:
        select = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=n - 1, unique=True)))
    return pretty(
        A.QueryNode(
            pattern=A.Seq(tuple(items)),
            where=A.conjoin(conds),
            within=within,
            partition_by=part,
            consume=draw(st.sampled_from([None, None, "ANY", "PARTITION"])),
            select=select,
            strategy=None if strategy == "ALL" else strategy,
        )
    )


# ----------------------------------------------------------------------------- NEEL nested queries
@st.composite
def nested_queries(draw, types=TYPES, max_depth=3, correlated=True, windows=True, partition=True):
    """NEEL queries ([LIU] §5.1.1): SEQ / AND / OR nested at any depth, ``!`` and EXISTS over atoms or
    composites (negations inside negations too), unary filters, condition items relating a negated variable
    to a positive one of the same SEQ/AND (scoped into the negation) or two positive ones, and optionally a
    window (seconds or EVENTS) and PARTITION BY id. Every SEQ/AND keeps a positive item; names are unique."""
    names = _Names()

    def atom():
        var = names.fresh()
        node = A.Atom(draw(st.sampled_from(types)), var)
        return A.Filter(node, draw(unary_conditions(var))) if draw(st.integers(0, 3)) == 0 else node

    def pattern(depth):
        kind = draw(st.sampled_from(["atom", "atom", "seq", "seq", "and", "or"] if depth < max_depth else ["atom"]))
        if kind == "atom":
            return atom()
        if kind == "or":
            return A.Or(tuple(pattern(depth + 1) for _ in range(2)))
        items, positives, negated = [], [], []
        for _ in range(draw(st.integers(1, 3))):
            role = draw(st.sampled_from(["positive", "positive", "not", "exists"]))
            inner = pattern(depth + 1)
            if role == "positive":
                items.append(inner)
                positives.append(inner)
            else:
                items.append(A.Not(inner) if role == "not" else A.Exists(inner))
                negated.append(inner)
        if not positives:
            inner = pattern(depth + 1)
            items.insert(draw(st.integers(0, len(items))), inner)
            positives.append(inner)
        if correlated and draw(st.integers(0, 2)) == 0:
            left = sorted(bound(draw(st.sampled_from(positives))))
            right = sorted(bound(draw(st.sampled_from(negated + positives))))  # not OR-branch-only names
            if left and right:
                items.append(binary_condition(draw, draw(st.sampled_from(right)), draw(st.sampled_from(left))))
        return (A.Seq if kind == "seq" else A.And)(tuple(items))

    from cepkit.lang.checks import bound

    root = pattern(0)
    within = None
    if windows and draw(st.booleans()):
        within = A.Window(draw(st.integers(1, 6)), draw(st.sampled_from([None, "EVENTS"])))
    part = ("id",) if partition and draw(st.integers(0, 3)) == 0 else ()
    return pretty(A.QueryNode(pattern=root, within=within, partition_by=part))


@st.composite
def shared_nested_queries(draw, types=TYPES, correlated=True, windows=True, partition=True):
    """NEEL queries the nested engine can run shared ([LIU] §5.3): an OR of one or two SEQs of atoms (unary
    filters sometimes) with ``!``/EXISTS items anywhere (edges too) over an atom, a SEQ of atoms with
    ``!``/EXISTS between them (nested twice at most), an AND or an OR of atoms; sometimes a binary
    condition between two positive atoms of the SEQ, or a negated atom's ``id`` equal to a positive one's
    (a correlated sub-query, decorrelated per value)."""
    names = _Names()

    def atom(filtered=True):
        var = names.fresh()
        node = A.Atom(draw(st.sampled_from(types)), var)
        return A.Filter(node, draw(unary_conditions(var))) if filtered and draw(st.integers(0, 3)) == 0 else node

    def boolean(inner):
        return A.Not(inner) if draw(st.booleans()) else A.Exists(inner)

    def sub(depth):
        kind = draw(st.sampled_from(["atom", "seq", "seq", "and", "or"] if depth < 2 else ["atom"]))
        if kind == "atom":
            return atom()
        if kind in ("and", "or"):
            return (A.And if kind == "and" else A.Or)(tuple(atom() for _ in range(draw(st.integers(2, 3)))))
        items = [atom() for _ in range(draw(st.integers(2, 3)))]
        if draw(st.booleans()):
            items.insert(draw(st.integers(1, len(items) - 1)), boolean(sub(depth + 1)))
        return A.Seq(tuple(items))

    def seq():
        positives = [atom() for _ in range(draw(st.integers(1, 3)))]
        items = list(positives)
        for _ in range(draw(st.integers(0, 2))):
            inner = sub(0)
            if correlated and draw(st.integers(0, 3)) == 0 and isinstance(inner, A.Atom):
                other = draw(st.sampled_from(positives))
                target = other.pattern.var if isinstance(other, A.Filter) else other.var
                inner = A.Filter(inner, A.Compare("=", A.Attr(inner.var, "id"), A.Attr(target, "id")))
            items.insert(draw(st.integers(0, len(items))), boolean(inner))
        node = A.Seq(tuple(items))
        if len(positives) > 1 and draw(st.integers(0, 3)) == 0:
            a, b = [p.pattern.var if isinstance(p, A.Filter) else p.var for p in positives[:2]]
            node = A.Filter(node, binary_condition(draw, a, b))
        return node

    branches = [seq() for _ in range(draw(st.integers(1, 2)))]
    root = branches[0] if len(branches) == 1 else A.Or(tuple(branches))
    within = None
    if windows and draw(st.integers(0, 3)) > 0:
        within = A.Window(draw(st.integers(1, 6)), draw(st.sampled_from([None, "EVENTS"])))
    part = ("id",) if partition and draw(st.integers(0, 3)) == 0 else ()
    return pretty(A.QueryNode(pattern=root, within=within, partition_by=part))


def dropped_by_kslack(arrived, k):
    """Events K-slack cannot place: they arrive after an event with a larger (ts, position) was released,
    i.e. after one whose ts was already more than K below the largest ts seen."""
    out, clock = [], float("-inf")
    for p, e in enumerate(arrived):
        if any((e["ts"], p) < (r["ts"], q) and r["ts"] < clock - k for q, r in enumerate(arrived[:p])):
            out.append(p)
        else:
            clock = max(clock, e["ts"])
    return out


def reference_without(query, arrived, skip=(), **options):
    """The reference's matches over ``arrived`` (dicts in arrival order) minus positions ``skip`` and the
    punctuations, in logical order, as sorted keys with arrival positions: what an out-of-order mode's net
    result must be (docs/language.md §6)."""
    from cepkit.semantics import evaluate

    kept = [p for p, e in enumerate(arrived) if p not in skip and e["type"] != "PUNCTUATION"]
    found = evaluate(query, [arrived[p] for p in kept], **options)
    return sorted(
        (
            tuple(sorted(kept[i] for i in m.positions)),
            tuple(
                sorted(
                    (v, tuple(kept[i] for i in x) if isinstance(x, tuple) else kept[x]) for v, x in m.bindings.items()
                )
            ),
        )
        for m in found
    )
