"""NEEL rewriting to normal form, one rule per step ([LIU] §5.2).

``rewrite(query)`` flattens a nested query into a disjunction of flat SEQ/AND patterns (DNF, Def 20) by the
rules of Tables 5.2-5.4, applied in the order of the flattening procedure ([LIU] §5.2.7): flattening rules to a
fixpoint (FR1-FR7), negation push-down over AND/OR, then over SEQ (NPDR1-NPDR7), then distribution
(DR1-DR6), until the nesting measure α (Def 22) is 0 or no rule applies. Every application is a ``Step``:
the rule, the sub-pattern before and after, where it stands in the whole query's text (for highlighting),
and α after it.

The rules work on the one AST (``cepkit.lang.ast``), on the *scoped* pattern (``Query.scoped``: every
condition already at the place where it is evaluated, so a condition travels with its atom). Two things
the AST has no node for appear only while rewriting:

- NEEL's boolean items ``!A ∨ ∃B`` and ``!A ∧ !B`` (Table 5.1, ``Bool ::= Bool ∨ Bool | Bool ∧ Bool``) are
  ``BoolItems``; DR3/DR4 turn a disjunction into an OR of copies, the splice rule (ours: [LIU] §5.2 never says how NPDR5's ∧ is absorbed) puts
  the operands of a conjunction side by side, so no ``BoolItems`` is left in a normal form;
- a flattened ``∃E`` (FR6/FR7) is, as the FR6 proof reads it (the ``Proj_{…}`` of [LIU] Ex 29), a
  positive component that is projected away: it becomes a positive atom and the query gets a ``RETURN`` of
  the variables the original query reports. This is why FR6/FR7 need every positive atom of the query to
  have a variable.

Which rules keep the matches (docs/language.md semantics, checked against the reference evaluator by
``tests/lang/test_rewrite.py``): every rule the rewriter applies does, under the preconditions it checks,
except NPDR4 and NPDR7 under WITHIN inside an AND, a negation or an iteration (their inner negations are
bounded by the window around the witness, not by the scope) — such steps are marked ``exact=False`` and
make the whole rewriting inexact. Rules whose preconditions fail are not applied and the query is reported
*not flattenable* with the reason:

- ``!SEQ(… !X …)`` needs "for all" ([LIU] §5.2.2); ``SEQ(AND)``, ``AND(!SEQ)``, ``AND(∃SEQ)`` are outside
  Lcons (Table 5.5);
- NPDR1/NPDR2 need primitive items (Ex 21: ``!SEQ(S, !D, C)``; Ex 22: a composite "last instance");
- NPDR3/NPDR4 need simple predicates: a condition between two components of the negated AND has no
  meaning once they are split ([CSV] §1.1, Fig 3), nor do two components that one event could match;
- FR6 needs positive neighbours on both sides of the ``∃`` item, outside any AND, negation or iteration:
  otherwise the witness would move the bounds of another negation or of the window. In docs/language.md,
  EXISTS bounds nothing (docs/language.md §10.11), so the chained-∃ reading of FR6 is not an equivalence; the
  projected form is.

No confluence is claimed ([LIU] §5.2.8): ``direction="left"`` unrolls negated sequences by NPDR2 (first
instance, as in Ex 25), ``direction="right"`` by NPDR1 (last instance, the exact form of Ex 29). The
measure is logged after each step and the procedure stops after ``max_steps`` (the termination proof is
a sketch).

>>> r = rewrite("SEQ(R r, W w, !SEQ(S s, C c), O o)")
>>> [s.rule for s in r.steps]
['NPDR2', 'DR3', 'FR6']
>>> print(r.normal_form)
SEQ(R AS r, W AS w, !S AS s, O AS o) OR SEQ(R AS r, W AS w, !S AS s_1, S AS s, !C AS c, O AS o) RETURN r, w, o
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Callable, Optional

from . import ast as A
from .checks import bound, definitions
from .printer import _Printer
from .query import Query, parse

__all__ = ["BoolItems", "Step", "Rewriting", "rewrite", "nesting", "is_dnf", "is_cnf"]


@dataclass(frozen=True)
class BoolItems(A.Node):
    """NEEL's ``Bool ∨ Bool`` / ``Bool ∧ Bool`` (Table 5.1): negated and existential items joined by
    ``op`` ("or" | "and"), made by NPDR1-5 and removed by DR3/DR4 and the splice rule."""

    op: str
    items: tuple


@dataclass(frozen=True)
class Step:
    """One rule application. ``old``/``new`` are the rewritten sub-pattern; ``before``/``after`` the whole
    query; ``span``/``span_after`` the (start, end) character offsets of the rewritten part in each;
    ``nesting`` is α after the step; ``exact`` whether the step keeps every match (docs/language.md)."""

    rule: str
    old: str
    new: str
    before: str
    after: str
    span: tuple
    span_after: tuple
    nesting: int
    exact: bool = True


@dataclass(frozen=True)
class Rewriting:
    """The outcome of ``rewrite``: the steps and, when α reached 0, the normal form as a ``Query``."""

    query: Query
    start: str  # the scoped query the first step starts from
    steps: tuple
    result: Optional[Query]  # None: not flattenable (see ``reason``)
    reason: Optional[str] = None

    @property
    def normal(self) -> bool:
        return self.result is not None

    @property
    def exact(self) -> bool:
        """Whether every step keeps the matches, so the normal form has the query's matches."""
        return all(step.exact for step in self.steps)

    @property
    def normal_form(self) -> Optional[str]:
        return None if self.result is None else str(self.result)

    def __repr__(self):
        state = self.normal_form if self.normal else f"not flattenable: {self.reason}"
        return f"Rewriting({len(self.steps)} steps, {state})"


