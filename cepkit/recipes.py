"""Recipes: the patterns people come to complex event processing for, each a query, a stream that ships
with cepkit and a sentence of what it finds.

>>> import cepkit.recipes
>>> fraud = cepkit.recipes.get("fraud")
>>> fraud.finds
'A card used for a tiny purchase and then, within 10 minutes, a large one (a stolen card being tested).'
>>> sorted(fraud.keys_found())
[3, 17, 29]

Each stream is generated from a fixed seed (the SES one is the thesis' own example), so it is the same on
every machine. The generator *plants* the cases the query is meant to find and keeps the background from
ever satisfying the pattern by chance; ``planted`` are the keys (card, user, ticket...) of those cases,
and tests/test_recipes.py checks that the matches' keys are exactly them and that every engine the recipe
runs on gives the reference evaluator's matches. ``gallery()`` lists them all as a DataFrame;
docs/recipes.md and notebooks/11-recipes.ipynb show them run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from .errors import did_you_mean

START = pd.Timestamp("2024-05-06 08:00", tz="UTC")


@dataclass(frozen=True)
class Recipe:
    """One recipe: ``query`` over ``events()``, partitioned by ``key``; ``planted`` the keys it must find."""

    name: str
    title: str
    finds: str
    query: str
    key: str
    make: Callable[[], tuple]  # () -> (events DataFrame, planted keys)

    def events(self) -> pd.DataFrame:
        """The recipe's stream (a new DataFrame each call)."""
        return self.make()[0]

    @property
    def planted(self) -> frozenset:
        """The keys of the cases planted in the stream: what the query must find, and only them."""
        return frozenset(self.make()[1])

    def run(self, engine: str = "auto", **options):
        """``cepkit.match`` of the query over the stream."""
        import cepkit

        return cepkit.match(self.query, self.events(), engine=engine, **options)

    def keys_found(self, matches=None) -> set:
        """The ``key`` of each match (of ``matches``, or of ``run()``): the cards, users... it found."""
        events = self.events()
        found = self.run() if matches is None else matches
        column = events[self.key].to_numpy()
        return {
            column[m.positions[0]].item() if hasattr(column[m.positions[0]], "item") else column[m.positions[0]]
            for m in found
        }


def _frame(rows: list) -> pd.DataFrame:
    """Rows (dicts with ``minute``: minutes after START) as an in-order stream with datetime ts."""
    frame = pd.DataFrame(rows)
    frame.insert(1, "ts", START + pd.to_timedelta(frame.pop("minute"), unit="min"))
    return frame.sort_values("ts", kind="stable", ignore_index=True)


# ----------------------------------------------------------------------------- fraud
def _fraud(seed: int = 1) -> tuple:
    rng = np.random.default_rng(seed)
    rows = []
    for card in range(40):  # ordinary use: 10-200 a purchase, never tiny, never huge
        for minute in np.sort(rng.uniform(0, 600, 5)):
            rows.append(
                {"type": "Purchase", "minute": minute, "card": card, "amount": round(float(rng.uniform(10, 200)), 2)}
            )
    planted = (3, 17, 29)
    for card in planted:  # a test charge, then the real one within 10 minutes
        at = rng.uniform(60, 500)
        rows.append({"type": "Purchase", "minute": at, "card": card, "amount": round(float(rng.uniform(1, 4.99)), 2)})
        rows.append(
            {
                "type": "Purchase",
                "minute": at + rng.uniform(2, 9),
                "card": card,
                "amount": round(float(rng.uniform(600, 2000)), 2),
            }
        )
    # decoys: the large purchase 25 minutes later (card 8); large first, tiny after (card 12)
    rows += [
        {"type": "Purchase", "minute": 100.0, "card": 8, "amount": 2.5},
        {"type": "Purchase", "minute": 125.0, "card": 8, "amount": 900.0},
        {"type": "Purchase", "minute": 200.0, "card": 12, "amount": 1500.0},
        {"type": "Purchase", "minute": 203.0, "card": 12, "amount": 1.0},
    ]
    return _frame(rows), planted


# ----------------------------------------------------------------------------- abandoned cart
def _cart(seed: int = 2) -> tuple:
    rng = np.random.default_rng(seed)
    rows, planted = [], (4, 11, 19, 23)
    for user in range(30):
        at = rng.uniform(0, 400)
        rows.append({"type": "View", "minute": at, "user": user, "item": int(rng.integers(100))})
        adds = at + np.sort(rng.uniform(1, 8, int(rng.integers(1, 4))))
        for add in adds:
            rows.append({"type": "AddToCart", "minute": add, "user": user, "item": int(rng.integers(100))})
        if user == 4:
            continue  # never checks out
        late = user in planted
        checkout = adds[-1] + (rng.uniform(45, 90) if late else rng.uniform(2, 29 - (adds[-1] - adds[0])))
        rows.append(
            {"type": "Checkout", "minute": checkout, "user": user, "total": round(float(rng.uniform(20, 300)), 2)}
        )
    return _frame(rows), planted


