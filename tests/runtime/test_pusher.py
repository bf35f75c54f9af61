"""``Matcher.pusher(columns)`` (issue 24): a push per event given as values, which returns exactly what
``Matcher.push`` of the same event as a dict returns (matches, their order, ``emitted_at``), raises the same
errors at the same positions, and may be mixed with ``push`` and ``extend``; on the automaton it holds back
the events that cannot complete a match and runs them through the kernel with the next one that may."""

import math
import pickle
import random

import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.engines.automaton import kernel, nodes
from cepkit.errors import EventError, QueryError
from tests.engines.test_conformance import EVENTS, EXAMPLES, hierarchy_for
from strategies import cel_queries, flat_seq_queries, kleene_queries, set_query_variants, streams

COLUMNS = ("type", "ts", "v", "id")


def outcome(found) -> list:
    return [(m.key, m.sign, m.emitted_at) for m in found]


def by_push(query, rows, engine, **options):
    """(every push's and close's matches in order, the errors with the row they came at)."""
    matcher = cepkit.Matcher(query, engine=engine, hierarchy=hierarchy_for(query), **options)
    found, errors = [], []
    for i, row in enumerate(rows):
        try:
            found += matcher.push({k: v for k, v in row.items() if v is not None})
        except (EventError, QueryError) as err:
            errors.append((i, type(err), str(err)))
    return outcome(found + matcher.close()), errors, matcher


def by_pusher(query, rows, engine, columns=COLUMNS, mixed=False, **options):
    matcher = cepkit.Matcher(query, engine=engine, hierarchy=hierarchy_for(query), **options)
    push = matcher.pusher(columns)
    found, errors = [], []
    for i, row in enumerate(rows):
        try:
            if mixed and i % 3 == 1:  # every third event as a dict, every tenth in a batch of one
                found += matcher.push({k: v for k, v in row.items() if v is not None})
            elif mixed and i % 10 == 2:
                found += list(matcher.extend(pd.DataFrame([row], columns=list(columns))))
            else:
                found += push(*(row.get(c) for c in columns))
        except (EventError, QueryError) as err:
            errors.append((i, type(err), str(err)))
    return outcome(found + matcher.close()), errors, matcher


def runs(query, engine) -> bool:
    try:
        cepkit.Matcher(query, engine=engine, hierarchy=hierarchy_for(query))
    except QueryError:
        return False
    return True


def agree(query, rows, engine, **options):
    expected, errors, pushed = by_push(query, rows, engine, **options)
    for mixed in (False, True):
        got, got_errors, matcher = by_pusher(query, rows, engine, mixed=mixed, **options)
        assert got == expected, (query, mixed)
        assert got_errors == errors
        if pushed.keep:
            assert matcher.result().positions() == pushed.result().positions()
    return expected


@pytest.mark.parametrize("engine", ["automaton", "stack", "ses", "rcep", "reference"])
@pytest.mark.parametrize("feature", sorted(EXAMPLES))
def test_the_pusher_returns_what_push_returns_on_every_feature(engine, feature):
    query = EXAMPLES[feature]
    if not runs(query, engine):
        pytest.skip(f"{engine} does not run {feature}")
    rows = [{c: e.get(c) for c in COLUMNS} for e in EVENTS]
    agree(query, rows, engine)


@settings(max_examples=150, deadline=None)
@given(st.one_of(cel_queries(), kleene_queries()), streams(max_size=25, null_one_in=4))
def test_the_automaton_pusher_returns_what_push_returns(query, rows):
    assume(runs(query, "automaton"))
    agree(query, rows, "automaton")


@settings(max_examples=60, deadline=None)
@given(flat_seq_queries(), streams(max_size=20, null_one_in=4))
def test_the_stack_pusher_returns_what_push_returns(query, rows):
    assume(runs(query, "stack"))
    agree(query, rows, "stack")


@st.composite
def plain_sequences(draw):
    """What the stack's ``SeqStep`` runs: a SEQ of 1-4 items without conditions (types A-C or ANY, some
    unnamed), under a time window, perhaps PARTITION BY id."""
    items = []
    for k in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["A", "B", "C", "ANY"]))
        var = f"x{k}" if draw(st.integers(0, 4)) else ""
        items.append(f"{kind} {var}".strip() if var or kind != "ANY" else "ANY x" + str(k))
    window = draw(st.integers(0, 8))
    partition = " PARTITION BY id" if draw(st.booleans()) else ""
    return f"SEQ({', '.join(items)}) WITHIN {window}{partition}"


