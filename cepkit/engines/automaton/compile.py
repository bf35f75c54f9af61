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
   sub-patterns become a ◦-copy and a •-copy switching at the first • (Theorem 4), nested NEXT/LAST/MAX
   sub-patterns Theorem 4's closure where it applies (``nested_selections``, ``_EpsilonCEA._select``,
   ``closure.py``); ε-removal and trimming give the CEA A = (Q, Δ, q0, F) with Δ ⊆ Q × U × {•, ◦} × Q.

Each marking transition remembers the variable it binds, so matches carry bindings although CEL outputs
positions only.

>>> import cepkit
>>> q = cepkit.parse("(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)")
>>> print(cepkit.pretty(lp_normal(q)))
(T AS x FILTER x.tmp > 40 and x.id = 0) ; (H AS y FILTER y.hum < 25 and y.id = 0)
"""

from __future__ import annotations

import itertools
from collections import deque, namedtuple
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Optional

from ...errors import EventError, QueryError
from ...lang import ast as A
from ...lang.checks import bound, definitions
from ...semantics.conditions import holds
from .predicates import Alphabet, Guard, on_event

Unsupported = Callable[[A.Node, str], QueryError]

# Selection strategies the per-event algorithms implement at the top of a query (strategies.py); STRICT
# is also closed under nesting (Theorem 4, linear), so it may wrap any sub-pattern; NEXT/LAST/MAX inside a
# pattern select among the sub-pattern's matches over the whole stream (see ``nested_selections``).
TOP_STRATEGIES = ("ALL", "STRICT", "PARTITION_STRICT", "NEXT", "LAST", "MAX")
STRICT = ("STRICT", "PARTITION_STRICT")
RANKED = ("NEXT", "LAST", "MAX")
CLOSED = ("NEXT", "LAST", "MAX")  # nested, compiled by the closure where it applies (``nested_selections``)


@dataclass(frozen=True)
class Transition:
    """``src --guard/mark--> dst``; ``mark`` True is • (the event joins the complex event), False is ◦.
    ``var`` is the variable a • transition binds (None for ◦ and for anonymous atoms)."""

    src: int
    dst: int
    guard: Guard
    mark: bool
    var: Optional[str] = None
    # inside nested NEXT/LAST/MAX(φ) compiled by the closure: per enclosing selection k, the transition of
    # φ's automaton this one takes, (k, its source state, its edge), which k's tracker allows or not
    origin: tuple = ()


@dataclass(frozen=True)
class Selection:
    """A NEXT/LAST/MAX(φ) inside the pattern, as [CEL] Theorem 4's closure sees it: φ's own CEA A_φ over the
    ε-CEA's states, ``moves[r]`` the transitions of state r as (edge, target or ``SINK``, mark, guard,
    inner) where ``inner`` lists (k', source) for each selection k' nested inside φ that must allow the
    edge too. ``initial`` is the fresh entry (a run of φ that has marked nothing); ``SINK`` is [CEL]'s
    q_f, entered by the copies of the • transitions that complete a match of φ."""

    key: int
    name: str
    initial: int
    moves: dict
    # MAX: the ε-CEA edge of each product transition -> (the source's (T, U), None for the entry; its
    # mark; its target in A_φ or SINK; the target's (T, U), None for the exit; its ε-CEA source state)
    product: Optional[dict] = None


SINK = -1
MAX_PRODUCT = 2000  # (state, T, U) states of a MAX closure; past it MAX runs by filtering
MAX_CODES = 1024  # the test bits an event may have, explored to build them


class _TooLarge(Exception):
    """A MAX closure's product passes ``MAX_PRODUCT`` states (or its events ``MAX_CODES`` test bits)."""


def max_move(step, T: frozenset, U: frozenset, mark: bool) -> tuple:
    """[CEL] Algorithm 7's move of a run whose complex event C is that of the runs in T (U: those of a
    strict superset of C), reading an event it marks or skips; ``step(S, mark)`` is S's successors.
    Marked, a superset must mark it too; skipped, every superset goes on and C's runs that mark it
    become supersets. (T', U'), T' without what U' holds (dominated)."""
    if mark:
        after = frozenset(step(U, True))
        return frozenset(step(T, True)) - after, after
    after = frozenset(step(U, True) | step(U, False) | step(T, True))
    return frozenset(step(T, False)) - after, after


def max_reached(step, R: frozenset, entry: frozenset) -> frozenset:
    """R, the states of every run of A_φ that has marked something, after an event (``step`` as
    ``max_move``'s): those runs go on either way, and a run entering φ at ``entry`` joins them by marking."""
    return frozenset((step(R, True) | step(R, False) | step(entry, True)) - {SINK})


@dataclass(frozen=True)
class CEA:
    """A complex event automaton with states ``0..n_states-1``; a run accepts when it reaches a final
    state by a • transition ([CEL] §6-7)."""

    n_states: int
    initial: int
    finals: frozenset
    transitions: tuple
    selections: tuple = ()  # nested NEXT/LAST/MAX compiled by the closure, innermost first (``closure.py``)

    @cached_property
    def outgoing(self) -> tuple:
        """state -> the indices of its transitions."""
        out = [[] for _ in range(self.n_states)]
        for i, t in enumerate(self.transitions):
            out[t.src].append(i)
        return tuple(tuple(ts) for ts in out)

    @cached_property
    def guards(self) -> tuple:
        """The transitions' guards, then those only the selections' trackers read."""
        inner = (move[3] for sel in self.selections for moves in sel.moves.values() for move in moves)
        return tuple(dict.fromkeys([*(t.guard for t in self.transitions), *inner]))

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


def nested_selections(query, unsupported: Unsupported, closure_allowed: bool = True) -> tuple:
    """How the NEXT/LAST/MAX sub-patterns of ``query`` run: ("closure", ()), ("filter", the sub-patterns,
    one of each, checked) or (None, ()) when there is none.

    SEL(φ) chooses among every match of φ over the whole stream that fits the window (the reference's
    rivals), whatever surrounds it. **The closure** ([CEL] Theorem 4, ``Selection``, ``closure.py``) runs
    φ's automaton A_φ inside the pattern's, each of its transitions allowed at an event only when SEL's
    tracker (the ranked classes of every run of A_φ from the stream's start, a deterministic function of
    the stream) says the run taking it is the best one reaching its target: the selection is then part of
    the letters, and the pattern's automaton is evaluated as any other. MAX's pair (T, U) belongs to the
    run, so MAX(φ) is the product with A_φ's (T, U) states, only its entry reading a tracker
    (``_EpsilonCEA._select_max``). It applies without a window, wherever the selection stands (inside
    ``+``, NEXT/LAST nested, under any strategy but STRICT, with CONSUME BY and PARTITION BY). Under a
    window a better run that starts earlier may leave the window before the end of φ's match, so the best
    run of a state depends on its start, which a letter cannot carry; STRICT around the selection would
    copy A_φ; MAX's product is built over the events' test bits, which do not say what another
    selection's tracker allows. Those (and a MAX product past ``MAX_PRODUCT``) run by **filtering**: φ
    alone under SEL next to the
    pattern's automaton, whose matches are kept only if their sub-match of φ, read from the bindings of φ's
    variables, is one SEL chose (``plan.Program.nested``). That needs every atom of φ named by a variable
    used nowhere else, φ not inside a ``+`` (its variables would collect several sub-matches), no
    condition inside φ on a variable outside it, no nested selection inside φ, and a result no later step
    depends on (a top-level NEXT/LAST/MAX or CONSUME BY would need the filtered matches while the
    automaton runs).
    """
    found = []  # (node, inside a +, inside another selection)
    closure = closure_allowed and query.within is None and query.strategy not in STRICT

    def visit(node, under_plus: bool, under_strict: bool, under_selection: bool):
        nonlocal closure
        ranked = isinstance(node, A.Strategy) and node.name in RANKED
        if ranked:
            found.append((node, under_plus, under_selection))
            closure = closure and node.name in CLOSED and not under_strict
            if node.name == "MAX":  # alone: no selection around or inside it (its trackers read no other's)
                closure = closure and not under_selection and not any(map(_is_ranked, node.pattern.walk()))
        under_strict = under_strict or (isinstance(node, A.Strategy) and node.name in STRICT)
        for child in _pattern_children(node):
            visit(child, under_plus or isinstance(node, A.Plus), under_strict, under_selection or ranked)

    visit(query.scoped, False, False, False)
    if not found:
        return None, ()
    if closure:
        return "closure", ()
    outermost = [(node, under_plus) for node, under_plus, inner in found if not inner]
    for node, under_plus in outermost:
        _check_selection(query, node, under_plus, unsupported)
    return "filter", tuple(dict.fromkeys(node for node, _ in outermost))


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


def lp_normal(query, unsupported: Optional[Unsupported] = None, closure: bool = False) -> Optional[A.Pattern]:
    """The query's pattern (WHERE and condition items included) in LP-normal form: every filter is a
    ``Filter(Atom, condition on the atom's variable)``. None when the pattern can never match. With
    ``closure`` (nested NEXT/LAST/MAX compiled by the closure), a literal pushed into a selection from outside
    it is told apart (``_Layered``): the selection chooses among φ's matches without it."""
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
    return _push_down(pattern, {}, unsupported, closure)


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
    if any(_is_ranked(_at(pattern, path[:d])) for d in range(depth, len(path))):
        # inside NEXT/LAST/MAX(φ) the filter decides φ's rivals too: with P false φ's matches are the
        # other branches', so the branch for P false must not run when P holds (it would choose among fewer)
        cond = target.cond
        skipped = A.Filter(skipped, cond.arg if isinstance(cond, A.BoolNot) else A.BoolNot(cond), span=target.span)
    return _simplify(_replace(pattern, path[:depth], A.Or((taken, skipped), span=rho.span)))


def _is_ranked(node) -> bool:
    return isinstance(node, A.Strategy) and node.name in RANKED


@dataclass(frozen=True)
class _Layered(A.Filter):
    """An atom's filter some of whose literals were pushed into nested selections from outside them:
    ``layers`` pairs each literal with how many it crossed. Such a literal applies to the match, not to
    the rivals the crossed selections choose among (select, then filter)."""

    layers: tuple = ()

    @property
    def key(self) -> str:
        return "filter"

    def cond_within(self, depth: int) -> Optional[A.Expr]:
        """The literals a selection sees that has ``depth`` more selections between it and the atom."""
        return A.conjoin(dict.fromkeys(lit for lit, crossed in self.layers if crossed <= depth))


def _push_down(node, pending: dict, unsupported: Unsupported, closure: bool = False):
    """Attach each pending literal (var -> [(literal, under a + since its filter, selections crossed)]) to
    the atoms defining its variable. Below a ``+`` a literal holds of every iteration (docs/language.md
    §10.6), which is a per-event test only when it is positive: ``not b.v > 5`` on a Kleene b says "some
    event", no atom can test that. With ``closure`` the nested selections a literal is pushed into are
    counted (``_Layered``)."""
    if isinstance(node, A.Filter):
        var = _literal_var(node.cond)
        pending = {**pending, var: pending.get(var, ()) + ((node.cond, False, 0),)}
        return _push_down(node.pattern, pending, unsupported, closure)
    if closure and _is_ranked(node):
        pending = {var: tuple((lit, plus, crossed + 1) for lit, plus, crossed in lits) for var, lits in pending.items()}
    if isinstance(node, A.Atom):
        lits = pending.get(node.var, ()) if node.var else ()
        for lit, under_plus, _ in lits:
            if under_plus and isinstance(lit, A.BoolNot):
                raise unsupported(
                    lit,
                    f"a negated condition on Kleene variable {node.var!r} outside its "
                    "iteration (it asks for some event, not each)",
                )
        cond = A.conjoin(dict.fromkeys(lit for lit, _, _ in lits))
        if cond is None:
            return node
        if any(crossed for _, _, crossed in lits):
            layers = tuple((lit, crossed) for lit, _, crossed in lits)
            return _Layered(node, cond, layers=layers, span=node.span)
        return A.Filter(node, cond, span=node.span)
    if isinstance(node, A.Plus):
        pending = {var: tuple((lit, True, crossed) for lit, _, crossed in lits) for var, lits in pending.items()}
    children = [_push_down(child, pending, unsupported, closure) for child in _pattern_children(node)]
    for i, child in enumerate(children):
        node = _with_child(node, i, child)
    return node


# ----------------------------------------------------------------------------- 3. Thompson construction
_Edge = namedtuple("_Edge", "src dst guard mark var sels tracked ids fresh exits")
_Edge.__doc__ = """An ε-CEA transition. ``sels``: the closure's selections around it, outermost first, and
``tracked`` the guard each of their trackers reads (without the literals pushed in from outside it);
``ids``: which transition of each one's A_φ it is (None: its own index; a copy made for a selection is
the original for the selections inside that one); ``fresh``: those whose fresh entry is its source (a run
of φ that has marked nothing); ``exits``: those whose match of φ it completes (a copy into the
selection's exit: [CEL]'s q_f)."""


def _ident(e: _Edge, index: int, j: int) -> int:
    """Which transition of the A_φ of ``e.sels[j]`` the edge at ``index`` is."""
    return index if e.ids[j] is None else e.ids[j]


class _EpsilonCEA:
    """A CEA with ε-transitions under construction (Appendix C.2). With ``closure``, NEXT/LAST(φ) is
    built as [CEL] Theorem 4's closure (``_select``)."""

    def __init__(self, hierarchy, closure: bool = False, stack: tuple = (), selections: Optional[list] = None):
        self.hierarchy = hierarchy
        self.closure = closure
        self.n_states = 0
        self.edges: list = []  # _Edge
        self.eps: list = []  # (src, dst)
        self.stack = list(stack)  # the selections being built around the current node
        self.selections = [] if selections is None else selections  # (name, entry, exit, depth) per key

    def state(self) -> int:
        self.n_states += 1
        return self.n_states - 1

    def edge(self, src, dst, guard, mark, var, tracked=None) -> None:
        sels = tuple(self.stack)
        tracked = (guard,) * len(sels) if tracked is None else tracked
        self.edges.append(
            _Edge(src, dst, guard, mark, var, sels, tracked, (None,) * len(sels), frozenset(), frozenset())
        )

    def build(self, node) -> tuple:
        """(in, out) of the sub-automaton for ``node``."""
        if isinstance(node, (A.Atom, A.Filter)):
            atom, cond = (node.pattern, node.cond) if isinstance(node, A.Filter) else (node, None)
            q_in, q_out = self.state(), self.state()
            self.edge(q_in, q_in, Guard(), False, None)  # skip anything before it
            guard = self._guard(atom, cond)
            tracked = None
            if isinstance(node, _Layered):
                depth = len(self.stack)
                tracked = tuple(self._guard(atom, node.cond_within(depth - 1 - j)) for j in range(depth))
            self.edge(q_in, q_out, guard, True, atom.var, tracked)
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
        if self.closure and node.name == "MAX":
            return self._select_max(node)
        if self.closure and node.name in CLOSED:
            return self._select(node)
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
        inner = _EpsilonCEA(self.hierarchy, self.closure, self.stack, self.selections)
        i, o = inner.build(pattern)
        base0 = self.n_states
        base1 = base0 + inner.n_states
        self.n_states += 2 * inner.n_states
        for e in inner.edges:
            if e.mark:
                self.edges += [
                    e._replace(src=base0 + e.src, dst=base1 + e.dst),
                    e._replace(src=base1 + e.src, dst=base1 + e.dst),
                ]
            else:
                self.edges.append(e._replace(src=base0 + e.src, dst=base0 + e.dst))
        for src, dst in inner.eps:
            self.eps += [(base0 + src, base0 + dst), (base1 + src, base1 + dst)]
        return base0 + i, base1 + o

    def _select(self, node: A.Strategy) -> tuple:
        """NEXT/LAST(φ) as [CEL] Theorem 4's closure: φ's sub-automaton (its edges tagged with this
        selection, ``key``), entered only through a fresh state f (copies of the edges leaving φ's
        in-state: a run that has marked nothing, whatever else reaches that state later) and left only
        through an exit x (copies of the • edges that complete a match of φ). φ's out-state leads nowhere:
        the run either stays inside φ or leaves through x, which the tracker allows only for the best
        match of φ ending at that event."""
        key = len(self.selections)
        self.selections.append(None)
        entry, leave = self._region(node.pattern, key)
        self.selections[key] = (node.name, entry, leave, len(self.stack), None)
        return entry, leave

    def _region(self, pattern, key: int) -> tuple:
        """φ's sub-automaton tagged with selection ``key``, with its fresh entry and its exit."""
        first = len(self.edges)
        self.stack.append(key)
        i, o = self.build(pattern)
        self.stack.pop()
        entry, leave = self.state(), self.state()
        depth = len(self.stack)  # this selection's place in the edges' ``sels``

        def copy(index: int, e: _Edge, **change) -> None:
            # a new transition for this selection and those around it, the same one for those inside
            ids = (None,) * (depth + 1) + tuple(_ident(e, index, j) for j in range(depth + 1, len(e.sels)))
            self.edges.append(e._replace(ids=ids, **change))

        starts = self._closure([i])
        for index in range(first, len(self.edges)):
            e = self.edges[index]
            if e.src in starts:
                copy(index, e, src=entry, fresh=e.fresh | {key})
        ends = self._closure([o], backwards=True)
        for index in range(first, len(self.edges)):
            e = self.edges[index]
            if e.mark and e.dst in ends:
                copy(index, e, dst=leave, exits=e.exits | {key})
        return entry, leave

    def _select_max(self, node: A.Strategy) -> tuple:
        """MAX(φ) as [CEL] Theorem 4's closure: states (p, T, U), p a state of A_φ, T the states of the
        runs with p's run's complex event C, U those of runs with a strict superset of C (Algorithm 7's
        pair, here a run's own: two runs in one state of A_φ may differ). A run whose state U reaches is
        dominated and has no transition; one leaves through the exit only if no superset completes with
        it. The product is built over every (T, U) the test bits can reach; at the entry (a run that has
        marked nothing) T is the entry and U the states of every run that has marked something, R, the
        one thing the tracker keeps (``closure.MaxTracker``): an entry transition is allowed when the
        event and R give its target's (T, U), any other when the event does."""
        key = len(self.selections)
        self.selections.append(None)
        scratch = _EpsilonCEA(self.hierarchy, self.closure, (), self.selections)
        f, _ = scratch._region(node.pattern, key)
        moves = _phi_moves(scratch, key, f, [scratch._closure([p]) for p in range(scratch.n_states)])
        local = Alphabet([g for e in scratch.edges for g in (e.guard, *e.tracked)])
        codes = _codes(local)

        def step(code):
            return lambda S, mark: {
                dst for r in S for _, dst, m, guard, _ in moves[r] if m == mark and local.holds(guard, code)
            }

        start: frozenset = frozenset()
        reach, todo = {start}, [start]
        while todo:  # R: the states of the runs that have marked something
            R = todo.pop()
            for code in codes:
                moved = step(code)
                after = max_reached(moved, R, frozenset({f}))
                if after not in reach:
                    reach.add(after)
                    todo.append(after)
        entry, leave = self.state(), self.state()
        states: dict = {}
        built: set = set()
        product: dict = {}
        pending: list = []

        def add(src_pair, src_state, move, code) -> None:
            ident, dst, mark, _, _ = move
            e = scratch.edges[ident]
            if not local.holds(e.guard, code):
                return
            T, U = src_pair if src_pair is not None else (frozenset({f}), R)
            T2, U2 = max_move(step(code), T, U, mark)
            if dst == SINK:
                if SINK in U2:
                    return
                expect, target = None, leave
            else:
                if dst not in T2:
                    return
                expect = (T2 - {SINK}, U2 - {SINK})
                if (dst, expect) not in states:
                    states[dst, expect] = self.state()
                    pending.append((dst, expect))
                    if len(states) > MAX_PRODUCT:
                        raise _TooLarge
                target = states[dst, expect]
            if (src_state, ident, expect) in built:
                return
            built.add((src_state, ident, expect))
            product[len(self.edges)] = (src_pair, mark, dst, expect, src_state)
            fresh = frozenset({key}) if src_pair is None else frozenset()
            self.edges.append(
                _Edge(src_state, target, e.guard, mark, e.var, (key,), (e.guard,), (None,), fresh, frozenset())
            )

        for R in reach:
            for move in moves[f]:
                for code in codes:
                    add(None, entry, move, code)
        while pending:
            r, pair = pending.pop()
            for move in moves[r]:
                for code in codes:
                    add(pair, states[r, pair], move, code)
        self.selections[key] = ("MAX", entry, leave, len(self.stack), (f, moves, product))
        return entry, leave

    def _closure(self, states, backwards: bool = False) -> set:
        """The states reachable from ``states`` by ε-transitions (reaching them, with ``backwards``)."""
        follow: dict = {}
        for src, dst in self.eps:
            a, b = (dst, src) if backwards else (src, dst)
            follow.setdefault(a, []).append(b)
        seen, todo = set(states), list(states)
        while todo:
            for q in follow.get(todo.pop(), ()):
                if q not in seen:
                    seen.add(q)
                    todo.append(q)
        return seen


def thompson(pattern: Optional[A.Pattern], hierarchy=None, strict: bool = False, closure: bool = False) -> CEA:
    """The trimmed, ε-free CEA of an LP-normal pattern (None: the empty automaton); ``strict`` wraps the
    whole pattern in STRICT; ``closure`` compiles nested NEXT/LAST/MAX by [CEL] Theorem 4's closure."""
    if pattern is None:
        return CEA(1, 0, frozenset(), ())
    if strict:
        pattern = A.Strategy("STRICT", pattern)
    eps_cea = _EpsilonCEA(hierarchy, closure)
    q_in, q_out = eps_cea.build(pattern)
    return _remove_epsilon(eps_cea, q_in, q_out)


def _remove_epsilon(eps_cea: _EpsilonCEA, initial: int, final: int) -> CEA:
    """δ'(p) = ⋃ δ(p') over p' ∈ ε*(p); F' = {p : ε*(p) ∋ final}; then keep the states both reachable
    and co-reachable, renumbered in breadth-first order from the initial state (which becomes 0). A
    transition inside a closure's selection k records (k, the state of A_φ it leaves, its edge): that
    state is p itself, or k's fresh entry for the entry's copies."""
    n = eps_cea.n_states
    closure = [eps_cea._closure([p]) for p in range(n)]
    out = [[] for _ in range(n)]
    for index, e in enumerate(eps_cea.edges):
        out[e.src].append(index)
    delta = [
        list(
            dict.fromkeys(
                (e.dst, e.guard, e.mark, e.var, _origin(eps_cea, e, index, p))
                for p2 in sorted(closure[p])
                for index in out[p2]
                for e in (eps_cea.edges[index],)
            )
        )
        for p in range(n)
    ]
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
        Transition(number[p], number[dst], guard, mark, var if mark else None, tags)
        for p in kept
        for dst, guard, mark, var, tags in delta[p]
        if dst in number
    )
    return CEA(
        len(kept),
        0,
        frozenset(number[p] for p in kept if p in finals),
        transitions,
        _selections(eps_cea, closure),
    )


