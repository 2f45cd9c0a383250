# The two commands of the README: `make run` and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint typecheck layering unit e2e bench bench-e2e load soak clean lock

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/queue-extender serve --demo $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The import contracts in pyproject.toml ([tool.importlinter]): which room may import which.
layering: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest

# Only the end-to-end suite (real kube-apiserver, etcd, kube-scheduler; tests/e2e).
e2e: $(STAMP)
	$(BIN)/pytest -m e2e tests/e2e

test: lint typecheck layering unit

bench: $(STAMP)
	$(BIN)/python -m bench $(ARGS)

# 50 concurrent clients on filter/prioritize/preempt for 60 s at the reference scale
# (loopback only): errors, p50/p99 per verb, RSS before and after. ARGS=--help for knobs.
load: $(STAMP)
	$(BIN)/python -m bench.load $(ARGS)

# Not part of `make test`: 30 minutes of churn on the real control plane, and the fault
# tests with a 1,000-pod load. Prints the FIGURES lines the README quotes.
soak: $(STAMP)
	SOAK_SECONDS=1800 E2E_LONG=1 $(BIN)/pytest -s -p no:logging tests/e2e/test_soak.py \
	  tests/e2e/test_faults.py

# The image's runtime dependencies, pinned with every file's hash (the Dockerfile installs
# exactly this set). Run after changing [project].dependencies in pyproject.toml.
lock: $(STAMP)
	$(BIN)/uv pip compile pyproject.toml --generate-hashes --python-version 3.11 \
	  --python-platform linux --custom-compile-command "make lock" -o requirements.lock

# Throughput of the real kube-scheduler alone, with a no-op extender and with ours (minutes;
# ARGS=--quick for a smoke run). Not part of `make test`.
bench-e2e: $(STAMP)
	$(BIN)/python -m bench.e2e $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache
