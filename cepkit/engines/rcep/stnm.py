"""Skip-till-next-match on the recomputed matches ([RCEP] §2.3.3 STN; docs/language.md §5 ``STNM``).

The language defines STNM as SES's Def 6.1 (``cepkit.semantics.stnm``): a match γ with events e1 .. en is
disqualified when an event e outside γ, with e_i < e < e_(i+1), extends the prefix γ restricted to
e1 .. ei into a match of a pattern prefix (every condition on the bound variables holds, in order, within
the window): the "next fitting event" STNM may not skip. For a sequence of variables the only extensions
are one more event of e_i's variable (if it is Kleene) or the first event of the next variable; the
candidates are exactly the stored events of those variables' trees (their local tests passed), so the
recomputation has everything it needs at the trigger. With a Kleene last variable the full match is its
own prefix (i = n, docs/decisions.md): a later event within the window that extends the last variable
disqualifies it, so such a match is final only once the window from its first event has passed.

The prefixes are judged on Θ ∪ Θ_eq⁺ (docs/references.md E11, ``cepkit.lang.equalities``), as in the reference:
the equalities Θ's equalities imply between the variables, e.g. ``a.PID = c.PID`` from ``a.PID = b.PID``
and ``b.PID = c.PID``, so an event that disagrees with the prefix on them never blocks.

[RCEP] Fig. 2.4: e18 = 401 blocks e19 = 400, so e16, e17, e19, e20 is not an STN match.

ROBUST_STNM ([SES] Def 6.2, absent from [RCEP]) blocks only with an event that extends the prefix into a
prefix of some full (ALL) match, so it needs the matches, not the trees: ``RobustSkipTillNext`` keeps, for
each prefix of every match recomputed so far, the earliest event a match binds right after it. Every such
match starts with the same first event as the prefix, so it is recomputed before that event's window
passes, when the waiting match is judged.
"""

from __future__ import annotations

import math

from ...lang.equalities import transitive_equalities
from ...lang.window import fits_time
from ...semantics.conditions import bound_conditions_hold
from ..conjuncts import condition_role


class SkipTillNext:
    """The STNM test of one plan: ``blocked`` (between the events of a match, at its trigger) and
    ``extends`` (a later event extending the last Kleene variable)."""

    def __init__(self, plan):
        self.plan = plan
        pattern = plan.pattern
        # every condition but the local tests, which the trees' events passed one by one
        self.conditions = (
            [(j.cond, None) for j in pattern.joins]
            + [(c.cond, None) for c in pattern.chains]
            + [(r, None) for r in pattern.residual]
            + [(cond, slot.var) for slot in pattern.slots for cond in slot.per_event]
        )
        written = [c for c, _ in self.conditions] + [c for slot in pattern.slots for c in slot.local]
        closure = transitive_equalities(
            written, {s.var for s in pattern.slots if s.kleene and s.var}, {s.var for s in pattern.slots if s.var}
        )
        self.conditions += [(cond, None) for cond in closure]  # Θ_eq⁺ − Θ (docs/references.md E11)
        roles = [
            condition_role(cond, pattern.variables, {s.var for s in pattern.slots if s.kleene}) for cond in closure
        ]
        # the closure as joins and chains, for the kernel (``kernel.skip_till_next``): equalities between two
        # variables and ``prev(v.A) = v.A`` are always one or the other
        self.closure_joins = tuple(role[1] for role in roles if role[0] == "join")
        self.closure_chains = tuple(role[1] for role in roles if role[0] == "chain")
        self.closure_known = len(self.closure_joins) + len(self.closure_chains) == len(closure)
        self.waits = pattern.slots[-1].kleene

    def fresh(self) -> "SkipTillNext":
        """The judge of one matcher (this one keeps no state)."""
        return self

    def final(self, chosen: list) -> bool:
        """Whether a match whose window has passed is reported (STNM judged it at its trigger)."""
        return True

    def retain(self, waiting: list) -> None:
        """Called with the matches still waiting after some were released (this judge keeps nothing)."""

    def blocked(self, trees, chosen: list) -> bool:
        """Whether an event between two events of the match (``chosen``: (slot, events) left to right)
        extends the prefix before it."""
        sequence = [(s, e) for s, events in chosen for e in events]
        for i in range(len(sequence) - 1):
            (s, event), (_, following) = sequence[i], sequence[i + 1]
            prefix = _prefix(chosen, event.position)
            for k in ([s] if self.plan.slots[s].kleene else []) + ([s + 1] if s + 1 < len(chosen) else []):
                tree = trees[k]
                for e in tree.events[tree.start :]:
                    if event.position < e.position < following.position and self._fits(prefix, k, e):
                        return True
        return False

    def extends(self, chosen: list, event) -> bool:
        """Whether ``event`` (later than the match and inside its window, of its partition, accepted by the
        last variable's tree) extends the match's last Kleene variable into another match."""
        return self._fits(chosen, len(chosen) - 1, event)

    def closed(self, chosen: list, first_seq: int, event, seq) -> bool:
        """Whether the window of the match's first event has passed by ``event`` (any partition, for a time
        window) or by sub-stream number ``seq`` (its own partition, else None, for ``n EVENTS``): no later
        event can extend it, so it is final."""
        plan = self.plan
        if plan.window_seconds is not None:
            return not fits_time(plan.window_seconds, chosen[0][1][0].time, event.time)
        if plan.window_events is not None:
            return seq is not None and seq - first_seq >= plan.window_events
        return False

    def _fits(self, prefix: list, k: int, event) -> bool:
        """The prefix with ``event`` added to slot k satisfies every condition on its bound variables."""
        extended = [(s, events + ((event,) if s == k else ())) for s, events in prefix]
        if k == len(prefix):
            extended.append((k, (event,)))
        events, env = [], {}
        for s, picked in extended:
            slot = self.plan.slots[s]
            indices = tuple(range(len(events), len(events) + len(picked)))
            events += picked
            if slot.var is not None:
                env[slot.var] = indices if slot.kleene else indices[0]
        return bound_conditions_hold(self.conditions, env, events)


