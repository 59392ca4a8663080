# invokit — the two commands a newcomer runs: `make serve` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps, so each says what is really installed: serving needs only the package with its
# `cli` and `mcp` extras (and bubblewrap for the shell's sandbox); the tests need everything.
# A full install satisfies serving; a serving-only install never satisfies the tests.
STAMP := $(VENV)/.installed
SERVE_STAMP := $(VENV)/.installed-serve
DEBIAN_PACKAGES := bubblewrap ripgrep tmux postgresql libseccomp2 chromium
SERVE_DEBIAN_PACKAGES := bubblewrap

.PHONY: test serve lint typecheck pytest system-deps serve-deps install install-serve bench soak clean

test: install lint typecheck pytest

# make serve PORT=N serves on port N (empty: invokit.toml's [serve] port, else 8765). Set only
# on make's command line: a PORT in the environment (other tools use that name) is not taken.
PORT =

serve: install-serve
	$(BIN)/invokit serve --http --root . $(if $(PORT),--port $(PORT))

install: system-deps $(STAMP)

install-serve: serve-deps $(SERVE_STAMP)

$(STAMP): pyproject.toml
	@bash scripts/make-venv.sh $(PYTHON) $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	@touch $(STAMP) $(SERVE_STAMP)

$(SERVE_STAMP): pyproject.toml
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then touch $(SERVE_STAMP); else \
	  bash scripts/make-venv.sh $(PYTHON) $(VENV) && \
	  $(BIN)/python -m pip install --quiet -e ".[cli,mcp]" && touch $(SERVE_STAMP); fi

system-deps:
	@bash scripts/system-deps.sh $(DEBIAN_PACKAGES)

serve-deps:
	@bash scripts/system-deps.sh $(SERVE_DEBIAN_PACKAGES)

lint:
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck:
	$(BIN)/mypy --strict src tests

# The suite on two worker processes (pytest-xdist), a test module to a worker (its module
# fixtures are made once, its tests share them in order): most tests wait on subprocesses,
# servers and databases, so two workers keep both cores busy. PYTEST_PARALLEL= runs it serially.
PYTEST_PARALLEL ?= -n 2 --dist loadfile
export PYTEST_PARALLEL

pytest:
	$(BIN)/pytest $(PYTEST_PARALLEL)

bench: install
	$(BIN)/python benchmarks/run_all.py

# The suite RUNS times under the load of a second full run, once shuffled, both with make
# test's PYTEST_PARALLEL, then CALLS random calls through the executor on one worker process a
# core (see CONTRIBUTING.md). About an hour and a half, both cores: not on a shared box.
RUNS ?= 5
CALLS ?= 1000000
soak: install
	bash scripts/soak.sh $(RUNS) $(CALLS)

clean:
	rm -rf $(VENV) build dist .mypy_cache .ruff_cache .pytest_cache
