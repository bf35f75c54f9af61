"""CEL to CEA ([CEL] §5): the fragment, the LP-normal rewrite (push-down, pop-up), the Thompson
construction with ε-removal, STRICT, and lazy determinization."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.datasets import cel_fire_sensors
from cepkit.engines.automaton import predicates
from cepkit.engines.automaton.compile import check_fragment, compile_query, lp_normal, thompson
from cepkit.engines.automaton.determinize import LazyDeterminizer, Letters
from cepkit.engines.automaton.predicates import Alphabet
from cepkit.lang import ast as A
from cepkit.lang.checks import bound
from cepkit.engines import unary
from cepkit.runtime.selection import select_engine
from strategies import cel_queries, unary_queries


def lp(text, hierarchy=None):
    return cepkit.pretty(lp_normal(cepkit.parse(text, hierarchy)))


def compiled(text):
    def unsupported(node, what):
        return cepkit.QueryError(what)

    return compile_query(cepkit.parse(text), unsupported)[0]


def test_phi1_becomes_phi1_prime():
    """[CEL] §5.2 (reconstructed): φ1's LP-normal form is (T AS x FILTER x.tmp > 40 ∧ x.id = 0) ; (H AS y FILTER ...)."""
    phi1 = "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)"
    assert lp(phi1) == "(T AS x FILTER x.tmp > 40 and x.id = 0) ; (H AS y FILTER y.hum < 25 and y.id = 0)"
    assert lp(lp(phi1)) == lp(phi1)


def test_a_disjunction_over_two_variables_is_an_or_of_patterns():
    """CEL sugar: φ FILTER (P ∨ P') := (φ FILTER P) OR (φ FILTER P')."""
    assert (
        lp("(A AS a ; B AS b) FILTER (a.v > 1 or b.v < 2)")
        == "(A AS a FILTER a.v > 1) ; B AS b OR A AS a ; (B AS b FILTER b.v < 2)"
    )


def test_phi5_pop_up_leaves_no_conditional_filter():
    """Theorem 2: the filters on x inside the OR pop up to the sequence binding x, then push down; the
    rewritten formula means the same ([CEL] §5.2, φ5)."""
    phi5 = cepkit.parse("T AS x ; ((T AS y FILTER x.tmp > 40) OR (H AS y FILTER x.tmp <= 40))")
    rewritten = lp_normal(phi5)
    for f in rewritten.find_all(A.Filter):
        assert isinstance(f.pattern, A.Atom)
        assert set(A.variables_in(f.cond)) == {f.pattern.var}
    for position0 in ("T", "H"):
        stream = cel_fire_sensors(position0)
        assert (
            cepkit.match(cepkit.pretty(rewritten), stream, engine="reference").positions()
            == cepkit.match(phi5, stream, engine="reference").positions()
        )


def test_a_filter_on_a_kleene_variable_holds_of_each_iteration():
    """docs/language.md §10.6: outside its +, b.v > 1 means every b; pushed onto the atom inside the +."""
    assert lp("(A AS a ; B+ AS b) FILTER b.v > 1") == "A AS a ; (B AS b FILTER b.v > 1)+"


def test_partition_equalities_become_unary():
    assert (
        lp("(A AS a ; B AS b) FILTER a.id = b.id PARTITION BY id")
        == "(A AS a FILTER a.id = a.id) ; (B AS b FILTER b.id = b.id)"
    )


def test_constant_conditions_are_decided_at_compile_time():
    assert lp("A AS a ; B AS b FILTER 1 < 2") == "A AS a ; B AS b"
    assert lp_normal(cepkit.parse("A AS a ; B AS b FILTER 1 > 2")) is None
    assert cepkit.match("A a ; B b FILTER 1 > 2", [{"type": "A"}, {"type": "B"}], engine="automaton").positions() == []


@pytest.mark.parametrize(
    "text, what",
    [
        ("AND(A a, B b)", "AND"),
        ("SEQ(A a, !B b, C c)", "negation"),
        ("SEQ(A a, EXISTS B b, C c)", "EXISTS"),
        ("A a ; B b FILTER a.v = b.v", "two variables"),
        ("A a ; B b FILTER a.id = b.id", "two variables"),  # no PARTITION BY to guarantee it
        ("SEQ(A a, B+ b) WHERE count(b) > 1", "aggregates"),
        ("SEQ(A a, B+ b) WHERE prev(b.v) < b.v", "kleene_conditions"),
        # where the closure does not apply (MAX, a window), the filtering plan's refusals
        ("(MAX(A a ; B b) ; C c)+ WITHIN 5 s", "inside an iteration"),
        ("SELECT LAST * PATTERN NEXT(A a ; B b) ; C c WITHIN 5 s", "under SELECT LAST"),
        ("MAX(A ; B b) ; C c WITHIN 5 s", "without a variable"),
        ("(NEXT(A a ; B b) ; C c) OR D a WITHIN 5 EVENTS", "also defined outside"),
        ("SELECT STNM * PATTERN SEQ(A a, B b) WITHIN 5 s", "STNM"),
        ("(A a ; B+ b) FILTER not b.v > 1", "Kleene variable"),
    ],
)
def test_outside_the_fragment_names_the_engines_that_can(text, what):
    with pytest.raises(cepkit.QueryError) as err:
        cepkit.match(text, [{"type": "A", "v": 1, "id": 0}], engine="automaton")
    assert what in str(err.value)
    assert "reference" in err.value.engines and "automaton" not in err.value.engines
    assert err.value.line is not None and "^" in str(err.value)


