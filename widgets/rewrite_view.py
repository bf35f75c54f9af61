"""``RewriteView``: a query's NEEL rewriting to normal form, one rule per step (digest 000b §3, §9 item 3).

Step 0 shows the query with every condition at its place (the scoped query the rules start from); step k
shows the k-th rule applied: its name, the query before with the rewritten part highlighted, the query
after with the new part highlighted, the nesting measure α after the step, and whether the step keeps
every match. A slider and Previous / Next buttons move through the steps; the direction toggle chooses how
negated sequences unroll (NPDR2, first instance, or NPDR1, last instance: no confluence, digest §3.5). The
summary line gives the normal form, or why the query is not flattenable; given ``events``, it also runs the
query and its normal form on them (the side-by-side check of digest §9 item 3). The widget only calls
``cepkit.rewrite`` and ``cepkit.match``.
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import traitlets

import cepkit

from .execution import as_stream

DIRECTIONS = (("NPDR2: first instance", "left"), ("NPDR1: last instance", "right"))
MARK = "<mark style='background:{}'>{}</mark>"
OLD_COLOUR, NEW_COLOUR = "#ffd6d6", "#d6f5d6"


def highlighted(text: str, span: tuple, colour: str) -> str:
    """HTML of ``text`` with the characters ``span`` (start, end) marked."""
    start, end = span
    return (html.escape(text[:start]) + MARK.format(colour, html.escape(text[start:end]))
            + html.escape(text[end:]))


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
    '<b>1/2 NPDR5</b>'
    """

    step = traitlets.Int(0)

    def __init__(self, query, direction: str = "left", hierarchy=None, events=None):
        self.query = cepkit.parse(query, hierarchy)
        self.events = None if events is None else list(as_stream(events))
        self.direction = widgets.ToggleButtons(options=DIRECTIONS, value=direction, description="unroll")
        self.slider = widgets.IntSlider(value=0, min=0, max=0, description="step")
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
        super().__init__([self.direction, widgets.HBox([self.previous, self.slider, self.next]), self.rule,
                          self.before, self.after, self.summary])
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
            return (f"Normal form after {len(r.steps)} steps ({exact}):<br><code>"
                    f"{html.escape(r.normal_form)}</code>{self._check()}")
        return f"<span style='color:#b00'>Not flattenable: {html.escape(r.reason)}</span> (runs nested)"

    def _check(self) -> str:
        """Both forms on ``events``: the query's matches and the normal form's, the same or not."""
        if self.events is None:
            return ""
        nested = cepkit.match(self.query, self.events, engine="reference")
        flat = cepkit.match(self.rewriting.result, self.events, engine="reference")
        verdict = "the same matches" if nested == flat else "<b style='color:#b00'>different matches</b>"
        return (f"<br>On {len(self.events)} events: the query {len(nested)} matches, the normal form "
                f"{len(flat)}: {verdict}.")

    def _show(self) -> None:
        r, k = self.rewriting, self.step
        self.previous.disabled, self.next.disabled = k == 0, k == len(r.steps)
        if k == 0:
            self.rule.value = f"<b>0/{len(r.steps)} start</b>"
            self.before.value = f"<code>{html.escape(r.start)}</code>"
            self.after.value = ""
            return
        step = r.steps[k - 1]
        exact = "" if step.exact else " — <b>not exact under WITHIN</b>"
        self.rule.value = f"<b>{k}/{len(r.steps)} {step.rule}</b>"
        self.before.value = f"<code>{highlighted(step.before, step.span, OLD_COLOUR)}</code>"
        self.after.value = (f"→ <code>{highlighted(step.after, step.span_after, NEW_COLOUR)}</code>"
                            f"<br><small>α = {step.nesting}{exact}</small>")

    def __repr__(self):
        r = self.rewriting
        return f"RewriteView(steps={len(r.steps)}, step={self.step}/{len(r.steps)}, normal={r.normal})"
