"""The Workbench on a result too large to hold (``A+ a ; B b`` over 60 A's then a B: 2^60 - 1 matches):
with LIMIT 100 its Run shows the 100 rows and says the result was cut at the limit; without a LIMIT the
status line says the refusal (``cepkit.errors.ResultTooLarge``: how many, how much, what shrinks it)."""

import numpy as np
import pandas as pd
import pytest

import cepkit
from cepkit.widgets import Workbench
from cepkit.widgets.execution import PROGRESS_MIN_EVENTS


def explosive(filler: int) -> pd.DataFrame:
    """``filler`` C's, then 60 A's and a B."""
    types = ["C"] * filler + ["A"] * 60 + ["B"]
    return pd.DataFrame({"type": types, "ts": np.arange(len(types), dtype=float)})


@pytest.mark.parametrize("filler", [0, PROGRESS_MIN_EVENTS], ids=["match", "matcher-slices"])
def test_run_with_a_limit_shows_the_first_n_and_says_the_result_was_cut(filler):
    events = explosive(filler)
    wb = Workbench(events, query="A+ a ; B b LIMIT 100", engine="automaton")
    wb.run_button.click()
    run = wb.wait_run(timeout=120)
    assert run is not None, wb.status.value
    expected = cepkit.match("A+ a ; B b LIMIT 100", events, engine="automaton").positions()
    assert run.matches.positions() == expected and len(expected) == 100
    assert wb.results.grid.data.whole().shape[0] == 100
    said = wb.status.value
    assert "100 matches</b>" in said and "cut at LIMIT 100</b>" in said, said


def test_a_whole_result_under_a_limit_is_not_said_cut():
    wb = Workbench(explosive(0).iloc[55:], query="A+ a ; B b LIMIT 100", engine="automaton")
    run = wb.run()
    assert len(run.matches) == 31 and "cut at" not in wb.status.value


def test_run_without_a_limit_says_the_result_is_too_large():
    wb = Workbench(explosive(PROGRESS_MIN_EVENTS), query="A+ a ; B b", engine="automaton")
    wb.run_button.click()
    assert wb.wait_run(timeout=120) is None
    said = wb.status.value
    assert "the run failed" in said and "more matches" in said and "add LIMIT n" in said, said
