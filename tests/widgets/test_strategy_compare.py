"""StrategyCompare on the worked examples of digest 004 §3 ("Selection strategies on S")."""
import pytest

import cepkit
from cepkit.widgets import StrategyCompare
from cel_formulas import PHI1, PHI3


def test_phi1_under_each_cel_strategy(farm_either):
    compare = StrategyCompare(PHI1, farm_either, strategies=("ALL", "STRICT", "NEXT", "LAST", "MAX"))
    positions = {s: set(run.matches.positions()) for s, run in compare.runs.items()}
    assert positions == {"ALL": {(1, 2), (1, 8), (5, 8)}, "STRICT": {(1, 2)}, "NEXT": {(1, 2), (1, 8)},
                         "LAST": {(1, 2), (5, 8)}, "MAX": {(1, 2), (1, 8), (5, 8)}}
    assert compare.counts() == {"ALL": 3, "STRICT": 1, "NEXT": 2, "LAST": 2, "MAX": 3}


def test_phi3_next_last_max_keep_the_longest_iteration(farm):
    compare = StrategyCompare(PHI3, farm, strategies=("ALL", "NEXT", "LAST", "MAX", "STRICT"))
    positions = {s: run.matches.positions() for s, run in compare.runs.items()}
    assert set(positions["ALL"]) == {(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)}
    assert positions["NEXT"] == positions["LAST"] == positions["MAX"] == [(3, 4, 6, 7)]
    assert positions["STRICT"] == []


def test_every_strategy_gets_a_row_and_a_timeline_agreeing_with_the_oracle(farm):
    compare = StrategyCompare(PHI1, farm)
    assert tuple(compare.runs) == cepkit.widgets.STRATEGIES
    for strategy, timeline in compare.timelines.items():
        oracle = cepkit.match(PHI1, farm, engine="reference", strategy=strategy)
        assert compare.runs[strategy].matches.positions() == oracle.positions()
        assert len(timeline.matches) == len(oracle)
        assert f"<td><b>{strategy}</b></td><td>{len(oracle)}</td>" in compare.table.value
    assert repr(compare).startswith("StrategyCompare('") and "NEXT=2" in repr(compare)


def test_a_strategy_the_query_cannot_take_is_listed_with_its_error(farm):
    compare = StrategyCompare(PHI1, farm, strategies=("ALL", "PARTITION_STRICT"))
    assert list(compare.runs) == ["ALL"] and "PARTITION_STRICT" in compare.errors
    assert "PARTITION BY" in compare.errors["PARTITION_STRICT"].reason
    assert "PARTITION_STRICT" in compare.table.value and "PARTITION_STRICT" not in compare.timelines


def test_progress_counts_strategies(farm):
    import ipywidgets as widgets
    bar = widgets.IntProgress()
    StrategyCompare(PHI1, farm, strategies=("ALL", "NEXT", "LAST"), progress=bar)
    assert (bar.value, bar.max) == (3, 3)
