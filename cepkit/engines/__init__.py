"""The built-in engines, one module or sub-package each, registered by name in
``cepkit.runtime.registry.BUILTIN_ENGINES`` and imported when first asked for (``cepkit.semantics.engine``
is the reference evaluator's); a new engine is a module here that calls ``register`` and a line in that
table.

The package is also the public function ``cepkit.engines()`` (the capability matrix): calling the module
calls ``cepkit.runtime.registry.engines``. One name, no shadowing between the package and the function,
so both ``cepkit.engines()`` and ``import cepkit.engines.automaton`` work.
"""

import sys
import types

from ..runtime.registry import engines as _capability_matrix


class _CallablePackage(types.ModuleType):
    def __call__(self):
        return _capability_matrix()

    __call__.__doc__ = _capability_matrix.__doc__


sys.modules[__name__].__class__ = _CallablePackage
