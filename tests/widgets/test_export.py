"""The Workbench's templates (recipes), "copy as code", standalone HTML report and figure files."""

import pandas as pd
import pytest

import cepkit
from cepkit.recipes import get
from cepkit.widgets import Workbench
from cepkit.widgets import export


def test_a_template_fills_the_editor_and_runs():
    fraud = get("fraud")
    wb = Workbench(fraud.events())
    assert wb.run_button.disabled  # an empty editor
    wb.template_picker.value = "fraud"
    assert wb.editor.value == fraud.query and not wb.run_button.disabled
    wb.run()
    assert [m.key for m in wb.matches] == [m.key for m in cepkit.match(fraud.query, fraud.events(), engine="reference")]
    assert Workbench.from_recipe("brute_force").editor.value == get("brute_force").query


def test_the_code_reproduces_the_run():
    fraud = get("fraud")
    wb = Workbench(fraud.events(), query=fraud.query, engine="stack", strategy="STNM")
    wb.run()
    scope = {"events": fraud.events()}
    exec(wb.code(), scope)  # the test runs the generated code; cepkit itself never execs anything
    assert [m.key for m in scope["matches"]] == [m.key for m in wb.matches]
    assert "strategy='STNM'" in wb.code() and "engine='stack'" in wb.code()


def test_the_report_holds_the_query_every_match_and_the_figures(tmp_path):
    cart = get("abandoned_cart")
    wb = Workbench(cart.events(), query=cart.query)
    assert "Not run yet" in export.report_html(wb)
    wb.run()
    wb.to_html(tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert "SEQ(AddToCart a, !Checkout c)" in page and f"{len(wb.matches):,} matches by engine" in page
    table = page[page.index('class="dataframe results"') :]
    table = table[: table.index("</table>")]
    assert table.count("<tr") == len(wb.matches) + 1  # a header row, then every match
    assert page.count("Plotly.newPlot") == 2  # the timeline and the funnel; the stack query has no automaton
    assert "<h2>Funnel</h2>" in page and "<h2>Automaton</h2><pre class='note'>" in page


def test_a_long_result_is_cut_with_a_note(monkeypatch):
    monkeypatch.setattr(export, "REPORT_ROWS", 2)
    wb = Workbench.from_recipe("sensor_spike")
    wb.run()
    page = export.report_html(wb)
    assert f"The first 2 of {len(wb.matches):,} matches" in page


def test_each_figure_is_written_as_svg_and_png(tmp_path):
    wb = Workbench.from_recipe("fraud")
    with pytest.raises(ValueError, match="before a run"):
        wb.save_figures(tmp_path)
    wb.run()
    paths = wb.save_figures(tmp_path / "slides")
    assert [p.name for p in paths] == ["timeline.svg", "automaton.svg", "funnel.svg"]
    texts = [p.read_text() for p in paths]
    assert all(t.lstrip().startswith("<svg") and "</svg>" in t for t in texts)
    for step in ("Purchase", "small", "large"):  # each drawing holds what it draws
        assert step in texts[2], step
    assert "Purchase" in texts[0] and "match #2" in texts[0] and "q3" in texts[1]  # lanes, matches, states
    funnel = cepkit.funnel(wb.last_query, wb.stream)
    assert f"{funnel['candidates'].iloc[0]:,}" in texts[2]
    [png] = export.save_figures([wb.timeline.plot], [tmp_path / "timeline.png"], scale=2)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(data[16:20], "big") == 2 * export.IMAGE_WIDTH  # the width, at scale 2
    with pytest.raises(ValueError, match="ending in .svg, .png, .pdf"):
        export.save_figure(wb.timeline.figure, tmp_path / "timeline.jpeg")


def test_the_code_names_the_users_variable_and_columns():
    clicks = pd.DataFrame({"event": ["view", "buy"], "when": ["2024-05-01 10:00", "2024-05-01 10:02"], "user": [7, 7]})
    query = "view v ; buy b WITHIN 5 min PARTITION BY user"
    wb = Workbench(clicks, query=query, type="event", ts="when", name="clicks")
    wb.run()
    code = wb.code()
    assert "cepkit.match(QUERY, clicks, engine='auto', type='event', ts='when')" in code
    scope = {"clicks": clicks}
    exec(code, scope)
    assert scope["matches"].positions() == wb.matches.positions() == [(0, 1)]
    # without a name the code says what `events` stands for; a recipe's code reads the recipe's events
    assert (
        '# events: the events given to the Workbench (Workbench(..., name="df")'
        in Workbench(clicks, type="event").code()
    )
    scope = {}
    fraud = Workbench.from_recipe("fraud")
    fraud.run()
    exec(fraud.code(), scope)
    assert [m.key for m in scope["matches"]] == [m.key for m in fraud.matches]


def test_the_results_are_labelled_with_the_users_column_names():
    clicks = pd.DataFrame(
        {"event": ["view", "buy"], "when": ["2024-05-01 10:00", "2024-05-01 10:02"], "amount": [1, 2]}
    )
    wb = Workbench(clicks, query="view v ; buy b WITHIN 5 min", type="event", ts="when")
    wb.run()
    wb.results.fields = ["amount"]
    columns = wb.results_frame().columns.tolist()
    assert {"v.event", "v.when", "b.event", "b.when", "b.amount"} <= set(columns) and "v.ts" not in columns
