"""Continuous Sliding Views ([CSV] §3-6) on their own and inside the engine: what each mode keeps,
when it computes, and what ``Matches.info`` reports; plus the engine's options, refusals and pickling."""

import pickle

import pytest

import cepkit
from cepkit.engines.nested.views import make_view


class Results:
    """A stand-in sub-query: one result per end index, starting ``length - 1`` earlier; records the calls."""

    class Result:
        def __init__(self, first, last):
            self.first, self.last, self.key = first, last, (first, last)

    def __init__(self, length=2):
        self.length = length
        self.calls = []

    def __call__(self, end, start):
        self.calls.append((end, start))
        first = end - self.length + 1
        return [self.Result(first, end)] if first >= start else []


def test_a_csv_expands_its_right_bound_only_when_a_query_interval_reaches_past_it():
    """[CSV] §4 ([CSV] Ex 1): ⟨r1,w12,o18⟩ has QI (1, 12), so the view holds every result up to 11;
    ⟨r1,w12,o20⟩ reuses it; ⟨r1,w16,o20⟩ has QI (1, 16) and expands the view to 15 — over the widest interval
    any QI may ask for ([CSV] Ex 4: some of those results are never used)."""
    sub = Results()
    view = make_view("a", sub, floor=lambda end: 0)
    assert [(r.first, r.last) for r in view.lookup(1, 12)] == [(k - 1, k) for k in range(3, 12)]
    assert view.right_bound == 11 and [end for end, _ in sub.calls] == list(range(12))
    view.lookup(1, 12)
    view.lookup(1, 16)
    assert view.right_bound == 15 and [end for end, _ in sub.calls[12:]] == [12, 13, 14, 15]
    assert view.stats == {"lookups": 3, "hits": 1, "partial": 2, "full": 0, "computed": 16}


def test_p_csv_extends_a_view_interval_to_the_right_and_stores_each_result_once():
    """[CSV] §5: a QI sticking out on the right of a VI computes the new end indices only; a left
    overhang is computed from scratch; each tuple is stored under the first VI that produced it, so a lookup
    scans every overlapping VI ([CSV] §5.3.1) and the containment of [LIU] §5.6 (cache[1,10] ⊇ cache[1,5]) is a hit."""
    sub = Results()
    view = make_view("p", sub, floor=lambda end: 0)
    view.lookup(5, 10)
    view.lookup(5, 14)  # right overhang: ends 10..13 only
    assert [end for end, _ in sub.calls] == list(range(6, 14)) and view.stats["partial"] == 1
    found = view.lookup(2, 8)  # left overhang: from scratch, only new tuples stored
    assert sorted(r.key for r in found) == [(3, 4), (4, 5), (5, 6), (6, 7)]
    assert view.size() == len({r.key for v in view.intervals for r in v.results})
    before = len(sub.calls)
    assert sorted(r.key for r in view.lookup(6, 12)) == [(7, 8), (8, 9), (9, 10), (10, 11)]
    assert len(sub.calls) == before and view.stats["hits"] == 1


def test_b_csv_computes_the_hull_of_a_triggers_intervals_once():
    """[CSV] §6 (Fig 17): the QIs of one outer trigger are merged into maximal intervals, computed
    once; the lookups that follow are hits. VI bounds never decrease as triggers drift right ([CSV] §6)."""
    sub = Results()
    view = make_view("b", sub, floor=lambda end: 0)
    view.prepare([(1, 6), (4, 9), (12, 15)])
    assert [(v.lo, v.hi) for v in view.intervals] == [(1, 9), (12, 15)]
    computed = len(sub.calls)
    view.lookup(1, 6), view.lookup(4, 9), view.lookup(12, 15)
    assert len(sub.calls) == computed and view.stats["hits"] == 3
    highs = []
    for t in range(15, 30):
        view.prepare([(t - 5, t), (t - 3, t + 1)])
        highs.append(max(v.hi for v in view.intervals))
    assert highs == sorted(highs)