def _selections(eps_cea: _EpsilonCEA, closure: list) -> tuple:
    """Each closure selection (``Selection``), innermost first."""
    found = []
    for key, (name, entry, _, depth, built) in enumerate(eps_cea.selections):
        if built is None:
            selection = Selection(key, name, entry, _phi_moves(eps_cea, key, entry, closure))
        else:  # MAX: A_φ in its own numbering, and the product transitions
            selection = Selection(key, name, built[0], built[1], built[2])
        found.append((-depth, key, selection))
    return tuple(sel for _, _, sel in sorted(found))


def _origin(eps_cea: _EpsilonCEA, e: _Edge, index: int, p: int, outer: int = -1) -> tuple:
    """(k, the state of k's A_φ the edge at ``index`` leaves, which edge of it) for each selection k around
    ``e`` inside ``e.sels[outer]``: that state is ``p``, or k's fresh entry for the entry's copies."""
    return tuple(
        (k, eps_cea.selections[k][1] if k in e.fresh else p, _ident(e, index, j))
        for j, k in enumerate(e.sels)
        if j > outer
    )


def _phi_moves(eps_cea: _EpsilonCEA, key: int, entry: int, closure: list) -> dict:
    """Selection ``key``'s A_φ: its states are its fresh entry and the targets of its edges; a state's
    moves are the edges leaving its ε-closure (the entry's: its own)."""
    edges = [(index, e) for index, e in enumerate(eps_cea.edges) if key in e.sels]
    states = {entry} | {e.dst for _, e in edges if key not in e.exits}
    moves = {}
    for r in sorted(states):
        sources = {entry} if r == entry else closure[r]
        moves[r] = tuple(
            (
                _ident(e, index, e.sels.index(key)),
                SINK if key in e.exits else e.dst,
                e.mark,
                e.tracked[e.sels.index(key)],
                _origin(eps_cea, e, index, r, e.sels.index(key)),
            )
            for index, e in edges
            if e.src in sources
        )
    return moves


