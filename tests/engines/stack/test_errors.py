"""Bad input gets a clear error: queries outside the fragment name the engines that can run them, options are
checked; an event breaking its out-of-order promise is dropped and counted (one contract for every mode)."""

import pickle

import cepkit
import pytest
from cepkit.runtime import get_engine

EVENTS = [{"type": "A", "ts": 1}, {"type": "B", "ts": 2}]


def test_kleene_is_refused_with_a_caret():
    with pytest.raises(cepkit.QueryError) as err:
        cepkit.match("SEQ(A a, B+ b)", EVENTS, engine="stack")
    assert "kleene" in str(err.value) and "^" in str(err.value)


def test_negated_composite_is_refused_naming_the_engines_that_support_it():
    query = cepkit.parse("SEQ(A a, !SEQ(B b, C c), D d)")
    with pytest.raises(cepkit.QueryError) as err:
        get_engine("stack").compile(query)
    assert "does not support negation of a composite pattern" in str(err.value)
    assert err.value.line == 1 and err.value.column == 10


@pytest.mark.parametrize(
    "query",
    [
        "SEQ(A a, B b) WITHIN 3 EVENTS",
        "SELECT STNM * PATTERN SEQ(A a, B b) WITHIN 5",
        "SEQ(A a, EXISTS C c, B b) WITHIN 5",
    ],
)
@pytest.mark.parametrize("disorder", ["kslack", "conservative", "aggressive"])
def test_what_the_own_modes_refuse_runs_behind_the_out_of_order_layer(query, disorder):
    """EVENTS windows, STNM and EXISTS out of order (the own modes refuse them): the stack's in-order matcher behind cepkit.runtime.disorder
    (an EVENTS window under aggressive is refused there: it bounds no stretch of time)."""
    events = [{"type": "A", "ts": 1}, {"type": "C", "ts": 3}, {"type": "B", "ts": 4}, {"type": "B", "ts": 2}]
    options = {"kslack": {"k": 2}, "conservative": {"max_delay": 2}, "aggressive": {}}[disorder]
    if disorder == "aggressive" and "EVENTS" in query:
        with pytest.raises(cepkit.QueryError, match="time window"):
            cepkit.match(query, events, engine="stack", disorder=disorder)
        return
    found = cepkit.match(query, events, engine="stack", disorder=disorder, **options)
    own = get_engine("stack").runs_disorder(cepkit.parse(query), disorder)
    assert own == (disorder == "kslack" and "EXISTS" in query)  # the own K-slack runs EXISTS
    assert found.info.get("disorder_layer", False) != own and found.info["dropped"] == []
    assert found.positions() == [m.positions for m in cepkit.semantics.evaluate(query, events)]


def test_a_condition_relating_two_negations_is_an_error():
    with pytest.raises(cepkit.QueryError, match="two"):
        cepkit.match("SEQ(A a, !B b, C c, !D d, b.v = d.v)", EVENTS, engine="stack")


def test_a_broken_max_delay_promise_drops_the_event_and_counts_it():
    """Not an error (it was, before issue 14's one contract): dropped and listed, as K-slack, the out-of-order
    layer and Spark streams do with what they cannot place; the rest gives the exact result."""
    late = [{"type": "A", "ts": 10}, {"type": "B", "ts": 2}, {"type": "B", "ts": 11}]
    for mode in ("conservative", "aggressive"):
        found = cepkit.match("SEQ(A a, !C c, B b)", late, engine="stack", disorder=mode, max_delay=5)
        assert found.info["dropped"] == [1] and found.positions() == [(0, 2)]


def test_a_broken_punctuation_promise_drops_the_event_and_counts_it():
    events = [
        {"type": "PUNCTUATION", "of": "A", "ts": 5},
        {"type": "A", "ts": 5},
        {"type": "A", "ts": 6},
        {"type": "B", "ts": 7},
    ]
    found = cepkit.match("SEQ(A a, B b)", events, engine="stack", disorder="conservative")
    assert found.info["dropped"] == [1] and found.positions() == [(2, 3)]


def test_punctuation_needs_of():
    with pytest.raises(cepkit.EventError) as err:
        cepkit.match("SEQ(A a, B b)", [{"type": "PUNCTUATION", "ts": 5}], engine="stack", disorder="conservative")
    assert err.value.field == "of"


def test_options_are_checked():
    with pytest.raises(TypeError, match="needs k="):
        cepkit.match("SEQ(A a, B b)", EVENTS, engine="stack", disorder="kslack")
    with pytest.raises(TypeError, match="k= is an option"):
        cepkit.match("SEQ(A a, B b)", EVENTS, engine="stack", disorder="aggressive", k=3)
    with pytest.raises(ValueError, match="negative"):
        cepkit.match("SEQ(A a, B b)", EVENTS, engine="stack", disorder="kslack", k=-1)


def test_delays_accept_durations():
    events = [{"type": "A", "ts": 0}, {"type": "B", "ts": 200}, {"type": "A", "ts": 100}]
    for k in ("2 min", 120):
        assert cepkit.match("SEQ(A a, B b)", events, engine="stack", disorder="kslack", k=k).positions() == [
            (0, 1),
            (1, 2),
        ]


def test_unorderable_values_name_the_event():
    events = [{"type": "A", "ts": 1, "v": "x"}, {"type": "B", "ts": 2, "v": 3}]
    with pytest.raises(cepkit.EventError) as err:
        cepkit.match("SEQ(A a, B b) WHERE a.v < b.v", events, engine="stack")
    assert err.value.position == 0 and err.value.field == "v"


def test_plans_pickle():
    plan = get_engine("stack").compile(
        cepkit.parse("SEQ(A a, !C c, B b) WHERE a.v < b.v WITHIN 5"), disorder="aggressive", max_delay=3
    )
    clone = pickle.loads(pickle.dumps(plan))
    stream = cepkit.runtime.Stream.from_any([{"type": "A", "ts": 1, "v": 1}, {"type": "B", "ts": 3, "v": 2}])
    assert [m.key for m in clone.run(stream)] == [m.key for m in plan.run(stream)] != []


def test_auto_picks_stack_for_negation_and_reports_it():
    m = cepkit.match("SEQ(A a, !C c, B b) WITHIN 5", EVENTS)
    assert m.engine in {e for e in cepkit.engines().query("rank <= 20").index}
