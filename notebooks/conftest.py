"""nbval under pytest-xdist: a notebook's cells share one kernel, so they must run on one worker.

``make test`` runs ``pytest -n 2 --dist loadgroup``, which would deal a notebook's cells out to both
workers, each starting its own kernel and running only some cells (``NameError`` on the rest). Marking
every cell with an ``xdist_group`` named after its notebook keeps each notebook whole, in order, on one
worker; different notebooks still run in parallel.
"""

import pytest
from nbval.plugin import IPyNbCell


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(items):
    for item in items:
        if isinstance(item, IPyNbCell):
            item.add_marker(pytest.mark.xdist_group(f"notebook-{item.path.stem}"))
