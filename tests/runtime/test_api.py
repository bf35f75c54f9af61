"""The public API of issue 2 (item 4): ``cepkit.match`` and ``Matches``, ``cepkit.Matcher``, ``engine="auto"``
and the engine registry (docs/architecture.md, "Public API"; docs/language.md §1 on disordered input)."""

import pandas as pd
import pytest

import cepkit
from cepkit.datasets import cel_fire_sensors
from cepkit.runtime import Match, registry, selection
from cepkit.runtime.api import clear_plan_cache
from cepkit.runtime.registry import Engine, Plan

FIRE = "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)"


def test_the_done_when_call_of_issue_2_as_positions_matches_and_a_frame():
    """[CEL] §2, φ1 on the running stream S: {1,2}, {1,8}, {5,8}."""
    found = cepkit.match(FIRE, cel_fire_sensors(), engine="reference")
    assert found.positions() == [(1, 2), (1, 8), (5, 8)]
    assert found.engine == "reference"
    assert [(m.positions, m.bindings) for m in found] == [
        ((1, 2), {"x": 1, "y": 2}),
        ((1, 8), {"x": 1, "y": 8}),
        ((5, 8), {"x": 5, "y": 8}),
    ]
    frame = found.to_pandas()
    assert frame["positions"].tolist() == [[1, 2], [1, 8], [5, 8]]
    assert frame["x"].tolist() == [1, 1, 5] and frame["y"].tolist() == [2, 8, 8]


def test_disordered_input_is_rejected_at_the_first_offending_position():
    """docs/language.md §1: position 3 (ts 2 after ts 3) is the first event earlier than one before it."""
    events = [{"type": "A", "ts": t} for t in (1, 3, 3, 2, 0)]
    with pytest.raises(cepkit.EventError) as err:
        cepkit.match("A a", events)
    assert (err.value.position, err.value.field) == (3, "ts")


@pytest.mark.parametrize("engine", ["auto", "reference"])
def test_matcher_rejects_a_disordered_push_with_its_position_and_keeps_its_state(engine):
    matcher = cepkit.Matcher("A a ; B b", engine=engine)
    assert matcher.push({"type": "A", "ts": 5}) == []
    with pytest.raises(cepkit.EventError) as err:
        matcher.push({"type": "B", "ts": 3})
    assert (err.value.position, err.value.field) == (1, "ts")
    # the rejected event is not part of the stream: the next one takes its position
    assert [m.positions for m in matcher.push({"type": "B", "ts": 6})] == [(0, 1)]
    assert matcher.result().positions() == [(0, 1)] and matcher.result().engine == matcher.engine


# ----------------------------------------------------------------------------- engine="auto" and the registry
class _EchoPlan(Plan):
    def run(self, stream) -> list:
        return [Match((0, 1), {"a": 0, "b": 1})]


class _Echo(Engine):
    """Runs sequences only; ranks before every built-in engine."""

    name, rank, features = "test-echo", -1, frozenset({"sequence"})

    def compile(self, query, **options):
        return _EchoPlan()


class _Refusing(Engine):
    """Claims every feature, ranks first, and refuses every query at compile time."""

    name, rank, features = "test-refusing", -2, frozenset(cepkit.lang.FEATURES)

    def compile(self, query, **options):
        raise self.unsupported(query, query.ast, "anything")


@pytest.fixture
def test_engines(monkeypatch):
    registry.registered()  # the built-ins first
    clear_plan_cache()  # a plan an earlier test's call kept would skip the engines added here
    for engine in (_Echo(), _Refusing()):
        monkeypatch.setitem(registry._REGISTRY, engine.name, engine)


