"""Phase 2 of the reference evaluator: a derivation walked top down, with the full environment.

What phase 1 could not decide needs the enclosing bindings or neighbours, known only here:

- filters correlated with enclosing variables (CEL φ4), evaluated with the outer bindings;
- negations and EXISTS (NEEL, [LIU] §5.1.2; docs/language.md §2, §10.4, §10.11). ``!p`` in a SEQ holds
  when no match of p lies strictly between the nearest *positive* items on its left and right; with no
  positive neighbour on one side the bound comes from the enclosing SEQ's neighbours of the nested item
  (or of the ``+`` item, for a negation inside an iteration), then from the window: (last − w) on the
  left, (first + w) on the right, the stream's start or end without WITHIN. In an AND, ``!p`` is checked
  from (last − w) to (first + w) of the AND's own events, clipped by the enclosing neighbours. A match
  of p must lie wholly inside the scope and use none of the match's own events (they never block
  themselves). ``EXISTS p`` is the same with "some match"; EXISTS items bound nothing. Conjuncts on
  negated variables were moved inside their negation by ``cepkit.lang.scope``, so "no match of p" means
  "no b with ...";
- nested selection strategies (``NEXT(A a ; B+ b) ; C c``).

Every check answers in three-valued logic (``cepkit.semantics.truth``): ``None`` while a scope is still
open on an incomplete stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..lang import ast as A
from .conditions import holds
from .derivations import Derivation, Deriver
from .stnm import STNM_STRATEGIES, stnm_keep
from .strategies import is_interval, rank_better
from .substream import Scope, Substream
from .truth import Truth, all3, any3, not3


@dataclass(frozen=True)
class Context:
    """What a sub-derivation sees from around it: the enclosing bindings, the bounds a negation without a
    positive neighbour takes, and the positions of the match (which never block its own negations)."""

    env: Mapping
    scope: Scope
    own: frozenset


class Checker(A.Visitor):
    """Phase 2 over one sub-stream.

    ``exhaustive`` checks every item of a SEQ/AND/iteration and the pattern under a failed filter even once
    the answer is known to be False (same answers, more work): ``cepkit.explain`` lists every failed clause.
    """

    exhaustive = False

    def __init__(self, stream: Substream, deriver: Deriver):
        self.stream = stream
        self.deriver = deriver
        self._by_last: dict = {}  # id(pattern) -> {last position: its derivations}, see _ending_at

    def valid(self, d: Derivation) -> Truth:
        """Whether a whole-pattern derivation is a match: its negation scopes end at the window."""
        return self.check(d, Context({}, self.stream.window_scope(d.first, d.last), d.positions))

    def check(self, d: Derivation, ctx: Context) -> Truth:
        self.deriver.charge(d.node, 1)  # a check is a step of the search budget (a rival set may be huge)
        return self.visit(d.node, d, ctx)

    # ------------------------------------------------------------------ nodes
    def visit_atom(self, node, d, ctx):
        return True

    def visit_or(self, node, d, ctx):
        return self.check(d.parts[0], ctx)

    def visit_plus(self, node, d, ctx):
        return all3(self._all(self.check(part, ctx) for part in d.parts))

    def visit_filter(self, node: A.Filter, d, ctx):
        ok = self.deriver.is_closed(node) or self.filter_holds(node, {**ctx.env, **d.bindings})
        if not ok and not self.exhaustive:
            return False
        return all3([ok, self.check(d.parts[0], ctx)])

    def filter_holds(self, node: A.Filter, env: Mapping) -> bool:
        """Whether a filter left to phase 2 holds with the bindings ``env``."""
        return holds(node.cond, env, self.stream.events)

    def _all(self, truths):
        """``truths`` as they come (all3 stops at the first False), or all of them when ``exhaustive``."""
        return list(truths) if self.exhaustive else truths

    def visit_seq(self, node: A.Seq, d, ctx):
        env = {**ctx.env, **d.bindings}
        parts = dict(zip((k for k, item in enumerate(node.items) if isinstance(item, A.Pattern)), d.parts))

        def scope_at(k: int) -> Scope:
            """Between the nearest positive items left and right of item k, else the inherited bounds."""
            left = max((j for j in parts if j < k), default=None)
            right = min((j for j in parts if j > k), default=None)
            return Scope(
                ctx.scope.lo if left is None else parts[left].last,
                ctx.scope.hi if right is None else parts[right].first,
                ctx.scope.open if right is None else False,
            )

        def results():
            for k, item in enumerate(node.items):
                if k in parts:
                    yield self.check(parts[k], Context(env, scope_at(k), ctx.own))
                else:
                    yield self.holds(item, scope_at(k), env, ctx.own)

        return all3(self._all(results()))

    def visit_and(self, node: A.And, d, ctx):
        env = {**ctx.env, **d.bindings}
        scope = self.stream.window_scope(d.first, d.last).meet(ctx.scope)
        inner = Context(env, scope, ctx.own)
        booleans = (item for item in node.items if not isinstance(item, A.Pattern))
        return all3(
            [
                *(self.check(part, inner) for part in d.parts),
                *(self.holds(item, scope, env, ctx.own) for item in booleans),
            ]
        )

    def visit_strategy(self, node: A.Strategy, d, ctx):
        """``SEL(p)`` inside a larger pattern: d's own match of p must hold, and no better match of p ending at
        the same position may hold in the same surroundings (same enclosing bindings and bounds)."""
        inner = d.parts[0]
        if node.name in ("STRICT", "PARTITION_STRICT"):
            return self.check(inner, ctx) if is_interval(d.positions) else False
        if node.name == "ALL":
            return self.check(inner, ctx)
        if node.name in STNM_STRATEGIES:
            rivals = [(c, self.check(c, self._beside(ctx, c))) for c in self.deriver.derive(node.pattern)]
            return stnm_keep(node.name, inner, self.check(inner, ctx), rivals, self.stream, self.deriver.type_matches)
        rivals = self._ending_at(node.pattern).get(d.last, ())
        self.deriver.charge(node, len(rivals))  # d is compared with each: a step each (LAST(((ANY OR ANY)+)+))
        better = rank_better(node.name, inner, rivals)
        return all3([self.check(inner, ctx), *(not3(self.check(c, self._beside(ctx, c))) for c in better)])

    def _ending_at(self, pattern) -> dict:
        """The derivations of ``pattern`` by last position, grouped once per pattern (a ranked strategy compares
        each derivation with those ending where it ends)."""
        key = id(pattern)
        if key not in self._by_last:
            groups: dict = {}
            for c in self.deriver.derive(pattern):
                groups.setdefault(c.last, []).append(c)
            self._by_last[key] = groups
        return self._by_last[key]

    @staticmethod
    def _beside(ctx: Context, rival: Derivation) -> Context:
        """The surroundings of ``ctx`` for a rival match of the same sub-pattern."""
        return Context(ctx.env, ctx.scope, ctx.own | rival.positions)

    # ------------------------------------------------------------------ negation and EXISTS
    def holds(self, item, scope: Scope, env: Mapping, own: frozenset) -> Truth:
        """``!p`` / ``EXISTS p`` over ``scope``: whether (no) match of p lies strictly inside it."""
        if isinstance(item, A.Not):
            return not3(self.holds(item.item, scope, env, own))
        if isinstance(item, A.Exists):
            return self.holds(item.item, scope, env, own)
        return any3(truth for _, truth in self.witnesses(item, scope, env, own))

    def witnesses(self, item: A.Pattern, scope: Scope, env: Mapping, own: frozenset):
        """(derivation, truth) for each match of ``item`` strictly inside ``scope`` that uses none of ``own``;
        last (None, None) when the scope is still open (a later event may still be a witness)."""
        for w in self.deriver.derive(item, scope.lo + 1, scope.hi, windowed=False):
            if not w.positions & own:
                yield w, self.check(w, Context(env, scope, own | w.positions))
        if scope.open:
            yield None, None