def test_auto_falls_through_when_compile_refuses():
    """binary_conditions is declared for the PARTITION BY case; other joins go to another engine."""
    events = [{"type": "A", "v": 1, "id": 0}, {"type": "B", "v": 1, "id": 0}]
    assert cepkit.match("A a ; B b FILTER a.v = b.v", events).engine != "automaton"
    assert cepkit.match("A a ; B b FILTER a.id = b.id PARTITION BY id", events).engine == "automaton"


def test_thompson_then_epsilon_removal():
    """Appendix C.2: A;B;C has an in- and an out-state per atom; ε-removal leaves six states, a TRUE/◦
    loop on each in-state, one • transition per atom, and the last out-state final."""
    cea = compiled("A a ; B b ; C c")
    assert cea.n_states == 6 and cea.initial == 0
    marks = [t for t in cea.transitions if t.mark]
    assert {(str(t.guard), t.var) for t in marks} == {("A", "a"), ("B", "b"), ("C", "c")}
    # an out-state inherits its successor in-state's transitions: B• leaves both out_a and in_b
    assert len({t.src for t in marks if t.var == "b"}) == 2
    skips = [t for t in cea.transitions if not t.mark]
    assert all(t.guard.is_true for t in skips)
    assert {t.dst for t in marks if t.var == "c"} == set(cea.finals)


def test_every_skip_is_true_and_leads_to_a_state_that_loops():
    """What the kernel's gap step relies on: reading irrelevant events k ≥ 1 times is one ◦ step."""
    for text in ("(A a OR B b)+ ; C c", "SELECT STRICT * PATTERN (A+ a ; B b)+ ; C c", "A a ; STRICT(B b ; C+ c)"):
        cea = compiled(text)
        loops = {t.src for t in cea.transitions if not t.mark and t.src == t.dst}
        for t in cea.transitions:
            if not t.mark:
                assert t.guard.is_true and t.dst in loops


def test_strict_is_a_skip_copy_and_a_mark_copy():
    """Theorem 4: STRICT(A) has a ◦-only copy (nothing marked yet) and a •-only copy: once a run has
    marked it can only mark; trimming leaves q0 -◦-> q0, q0 -A•-> q1 -B•-> q2."""
    strict = compiled("SELECT STRICT * PATTERN A a ; B b")
    marked_states = {t.dst for t in strict.transitions if t.mark}
    assert not any(not t.mark and t.src in marked_states for t in strict.transitions)
    assert strict.n_states == 3


def test_unsatisfiable_pattern_compiles_to_an_empty_automaton():
    cea = thompson(None)
    assert cea.n_states == 1 and not cea.finals and not cea.transitions


def test_determinization_is_lazy_and_io_deterministic():
    """Proposition 1, done on demand: states appear only when a letter reaches them; per (state, letter)
    one ◦ target and one • target per variable."""
    cea = compiled("(T AS x ; H AS y) OR (H AS y ; T AS x)")
    letters = Letters(cea, Alphabet(cea.guards))
    det = LazyDeterminizer(cea, letters)
    assert len(det.subsets) == 1
    stream = cel_fire_sensors()
    for event in cepkit.runtime.Stream.from_any(stream).events:
        skip, marks = det.step(0, letters.of_event(event))
        assert len({var for var, _ in marks}) == len(marks)
    assert len(det.subsets) > 1
    assert all(det.is_final(i) == bool(s & cea.finals) for i, s in enumerate(det.subsets))


def test_lp_normal_keeps_bound_variables():
    query = cepkit.parse("(H AS x ; (T AS y FILTER y.id = 1)+ ; H AS z) FILTER (x.hum < 30 and z.hum > 60)")
    assert bound(lp_normal(query)) == bound(query.pattern)
    check_fragment(query, lambda node, what: cepkit.QueryError(what))


def test_an_exponential_lp_normal_form_is_refused_not_computed():
    """Theorem 2's pop-up can double the formula per conditional filter ([CEL] §5): past
    ``LP_NORMAL_LIMIT`` nodes the automaton refuses, naming the engines that can run the query."""
    query = "T AS x ; " + " ; ".join(
        f"((T AS y{i} FILTER x.tmp > {i}) OR (H AS y{i} FILTER x.tmp <= {i}))" for i in range(12)
    )
    with pytest.raises(cepkit.QueryError, match="LP-normal form grows past") as err:
        cepkit.match(query, cepkit.datasets.cel_fire_sensors(), engine="automaton")
    assert "reference" in err.value.engines


