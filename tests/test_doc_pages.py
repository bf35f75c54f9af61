"""The Markdown pages a user reads (README.md, docs/, bench/, notebooks/): every code block is closed where
it should be, so prose never renders as code nor code as prose, and every example shown as a Python
session (``>>>``) stands in a code block; docs/explain.md's example runs as a doctest (README.md,
docs/language.md and docs/recipes.md are run by tests/test_packaging.py, tests/test_language_doc.py and
tests/test_recipes.py)."""

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([*ROOT.glob("*.md"), *ROOT.glob("docs/*.md"), *ROOT.glob("bench/*.md"), *ROOT.glob("notebooks/*.md")])
FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


def fence_problems(text: str) -> list:
    """Where the code blocks of a Markdown text go wrong (CommonMark: a closing fence has no info string)."""
    problems, opened = [], None  # opened: (fence, line) of the block we are in
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if opened is None:
            if fence:
                opened = (fence.group(1), number)
            elif line.lstrip().startswith(">>> "):
                problems.append(f"line {number}: a `>>>` example outside a code block")
        elif fence and fence.group(1).startswith(opened[0]) and not fence.group(2).strip():
            opened = None
        elif fence:
            problems.append(f"line {number}: a fence that opens a block inside the block opened at line {opened[1]}")
    if opened is not None:
        problems.append(f"the block opened at line {opened[1]} is never closed")
    return problems


def test_the_checker_finds_a_block_left_open():
    assert fence_problems("```python\n>>> 1\n1\n\nprose\n\n```python\n>>> 2\n2\n```\n") == [
        "line 7: a fence that opens a block inside the block opened at line 1"
    ]
    assert fence_problems(">>> 1\n```\nx\n") == [
        "line 1: a `>>>` example outside a code block",
        "the block opened at line 2 is never closed",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_code_blocks_are_closed(page):
    assert fence_problems(page.read_text(encoding="utf-8")) == []


def test_the_explain_page_example_runs():
    result = doctest.testfile(
        str(ROOT / "docs" / "explain.md"), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted >= 3 and result.failed == 0, result


def test_the_notebooks_are_committed_without_outputs_as_their_readme_says():
    """notebooks/README.md: no stored outputs, but notebook 07's, which it names."""
    import json

    readme = (ROOT / "notebooks" / "README.md").read_text(encoding="utf-8")
    with_outputs = sorted(
        path.name
        for path in (ROOT / "notebooks").glob("*.ipynb")
        if any(cell.get("outputs") for cell in json.loads(path.read_text(encoding="utf-8"))["cells"])
    )
    assert all(f"`{name}`, which keeps" in readme for name in with_outputs), with_outputs
