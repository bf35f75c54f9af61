"""StrategyCompare on the worked examples of [CEL] §2 ("Selection strategies on S"); its one figure,
its table, background runs and Cancel."""

import time

import pandas as pd
import pytest

import cepkit
from cepkit.widgets import StrategyCompare
from cel_formulas import PHI1, PHI3


def test_phi1_under_each_cel_strategy(farm_either):
    compare = StrategyCompare(PHI1, farm_either, strategies=("ALL", "STRICT", "NEXT", "LAST", "MAX"))
    positions = {s: set(run.matches.positions()) for s, run in compare.runs.items()}
    assert positions == {
        "ALL": {(1, 2), (1, 8), (5, 8)},
        "STRICT": {(1, 2)},
        "NEXT": {(1, 2), (1, 8)},
        "LAST": {(1, 2), (5, 8)},
        "MAX": {(1, 2), (1, 8), (5, 8)},
    }
    assert compare.counts() == {"ALL": 3, "STRICT": 1, "NEXT": 2, "LAST": 2, "MAX": 3}


def test_phi3_next_last_max_keep_the_longest_iteration(farm):
    compare = StrategyCompare(PHI3, farm, strategies=("ALL", "NEXT", "LAST", "MAX", "STRICT"))
    positions = {s: run.matches.positions() for s, run in compare.runs.items()}
    assert set(positions["ALL"]) == {(3, 4, 6, 7), (3, 4, 7), (3, 6, 7)}
    assert positions["NEXT"] == positions["LAST"] == positions["MAX"] == [(3, 4, 6, 7)]
    assert positions["STRICT"] == []


def test_one_figure_a_row_per_strategy_on_a_shared_time_axis_agreeing_with_the_oracle(farm):
    compare = StrategyCompare(PHI1, farm)
    assert tuple(compare.runs) == cepkit.widgets.STRATEGIES
    layout = compare.figure.layout
    rows = [t for t in compare.figure.data if t.name in compare.runs]
    assert [t.name for t in rows] == list(cepkit.widgets.STRATEGIES)
    assert {t.xaxis for t in rows} == {f"x{i}" if i > 1 else "x" for i in range(1, 8)}
    assert all(layout[f"xaxis{i}"].matches == "x7" for i in range(1, 7))  # zoom one, zoom all
    for strategy, trace in zip(compare.runs, rows):
        oracle = cepkit.match(PHI1, farm, engine="reference", strategy=strategy)
        assert compare.runs[strategy].matches.positions() == oracle.positions()
        assert sum(x is None for x in trace.x) == len(oracle)  # one polyline per match
        assert f"<td><b>{strategy}</b></td><td class='num'>{len(oracle)}</td>" in compare.table.value
    titles = [a.text for a in layout.annotations]
    assert "<b>STRICT</b>: 1 match (" in titles[4] and "<b>ALL</b>: 3 matches (" in titles[0]
    assert repr(compare).startswith("StrategyCompare('") and "NEXT=2" in repr(compare)
    assert layout.width is None and len(compare.plot.figure["data"]) == len(compare.figure.data)


def test_lanes_are_the_types_some_match_uses():
    events = [{"type": t, "ts": i} for i, t in enumerate("AXBYAB")]
    compare = StrategyCompare("A a ; B b", events, strategies=["ALL", "NEXT"])
    assert compare.figure.layout.yaxis.ticktext == ("A", "B")


def test_a_strategy_the_query_cannot_take_is_listed_with_its_error(farm):
    compare = StrategyCompare(PHI1, farm, strategies=("ALL", "PARTITION_STRICT"))
    assert list(compare.runs) == ["ALL"] and "PARTITION_STRICT" in compare.errors
    assert "PARTITION BY" in compare.errors["PARTITION_STRICT"].reason
    assert "PARTITION_STRICT" in compare.table.value
    assert [t.name for t in compare.figure.data if t.name != "events"] == ["ALL"]
    with pytest.raises(ValueError, match="strategies is empty"):
        StrategyCompare(PHI1, farm, strategies=[])


