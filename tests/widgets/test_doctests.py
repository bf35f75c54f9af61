"""The widget modules' docstring examples run (widgets/ is outside pytest's --doctest-modules paths).

The modules are found by looking for examples in their source, so a module that gains examples is checked
without editing this list, and each test asserts that examples actually ran.
"""

import doctest
import importlib
from pathlib import Path

import pytest

WIDGETS = Path(__file__).resolve().parents[2] / "widgets"
MODULES = sorted(p.stem for p in WIDGETS.glob("*.py") if ">>> " in p.read_text(encoding="utf-8"))


def test_the_widget_modules_with_examples_are_found():
    assert {"execution", "graph_layout", "timeline", "workbench", "rewrite_view"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"cepkit.widgets.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
