"""Stress of the kernel's arena: tiny arenas (compaction and growth at every few events), long streams,
many windows and partition keys, batch runs and the incremental matcher.

Every new arena is *poisoned*: its unwritten slots hold a node that looks valid (an event at position
``POISON`` whose window never expires), so a read of a slot the kernel never wrote shows up as a wrong
match instead of depending on what the allocator left there. This is how the segmentation fault of issue
15 was found: compaction left a run whose events had all left the window with node NONE (-1), and the
kernel read ``start[-1]`` (numba wraps negative indices), the last, unwritten slot of the new arena.
Run longer with ``CEPKIT_STRESS_EVENTS`` (docs/testing.md)."""

import os

import numpy as np
import pandas as pd
import pytest

import cepkit
from cepkit.engines.automaton import evaluate, nodes, strategies
from cepkit.runtime.stream import Stream

POISON = 10**9
EVENTS = int(os.environ.get("CEPKIT_STRESS_EVENTS", "2000"))

QUERIES = [
    "A a ; B b ; C c WITHIN 3 s",
    "(A a FILTER a.v < 3) ; (B b FILTER b.v < 3) ; (C c FILTER c.v < 3) WITHIN 10 s",
    "(A a OR B b) ; C+ c ; D d WITHIN 4 s PARTITION BY id",
    "A+ a ; B b WITHIN 5 EVENTS PARTITION BY id",
    "(A+ a ; B b)+ ; C c WITHIN 6 EVENTS",
    "SELECT NEXT * PATTERN A a ; B+ b ; C c WITHIN 4 s PARTITION BY id",
]


def poisoned_arena(capacity=None):
    """A new arena whose unwritten slots each hold Ext(POISON, 0, ⊥) with a start no window excludes."""
    arena = clean_arena(capacity)
    used = int(arena.used[0])
    arena.pos[used:], arena.var[used:], arena.left[used:] = POISON, 0, nodes.BOTTOM
    arena.right[used:], arena.start[used:] = nodes.NONE, 1e300
    return arena


clean_arena = nodes.new_arena


