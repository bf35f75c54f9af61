"""The constant-delay enumeration (``enumeration="constant-delay"``, docs/automaton-engine.md,
"Constant-delay enumeration"): the reference's matches, bindings included, on random formulas and streams;
the bound it rests on (without a window every union node's left spine has at most 2 unions, so a walk
meets an Ext node or ⊥ within 2 steps of any node), checked over the whole arena after random runs; and
the cursor's walk against the engine's other enumeration."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.engines.automaton import evaluate, nodes
from cepkit.runtime.stream import Stream
from strategies import assert_agrees, cel_queries, streams, unary_queries

from .test_against_reference import assume_compiles


def program_of(query: str, **options):
    _, plan = cepkit.runtime.selection.select_engine(cepkit.parse(query), "automaton", options)
    return plan.program


@settings(max_examples=60, deadline=None)
@given(cel_queries(), streams())
def test_agrees_with_the_reference(query, events):
    """Every clause (windows, PARTITION BY, CONSUME BY, RETURN, strategies): the same matches and bindings,
    ``Matches`` ordering what the cursor enumerated."""
    assume_compiles(query)
    got = assert_agrees(query, events, "automaton", enumeration="constant-delay")
    assert got.info["enumeration"] == "constant-delay"


@settings(max_examples=40, deadline=None)
@given(cel_queries(), streams())
def test_agrees_with_a_tiny_arena(query, events):
    """Compaction at every few nodes re-orders the unions it keeps: the matches stay the reference's."""
    assume_compiles(query)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nodes, "CAPACITY", 16)
        assert_agrees(query, events, "automaton", enumeration="constant-delay")


def max_spine(arena) -> int:
    used = int(arena.used[0])
    unions = arena.pos[:used] == nodes.UNION
    return int((-1 - arena.var[:used][unions]).max()) if unions.any() else 0


@settings(max_examples=100, deadline=None)
@given(unary_queries(windows=False, partition=False), streams(types=("A", "B", "C"), max_size=16))
def test_without_a_window_every_left_spine_has_at_most_two_unions(query, events):
    """The bound argued in docs/automaton-engine.md: each ◦ move leads into a state whose ◦ moves loop,
    so a state's new list unions at most its own old list with lists made one event before by • moves
    (spine ≤ 1), and ``put_union`` puts the shorter spine on the left when the starts are equal (always,
    without a window). Checked on every union node of the arena, with the spine each records recomputed."""
    assume_compiles(query)
    program = program_of(query)
    assume(not program.ranked)
    arena = evaluate.run_all(program, Stream.from_any(events)).arena
    used = int(arena.used[0])
    for node in range(used):
        if arena.pos[node] == nodes.UNION:
            steps, walk = 0, node
            while arena.pos[walk] == nodes.UNION:
                steps, walk = steps + 1, arena.left[walk]
            assert steps == -1 - arena.var[node]
    assert max_spine(arena) <= 2, query


def assert_spines_recorded(arena) -> None:
    """Every union records its left spine (``-1 − var``): recomputed by walking it."""
    for node in range(int(arena.used[0])):
        if arena.pos[node] == nodes.UNION:
            steps, walk = 0, arena.left[node]
            while arena.pos[walk] == nodes.UNION:
                assert arena.start[walk] == arena.start[node]  # a left child starts as late as its union
                steps, walk = steps + 1, arena.left[walk]
            assert steps + 1 == -1 - arena.var[node]
            assert arena.start[arena.right[node]] <= arena.start[node]


@settings(max_examples=100, deadline=None)
@given(
    unary_queries(windows=False, partition=False),
    streams(types=("A", "B", "C", "D"), min_size=8, max_size=40),
    st.integers(1, 12),
    st.sampled_from(["s", "EVENTS"]),
)
def test_under_a_window_every_left_spine_has_at_most_two_unions(query, events, width, unit):
    """``put_union`` under a window (docs/automaton-engine.md, "Constant-delay enumeration"): a union whose
    later child's spine is full and whose other child starts earlier places that one lower (``_place``),
    so spines stay within 2 unions on random formulas and streams, checked on every union of the arena."""
    query = f"{query} WITHIN {width} {unit}"
    assume_compiles(query)
    program = program_of(query)
    assume(not program.ranked)
    arena = evaluate.run_all(program, Stream.from_any(events)).arena
    assert_spines_recorded(arena)
    assert max_spine(arena) <= nodes.SPINE, query