def _prefix(chosen: list, upto: int) -> list:
    """The slots' events at or before position ``upto`` (empty slots dropped)."""
    out = []
    for s, events in chosen:
        kept = tuple(e for e in events if e.position <= upto)
        if kept:
            out.append((s, kept))
    return out


class RobustSkipTillNext(SkipTillNext):
    """ROBUST_STNM ([SES] Def 6.2): a match γ = e1 .. en is disqualified when an event e, e_i < e < e_(i+1)
    (or after e_n within the window), extends γ's prefix e1 .. ei into a prefix of some ALL match γ′. Such
    a γ′ starts with γ's prefix and binds e right after it: γ is disqualified exactly when, for some i,
    the earliest event any ALL match binds right after e1 .. ei comes before e_(i+1) (exists, for i = n).
    Every match waits until the window of its first event has passed (each γ′ is found by then)."""

    def __init__(self, plan):
        super().__init__(plan)
        self.waits = True
        self.next_event: dict = {}  # first (slot, position) -> {prefix of (slot, position): earliest next}

    def fresh(self) -> "RobustSkipTillNext":
        return RobustSkipTillNext(self.plan)

    def blocked(self, trees, chosen: list) -> bool:
        """Never at the trigger: the match's prefixes join the index, the match waits (``final``)."""
        pairs = _pairs(chosen)
        index = self.next_event.setdefault(pairs[0], {})
        for j in range(1, len(pairs)):
            key, following = pairs[:j], pairs[j][0]
            if following < index.get(key, math.inf):
                index[key] = following
        return False

    def extends(self, chosen: list, event) -> bool:
        return False

    def final(self, chosen: list) -> bool:
        """Whether no ALL match extends a prefix of the match by an event it skipped."""
        pairs = _pairs(chosen)
        index = self.next_event.get(pairs[0], {})
        for i in range(1, len(pairs) + 1):
            following = pairs[i][0] if i < len(pairs) else math.inf
            if index.get(pairs[:i], math.inf) < following:
                return False
        return True

    def retain(self, waiting: list) -> None:
        """Forget the prefixes of first events no waiting match has (their windows have passed)."""
        firsts = {_pairs(chosen)[0] for _, chosen, _, _ in waiting}
        self.next_event = {first: index for first, index in self.next_event.items() if first in firsts}


def _pairs(chosen: list) -> tuple:
    """The match's (slot, position) pairs in order."""
    return tuple(sorted((e.position, s) for s, events in chosen for e in events))
