"""Skip-till-next-match (STNM, [SES] Def 6.1) and robust STNM (ROBUST_STNM, Def 6.2).

Both are defined on SES patterns, a sequence of sets of variables ⟨B1 … Bk⟩ where a variable binds one
event or, as ``v+``, a chronological sequence of events: ``SEQ({C c, P+ p, D d}, {B b})``, or
``SEQ(A a, B+ b, C c)`` (each item a set of one). Conditions (FILTER, WHERE, condition items) may stand
anywhere; a condition written inside a ``+`` holds for each of its events. Negations and EXISTS may stand
between the sets: a match must satisfy them, the prefix test below ignores them.

A match γ binds events e1 … en (in logical order). It is *disqualified* when, for some i, an event e not
in γ with e_i < e < e_(i+1) extends the prefix γ̂ = γ restricted to e1 … ei (``γ̂ ⊎ {v/e}``: a new binding
of a variable v, or one more event of a Kleene v) into

- STNM: a match of a *pattern prefix* ⟨B1 … B(m−1), B̂m⟩ (B̂m a non-empty subset of Bm): the constraints
  among the bound variables hold (types, conditions mentioning only bound variables, order between
  sets, the window), the greedy "next fitting event" that STNM may not skip;
- ROBUST_STNM: a prefix of some full match γ′ (an ALL match), so events that fit a partial match but
  never complete one stop blocking.

**Decision on a Kleene variable of the last set (docs/decisions.md).** We follow Alg 2: the full match also
counts as its own prefix (i = n), so γ is disqualified when an event after e_n, within the window from
e1, extends a Kleene variable of the last set into another full match: only the longest extension is
reported, e.g. {a/e1, b/⟨e2,e5⟩} and not its truncation {a/e1, b/⟨e2⟩}. ALL keeps every match.

**Θ_eq⁺ (docs/references.md E11, partition invariance).** The prefixes are judged on Θ ∪ Θ_eq⁺: the equalities
between the pattern's variables that Θ's equalities imply (``a.PID = c.PID`` from ``a.PID = b.PID`` and
``b.PID = c.PID``; ``prev(p.PID) = p.PID`` for a Kleene p tied to another variable;
``cepkit.lang.equalities``) are added before judging, correcting Def 6.1. Full matches satisfy
them anyway, so only which prefixes block changes: on A1 C2 C3 B4 (PIDs 1 2 1 1) with ``SEQ({A a, C c},
{B b})``, ``a.PID = b.PID and b.PID = c.PID``, c2 no longer extends the prefix {a1}, and STNM finds
{a1, c3, b4} with or without ``PARTITION BY PID``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import QueryError
from ..lang import ast as A
from ..lang.equalities import transitive_equalities
from .conditions import bound_conditions_hold
from .derivations import generating
from .truth import Truth, all3, any3, not3

STNM_STRATEGIES = ("STNM", "ROBUST_STNM")


@dataclass(frozen=True)
class Element:
    """One variable of an SES pattern: its atom, whether it is Kleene (``v+``), and its set's number."""

    atom: A.Atom
    kleene: bool
    set_index: int


@dataclass(frozen=True, eq=False)
class SesShape:
    """A pattern read as ⟨B1 … Bk⟩: its elements and its conditions, each with the variable it is checked
    per event for (a condition inside a ``+``) or None; Θ_eq⁺ − Θ is among them (docs/references.md E11)."""

    elements: tuple
    conditions: tuple

    def index_of(self, atom: A.Atom) -> int:
        return next(k for k, e in enumerate(self.elements) if e.atom is atom)


def check_stnm_shape(pattern: A.Pattern, query) -> SesShape:
    """The SES reading of ``pattern``; QueryError (caret on the culprit) when it is not a sequence of sets."""
    try:
        return ses_shape(pattern)
    except _NotSes as err:
        raise QueryError.at(
            err.node,
            "STNM and ROBUST_STNM are defined on sequences of sets of events and "
            "Kleene events ([SES] Def 6.1), like SEQ({A a, B+ b}, C c); this "
            "is not one",
            query.text,
        ) from None


class _NotSes(Exception):
    def __init__(self, node):
        self.node = node


def ses_shape(pattern: A.Pattern) -> SesShape:
    """``pattern`` read as a sequence of sets; raises ``_NotSes`` at the first node that does not fit."""
    conditions: list = []

    def strip(node, per_event=None):
        while isinstance(node, A.Filter):
            conditions.extend((c, per_event) for c in A.conjuncts(node.cond))  # Θ̂ keeps conjuncts on bound vars
            node = node.pattern
        return node

    top = strip(pattern)
    sets = generating(top.items) if isinstance(top, A.Seq) else [top]
    elements = []
    for k, group in enumerate(sets):
        group = strip(group)
        for member in generating(group.items) if isinstance(group, A.And) else [group]:
            member = strip(member)
            if isinstance(member, A.Plus):
                atom = strip(member.pattern, per_event=_var_of(member.pattern))
                if not isinstance(atom, A.Atom):
                    raise _NotSes(member)
                elements.append(Element(atom, True, k))
            elif isinstance(member, A.Atom):
                elements.append(Element(member, False, k))
            else:
                raise _NotSes(member)
    names = {e.atom.var for e in elements if e.atom.var}
    kleene = {e.atom.var for e in elements if e.kleene and e.atom.var}
    closure = transitive_equalities((c for c, _ in conditions), kleene, names)  # Θ_eq⁺ − Θ, docs/references.md E11
    return SesShape(tuple(elements), tuple(conditions) + tuple((c, None) for c in closure))


