# research-gateway: `make run` sets up and serves; `make check` is what CI runs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Two stamps: `make run` installs what the service runs on; the checks add the dev tools.
# Both install exact versions, hashes checked, from the lock files `make lock` writes from
# pyproject.toml; the project itself goes on top, editable, adding nothing.
RUNTIME := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed-dev
LOCK := requirements.lock
DEV_LOCK := requirements-dev.lock
COMPILE := $(PY) -m piptools compile -q --generate-hashes --no-emit-index-url \
	--no-emit-find-links --strip-extras --allow-unsafe

.PHONY: install install-runtime fmt lint typecheck test check run bench bench-quick snapshot clean mutation lock

$(VENV)/bin/pip:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The modules gateway/native.py lists are compiled by the install (setup.py): an edit to
# one compiles them again at the next make (until then they all run from source).
NATIVE := setup.py gateway/native.py $(shell $(PYTHON) gateway/native.py)

$(RUNTIME): pyproject.toml $(LOCK) $(NATIVE) | $(VENV)/bin/pip
	$(PY) -m pip install -q --require-hashes -r $(LOCK)
	$(PY) -m pip install -q --no-deps -e .
	touch $(RUNTIME)

$(STAMP): pyproject.toml $(DEV_LOCK) $(NATIVE) | $(VENV)/bin/pip
	$(PY) -m pip install -q --require-hashes -r $(DEV_LOCK)
	$(PY) -m pip install -q --no-deps -e .
	touch $(RUNTIME) $(STAMP)

# Refresh both lock files from pyproject.toml (newest versions its ranges allow).
lock: | $(VENV)/bin/pip
	$(PY) -m pip install -q pip-tools
	$(COMPILE) -o $(LOCK) pyproject.toml
	$(COMPILE) --extra dev -o $(DEV_LOCK) pyproject.toml

install-runtime: $(RUNTIME)

install: $(STAMP)

fmt: install
	$(PY) -m ruff format gateway demo_model tools tests bench
	$(PY) -m ruff check --fix gateway demo_model tools tests bench

lint: install
	$(PY) -m ruff format --check gateway demo_model tools tests bench setup.py
	$(PY) -m ruff check gateway demo_model tools tests bench setup.py

typecheck: install
	$(PY) -m mypy gateway demo_model tools tests bench setup.py

test: install
	$(PY) -m pytest -q

check: lint typecheck test

run: install-runtime
	$(PY) -m gateway

bench: install
	$(PY) -m bench

bench-quick: install
	$(PY) -m bench --quick

# Not in CI (minutes): mutants of the filing rule (tools/sec/facts.py, frames.py), of a batch
# result's translation and failures, of code execution's files, of the model call's HTTP/1.1
# client and of the tool loop, and the tests that must catch them (tests/tools/MUTATION.md);
# mutmut keeps its copy and results under mutants/.
mutation: install
	rm -rf mutants
	$(VENV)/bin/mutmut run --max-children 2
	$(VENV)/bin/mutmut results

snapshot: install-runtime
	$(PY) -m tools.sec.build_snapshot

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build
	rm -f *.so gateway/figures/*.so gateway/figures/_built_from.json
