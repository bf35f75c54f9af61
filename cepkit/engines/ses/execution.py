"""Running the SES automaton over one match window: A(P, W) of [SES] ch. 5, the matches whose first
event is W[0].

* ``run_window`` is SESExec ([SES] §4.5, Algorithm 2). An automaton instance ñ = (q, β) reads the window event by
  event; every transition whose condition Θδ holds on β ⊎ {v/⟨e⟩} fires (several: the instance branches).
  Under skip-till-any-match (``ALL``) the instance also keeps a copy that ignores the event; under
  skip-till-next-match (``STNM``, Def 6.1) it ignores the event only when nothing fires [docs/references.md E10: Alg 2
  builds a new Ω′, it does not keep the old instances]. The start instance must bind W[0], so each match is
  found in exactly one window, the one starting at its earliest event.
* ``run_window_robust`` is MatchBT ([SES] §6.4, Algorithm 4): robust skip-till-next-match (Def 6.2) by backtracking
  over the execution tree of Def 6.3, whose nodes (δ, c) say that the event at window position c fired δ.
* ``robust_by_filter`` is the all+pp alternative of Thm 6.2: find Γ, then keep the matches no other match
  overtakes at some prefix.

**Kleene variable in the last set (docs/decisions.md), decided:** a finished match is its own prefix. Under STNM and
ROBUST_STNM a match is therefore not reported when a later event of the window extends a Kleene variable of
the last set to another match (Alg 2 keeps looping in qf); ALL reports every match.

Conditions that are not monotone (a ``not`` over a Kleene variable, see ``conditions``) cannot prune an
instance early: they are checked when an instance is accepted and when deciding whether an event blocks a
skip, which is exactly Def 6.1's "γ̂ ⊎ {v/e} is a match of the pattern prefix P̂".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from .automaton import SesAutomaton


@dataclass(frozen=True)
class Edge:
    """A transition compiled for execution: variable and target as bit masks, and the checks of Θδ that
    the event's property bits (``Entry.vars``) do not already cover."""

    number: int
    var: int
    target: int
    prune: tuple  # monotone conjuncts of Θ mentioning var, all of whose variables are bound in the target
    settle: tuple  # non-monotone conjuncts all of whose variables are bound in the target


class CompiledAutomaton:
    """An ``SesAutomaton`` with its conditions attached, states as bit masks over the variable indexes.

    ``conjuncts`` are those of Θ ∪ Θ_eq⁺ (``SetPattern.theta``, docs/references.md E11): a transition fires when
    the conditions among its target's variables hold, which is also the pattern-prefix test of Def 6.1.
    """

    def __init__(self, automaton: SesAutomaton, conjuncts: Sequence, index: dict):
        self.automaton = automaton
        self.arity = len(index)
        self.final = (1 << self.arity) - 1
        mask = {state: sum(1 << index[v] for v in state) for state in automaton.states}
        self.outgoing: dict = {m: () for m in mask.values()}
        self.firing_vars: dict = {m: 0 for m in mask.values()}  # vars of a state's transitions, as a mask

        prunes = [
            [c for c in conjuncts if c.monotone and not c.exact_property and v in c.variables]
            for v in range(self.arity)
        ]
        settles = [c for c in conjuncts if not c.monotone]
        for t in automaton.transitions:
            target, var = mask[t.target], index[t.var]
            edge = Edge(
                t.number,
                var,
                target,
                tuple(c for c in prunes[var] if c.mask & ~target == 0),
                tuple(c for c in settles if c.mask & ~target == 0),
            )
            self.outgoing[mask[t.source]] += (edge,)
            self.firing_vars[mask[t.source]] |= 1 << var
        self.final_checks = tuple(c for c in conjuncts if not c.monotone)
        self._necessary = tuple(c for c in conjuncts if c.monotone and not c.exact_property)
        self._needs: dict = {}  # (state, var) -> conditions var must meet with the state's variables

    def completable(self, state: int, binding: tuple, window: Sequence, start: int) -> bool:
        """A necessary condition for β to complete with events from ``window[start:]``: every unbound
        variable has such an event that it could take next, by its properties and its monotone conditions
        with the bound variables (what a match's first event of that variable must satisfy)."""
        for var in range(self.arity):
            if state >> var & 1:
                continue
            checks = self._needs.get((state, var))
            if checks is None:
                reach = state | 1 << var
                checks = self._needs[state, var] = tuple(
                    c for c in self._necessary if var in c.variables and c.mask & ~reach == 0
                )
            before, after = binding[:var], binding[var + 1 :]
            if not any(
                entry.vars >> var & 1 and _holds_all(checks, before + ((entry.event,),) + after, var)
                for entry in window[start:]
            ):
                return False
        return True

    def fire(self, state: int, binding: tuple, entry) -> list:
        """[(edge, β ⊎ {v/⟨e⟩})] for every transition out of ``state`` whose monotone conditions hold."""
        fired = []
        if not entry.vars & self.firing_vars[state]:
            return fired
        event = entry.event
        for edge in self.outgoing[state]:
            if entry.vars >> edge.var & 1:
                v = edge.var
                extended = binding[:v] + (binding[v] + (event,),) + binding[v + 1 :]
                if _holds_all(edge.prune, extended, v):
                    fired.append((edge, extended))
        return fired

    def accepts(self, state: int, binding: tuple) -> bool:
        return state == self.final and all(c.holds(binding) for c in self.final_checks)

    def start(self, entry) -> list:
        """The instances binding W[0]."""
        return self.fire(0, ((),) * self.arity, entry)


