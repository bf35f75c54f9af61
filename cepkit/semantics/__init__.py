"""The reference evaluator: the executable meaning of the whole cepkit language (``evaluate``); engine
``reference`` (``cepkit.semantics.engine``, registered by name in ``cepkit.runtime.registry``). See
``cepkit.semantics.evaluate`` for the pipeline."""

from .evaluate import Evaluation, evaluate

__all__ = ["Evaluation", "evaluate"]