# ----------------------------------------------------------------------------- printing (with BoolItems)
class _TracePrinter(_Printer):
    SYMBOL = {"or": " ∨ ", "and": " ∧ "}

    def item(self, node) -> str:
        if isinstance(node, BoolItems):
            return "(" + self.SYMBOL[node.op].join(self.item(i) for i in node.items) + ")"
        return super().item(node)

    def neg_item(self, node) -> str:
        if isinstance(node, BoolItems):
            return self.item(node)
        return super().neg_item(node)


def show(node) -> str:
    """Text of a query, pattern or item of a rewriting (``∨``/``∧`` for ``BoolItems``)."""
    printer = _TracePrinter()
    if isinstance(node, A.QueryNode):
        return printer.visit(node)
    if isinstance(node, A.Pattern):
        return printer.visit(node)[0]
    return printer.item(node)


_MARK = A.Atom("\u2063")  # an invisible separator as a type name: never in a query


def _located(root: A.QueryNode, path: tuple, node) -> tuple:
    """(text of root, (start, end) of ``node``, found at ``path``, in it): print once with a marker there
    (a marker of the same kind, pattern or item, so the enclosing SEQ keeps its notation)."""
    text = show(root)
    marker, prefix = (_MARK, 0) if isinstance(node, A.Pattern) else (A.Not(_MARK), 1)
    marked = show(_replace_at(root, path, marker))
    printed = show(_MARK)  # (quoted: the marker is no identifier)
    start = marked.index(printed) - prefix
    return text, (start, start + len(text) - (len(marked) - len(printed) - prefix))


# ----------------------------------------------------------------------------- tree paths
def _children(node) -> list:
    """[(path element, child)] for the pattern-side children of a node (conditions left out)."""
    out = []
    for f in fields(node):
        if f.name == "span":
            continue
        value = getattr(node, f.name)
        if isinstance(value, (A.Pattern, A.Not, A.Exists, BoolItems)):
            out.append(((f.name, None), value))
        elif isinstance(value, tuple):
            out += [
                ((f.name, k), v) for k, v in enumerate(value) if isinstance(v, (A.Pattern, A.Not, A.Exists, BoolItems))
            ]
    return out


