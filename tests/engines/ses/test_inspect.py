"""``SesRun``: the SES automaton stepped through a match window, in the shape ``AutomatonView`` draws
([SES] §4.4, Fig 4.6)."""

import cepkit
from cepkit.datasets import ses_chemo
from cepkit.engines.ses.inspect import SesRun
from cepkit.widgets import AutomatonView

P1 = (
    "PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE c.PID = p.PID and p.PID = d.PID and d.PID = b.PID "
    "and prev(p.V) < p.V WITHIN 15 days"
)


def test_states_and_conditions():
    """The 9 states as the thesis writes them and each transition's Θδ: v's conditions with the variables
    bound in its target ([SES] §4.3), e.g. Θ17 binding b after {c, p, d}. Θ is compiled with Θ_eq⁺
    (docs/references.md E11), so Θ17 holds the thesis's d.PID = b.PID
    and the implied c.PID = b.PID and p.PID = b.PID, and p's loops the implied prev(p.PID) = p.PID."""
    run = SesRun(P1)
    assert run.states == ["∅", "{c}", "{d}", "{p}", "{c,d}", "{c,p}", "{d,p}", "{c,d,p}", "{b,c,d,p}"]
    assert run.initial == "∅" and run.finals == {"{b,c,d,p}"}
    by_number = {t.number: t for t in run.transitions}
    assert run.condition(by_number[17]) == "d.PID = b.PID and c.PID = b.PID and p.PID = b.PID"
    assert run.condition(by_number[10]) == "prev(p.V) < p.V and prev(p.PID) = p.PID"
    assert run.condition(by_number[1]) == "true"
    edges = run.to_networkx().edges(data=True)
    assert {data["mark"] for _, _, data in edges} == {"•"} and len(edges) == 17


def test_stepping_window_w1_fig_4_6():
    """[SES] Fig. 4.6, the trace of W1 under STNM: after e1 the run is in {c}, after e3 in {c,p}, after e5 in {c,d,p}, after
    e10 still there (p loop), after e12 in qf, which completes {c/e1, p/⟨e3,e10⟩, d/e5, b/e12}."""
    chemo = ses_chemo(3)
    steps = list(SesRun(P1, strategy="STNM").steps(chemo.iloc[:13]))
    names = chemo["e"].tolist()
    states = {names[s.position]: sorted(s.active) for s in steps}
    assert states["e1"] == ["{c}"] and states["e3"] == ["{c,p}"] and states["e5"] == ["{c,d,p}"]
    assert states["e10"] == ["{c,d,p}"] and states["e12"] == ["{b,c,d,p}"]
    assert [(names[s.position], s.matches) for s in steps if s.matches] == [("e12", [(0, 2, 4, 9, 11)])]


def test_the_automaton_view_draws_it():
    """``cepkit.widgets.AutomatonView`` takes a ``SesRun`` as it takes a compiled CEA: states, edges, steps."""
    view = AutomatonView(SesRun(P1, strategy="STNM"), ses_chemo(3).iloc[:13])
    view.step = 5
    assert repr(view) == "AutomatonView(states=9, transitions=17, step=5/13)"
    assert view.active() == {"{c,d,p}": [(0, 2, 4)]}
    assert cepkit.match(P1, ses_chemo(3), engine="ses", strategy="STNM").positions()[0] == (0, 2, 4, 9, 11)
