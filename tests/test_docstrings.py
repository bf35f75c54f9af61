"""The public API's docstrings are numpydoc (CONTRIBUTING.md, Style): numpydoc's own validator finds no
missing or stray parameter, no missing Returns or Examples, no section out of order; the functions that
raise on bad input say what in a Raises section. Their examples run as doctests (``make test`` collects
``cepkit/`` with ``--doctest-modules``)."""

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

# the calls a user makes (README, docs/language.md), by the name numpydoc imports them from
PUBLIC = [
    "cepkit.match",
    "cepkit.check",
    "cepkit.type_warnings",
    "cepkit.lang.query.parse",
    "cepkit.lang.printer.pretty",
    "cepkit.engines.automaton.inspect.automaton",
    "cepkit.lang.rewrite.rewrite",
    "cepkit.runtime.columns.as_events",
    "cepkit.runtime.columns.from_frames",
    "cepkit.runtime.columns.from_wide",
    "cepkit.runtime.partial_matches.partial_matches",
    "cepkit.runtime.partial_matches.funnel",
    "cepkit.Matcher",
    "cepkit.Matcher.push",
    "cepkit.Matcher.extend",
    "cepkit.Matcher.pusher",
    "cepkit.Matcher.close",
    "cepkit.Matcher.result",
    "cepkit.Matches",
    "cepkit.Matches.positions",
    "cepkit.Matches.position_arrays",
    "cepkit.Matches.to_pandas",
    "cepkit.Matches.to_arrow",
    "cepkit.runtime.stream.Stream",
    "cepkit.runtime.stream.Stream.from_any",
    "cepkit.explain.judge.explain",
    "cepkit.why_not",
    "cepkit.spark.match",
    "cepkit.spark.match_stream",
    "cepkit.spark.supervisor.supervise",
    "cepkit.spark.session",
    "cepkit.match_recognize.sql",
]

# no docstring (GL08), a parameter undocumented (PR01), documented but not taken (PR02) or without a
# description (PR07), no Returns (RT01), no Examples (EX01), sections out of numpydoc's order (GL07)
ENFORCED = {"GL08", "PR01", "PR02", "PR07", "RT01", "EX01", "GL07"}

# what raises on a user's bad input says so
RAISING = {
    "cepkit.match",
    "cepkit.check",
    "cepkit.Matcher",
    "cepkit.Matcher.push",
    "cepkit.Matcher.extend",
    "cepkit.Matcher.pusher",
    "cepkit.Matcher.result",
    "cepkit.Matches.to_pandas",
    "cepkit.Matches.to_arrow",
    "cepkit.runtime.stream.Stream.from_any",
    "cepkit.explain.judge.explain",
    "cepkit.why_not",
    "cepkit.spark.match",
    "cepkit.spark.match_stream",
    "cepkit.spark.supervisor.supervise",
    "cepkit.match_recognize.sql",
}


@pytest.mark.parametrize("name", PUBLIC)
def test_public_docstrings_are_numpydoc(name):
    found = numpydoc_validate.validate(name)
    errors = [f"{code}: {message}" for code, message in found["errors"] if code in ENFORCED]
    assert errors == [], f"{name}: " + "; ".join(errors)
    if name in RAISING:
        assert "\n    Raises\n    ------\n" in found["docstring"] or "\nRaises\n------\n" in found["docstring"], (
            f"{name}: no Raises section"
        )


def test_the_list_covers_the_top_level_functions():
    """A new function in ``cepkit.__all__`` joins ``PUBLIC`` (or is a class or module listed here)."""
    import inspect

    import cepkit

    listed = {name.rsplit(".", 1)[1] for name in PUBLIC}
    functions = {name for name in cepkit.__all__ if inspect.isfunction(getattr(cepkit, name))}
    assert functions <= listed
