"""RewriteView without a browser: step through NEEL rewritings ([LIU] §5.2) by the model's traits."""

import cepkit
from cepkit.widgets import RewriteView

EX25 = "SEQ(E1 e1, !SEQ(E2 e2, E3 e3), E4 e4, SEQ(!AND(E5 e5, E6 e6), E7 e7))"
Q1 = "SEQ(Recycle r, Washing w, !SEQ(Sharpening s, Disinfection d, Checking c), Operating o)"


def test_steps_show_the_rule_and_highlight_the_rewritten_part():
    view = RewriteView(EX25)
    steps = cepkit.rewrite(EX25).steps
    assert view.slider.max == len(steps) == 9 and view.step == 0
    assert "start" in view.rule.value and "E1 AS e1" in view.before.value and view.previous.disabled
    view.next.click()
    assert view.step == 1 and view.slider.value == 1 and "FR2" in view.rule.value
    assert "<mark" in view.before.value and "<mark" in view.after.value and "α = 3" in view.after.value
    view.slider.value = 3
    assert "NPDR2" in view.rule.value
    assert "!(E2 AS e2 ; E3 AS e3)</mark>" in view.before.value
    view.step = 9
    assert view.next.disabled and "FR5" in view.rule.value and "α = 0" in view.after.value
    assert "Normal form after 9 steps" in view.summary.value and "RETURN e1, e4, e7" in view.summary.value
    assert repr(view) == "RewriteView(steps=9, step=9/9, normal=True)"


def test_direction_switches_between_npdr2_and_npdr1():
    view = RewriteView(Q1)
    view.step = 1
    assert "NPDR2" in view.rule.value
    view.direction.value = "right"
    assert view.step == 0
    view.next.click()
    assert "NPDR1" in view.rule.value and "!Checking AS c_1" in view.summary.value


def test_a_query_outside_lcons_says_why():
    view = RewriteView("SEQ(A a, !SEQ(B b, !C c, D d), E e)")
    assert view.slider.max == 0 and view.next.disabled
    assert "Not flattenable" in view.summary.value and "for all" in view.summary.value


def test_an_inexact_step_is_flagged():
    view = RewriteView("AND(A a, !AND(B b, !C c)) WITHIN 5 s")
    view.step = 1
    assert "not exact under WITHIN" in view.after.value
    assert "does not keep every match" in view.summary.value


def test_the_workbench_has_a_rewrite_tab():
    from cepkit.widgets import Workbench
    from cepkit.widgets.workbench import TABS

    wb = Workbench([{"type": "A", "ts": 0}, {"type": "D", "ts": 1}], query="SEQ(A a, !OR(B b, C c), D d)")
    wb.run()
    wb.tabs.selected_index = TABS.index("Rewrite")
    view = wb.tabs.children[TABS.index("Rewrite")].children[0]
    assert isinstance(view, RewriteView) and view.slider.max == 2


def test_given_events_both_forms_are_run_side_by_side():
    """The query and its normal form on the same stream."""
    events = [
        {"type": t, "ts": ts}
        for ts, t in enumerate(
            ["Recycle", "Washing", "Sharpening", "Checking", "Operating", "Recycle", "Washing", "Operating"]
        )
    ]
    view = RewriteView(Q1, events=events)
    assert "On 8 events: the query 4 matches, the normal form 4: the same matches." in view.summary.value


def test_every_rule_has_a_one_line_description_shown_with_it():
    from cepkit.lang.rewrite import RULES
    from cepkit.widgets.rewrite_view import RULE_TEXT

    assert set(RULES) <= set(RULE_TEXT) and all("\n" not in text for text in RULE_TEXT.values())
    view = RewriteView(EX25)
    for k, step in enumerate(view.rewriting.steps, 1):
        view.step = k
        assert view.rule.value.endswith(RULE_TEXT[step.rule].replace("&", "&amp;").replace("<", "&lt;"))


def test_long_queries_print_one_branch_per_line_and_never_break_words():
    view = RewriteView(EX25)
    normal = view.rewriting.normal_form
    branches = normal.count(" OR ") + 1
    shown = view.summary.value
    assert shown.count("<br>OR ") == branches - 1 == 3 and "<br>RETURN e1, e4, e7" in shown
    assert "word-break:normal" in shown and "break-all" not in shown
    assert view.direction.style.button_width == "auto"  # toggle labels are not cut