def _walk(node, path=(), ancestors=()):
    """(path, node, ancestors) in pre-order over the pattern side of a tree."""
    yield path, node, ancestors
    for step, child in _children(node):
        yield from _walk(child, path + (step,), ancestors + (node,))


def _replace_at(node, path: tuple, new):
    if not path:
        return new
    (name, index), rest = path[0], path[1:]
    value = getattr(node, name)
    if index is None:
        return replace(node, **{name: _replace_at(value, rest, new)})
    items = list(value)
    items[index] = _replace_at(items[index], rest, new)
    return replace(node, **{name: tuple(items)})


# ----------------------------------------------------------------------------- the nesting measure (Def 22)
def _strip(node):
    """(core, conditions) of a node under Filters."""
    conditions = []
    while isinstance(node, A.Filter):
        conditions.insert(0, node.cond)
        node = node.pattern
    return node, conditions


def _is_primitive(node) -> bool:
    return isinstance(_strip(node)[0], A.Atom)


def nesting(node) -> int:
    """α ([LIU] §5.2.8, Def 22): 0 exactly for a normal form (Th1); every rule lowers it (Th2).

    >>> nesting(parse("SEQ(SEQ(E1 a, !AND(E3 b, E4 c)), AND(E5 d, E6 e))").pattern)
    4
    """
    node = _strip(node)[0]
    if isinstance(node, A.QueryNode):
        return nesting(node.pattern)
    if isinstance(node, (A.Atom,)):
        return 0
    if isinstance(node, (A.Not, A.Exists)):
        return nesting(node.item)
    if isinstance(node, BoolItems):
        return max(nesting(i) for i in node.items)
    if isinstance(node, (A.Plus, A.Strategy)):
        return 1 + nesting(node.pattern)
    children = [i for i in node.items if not isinstance(i, A.Expr)]
    return max((nesting(c) + _contribution(node, c) for c in children), default=0)


def _contribution(outer, child) -> int:
    """What a child adds inside ``outer`` (the cases of [LIU] §5.2.8)."""
    core = _strip(child)[0]
    if isinstance(outer, A.Or):
        return 1 if isinstance(core, A.Or) else 0
    if isinstance(core, A.Atom):
        return 0
    if isinstance(core, (A.Seq, A.And, A.Or, A.Plus, A.Strategy)):
        return 0 if isinstance(outer, A.And) and isinstance(core, A.Seq) else 1
    if isinstance(core, BoolItems):  # β of [13-14]; at least 1: a ∧/∨ of booleans is never a query
        return max(1 if _is_primitive(_polar(i)) else 2 for i in core.items)
    inner = _strip(_polar(core))[0]
    if isinstance(inner, A.Atom):
        return 0
    return 2 if isinstance(core, A.Exists) else 3


def _polar(item):
    """The pattern under a chain of ``!``/``EXISTS``."""
    while isinstance(item, (A.Not, A.Exists)):
        item = item.item
    return item


def _flat(node) -> bool:
    """A SEQ/AND whose items are primitive, ``!``/``∃`` of primitive, or conditions."""
    core = _strip(node)[0]
    return isinstance(core, (A.Seq, A.And)) and all(
        isinstance(i, A.Expr) or _is_primitive(_polar(i)) for i in core.items
    )


def is_dnf(pattern) -> bool:
    """``E OR … OR E``, each E a flat SEQ or AND (Def 20, Ex 23); a single flat E or atom too."""
    core = _strip(pattern)[0]
    branches = core.items if isinstance(core, A.Or) else (core,)
    return all(_flat(b) or _is_primitive(b) for b in branches)


def is_cnf(pattern) -> bool:
    """``E AND … AND E`` over flat SEQs (Def 20, Ex 24)."""
    core = _strip(pattern)[0]
    return isinstance(core, A.And) and all(
        isinstance(i, A.Expr) or _flat(i) or _is_primitive(_polar(i)) for i in core.items
    )


