"""Hypothesis profiles. ``make test`` (and so CI) runs the ``repeatable`` profile: each property test draws
the same random queries and streams on every run (seeded from the test's name), so a red CI is a
regression of the code, never a new random draw. ``make soak`` runs the ``explore`` profile: fresh draws
on every round, to find what the repeatable draws miss; a failure it prints is then pinned with
``@example`` or fixed."""

import os

from hypothesis import settings

settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))
