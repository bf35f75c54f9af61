"""Unary CEL to a complex event automaton ([CEL] §5, Figure 3; Theorem 3, Appendix C.2).

The pipeline, one function per stage:

1. ``check_fragment``: what the automaton can run at all (sequence, OR, ``+`` at any depth, unary
   filters, STRICT sub-patterns); anything else is a ``QueryError`` naming the engines that can run it.
2. ``lp_normal``: the LP-normal form (every unary filter on its variable's definition). Each filter is
   split into literals over single variables (its disjunctive normal form, CEL's sugar
   ``φ FILTER (P ∨ P') := (φ FILTER P) OR (φ FILTER P')``); a literal on a variable its sub-pattern does
   not bind is a *conditional* filter, popped up to the lowest pattern ρ binding the variable (Theorem 2:
   ``ρ ↦ (ρ[filter ↦ ψ] FILTER P) OR ρ[filter ↦ unsat]``); then every literal is pushed down to the atoms
   defining its variable. Equality correlations that PARTITION BY already guarantees (``x.id = y.id``
   with ``PARTITION BY id``) hold of equal values, so they become ``x.id = x.id and y.id = y.id``.
3. ``thompson``: the ε-CEA of Appendix C.2, one in- and one out-state per sub-pattern; STRICT
   sub-patterns become a ◦-copy and a •-copy switching at the first • (Theorem 4); ε-removal and trimming
   give the CEA A = (Q, Δ, q0, F) with Δ ⊆ Q × U × {•, ◦} × Q.

Each marking transition remembers the variable it binds, so matches carry bindings although CEL outputs
positions only.

>>> import cepkit
>>> q = cepkit.parse("(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)")
>>> print(cepkit.pretty(lp_normal(q)))
(T AS x FILTER x.tmp > 40 and x.id = 0) ; (H AS y FILTER y.hum < 25 and y.id = 0)
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Optional

from ...errors import EventError, QueryError
from ...lang import ast as A
from ...lang.checks import bound, definitions
from ...semantics.conditions import holds
from .predicates import Guard, on_event

Unsupported = Callable[[A.Node, str], QueryError]

# Selection strategies the per-event algorithms implement at the top of a query (strategies.py); STRICT
# is also closed under nesting (Theorem 4, linear), so it may wrap any sub-pattern; NEXT/LAST/MAX inside a
# pattern select among the sub-pattern's matches over the whole stream (see ``nested_selections``).
TOP_STRATEGIES = ("ALL", "STRICT", "PARTITION_STRICT", "NEXT", "LAST", "MAX")
STRICT = ("STRICT", "PARTITION_STRICT")
RANKED = ("NEXT", "LAST", "MAX")


@dataclass(frozen=True)
class Transition:
    """``src --guard/mark--> dst``; ``mark`` True is • (the event joins the complex event), False is ◦.
    ``var`` is the variable a • transition binds (None for ◦ and for anonymous atoms)."""

    src: int
    dst: int
    guard: Guard
    mark: bool
    var: Optional[str] = None


@dataclass(frozen=True)
class CEA:
    """A complex event automaton with states ``0..n_states-1``; a run accepts when it reaches a final
    state by a • transition ([CEL] §6-7)."""

    n_states: int
    initial: int
    finals: frozenset
    transitions: tuple

    @cached_property
    def outgoing(self) -> tuple:
        """state -> the indices of its transitions."""
        out = [[] for _ in range(self.n_states)]
        for i, t in enumerate(self.transitions):
            out[t.src].append(i)
        return tuple(tuple(ts) for ts in out)

    @cached_property
    def guards(self) -> tuple:
        return tuple(dict.fromkeys(t.guard for t in self.transitions))

    @cached_property
    def variables(self) -> tuple:
        """The variables marking transitions bind, in a fixed order (their index is the kernel's var id)."""
        return tuple(sorted({t.var for t in self.transitions if t.mark and t.var is not None}))


# ----------------------------------------------------------------------------- 1. the fragment
def check_fragment(query, unsupported: Unsupported) -> None:
    """Raise (via ``unsupported``) for anything outside the automaton's fragment."""
    if query.strategy not in TOP_STRATEGIES:
        raise unsupported(query.ast, f"the {query.strategy} strategy")
    for node in query.scoped.walk():
        if isinstance(node, A.And):
            raise unsupported(node, "AND (events in any order): a CEA reads events in sequence")
        if isinstance(node, (A.Not, A.Exists)):
            raise unsupported(node, "negation" if isinstance(node, A.Not) else "EXISTS")
        if isinstance(node, A.Strategy) and node.name not in ("ALL",) + STRICT + RANKED:
            raise unsupported(node, f"{node.name} nested inside a pattern")
        if isinstance(node, A.Agg):
            raise unsupported(node, "aggregates")
        if isinstance(node, A.Prev) or (isinstance(node, A.Attr) and node.index is not None):
            raise unsupported(node, "conditions between iterations of a Kleene variable (prev, b[i], first, last)")


def nested_selections(query, unsupported: Unsupported) -> tuple:
    """The NEXT/LAST/MAX sub-patterns of ``query`` (one of each), checked.

    For a unary sub-pattern φ, SEL(φ) stands for a set of φ's matches fixed by the stream alone: those
    SEL chooses among every match of φ that fits the window (the reference's rivals), whatever surrounds
    it. The automaton runs φ's automaton inside the pattern and keeps a match only if its sub-match of φ,
    read from the bindings of φ's variables, is one SEL chose (``plan.Program.nested``). That needs every
    atom of φ named by a variable used nowhere else, φ not inside a ``+`` (its variables would collect
    several sub-matches), no condition inside φ on a variable outside it, no nested selection inside φ,
    and a result no later step depends on (a top-level NEXT/LAST/MAX or CONSUME BY would need the
    filtered matches while the automaton runs).
    """
    found = []

    def visit(node, under_plus: bool):
        if isinstance(node, A.Strategy) and node.name in RANKED:
            _check_selection(query, node, under_plus, unsupported)
            found.append(node)
            return
        for child in _pattern_children(node):
            visit(child, under_plus or isinstance(node, A.Plus))

    visit(query.scoped, False)
    return tuple(dict.fromkeys(found))


def _check_selection(query, node: A.Strategy, under_plus: bool, unsupported: Unsupported) -> None:
    what = f"{node.name}(...) inside a pattern"
    inner = definitions(node.pattern)
    outside = {atom.var for atom in _atoms_outside(query.scoped, node)}
    if query.strategy in RANKED or query.consume in ("ANY", "PARTITION"):
        raise unsupported(node, f"{what} under SELECT {query.strategy} or CONSUME BY")
    if under_plus:
        raise unsupported(node, f"{what} inside an iteration")
    if any(isinstance(n, A.Strategy) and n.name in RANKED for n in node.pattern.walk()):
        raise unsupported(node, f"{what} around another one")
    if any(isinstance(n, A.Atom) and not n.var for n in node.pattern.walk()):
        raise unsupported(node, f"{what} around an atom without a variable")
    if inner.keys() & outside:
        raise unsupported(node, f"{what} whose variables are also defined outside it")
    for cond in node.pattern.find_all(A.Expr):
        if set(A.variables_in(cond)) - inner.keys():
            raise unsupported(cond, f"a condition inside {node.name}(...) on a variable outside it")


def _atoms_outside(pattern, excluded) -> list:
    """The atoms of ``pattern`` that are not inside the sub-pattern ``excluded`` (by identity)."""
    if pattern is excluded:
        return []
    if isinstance(pattern, A.Atom):
        return [pattern]
    return [atom for child in _pattern_children(pattern) for atom in _atoms_outside(child, excluded)]


# ----------------------------------------------------------------------------- 2. LP-normal form
@dataclass(frozen=True)
class _Unsat(A.Pattern):
    """A pattern with no match (``ρ[filter ↦ unsat]`` of Theorem 2); removed by ``_simplify``."""


LP_NORMAL_LIMIT = 2000  # nodes: beyond this the exponential rewrite is refused, so compiling never hangs


def lp_normal(query, unsupported: Optional[Unsupported] = None) -> Optional[A.Pattern]:
    """The query's pattern (WHERE and condition items included) in LP-normal form: every filter is a
    ``Filter(Atom, condition on the atom's variable)``. None when the pattern can never match."""
    if unsupported is None:

        def unsupported(node, what):
            return QueryError.at(node, f"the automaton cannot run {what}", query.text)

    pattern = _split_filters(query.scoped, set(query.partition_by), unsupported)
    while pattern is not None:
        path = _conditional_filter(pattern)
        if path is None:
            break
        pattern = _pop_up(pattern, path, unsupported)
        if pattern is not None and sum(1 for _ in pattern.walk()) > LP_NORMAL_LIMIT:
            raise unsupported(
                query.ast.pattern,
                f"this formula: its LP-normal form grows past {LP_NORMAL_LIMIT} "
                "nodes (each conditional filter can double it, Theorem 2)",
            )
    if pattern is None:
        return None
    return _push_down(pattern, {}, unsupported)


def _literal_var(lit: A.Expr) -> str:
    return A.variables_in(lit)[0]


def _split_filters(pattern: A.Pattern, partition_keys: set, unsupported: Unsupported) -> Optional[A.Pattern]:
    """Every ``ψ FILTER c`` as an OR over the disjuncts of c, each a chain of one-literal filters."""

    def split(node):
        if not isinstance(node, A.Filter):
            return node
        branches = []
        for conjunction in _dnf(_partition_equalities(node.cond, partition_keys)):
            branch = node.pattern
            for lit in reversed(conjunction):  # the first literal ends up outermost
                predicate = lit.arg if isinstance(lit, A.BoolNot) else lit
                names = A.variables_in(predicate)
                if len(names) > 1:
                    raise unsupported(
                        predicate,
                        "conditions between two variables (correlation); only equality on a PARTITION BY attribute is",
                    )
                if not names:
                    if not _constant_holds(lit, unsupported):
                        branch = _Unsat()
                        break
                    continue
                branch = A.Filter(branch, lit, span=node.span)
            branches.append(branch)
        return A.Or(tuple(branches), span=node.span) if len(branches) > 1 else branches[0]

    return _simplify(pattern.transform(split))


def _constant_holds(literal, unsupported) -> bool:
    """A condition on no variable, folded at compile time; one that cannot be evaluated (``'' < 5``) is an
    EventError the reference raises only when a candidate match meets it, so other engines take it."""
    try:
        return holds(literal, {}, ())
    except EventError:
        raise unsupported(literal, "a constant condition that raises an error when evaluated") from None


def _partition_equalities(cond: A.Expr, keys: set) -> A.Expr:
    """``x.k = y.k`` with k a PARTITION BY attribute compares two equal values: ``x.k = x.k and y.k = y.k``."""

    def rewrite(node):
        if (
            isinstance(node, A.Compare)
            and node.op == "="
            and isinstance(node.left, A.Attr)
            and isinstance(node.right, A.Attr)
            and node.left.attr == node.right.attr
            and node.left.attr in keys
            and node.left.var != node.right.var
        ):
            return A.BoolOp(
                "and",
                tuple(A.Compare("=", side, side, span=node.span) for side in (node.left, node.right)),
                span=node.span,
            )
        return node

    return cond.transform(rewrite)


def _dnf(cond: A.Expr) -> list:
    """Disjunctive normal form over predicates (two-valued, as ``cepkit.semantics.conditions``): a list of
    conjunctions, each a list of literals (a predicate or ``BoolNot`` of one)."""
    if isinstance(cond, A.BoolOp):
        parts = [_dnf(arg) for arg in cond.args]
        if cond.op == "or":
            return [conj for part in parts for conj in part]
        return [sum(combo, []) for combo in itertools.product(*parts)]
    if isinstance(cond, A.BoolNot):
        inner = cond.arg
        if isinstance(inner, A.BoolNot):
            return _dnf(inner.arg)
        if isinstance(inner, A.BoolOp):
            dual = "and" if inner.op == "or" else "or"
            return _dnf(A.BoolOp(dual, tuple(A.BoolNot(a, span=a.span) for a in inner.args), span=inner.span))
    return [[cond]]


def _simplify(node) -> Optional[A.Pattern]:
    """Remove unsatisfiable sub-patterns: a sequence or iteration with one has no match; an OR drops it."""

    def step(n):
        if isinstance(n, A.Or):
            items = tuple(i for i in n.items if not isinstance(i, _Unsat))
            if not items:
                return _Unsat()
            return items[0] if len(items) == 1 else A.Or(items, span=n.span)
        if isinstance(n, A.Seq) and any(isinstance(i, _Unsat) for i in n.items):
            return _Unsat()
        if isinstance(n, (A.Plus, A.Filter, A.Strategy)) and isinstance(n.pattern, _Unsat):
            return _Unsat()
        return n

    out = node.transform(step)
    return None if isinstance(out, _Unsat) else out


def _pattern_children(node) -> list:
    if isinstance(node, (A.Seq, A.Or)):
        return list(node.items)
    if isinstance(node, (A.Filter, A.Plus, A.Strategy)):
        return [node.pattern]
    return []


def _with_child(node, index: int, child):
    if isinstance(node, (A.Seq, A.Or)):
        items = list(node.items)
        items[index] = child
        return type(node)(tuple(items), span=node.span)
    if isinstance(node, A.Filter):
        return A.Filter(child, node.cond, span=node.span)
    if isinstance(node, A.Plus):
        return A.Plus(child, span=node.span)
    return A.Strategy(node.name, child, span=node.span)


def _at(node, path):
    for i in path:
        node = _pattern_children(node)[i]
    return node


def _replace(node, path, new):
    if not path:
        return new
    child = _pattern_children(node)[path[0]]
    return _with_child(node, path[0], _replace(child, path[1:], new))


def _conditional_filter(node, path=()) -> Optional[tuple]:
    """The path to the first one-literal filter whose variable its own pattern does not bind."""
    if isinstance(node, A.Filter) and _literal_var(node.cond) not in bound(node.pattern):
        return path
    for i, child in enumerate(_pattern_children(node)):
        found = _conditional_filter(child, path + (i,))
        if found is not None:
            return found
    return None


def _pop_up(pattern, path, unsupported: Unsupported):
    """Theorem 2's pop-up of the conditional filter at ``path``: ρ, the lowest enclosing pattern binding
    its variable, becomes ``(ρ[filter ↦ ψ] FILTER P) OR ρ[filter ↦ unsat]``."""
    target = _at(pattern, path)
    var = _literal_var(target.cond)
    depth = max((d for d in range(len(path)) if var in bound(_at(pattern, path[:d]))), default=None)
    if depth is None:
        raise unsupported(target.cond, f"a filter on {var!r} outside every pattern that binds it")
    rho, inner = _at(pattern, path[:depth]), path[depth:]
    taken = A.Filter(_replace(rho, inner, target.pattern), target.cond, span=target.span)
    skipped = _replace(rho, inner, _Unsat())
    return _simplify(_replace(pattern, path[:depth], A.Or((taken, skipped), span=rho.span)))


def _push_down(node, pending: dict, unsupported: Unsupported):
    """Attach each pending literal (var -> [(literal, under a + since its filter)]) to the atoms defining
    its variable. Below a ``+`` a literal holds of every iteration (docs/language.md §10.6), which is a
    per-event test only when it is positive: ``not b.v > 5`` on a Kleene b says "some event", no atom can
    test that."""
    if isinstance(node, A.Filter):
        var = _literal_var(node.cond)
        pending = {**pending, var: pending.get(var, ()) + ((node.cond, False),)}
        return _push_down(node.pattern, pending, unsupported)
    if isinstance(node, A.Atom):
        lits = pending.get(node.var, ()) if node.var else ()
        for lit, under_plus in lits:
            if under_plus and isinstance(lit, A.BoolNot):
                raise unsupported(
                    lit,
                    f"a negated condition on Kleene variable {node.var!r} outside its "
                    "iteration (it asks for some event, not each)",
                )
        cond = A.conjoin(dict.fromkeys(lit for lit, _ in lits))
        return node if cond is None else A.Filter(node, cond, span=node.span)
    if isinstance(node, A.Plus):
        pending = {var: tuple((lit, True) for lit, _ in lits) for var, lits in pending.items()}
    children = [_push_down(child, pending, unsupported) for child in _pattern_children(node)]
    for i, child in enumerate(children):
        node = _with_child(node, i, child)
    return node


# ----------------------------------------------------------------------------- 3. Thompson construction
class _EpsilonCEA:
    """A CEA with ε-transitions under construction (Appendix C.2)."""

    def __init__(self, hierarchy):
        self.hierarchy = hierarchy
        self.n_states = 0
        self.edges: list = []  # (src, dst, guard, mark, var)
        self.eps: list = []  # (src, dst)

    def state(self) -> int:
        self.n_states += 1
        return self.n_states - 1

    def build(self, node) -> tuple:
        """(in, out) of the sub-automaton for ``node``."""
        if isinstance(node, (A.Atom, A.Filter)):
            atom, cond = (node.pattern, node.cond) if isinstance(node, A.Filter) else (node, None)
            q_in, q_out = self.state(), self.state()
            self.edges.append((q_in, q_in, Guard(), False, None))  # skip anything before it
            self.edges.append((q_in, q_out, self._guard(atom, cond), True, atom.var))
            return q_in, q_out
        if isinstance(node, A.Seq):
            parts = [self.build(item) for item in node.items]
            for (_, out1), (in2, _) in zip(parts, parts[1:]):
                self.eps.append((out1, in2))
            return parts[0][0], parts[-1][1]
        if isinstance(node, A.Or):
            q_in, q_out = self.state(), self.state()
            for item in node.items:
                i, o = self.build(item)
                self.eps += [(q_in, i), (o, q_out)]
            return q_in, q_out
        if isinstance(node, A.Plus):
            i, o = self.build(node.pattern)
            self.eps.append((o, i))
            return i, o
        if node.name in STRICT:
            return self._strict(node.pattern)
        return self.build(node.pattern)  # ALL, or NEXT/LAST/MAX applied to the matches (Program)

    def _guard(self, atom: A.Atom, cond) -> Guard:
        if atom.type is None:
            types = None
        elif self.hierarchy is not None and self.hierarchy.attribute is None:  # a concept of event types
            types = frozenset(self.hierarchy.covers(atom.type))
        else:
            types = frozenset({atom.type})
        return Guard(atom.type, types, on_event(cond, atom.var) if cond is not None else None)

    def _strict(self, pattern) -> tuple:
        """STRICT(φ) (Theorem 4): copy 0 has marked nothing yet and may skip; copy 1 has marked and may
        only mark, so the complex event is an interval."""
        inner = _EpsilonCEA(self.hierarchy)
        i, o = inner.build(pattern)
        base0 = self.n_states
        base1 = base0 + inner.n_states
        self.n_states += 2 * inner.n_states
        for src, dst, guard, mark, var in inner.edges:
            if mark:
                self.edges += [
                    (base0 + src, base1 + dst, guard, mark, var),
                    (base1 + src, base1 + dst, guard, mark, var),
                ]
            else:
                self.edges.append((base0 + src, base0 + dst, guard, mark, var))
        for src, dst in inner.eps:
            self.eps += [(base0 + src, base0 + dst), (base1 + src, base1 + dst)]
        return base0 + i, base1 + o


def thompson(pattern: Optional[A.Pattern], hierarchy=None, strict: bool = False) -> CEA:
    """The trimmed, ε-free CEA of an LP-normal pattern (None: the empty automaton); ``strict`` wraps the
    whole pattern in STRICT."""
    if pattern is None:
        return CEA(1, 0, frozenset(), ())
    if strict:
        pattern = A.Strategy("STRICT", pattern)
    eps_cea = _EpsilonCEA(hierarchy)
    q_in, q_out = eps_cea.build(pattern)
    return _remove_epsilon(eps_cea, q_in, q_out)


def _remove_epsilon(eps_cea: _EpsilonCEA, initial: int, final: int) -> CEA:
    """δ'(p) = ⋃ δ(p') over p' ∈ ε*(p); F' = {p : ε*(p) ∋ final}; then keep the states both reachable
    and co-reachable, renumbered in breadth-first order from the initial state (which becomes 0)."""
    n = eps_cea.n_states
    eps_out = [[] for _ in range(n)]
    for src, dst in eps_cea.eps:
        eps_out[src].append(dst)
    closure = []
    for p in range(n):
        seen, todo = {p}, [p]
        while todo:
            for q in eps_out[todo.pop()]:
                if q not in seen:
                    seen.add(q)
                    todo.append(q)
        closure.append(seen)
    out = [[] for _ in range(n)]
    for src, dst, guard, mark, var in eps_cea.edges:
        out[src].append((dst, guard, mark, var))
    delta = [list(dict.fromkeys(e for p2 in sorted(closure[p]) for e in out[p2])) for p in range(n)]
    finals = {p for p in range(n) if final in closure[p]}

    order, seen = [], {initial}
    todo = deque([initial])
    while todo:
        p = todo.popleft()
        order.append(p)
        for dst, *_ in delta[p]:
            if dst not in seen:
                seen.add(dst)
                todo.append(dst)
    into = {p: set() for p in order}
    for p in order:
        for dst, *_ in delta[p]:
            into[dst].add(p)
    useful, todo = set(finals & seen), [p for p in finals if p in seen]
    while todo:
        for src in into[todo.pop()]:
            if src not in useful:
                useful.add(src)
                todo.append(src)
    kept = [p for p in order if p in useful or p == initial]
    number = {p: i for i, p in enumerate(kept)}
    transitions = tuple(
        Transition(number[p], number[dst], guard, mark, var if mark else None)
        for p in kept
        for dst, guard, mark, var in delta[p]
        if dst in number
    )
    return CEA(len(kept), 0, frozenset(number[p] for p in kept if p in finals), transitions)


def compile_query(query, unsupported: Unsupported) -> tuple:
    """Check, rewrite to LP-normal form and build the CEA of ``query``; returns it with the nested
    selections (top strategies NEXT/LAST/MAX are applied by their algorithms over this CEA, STRICT by the
    STRICT construction, nested NEXT/LAST/MAX by filtering the matches)."""
    check_fragment(query, unsupported)
    nested = nested_selections(query, unsupported)
    pattern = lp_normal(query, unsupported)
    return thompson(pattern, query.hierarchy, strict=query.strategy in STRICT), nested