# ----------------------------------------------------------------------------- funnel
def _funnel(seed: int = 3) -> tuple:
    rng = np.random.default_rng(seed)
    rows, planted = [], []
    for user in range(50):
        at = rng.uniform(0, 600)
        rows.append({"type": "Visit", "minute": at, "user": user, "source": str(rng.choice(["ad", "search", "mail"]))})
        if rng.random() < 0.3:
            continue  # leaves after the visit
        fast_signup = rng.random() < 0.7
        signup = at + (rng.uniform(1, 9) if fast_signup else rng.uniform(15, 40))
        rows.append({"type": "Signup", "minute": signup, "user": user})
        if rng.random() < 0.4:
            continue  # signs up, never buys
        fast_buy = rng.random() < 0.6
        rows.append(
            {
                "type": "Purchase",
                "minute": signup + (rng.uniform(5, 55) if fast_buy else rng.uniform(70, 200)),
                "user": user,
                "amount": round(float(rng.uniform(5, 80)), 2),
            }
        )
        if fast_signup and fast_buy:
            planted.append(user)
    return _frame(rows), tuple(planted)


# ----------------------------------------------------------------------------- sensor spikes
def _series(rng, keys, planted, n: int, shape: list, low: float, high: float, wiggle: float) -> list:
    """(key, i, value) for ``n`` readings per key: around a base drawn in [low, high), down, up, down... by
    ``wiggle`` (so never three rising or falling in a row); a planted key has ``shape`` (offsets from the
    base) once, at a random place."""
    out = []
    for key in keys:
        base = float(rng.uniform(low, high))
        at = int(rng.integers(3, n - len(shape))) if key in planted else -n
        for i in range(n):
            if at <= i < at + len(shape):
                value = base + shape[i - at]
            else:
                value = base + (wiggle if i % 2 else -wiggle) + float(rng.uniform(-0.05, 0.05))
            out.append((key, i, round(value, 2)))
    return out


def _spikes(seed: int = 4) -> tuple:
    planted = (2, 3)  # five readings 10 s apart, each 2 degrees higher
    readings = _series(np.random.default_rng(seed), range(5), planted, 40, [2.0, 4.0, 6.0, 8.0, 10.0], 18, 24, 0.3)
    return _frame(
        [{"type": "Reading", "minute": i / 6, "sensor": key, "temp": value} for key, i, value in readings]
    ), planted


# ----------------------------------------------------------------------------- SLA breach
def _sla(seed: int = 5) -> tuple:
    rng = np.random.default_rng(seed)
    rows, planted = [], []
    for ticket in range(40):
        at = rng.uniform(0, 480)
        priority = "high" if ticket % 3 == 0 else "low"
        rows.append({"type": "Opened", "minute": at, "ticket": ticket, "priority": priority})
        slow = ticket in (0, 9, 21, 30, 2, 7)  # 0, 9, 21, 30 high; 2, 7 low (allowed)
        if ticket == 33:  # high, never answered
            planted.append(ticket)
            continue
        rows.append(
            {
                "type": "Responded",
                "minute": at + (rng.uniform(70, 180) if slow else rng.uniform(3, 55)),
                "ticket": ticket,
            }
        )
        if slow and priority == "high":
            planted.append(ticket)
    return _frame(rows), tuple(planted)


# ----------------------------------------------------------------------------- brute-force login
def _logins(seed: int = 6) -> tuple:
    rng = np.random.default_rng(seed)
    rows, planted = [], (5, 14, 26)
    for user in range(30):
        at = rng.uniform(0, 600)
        if user in planted:  # 3 to 6 failures in a row, then in
            failures = int(rng.integers(3, 7))
            for k in range(failures):
                rows.append({"type": "LoginFailed", "minute": at + 0.2 * k, "user": user, "ip": "203.0.113.9"})
            rows.append({"type": "LoginSucceeded", "minute": at + 0.2 * failures, "user": user, "ip": "203.0.113.9"})
            continue
        typos = 2 if user in (7, 8) else int(rng.integers(0, 2))  # a typo or two, then in
        for k in range(typos):
            rows.append({"type": "LoginFailed", "minute": at + 0.5 * k, "user": user, "ip": "198.51.100.1"})
        rows.append({"type": "LoginSucceeded", "minute": at + 0.5 * typos, "user": user, "ip": "198.51.100.1"})
    # decoy: three failures, then a success 20 minutes later (outside the 5 minutes)
    rows += [{"type": "LoginFailed", "minute": 700.0 + k, "user": 99, "ip": "192.0.2.7"} for k in range(3)]
    rows.append({"type": "LoginSucceeded", "minute": 722.0, "user": 99, "ip": "192.0.2.7"})
    return _frame(rows), planted