# ----------------------------------------------------------------------------- rules
class _Refused(Exception):
    """A rule matched the shape but its precondition fails: the reason the query is not flattenable."""


@dataclass(frozen=True)
class _Rule:
    name: str
    apply: Callable  # (rewriter, node, ancestors) -> new node, (rule name, new node) or None; may raise _Refused


INEXACT_UNDER_WINDOW = ("NPDR4", "NPDR7")
"""Rules whose inner negations are bounded by the window around the witness instead of by the scope: exact
without WITHIN, or when the negation is an item of a SEQ with only SEQ/OR/FILTER above it (its scope then lies
between two events of the match, or at its edge, inside every witness's window)."""


def _exact(rw: "_Rewriter", rule: str, ancestors: tuple) -> bool:
    if rule not in INEXACT_UNDER_WINDOW or rw.query.within is None:
        return True
    return (
        bool(ancestors)
        and isinstance(ancestors[-1], A.Seq)
        and all(isinstance(a, (A.Seq, A.Or, A.Filter)) for a in ancestors)
    )


class _Rewriter:
    """One rewriting: fresh variable names, the projection FR6/FR7 add, the hierarchy, the window."""

    def __init__(self, query: Query, direction: str):
        self.query = query
        self.direction = direction
        self.names = set(definitions(query.pattern))
        reported = {v for branch in _branches(query.pattern) for v in bound(branch)}
        self.select = (
            query.select if query.select is not None else tuple(v for v in definitions(query.pattern) if v in reported)
        )
        self.project = False

    def new_name(self, var: Optional[str]) -> Optional[str]:
        """A variable name like ``var`` that the query does not use yet (None for None)."""
        if var is None:
            return None
        k = 1
        while f"{var}_{k}" in self.names:
            k += 1
        self.names.add(f"{var}_{k}")
        return f"{var}_{k}"

    def copy(self, node):
        """A copy of a primitive (atom and its filters) under a fresh variable."""
        core, conditions = _strip(node)
        new = self.new_name(core.var)
        rename = lambda n: (
            A.Attr(new, n.attr, n.index)
            if isinstance(n, A.Attr) and n.var == core.var
            else A.Agg(n.func, new, n.attr)
            if isinstance(n, A.Agg) and n.var == core.var
            else n
        )
        out = A.Atom(core.type, new)
        for cond in conditions:
            out = A.Filter(out, cond.transform(rename))
        return out

    def overlapping(self, a, b) -> bool:
        """Whether one event could match both primitives (same type, ANY, or related concepts)."""
        ta, tb = _strip(a)[0].type, _strip(b)[0].type
        if ta is None or tb is None or ta == tb:
            return True
        h = self.query.hierarchy
        return h is not None and bool(h.covers(ta) & h.covers(tb))


def _branches(pattern):
    core = _strip(pattern)[0]
    return core.items if isinstance(core, A.Or) else (pattern,)


def _is_bool(item) -> bool:
    return isinstance(item, (A.Not, A.Exists, BoolItems))


def _wrap(node, conditions):
    for cond in conditions:
        node = A.Filter(node, cond, span=node.span)
    return node


# --- FR1-FR5: a composite inside one of its own kind
def _flatten_same(kind, name: str, with_booleans: Optional[str] = None):
    """FR1/FR2 (SEQ), FR3/FR4 (AND), FR5 (OR): the inner items take the place of the inner composite; its
    conditions filter the outer one. ``with_booleans`` names the rule when the inner one holds ``!``/``∃``."""

    def apply(rw, node, ancestors):
        if not isinstance(node, kind):
            return None
        for k, item in enumerate(node.items):
            core, conditions = _strip(item)
            if isinstance(core, kind) and not (kind is A.Or and conditions):
                items = node.items[:k] + core.items + node.items[k + 1 :]
                rule = with_booleans if with_booleans and any(_is_bool(i) for i in core.items) else name
                return rule, _wrap(type(node)(items, span=node.span), conditions)
        return None

    return apply


