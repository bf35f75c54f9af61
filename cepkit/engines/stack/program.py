"""A flat SEQ query compiled for the stacks: positive slots, negations between them, and where each
condition is tested ([LIU] §2.3; negation bounds from [LIU] §5.1.2 and docs/language.md §10.4).

``SEQ(A a, !B b, C c, D d) WHERE a.v = c.v and b.v > a.v WITHIN 10 s`` becomes

- slots ``a`` (0), ``c`` (1), ``d`` (2): one active-instance stack each;
- negation ``b`` in gap 1 (between slots 0 and 1; gap 0 is leading, gap 3 trailing); an ``EXISTS T x``
  item is a ``Negation`` with ``exists=True``: the same scope, with "some event" for "no event";
- predicate scoping ([LIU] §5.1.2, "predicate scoping test", done by ``cepkit.lang.scope``): a
  conjunct that mentions a negated variable belongs to that negation ("there is no b with b.v > a.v");
  every other conjunct filters matches. Unary conjuncts filter events before they enter a stack or a negation store; the others are
  tested during construction as soon as their variables are bound;
- equality predicates that link every positive variable (``a.id = c.id and c.id = d.id``) partition
  the stacks by that value, so construction only visits instances that can join.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional, Union

import networkx as nx

from ...lang import ast as A
from ...lang.window import earliest_time, latest_time
from ...lang.equalities import attribute_equality, transitive_equalities
from ...runtime.delays import type_hierarchy
from ...runtime.event_record import PUNCTUATION
from ...runtime.match_record import Match
from .conditions import compile_condition

NEVER_LPOS = (-math.inf, math.inf)


@dataclass(frozen=True)
class Slot:
    """A positive item: variable, accepted types (None: ANY), unary filter (``cond``, compiled as
    ``test``), equality-partition attribute."""

    var: Optional[str]
    types: Optional[frozenset]
    test: Optional[Callable]
    hash_attr: Optional[str]
    node: A.Atom
    cond: Optional[A.Expr] = None


@dataclass(frozen=True)
class Negation:
    """``!T var`` in ``gap`` (0: before the first slot; n: after the last; g: between slots g-1 and g), or
    ``EXISTS T var`` when ``exists``: the same scope must then hold some event instead of none.

    ``test`` filters the events kept in its store; ``correlated`` is the rest of its conditions, which
    mention positive variables too and need the slots ``needs`` (``own`` and ``correlated_conds`` are
    the same conditions as trees). ``residual`` (tree ``residual_cond``) is ``correlated`` without the
    equalities the equality partition implies: enough when reading the match's own partition's store."""

    var: Optional[str]
    types: Optional[frozenset]
    gap: int
    test: Optional[Callable]
    correlated: Optional[Callable]
    needs: frozenset
    hash_attr: Optional[str]
    atom: A.Atom
    node: Union[A.Not, A.Exists]
    own: Optional[A.Expr] = None
    correlated_conds: tuple = ()
    exists: bool = False
    residual: Optional[Callable] = None
    residual_cond: Optional[A.Expr] = None


@dataclass(frozen=True)
class Join:
    """A conjunct over several positive variables (or none), tested once ``slots`` are all bound."""

    slots: frozenset
    test: Callable
    cond: Optional[A.Expr] = None


@dataclass(frozen=True)
class BindStep:
    """One step of construction from an anchor: bind ``slot`` walking ``forward`` (from slot-1) or
    backward (from slot+1, along the instance's pointer), then run ``joins`` and ``negations``."""

    slot: int
    forward: bool
    joins: tuple
    negations: tuple


class _Orders:
    """``Program.orders[anchor]``, each built on first use: all of them are n² steps, which a chain of a few
    hundred atoms cannot afford, and the batch run only needs the last slot's."""

    def __init__(self, program: "Program"):
        self.program = program
        self.built: dict = {}

    def __getitem__(self, anchor: int) -> tuple:
        if anchor not in self.built:
            self.built[anchor] = self.program._order(range(self.program.n)[anchor])
        return self.built[anchor]

    def __len__(self):
        return self.program.n


class Program:
    """Everything the stacks need to know about one query; built by ``compile_program``."""

    def __init__(
        self, slots, negations, joins, window_time, window_events, strategy, partition_by, select, prefix_joins=None
    ):
        self.slots = tuple(slots)
        self.negations = tuple(negations)
        self.joins = tuple(joins)
        # STNM's prefix test: the joins of Θ ∪ Θ_eq⁺ (docs/references.md E11)
        self.prefix_joins = self.joins if prefix_joins is None else tuple(prefix_joins)
        self.window_time = window_time  # seconds, or None
        self.window_events = window_events  # n for WITHIN n EVENTS, or None
        self.strategy = strategy  # "ALL", "STRICT" or "STNM"
        self.partition_by = tuple(partition_by)
        self.select = select
        self.n = len(self.slots)
        self.hashed = self.slots[0].hash_attr is not None
        self.trailing = tuple(j for j, neg in enumerate(self.negations) if neg.gap == self.n)
        self.trailing_exists = frozenset(j for j in self.trailing if self.negations[j].exists)
        self.orders = _Orders(self)

    def _order(self, anchor: int) -> tuple:
        """Construction from an instance at slot ``anchor``: forward to the last slot, then backward to
        the first ([LIU] §3.6.1, "backward paths ⋈ forward paths"). Each join and negation check runs
        at the first step where everything it needs is bound."""
        sequence = list(range(anchor, self.n)) + list(range(anchor - 1, -1, -1))
        done_joins, done_negs, bound, steps = set(), set(), set(), []
        for k, slot in enumerate(sequence):
            bound.add(slot)
            joins = tuple(j for j in self.joins if j.slots <= bound and id(j) not in done_joins)
            negs = tuple(
                i for i, n in enumerate(self.negations) if self._negation_needs(n) <= bound and i not in done_negs
            )
            done_joins.update(id(j) for j in joins)
            done_negs.update(negs)
            steps.append(BindStep(slot, k > 0 and slot > anchor, joins, negs))
        return tuple(steps)

    def _negation_needs(self, neg: Negation) -> frozenset:
        if neg.gap in (0, self.n):  # the leading/trailing scope is bounded by both ends of the match
            around = {0, self.n - 1}
        else:
            around = {neg.gap - 1, neg.gap}
        return frozenset(around) | neg.needs

    # ------------------------------------------------------------------ negation scopes
    def scope(self, neg: Negation, chosen) -> tuple:
        """(low key, high key, low local position, high local position) of a negation's scope for the
        instances ``chosen`` (slot -> Instance); a negated event is in scope when its key lies strictly
        between the keys and its local position between the positions, inclusive (docs/language.md §10.4)."""
        first, last = chosen[0], chosen[self.n - 1]
        lo_l, hi_l = NEVER_LPOS
        if neg.gap == 0:  # leading: at or after (last ts - w), before the first event
            hi = first.key
            lo = (earliest_time(self.window_time, last.time), -1) if self.window_time is not None else (-math.inf, -1)
            if self.window_events is not None:
                lo_l = last.lpos - self.window_events + 1
        elif neg.gap == self.n:  # trailing: after the last event, at or before (first ts + w)
            lo = last.key
            hi = (
                (latest_time(self.window_time, first.time), math.inf) if self.window_time is not None else (math.inf, 0)
            )
            if self.window_events is not None:
                hi_l = first.lpos + self.window_events - 1
        else:
            lo, hi = chosen[neg.gap - 1].key, chosen[neg.gap].key
        return lo, hi, lo_l, hi_l

    def deadline(self, chosen) -> tuple:
        """When a trailing negation's scope is over: (time, local position); an event past either bound
        cannot fall in it. Without a window the scope runs to the end of the stream."""
        first = chosen[0]
        time = latest_time(self.window_time, first.time) if self.window_time is not None else math.inf
        lpos = first.lpos + self.window_events - 1 if self.window_events is not None else math.inf
        return time, lpos

    def fits(self, types: Optional[frozenset], event) -> bool:
        if event.type == PUNCTUATION:
            return False
        return types is None or event.type in types

    def to_match(self, chosen) -> Match:
        """The ``Match`` of the instances ``chosen``: bindings var -> position, and C the positions of
        every positive item (an item without a variable counts too), projected on SELECT/RETURN."""
        if self.select is None:
            bindings = {s.var: i.event.position for s, i in zip(self.slots, chosen) if s.var is not None}
            return Match.of(bindings, (i.event.position for s, i in zip(self.slots, chosen) if s.var is None))
        return Match.of({s.var: i.event.position for s, i in zip(self.slots, chosen) if s.var in self.select})


# ----------------------------------------------------------------------------- compilation
def compile_program(query, unsupported) -> Program:
    """Compile ``query`` (a ``cepkit.Query``); ``unsupported(node, what)`` builds the engine-gap error.

    Conditions come placed by ``Query.scoped`` (``cepkit.lang.scope``): what filters the match wraps the
    SEQ or an atom; what belongs to a negation wraps its atom inside the ``!``.
    """
    pattern, conjuncts = _strip_filters(query.scoped)
    items = pattern.items if isinstance(pattern, A.Seq) else (pattern,)
    hierarchy = type_hierarchy(query)

    def types_of(atom: A.Atom):
        if atom.type is None:
            return None
        return hierarchy.covers(atom.type) if hierarchy is not None else frozenset({atom.type})

    positives, negated = [], []
    for item in items:
        item, conds = _strip_filters(item)
        conjuncts.extend(conds)
        if isinstance(item, A.Atom):
            positives.append(item)
        elif isinstance(item, (A.Not, A.Exists)):
            inner, conds = _strip_filters(item.item)
            if not isinstance(inner, A.Atom):
                what = "negation" if isinstance(item, A.Not) else "EXISTS"
                raise unsupported(item, f"{what} of a composite pattern")
            negated.append((inner, len(positives), item, conds))
        else:
            raise unsupported(item, f"{type(item).__name__} items inside SEQ")
    if not positives:
        raise unsupported(pattern, "a SEQ without positive items")

    slot_of = {atom.var: i for i, atom in enumerate(positives) if atom.var}
    unary = {v: [] for v in slot_of}
    joins = []
    for conj in conjuncts:
        slots = frozenset(slot_of[v] for v in A.variables_in(conj))
        if len(slots) == 1:
            unary[positives[next(iter(slots))].var].append(conj)
        else:
            joins.append(Join(slots, compile_condition(conj), conj))

    # Under STNM too: an event that could extend a prefix satisfies Θ_eq⁺ (docs/references.md E11), so it has
    # the prefix's key whenever the equalities tie every positive variable into one class.
    hash_attrs = _equality_partition(
        conjuncts, [c for *_, conds in negated for c in conds], positives, [atom for atom, *_ in negated]
    )
    slots = [
        Slot(
            atom.var,
            types_of(atom),
            _test(unary.get(atom.var, ())),
            hash_attrs.get(atom.var),
            atom,
            A.conjoin(unary.get(atom.var, ())),
        )
        for atom in positives
    ]
    negations = []
    for atom, gap, node, conds in negated:
        own = [c for c in conds if not set(A.variables_in(c)) & set(slot_of)]
        correlated = [c for c in conds if set(A.variables_in(c)) & set(slot_of)]
        needs = frozenset(slot_of[v] for c in correlated for v in A.variables_in(c) if v in slot_of)
        implied = _implied_equalities(atom.var, hash_attrs)
        residual = [
            c for c in correlated if not (isinstance(c, A.Compare) and c.op == "=" and (c.left, c.right) in implied)
        ]
        negations.append(
            Negation(
                atom.var,
                types_of(atom),
                gap,
                _test(own),
                _test(correlated),
                needs,
                hash_attrs.get(atom.var),
                atom,
                node,
                A.conjoin(own),
                tuple(correlated),
                exists=isinstance(node, A.Exists),
                residual=_test(residual),
                residual_cond=A.conjoin(residual),
            )
        )

    within = query.within
    strategy = {"PARTITION_STRICT": "STRICT"}.get(query.strategy, query.strategy)
    if strategy not in ("ALL", "STRICT", "STNM"):
        raise unsupported(query.ast, f"the {query.strategy} strategy")
    prefix_joins = None
    if strategy == "STNM":  # the prefix test of Def 6.1 judges Θ ∪ Θ_eq⁺ (docs/references.md E11)
        closure = transitive_equalities(conjuncts, variables=slot_of)
        prefix_joins = joins + [
            Join(frozenset(slot_of[v] for v in A.variables_in(c)), compile_condition(c), c) for c in closure
        ]
    return Program(
        slots,
        negations,
        joins,
        window_time=query.window_seconds,
        window_events=int(within.amount) if within is not None and within.events else None,
        strategy=strategy,
        partition_by=query.partition_by,
        select=query.select,
        prefix_joins=prefix_joins,
    )


def _implied_equalities(var, hash_attrs: dict) -> set:
    """(left, right) attribute pairs ``var.k = x.k'`` that the equality partition makes true when the
    negated ``var`` is read from the same partition as the positive ``x`` (both orders)."""
    if var not in hash_attrs:
        return set()
    mine = A.Attr(var, hash_attrs[var])
    pairs = set()
    for other, attr in hash_attrs.items():
        if other != var:
            pairs.update({(mine, A.Attr(other, attr)), (A.Attr(other, attr), mine)})
    return pairs


def _strip_filters(node) -> tuple:
    """A pattern without its FILTERs, and their conjuncts (the SEQ is flat, so a filter's scope is the match)."""
    conds = []
    while isinstance(node, A.Filter):
        conds.extend(A.conjuncts(node.cond))
        node = node.pattern
    return node, conds


def _test(conjuncts) -> Optional[Callable]:
    conjuncts = tuple(conjuncts)
    return compile_condition(A.conjoin(conjuncts)) if conjuncts else None


def _equality_partition(conjuncts, negation_conds, positives, negated) -> dict:
    """var -> attribute to partition the stacks by, when ``x.k = y.k'`` conjuncts *of the match* link every
    positive variable into one class of equal values; negated variables equal to a member of that class
    (by their own conditions) are partitioned too. Empty when the match's equalities do not cover every
    positive variable (or there is only one): a chain through a negated variable does not count, since a
    match holds whether or not such an event exists."""
    if len(positives) < 2:
        return {}
    graph = nx.Graph()
    graph.add_edges_from(e for e in map(_partition_equality, conjuncts) if e is not None)
    wanted = {atom.var for atom in positives}
    for component in nx.connected_components(graph):
        attrs = {}
        for var, attr in sorted(component):
            attrs.setdefault(var, attr)
        if wanted <= set(attrs):
            negated_vars = {atom.var for atom in negated}
            members = set(attrs.items())
            for ends in filter(None, map(_partition_equality, negation_conds)):
                for inside, outside in (ends, ends[::-1]):
                    if inside in members and outside[0] in negated_vars:
                        attrs.setdefault(*outside)
            return {v: a for v, a in attrs.items() if v in wanted or v in negated_vars}
    return {}


def _partition_equality(conj) -> Optional[tuple]:
    """The two (var, attr) ends of ``x.k = y.k'`` between two variables' attributes, none of them ts or
    type (a partition is keyed by an attribute); None otherwise."""
    ends = attribute_equality(conj)
    return ends if ends is not None and not {ends[0][1], ends[1][1]} & {"ts", "type"} else None
