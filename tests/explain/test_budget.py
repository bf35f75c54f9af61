"""``cepkit.explain`` on a query whose reference search spends its budget (docs/limits.md): the result says
the budget was spent and what was judged, instead of raising; what the candidate's own clauses decide is
still decided."""

import cepkit

SAME = [{"type": "A", "ts": i} for i in range(12)]  # ((ANY+ a)+)+ over 12 events: (4^n - 1)/3 derivations


def test_a_selection_left_unjudged_is_undecided_and_says_what_was_judged():
    e = cepkit.explain("SELECT LAST * PATTERN ((ANY+ a)+)+", SAME, (0, 11))
    assert not e.decided and not e.is_match and e.failures == []
    assert "search budget (250,000 steps" in e.stopped and "SELECT LAST was not judged" in e.stopped
    assert [r.kind for r in e.reasons] == ["satisfied"] and "a = events 0 (A), 11 (A)" in e.reasons[0].message
    assert str(e).startswith("{a: (0, 11)} is undecided, stopped early: the reference evaluator's search budget")


def test_the_candidates_own_clauses_still_decide():
    match = cepkit.explain("((ANY+ a)+)+", SAME, (0, 1, 2))  # ALL: its derivation holds, so it is a match
    assert match.decided and match.is_match
    failed = cepkit.explain("((ANY+ a)+)+ WHERE count(a) > 5", SAME, (0, 1, 2))
    assert failed.decided and not failed.is_match and [r.kind for r in failed.failures] == ["condition"]
    wrong_type = cepkit.explain("((A+ a)+)+ ; B b", SAME, (0, 1, 2))
    assert wrong_type.decided and [r.kind for r in wrong_type.failures] == ["type"]


def test_nothing_judged_is_said():
    """A nested LAST ranks the candidate against its rivals: that alone spends the budget."""
    e = cepkit.explain("LAST(((ANY a OR ANY a)+)+)", SAME, (0, 1))
    assert not e.decided and e.reasons == [] and "nothing was judged" in e.stopped
