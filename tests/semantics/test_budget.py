"""The reference evaluator's search budget (issue 15, docs/limits.md): a pattern whose brute-force search
explodes stops with a QueryError after a fixed number of steps (positions held by derivations in phase 1,
checks in phase 2), whatever the machine's speed; below the budget it answers as the automaton does."""

import pytest

import cepkit
from cepkit.semantics import derivations


def same_type(n: int) -> list:
    return [{"type": "A", "ts": i} for i in range(n)]


class Steps:
    """Counts the steps a run charges (the budget's unit)."""

    def __init__(self, monkeypatch):
        self.most = self.largest = 0  # the most steps spent; the largest single charge
        charge = derivations.Deriver.charge

        def counted(deriver, node, cost):
            self.most = max(self.most, deriver.spent + cost)
            self.largest = max(self.largest, cost)
            return charge(deriver, node, cost)

        monkeypatch.setattr(derivations.Deriver, "charge", counted)


@pytest.mark.parametrize(
    "query, stops_at, answers_at",
    [
        ("((ANY+ a)+)+", 10, 6),  # (4^n - 1)/3 derivations: phase 1 explodes
        ("LAST(((ANY a OR ANY a)+)+)", 5, 3),  # few derivations, but each is checked against all its rivals
    ],
)
def test_an_exploding_search_stops_after_the_budget(monkeypatch, query, stops_at, answers_at):
    steps = Steps(monkeypatch)
    with pytest.raises(cepkit.QueryError, match="search budget is spent") as err:
        cepkit.match(query, same_type(stops_at), engine="reference")
    assert err.value.line == 1 and "raise budget=" in str(err.value)
    assert derivations.SEARCH_BUDGET < steps.most <= derivations.SEARCH_BUDGET + steps.largest  # stopped at once
    small = same_type(answers_at)
    found = cepkit.match(query, small, engine="reference")
    assert found.positions() == cepkit.match(query, small, engine="automaton").positions() and len(found)


def test_phase_two_is_counted(monkeypatch):
    """Over 4 events LAST(((ANY OR ANY)+)+) derives a few thousand positions but compares and checks ~306,000
    rivals: a budget above phase 1 alone stops it. Comparisons count too: uncounted, the fuzz suite's
    ``LAST(((ANY OR ANY)+)+) CONSUME BY ANY`` over 6 events spent 6.5 s in them before its budget stop."""
    with pytest.raises(cepkit.QueryError, match="search budget is spent"):
        cepkit.match("LAST(((ANY OR ANY)+)+)", same_type(4), engine="reference", budget=50_000)
    assert len(cepkit.match("LAST(((ANY OR ANY)+)+)", same_type(4), engine="reference", budget=400_000)) == 4
    steps = Steps(monkeypatch)
    with pytest.raises(cepkit.QueryError, match="search budget is spent"):
        cepkit.match("FROM S WHERE LAST(((ANY OR ANY)+)+) CONSUME BY ANY", same_type(6), engine="reference")
    assert steps.most <= derivations.SEARCH_BUDGET + steps.largest  # stopped at the charge that passed it


def test_the_largest_worked_example_fits(monkeypatch):
    """[RCEP]'s water stream (the most expensive worked example) stays well inside the budget."""
    steps = Steps(monkeypatch)
    water = "PATTERN SEQ(Water+ b, Water c) WHERE b[i].vol > b[i-1].vol and count(b) >= 3 and c.pres <= 1 WITHIN 10"
    assert len(cepkit.match(water, cepkit.datasets.rcep_water(), engine="reference")) > 0
    assert steps.most < derivations.SEARCH_BUDGET * 2 // 3
