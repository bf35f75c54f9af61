"""Property tests of E-Cube against the reference: random hierarchies, random families of related queries
(a base query and its random drill-downs and roll-ups), random streams.

- every query of a cube gets exactly the reference's matches, whatever plan Chase chooses;
- every reuse edge Chase may choose is exact on its own: run on the source's reference rows, it gives
  the target's reference rows (so no plan can be wrong);
- drill-down and roll-up answered from the kept results equal recomputation.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cepkit
from cepkit.ecube import ECube
from cepkit.ecube.plan import ROOT
from cepkit.lang import ast as A
from cepkit.lang.printer import pretty
from cepkit.runtime.stream import Stream
from cepkit.ecube.reuse import Executor
from cepkit.ecube.shape import in_output_order, output_order

LEAVES = ("A", "B", "C", "D", "E")
CONCEPTS = ("P", "Q", "R")


@st.composite
def hierarchies(draw):
    """Leaves under P or Q (or nowhere), P and Q under R (or not): a random concept tree."""
    children = {c: [] for c in CONCEPTS}
    for leaf in LEAVES:
        parent = draw(st.sampled_from(["P", "Q", None]))
        if parent:
            children[parent].append(leaf)
    for concept in ("P", "Q"):
        if draw(st.booleans()):
            children["R"].append(concept)
    return cepkit.Hierarchy({c: kids for c, kids in children.items() if kids})


def _below(hierarchy, name):
    return sorted(hierarchy.covers(name) - {name})


@st.composite
def families(draw, hierarchy):
    """A base flat SEQ over concepts and leaves and 1-3 relatives made by drill-down / roll-up steps."""
    names = iter(f"x{i}" for i in range(100))
    every = list(LEAVES) + [c for c in CONCEPTS if c in hierarchy.children]

    def item(positive=None):
        positive = draw(st.booleans()) if positive is None else positive
        return (positive, draw(st.sampled_from(every)), next(names))

    items = [item(True)] + [item(draw(st.integers(0, 3)) > 0) for _ in range(draw(st.integers(0, 2)))]
    items = draw(st.permutations(items))
    conds = []
    for positive, _, var in items:
        if draw(st.integers(0, 3)) == 0:
            conds.append(
                A.Compare(draw(st.sampled_from(["<", ">=", "="])), A.Attr(var, "v"), A.Literal(draw(st.integers(0, 3))))
            )
    positives = [var for positive, _, var in items if positive]
    if len(positives) > 1 and draw(st.booleans()):
        conds.append(A.Compare("=", A.Attr(positives[0], "id"), A.Attr(positives[-1], "id")))
    within = draw(st.sampled_from([None, A.Window(4, None), A.Window(6, None), A.Window(5, "EVENTS")]))
    partition = ("id",) if draw(st.integers(0, 3)) == 0 else ()

    def text(its, cs):
        vars_ = {v for _, _, v in its}
        kept = [c for c in cs if set(A.variables_in(c)) <= vars_]
        pattern = A.Seq(tuple(A.Atom(t, v) if p else A.Not(A.Atom(t, v)) for p, t, v in its))
        return pretty(A.QueryNode(pattern=pattern, where=A.conjoin(kept), within=within, partition_by=partition))

    family = [items]
    for _ in range(draw(st.integers(1, 3))):
        its = list(draw(st.sampled_from(family)))
        k = draw(st.integers(0, len(its) - 1))
        positive, type_, var = its[k]
        step = draw(st.sampled_from(["concept_down", "concept_up", "pattern_down", "pattern_up"]))
        if step == "concept_down" and _below(hierarchy, type_):
            its[k] = (positive, draw(st.sampled_from(_below(hierarchy, type_))), var)
        elif step == "concept_up" and hierarchy.parents(type_):
            its[k] = (positive, hierarchy.parents(type_)[0], var)
        elif step == "pattern_down" and len(its) < 4:
            its.insert(draw(st.integers(0, len(its))), item())
        elif step == "pattern_up" and sum(p for p, _, _ in its) - positive >= 1:
            del its[k]
        family.append(its)
    texts = []
    for its in family:
        t = text(its, conds)
        if t not in texts:
            texts.append(t)
    return {f"q{i}": t for i, t in enumerate(texts)}


@st.composite
def streams(draw, hierarchy):
    """In-order events of leaf and concept types (a concept is also a type of its own), v 0..3, id 0..1."""
    types = list(LEAVES) + list(hierarchy.children)
    ts, out = 0, []
    for _ in range(draw(st.integers(0, 11))):
        ts += draw(st.integers(0, 2))
        out.append(
            {
                "type": draw(st.sampled_from(types)),
                "ts": ts,
                "v": draw(st.integers(0, 3)),
                "id": draw(st.integers(0, 1)),
            }
        )
    return out


@st.composite
def cases(draw):
    hierarchy = draw(hierarchies())
    return hierarchy, draw(families(hierarchy)), draw(streams(hierarchy))


def reference_rows(query, events, hierarchy):
    return {m.positions for m in cepkit.match(query, events, engine="reference", hierarchy=hierarchy)}


def run_edge(strategy, executor, rows: set, width: int) -> set:
    """A strategy run on a set of rows (as the (n, width) array the cube keeps); its rows, checked distinct."""
    got = strategy.run(executor, in_output_order(np.asarray(sorted(rows), np.int64).reshape(-1, width)))
    found = set(map(tuple, got.tolist()))
    assert len(found) == len(got), "a strategy repeated a row"
    assert output_order(got) is None, "a strategy's rows are not in output order"
    return found


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_query_gets_the_reference_matches(case):
    hierarchy, queries, events = case
    cube = ECube(queries, hierarchy)
    results = cube.run(events)
    for name, text in queries.items():
        expected = cepkit.match(text, events, engine="reference", hierarchy=hierarchy)
        assert [m.key for m in results[name]] == [m.key for m in expected], (name, text, cube.last_plan.steps)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_reuse_edge_is_exact_on_its_own(case):
    hierarchy, queries, events = case
    cube = ECube(queries, hierarchy)
    cube.run(events)
    rows = {name: reference_rows(text, events, hierarchy) for name, text in queries.items()}
    executor = Executor(Stream.from_any(events))
    for source, target, data in cube.candidates(cube.statistics).edges(data=True):
        if source != ROOT:
            got = run_edge(data["strategy"], executor, rows[source], len(cube.shapes[source].positives))
            assert got == rows[target], (source, target, data["method"], queries[source], queries[target])


OPERATIONS = [
    ("drill_down", {"pattern": [("!B", 2)]}),
    ("drill_down", {"pattern": [("C", 1)]}),
    ("roll_up", {"pattern": [("A", 1)]}),
    ("drill_down", {"concept": [("P", "A", 1)]}),
    ("roll_up", {"concept": [("A", "P", 1)]}),
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(["A", "B", "C", "P"]), min_size=2, max_size=3),
    streams(cepkit.Hierarchy({"P": ["A", "B"], "Q": ["C"]})),
    st.sampled_from(range(len(OPERATIONS))),
)
def test_drill_down_and_roll_up_equal_recomputation(types, events, op):
    hierarchy = cepkit.Hierarchy({"P": ["A", "B"], "Q": ["C"]})
    method, args = OPERATIONS[op]
    base = "SEQ(" + ", ".join(f"{t} x{i}" for i, t in enumerate(types)) + ") WITHIN 5"
    cube = ECube({"base": base}, hierarchy)
    cube.run(events)
    try:
        got = getattr(cube, method)("base", **args)
    except cepkit.QueryError:
        return  # the operation does not apply to this query (checked in test_worked_examples)
    new = [n for n in cube.queries if n != "base"]
    assert len(new) == 1
    expected = cepkit.match(cube.queries[new[0]], events, engine="reference")
    assert [m.key for m in got] == [m.key for m in expected]
    assert cube.last_plan.step(new[0]).source in (None, "base")


def test_drill_down_needs_a_run_first():
    cube = ECube({"q": "SEQ(P p, C c)"}, {"P": ["A", "B"]})
    with pytest.raises(ValueError, match="run the cube"):
        cube.drill_down("q", concept=[("P", "A", 1)])


# ----------------------------------------------------------------------------- attribute hierarchies
PLACES = cepkit.Hierarchy({"R": ["P", "Q"], "P": ["a", "b"], "Q": ["c"]}, attribute="loc")
PLACE_NAMES = [None, "R", "P", "Q", "a", "b", "c"]  # None: no condition on loc (any value)


@st.composite
def place_families(draw):
    """Queries over types M and N whose items carry a loc concept (or none), and relatives made by
    refining or generalising one item's place, inserting or removing an item."""
    names = iter(f"x{i}" for i in range(100))

    def item(positive=True):
        return (positive, draw(st.sampled_from(["M", "N"])), next(names), draw(st.sampled_from(PLACE_NAMES)))

    items = draw(
        st.permutations([item()] + [item(draw(st.integers(0, 2)) > 0) for _ in range(draw(st.integers(0, 2)))])
    )
    within = draw(st.sampled_from([None, A.Window(4, None), A.Window(4, "EVENTS")]))

    def text(its):
        pattern = A.Seq(tuple(A.Atom(t, v) if p else A.Not(A.Atom(t, v)) for p, t, v, _ in its))
        conds = [A.Compare("=", A.Attr(v, "loc"), A.Literal(place)) for _, _, v, place in its if place]
        return pretty(A.QueryNode(pattern=pattern, where=A.conjoin(conds), within=within))

    family = [items]
    for _ in range(draw(st.integers(1, 3))):
        its = list(draw(st.sampled_from(family)))
        k = draw(st.integers(0, len(its) - 1))
        positive, type_, var, place = its[k]
        step = draw(st.sampled_from(["down", "up", "insert", "remove"]))
        if step == "down":
            below = sorted(PLACES.covers(place) - {place}) if place else ["R"]
            if below:
                its[k] = (positive, type_, var, draw(st.sampled_from(below)))
        elif step == "up" and place:
            parents = PLACES.parents(place)
            its[k] = (positive, type_, var, parents[0] if parents else None)
        elif step == "insert" and len(its) < 4:
            its.insert(draw(st.integers(0, len(its))), item(draw(st.booleans())))
        elif step == "remove" and sum(p for p, *_ in its) - positive >= 1:
            del its[k]
        family.append(its)
    texts = list(dict.fromkeys(text(its) for its in family))
    return {f"q{i}": t for i, t in enumerate(texts)}


@st.composite
def place_streams(draw):
    ts, out = 0, []
    for _ in range(draw(st.integers(0, 10))):
        ts += draw(st.integers(0, 2))
        out.append(
            {
                "type": draw(st.sampled_from(["M", "N"])),
                "ts": ts,
                "loc": draw(st.sampled_from(["a", "b", "c", "d", "P", None])),
            }
        )
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(place_families(), place_streams())
def test_attribute_hierarchies_reuse_exactly(queries, events):
    """Concepts of an attribute (docs/language.md §7) refine like types: every query and every offered edge
    (value complements such as "P but not a", "any value but not in Q") gives the reference's rows."""
    cube = ECube(queries, PLACES)
    results = cube.run(events)
    rows = {name: reference_rows(text, events, PLACES) for name, text in queries.items()}
    for name in queries:
        assert {m.positions for m in results[name]} == rows[name], (name, queries[name])
    executor = Executor(Stream.from_any(events))
    for source, target, data in cube.candidates(cube.statistics).edges(data=True):
        if source != ROOT:
            assert (
                run_edge(data["strategy"], executor, rows[source], len(cube.shapes[source].positives)) == rows[target]
            ), (source, target, data["method"], queries[source], queries[target])
