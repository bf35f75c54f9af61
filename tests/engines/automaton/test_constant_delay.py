"""The constant-delay enumeration (``enumeration="constant-delay"``, docs/automaton-engine.md,
"Constant-delay enumeration"): the reference's matches, bindings included, on random formulas and streams;
the bound it rests on (without a window every union node's left spine has at most 2 unions, so a walk
meets an Ext node or ⊥ within 2 steps of any node), checked over the whole arena after random runs; and
the cursor's walk against the engine's other enumeration."""

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
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


@st.composite
def shared_variable_patterns(draw, depth=3):
    """CEL patterns over types A-E whose atoms share a few variables (so lists of several sources meet in
    one state) with Kleene closures and ORs at any depth: the formulas where a list keeps receiving runs
    older than its latest (docs/automaton-engine.md, "Under a window")."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return f"{draw(st.sampled_from('ABCDE'))}{draw(st.sampled_from(['', '+']))} {draw(st.sampled_from('xyz'))}"
    parts = draw(st.lists(shared_variable_patterns(depth - 1), min_size=2, max_size=3))
    shape = draw(st.integers(0, 2))
    if shape == 2:
        return f"({parts[0]})+"
    return "(" + (" ; " if shape == 0 else " OR ").join(parts) + ")"


@st.composite
def bursts(draw, types="ABCDE", max_size=120):
    """Streams of runs of one type or of a repeated short sequence: each burst of newer runs pushes the
    older ones deeper down a list (what makes ``_place`` go down, and fall back)."""
    out: list = []
    while len(out) < max_size and draw(st.integers(0, 5)):
        unit = draw(st.text(types, min_size=1, max_size=3))
        out += list(unit * draw(st.integers(1, 12)))
    return [{"type": t, "ts": i} for i, t in enumerate(out[:max_size])]


def spine_example(k: int) -> list:
    """H H G A E G^k A: on the kernel before the fallback's bound, a list's spine grew by one union every
    three G's or so (7 unions at k = 16, 23 at k = 64)."""
    return [{"type": t, "ts": i} for i, t in enumerate("HHGAE" + "G" * k + "A")]


GROWING = "((((H v3 ; H v0 ; A+ v2) ; E+ v9) OR G v0))+ WITHIN 100000 s"


@settings(max_examples=80, deadline=None)
@given(
    st.one_of(
        shared_variable_patterns(),
        unary_queries(types=("A", "B", "C", "D"), windows=False, partition=False),
    ),
    st.one_of(bursts(), streams(types=("A", "B", "C", "D"), min_size=8, max_size=40)),
    st.sampled_from(["3 s", "12 EVENTS", "100000 s"]),
)
@example("((((H v3 ; H v0 ; A+ v2) ; E+ v9) OR G v0))+", spine_example(16), "100000 s")
@example(
    "((A a ; B b) OR (C c ; D d) OR (F f ; G g)) ; E e",
    [{"type": t, "ts": i} for i, t in enumerate("CA" + "FG" * 6 + "D" * 20 + "E")],
    "100000 s",
)
def test_under_a_window_every_left_spine_has_at_most_three_unions(pattern, events, window):
    """The bound proved in docs/automaton-engine.md ("What is proved under a window"): ``put_union`` keeps
    every union's left spine within ``SPINE`` + 1 = 3 unions, whatever the stream (``_place`` joins one
    union longer only onto a spine of exactly ``SPINE``, and goes further down otherwise). Checked on
    every union of the arena, its recorded spine recomputed and the start order checked, over formulas
    with shared variables and bursty streams (and the two examples where the kernel before grew spines
    of 7 and 3)."""
    query = f"{pattern} WITHIN {window}"
    try:
        program = program_of(query)
    except cepkit.QueryError:  # a variable bound twice in a sequence (unsafe), or an LP-normal form too large
        assume(False)
    assume(not program.ranked)
    evaluator = evaluate.Evaluator(program, collect=False)  # the update alone: no matches enumerated
    runs = evaluator.new_runs()
    for batch in evaluate.Inputs(program, Stream.from_any(events)).batches(program.letters.none):
        runs = evaluator.run(batch, runs)
    assert_spines_recorded(evaluator.arena)
    assert max_spine(evaluator.arena) <= nodes.SPINE + 1, query


