# Set-up and the two everyday commands. Everything installs into .venv on first use.
PYTHON ?= python3
# `make demo VENV=/path/to/venv` reuses an environment.
VENV ?= .venv
BIN := $(VENV)/bin
# torch is pinned here (a local CPU build installs quickly); the package itself only
# asks for a sane range in its optional `perf` extra.
TORCH_PIN := torch==2.13.0

.PHONY: setup demo demo-perf demo-refactor test bench signal clean

$(BIN)/rltrefactor: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_PIN)"
	$(BIN)/pip install --quiet -e ".[perf,test]"
	touch $@

setup: $(BIN)/rltrefactor

demo: setup
	RLTREFACTOR=$(abspath $(BIN)/rltrefactor) bash scripts/demo.sh examples/demo_prs/defects.patch || [ $$? -eq 1 ]

# The same PR with the perf hook: the demo's micro-checks run at base and head (CPU is fine).
demo-perf: setup
	RLTREFACTOR=$(abspath $(BIN)/rltrefactor) bash scripts/demo.sh examples/demo_prs/defects.patch --perf || [ $$? -eq 1 ]

demo-refactor: setup
	RLTREFACTOR=$(abspath $(BIN)/rltrefactor) bash scripts/demo.sh examples/demo_prs/refactor.patch

# The suite spreads over every core (pytest-xdist): on 2 cores about 4 minutes of pytest
# (8 with other work on the machine), after a type check of under a minute. A worker that
# runs out of tests takes some of another's queue (`worksteal`): the long perf-hook tests
# never leave one core idle at the end.
test: setup
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n auto --dist worksteal

bench: setup
	$(BIN)/python bench/run.py

signal: setup
	$(BIN)/python bench/review_signal.py --label after --write bench/SIGNAL.md

clean:
	rm -rf $(VENV) .pytest_cache build dist
