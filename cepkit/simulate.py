"""Seeded scenarios: test streams with an explicit clock, to learn a query and to test it.

>>> from cepkit.simulate import Scenario, choice, uniform
>>> scenario = (Scenario(seed=7, duration="10 min")
...             .add("Login", rate="6/min", user=choice(range(20)))
...             .add("Purchase", rate="2/min", user=choice(range(20)), amount=uniform(5, 500))
...             .late(0.1, by="30 s"))
>>> events = scenario.events()
>>> events.columns.tolist()
['type', 'ts', 'user', 'amount']
>>> events.equals(scenario.events())          # the same seed, the same stream
True

A scenario is a list of event types, each a Poisson process with its ``rate`` (events per second, or text
such as ``"6/min"``) over the clock ``[start, start + duration)``, and its attributes drawn from
distributions (``uniform``, ``normal``, ``lognormal``, ``integers``, ``poisson``, ``choice``,
``constant``); a key is an attribute drawn from a few values (``user=choice(range(20))``). On top of
that, in this order: ``burst`` (a type's rate multiplied for a while), ``ties`` (a share of events takes
the ts of the event before), ``drop`` (a share of events is lost), ``late`` (a share of events arrives
after later ones, by up to ``by``: rows are in arrival order, ts unchanged, so no event's ts is more than
``by`` below the largest ts that arrived before it, the bound ``disorder="conservative",
max_delay=by`` relies on). ``start`` is a number (ts in seconds) or a date (ts are UTC datetimes).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from .errors import did_you_mean
from .lang.ast import TIME_UNITS


# ----------------------------------------------------------------------------- distributions
@dataclass(frozen=True)
class Distribution:
    """A named numpy draw: ``draw(rng, n)`` gives ``n`` values."""

    name: str
    args: tuple

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.name == "choice":
            values, p = self.args
            picked = rng.choice(len(values), size=n, p=p)
            return np.asarray(values, dtype=object)[picked] if _mixed(values) else np.asarray(values)[picked]
        if self.name == "constant":
            return np.full(n, self.args[0])
        return getattr(rng, self.name)(*self.args, size=n)

    def __repr__(self) -> str:
        return f"{self.name}{self.args!r}"


def _mixed(values) -> bool:
    return len({type(v) for v in values}) > 1


def _bounds(what: str, low, high) -> tuple:
    if not low < high:
        raise ValueError(f"{what}(low, high) needs low < high, got {low!r} and {high!r}")
    return (low, high)


def uniform(low: float, high: float) -> Distribution:
    """Real numbers, evenly in [low, high)."""
    return Distribution("uniform", _bounds("uniform", low, high))


def normal(mean: float, sd: float) -> Distribution:
    return Distribution("normal", (mean, sd))


def lognormal(mean: float, sigma: float) -> Distribution:
    """exp of a normal(mean, sigma): positive, skewed (amounts, durations)."""
    return Distribution("lognormal", (mean, sigma))


def integers(low: int, high: int) -> Distribution:
    """Integers, evenly in [low, high)."""
    return Distribution("integers", _bounds("integers", low, high))


def poisson(lam: float) -> Distribution:
    return Distribution("poisson", (lam,))


def choice(values: Sequence, p: Optional[Sequence[float]] = None) -> Distribution:
    """One of ``values`` (with probabilities ``p``, evenly by default): keys, categories."""
    values = list(values)
    if not values:
        raise ValueError("choice needs at least one value")
    if p is not None and len(p) != len(values):
        raise ValueError(f"choice: {len(p)} probabilities for {len(values)} values")
    if p is not None and (min(p) < 0 or not np.isclose(sum(p), 1.0)):
        raise ValueError(f"choice: the probabilities are at least 0 and sum to 1, not {list(p)}")
    return Distribution("choice", (tuple(values), None if p is None else tuple(p)))


def constant(value) -> Distribution:
    return Distribution("constant", (value,))


# ----------------------------------------------------------------------------- durations and rates
_UNITS = TIME_UNITS  # the query language's units (docs/language.md §4), one table for both


def _unit_hint(word: str) -> str:
    return f"{did_you_mean(word, _UNITS)} (the units: {', '.join(_UNITS)})"


def seconds(value) -> float:
    """A duration in seconds: a number (seconds), a timedelta, or text such as ``"30 s"``, ``"1.5h"``."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, (pd.Timedelta, np.timedelta64)) or hasattr(value, "total_seconds"):
        return pd.Timedelta(value).total_seconds()
    if isinstance(value, str):
        found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]+)\s*", value.lower())
        if found and found.group(2) in _UNITS:
            return float(found.group(1)) * _UNITS[found.group(2)]
        hint = _unit_hint(found.group(2)) if found else ""
        raise ValueError(f"a duration is seconds, a timedelta or text like '30 s' or '2 min', not {value!r}{hint}")
    raise ValueError(f"a duration is seconds, a timedelta or text like '30 s' or '2 min', not {value!r}")


