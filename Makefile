# Two commands for a fresh machine: `make demo` and `make test`. Every step is idempotent and
# cached under .cache/ (git-ignored), so the second run is quick.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .cache/venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: all demo test test-fast setup venv sglang trainers models system docker mypy-cache image crd metrics-doc bench clean lint format dist

all: test

# Every Python package of the set-up is installed by the project's pinned uv (scripts/uv.sh: the
# same pinned versions pip would take, fetched in parallel).
$(STAMP): pyproject.toml constraints.txt scripts/uv.sh
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	bash scripts/uv.sh pip install -q --python $(PY) -c constraints.txt -e '.[test,lint]'
	@touch $(STAMP)

venv: $(STAMP)

# A real SGLang server on the CPU, in its own environment (it pins its own torch).
sglang:
	bash scripts/setup_sglang.sh

# The drafter trainers (speculators 0.9, SpecForge 0.2) on the CPU, in their own environment, for
# the tests that run their data loaders over draftgen's exports (docs/export.md).
trainers:
	bash scripts/setup_trainers.sh

# Tiny random-weight models and tokenizers, built offline and deterministically.
models: sglang
	.cache/venv-sglang/bin/python scripts/build_test_models.py

# promtool (and a Prometheus server) from Debian's package, for alert-rule tests.
system:
	bash scripts/setup_system.sh

# Debian's Docker engine and a stand-in Python base image built from Debian's packages (cached as
# a tarball under .cache/docker-base), for the tests marked `image` (see docs/image.md).
docker:
	bash scripts/docker/setup.sh

# The draftgen image, tagged with the package version, built by whatever engine runs (else the
# project's own daemon under .cache/docker with the stand-in base). PYTHON_IMAGE=... picks a base.
image:
	PYTHON_IMAGE=$(PYTHON_IMAGE) bash scripts/docker/image.sh

# The parts are independent but for two orderings (the models are built with SGLang's
# environment; Debian's packages are installed one apt run at a time), so they run side by side:
# most of the time is downloads and debootstrap waiting on disk and network, not on the 2 cores.
docker: system
# mypy's cache (pyproject.toml: .cache/mypy), filled while the others wait on the network: the
# type check in `make test` then reads only what changed. Its findings are the test's to report.
mypy-cache: venv
	-$(VENV)/bin/mypy > /dev/null
# Three at a time. The order is the one measured fastest here (195-218 s from a fresh clone);
# starting system and docker first measured 230 s (the trainers' venv then ended last).
SETUP_PARTS := venv sglang models trainers system docker mypy-cache
setup:
	$(MAKE) --no-print-directory -j3 --output-sync=target $(SETUP_PARTS)

# Two pytest-xdist workers (TEST_WORKERS=0 runs in one process): most of a test's time is a
# subprocess, a server or Docker working, so a second worker uses the core the first leaves idle.
# Each worker starts its own CPU SGLang server; the image tests share one worker (tests/conftest.py).
TEST_WORKERS ?= 2
test: setup
	DRAFTGEN_TEST_STRICT=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# The tests that need neither SGLang nor promtool.
test-fast: venv
	$(PY) -m pytest -q -m "not sglang" $(PYTEST_ARGS)

demo: venv sglang models
	bash scripts/demo.sh

bench: setup
	bash bench/run_all.sh

# A wheel of draftgen for a laptop or a CI job (`pip install dist/draftgen-*.whl`: the CLI, the
# operator and the planner, without the test set-up; docs/install.md). DIST_PIP_ARGS=... adds pip
# options (tests/layout/test_dist.py builds offline with --no-build-isolation --no-index).
DIST ?= dist
dist: venv
	rm -rf $(DIST)
	$(PY) -m pip wheel -q --no-deps $(DIST_PIP_ARGS) --wheel-dir $(DIST) .
	@ls $(DIST)/*.whl

# Regenerate the CRD, the chart's values schema for generationJobs and docs/reference.md from the
# typed spec (a test fails when a committed copy differs).
crd: venv
	$(VENV)/bin/draftgen crd --write crds/generationjob.yaml charts/draftgen/crds/generationjob.yaml
	$(VENV)/bin/draftgen crd --values-schema charts/draftgen/values.schema.json
	$(VENV)/bin/draftgen explain --reference > docs/reference.md

# Regenerate docs/metrics.md's tables from draftgen/contract/metrics.py (a test checks them).
metrics-doc: venv
	$(VENV)/bin/python -m draftgen.contract.metrics_doc

# ruff (lint and format), mypy and the layer contracts (import-linter), configured in pyproject.toml;
# tests/layout/test_checks.py runs the same in `make test`, and .pre-commit-config.yaml before each
# commit.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

format: venv
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	-bash scripts/docker/engine.sh stop  # our daemon's mounts live under .cache/docker
	rm -rf .cache out