WINDOWED = (  # (query, stream): lists that keep receiving runs older than their latest
    # each D joins runs started at the C to a list whose latest start is the A's
    ("((A a ; B b) OR (C c ; D d)) ; E e WITHIN 100000 s", "CAB" + "D" * 300 + "E"),
    # two sources older than the list's latest (the G's), taking turns
    ("((A a ; B b) OR (C c ; D d) OR (F f ; G g)) ; E e WITHIN 100000 s", "ACFG" + "BD" * 150 + "E"),
)


@pytest.mark.parametrize("query, types", WINDOWED)
def test_under_a_window_older_runs_do_not_grow_a_spine(query, types):
    """The streams where a spine grew by one union per event before ``_place``: at most 2 now, and the
    matches are the reference's."""
    events = [{"type": t, "ts": i} for i, t in enumerate(types)]
    arena = evaluate.run_all(program_of(query), Stream.from_any(events)).arena
    assert_spines_recorded(arena)
    assert max_spine(arena) <= nodes.SPINE
    assert_agrees(query, events[:40] + events[-1:], "automaton", enumeration="constant-delay")


@pytest.mark.parametrize("k", [5, 60])
def test_under_a_window_the_fallback_lengthens_a_spine_by_one(k):
    """C A (F G)^6 D^k E on the three-branch query: each F G starts the list over, so the C's runs (each D's)
    are older than more than ``DESCENT`` full parts of it and ``_place`` falls back to Union(a, b), one
    union longer (docs/automaton-engine.md, "What is proved under a window"): spines of 3 whatever k, the
    start order kept, and the reference's matches."""
    query = WINDOWED[1][0]
    events = [{"type": t, "ts": i} for i, t in enumerate("CA" + "FG" * 6 + "D" * k + "E")]
    arena = evaluate.run_all(program_of(query), Stream.from_any(events)).arena
    assert_spines_recorded(arena)
    assert max_spine(arena) == nodes.SPINE + 1
    if k < 10:
        assert_agrees(query, events, "automaton", enumeration="constant-delay")


def test_the_bound_on_the_benchmark_streams():
    """The two queries of bench/constant_delay.py over A^n B and (A A B)^k C: spines of at most 2 unions,
    and the cursor's walk meets at most 2 unions beyond one per position it writes."""
    for query, types in (("A+ a ; B b", ["A"] * 200 + ["B"]), ("(A+ a ; B b)+ ; C c", ["A", "A", "B"] * 60 + ["C"])):
        program = program_of(query, enumeration="constant-delay")
        events = [{"type": t, "ts": i} for i, t in enumerate(types)]
        evaluator = run(program, events)
        arena, roots = evaluator.arena, evaluator.roots
        assert max_spine(arena) <= 2
        cursor = nodes.new_cursor(arena)
        for r in range(int(roots.n[0])):
            key, limit = roots.key[r], roots.limit[r]
            nodes.cursor_open(arena, cursor, roots.node[r], key, limit)
            for _ in range(2000):
                sp = int(cursor.state[0])
                if sp == 0:
                    break
                node, unions = cursor.node[sp - 1], 0
                while node != nodes.BOTTOM:
                    unions += arena.pos[node] == nodes.UNION
                    node = arena.left[node]
                assert next_event(arena, cursor, key, limit) == 1
                assert unions <= 2 * (cursor.state[2] - cursor.state[1] + 1)


def next_event(arena, cursor, key, limit) -> int:
    """One complex event of the cursor's walk, left in its path (``nodes.cursor_fill`` without copying)."""
    none = np.empty(0, np.int64)
    return nodes.cursor_fill(
        arena, cursor, key, limit, 1, False, 0, none, np.empty(0, np.int32), none, none, np.zeros(2, np.int64)
    )


