"""``RewriteView``: a query's NEEL rewriting to normal form, one rule per step ([LIU] §5.2, §9 item 3).

Step 0 shows the query with every condition at its place (the scoped query the rules start from); step k
shows the k-th rule applied: its name and what it does in one line, the query before with the rewritten part highlighted, the query
after with the new part highlighted, the nesting measure α after the step, and whether the step keeps
every match. A slider and Previous / Next buttons move through the steps; the direction toggle chooses how
negated sequences unroll (NPDR2, first instance, or NPDR1, last instance: no confluence, [LIU] §5.2.8). The
summary line gives the normal form, or why the query is not flattenable; given ``events``, it also runs the
query and its normal form on them (a side-by-side check). The widget only calls
``cepkit.rewrite`` and ``cepkit.match``. Queries print one OR branch per line (a normal form is an OR of
flat sequences) and wrap only between words.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import traitlets

import cepkit

from .execution import as_stream
from .figures import full_width

DIRECTIONS = (("NPDR2: first instance", "left"), ("NPDR1: last instance", "right"))
OLD_COLOUR, NEW_COLOUR = "#ffd6d6", "#d6f5d6"
CODE = (
    "<div style='font-family:var(--jp-code-font-family,monospace);white-space:pre-wrap;word-break:normal;"
    "overflow-wrap:normal;line-height:1.5'>{}</div>"
)
# What each rule does, in one line ([LIU] §5.2.3, §5.2.5, Rules 1-20, and our splice rule)
RULE_TEXT = {
    "FR1": "a SEQ inside a SEQ is spliced into it",
    "FR2": "a SEQ holding negations, inside a SEQ, is spliced into it",
    "FR3": "an AND inside an AND is spliced into it",
    "FR4": "an AND holding negations, inside an AND, is spliced into it",
    "FR5": "an OR inside an OR is spliced into it",
    "FR6": "∃SEQ(E1..Ei) inside a SEQ becomes its items ∃E1 .. ∃Ei, in place",
    "FR7": "∃AND(E1..Ei) inside an AND becomes its items ∃E1 .. ∃Ei",
    "NPDR1": "a negated SEQ unrolled right to left: no last instance of it",
    "NPDR2": "a negated SEQ unrolled left to right: no first instance of it",
    "NPDR3": "!AND(E1..Ei) = !E1 ∨ … ∨ !Ei (De Morgan)",
    "NPDR4": "!AND with negated items = !E1 ∨ … ∨ ∃Ei ∨ …: each item's polarity flips",
    "NPDR5": "!OR(E1..Ei) = !E1 ∧ … ∧ !Ei (De Morgan)",
    "NPDR6": "inside a negated SEQ, ∃E is just E",
    "NPDR7": "inside a negated AND, ∃E is just E",
    "splice": "!A ∧ !B inside a SEQ becomes the two items !A, !B (the same neighbours, the same scope)",
    "DR1": "a SEQ holding an OR becomes an OR of SEQs, one per branch",
    "DR2": "an AND holding an OR becomes an OR of ANDs, one per branch",
    "DR3": "a SEQ holding a disjunction of items (!A ∨ ∃B …) becomes an OR of SEQs, one per item",
    "DR4": "an AND holding a disjunction of items becomes an OR of ANDs, one per item",
    "DR5": "a SEQ holding ∃OR(E1..Ei) becomes an OR of SEQs, one per ∃Ei",
    "DR6": "an AND holding ∃OR(E1..Ei) becomes an OR of ANDs, one per ∃Ei",
}


def branch_breaks(text: str) -> set:
    """Indices of the spaces before a top-level ``OR``, ``RETURN`` or ``WITHIN`` (outside every bracket):
    one branch of a disjunction per line, the clauses after them on their own lines.

    >>> sorted(branch_breaks("SEQ(A AS a, (B AS b OR C AS c)) OR D AS d RETURN a"))
    [31, 41]
    """
    depth, found = 0, set()
    for i, char in enumerate(text):
        depth += (char in "([{") - (char in ")]}")
        if depth == 0 and char == " " and text.startswith((" OR ", " RETURN ", " WITHIN "), i):
            found.add(i)
    return found


def highlighted(text: str, span: tuple = (0, 0), colour: str = "") -> str:
    """HTML of ``text``, one top-level branch per line, with the characters ``span`` (start, end) marked.

    >>> highlighted("A OR B<C", (5, 8), "red")
    "<div style='...'>A<br>OR <mark style='background:red'>B&lt;C</mark></div>"
    """
    start, end = span
    breaks = branch_breaks(text)
    parts = []
    for i, char in enumerate(text):
        if i == start and end > start:
            parts.append(f"<mark style='background:{colour}'>")
        parts.append("<br>" if i in breaks else html.escape(char))
        if i == end - 1 and end > start:
            parts.append("</mark>")
    return CODE.format("".join(parts))


class RewriteView(widgets.VBox):
    """Step through ``cepkit.rewrite(query)``.

    Parameters
    ----------
    query : str or ``cepkit.Query``
    direction : "left" (NPDR2) or "right" (NPDR1)
    events : optional DataFrame, iterable of dicts or of ``cepkit.Event``
        Run the query and its normal form on them (``reference`` engine) and say whether they agree.

    Examples
    --------
    >>> view = RewriteView("SEQ(A a, !OR(B b, C c), D d)")
    >>> view.step = 1
    >>> view.rule.value
    '<b>1/2 NPDR5</b>: !OR(E1..Ei) = !E1 ∧ … ∧ !Ei (De Morgan)'
    """

    step = traitlets.Int(0)

    def __init__(self, query, direction: str = "left", hierarchy=None, events=None):
        self.query = cepkit.parse(query, hierarchy)
        self.events = None if events is None else list(as_stream(events))
        self.direction = widgets.ToggleButtons(
            options=DIRECTIONS,
            value=direction,
            description="unroll",
            style={"button_width": "auto"},
            tooltips=[
                "Unroll negated sequences left to right (NPDR2)",
                "Unroll negated sequences right to left (NPDR1, exact)",
            ],
        )
        # at least 220 px: in a narrow output the row wraps instead of squeezing the slider's track to nothing
        self.slider = widgets.IntSlider(
            value=0, min=0, max=0, description="step", layout={"width": "320px", "min_width": "220px"}
        )
        self.previous = widgets.Button(description="◀ Previous")
        self.next = widgets.Button(description="Next ▶")
        self.summary = widgets.HTML()
        self.rule = widgets.HTML()
        self.before = widgets.HTML()
        self.after = widgets.HTML()
        self.previous.on_click(lambda _: self._move(-1))
        self.next.on_click(lambda _: self._move(+1))
        self.direction.observe(lambda _: self._rewrite(), "value")
        traitlets.link((self, "step"), (self.slider, "value"))
        super().__init__(
            [
                self.direction,
                widgets.HBox([self.previous, self.slider, self.next], layout={"flex_flow": "row wrap"}),
                self.rule,
                self.before,
                self.after,
                self.summary,
            ],
            layout=full_width(),
        )
        self.add_class("cepkit-rewrite-view")
        self._rewrite()

    def _rewrite(self) -> None:
        self.rewriting = cepkit.rewrite(self.query, direction=self.direction.value)
        self.slider.max = len(self.rewriting.steps)
        self.step = 0
        self.summary.value = self._summary()
        self._show()

    def _move(self, delta: int) -> None:
        self.step = min(max(self.step + delta, 0), len(self.rewriting.steps))

    @traitlets.observe("step")
    def _on_step(self, change) -> None:
        self._show()

    def _summary(self) -> str:
        r = self.rewriting
        if r.normal:
            exact = "keeps every match" if r.exact else "<b>a step does not keep every match under WITHIN</b>"
            return f"Normal form after {len(r.steps)} steps ({exact}):{highlighted(r.normal_form)}{self._check()}"
        return f"<span style='color:#b00'>Not flattenable: {html.escape(r.reason)}</span> (runs nested)"

    def _check(self) -> str:
        """Both forms on ``events``: the query's matches and the normal form's, the same or not."""
        if self.events is None:
            return ""
        nested = cepkit.match(self.query, self.events, engine="reference")
        flat = cepkit.match(self.rewriting.result, self.events, engine="reference")
        verdict = "the same matches" if nested == flat else "<b style='color:#b00'>different matches</b>"
        return (
            f"<br>On {len(self.events)} events: the query {len(nested)} matches, the normal form "
            f"{len(flat)}: {verdict}."
        )

    def _show(self) -> None:
        r, k = self.rewriting, self.step
        self.previous.disabled, self.next.disabled = k == 0, k == len(r.steps)
        if k == 0:
            self.rule.value = f"<b>0/{len(r.steps)} start</b>"
            self.before.value = highlighted(r.start)
            self.after.value = ""
            return
        step = r.steps[k - 1]
        exact = "" if step.exact else " — <b>not exact under WITHIN</b>"
        what = RULE_TEXT.get(step.rule)
        self.rule.value = f"<b>{k}/{len(r.steps)} {step.rule}</b>" + (f": {html.escape(what)}" if what else "")
        self.before.value = highlighted(step.before, step.span, OLD_COLOUR)
        self.after.value = (
            f"→ {highlighted(step.after, step.span_after, NEW_COLOUR)}<small>α = {step.nesting}{exact}</small>"
        )

    def __repr__(self):
        r = self.rewriting
        return f"RewriteView(steps={len(r.steps)}, step={self.step}/{len(r.steps)}, normal={r.normal})"
