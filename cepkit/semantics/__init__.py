"""The reference evaluator: the executable meaning of the whole cepkit language (``evaluate``), registered
as engine ``reference``. See ``cepkit.semantics.evaluate`` for the pipeline."""
from . import engine  # noqa: F401  (registers "reference")
from .evaluate import Evaluation, evaluate

__all__ = ["Evaluation", "evaluate"]
