"""The built-in engines. Importing this package registers every engine module found in it, plus the
reference evaluator (``cepkit.semantics``); an engine is added by adding its module here."""
import importlib
import pkgutil

from .. import semantics  # noqa: F401  (registers "reference")

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