def test_no_caching_recomputes_every_lookup():
    """[LIU] §5.1.3-5.1.4, problem P2: the baseline rebuilds the inner results for every outer candidate."""
    sub = Results()
    view = make_view(None, sub, floor=lambda end: 0)
    view.lookup(1, 6), view.lookup(1, 6)
    assert len(sub.calls) == 8 and view.stats["hits"] == 0 and view.size() == 0


def test_info_reports_the_plan_the_rewrite_and_the_caches():
    stream = cepkit.datasets.neel_hospital("q1_accept_no_disinfection")
    query = "SEQ(Recycle r, Washing w, !SEQ(Sharpening s, Disinfection d, Checking c), Operating o)"
    info = cepkit.match(query, stream, engine="nested", plan="nested").info
    assert info["execution"] == "nested" and info["rewrite"] is None and info["subqueries"] == 1
    assert info["caching"] == info["plan"]["caching"]["chosen"] == "a"  # no WITHIN: one window, reused
    assert info["cache"]["summary_lookups"] == 1
    info = cepkit.match(query, stream, engine="nested", plan="nested", caching="b").info
    assert info["caching"] == "b" and info["cache"]["summary_lookups"] == 1 and info["cache"]["lookups"] == 0
    info = cepkit.match(query, stream, engine="nested", caching=None).info
    assert info["execution"] == "nested" and info["cache"]["lookups"] == 1
    info = cepkit.match(query, stream, engine="nested", rewrite=True).info
    assert info["execution"] == "normal form" and info["rewrite"]["steps"][0] == "NPDR2"
    assert info["rewrite"]["normal_form"].startswith("SEQ(Recycle AS r, Washing AS w, !Sharpening AS s")


def test_shared_prefixes_are_built_once():
    """[LIU] §5.3-5.4 Ex 27 (PreCache): in the DNF of Q1 every disjunct starts with SEQ(R, W); the prefix is
    built once per end index and reused by the other disjuncts."""
    stream = cepkit.datasets.neel_hospital("q1_accept_no_disinfection")
    query = "SEQ(Recycle r, Washing w, !SEQ(Sharpening s, Disinfection d, Checking c), Operating o)"
    found = cepkit.match(query, stream, engine="nested", plan="normal form", caching=None)
    assert found.info["execution"] == "normal form" and found.info["cache"]["prefix_hits"] > 0


def test_options_and_refusals():
    with pytest.raises(ValueError, match="caching is one of"):
        cepkit.match("SEQ(A a, !B b, C c)", [], engine="nested", caching="x")
    with pytest.raises(TypeError, match="rewrite is True or False"):
        cepkit.match("SEQ(A a, !B b, C c)", [], engine="nested", rewrite="yes")
    with pytest.raises(cepkit.QueryError, match="does not support kleene") as err:
        cepkit.match("SEQ(A a, B+ b)", [], engine="nested")
    assert "reference" in err.value.engines and "^" in str(err.value)
    with pytest.raises(cepkit.QueryError, match="at least one positive item"):
        cepkit.match("SEQ(A a, !SEQ(!B b))", [], engine="nested")


@pytest.mark.parametrize("options", [{"caching": "a"}, {"caching": None, "rewrite": True}])
def test_plans_pickle_with_their_options(options):
    from cepkit.runtime.selection import select_engine

    _, plan = select_engine(cepkit.parse("SEQ(A a, !SEQ(B b, C c), D d)"), "nested", options)
    clone = pickle.loads(pickle.dumps(plan))
    assert (clone.caching, clone.rewrite) == (plan.caching, plan.rewrite)
    assert clone.info()["execution"] == plan.info()["execution"]


def test_auto_picks_nested_for_nested_negation():
    found = cepkit.match("SEQ(A a, !SEQ(B b, C c), D d)", [{"type": "A"}, {"type": "D"}])
    assert found.engine == "nested" and found.positions() == [(0, 1)]