def _var_of(node):
    while isinstance(node, A.Filter):
        node = node.pattern
    return node.var if isinstance(node, A.Atom) else None


def assignment(d, shape: SesShape) -> tuple:
    """The events of a derivation per element of ``shape``: a tuple of logical indices per element."""
    out = [()] * len(shape.elements)

    def walk(x):
        if isinstance(x.node, A.Atom):
            k = shape.index_of(x.node)
            out[k] = out[k] + tuple(x.positions)
        for part in x.parts:
            walk(part)

    walk(d)
    return tuple(out)


class _Judge:
    """STNM / ROBUST_STNM over one sub-stream, given the ALL matches and their truth."""

    def __init__(self, shape: SesShape, matches: list, stream, type_matches):
        self.shape, self.stream, self.type_matches = shape, stream, type_matches
        self.prefixes: dict = {}  # ROBUST_STNM: prefix of a full match -> truths of those matches
        for d, truth in matches:
            if truth is not False:
                full = assignment(d, shape)
                for e in sorted(d.positions):
                    key = tuple(tuple(i for i in idx if i <= e) for idx in full)
                    self.prefixes.setdefault(key, []).append(truth)

    def keep(self, d, truth: Truth, robust: bool) -> Truth:
        """Whether match ``d`` (whose own truth is ``truth``) conforms."""
        if truth is False:
            return False
        verdicts = []
        for _, _, verdict in self.skipped(d, robust):
            if verdict is True:
                return False
            verdicts.append(verdict)
        return all3([truth, not3(any3(verdicts))])

    def skipped(self, d, robust: bool):
        """(e, extended prefix, verdict) for each event e that d skips and that extends one of its prefixes
        γ̂ (verdict True: e disqualifies d); last (None, None, None) when the window is still open (a later
        event may still disqualify d)."""
        full = assignment(d, self.shape)
        events = sorted(d.positions)
        scope = self.stream.window_scope(events[0], events[-1])
        for i, ei in enumerate(events):
            after = events[i + 1] if i + 1 < len(events) else scope.hi  # i = n: docs/decisions.md, within the window
            prefix = tuple(tuple(j for j in idx if j <= ei) for idx in full)
            for e in range(ei + 1, after):
                for extended in self._extensions(prefix, e):
                    yield e, extended, any3(self.prefixes.get(extended, ())) if robust else self._prefix_match(extended)
        if scope.open:
            yield None, None, None

    def _extensions(self, prefix: tuple, e: int):
        """γ̂ ⊎ {v/⟨e⟩} for every element v that can take event e."""
        event_type = self.stream.events[e].type
        for k, element in enumerate(self.shape.elements):
            if (not prefix[k] or element.kleene) and self.type_matches(element.atom.type, event_type):
                yield prefix[:k] + (prefix[k] + (e,),) + prefix[k + 1 :]

    def _prefix_match(self, assign: tuple) -> bool:
        """Whether ``assign`` matches a pattern prefix ⟨B1 … B(m−1), B̂m⟩ (Def 6.1, with Θ̂)."""
        elements = self.shape.elements
        bound = [k for k, idx in enumerate(assign) if idx]
        m = max(elements[k].set_index for k in bound)
        if any(not assign[k] for k, el in enumerate(elements) if el.set_index < m):
            return False
        for a in bound:
            for b in bound:
                if elements[a].set_index < elements[b].set_index and max(assign[a]) >= min(assign[b]):
                    return False
        used = [i for k in bound for i in assign[k]]
        if not self.stream.fits(min(used), max(used)):
            return False
        env = {
            elements[k].atom.var: (assign[k] if elements[k].kleene else assign[k][0])
            for k in bound
            if elements[k].atom.var
        }
        return bound_conditions_hold(self.shape.conditions, env, self.stream.events)


def stnm_select(strategy: str, matches: list, stream, type_matches) -> list:
    """The top-level STNM / ROBUST_STNM selection among (derivation, truth) pairs."""
    if not matches:
        return []
    judge = _Judge(ses_shape(matches[0][0].node), matches, stream, type_matches)
    robust = strategy == "ROBUST_STNM"
    return [(d, judge.keep(d, t, robust)) for d, t in matches]


def stnm_blocker(strategy: str, d, matches: list, stream, type_matches):
    """Why a top-level STNM / ROBUST_STNM drops match ``d``: (e, extended prefix) for the first skipped event
    that disqualifies it, or None (for ``cepkit.explain``)."""
    judge = _Judge(ses_shape(d.node), matches, stream, type_matches)
    return next(
        ((e, extended) for e, extended, verdict in judge.skipped(d, strategy == "ROBUST_STNM") if verdict is True), None
    )


def stnm_keep(strategy: str, d, truth: Truth, rivals: list, stream, type_matches) -> Truth:
    """A nested ``STNM(p)`` / ``ROBUST_STNM(p)``: whether d's match of p conforms among ``rivals``
    (every (derivation, truth) of p in the same surroundings)."""
    judge = _Judge(ses_shape(d.node), rivals, stream, type_matches)
    return judge.keep(d, truth, strategy == "ROBUST_STNM")