@settings(max_examples=60, deadline=None)
@given(plain_sequences(), streams(max_size=30, null_one_in=4))
def test_the_stack_step_returns_what_push_and_the_reference_return(query, rows):
    """The stack's own per-event step (``engines/stack/step.py``), mixed with ``push`` and ``extend`` (each
    hand-over replays the last window), agrees with ``push`` and with the reference."""
    matcher = cepkit.Matcher(query, engine="stack")
    assert matcher.pusher(COLUMNS)._step is not None  # the step runs these
    expected = agree(query, rows, "stack")
    reference = cepkit.match(query, [{k: v for k, v in r.items() if v is not None} for r in rows], engine="reference")
    assert sorted(key for key, _, _ in expected) == sorted(m.key for m in reference)


def by_chunks(query, rows, engine, chunks: list) -> list:
    """Every emission when ``rows`` come in chunks of the given sizes (the last chunk takes the rest), each
    chunk pushed event by event through the pusher or, for a chunk whose size is even, as one DataFrame
    through ``extend``."""
    matcher = cepkit.Matcher(query, engine=engine)
    push = matcher.pusher(COLUMNS)
    found, at = [], 0
    for size in chunks + [len(rows)]:
        chunk = rows[at : at + size]
        at += len(chunk)
        if size % 2 == 0 and chunk:
            found += list(matcher.extend(pd.DataFrame(chunk, columns=list(COLUMNS))))
        else:
            for row in chunk:
                found += push(*(row.get(c) for c in COLUMNS))
    return outcome(found + matcher.close())


def chunked_agree(query, rows, engine, chunks: list) -> None:
    """``by_chunks`` emits what pushing every event as a dict emits (order and ``emitted_at``), and its
    matches are ``cepkit.match``'s and the reference's."""
    expected, errors, _ = by_push(query, rows, engine)
    assume(not errors)  # (an attribute a type shows late is rejected where it comes: not the point here)
    assert by_chunks(query, rows, engine, chunks) == expected, query
    keys = sorted(key for key, _, _ in expected)
    events = [{k: v for k, v in row.items() if v is not None} for row in rows]
    assert keys == sorted(m.key for m in cepkit.match(query, events, engine=engine))
    try:
        reference = cepkit.match(query, events, engine="reference")
    except QueryError:  # its search budget spent (a long Kleene run)
        return
    assert keys == sorted(m.key for m in reference)


CHUNKS = st.lists(st.integers(1, 9), max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    set_query_variants(strategies=("ALL", "STNM", "ROBUST_STNM")),
    streams(types=("C", "P", "D", "B"), max_size=30, null_one_in=5),
    CHUNKS,
)
def test_the_ses_pusher_in_chunks_agrees_with_push_match_and_the_reference(query, rows, chunks):
    chunked_agree(query, rows, "ses", chunks)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    kleene_queries(types=("A", "B", "C"), strategies=("ALL", "STRICT", "NEXT", "LAST", "MAX", "STNM")),
    streams(types=("A", "B", "C"), max_size=30, null_one_in=5),
    CHUNKS,
)
def test_the_rcep_pusher_in_chunks_agrees_with_push_match_and_the_reference(query, rows, chunks):
    assume(runs(query, "rcep"))
    chunked_agree(query, rows, "rcep", chunks)


def test_a_grouped_match_is_the_match_its_bindings_make():
    """``Match.grouped`` (the ses and rcep pushers' rows with a Kleene variable or a hidden position) reads,
    compares, hashes and pickles as the eager ``Match``."""
    lazy = cepkit.Match.grouped((1, 2, 4, 5), ("a", "a", None, "b"), frozenset({"a"}), 7)
    eager = cepkit.Match.made((1, 2, 4, 5), {"a": (1, 2), "b": 5}, 7)
    assert lazy == eager and hash(lazy) == hash(eager) and lazy.bindings == {"a": (1, 2), "b": 5}
    again = pickle.loads(pickle.dumps(cepkit.Match.grouped((3,), ("x",), frozenset(), None)))
    assert again == cepkit.Match.made((3,), {"x": 3}, None) and repr(again) == repr(
        cepkit.Match.made((3,), {"x": 3}, None)
    )