def rate(value) -> float:
    """Events per second: a number, or text such as ``"6/min"``, ``"2 per hour"``."""
    if isinstance(value, str):
        found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(?:/|per)\s*([a-z]+)\s*", value.lower())
        if found and found.group(2) in _UNITS:
            return float(found.group(1)) / _UNITS[found.group(2)]
        hint = _unit_hint(found.group(2)) if found else ""
        raise ValueError(f"a rate is events per second, or text like '6/min', not {value!r}{hint}")
    per_second = float(value)
    if not per_second >= 0:
        raise ValueError(f"a rate is at least 0 events per second, not {value!r}")
    return per_second


_rate = rate  # (``Scenario.add`` takes a ``rate=`` argument)


# ----------------------------------------------------------------------------- the scenario
@dataclass(frozen=True)
class _Type:
    name: str
    rate: float
    attributes: tuple  # (name, Distribution)


@dataclass(frozen=True)
class Scenario:
    """A seeded stream of events over an explicit clock; each method returns a new scenario."""

    seed: int = 0
    duration: float = 60.0
    start: object = 0.0
    types: tuple = ()
    bursts: tuple = ()  # (type, at, length, factor), at relative to start (seconds)
    tie_share: float = 0.0
    drop_share: float = 0.0
    late_share: float = 0.0
    late_by: float = 0.0

    def __post_init__(self):  # (also on ``dataclasses.replace``: every scenario is checked)
        object.__setattr__(self, "duration", seconds(self.duration))
        if not self.duration > 0:
            raise ValueError(f"duration must be positive, got {self.duration!r} s")
        if isinstance(self.start, str) or hasattr(self.start, "year"):
            object.__setattr__(self, "start", _utc(self.start))

    def add(self, type: str, rate="1/s", **attributes) -> "Scenario":
        """Events of ``type`` at ``rate`` (per second, or ``"6/min"``), each attribute drawn from its
        distribution (a plain value is a constant)."""
        if not isinstance(type, str) or not type:
            raise ValueError(f"an event type is a non-empty string, not {type!r}")
        if type in {t.name for t in self.types}:
            raise ValueError(f"type {type!r} is in the scenario already")
        for reserved in ("type", "ts"):
            if reserved in attributes:
                raise ValueError(f"{reserved!r} is not an attribute: the scenario sets it")
        for name, value in attributes.items():
            if isinstance(value, (list, tuple, set, np.ndarray, pd.Series)):
                raise ValueError(
                    f"attribute {name!r}: a {value.__class__.__name__} is not one value; write choice({list(value)[:3]!r}...) "
                    "to draw one of them per event, or constant(value) for that very value"
                )
        drawn = tuple((k, v if isinstance(v, Distribution) else constant(v)) for k, v in attributes.items())
        return dataclasses.replace(self, types=self.types + (_Type(type, _rate(rate), drawn),))

    def burst(self, type: str, at, length, factor: float = 10.0) -> "Scenario":
        """``type``'s rate multiplied by ``factor`` from ``at`` (seconds after start, or ``"5 min"``) for
        ``length``."""
        self._type(type)
        if factor < 1:
            raise ValueError(f"a burst multiplies a rate by 1 or more, not {factor!r}")
        return dataclasses.replace(self, bursts=self.bursts + ((type, seconds(at), seconds(length), float(factor)),))

    def ties(self, share: float) -> "Scenario":
        """A ``share`` of the events (not the first) takes the ts of the event just before it."""
        return dataclasses.replace(self, tie_share=_share(share, "ties"))

    def drop(self, share: float) -> "Scenario":
        """A ``share`` of the events is lost."""
        return dataclasses.replace(self, drop_share=_share(share, "drop"))

    def late(self, share: float, by) -> "Scenario":
        """A ``share`` of the events arrives late, each by a delay up to ``by`` (seconds or ``"30 s"``)."""
        by = seconds(by)
        if by <= 0:
            raise ValueError(f"late events are late by a positive time, not {by!r} s")
        return dataclasses.replace(self, late_share=_share(share, "late"), late_by=by)

    def _type(self, name: str) -> _Type:
        for t in self.types:
            if t.name == name:
                return t
        raise ValueError(f"no type {name!r} in the scenario (types: {', '.join(t.name for t in self.types) or 'none'})")

    # ------------------------------------------------------------------ drawing
    def events(self) -> pd.DataFrame:
        """The stream: ``type``, ``ts`` and each attribute (null where a type lacks it), rows in arrival
        order. The same scenario gives the same DataFrame."""
        if not self.types:
            raise ValueError("the scenario has no event types: add(type, rate, ...) first")
        rng = np.random.default_rng(self.seed)
        parts = [self._draw(rng, t) for t in self.types]
        frame = pd.concat(parts, ignore_index=True).sort_values("ts", kind="stable", ignore_index=True)
        times = frame["ts"].to_numpy(dtype=float).copy()
        if self.tie_share and len(times) > 1:
            tied = np.flatnonzero(rng.random(len(times) - 1) < self.tie_share) + 1
            for i in tied.tolist():  # in order: a run of ties shares one ts
                times[i] = times[i - 1]
        keep = rng.random(len(times)) >= self.drop_share if self.drop_share else np.ones(len(times), bool)
        arrival = times.copy()
        if self.late_share:
            late = rng.random(len(times)) < self.late_share
            arrival[late] += rng.uniform(0, self.late_by, int(late.sum()))
        frame["ts"] = times
        order = np.argsort(arrival[keep], kind="stable")
        frame = frame[keep].iloc[order].reset_index(drop=True)
        if not isinstance(self.start, (int, float)):
            frame["ts"] = self.start + pd.to_timedelta(frame["ts"], unit="s")
        else:
            frame["ts"] = frame["ts"] + self.start
        return frame

    def _draw(self, rng: np.random.Generator, t: _Type) -> pd.DataFrame:
        times = _poisson_times(rng, t.rate, 0.0, self.duration)
        for name, at, length, factor in self.bursts:
            if name == t.name:
                stop = min(at + length, self.duration)
                if stop > at:
                    times = np.concatenate([times, _poisson_times(rng, t.rate * (factor - 1), at, stop)])
        times.sort()
        columns = {"type": np.full(len(times), t.name, dtype=object), "ts": times}
        for name, dist in t.attributes:
            columns[name] = dist.draw(rng, len(times))
        return pd.DataFrame(columns)


def _poisson_times(rng, per_second: float, start: float, stop: float) -> np.ndarray:
    n = rng.poisson(per_second * (stop - start))
    return rng.uniform(start, stop, n)


def _share(value: float, what: str) -> float:
    if not 0 <= value <= 1:
        raise ValueError(f"{what}: a share is between 0 and 1, not {value!r}")
    return float(value)


def _utc(value) -> pd.Timestamp:
    try:
        stamp = pd.Timestamp(value)
    except ValueError:
        raise ValueError(
            f"start is a number of seconds, a datetime or text like '2024-05-01 08:00', not {value!r}"
        ) from None
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
