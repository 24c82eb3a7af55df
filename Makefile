# Bootstrap-free entry points: every target creates the virtualenv it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-fast lint typecheck bench clean

# The runtime dependencies at the versions the images pin (deploy/images/requirements.lock): tested as shipped.
$(STAMP): pyproject.toml deploy/images/requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]' -c deploy/images/requirements.lock
	touch $(STAMP)

# The simulator's comparison with its defaults (its run time: README, "Run time"); the HTML
# report lands in sim-out/
demo: $(STAMP)
	$(BIN)/loadwise sim --out sim-out

test: $(STAMP)
	$(BIN)/python -m pytest -q

# Everything but the tests marked slow (each takes more than about 5 s): the quick loop while editing.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/scheduler_throughput.py --quick
	$(BIN)/python benchmarks/agent_overhead.py
	$(BIN)/python benchmarks/sim_runtime.py
	$(BIN)/python benchmarks/sim_goal.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