def gappy_rows(n: int, seed: int = 3) -> list:
    """``n`` events of types A-D over 3 ids, with ties and gaps longer than the windows (every 500th a 30 s
    gap): a step drops, compacts and grows its arrays over them."""
    rng = random.Random(seed)
    rows, ts = [], 0.0
    for i in range(n):
        ts += rng.choice([0.0, 0.5, 1.0, 1.0, 2.0, 30.0 if i % 500 == 0 else 1.0])
        rows.append({"type": rng.choice("ABCD"), "ts": ts, "v": rng.randrange(6), "id": rng.randrange(3)})
    return rows


def pushed_for_long(engine: str) -> cepkit.Matcher:
    """A ``keep=False`` matcher of ``A;B;C`` within 5 s per key, 20,000 events over 500 keys pushed by its pusher
    (an endless stream's state: what each engine's step keeps must stay within a window)."""
    matcher = cepkit.Matcher("A a ; B b ; C c WITHIN 5 s PARTITION BY id", engine=engine, keep=False)
    push = matcher.pusher(("type", "ts", "id"))
    for i in range(20000):
        push("ABCD"[i * 7 % 4], float(i), i // 3 % 500)
    return matcher


def test_the_stack_step_forgets_what_its_window_passed():
    """Its stacks and recent events stay within the window on an endless stream of many keys."""
    matcher = pushed_for_long("stack")
    step = matcher._inc._step
    assert len(step.recent) <= 7 and len(step.keys) <= 7 and step.size() <= 14
    assert matcher._inc.info()["state"] > 0  # handed back to the stacks: the last window's instances


def test_held_events_run_before_a_key_expires_and_before_anything_reads_the_runs():
    """Gaps longer than the window (a key's state dropped while events are held), many keys, and
    ``active`` read between pushes see the pushes' state."""
    query = "A a ; B b ; C c WITHIN 3 s PARTITION BY id"
    rows = [{"type": "ABCD"[(i // 3) % 4], "ts": i // 3 + 10.0 * (i // 40), "v": i, "id": i % 3} for i in range(200)]
    expected = agree(query, rows, "automaton")
    assert expected
    matcher = cepkit.Matcher(query, engine="automaton")
    push = matcher.pusher(COLUMNS)
    reference = cepkit.Matcher(query, engine="automaton")
    for row in rows:
        push(*(row[c] for c in COLUMNS))
        reference.push(row)
        assert matcher._inc.active(5) == reference._inc.active(5)
    assert matcher.result().positions() == cepkit.match(query, rows).positions()


def test_the_pusher_rejects_what_push_rejects_at_the_same_position():
    matcher = cepkit.Matcher("A a ; B b WHERE b.v > 1", engine="automaton")
    push = matcher.pusher(("type", "ts", "v"))
    push("A", 0, 1)
    with pytest.raises(EventError, match="position 1") as err:
        push(3, 1, 2)
    assert err.value.field == "type"
    with pytest.raises(EventError, match="ts"):
        push("A", math.nan, 2)
    push("A", 5, 2)
    with pytest.raises(EventError, match="earlier"):
        push("B", 4, 2)
    with pytest.raises(QueryError, match="unknown attribute 'v'"):
        cepkit.Matcher("A a ; B b WHERE b.v > 1").pusher(("type", "ts", "w"))("B", 0, 1)
    with pytest.raises(TypeError, match="3 values"):
        push("A", 1)
    with pytest.raises(ValueError, match="'ts'"):
        matcher.pusher(("type", "v"))
    assert [m.positions for m in push("B", 6, 2)] == [(0, 2), (1, 2)]


def test_an_attribute_shown_late_is_checked_as_push_checks_it():
    """``v`` is None on every A until one carries it: the query reads ``a.v``, so pushes of As without it
    are checked (the type has no ``v`` yet: nothing to complain about, as ``match`` over them) and the
    first one with it is learned."""
    query = "A a ; B b WHERE a.v > 0"
    rows = [
        {"type": "A", "ts": 0, "v": None, "id": 1},
        {"type": "B", "ts": 1, "v": 1, "id": 1},
        {"type": "A", "ts": 2, "v": 3, "id": 1},
        {"type": "B", "ts": 3, "v": 1, "id": 1},
    ]
    assert agree(query, rows, "automaton") == agree(query, rows, "stack")


def test_the_pusher_takes_the_events_own_type_and_ts_columns():
    rows = [("A", 0.0, 1), ("C", 0.5, 2), ("B", 1.0, 1), ("B", 2.0, 1)]
    matcher = cepkit.Matcher("A a ; B b", engine="automaton", type="kind", ts="time")
    push = matcher.pusher(("kind", "time", "v"))
    found = [m.positions for row in rows for m in push(*row)]
    assert found == cepkit.match("A a ; B b", [dict(zip(("type", "ts", "v"), r)) for r in rows]).positions()
    with pytest.raises(ValueError, match="'time'"):
        matcher.pusher(("kind", "ts", "v"))


def test_held_events_meet_compactions_and_new_states_as_pushes_do(monkeypatch):
    """20,000 events through Kleene queries with an arena of 16 nodes to start: it fills and is compacted
    while events are held, and the automaton discovers states mid-batch; every push's matches equal
    ``push``'s."""
    monkeypatch.setattr(nodes, "CAPACITY", 16)
    kinds = random.Random(7).choices("ABCD", k=20_000)
    rows = [{"type": t, "ts": i / 3, "v": i % 5, "id": i % 2} for i, t in enumerate(kinds)]
    for query in ("A+ a ; B b ; C c WITHIN 4 s", "(A a ; B+ b)+ ; C c WITHIN 3 s PARTITION BY id"):
        expected, _, pushed = by_push(query, rows, "automaton", keep=False)
        got, _, _ = by_pusher(query, rows, "automaton", keep=False)
        assert got == expected and len(expected) > 1000


KEYS = [0, 1, 2, "1", "a", 1.0, True, None, math.nan, 2.5]


@st.composite
def keyed_bursts(draw):
    """Events in bursts of one ``id`` (ints, strs, a float equal to an int, True, None, NaN: the step keeps
    the part of the last int or str key), with gaps that pass the window of some keys mid-burst."""
    rows, ts = [], 0.0
    for burst in range(draw(st.integers(1, 8))):
        key = draw(st.sampled_from(KEYS if burst else KEYS[:5]))  # (a first event without ``id`` is refused)
        for _ in range(draw(st.integers(1, 6))):
            ts += draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 7.0]))
            rows.append({"type": draw(st.sampled_from("ABCD")), "ts": ts, "v": 0, "id": key})
    return rows


def key_state(matcher) -> tuple:
    """The automaton matcher's keys in expiry order, and each key's part (sub-stream count, gap)."""
    inc = matcher._inc
    return list(inc.expiry.last.items()), {key: (part.count, part.gap) for key, part in inc.parts.items()}


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(["A a ; B b ; C c", "A+ a ; B b", "(A a OR B b) ; C c", "A a ; B b WHERE b.v = 0"]),
    st.sampled_from([" WITHIN 0 s", " WITHIN 2 s", " WITHIN 6 s"]),
    st.sampled_from(["", " PARTITION BY id", " PARTITION BY id, v"]),
    keyed_bursts(),
    st.booleans(),
)
@example(  # (types known) a key whose part is kept, another not kept (a float), the first again: last again
    "A a ; B b ; C c",
    " WITHIN 6 s",
    " PARTITION BY id",
    [
        {"type": t, "ts": float(i), "v": 0, "id": key}
        for i, (t, key) in enumerate(zip("ABCABAC", [0, 0, 0, 1, 2.5, 1, 1]))
    ],
    False,
)
def test_the_pusher_keeps_each_keys_part_and_window_as_push_does(pattern, window, partition, rows, mixed):
    """The automaton's step keeps the part of its last event's key (an event of the same int or str value
    skips the lookup) and checks the keys' expiry only once the oldest may have passed: after every event
    its keys, their order and parts, and its matches are ``push``'s (alone, or ``mixed`` with ``push`` and
    ``extend``, which drop and make parts); all its matches are ``cepkit.match``'s and, on keys the
    reference reads the same way, the reference's."""
    query = pattern + window + partition
    pushed, stepped = cepkit.Matcher(query, engine="automaton"), cepkit.Matcher(query, engine="automaton")
    push, found = stepped.pusher(COLUMNS), []
    for i, row in enumerate(rows):
        clean = {k: v for k, v in row.items() if v is not None}
        expected = pushed.push(clean)
        if mixed and i % 3 == 1:
            got = stepped.push(clean)
        elif mixed and i % 4 == 2:
            got = list(stepped.extend(pd.DataFrame([row], columns=list(COLUMNS))))
        else:
            got = push(*(row[c] for c in COLUMNS))
        assert outcome(got) == outcome(expected), i
        assert key_state(stepped) == key_state(pushed), i
        found += got
    clean = [{k: v for k, v in r.items() if v is not None} for r in rows]
    assert sorted(m.key for m in found) == sorted(m.key for m in cepkit.match(query, clean))
    if all(type(r["id"]) in (int, str) for r in rows):
        reference = cepkit.match(query, clean, engine="reference")
        assert sorted(m.key for m in found) == sorted(m.key for m in reference)


def test_held_arguments_follow_arrays_another_matcher_of_the_plan_replaced():
    """Two matchers of one plan share its automaton: the letters and states one finds grow the arrays the
    other's held kernel call keeps (``kernel.replacements``), and that one's matches stay ``push``'s."""
    query = "A a ; B b ; C c WHERE b.v > 2 AND c.v < 4 WITHIN 5 s"
    kinds = random.Random(3).choices("ABCD", k=3000)
    rows = [{"type": t, "ts": i / 4, "v": i * 7 % (3 if i < 1500 else 6), "id": 0} for i, t in enumerate(kinds)]
    expected, _, _ = by_push(query, rows, "automaton", keep=False)
    pushed, other = cepkit.Matcher(query, engine="automaton", keep=False), cepkit.Matcher(query, engine="automaton")
    other._inc = pushed._plan.matcher()  # (one plan: one automaton, discovered as either runs)
    push, found, moved = pushed.pusher(COLUMNS), [], 0
    for i, row in enumerate(rows):
        found += push(*(row[c] for c in COLUMNS))
        if i % 500 == 250:  # the other matcher, ahead in time, reads letters the first has not met yet
            before = kernel.replacements[0]
            later = [{**r, "ts": 1e6 + i + j, "v": 3 + j % 3} for j, r in enumerate(rows[i : i + 30])]
            other.extend(pd.DataFrame(later))
            moved += kernel.replacements[0] > before
    assert moved and outcome(found + pushed.close()) == expected and len(expected) > 100


def test_the_held_kernel_call_takes_the_arrays_that_replaced_its_own():
    """Whichever object replaces an array the held call keeps (the automaton's, the table's, the arena),
    the next flush calls the kernel with the new one, and the matches stay ``cepkit.match``'s."""
    query = "A a ; B b ; C c WITHIN 5 s PARTITION BY id"
    rows = [{"type": "ABC"[i % 3], "ts": float(i), "v": 0, "id": i // 3 % 2} for i in range(48)]
    matcher = cepkit.Matcher(query, engine="automaton", keep=False)
    push = matcher.pusher(COLUMNS)
    inc = matcher._inc
    evaluator, det, table = inc.evaluator, inc.program.table, inc.table
    replace = [
        lambda: det.ensure_letters(det.skip.shape[1] + 1),
        lambda: table.take(len(table.free) + 1),
        lambda: table.fit(table.stored.state.shape[1] + 1),
        lambda: evaluator.compact(inc.runs, -math.inf, table, inc._lowers()),
    ]
    found = []
    for i, row in enumerate(rows):
        if row["type"] == "C":  # held A and B, then a flush
            replace[i // 3 % 4]()
        found += push(*(row[c] for c in COLUMNS))
        if row["type"] == "C" and i > 3:  # (the first event of each type goes through ``push``)
            kept = evaluator._arrays
            assert all(any(a is now for a in kept) for now in (det.skip, table.stored.state, evaluator.arena.pos))
    assert [m.positions for m in found] == cepkit.match(query, rows).positions() != []
