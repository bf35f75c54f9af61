"""The Pike VM (compiled and as plain Python) against the reference backtracking matcher, on random row
patterns (every operator: concatenation, alternation, groups, greedy and reluctant quantifiers with
bounds, anchors, exclusion, PERMUTE), random DEFINE conditions with nulls (row-local ones, and ones that
read other variables' rows or aggregate the rows mapped so far: the VM's registers), partitions, WITHIN
and every AFTER MATCH SKIP mode."""

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepkit.errors import QueryError
from cepkit.match_recognize import find, kernel, output, parse
from cepkit.match_recognize.semantics import reference_output

VARS = ("A", "B", "C")
CONDITIONS = (
    "v = {k}",
    "v > {k}",
    "v <= {k}",
    "v > PREV(v)",
    "v < PREV(v, 2)",
    "v IS NULL",
    "v IS NOT NULL AND v <> {k}",
    "NOT (v = {k}) OR w = {k}",
    "v + w > {k}",
    "v IN ({k}, 3)",
    "NEXT(v) = {k}",
    "{var}.v >= w",
    "s = 'a'",
    "s <> 'b' AND v > {k}",
    "s IN ('a', 'c')",
    "PREV(s) NOT IN ('a')",
)
# Conditions that read rows mapped to other variables (or earlier rows of their own): the VM's registers.
OTHER_ROWS = (
    "v > {other}.v",
    "{var}.w < LAST({var}.w, 1)",
    "(LAST({var}.v, 1) IS NULL AND v < {other}.v) OR v < LAST({var}.v, 1)",
    "LAST({other}.w) IS NULL OR w >= LAST({other}.w) + {k} - 2",
    "FIRST({var}.v) = v OR FIRST({other}.w, 1) < w",
    "FIRST({var}.w, 1) IS NULL AND w <> {k}",
    "v > PREV(LAST({other}.v), 1)",
    "NEXT(FIRST({other}.w)) <= w",
    "CLASSIFIER() = '{var}' AND MATCH_NUMBER() <= {k}",
    "U.w >= w",
    "LAST(U.v, 1) <> v",
    "FIRST(w) < w",
    "LAST(v, 2) IS NULL OR LAST(v, 2) = v",
    "s = {other}.s",
    "{other}.s IN ('a', s)",
    "w - {other}.w IN (1, {k}) AND {var}.v IS NOT NULL",
    "w / ({other}.w - 1) > {k} OR NOT ({other}.v <> v)",
    "{other}.w % 2 = {k} % 2",
    # running aggregates over the rows mapped so far (the tried row among them when it joins the group)
    "AVG({var}.v) > {k}",
    "SUM({other}.w) <= {k} + 2",
    "COUNT({var}.*) <= {k}",
    "COUNT(*) > {k} OR MIN(w) = w",
    "MAX({other}.v) IS NULL OR MAX({other}.v) >= v",
    "COUNT({other}.s) < {k}",
    "SUM(PREV(w)) < 4",
    "AVG(U.w) >= {k} - 1",
    "MIN({var}.v + {var}.w) < {k} AND COUNT(U.v) >= 1",
)


@st.composite
def patterns(draw, depth=3):
    if depth == 0:
        return draw(st.sampled_from(VARS))
    kind = draw(
        st.sampled_from(
            ["var", "var", "concat", "alt", "quant", "quant", "group", "anchor", "exclude", "permute", "empty"]
        )
    )
    if kind == "var":
        return draw(st.sampled_from(VARS))
    if kind == "concat":
        return " ".join(draw(st.lists(patterns(depth - 1), min_size=2, max_size=3)))
    if kind == "alt":
        return "(" + " | ".join(draw(st.lists(patterns(depth - 1), min_size=2, max_size=3))) + ")"
    if kind == "quant":
        body = draw(patterns(depth - 1))
        low = draw(st.integers(0, 2))
        quant = draw(st.sampled_from(["*", "+", "?", "{%d}" % low, "{%d,}" % low, "{%d,%d}" % (low, low + 1), "{,2}"]))
        return f"({body}){quant}{draw(st.sampled_from(['', '?']))}"
    if kind == "group":
        return "(" + draw(patterns(depth - 1)) + ")"
    if kind == "anchor":
        return draw(st.sampled_from(["^", "$"]))
    if kind == "exclude":
        return "{- " + draw(patterns(depth - 1)) + " -}"
    if kind == "permute":
        return "PERMUTE(" + ", ".join(draw(st.lists(patterns(depth - 1), min_size=2, max_size=3))) + ")"
    return "()"


