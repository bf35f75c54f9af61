"""``ScenarioView``: shape a seeded ``cepkit.simulate.Scenario`` with controls (the seed, the clock's length,
each type's rate, late, tied and dropped shares) and open its stream in a ``Workbench``."""

from __future__ import annotations

import dataclasses

import ipywidgets as widgets
import numpy as np

from cepkit.simulate import Scenario

from .figures import full_width, plural


class ScenarioView(widgets.VBox):
    """Controls over ``scenario``; ``events()`` is the stream they make, "Open in a Workbench" shows it in one.

    >>> from cepkit.simulate import choice
    >>> view = ScenarioView(Scenario(seed=1, duration=600).add("A", rate=1, id=choice([1, 2])).add("B", rate=0.5),
    ...                     query="A a ; B b WITHIN 5 s")
    >>> view.rates["B"].value = 60.0               # per minute
    >>> view.scenario().types[1].rate, len(view.events()) > 900
    (1.0, True)
    >>> view.open_workbench(), view.workbench.editor.value, len(view.workbench.stream) == len(view.events())
    (None, 'A a ; B b WITHIN 5 s', True)
    """

    def __init__(self, scenario: Scenario, query: str = ""):
        self.base = scenario
        self.query = query
        self.workbench = None
        self.seed = widgets.IntText(value=scenario.seed, description="seed", layout=widgets.Layout(width="180px"))
        self.duration = widgets.FloatText(
            value=scenario.duration, description="seconds", layout=widgets.Layout(width="200px")
        )
        self.rates = {
            t.name: widgets.FloatText(
                value=round(t.rate * 60, 6),
                description=f"{t.name} /min",
                style={"description_width": "initial"},
                layout=widgets.Layout(width="200px"),
            )
            for t in scenario.types
        }
        share = dict(min=0.0, max=0.9, step=0.01, readout_format=".0%", style={"description_width": "initial"})
        self.late = widgets.FloatSlider(value=scenario.late_share, description="late", **share)
        self.late_by = widgets.FloatText(
            value=scenario.late_by or 10.0,
            description="by up to (s)",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="200px"),
        )
        self.ties = widgets.FloatSlider(value=scenario.tie_share, description="ties", **share)
        self.drops = widgets.FloatSlider(value=scenario.drop_share, description="dropped", **share)
        self.summary = widgets.HTML()
        self.open_button = widgets.Button(
            description="Open in a Workbench",
            icon="external-link",
            button_style="primary",
            layout=widgets.Layout(width="auto"),
        )
        self.open_button.on_click(lambda _: self.open_workbench())
        self.output = widgets.VBox(layout=full_width())
        wrap = widgets.Layout(flex_flow="row wrap")
        super().__init__(
            [
                widgets.HBox([self.seed, self.duration, *self.rates.values()], layout=wrap),
                widgets.HBox([self.late, self.late_by, self.ties, self.drops], layout=wrap),
                widgets.HBox([self.summary, self.open_button], layout=wrap),
                self.output,
            ],
            layout=full_width(),
        )
        self.add_class("cepkit-scenario")
        for control in (self.seed, self.duration, self.late, self.late_by, self.ties, self.drops, *self.rates.values()):
            control.observe(lambda _: self._summarize(), "value")
        self._summarize()

    def scenario(self) -> Scenario:
        """The scenario the controls describe."""
        types = tuple(
            dataclasses.replace(t, rate=max(float(self.rates[t.name].value), 0.0) / 60) for t in self.base.types
        )
        made = dataclasses.replace(
            self.base,
            seed=int(self.seed.value),
            duration=float(self.duration.value),
            types=types,
            late_share=0.0,
            late_by=0.0,
        )
        made = made.ties(self.ties.value).drop(self.drops.value)
        return made.late(self.late.value, by=self.late_by.value) if self.late.value else made

    def events(self):
        return self.scenario().events()

    def open_workbench(self, **kwargs) -> None:
        """A ``Workbench`` over the scenario's stream (with ``query`` in its editor), shown below the controls."""
        from .workbench import Workbench

        self.workbench = Workbench(self.events(), query=self.query, **kwargs)
        self.output.children = [self.workbench]

    def _summarize(self) -> None:
        try:
            events = self.events()
        except ValueError as err:
            self.summary.value = f"<span style='color:#b00'>{err}</span>"
            self.open_button.disabled = True
            return
        ts = events["ts"].to_numpy(dtype=float) if len(events) else np.zeros(0)
        late = int((np.maximum.accumulate(ts) > ts).sum()) if len(ts) else 0
        counts = ", ".join(f"{n:,} {t}" for t, n in events["type"].value_counts(sort=False).items())
        self.summary.value = f"{plural(len(events), 'event')} ({counts}); {late:,} arrive after a later one"
        self.open_button.disabled = False

    def __repr__(self):
        return f"ScenarioView(types={len(self.base.types)}, seed={self.seed.value})"
