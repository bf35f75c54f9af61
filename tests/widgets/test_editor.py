"""The query editor (``QueryEditor``, CodeMirror in the page): what the kernel gives it to complete and to
underline. The page's side (completion list, underline, colours) is checked in
tests/browser/test_templates_export.py."""

from cepkit.recipes import get
from cepkit.widgets import QueryEditor, Workbench
from cepkit import match_recognize
from cepkit.widgets.editor import COMPLETED_KEYWORDS
from cepkit.lang.parser import KEYWORDS


def test_completion_knows_the_streams_types_and_each_types_attributes():
    wb = Workbench([{"type": "Structure Fire", "ts": 1, "units": 3}, {"type": "Alarm", "ts": 2, "zone": "N"}])
    assert wb.editor.types == ["Alarm", "Structure Fire"]
    assert wb.editor.attributes == {"Alarm": ["ts", "zone"], "Structure Fire": ["ts", "units"]}
    assert {"pattern", "within", "partition", "seq"} <= set(wb.editor.keywords) == set(COMPLETED_KEYWORDS)
    assert set(COMPLETED_KEYWORDS) == (KEYWORDS - {"i"}) | {"match_recognize"}


def test_completion_offers_the_notation_the_editor_holds():
    wb = Workbench([{"type": "A", "ts": 1, "v": 3}], query="A a ; B b")
    assert "within" in wb.editor.keywords and "measures" not in wb.editor.keywords
    assert "match_recognize" in wb.editor.keywords  # the word that switches to the SQL notation
    wb.editor.value = "SELECT * FROM events MATCH_RECOGNIZE (ORDER BY ts PATTERN (A) DEFINE A AS v > 1)"
    assert wb.sql_notation
    assert {"measures", "define", "pattern", "prev", "classifier", "interval", "minute"} <= set(wb.editor.keywords)
    assert set(wb.editor.keywords) == match_recognize.KEYWORDS
    assert "consume" not in wb.editor.keywords  # cepkit's words are not offered in SQL text
    wb.editor.value = "A a ; B b"
    assert "within" in wb.editor.keywords and "measures" not in wb.editor.keywords


def test_a_parse_error_is_underlined_at_its_span_and_cleared_when_fixed():
    wb = Workbench(get("fraud").events())
    wb.editor.value = "Purchase p ; Purchase q WITHN 10 min"
    judged = wb.editor.diagnostics
    assert judged["text"] == wb.editor.value
    assert [(d["line"], d["column"], d["width"], d["severity"]) for d in judged["items"]] == [(1, 25, 5, "error")]
    assert "WITHIN" in judged["items"][0]["message"]
    wb.editor.value = "Purchase p\n;\nPurchase q WHERE q.amont > 3"
    [item] = wb.editor.diagnostics["items"]
    assert (item["line"], item["column"], item["width"]) == (3, 18, 7)  # q.amont, on the third line
    wb.editor.value = "Purchase p ; Purchase q WITHIN 10 min"
    assert wb.editor.diagnostics == {"text": wb.editor.value, "items": []}


def test_a_type_absent_from_the_stream_is_a_warning_at_the_type():
    wb = Workbench(get("fraud").events(), query="Purchse p ; Purchase q")
    [item] = wb.editor.diagnostics["items"]
    assert (item["column"], item["width"], item["severity"]) == (1, len("Purchse p"), "warning")  # the atom
    assert "did you mean 'Purchase'" in item["message"]


def test_copy_as_code_shows_the_code_and_says_whether_the_page_copied_it():
    wb = Workbench(get("fraud").events(), query=get("fraud").query)
    sent = []
    wb.editor.send = sent.append  # no page here: the message the page would get
    code = wb.show_code()
    assert sent == [{"event": "copy", "text": code}] and "cepkit.match(QUERY, events" in code
    assert "copying" in wb.code_box.value and "small.amount &lt; 5" in wb.code_box.value
    wb.editor._on_message(wb.editor, {"event": "copied", "ok": True}, [])
    assert "copied to the clipboard" in wb.code_box.value
    wb.editor._on_message(wb.editor, {"event": "copied", "ok": False}, [])
    assert "select the text and copy it" in wb.code_box.value
    wb.editor.value += " "
    assert wb.code_box.value == ""  # the code of an older text is not left on show


def test_the_editor_ships_its_script():
    editor = QueryEditor("A a")
    assert "EditorView" not in editor._esm[:200] and len(editor._esm) > 100_000  # the bundle, not a stub
    assert "cdn" not in editor._esm.lower() and "https://" not in editor._esm
