"""ScenarioView: its controls make the scenario they show, and its stream reaches a Workbench whole."""

import dataclasses

import cepkit
from cepkit.simulate import Scenario, choice, uniform
from cepkit.widgets import ScenarioView

SHOP = (
    Scenario(seed=3, duration=1800)
    .add("AddToCart", rate="2/min", user=choice(range(10)))
    .add("Checkout", rate="1/min", user=choice(range(10)), total=uniform(5, 90))
)
QUERY = "PATTERN SEQ(AddToCart a, !Checkout c) WITHIN 5 min PARTITION BY user"


def test_the_controls_make_the_scenario_and_the_summary_counts_it():
    view = ScenarioView(SHOP, QUERY)
    assert view.events().equals(SHOP.events())
    view.seed.value, view.late.value, view.late_by.value = 9, 0.3, 20.0
    shaped = SHOP.late(0.3, by=20.0)
    assert view.events().equals(dataclasses.replace(shaped, seed=9).events())
    assert f"{len(view.events()):,} events" in view.summary.value and "arrive after a later one" in view.summary.value
    view.duration.value = -1
    assert "duration must be positive" in view.summary.value and view.open_button.disabled


def test_the_scenario_reaches_the_workbench_and_runs():
    view = ScenarioView(SHOP, QUERY)
    view.open_button.click()
    wb = view.workbench
    assert view.output.children == (wb,) and len(wb.stream) == len(SHOP.events())
    wb.run()
    expected = cepkit.match(QUERY, SHOP.events(), engine="reference")
    assert [m.key for m in wb.matches] == [m.key for m in expected] and len(expected) > 0