@pytest.mark.parametrize("k", [8, 200])
def test_the_spines_that_grew_before_stay_within_three(k):
    """H H G A E G^k A, where the kernel before grew a spine of about k / 3 unions: at most 3 now, whatever
    k, the reference's matches, also in an arena compacted every few nodes (a descent past ``DESCENT``
    asks for room it may not have: the kernel compacts and calls again)."""
    events = spine_example(k)
    evaluator = run(program_of(GROWING), events)
    assert_spines_recorded(evaluator.arena)
    assert max_spine(evaluator.arena) == nodes.SPINE + 1
    if k < 10:
        assert_agrees(GROWING, events, "automaton", enumeration="constant-delay")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(nodes, "CAPACITY", 16)
            assert_agrees(GROWING, events, "automaton", enumeration="constant-delay")


DEEP = (
    "(((B v1 OR (C v11 OR B+ v5 OR C v9) OR (D+ v9 OR D+ v8) OR (C v0)+) ; A v2) OR "
    "(((A v6)+ ; (B+ v8 OR D v1 OR C v11)) ; (B v9)+ ; D v3)) ; Z last WITHIN 100000 s"
)


def spine_three_chain(levels: int, capacity: int):
    """An arena holding a list of ``levels`` unions of spine 3 down its right side, X_i = Union(x_i, X_i+1)
    with x_i = Union(Union(Ext, Ext), Ext) (spine 2: starts k, k − 0.5, k − 0.25) starting at
    k = ``levels + 2 − i``, over an Ext starting
    at 1; and an Ext starting at 0: (arena, the list's top, the Ext)."""
    arena = nodes.new_arena(capacity)
    pos, var, left, right, start, used = arena
    at = 1

    def ext(key):
        nonlocal at
        node = nodes.put_ext(pos, var, left, right, start, at, at, 0, nodes.BOTTOM, float(key))
        at += 1
        return node

    def pair(a, b):
        nonlocal at
        node = nodes.put_pair(pos, var, left, right, start, at, a, b)
        at += 1
        return node

    below = ext(1)
    for level in range(levels, 0, -1):
        key = levels + 1 - level + 1
        inner = pair(pair(ext(key), ext(key - 0.5)), ext(key - 0.25))
        below = pair(inner, below)
    old = ext(0)
    used[0] = at
    return arena, below, old


def test_a_descent_past_descent_asks_for_room():
    """A list of spine 3 whose older parts all have full spines: ``_place`` goes down past ``DESCENT``
    through the unions of spine 3 (the fallback at the top would make a spine of 4), writes the copies
    below their parents' ids, keeps every spine within 3, and answers NONE when the arena has less room
    than the descent needs (the kernel then compacts and calls again)."""
    arena, top, old = spine_three_chain(8, 256)
    assert max_spine(arena) == nodes.SPINE + 1
    at = int(arena.used[0])
    node = nodes.put_union(*arena[:5], at, top, old)
    assert node - at == 8  # 8 copies down the chain, then the join
    arena.used[0] = node + 1
    assert_spines_recorded(arena)
    assert max_spine(arena) == nodes.SPINE + 1
    tight, top, old = spine_three_chain(8, 0)
    tight = nodes.Arena(*(column[: int(tight.used[0]) + nodes.UNION_ROOM] for column in tight[:5]), tight.used)
    assert nodes.put_union(*tight[:5], int(tight.used[0]), top, old) == nodes.NONE


def test_a_deep_descent_in_a_tiny_arena_agrees_with_the_reference():
    """A C B C A^k D D Z: the second D's union goes down k − 3 unions of spine 3 (docs/automaton-engine.md,
    "What it costs"); in an arena compacted every few nodes the matches are the reference's."""
    events = [{"type": t, "ts": i} for i, t in enumerate("ACBC" + "A" * 12 + "DDZ")]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nodes, "CAPACITY", 16)
        evaluator = run(program_of(DEEP), events)
        assert_spines_recorded(evaluator.arena)
        assert max_spine(evaluator.arena) <= nodes.SPINE + 1
        assert_agrees(DEEP, events, "automaton", enumeration="constant-delay")


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