# --- FR6/FR7: an existential composite becomes projected positive components
def _flatten_exists(kind, inner_kind):
    def apply(rw, node, ancestors):
        if not isinstance(node, kind):
            return None
        for k, item in enumerate(node.items):
            if not (isinstance(item, A.Exists) and isinstance(_strip(item.item)[0], inner_kind)):
                continue
            core, conditions = _strip(item.item)
            where = f"{'SEQ' if kind is A.Seq else 'AND'}(… {show(item)} …)"
            if any(isinstance(a, (A.And, A.Not, A.Exists, A.Plus, A.Strategy, BoolItems)) for a in ancestors):
                raise _Refused(
                    f"{where} stands inside an AND, a negation or an iteration: its witness would change their bounds"
                )
            if kind is A.Seq and (
                k == 0 or k == len(node.items) - 1 or _is_bool(node.items[k - 1]) or _is_bool(node.items[k + 1])
            ):
                raise _Refused(
                    f"{where} needs positive neighbours on both sides: EXISTS bounds nothing "
                    "(docs/language.md §10.11), a positive witness would"
                )
            if kind is A.And and (ancestors or rw.query.within is not None):
                raise _Refused(f"{where} in a nested or windowed AND: a positive witness would move the AND's window")
            if rw.query.strategy != "ALL" or rw.query.consume not in (None, "NONE"):
                raise _Refused(
                    f"{where}: the witness would join the complex events that the selection strategy "
                    "or CONSUME BY compares"
                )
            unnamed = [a for a in rw.query.pattern.find_all(A.Atom) if a.var is None]
            if unnamed:
                raise _Refused(
                    f"{where}: flattening projects the witness away, which needs a variable on "
                    f"every atom ({show(unnamed[0])} has none)"
                )
            rw.project = True
            items = node.items[:k] + core.items + node.items[k + 1 :]
            return _wrap(type(node)(items, span=node.span), conditions)
        return None

    return apply


# --- negation push-down
def _negated(node, kind):
    """(core, conditions) when node is ``!kind(...)``, else None."""
    if isinstance(node, A.Not):
        core, conditions = _strip(node.item)
        if isinstance(core, kind):
            return core, conditions
    return None


def _simple(rw, core, conditions, what: str):
    """Refuse conditions that relate two components of a negated composite ([CSV] §1.1)."""
    own = set(definitions(core))
    conditions = [c for cond in conditions for c in A.conjuncts(cond)]
    for cond in conditions:
        mentioned = own & set(A.variables_in(cond))
        if len(mentioned) > 1:
            raise _Refused(
                f"{what}: the condition {show(cond)} relates {', '.join(sorted(mentioned))}, which the "
                "rewriting would split ([CSV] §1.1)"
            )
    placed = []
    for cond in conditions:
        mentioned = own & set(A.variables_in(cond))
        placed.append((mentioned.pop() if mentioned else None, cond))
    return placed


def _push_down(core, placed):
    """Put each condition on the component whose variable it mentions."""
    items = []
    for item in core.items:
        var = _strip(item)[0].var if _is_primitive(item) else None
        items.append(_wrap(item, [c for v, c in placed if v is not None and v == var]))
    return items, [c for v, c in placed if v is None]


