"""``python -m cepkit ...``: the same as the ``cepkit`` command."""

from .cli import main

raise SystemExit(main())
