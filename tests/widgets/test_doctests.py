"""The widget modules' docstring examples run (widgets/ is outside pytest's --doctest-modules paths)."""
import doctest
import importlib

import pytest

MODULES = ["execution", "graph_layout", "timeline", "automaton_view", "strategy_compare", "workbench"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"cepkit.widgets.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