@settings(max_examples=60, deadline=None)
@given(st.one_of(cel_queries(), unary_queries(strategies=("STRICT", "PARTITION_STRICT", "NEXT", "LAST", "MAX"))))
def test_auto_chooses_the_automaton_for_its_fragment(query):
    """``engine="auto"`` runs every query of the fragment (sequence, OR, + at any depth, unary filters,
    windows, partition, strategies, CONSUME BY, RETURN) on the automaton; only an LP-normal form past
    ``LP_NORMAL_LIMIT`` (refused, ``test_an_exponential_lp_normal_form_is_refused_not_computed``) falls through."""
    parsed = cepkit.parse(query)
    try:
        engine, _ = select_engine(parsed, "auto", {})
    except cepkit.QueryError as err:  # only when every engine refuses (not expected)
        raise AssertionError(err) from err
    if engine.name != "automaton":
        with pytest.raises(cepkit.QueryError, match="LP-normal form grows past"):
            select_engine(parsed, "automaton", {})


SHARED = "(A AS a FILTER a.s = 'x') ; (B AS b FILTER b.s = 'x') ; (A AS c FILTER c.s = 'x') ; C AS d"


def _counting_holds(patch) -> list:
    """Count the per-event evaluations of conditions (the reference semantics, predicates' fallback)."""
    calls = []
    original = predicates.holds

    def counted(cond, env, events):
        calls.append(events[0].position)
        return original(cond, env, events)

    patch.setattr(predicates, "holds", counted)
    patch.setattr(unary, "holds", counted)  # the batch run's fallback (cepkit.engines.unary)
    return calls


def test_each_predicate_is_evaluated_once_per_event():
    """[CEL] §6-7: the letter is the vector of the unary tests, each evaluated once per event. One
    condition used by three transitions (on a, b and c) is one test: a column numpy cannot compare
    exactly (strings mixed with numbers) falls back to one evaluation per event of a type using it (A or
    B, never C or D), in a batch run and in the matcher; a numeric column is evaluated column-wise only."""
    values = ["x", 1, "y", "x", 2.5, "x", "x", "z"]
    events = [{"type": t, "s": v} for t, v in zip("ABCADBAC", values)]
    in_scope = [i for i, e in enumerate(events) if e["type"] in "AB"]
    with pytest.MonkeyPatch.context() as patch:
        calls = _counting_holds(patch)
        batch = cepkit.match(SHARED, events, engine="automaton")
        assert sorted(calls) == in_scope
        calls.clear()
        matcher = cepkit.Matcher(SHARED, engine="automaton")
        pushed = [m for e in events for m in matcher.push(e)]
        assert calls == in_scope
        assert [m.key for m in pushed] == [m.key for m in batch] != []
        calls.clear()
        numeric = [{"type": t, "s": i} for i, t in enumerate("ABCADBAC")]
        assert cepkit.match(SHARED.replace("= 'x'", ">= 3"), numeric, engine="automaton").positions() == [(3, 5, 6, 7)]
        assert calls == []


def test_a_constant_condition_that_cannot_be_evaluated_goes_to_another_engine():
    """`'' < 5` is an EventError the reference raises only when a candidate meets it (found by fuzzing:
    the automaton folded it at compile time and raised on a stream with no A at all)."""
    query = "A a FILTER '' < 5"
    with pytest.raises(cepkit.QueryError, match="constant condition") as err:
        cepkit.match(query, [], engine="automaton")
    assert "reference" in str(err.value)
    for events in ([], [{"type": "B"}]):
        expected = cepkit.match(query, events, engine="reference").positions()
        assert cepkit.match(query, events).positions() == expected == []
    with pytest.raises(cepkit.EventError):
        cepkit.match(query, [{"type": "A"}])


def test_info_says_which_plan_ran_a_nested_selection():
    """A NEXT/LAST/MAX inside a pattern without a window is compiled by the closure, one under a window
    runs by filtering (docs/automaton-engine.md): ``info`` says which, and says nothing for a pattern
    without one; the matches are the reference's."""
    events = [{"type": t, "ts": i} for i, t in enumerate("AABAB")]
    for query, how in [
        ("NEXT(A a ; B b) ; B c", "closure"),
        ("MAX(A a ; B b) ; B c", "closure"),
        ("MAX(A a ; B b) ; B c WITHIN 3", "filter"),
        ("NEXT(A a ; B b) ; B c WITHIN 3", "filter"),
    ]:
        nested = cepkit.match(query, events, engine="automaton")
        assert nested.info["nested_selection"] == how
        assert nested.positions() == cepkit.match(query, events, engine="reference").positions()
    assert cepkit.match("A a ; B b", events, engine="automaton").info["nested_selection"] is None
