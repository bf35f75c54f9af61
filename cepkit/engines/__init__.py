"""The built-in engines. Importing this package registers every engine module found in it, plus the
reference evaluator (``cepkit.semantics``); an engine is added by adding its module here.

The package is also the public function ``cepkit.engines()`` (the capability matrix): calling the module
calls ``cepkit.runtime.registry.engines``. One name, no shadowing between the package and the function,
so both ``cepkit.engines()`` and ``import cepkit.engines.automaton`` work.
"""
import importlib
import pkgutil
import sys
import types

from .. import semantics  # noqa: F401  (registers "reference")
from ..runtime.registry import engines as _capability_matrix


class _CallablePackage(types.ModuleType):
    def __call__(self):
        return _capability_matrix()

    __call__.__doc__ = _capability_matrix.__doc__


sys.modules[__name__].__class__ = _CallablePackage

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