def test_auto_takes_the_first_engine_by_rank_that_supports_the_query_and_compiles_it(test_engines):
    events = [{"type": "A"}, {"type": "B"}]
    found = cepkit.match("A a ; B b", events)
    assert found.engine == "test-echo" and found.positions() == [(0, 1)]  # test-refusing refused: fall through
    negation = cepkit.match("SEQ(A a, !C c, B b)", events)  # test-echo lacks negation
    assert negation.engine not in ("test-echo", "test-refusing") and negation.positions() == [(0, 1)]
    assert cepkit.Matcher("SEQ(A a, !C c, B b)").engine == negation.engine


def test_a_named_engine_lacking_a_feature_names_the_engines_that_have_it(test_engines):
    with pytest.raises(cepkit.QueryError, match="engine 'test-echo' does not support negation") as err:
        cepkit.match("SEQ(A a, !C c, B b)", [{"type": "A"}], engine="test-echo")
    assert "reference" in str(err.value) and "^^" in str(err.value)
    with pytest.raises(cepkit.QueryError, match="unknown engine 'nope'"):
        cepkit.match("A a", [{"type": "A"}], engine="nope")


def test_auto_agrees_with_the_capability_matrix():
    """``cepkit.engines()``: ``auto`` runs the lowest-ranked engine whose row has every feature of the query;
    an engine ranked before it may only be skipped by refusing the query (a QueryError at compile time)."""
    matrix = cepkit.engines().sort_values("rank")
    events = [{"type": t, "ts": k, "v": k} for k, t in enumerate("ABCAB")]
    for text in [
        FIRE,
        "A a ; B b",
        "SEQ(A a, !C c, B b)",
        "SEQ(A a, B+ b, C c) WHERE b[i].v > b[i-1].v",
        "SEQ(A a, EXISTS C c, B b) WITHIN 3 EVENTS",
        "AND(A a, B b)",
        "SEQ(A a, AND(B b, C c))",
    ]:
        query = cepkit.parse(text)
        supporting = [name for name, row in matrix.iterrows() if all(row[f] for f in query.features)]
        chosen = cepkit.match(query, cel_fire_sensors() if text == FIRE else events).engine
        assert chosen in supporting, text
        for skipped in supporting[: supporting.index(chosen)]:
            with pytest.raises(cepkit.QueryError):
                selection.select_engine(query, skipped, {})


def test_a_dataframe_column_that_is_null_everywhere_is_still_a_partition_key():
    """docs/language.md §10.5: a missing key (null) is a key like any other; a DataFrame's column names its
    attributes even when every row is null (found by fuzzing: it was refused as 'unknown attribute')."""
    events = pd.DataFrame({"type": ["A", "B", "B"], "ts": [0, 1, 2], "id": [None, None, None]})
    for engine in ("reference", "auto"):
        assert cepkit.match("SEQ(A a, B b) PARTITION BY id", events, engine=engine).positions() == [(0, 1), (0, 2)]
    with pytest.raises(cepkit.QueryError, match="unknown attribute 'idx' in PARTITION BY"):
        cepkit.match("SEQ(A a, B b) PARTITION BY idx", events)


def test_nothing_found_for_a_type_no_event_has_is_a_warning_with_its_caret():
    """A misspelt type gave ``[]`` and nothing else: the user could not tell a typo from no matches."""
    import warnings

    from cepkit.errors import AbsentTypeWarning

    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 2}]
    with pytest.warns(AbsentTypeWarning, match=r"no event of type 'Bb' in the stream; did you mean 'B'\?\n  SEQ"):
        assert cepkit.match("SEQ(A a, Bb b)", events).positions() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cepkit.match("SEQ(A a, B b)", events).positions() == [(0, 1)]
        assert cepkit.match("SEQ(A a, !C c, B b)", events).positions() == [(0, 1)]  # found: no warning
        assert cepkit.match("SEQ(B b, A a)", events).positions() == []  # nothing, but every type is there
        assert cepkit.why_not("SEQ(A a, Bb b)", events).absent  # said by the answer, not warned
        assert cepkit.match("SEQ(A a, Bb b)", []).positions() == []  # no events: nothing to compare with
