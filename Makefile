# research-gateway: `make run` sets up and serves; `make check` is what CI runs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Two stamps: `make run` installs what the service runs on; the checks add the dev tools.
RUNTIME := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed-dev

.PHONY: install install-runtime fmt lint typecheck test check run bench bench-quick snapshot clean mutation

$(VENV)/bin/pip:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(RUNTIME): pyproject.toml | $(VENV)/bin/pip
	$(PY) -m pip install -q -e .
	touch $(RUNTIME)

$(STAMP): pyproject.toml | $(VENV)/bin/pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(RUNTIME) $(STAMP)

install-runtime: $(RUNTIME)

install: $(STAMP)

fmt: install
	$(PY) -m ruff format gateway demo_model tools tests bench
	$(PY) -m ruff check --fix gateway demo_model tools tests bench

lint: install
	$(PY) -m ruff format --check gateway demo_model tools tests bench
	$(PY) -m ruff check gateway demo_model tools tests bench

typecheck: install
	$(PY) -m mypy gateway demo_model tools tests bench

test: install
	$(PY) -m pytest -q

check: lint typecheck test

run: install-runtime
	$(PY) -m gateway

bench: install
	$(PY) -m bench

bench-quick: install
	$(PY) -m bench --quick

# Not in CI (minutes): mutants of the filing rule (tools/sec/facts.py, frames.py) and the
# tests that must catch them; mutmut keeps its copy and results under mutants/.
mutation: install
	rm -rf mutants
	$(VENV)/bin/mutmut run --max-children 2
	$(VENV)/bin/mutmut results

snapshot: install-runtime
	$(PY) -m tools.sec.build_snapshot

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