def stream(n: int, keys: int, seed: int = 0) -> pd.DataFrame:
    """Types A-D, ``keys`` partition keys, ts = position // 2 (equal timestamps included)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "type": rng.choice(list("ABCD"), n),
            "ts": np.arange(n) // 2,
            "v": rng.integers(0, 10, n),
            "id": rng.integers(0, keys, n),
        }
    )


@pytest.fixture
def tiny_poisoned_arenas(monkeypatch):
    monkeypatch.setattr(nodes, "CAPACITY", 16)
    for module in (nodes, evaluate, strategies):
        monkeypatch.setattr(module, "new_arena", poisoned_arena)


def keys_of(matches) -> list:
    return [m.key for m in matches]


@pytest.mark.parametrize("query", QUERIES)
def test_tiny_poisoned_arenas_change_nothing(query, tiny_poisoned_arenas):
    """Batch and matcher on tiny poisoned arenas give the matches of a run on one big clean arena."""
    events = stream(EVENTS, keys=7)
    with pytest.MonkeyPatch.context() as clean:
        clean.setattr(nodes, "CAPACITY", 1 << 20)
        for module in (nodes, evaluate, strategies):
            clean.setattr(module, "new_arena", clean_arena)
        expected = keys_of(cepkit.match(query, events, engine="automaton"))
    assert expected
    assert keys_of(cepkit.match(query, events, engine="automaton")) == expected
    matcher = cepkit.Matcher(query, engine="automaton")
    pushed = matcher.extend(Stream.from_any(events).events) + matcher.close()
    assert sorted(m.key for m in pushed) == sorted(expected)


def test_partitions_made_before_the_automaton_grew(tiny_poisoned_arenas):
    """The matcher's lists of runs of keys first seen while the determinized automaton was small get a slot
    for every state found later (the kernel writes one per state it reaches, unchecked), and a second
    run of the same plan starts with room for every state the first one found."""
    query = "(A a OR B b) ; C+ c ; (D d OR A e) WITHIN 6 EVENTS PARTITION BY id"
    events = stream(EVENTS, keys=50, seed=3)
    compiled = cepkit.runtime.selection.select_engine(cepkit.parse(query), "automaton", {})[1]
    first = keys_of(compiled.run(Stream.from_any(events)))
    assert compiled.program.table.skip.shape[0] > 8  # the table grew past the first runs' room
    assert keys_of(compiled.run(Stream.from_any(events))) == first
    matcher = compiled.matcher()
    pushed = [m for e in Stream.from_any(events).events for m in matcher.push(e)]
    assert sorted(m.key for m in pushed) == sorted(first)


def test_outputs_keep_room_for_every_event_they_count():
    """Outputs grown by doubling kept ``end`` one slot longer than ``emits``; the kernel checks the room by
    ``end`` and writes both, so a later enumeration into the same buffers wrote past ``emits`` (the
    matcher's next micro-batch; a run enumerating before each compaction). Their lengths stay equal."""
    rows = [{"type": "AB"[i % 3 == 2], "ts": i // 4} for i in range(1500)]
    matcher = cepkit.Matcher("A a ; B b WITHIN 30 s", engine="automaton")
    for a in range(0, len(rows), 500):
        found = matcher.extend(pd.DataFrame(rows[a : a + 500]))
        outputs = matcher._inc.evaluator.outputs
        assert len(outputs.end) == len(outputs.emits) and len(found) > 2048
    assert matcher.result() == cepkit.match("A a ; B b WITHIN 30 s", rows, engine="automaton")


def batches_and_pushes(compiled, events, size: int = 300) -> tuple:
    """(what a matcher of ``compiled`` returns for ``events`` in micro-batches of ``size`` rows, then
    ``close``; the same pushed one by one into a matcher of a fresh plan; the batches' matcher)."""
    matcher = compiled.matcher()
    got = []
    for a in range(0, len(events), size):
        got += matcher.extend(Stream.from_any(events.iloc[a : a + size], first_position=a))
    got += matcher.close()
    pusher = compiled.fresh().matcher()
    pushed = [m for e in Stream.from_any(events).events for m in pusher.push(e)] + pusher.close()
    return [(m.key, m.emitted_at) for m in got], [(m.key, m.emitted_at) for m in pushed], matcher


@pytest.mark.parametrize(
    "query",
    [q for q in QUERIES if "PARTITION BY" in q and "NEXT" not in q]
    + ["A a ; B b WITHIN 30 s PARTITION BY id CONSUME BY PARTITION"],
)
def test_keyed_micro_batches_on_tiny_poisoned_arenas(query, tiny_poisoned_arenas):
    """A micro-batch runs its keys (40, each quiet past a time window between its events) in one kernel
    call, loading and storing each key's runs in the matcher's table: compaction in the middle of a batch
    keeps every key's stored runs. The batches give what pushing gives, in the same order."""
    compiled = cepkit.runtime.selection.select_engine(cepkit.parse(query), "automaton", {})[1]
    got, pushed, _ = batches_and_pushes(compiled, stream(EVENTS, keys=40, seed=5))
    assert got and got == pushed


def test_keyed_micro_batches_while_the_automaton_grows(tiny_poisoned_arenas):
    """The automaton of a new plan grows in the middle of a batch: every slot of the table gets room for
    the new states (the kernel writes a run per state it reaches, unchecked)."""
    query = "(A a OR B b) ; C+ c ; (D d OR A e) WITHIN 6 EVENTS PARTITION BY id"
    compiled = cepkit.runtime.selection.select_engine(cepkit.parse(query), "automaton", {})[1]
    room = compiled.matcher().table.stored.state.shape[1]
    got, pushed, matcher = batches_and_pushes(compiled, stream(EVENTS, keys=50, seed=3))
    assert matcher.table.stored.state.shape[1] > room
    assert got and got == pushed