def _npdr_and(rw, node, ancestors):
    """NPDR3 (and NPDR4 when the AND holds boolean items): ``!AND(E1..Ei) = !E1 ∨ … ∨ !Ei``."""
    found = _negated(node, A.And)
    if found is None:
        return None
    core, conditions = found
    what = f"!{show(core)}"
    positives = [i for i in core.items if not _is_bool(i)]
    if any(not _is_primitive(_polar(i)) for i in core.items if not isinstance(i, A.Expr)):
        raise _Refused(f"{what}: NPDR3/4 need primitive components")
    if any(isinstance(i, A.Expr) for i in core.items):
        raise _Refused(f"{what}: condition items must be scoped first")
    items, rest = _push_down(core, _simple(rw, core, conditions, what))
    if rest:
        raise _Refused(f"{what}: a condition on no component")
    prims = [_polar(i) for i in items]
    for a in range(len(prims)):
        for b in range(a + 1, len(prims)):
            if rw.overlapping(prims[a], prims[b]):
                raise _Refused(
                    f"{what}: {show(prims[a])} and {show(prims[b])} could match the same event, "
                    "so splitting the AND changes its meaning"
                )
    if not positives:
        raise _Refused(f"{what}: AND needs a positive item")
    rule = "NPDR4" if len(positives) < len(items) else "NPDR3"
    flipped = tuple(
        A.Not(i) if not _is_bool(i) else (A.Exists(i.item) if isinstance(i, A.Not) else A.Not(i.item)) for i in items
    )
    return rule, (BoolItems("or", flipped) if len(flipped) > 1 else flipped[0])


def _npdr_or(rw, node, ancestors):
    """NPDR5: ``!OR(E1..Ei) = !E1 ∧ … ∧ !Ei``."""
    found = _negated(node, A.Or)
    if found is None:
        return None
    core, conditions = found
    if conditions:
        raise _Refused(f"!{show(core)}: a condition over the whole OR")
    return BoolItems("and", tuple(A.Not(i) for i in core.items))


def _npdr_exists_inside(kind):
    """NPDR6/NPDR7: ``!SEQ(.., ∃Ei, ..) = !SEQ(.., Ei, ..)`` (the same with AND)."""

    def apply(rw, node, ancestors):
        found = _negated(node, kind)
        if found is None:
            return None
        core, conditions = found
        exists = [k for k, i in enumerate(core.items) if isinstance(i, A.Exists)]
        if not exists:
            return None
        if sum(_is_bool(i) for i in core.items) > 1:
            raise _Refused(f"!{show(core)}: a positive witness would re-bound the other negations")
        k = exists[0]
        items = core.items[:k] + (core.items[k].item,) + core.items[k + 1 :]
        return A.Not(_wrap(kind(items, span=core.span), conditions), span=node.span)

    return apply


def _npdr_seq(rw, node, ancestors):
    """NPDR2 (left to right, first instance) or NPDR1 (right to left, last instance), one step."""
    found = _negated(node, A.Seq)
    if found is None:
        return None
    core, conditions = found
    what = f"!{show(core)}"
    if any(_is_bool(i) for i in core.items):
        raise _Refused(f'{what}: a negation inside a negated SEQ needs "for all" ([LIU] §5.2.2)')
    if any(not _is_primitive(i) for i in core.items):
        raise _Refused(f"{what}: NPDR1/2 need primitive items ([LIU] §5.2.5, Ex 21/22)")
    items, rest = _push_down(core, _simple(rw, core, conditions, what))
    if rest:
        raise _Refused(f"{what}: a condition on no component")
    if len(items) == 1:
        return A.Not(items[0], span=node.span)

    def negate(part):
        return A.Not(part[0] if len(part) == 1 else A.Seq(tuple(part)))

    if rw.direction == "left":  # !E1 ∨ ∃SEQ(!E1', E1, !SEQ(E2..Ei))
        first = items[0]
        witness = A.Seq((A.Not(rw.copy(first)), first, negate(items[1:])))
        return BoolItems("or", (A.Not(first), A.Exists(witness)))
    last = items[-1]  # !Ei ∨ ∃SEQ(!SEQ(E1..Ei−1), Ei, !Ei')
    witness = A.Seq((negate(items[:-1]), last, A.Not(rw.copy(last))))
    return BoolItems("or", (A.Not(last), A.Exists(witness)))


def _splice(rw, node, ancestors):
    """``SEQ(.., !A ∧ !B, ..) = SEQ(.., !A, !B, ..)``: the same neighbours, the same scope (ours)."""
    if not isinstance(node, (A.Seq, A.And)):
        return None
    for k, item in enumerate(node.items):
        if isinstance(item, BoolItems) and item.op == "and":
            return type(node)(node.items[:k] + item.items + node.items[k + 1 :], span=node.span)
    return None