@settings(max_examples=40, deadline=None)
@given(cel_queries(strategies=("ALL", "STRICT")), streams())
def test_the_cursor_one_event_per_call_leaves_each_in_its_path(query, events):
    """``cursor_fill`` one complex event per call, without copying: the path's last ``state[2]`` entries are
    the event (ascending), the entries before ``state[1]`` from the end are the previous event's, and the
    events are those of the whole walk, in its order."""
    assume_compiles(query)
    program = program_of(query)
    assume(not program.ranked)
    evaluator = run(program, events, evaluate.Outputs(order=False, constant_delay=True))
    arena, roots = evaluator.arena, evaluator.roots  # the lists not enumerated yet
    cursor, walked, previous = nodes.new_cursor(arena), [], []
    for r in range(int(roots.n[0])):
        key, limit = roots.key[r], roots.limit[r]
        nodes.cursor_open(arena, cursor, roots.node[r], key, limit)
        previous = []
        while next_event(arena, cursor, key, limit) == 1:
            size, fresh = int(cursor.state[2]), int(cursor.state[1])
            event = cursor.path_pos[len(cursor.path_pos) - size :].tolist()
            assert event[size - fresh :] == previous[len(previous) - fresh :] if fresh else True
            walked.append((event, cursor.path_var[len(cursor.path_var) - size :].tolist()))
            previous = event
    evaluator.finish()  # the same lists, written by ``enumerate_cursor`` after any taken during the run
    offsets, positions, variables, _ = evaluator.outputs.arrays()
    whole = [(positions[a:b].tolist(), variables[a:b].tolist()) for a, b in zip(offsets[:-1], offsets[1:])]
    assert walked == whole[len(whole) - len(walked) :]


def run(program, events, outputs=None):
    """Algorithm 1 over ``events``, the matches enumerated into ``outputs`` (the evaluator's own if None)."""
    evaluator = evaluate.Evaluator(program)
    if outputs is not None:
        evaluator.outputs = outputs
    runs = evaluator.new_runs()
    for batch in evaluate.Inputs(program, Stream.from_any(events)).batches(program.letters.none):
        runs = evaluator.run(batch, runs)
    return evaluator


@settings(max_examples=40, deadline=None)
@given(cel_queries(strategies=("ALL", "STRICT")), streams())
def test_the_cursor_walks_what_the_unordered_walk_walks(query, events):
    """Root by root, ``cursor_next`` yields the complex events ``enumerate_roots`` writes unordered, in the
    same order (both are the depth-first walk, left child first)."""
    assume_compiles(query)
    program = program_of(query)
    assume(not program.ranked)
    walks = []
    for constant_delay in (False, True):
        evaluator = run(program, events, evaluate.Outputs(order=False, constant_delay=constant_delay))
        evaluator.finish()
        offsets, positions, variables, emits = evaluator.outputs.arrays()
        walks.append((offsets.tolist(), positions.tolist(), variables.tolist(), emits.tolist()))
    assert walks[0] == walks[1]


@settings(max_examples=60, deadline=None)
@given(cel_queries(strategies=("ALL", "STRICT")), streams())
def test_the_cursor_writes_the_ordered_enumerations_matches(query, events):
    """``enumerate_cursor`` (unordered) and the default ordered enumeration write the same complex events,
    as sets of (emit position, positions, variables), each once: windows, PARTITION BY, RETURN included."""
    assume_compiles(query)
    program = program_of(query)
    assume(not program.ranked)
    written = []
    for constant_delay in (True, False):
        evaluator = run(program, events, evaluate.Outputs(order=not constant_delay, constant_delay=constant_delay))
        evaluator.finish()
        offsets, positions, variables, emits = evaluator.outputs.arrays()
        rows = [
            (int(emit), tuple(positions[a:b].tolist()), tuple(variables[a:b].tolist()))
            for emit, a, b in zip(emits, offsets[:-1], offsets[1:])
        ]
        assert len(set(rows)) == len(rows)
        written.append(set(rows))
    assert written[0] == written[1]


def test_an_unknown_enumeration_is_refused():
    with pytest.raises(ValueError, match="constant-delay"):
        cepkit.match("A a ; B b", [{"type": "A"}], engine="automaton", enumeration="fast")


def test_info_names_the_enumeration():
    events = [{"type": "A", "ts": 0}, {"type": "B", "ts": 1}]
    assert cepkit.match("A a ; B b", events, engine="automaton").info["enumeration"] == "ordered"
    found = cepkit.match("A a ; B b", events, engine="automaton", enumeration="constant-delay")
    assert found.positions() == [(0, 1)] and found.info["enumeration"] == "constant-delay"
