# invokit — the two commands a newcomer runs: `make serve` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEBIAN_PACKAGES := bubblewrap ripgrep tmux

.PHONY: test serve lint typecheck pytest system-deps install bench clean

test: install lint typecheck pytest

serve: install
	$(BIN)/invokit serve --http --root .

install: system-deps $(STAMP)

$(STAMP): pyproject.toml
	@bash scripts/make-venv.sh $(PYTHON) $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

system-deps:
	@bash scripts/system-deps.sh $(DEBIAN_PACKAGES)

lint:
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck:
	$(BIN)/mypy --strict src tests

pytest:
	$(BIN)/pytest

bench: install
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build dist .mypy_cache .ruff_cache .pytest_cache