MEASURES = (
    "MATCH_NUMBER()",
    "CLASSIFIER()",
    "FINAL CLASSIFIER()",
    "{var}.v",
    "v",
    "w + 1",
    "FIRST({var}.w)",
    "LAST({var}.v, 1)",
    "FINAL LAST({var}.w)",
    "PREV({var}.w)",
    "NEXT(w, 2)",
    "PREV(LAST({var}.v), 1)",
    "COUNT(*)",
    "COUNT({var}.*)",
    "FINAL COUNT(*)",
    "COUNT({var}.v)",
    "SUM({var}.w)",
    "AVG(w)",
    "MIN({var}.v)",
    "FINAL MAX(v)",
    "SUM(PREV(w))",
    "{var}.v > w",
    "U.w",
    "LAST(U.v)",
    "COUNT(U.*)",
    "v IS NULL OR w = 2",
    "w / (v - 1)",
)


@st.composite
def queries(draw, conditions=CONDITIONS):
    pattern = draw(patterns())
    used = [v for v in VARS if v in pattern]
    defines = []
    for var in used:
        if draw(st.booleans()) or len(defines) == 0:
            condition = draw(st.sampled_from(conditions)).format(
                k=draw(st.integers(0, 3)), var=var, other=draw(st.sampled_from(used))
            )
            defines.append(f"{var} AS {condition}")
    skip = draw(
        st.sampled_from(
            ["", "AFTER MATCH SKIP TO NEXT ROW", "AFTER MATCH SKIP PAST LAST ROW"]
            + [f"AFTER MATCH SKIP TO {w} {v}" for v in used for w in ("FIRST", "LAST")]
        )
    )
    partition = draw(st.sampled_from(["", "PARTITION BY k"]))
    within = draw(st.sampled_from(["", "WITHIN INTERVAL '3' SECOND"]))
    if not defines:  # DEFINE needs one item; a variable of the pattern with a condition that always holds
        defines = [f"{used[0]} AS TRUE"] if used else []
    define = "DEFINE " + ", ".join(defines) if defines else ""
    if not used:
        pattern = f"{pattern} A"
        define = "DEFINE A AS v >= 0"
    names = [v for v in VARS if v in pattern]
    chosen = draw(st.lists(st.sampled_from(MEASURES), min_size=1, max_size=4))
    measures = ", ".join(f"{m.format(var=draw(st.sampled_from(names)))} AS m{i}" for i, m in enumerate(chosen))
    subset = "SUBSET U = (" + ", ".join(names[:2]) + ")"
    rows = draw(
        st.sampled_from(
            [
                "ONE ROW PER MATCH",
                "ALL ROWS PER MATCH",
                "ALL ROWS PER MATCH OMIT EMPTY MATCHES",
                "ALL ROWS PER MATCH WITH UNMATCHED ROWS",
            ]
        )
    )
    return (
        f"SELECT * FROM t MATCH_RECOGNIZE ({partition} ORDER BY ts MEASURES {measures} {rows} {skip} "
        f"PATTERN ({pattern}) {within} {subset} {define})"
    )


@st.composite
def frames(draw):
    n = draw(st.integers(0, 9))
    value = st.one_of(st.none(), st.integers(0, 3))
    v = draw(st.lists(value, min_size=n, max_size=n))
    w = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    k = draw(st.lists(st.sampled_from("xy"), min_size=n, max_size=n))
    gaps = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    ts = pd.to_datetime(np.cumsum(gaps), unit="s")
    s = draw(st.lists(st.one_of(st.none(), st.sampled_from("abc")), min_size=n, max_size=n))
    return pd.DataFrame({"k": k, "ts": ts, "v": pd.array(v, dtype="Int64"), "w": w, "s": s})


def outcome(query, frame, matcher):
    try:
        return [
            [(m.number, m.start, m.rows, m.labels, m.excluded) for m in part]
            for part in find(query, frame, matcher).found()
        ]
    except QueryError as err:
        return str(err)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), frames())
def test_vm_finds_what_the_reference_finds(text, frame):
    query = parse(text)
    assert outcome(query, frame, "vm") == outcome(query, frame, "reference")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(CONDITIONS + OTHER_ROWS), frames())
def test_vm_registers_find_what_the_reference_finds(text, frame):
    """DEFINE conditions that read other variables' rows, FIRST / LAST, CLASSIFIER, MATCH_NUMBER, subsets,
    running aggregates: the VM runs them with per-thread registers and finds the reference's matches."""
    query = parse(text)
    got = outcome(query, frame, "vm")
    assert not str(got).startswith("the VM matcher does not take"), got
    assert got == outcome(query, frame, "reference")