# --- distribution
def _distribute(kind, test):
    def apply(rw, node, ancestors):
        if not isinstance(node, kind):
            return None
        for k, item in enumerate(node.items):
            options = test(item)
            if options is not None:
                return A.Or(tuple(kind(node.items[:k] + (o,) + node.items[k + 1 :]) for o in options), span=node.span)
        return None

    return apply


def _or_item(item):  # DR1/DR2
    core, conditions = _strip(item)
    if isinstance(core, A.Or):
        return tuple(_wrap(b, conditions) for b in core.items)
    return None


def _disjunction(item):  # DR3/DR4
    return item.items if isinstance(item, BoolItems) and item.op == "or" else None


def _exists_or(item):  # DR5/DR6
    if isinstance(item, A.Exists) and isinstance(item.item, A.Or):
        return tuple(A.Exists(b) for b in item.item.items)
    return None


def _lcons(rw, node, ancestors):
    """Shapes outside Lcons (Table 5.5) that no rule may touch: report them."""
    if isinstance(node, A.Seq):
        for item in node.items:
            core = _strip(_polar(item) if isinstance(item, A.Exists) else item)[0]
            if not isinstance(item, A.Not) and isinstance(core, A.And):
                raise _Refused(
                    f"SEQ(… {show(item)} …): AND(X, Y) is not SEQ(X, Y) ∨ SEQ(Y, X) (overlapping "
                    "intervals), so SEQ(AND) is outside Lcons"
                )
    if isinstance(node, A.And):
        for item in node.items:
            if isinstance(item, (A.Not, A.Exists)) and isinstance(_strip(item.item)[0], A.Seq):
                raise _Refused(f"AND(… {show(item)} …): AND(!SEQ) and AND(∃SEQ) are outside Lcons")
    if isinstance(node, (A.Plus, A.Strategy)):
        raise _Refused(f"{show(node)}: iterations and selection strategies have no NEEL rewriting")
    return None


FLATTENING = (
    _Rule("FR1/FR2", _flatten_same(A.Seq, "FR1", "FR2")),
    _Rule("FR3/FR4", _flatten_same(A.And, "FR3", "FR4")),
    _Rule("FR5", _flatten_same(A.Or, "FR5")),
    _Rule("FR6", _flatten_exists(A.Seq, A.Seq)),
    _Rule("FR7", _flatten_exists(A.And, A.And)),
)
PUSH_DOWN_AND_OR = (
    _Rule("NPDR7", _npdr_exists_inside(A.And)),
    _Rule("NPDR3/NPDR4", _npdr_and),
    _Rule("NPDR5", _npdr_or),
    _Rule("splice", _splice),
)
PUSH_DOWN_SEQ = (
    _Rule("NPDR6", _npdr_exists_inside(A.Seq)),
    _Rule("NPDR2", lambda rw, n, a: _npdr_seq(rw, n, a) if rw.direction == "left" else None),
    _Rule("NPDR1", lambda rw, n, a: _npdr_seq(rw, n, a) if rw.direction == "right" else None),
)
DISTRIBUTION = (
    _Rule("DR1", _distribute(A.Seq, _or_item)),
    _Rule("DR2", _distribute(A.And, _or_item)),
    _Rule("DR3", _distribute(A.Seq, _disjunction)),
    _Rule("DR4", _distribute(A.And, _disjunction)),
    _Rule("DR5", _distribute(A.Seq, _exists_or)),
    _Rule("DR6", _distribute(A.And, _exists_or)),
)
PHASES = (FLATTENING, PUSH_DOWN_AND_OR, PUSH_DOWN_SEQ, DISTRIBUTION)
RULES = tuple(name for phase in PHASES for rule in phase for name in rule.name.split("/"))
"""Every rule name a ``Step`` may carry, in the order the procedure tries them."""