def test_a_strategy_that_raises_is_said_in_its_row_and_the_others_still_run(farm, monkeypatch):
    """On the flights year ``DELAYED_DEPARTURE+`` under ALL raised MemoryError (87 TiB) in the tab's thread:
    the table said "cancelled after 0 of 7 strategies", no one having pressed Cancel, over empty axes."""
    import cepkit.widgets.strategy_compare as module

    real = module.run_query

    def all_too_large(query, stream, engine, strategy, *args, **kwargs):
        if strategy == "ALL":
            raise MemoryError("Unable to allocate 87.1 TiB")
        return real(query, stream, engine, strategy, *args, **kwargs)

    monkeypatch.setattr(module, "run_query", all_too_large)
    compare = StrategyCompare("T x ; H+ y", farm, strategies=("ALL", "NEXT", "MAX"), background=True).wait(60)
    assert list(compare.runs) == ["NEXT", "MAX"] and isinstance(compare.errors["ALL"], MemoryError)
    table = compare.table.value
    assert "cancelled" not in table and "MemoryError: Unable to allocate 87.1 TiB" in table
    assert "NEXT, LAST or MAX" in table and compare.plot.layout.display != "none"
    monkeypatch.setattr(module, "run_query", lambda *args, **kwargs: (_ for _ in ()).throw(MemoryError("none")))
    nothing = StrategyCompare("T x ; H+ y", farm, strategies=("ALL",))
    assert not nothing.runs and nothing.plot.layout.display == "none"  # no empty axes under the table


def test_progress_counts_strategies_and_hides_when_done(farm):
    compare = StrategyCompare(PHI1, farm, strategies=("ALL", "NEXT", "LAST"))
    assert (compare.progress.value, compare.progress.max) == (3, 3)
    assert compare.running.layout.display == "none"


def long_stream(n: int = 4500) -> pd.DataFrame:
    return pd.DataFrame(
        {"type": ["A", "B", "C"] * (n // 3), "ts": range(n // 3 * 3), "v": [i // 3 % 5 for i in range(n // 3 * 3)]}
    )


def test_background_runs_report_progress_and_give_the_same_counts():
    events = long_stream()
    query = "SEQ(A a, B b) WHERE a.v = b.v WITHIN 4"
    compare = StrategyCompare(query, events, strategies=["ALL", "NEXT"], background=True)
    compare.wait(120)
    assert compare.counts() == {s: len(cepkit.match(query, events, strategy=s)) for s in ("ALL", "NEXT")}
    assert compare.figure is not None and not compare.cancelled


def test_cancel_stops_and_keeps_what_finished(monkeypatch):
    from cepkit.widgets import strategy_compare

    real = strategy_compare.run_query

    def slow(*args, **kwargs):  # each strategy takes a while, so Cancel lands while one is running
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(strategy_compare, "run_query", slow)
    events = long_stream(30000)
    compare = StrategyCompare(
        "SEQ(A a, B b) WHERE a.v = b.v WITHIN 4", events, strategies=["ALL", "NEXT", "LAST", "MAX"], background=True
    )
    deadline = time.monotonic() + 60
    while not compare.runs and time.monotonic() < deadline:  # let one strategy finish
        time.sleep(0.05)
    compare.cancel()
    compare.wait(60)
    assert 1 <= len(compare.runs) < 4 and "cancelled" in compare.table.value
    assert "not run" in compare.table.value


def test_a_long_query_is_not_the_figure_title():
    """The table above the figure shows the query (wrapped by the page); a long one in the figure's one-line
    title ran off its right edge (notebook 03's SES query)."""
    conditions = " and ".join(f"a.v < {k}" for k in range(30))
    compare = StrategyCompare(
        f"SEQ(A a, B b) WHERE {conditions}", [{"type": "A", "v": 0}, {"type": "B"}], strategies=["ALL"]
    )
    assert "a.v" not in compare.figure.layout.title.text and "a.v &lt; 29" in compare.table.value


def test_a_strategy_the_engine_lacks_runs_on_the_registrys_pick(farm):
    """STNM and ROBUST_STNM on the automaton's Workbench run where ``engine="auto"`` runs them (the stack, ses),
    not on the brute-force reference, and the table names the engine that did."""
    compare = StrategyCompare("SEQ(T x, H y)", farm, engine="automaton", strategies=["ALL", "STNM", "ROBUST_STNM"])
    for strategy in ("STNM", "ROBUST_STNM"):
        expected = cepkit.match("SEQ(T x, H y)", farm, strategy=strategy)
        run = compare.runs[strategy]
        assert run.engine == expected.engine != "reference" and "automaton" in run.note
        assert run.matches.positions() == expected.positions()
    assert compare.runs["ALL"].engine == "automaton" and not compare.runs["ALL"].note
