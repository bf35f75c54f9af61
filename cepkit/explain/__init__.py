"""Why is this a match, why is that not, and why did my pattern never fire (``cepkit.explain``,
``cepkit.why_not``): answers from the reference semantics, each reason pointing into the query text.

The package is callable, so ``cepkit.explain(query, events, candidate)`` is ``judge.explain`` (like
``cepkit.engines()``): the function and its package share the name the issue gives them.
"""

import sys
import types

from .judge import explain as _explain
from .near_misses import why_not
from .report import KINDS, Explanation, NearMisses, Reason

__all__ = ["why_not", "Explanation", "NearMisses", "Reason", "KINDS"]


class _CallablePackage(types.ModuleType):
    def __call__(
        self, query, events, candidate, strategy=None, hierarchy=None, tz=None, *, type=None, ts=None
    ) -> Explanation:
        return _explain(query, events, candidate, strategy, hierarchy, tz, type=type, ts=ts)

    __call__.__doc__ = _explain.__doc__


sys.modules[__name__].__class__ = _CallablePackage