def _holds_all(conjuncts: tuple, binding: tuple, var: int) -> bool:
    for c in conjuncts:
        if not c.holds_extended(binding, var):
            return False
    return True


def run_window(automaton: CompiledAutomaton, window: Sequence, keep_skips: bool, trace: Optional[list] = None) -> list:
    """SESExec (Alg 2): the bindings of the matches starting at ``window[0]``.

    ``keep_skips`` True is skip-till-any-match; False is skip-till-next-match. ``trace``, if given,
    receives after each event its window index and the instances Ω as (state mask, binding).
    """
    instances = [(edge.target, b) for edge, b in automaton.start(window[0])]
    if trace is not None:
        trace.append((0, list(instances)))
    for c in range(1, len(window)):
        if not instances:
            break
        entry = window[c]
        following = []
        for state, binding in instances:
            fired = automaton.fire(state, binding, entry)
            following.extend((edge.target, b) for edge, b in fired)
            if keep_skips or not any(all(t.holds(b) for t in edge.settle) for edge, b in fired):
                following.append((state, binding))
        instances = following
        if trace is not None:
            trace.append((c, list(instances)))
    return [b for state, b in instances if automaton.accepts(state, b)]


class _Node:
    """A node (δ, c) of the execution tree (Def 6.3) and the instance it leads to."""

    __slots__ = ("number", "c", "state", "binding", "scan", "children", "at", "next_child", "ok")

    def __init__(self, number: int, c: int, state: int, binding: tuple):
        self.number, self.c, self.state, self.binding = number, c, state, binding
        self.scan = c + 1  # next window position to read
        self.children = None  # the siblings fired by the event at window position ``at``
        self.at = -1
        self.next_child = 0
        self.ok = False  # its subtree produced a match