# ----------------------------------------------------------------------------- stock V-shape
def _stocks(seed: int = 7) -> tuple:
    planted = ("ACME", "GLOBEX")  # a tick a second: down, down, then up past where it started
    ticks = _series(
        np.random.default_rng(seed),
        ("ACME", "GLOBEX", "INITECH", "UMBRELLA"),
        planted,
        30,
        [0.0, -2.0, -4.0, 1.0, 3.0],
        50,
        150,
        0.2,
    )
    return _frame(
        [{"type": "Tick", "minute": i / 60, "symbol": key, "price": value} for key, i, value in ticks]
    ), planted


# ----------------------------------------------------------------------------- SES chemotherapy
def _chemo() -> tuple:
    from .datasets import ses_chemo

    return ses_chemo(3), (1, 2)


RECIPES = {
    r.name: r
    for r in [
        Recipe(
            "fraud",
            "Card testing: a tiny purchase, then a large one",
            "A card used for a tiny purchase and then, within 10 minutes, a large one (a stolen card being tested).",
            "PATTERN SEQ(Purchase small, Purchase large) WHERE small.amount < 5 and large.amount > 500 "
            "WITHIN 10 min PARTITION BY card",
            "card",
            _fraud,
        ),
        Recipe(
            "abandoned_cart",
            "Abandoned cart",
            "A user who added an item to the cart and did not check out within the next 30 minutes.",
            "PATTERN SEQ(AddToCart a, !Checkout c) WITHIN 30 min PARTITION BY user",
            "user",
            _cart,
        ),
        Recipe(
            "funnel",
            "Funnel with a time limit per step",
            "Visitors who signed up within 10 minutes of their visit and bought within an hour of signing up.",
            "PATTERN SEQ(Visit v, Signup s, Purchase p) WHERE s.ts - v.ts <= 10 min and p.ts - s.ts <= 1 h "
            "PARTITION BY user",
            "user",
            _funnel,
        ),
        Recipe(
            "sensor_spike",
            "Sensor spike: a rising run",
            "Four or more consecutive readings of one sensor, each higher than the one before, within a minute.",
            "SELECT PARTITION_STRICT * PATTERN Reading+ r WHERE prev(r.temp) < r.temp and count(r) >= 4 "
            "WITHIN 1 min PARTITION BY sensor",
            "sensor",
            _spikes,
        ),
        Recipe(
            "sla_breach",
            "SLA breach: no response in time",
            "High-priority tickets with no response within an hour of being opened (answered late, or never).",
            "PATTERN SEQ(Opened o, !Responded r) WHERE o.priority = 'high' WITHIN 1 h PARTITION BY ticket",
            "ticket",
            _sla,
        ),
        Recipe(
            "brute_force",
            "Brute-force login",
            "Three failed logins in a row followed by a successful one for the same user, within 5 minutes.",
            "SELECT PARTITION_STRICT * PATTERN LoginFailed f1 ; LoginFailed f2 ; LoginFailed f3 ; "
            "LoginSucceeded s WITHIN 5 min PARTITION BY user",
            "user",
            _logins,
        ),
        Recipe(
            "v_shape",
            "Stock V-shape",
            "Five consecutive ticks of a symbol that fall twice and then rise above where they started.",
            "SELECT PARTITION_STRICT * PATTERN Tick a ; Tick b ; Tick c ; Tick d ; Tick e WHERE b.price < a.price "
            "and c.price < b.price and d.price > c.price and e.price > d.price and e.price > a.price "
            "WITHIN 4 s PARTITION BY symbol",
            "symbol",
            _stocks,
        ),
        Recipe(
            "chemo_protocol",
            "Chemotherapy protocol ([SES] Example 3.4)",
            "Patients given C, rising doses of P and D (in any order), then a blood count, all within 15 days.",
            "SELECT STNM * PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE c.PID = p.PID and p.PID = d.PID and "
            "d.PID = b.PID and prev(p.V) < p.V WITHIN 15 days",
            "PID",
            _chemo,
        ),
    ]
}


def get(name: str) -> Recipe:
    """The recipe called ``name`` (``RECIPES`` lists them)."""
    try:
        return RECIPES[name]
    except KeyError:
        hint = did_you_mean(name, RECIPES)
        raise KeyError(f"no recipe {name!r}: the recipes are {', '.join(RECIPES)}{hint}") from None


def gallery() -> pd.DataFrame:
    """One row per recipe: its name, title, what it finds, its query and the size of its stream."""
    return pd.DataFrame(
        [
            {"name": r.name, "title": r.title, "finds": r.finds, "query": r.query, "events": len(r.events())}
            for r in RECIPES.values()
        ]
    )
