"""docs/language.md: its examples run as doctests, and its table of engines is the one cepkit.engines() gives.

When a feature or an engine changes, regenerate the table: ``python tests/test_language_doc.py`` rewrites
the lines between the two markers of docs/language.md §11.
"""

import doctest
import sys
from pathlib import Path

import cepkit

DOC = Path(__file__).resolve().parent.parent / "docs" / "language.md"
BEGIN = "<!-- engines table: generated, do not edit by hand -->"
END = "<!-- end of engines table -->"


def engines_table() -> str:
    """The capability matrix of ``cepkit.engines()`` as a Markdown table: a row per feature, a column per
    engine in rank order, ✓ where the engine supports the feature."""
    matrix = cepkit.engines()
    features = [c for c in matrix.columns if c not in ("rank", "description")]
    engines = list(matrix.sort_values("rank").index)
    lines = ["| feature | " + " | ".join(f"`{e}`" for e in engines) + " |", "|---|" + "---|" * len(engines)]
    for feature in features:
        cells = ["✓" if bool(matrix.loc[e, feature]) else "" for e in engines]
        lines.append(f"| `{feature}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def documented_table(text: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip()


def test_the_examples_run_and_give_the_results_shown():
    result = doctest.testfile(
        str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 50 and result.failed == 0, result


def test_the_engines_table_is_current():
    assert documented_table(DOC.read_text(encoding="utf-8")) == engines_table(), (
        "docs/language.md §11 is out of date: run `python tests/test_language_doc.py` to regenerate it"
    )


def test_the_sections_keep_their_numbers():
    """The code cites "docs/language.md §N": sections 1-12 stay where they are; new ones follow them."""
    headings = [line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    numbers = [h.split(".")[0] for h in headings]
    assert len(numbers) >= 12 and numbers == [f"## {n}" for n in range(1, len(numbers) + 1)]


if __name__ == "__main__":  # regenerate the table in place
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + engines_table() + "\n" + text[end:], encoding="utf-8")
    sys.exit(0)