@pytest.mark.parametrize(
    "define, why",
    [
        ("B AS SUM(A.v > 1) > 3", "Compare in SUM's argument"),
        ("B AS SUM(A.s) > 3", "SUM of object values"),
        ("B AS ts > A.ts", "datetime64"),
        ("B AS s > A.v", "a string compared with a number"),
        ("B AS s + 1 > A.v", "an operand of '+' is a str"),
        ("B AS A.v", "not a condition"),
    ],
)
def test_what_the_vm_leaves_to_the_reference(define, why):
    """Conditions the VM does not compile run on the reference matcher, which says why (docs/status.md)."""
    frame = pd.DataFrame({"ts": pd.to_datetime([0, 1, 2], unit="s"), "v": [1, 2, 3], "s": ["a", "b", "c"]})
    query = parse(f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A B+) DEFINE {define})")
    with pytest.raises(QueryError, match="the VM matcher does not take this query's DEFINE: .*" + re.escape(why)):
        find(query, frame, "vm")
    if define.startswith("B AS SUM(A.v"):
        matched = find(query, frame)
        assert matched.info["matcher"] == "reference" and why in matched.info["why reference"]


def test_many_threads_at_one_instruction():
    """``A* B* C`` with C reading A's last row: every split of the rows between A and B is a thread of its
    own at B's loop (their registers differ), more than the kernel's first room for threads holds."""
    n = 60
    frame = pd.DataFrame({"ts": range(n), "v": [1] * (n - 1) + [0], "w": [n - i for i in range(n)]})
    query = parse(
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A* B* C) "
        "DEFINE A AS v = 1, B AS v = 1, C AS v = 0 AND LAST(A.w) = 7)"
    )
    assert outcome(query, frame, "vm") == outcome(query, frame, "reference")
    assert find(query, frame).found()[0][0].labels.count("A") == n - 6  # A ends at the row where w is 7


@pytest.mark.parametrize("twin", [False, True])
def test_a_match_longer_than_the_node_arena(twin, monkeypatch):
    """One start row maps more rows than the kernel's first arena of path nodes (256) holds: the arena
    grows and the row is tried again. B+ takes every row (A.v = 5), C none of them, so B gives back the last
    row to C (the reference's backtracking recurses per row: too deep to run here)."""
    if twin:
        _python_twin(monkeypatch)
    n = 300
    frame = pd.DataFrame({"ts": range(n), "v": [5] + list(range(n - 2, 0, -1)) + [9]})
    query = parse(
        "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts ALL ROWS PER MATCH PATTERN (A B+ C) "
        "DEFINE B AS v < PREV(v) OR A.v = 5, C AS v > PREV(v))"
    )
    (match,) = outcome(query, frame, "vm")[0]
    assert match == (1, 0, tuple(range(n)), ("A",) + ("B",) * (n - 2) + ("C",), (False,) * n)


@pytest.fixture
def python_kernel(monkeypatch):
    """The kernel's plain-Python twin (the same function, not compiled)."""
    _python_twin(monkeypatch)


def _python_twin(monkeypatch):
    compiled = kernel.match_partitions
    monkeypatch.setattr(kernel, "match_partitions", getattr(compiled, "py_func", compiled))
    for name in ("grow", "_closure", "_condition", "_update", "_same", "_accumulate"):
        monkeypatch.setattr(kernel, name, getattr(getattr(kernel, name), "py_func", getattr(kernel, name)))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(queries(CONDITIONS + OTHER_ROWS), frames())
def test_the_kernels_python_twin_agrees(python_kernel, text, frame):
    query = parse(text)
    assert outcome(query, frame, "vm") == outcome(query, frame, "reference")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), frames())
def test_column_wise_output_is_the_reference_output(text, frame):
    query = parse(text)
    try:
        matched = find(query, frame, "reference")
    except QueryError:
        return
    expected = reference_output(query, matched.rows, matched.bounds, matched.found())
    got = output(matched)
    # A measure null on every row has no values to type it by in the reference: compare its nulls only.
    for name in got.columns:
        if expected[name].isna().all():
            assert got[name].isna().all(), name
            got[name] = expected[name]
    pd.testing.assert_frame_equal(got, expected)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(CONDITIONS + OTHER_ROWS), frames())
def test_categorical_strings_give_the_rows_plain_strings_give(text, frame):
    """``cepkit.spark.sql``'s workers hand ``cepkit.sql`` its strings as categoricals (Arrow's dictionary
    encoding, categories sorted): the PARTITION BY key and string tests read their codes, with nulls and
    categories no row holds, and the output is the one plain strings give."""
    query = parse(text)
    coded = frame.assign(
        k=pd.Categorical(frame["k"], categories=["w", "x", "y"]),
        s=pd.Categorical(frame["s"], categories=["a", "b", "c", "d"]),
    )
    try:
        plain = output(find(query, frame))
    except QueryError as err:
        with pytest.raises(QueryError, match=re.escape(str(err).splitlines()[0])):
            output(find(query, coded))
        return
    got = output(find(query, coded))
    assert list(got.columns) == list(plain.columns)
    for name in plain.columns:
        assert got[name].astype(object).where(got[name].notna(), None).tolist() == (
            plain[name].astype(object).where(plain[name].notna(), None).tolist()
        ), name
