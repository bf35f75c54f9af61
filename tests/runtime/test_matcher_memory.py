"""Bounded state on endless streams (issue 15): under a time window each engine's incremental matcher drops
a PARTITION BY key's state once its window has passed (``cepkit.runtime.expiry``), and what it reports
is still exactly what ``cepkit.match`` finds. Counted in live keys and state objects, not in bytes."""

from collections import Counter

import numpy as np
import pytest

import cepkit
from cepkit.runtime.stream import Stream
from cepkit.runtime.expiry import KeyExpiry
from cepkit.runtime.selection import select_engine

N = 3000
QUERY = "A a ; B b ; C c WITHIN 10 s PARTITION BY id"


def rotating_keys(n: int = N, every: int = 10, seed: int = 0) -> list:
    """Types A-D, ts = position, and a partition key that changes every ``every`` events (a sensor or user
    id stream): only a window's worth of keys is ever live."""
    rng = np.random.default_rng(seed)
    return [
        {"type": str(t), "ts": i, "id": i // every, "v": int(v)}
        for i, (t, v) in enumerate(zip(rng.choice(list("ABCD"), n), rng.integers(0, 10, n)))
    ]


LIVE_KEYS = {  # engine -> its matcher's per-key state
    "automaton": lambda m: m.parts,
    "stack": lambda m: m.cores,
    "ses": lambda m: m.windows,
    "rcep": lambda m: m.partitions,
    "nested": lambda m: m.execution.parts,
}


def run(query: str, engine: str, events: list):
    """The engine's own incremental matcher after every event, and the keys of what it reported."""
    inc = select_engine(cepkit.parse(query), engine, {})[1].matcher()
    found, most = [], 0
    for e in Stream.from_any(events):
        found += inc.push(e)
        most = max(most, len(LIVE_KEYS[engine](inc)))
    found += inc.close()
    return inc, most, sorted(m.key for m in found)


@pytest.mark.parametrize("engine", sorted(LIVE_KEYS))
def test_the_state_of_a_key_is_dropped_once_its_window_has_passed(engine):
    """A window of 10 s over keys that change every 10 s: at most 3 keys are live at any time (300 were
    seen), and the matches are those of ``cepkit.match``."""
    events = rotating_keys()
    inc, most, found = run(QUERY, engine, events)
    assert most <= 3
    assert found == sorted(m.key for m in cepkit.match(QUERY, events, engine=engine))
    assert found


@pytest.mark.parametrize("engine", sorted(LIVE_KEYS))
def test_return_keys_reported_once_are_forgotten_a_window_later(engine):
    """Under RETURN a matcher remembers the projected keys it reported, a window's worth of them."""
    query = "A a ; B b ; C c WITHIN 10 s PARTITION BY id RETURN a, c"
    events = rotating_keys()
    inc, _, found = run(query, engine, events)
    reported = {
        "automaton": lambda: inc.projected,
        "ses": lambda: inc.projected,
        "rcep": lambda: inc.reported,
        "nested": lambda: inc.execution.reported,
        "stack": lambda: inc._reported,
    }[engine]()
    assert len(found) > 50 and len(reported) <= 20
    assert found == sorted(m.key for m in cepkit.match(query, events, engine=engine))


@pytest.mark.parametrize("engine", sorted(LIVE_KEYS))
def test_a_key_that_comes_back_after_its_window_starts_afresh(engine):
    """Key 0, then key 1 for longer than the window, then key 0 again: no match joins the two visits of 0."""
    events = [
        {"type": t, "ts": ts, "id": k}
        for t, ts, k in [
            ("A", 0, 0),
            ("B", 1, 0),
            ("A", 2, 1),
            ("B", 30, 1),
            ("C", 31, 0),
            ("A", 32, 0),
            ("B", 33, 0),
            ("C", 34, 0),
        ]
    ]
    inc, _, found = run(QUERY, engine, events)
    assert [m[0] for m in found] == [(5, 6, 7)]
    assert found == sorted(m.key for m in cepkit.match(QUERY, events, engine=engine))


def test_an_events_window_keeps_every_key():
    """Under WITHIN n EVENTS a key's next event may join its last ones however late: nothing expires."""
    expiry = KeyExpiry(None)
    expiry.touch("k", 0.0)
    assert expiry.expired(1e12) == [] and len(expiry) == 0
    timed = KeyExpiry(10.0)
    timed.touch("a", 0.0)
    timed.touch("b", 5.0)
    assert timed.expired(10.0) == [] and timed.expired(14.0) == ["a"] and len(timed) == 1


def test_a_late_event_does_not_move_a_key_back_in_time():
    """Out of order, a key's last time is the largest of its events': a late one does not make it expire
    early."""
    expiry = KeyExpiry(10.0)
    expiry.touch("k", 20.0)
    expiry.touch("k", 5.0)
    assert expiry.expired(25.0) == [] and expiry.expired(31.0) == ["k"]


@pytest.mark.parametrize("engine", ["automaton", "stack"])
def test_a_quiet_key_under_an_events_window_holds_a_window_of_state(engine):
    """300 keys, each quiet after its 10 events, under WITHIN 5 EVENTS: every key is kept, each with the
    state of at most its last 5 events (automaton: runs; stack: stacked instances)."""
    query = "A a ; B b ; C c WITHIN 5 EVENTS PARTITION BY id"
    events = rotating_keys()
    inc, most, found = run(query, engine, events)
    assert most == N // 10
    assert found == sorted(m.key for m in cepkit.match(query, events, engine=engine))
    if engine == "automaton":
        assert max(len(inc.table.runs(part.state)[0]) for part in inc.parts.values()) <= 5
    else:
        assert max(core.size() for core in inc.cores.values()) <= 5


def one_endless_key(n: int, seed: int = 1) -> list:
    """One key for ``n`` events, ts = position: types A-D, with a quiet stretch of D only in the middle
    (no candidate for a while, so a cached view falls behind the stream)."""
    rng = np.random.default_rng(seed)
    types = rng.choice(list("ABCD"), n)
    types[n // 3 : n // 3 + 200] = "D"
    return [{"type": str(t), "ts": i, "id": 0} for i, t in enumerate(types)]


@pytest.mark.parametrize("caching", ["a", "p", "b", None])
@pytest.mark.parametrize(
    "query",
    [
        "SEQ(A a, !B b, C c) WITHIN 10 s PARTITION BY id",
        "SEQ(A a, C c, !SEQ(B b, D d)) WITHIN 10 s",  # trailing: candidates wait for their scope
        "SEQ(A a, EXISTS B b, C c) WITHIN 12 EVENTS PARTITION BY id",
    ],
)
def test_the_nested_matcher_keeps_a_window_of_one_endless_key(query, caching):
    """The sub-stream of a key drops the events no candidate or witness can reach (more than twice the
    window back, or before a pending candidate's reach): with one key for 3,000 events at most about two
    windows and a purge period of them are kept, and the matches are the reference's."""
    from cepkit.engines.nested import PURGE_EVERY

    events = one_endless_key(N)
    inc = select_engine(cepkit.parse(query), "nested", {"caching": caching})[1].matcher()
    found, most = [], 0
    for e in Stream.from_any(events):
        found += inc.push(e)
        most = max(most, max(len(part.events.items) for part in inc.execution.parts.values()))
    found += inc.close()
    assert most <= 3 * 12 + PURGE_EVERY
    assert sorted(m.key for m in found) == sorted(m.key for m in cepkit.match(query, events, engine="reference"))
    assert found


def late_by_at_most(events: list, delay: float, seed: int = 2) -> list:
    """``events`` (ts = position) in an arrival order where each is at most ``delay`` late."""
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(0, delay, len(events))
    return [events[i] for i in np.argsort([e["ts"] + d for e, d in zip(events, jitter)], kind="stable")]


@pytest.mark.parametrize("disorder", ["conservative", "aggressive"])
@pytest.mark.parametrize(
    "query",
    [QUERY, "SEQ(A a, !D d, B b, C c) WITHIN 10 s PARTITION BY id", "SEQ(A a, B b, !D d) WITHIN 10 s PARTITION BY id"],
)
def test_the_stack_out_of_order_modes_drop_a_key_past_their_purge(query, disorder):
    """With ``max_delay`` the conservative and aggressive modes purge instances a bounded time below the
    clock; a key whose last event lies below that reach is dropped, unless (conservative) it holds
    matches a late negative may still block. Keys that change every 10 events: a few are live (300 were
    seen), and the net output is the reference's over the stream in time order."""
    arrived = late_by_at_most(rotating_keys(), 3)
    inc = select_engine(cepkit.parse(query), "stack", {"disorder": disorder, "max_delay": 3})[1].matcher()
    net, most = set(), 0
    for e in Stream.from_any(arrived):
        for m in inc.push(e):
            (net.add if m.sign == "+" else net.remove)(m.key)
        most = max(most, len(inc.cores))
    net.update(m.key for m in inc.close())
    assert most <= 6 and len(inc.held if disorder == "conservative" else inc.cores) <= 6
    assert sorted(net) == in_time_order(query, arrived) and net


@pytest.mark.parametrize("disorder", ["conservative", "aggressive"])
@pytest.mark.parametrize(
    "query",
    [
        "A a ; B b ; C c WITHIN 10 s RETURN a, c",
        "SEQ(A a, !D d, B b, C c) WITHIN 10 s RETURN b, c",
        "SEQ(A a, B b, !D d) WITHIN 10 s RETURN a",
    ],
)
def test_the_stack_out_of_order_modes_forget_return_keys_past_their_horizon(query, disorder):
    """Under RETURN the conservative and aggressive modes count each projected key's live matches; a key
    is forgotten once every type the query reads is complete past its earliest event plus the window
    (no arrival can emit or retract it again). One endless key, 3,000 events at most 3 s late: a few
    dozen keys are held (the old code held every key emitted: hundreds), each key is emitted once and
    the net output is the reference's over the stream in time order."""
    arrived = late_by_at_most(rotating_keys(), 3)
    inc = select_engine(cepkit.parse(query), "stack", {"disorder": disorder, "max_delay": 3})[1].matcher()
    net, most = Counter(), 0
    for e in Stream.from_any(arrived):
        for m in inc.push(e):
            net[m.key] += 1 if m.sign == "+" else -1
            assert net[m.key] in (0, 1)
        most = max(most, len(inc._live), len(inc._live_by_time))
    for m in inc.close():
        net[m.key] += 1
    assert most <= 40
    assert sorted(k for k, n in net.items() if n) == in_time_order(query, arrived) and len(net) > 100
    assert set(net.values()) <= {0, 1}


def test_the_conservative_mode_forgets_return_keys_on_punctuations_alone():
    """No ``max_delay``: punctuations of every type (each 5 events, at the ts reached 3 s ago) complete the
    stream; the keys settle with them, and the result is the reference's."""
    query = "SEQ(A a, B b, !D d) WITHIN 10 s RETURN a, b"
    arrived = []
    for e in late_by_at_most(rotating_keys(), 3):
        arrived.append(e)
        if len(arrived) % 6 == 5:
            horizon = max(x["ts"] for x in arrived if x["type"] != "PUNCTUATION") - 3
            arrived += [{"type": "PUNCTUATION", "of": t, "ts": horizon} for t in "ABD"]
    inc = select_engine(cepkit.parse(query), "stack", {"disorder": "conservative"})[1].matcher()
    found, most = [], 0
    for e in Stream.from_any(arrived):
        found += inc.push(e)
        most = max(most, len(inc._live_by_time))
    found += inc.close()
    assert most <= 40 and inc.info()["dropped"] == []
    assert sorted(m.key for m in found) == in_time_order(query, arrived) and len(found) > 100


def in_time_order(query: str, arrived: list) -> list:
    """The reference's match keys over ``arrived`` read in (ts, arrival) order, with arrival positions:
    the net result of every out-of-order mode."""
    order = sorted(range(len(arrived)), key=lambda p: (arrived[p]["ts"], p))
    found = cepkit.match(query, [arrived[p] for p in order], engine="reference")
    return sorted(
        (tuple(sorted(order[i] for i in m.positions)), tuple(sorted((v, order[i]) for v, i in m.bindings.items())))
        for m in found
    )


@pytest.mark.parametrize(
    "query",
    [
        "NEXT(A a ; B b) ; C c WITHIN 10 s PARTITION BY id",
        "A a ; LAST(B b ; C c) WITHIN 12 EVENTS PARTITION BY id",
        "MAX(A a ; B b) ; C c WITHIN 10 s",
    ],
)
@pytest.mark.parametrize("stream", ["rotating", "one key"])
def test_the_automaton_forgets_chosen_sub_matches_past_the_window(query, stream):
    """A nested NEXT/LAST/MAX keeps the sub-matches it chose only while a match may still contain one (a
    window's worth per key; a key dropped under a time window takes its own along): hundreds are chosen over
    the stream, a few are held per key (under EVENTS windows every key is kept, with its window's worth)."""
    events = rotating_keys() if stream == "rotating" else one_endless_key(N)
    inc = select_engine(cepkit.parse(query), "automaton", {})[1].matcher()
    found, most, per_key = [], 0, 0
    for e in Stream.from_any(events):
        found += inc.push(e)
        for _, _, chosen in inc.nested:
            most = max(most, len(chosen))
            per_key = max(per_key, max(map(len, chosen.by_key.values()), default=0))
    found += inc.close()
    assert per_key <= 40 and (most <= 60 or "EVENTS" in query)
    assert sorted(m.key for m in found) == sorted(m.key for m in cepkit.match(query, events, engine="reference"))
    assert found


@pytest.mark.parametrize("engine", ["automaton", "ses", "rcep", "nested"])
@pytest.mark.parametrize(
    "disorder, options, late",
    [("kslack", {"k": 3}, 3), ("conservative", {"max_delay": 3}, 3), ("aggressive", {"max_delay": 3}, 0)],
)
def test_the_out_of_order_layer_keeps_the_ranks_of_a_window(engine, disorder, options, late):
    """The layer maps the engine's release ranks back to arrival positions: under a time window only the
    ranks of the last two windows are needed, so ~2,000 events leave a few dozen (plus the trim's slack),
    and the net output is the reference's over the stream in time order. (Aggressive restarts its matcher
    at each late event, so its ranks are trimmed when none comes: here, none does.)"""
    query = "SEQ(A a, B b, !D d) WITHIN 10 s PARTITION BY id" if engine == "nested" else QUERY
    arrived = late_by_at_most(rotating_keys(2000), late)
    layer = select_engine(cepkit.parse(query), engine, {"disorder": disorder, **options})[1].matcher()
    net, most = set(), 0
    for e in Stream.from_any(arrived):
        for m in layer.push(e):
            (net.add if m.sign == "+" else net.remove)(m.key)
        most = max(most, len(layer.arrival), len(layer.times))
    net.update(m.key for m in layer.close())
    assert layer.first_rank > 1000 and most <= 200
    assert sorted(net) == in_time_order(query, arrived) and net


def test_the_automaton_matcher_allocates_nothing_per_event(monkeypatch):
    """Traced Python memory of an automaton ``Matcher(keep=False)`` over one endless key stays flat once the
    arena has reached its size: under 10 B/event over 10,000 events, less than one leaked int per event
    would add (the issue saw 30-50 B/event: the first compaction's new arena fell in its measured stretch).
    What remains is what tracemalloc pins on the numba call itself: 57-byte blocks, ~1 per 16 calls in a
    process that ran other tests, fewer and levelling off in a fresh one. A 256-node arena compacts
    every few hundred events, so compaction and every object made around the kernel call are inside the
    stretch measured."""
    import gc
    import tracemalloc

    from cepkit.engines.automaton import nodes

    monkeypatch.setattr(nodes, "CAPACITY", 256)
    matcher = cepkit.Matcher(QUERY, engine="automaton", keep=False)
    events = one_endless_key(23000)
    tracemalloc.start()  # from the start: what the state frees then is counted as freed
    try:
        for e in events[:13000]:
            matcher.push(e)
        arena = matcher._inc.arena_nodes
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for e in events[13000:]:
            matcher.push(e)
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert matcher._inc.arena_nodes == arena <= 4096
    assert growth < 10 * 10000