def rewrite(query, hierarchy=None, direction: str = "left", max_steps: int = 200) -> Rewriting:
    """The NEEL normal form of ``query`` (DNF, [LIU] §5.2.6-5.2.7) and the steps that lead there.

    ``direction`` chooses NPDR2 ("left", first instance) or NPDR1 ("right", last instance) for negated
    sequences. A query outside Lcons, or whose rules' preconditions fail, gives ``result=None`` and the
    ``reason``; the steps up to there are kept.

    Parameters
    ----------
    query : str or Query
        The query text (docs/language.md), or a parsed ``Query``.
    hierarchy : Hierarchy or mapping, optional
        The type hierarchy the query's types refer to.
    direction : {"left", "right"}, default "left"
        NPDR2 (first instance) or NPDR1 (last instance) for negated sequences.
    max_steps : int, default 200
        The most rewriting steps taken.

    Returns
    -------
    Rewriting
        ``result`` (the normal form, or None), ``steps`` (rule, old and new text), ``reason``.

    Raises
    ------
    QueryError
        The query does not parse.
    ValueError
        ``direction`` is neither "left" nor "right".

    Examples
    --------
    >>> r = rewrite("SEQ(A a, !OR(B b, C c), D d)")
    >>> [(s.rule, s.old, s.new) for s in r.steps]
    [('NPDR5', '!(B AS b OR C AS c)', '(!B AS b ∧ !C AS c)'), ('splice', 'SEQ(A AS a, (!B AS b ∧ !C AS c), D AS d)', 'SEQ(A AS a, !B AS b, !C AS c, D AS d)')]
    """
    if direction not in ("left", "right"):
        raise ValueError(f"direction is 'left' (NPDR2) or 'right' (NPDR1), not {direction!r}")
    query = parse(query, hierarchy)
    rw = _Rewriter(query, direction)
    root = A.QueryNode(
        pattern=query.scoped,
        within=query.within,
        partition_by=query.partition_by,
        consume=query.consume,
        select=query.select,
        strategy=query.ast.strategy,
    )
    start, steps, reason = show(root), [], None
    try:
        while nesting(root) > 0 and len(steps) < max_steps:
            step = _one_step(rw, root)
            if step is None:
                break
            root, step = step
            steps.append(step)
        if nesting(root) > 0:
            for _, node, ancestors in _walk(root.pattern):
                _lcons(rw, node, ancestors)
    except _Refused as refusal:
        reason = str(refusal)
    if reason is None and nesting(root) > 0:
        reason = (
            f"no rule applies within {max_steps} steps"
            if len(steps) >= max_steps
            else f"α is still {nesting(root)} and no rule applies"
        )
    result = None
    if reason is None:
        result = Query(root, None, query.hierarchy)
    return Rewriting(query, start, tuple(steps), result, reason)


def _one_step(rw: _Rewriter, root: A.QueryNode):
    """The first rule of the earliest phase that applies somewhere (pre-order), applied once."""
    refusal = None
    for phase in PHASES:
        for path, node, ancestors in _walk(root.pattern, (("pattern", None),)):
            for rule in phase:
                try:
                    new = rule.apply(rw, node, ancestors)
                except _Refused as why:
                    refusal = refusal or why
                    continue
                if new is not None:
                    return _record(rw, root, path, node, new, rule, ancestors)
    if refusal is not None:
        raise refusal
    return None


def _record(rw, root, path, node, new, rule, ancestors):
    name, new = new if isinstance(new, tuple) else (rule.name, new)
    after = _replace_at(root, path, replace(new, span=node.span) if node.span else new)
    if rw.project and after.select is None:
        after = replace(after, select=rw.select)
    before_text, span = _located(root, path, node)
    after_text, span_after = _located(after, path, new)
    exact = _exact(rw, name, ancestors)
    step = Step(name, show(node), show(new), before_text, after_text, span, span_after, nesting(after.pattern), exact)
    return after, step