def _codes(alphabet: Alphabet) -> list:
    """Every test-bit vector an event may have: one type (each one the tests name, and one they do not)
    with every truth of the conditions."""
    types = sorted({t for kind, payload in alphabet.tests if kind == "type" for t in payload}) + [None]
    conditions = [i for i, (kind, _) in enumerate(alphabet.tests) if kind == "cond"]
    if len(types) << len(conditions) > MAX_CODES:
        raise _TooLarge
    out = []
    for t in types:
        base = sum(1 << i for i, (kind, payload) in enumerate(alphabet.tests) if kind == "type" and t in payload)
        for bits in itertools.product((0, 1), repeat=len(conditions)):
            out.append(base | sum(bit << i for bit, i in zip(bits, conditions)))
    return out


def compile_query(query, unsupported: Unsupported) -> tuple:
    """Check, rewrite to LP-normal form and build the CEA of ``query``; returns it, how nested
    NEXT/LAST/MAX run ("closure", "filter" or None) and those the filtering plan runs (top strategies
    NEXT/LAST/MAX are applied by their algorithms over this CEA, STRICT by the STRICT construction)."""
    check_fragment(query, unsupported)
    how, nested = nested_selections(query, unsupported)
    if how == "closure":
        try:
            return thompson(lp_normal(query, unsupported, True), query.hierarchy, closure=True), how, nested
        except _TooLarge:  # a MAX closure's product is too large: filtering
            how, nested = nested_selections(query, unsupported, closure_allowed=False)
    pattern = lp_normal(query, unsupported)
    return thompson(pattern, query.hierarchy, strict=query.strategy in STRICT), how, nested