def run_window_robust(
    automaton: CompiledAutomaton, window: Sequence, trace: Optional[list] = None, lookahead: bool = True
) -> list:
    """MatchBT (Alg 4): robust skip-till-next-match (Def 6.2) by backtracking.

    The instance runs greedily; when it ends the window outside qf, its last node (δ, c) is popped: the
    event at c is re-read as noise and the instance resumes at c + 1. A node is not popped when a sibling
    (another transition fired by the same event) led to a match: that event does belong to a match
    prefix, so skipping it would not be robust STNM (Lemma 6.1); nor is W[0] ever un-bound. Matches are
    therefore the paths that take, at each step, the earliest event extending the prefix to a prefix of
    some match, and all transitions that do so.

    ``lookahead`` adds a cut Alg 4 lacks: a node is not grown when some unbound variable has no event left
    in the window that it could take (``CompiledAutomaton.completable``). Such a node could only fail and
    be popped, so the matches are the same, but a long run that fails late (rising prices, then no trade
    big enough) no longer makes the search try every subset of the run.

    ``trace``, if given, receives (action, transition number, window index c, 1-based as in the thesis):
    "push", "accept", "backtrack" (the node is popped and its parent resumes at c + 1), "blocked" (a failed
    node whose sibling led to a match), "stop" (a failed node at W[0]) and "cut" (a node the lookahead
    refused).
    """
    found: list = []
    for edge, binding in automaton.start(window[0]):
        root = _Node(edge.number, 0, edge.target, binding)
        if lookahead and not automaton.completable(root.state, binding, window, 1):
            _log(trace, "cut", root)
            continue
        _log(trace, "push", root)
        _explore(automaton, window, root, found, trace, lookahead)
        if not root.ok:
            _log(trace, "stop", root)
    return found


def _explore(automaton: CompiledAutomaton, window: Sequence, root: _Node, found: list, trace, lookahead: bool) -> None:
    stack = [root]  # iterative: a Kleene run may be longer than the
    while stack:  # interpreter's recursion limit
        node = stack[-1]
        if node.children is None:
            node.at, node.children = _next_firing(automaton, window, node, trace, lookahead)
            node.next_child = 0
            if node.children is None:  # end of the window
                node.ok = automaton.accepts(node.state, node.binding)
                if node.ok:
                    found.append(node.binding)
                    _log(trace, "accept", node)
                stack.pop()
                continue
        if node.next_child < len(node.children):
            child = node.children[node.next_child]
            node.next_child += 1
            _log(trace, "push", child)
            stack.append(child)
            continue
        failed = [child for child in node.children if not child.ok]
        if len(failed) < len(node.children):  # a sibling led to a match: the others are blocked
            node.ok = True
            for child in failed:
                _log(trace, "blocked", child)
            stack.pop()
        else:  # every sibling failed: the event is noise here
            _log(trace, "backtrack", failed[-1])
            node.scan, node.children = node.at + 1, None


def _next_firing(automaton: CompiledAutomaton, window: Sequence, node: _Node, trace, lookahead: bool) -> tuple:
    """(c, child nodes) for the first window position from ``node.scan`` at which a transition fires
    (and, with ``lookahead``, leads to a node that may still complete)."""
    for c in range(node.scan, len(window)):
        children = []
        for edge, binding in automaton.fire(node.state, node.binding, window[c]):
            child = _Node(edge.number, c, edge.target, binding)
            if lookahead and not automaton.completable(child.state, binding, window, c + 1):
                _log(trace, "cut", child)
                continue
            children.append(child)
        if children:
            return c, children
    return len(window), None


def _log(trace, action: str, node: _Node) -> None:
    if trace is not None:
        trace.append((action, node.number, node.c + 1))


def robust_by_filter(bindings: Sequence[tuple]) -> list:
    """Robust STNM from all the matches Γ of one window (all+pp, Thm 6.2).

    A match γ with events e1..en (time order) is disqualified when, for some i, another match shares
    its prefix e1..ei and continues with an event earlier than e(i+1), or (i = n) continues at all.
    """

    def steps(binding):
        return tuple(sorted(((e.position, var) for var, events in enumerate(binding) for e in events)))

    sequences = [steps(b) for b in bindings]
    earliest_next: dict = {}
    for s in sequences:
        for i in range(1, len(s)):
            key = s[:i]
            earliest_next[key] = min(earliest_next.get(key, s[i][0]), s[i][0])
    return [
        b
        for b, s in zip(bindings, sequences)
        if s not in earliest_next and all(earliest_next[s[:i]] == s[i][0] for i in range(1, len(s)))
    ]
