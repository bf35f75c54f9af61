"""cepkit.recipes: each recipe finds exactly the cases its stream plants, and every engine able to run its
query gives the reference evaluator's matches on it (docs/recipes.md, notebooks/11-recipes.ipynb)."""

import functools

import pytest

import cepkit
import cepkit.recipes
from cepkit.recipes import RECIPES
from cepkit.runtime.registry import registered
from cepkit.runtime.selection import select_engine


@functools.cache
def reference(name):
    recipe = RECIPES[name]
    return cepkit.match(recipe.query, recipe.events(), engine="reference")


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_the_reference_finds_exactly_the_planted_cases(name):
    recipe = RECIPES[name]
    found = reference(name)
    assert len(found) >= len(recipe.planted) >= 2
    assert recipe.keys_found(found) == set(recipe.planted)
    assert recipe.finds.endswith(".") and recipe.title


ENGINE_RUNS = [
    pytest.param(name, engine.name, id=f"{name}-{engine.name}")
    for name in sorted(RECIPES)
    for engine in registered()
    if engine.name != "reference"
]


@pytest.mark.parametrize("name, engine", ENGINE_RUNS)
def test_every_engine_that_runs_a_recipe_gives_the_references_matches(name, engine):
    recipe = RECIPES[name]
    try:
        select_engine(cepkit.parse(recipe.query), engine, {})
    except cepkit.QueryError:
        return  # this engine lacks a feature of the query (the conformance suite checks the refusal)
    got = recipe.run(engine=engine)
    assert [m.key for m in got] == [m.key for m in reference(name)]


def test_each_recipe_runs_on_some_engine_besides_the_reference():
    for recipe in RECIPES.values():
        assert recipe.run().engine != "reference", recipe.name


def test_the_streams_are_the_same_every_time_and_in_order():
    for recipe in RECIPES.values():
        first, second = recipe.events(), recipe.events()
        assert first.equals(second) and first["ts"].is_monotonic_increasing, recipe.name


def test_gallery_and_get():
    table = cepkit.recipes.gallery()
    assert list(table["name"]) == list(RECIPES) and len(table) >= 8
    assert (table["events"] > 0).all()
    with pytest.raises(KeyError, match="no recipe 'nope': the recipes are fraud, abandoned_cart"):
        cepkit.recipes.get("nope")


def test_docs_recipes_md_runs_and_shows_every_recipe():
    import doctest
    from pathlib import Path

    page = Path(__file__).parents[1] / "docs" / "recipes.md"
    result = doctest.testfile(str(page), module_relative=False)
    assert result.failed == 0 and result.attempted >= 4
    text = page.read_text()
    for recipe in RECIPES.values():
        assert recipe.query in text and recipe.finds in text, recipe.name


def test_a_misspelt_recipe_or_option_gets_the_closest_name():
    """``get("Fraud")`` listed the recipes without the closest; ``dissorder=`` listed the options without
    ``disorder`` itself."""
    with pytest.raises(KeyError, match="did you mean 'fraud'"):
        cepkit.recipes.get("Fraud")
    events = [{"type": "A", "ts": 1}, {"type": "B", "ts": 2}]
    with pytest.raises(TypeError, match=r"it takes: disorder, .*; did you mean 'disorder'\?"):
        cepkit.match("SEQ(A a, B b)", events, engine="automaton", dissorder="kslack")
