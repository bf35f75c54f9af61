"""The import graph of cepkit (docs/architecture.md): no cycle, and every module imports on its own.

A cycle held together by import order breaks as soon as someone adds an import at the top of a module
(the other side is then half initialised); the built-in engines are therefore named in the registry's
table and imported by name (``cepkit.runtime.registry.BUILTIN_ENGINES``), never imported by the registry.
"""

import ast
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"cepkit": ROOT / "cepkit", "cepkit.widgets": ROOT / "widgets"}


def modules() -> dict:
    """Dotted name -> source file of every module of cepkit (the widgets are ``cepkit.widgets``)."""
    found = {}
    for package, base in PACKAGES.items():
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def _imported(tree: ast.Module, name: str, is_package: bool, module_level: bool):
    """(module, attribute or None) of each import statement: those run when the module is imported
    (``module_level``), or every one, function bodies included; never those under ``if TYPE_CHECKING``."""

    def statements(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield node
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    yield from statements(getattr(node, field, []))
                for handler in getattr(node, "handlers", []):
                    yield from statements(handler.body)

    def everywhere(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            yield from everywhere(child)

    nodes = statements(tree.body) if module_level else everywhere(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                yield module, alias.name
        else:
            for alias in node.names:
                yield node.module, alias.name


def import_graph(module_level: bool = True) -> nx.DiGraph:
    """Module -> the cepkit modules importing it runs: each one it names and, implicitly, their parent
    packages (``import a.b.c`` runs ``a`` and ``a.b`` first), but not its own parents (already running)."""
    found = modules()
    graph = nx.DiGraph()
    for name, path in found.items():
        graph.add_node(name)
        for module, attr in _imported(ast.parse(path.read_text()), name, path.name == "__init__.py", module_level):
            target = f"{module}.{attr}" if attr and f"{module}.{attr}" in found else module
            if target not in found or target == name:
                continue
            graph.add_edge(name, target)
            parts = target.split(".")
            for k in range(1, len(parts)):
                parent = ".".join(parts[:k])
                if parent in found and not (name == parent or name.startswith(parent + ".")):
                    graph.add_edge(name, parent)
    return graph


def described(cycle: list) -> str:
    return " -> ".join(cycle + cycle[:1])


def test_the_graph_sees_relative_imports_and_parent_packages():
    graph = import_graph()
    assert graph.has_edge("cepkit.runtime.stream", "cepkit.runtime.event_record")
    assert graph.has_edge("cepkit.semantics.engine", "cepkit.runtime.registry")
    assert graph.has_edge("cepkit.semantics.engine", "cepkit.runtime")  # the parent package runs too
    assert not graph.has_edge("cepkit.runtime.stream", "cepkit.runtime")  # its own package: running
    assert graph.has_edge("cepkit.widgets.workbench", "cepkit")


def test_no_import_cycle_at_module_level():
    cycles = list(nx.simple_cycles(import_graph(module_level=True)))
    assert not cycles, "import cycles: " + "; ".join(described(c) for c in cycles[:5])


def test_no_import_cycle_through_imports_inside_functions_either():
    """A lazy import breaks a cycle only until someone moves it to the top: none is allowed."""
    cycles = list(nx.simple_cycles(import_graph(module_level=False)))
    assert not cycles, "import cycles: " + "; ".join(described(c) for c in cycles[:5])


def test_no_cycle_between_rooms():
    """Rooms (cepkit's sub-packages, each engine its own) depend on each other one way only: the
    runtime never on the reference evaluator, the registry never on an engine."""

    def room(name: str) -> str:
        parts = name.split(".")
        return ".".join(parts[:3] if parts[1:2] == ["engines"] else parts[:2])

    rooms = nx.DiGraph()
    for a, b in import_graph(module_level=False).edges():
        if b != "cepkit" and room(a) != room(b) and not room(a).startswith(room(b) + "."):
            rooms.add_edge(room(a), room(b))
    cycles = list(nx.simple_cycles(rooms))
    assert not cycles, "rooms in a cycle: " + "; ".join(described(c) for c in cycles[:5])


def test_an_engine_never_imports_another_engine():
    """Engines share code through the modules beside them (``engines/unary.py``, ``conjuncts.py``,
    ``compiled.py``, ``kept.py``, ``result_size.py``), never through another engine's internals (docs/architecture.md)."""
    shared = {
        "cepkit.engines.unary",
        "cepkit.engines.conjuncts",
        "cepkit.engines.compiled",
        "cepkit.engines.kept",
        "cepkit.engines.result_size",
        "cepkit.engines",
    }

    def engine(name: str) -> Optional[str]:
        parts = name.split(".")
        room = ".".join(parts[:3])
        return room if parts[1:2] == ["engines"] and len(parts) > 2 and room not in shared else None

    crossing = sorted(
        (a, b)
        for a, b in import_graph(module_level=False).edges()
        if engine(a) and engine(b) and engine(a) != engine(b)
    )
    assert not crossing, "an engine importing another: " + "; ".join(f"{a} -> {b}" for a, b in crossing[:5])


ALONE = textwrap.dedent("""
    import importlib, pkgutil, sys
    import cepkit, cepkit.widgets
    names = [m.name for m in pkgutil.walk_packages(cepkit.__path__, "cepkit.") if m.name != "cepkit.__main__"]
    names += ["cepkit.widgets"] + [m.name for m in pkgutil.walk_packages(cepkit.widgets.__path__, "cepkit.widgets.")]
    print(len(names))
    def alone(name):
        for loaded in [m for m in sys.modules if m == "cepkit" or m.startswith("cepkit.")]:
            del sys.modules[loaded]
        importlib.import_module(name)
        return {m for m in sys.modules if m.startswith("cepkit.")}
    loaded_with = {"cepkit": alone("cepkit")}     # package -> the modules importing it alone loads
    for name in names:
        parent = name.rpartition(".")[0]
        if name in loaded_with[parent]:     # importing it first imports its parent first, which loads it
            loaded_with[name] = loaded_with[parent]
            continue
        try:
            loaded_with[name] = alone(name)
        except Exception as err:
            loaded_with[name] = set()
            print(f"{name}: {type(err).__name__}: {err}")
""")


def test_every_module_imports_alone():
    """Each module imported first in a fresh interpreter (one interpreter that forgets cepkit's modules
    between imports: the libraries stay loaded, which keeps it fast). Importing ``a.b.c`` first imports
    ``a`` and ``a.b`` first: a module that importing its package alone loads is covered by that import."""
    done = subprocess.run([sys.executable, "-c", ALONE], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    count, *failures = done.stdout.splitlines()
    assert int(count) == len(set(modules()) - {"cepkit", "cepkit.__main__"})
    assert not failures, "\n".join(failures)
