# Memory Governance Console: `make demo` runs it with demo data, `make test` runs every test.
SHELL := /bin/bash
# Django 6 needs Python >= 3.12: take the first interpreter that is new enough.
PYTHON ?= $(shell for c in python3.12 python3.13 python3 $$HOME/.pyenv/versions/3.12*/bin/python3.12 $$HOME/.pyenv/versions/3.13*/bin/python3.13; do \
	if $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then echo $$c; break; fi; done)
VENV ?= .venv
BIN := $(VENV)/bin
TEST_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/test

.PHONY: demo demo-reset test test-sqlite test-postgres lint venv clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt
	@if [ -z "$(PYTHON)" ]; then echo "Python >= 3.12 is required (Django 6). Install it or run make PYTHON=/path/to/python3.12" >&2; exit 1; fi
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

demo: venv
	PATH="$(CURDIR)/$(BIN):$$PATH" scripts/demo.sh

# The demo keeps its database and S3 data in .demo/ between runs; this starts over.
demo-reset:
	rm -rf .demo

# Python by ruff, templates by djLint (settings in pyproject.toml); --check fails on what a reformat would change.
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/djlint templates --check
	$(BIN)/djlint templates --lint

test-sqlite: venv
	$(BIN)/python -m pytest

test-postgres: venv
	DATABASE_URL=$(TEST_POSTGRES_URL) $(BIN)/python -m pytest

# Both runs side by side (scripts/test.sh): they share nothing and mostly wait on I/O.
test: lint
	TEST_POSTGRES_URL=$(TEST_POSTGRES_URL) PYTHON_BIN=$(BIN)/python scripts/test.sh

clean:
	rm -rf $(VENV) .demo staticfiles
