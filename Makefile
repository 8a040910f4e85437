# Memory Governance Console: `make demo` runs it with demo data, `make test` runs every test.
SHELL := /bin/bash
# Django 6 needs Python >= 3.12: take the first interpreter that is new enough.
PYTHON ?= $(shell for c in python3.12 python3.13 python3 $$HOME/.pyenv/versions/3.12*/bin/python3.12 $$HOME/.pyenv/versions/3.13*/bin/python3.13; do \
	if $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then echo $$c; break; fi; done)
VENV ?= .venv
BIN := $(VENV)/bin
TEST_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/test

.PHONY: demo demo-reset test test-fast test-sqlite test-postgres lint venv lock clean image

venv: $(VENV)/.installed

# The venv installs the dev lock: every package at its locked version, each file checked
# against its sha256. After a change to requirements*.txt, run make lock.
$(VENV)/.installed: requirements.lock requirements-dev.lock
	@if [ -z "$(PYTHON)" ]; then echo "Python >= 3.12 is required (Django 6). Install it or run make PYTHON=/path/to/python3.12" >&2; exit 1; fi
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.lock
	touch $@

# requirements.lock (runtime, for deployments) and requirements-dev.lock from requirements*.txt,
# with uv (in the dev venv): one resolution for every platform, Python 3.12 and later, with
# hashes. Locked versions that still fit are kept; make lock LOCK_FLAGS=--upgrade takes the
# newest releases. The runtime lock takes the dev lock's versions, so both name the same ones.
LOCK_FLAGS ?=
UV_COMPILE = UV_CUSTOM_COMPILE_COMMAND="make lock" $(BIN)/uv pip compile --quiet --generate-hashes \
	--universal --python-version 3.12 $(LOCK_FLAGS)

lock: venv
	$(UV_COMPILE) requirements-dev.txt -o requirements-dev.lock
	$(UV_COMPILE) requirements.txt -c requirements-dev.lock -o requirements.lock

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

# The inner loop: SQLite only, without the tests marked slow (make demo's script, axe-core on
# every page, the scale-out cluster). make test still runs everything.
test-fast: venv
	$(BIN)/python -m pytest -m "not slow"

# Both runs side by side (scripts/test.sh), and make lint beside them: they share nothing.
test: venv
	TEST_POSTGRES_URL=$(TEST_POSTGRES_URL) PYTHON_BIN=$(BIN)/python scripts/test.sh

# An OCI image from Debian's packages (debootstrap, cached in .image/) and the runtime lock,
# imported by podman: scripts/image.sh says how. Needs root, debootstrap and podman.
image:
	scripts/image.sh

clean:
	rm -rf $(VENV) .demo staticfiles .image
