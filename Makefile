# The two commands of the README: `make run` and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# What running needs: the locked runtime set (requirements.lock, every hash checked) and the
# project itself. The development toolchain (.[dev]) comes on top, for `make test` and the
# other development targets only.
RUN_STAMP := $(VENV)/.runtime
STAMP     := $(VENV)/.installed

# The image (`make image`): an offline build from the wheelhouse, on BASE_IMAGE.
IMAGE      ?= kube-queue-extender:0.1.0
BASE_IMAGE ?= python:3.11-slim
DOCKER     ?= docker
WHEELS     := build/wheels
# Kept between runs on one machine (debootstrap's root file system, the built images' tarballs,
# the docker daemon's storage); `make clean` removes it. A fresh machine fills it.
REAL_NODE_CACHE := build/real-node

.PHONY: run test lint typecheck layering unit e2e real-node real-node-deps bench bench-e2e \
	load soak clean lock wheelhouse image

$(RUN_STAMP): pyproject.toml requirements.lock
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The demo cluster on http://127.0.0.1:8888 (the status page at /); ARGS="--port N" to listen
# elsewhere (see `.venv/bin/queue-extender serve --help`).
run: $(RUN_STAMP)
	$(BIN)/queue-extender serve --demo $(ARGS)

# The image's Python packages, made on the host: the locked runtime set as wheels for
# CPython 3.11 on linux/amd64 (each file checked against its hash in requirements.lock; kept
# until the lock changes) and the project's wheel. The Dockerfile installs from here, offline.
$(WHEELS)/locked/.complete: requirements.lock | $(RUN_STAMP)
	rm -rf $(WHEELS)/locked
	$(BIN)/pip download --quiet --require-hashes --no-deps --only-binary=:all: \
	  --python-version 3.11 --implementation cp --abi cp311 \
	  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	  --platform manylinux_2_28_x86_64 --platform linux_x86_64 \
	  --dest $(WHEELS)/locked -r requirements.lock
	touch $@

# The project's wheel is reproducible: its files are dated at the last commit
# (SOURCE_DATE_EPOCH), so the same sources make the same wheel byte for byte and Docker's build
# cache holds from one `make image` to the next.
wheelhouse: export SOURCE_DATE_EPOCH = $(shell git log -1 --format=%ct 2>/dev/null || echo 315532800)
wheelhouse: $(WHEELS)/locked/.complete $(RUN_STAMP)
	rm -rf $(WHEELS)/project
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir $(WHEELS)/project .

image: wheelhouse
	$(DOCKER) build -t $(IMAGE) --build-arg BASE_IMAGE=$(BASE_IMAGE) \
	  --build-arg VCS_REF=$$(git rev-parse HEAD 2>/dev/null) \
	  --build-arg BUILD_DATE=$$(date -u +%Y-%m-%dT%H:%M:%SZ) .

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The import contracts in pyproject.toml ([tool.importlinter]): which room may import which.
layering: $(STAMP)
	$(BIN)/lint-imports

# The two tiers of the suite. The unit tier runs on every core (pytest-xdist, a test file a
# worker at a time); the end-to-end tier runs serially, on one control plane (and one real
# node) shared by the whole session, with the page tests (one browser, installed with apt).
SERIAL_TESTS := tests/e2e tests/browser
PYTEST_WORKERS ?= auto
unit: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile $(addprefix --ignore=,$(SERIAL_TESTS))

# The end-to-end tier (real kube-apiserver, etcd, kube-scheduler, and with
# REQUIRE_REAL_NODE=1 the real node; tests/e2e) and the page tests (tests/browser).
e2e: $(STAMP)
	$(BIN)/pytest $(SERIAL_TESTS)

# The real node's Debian packages (root, Debian 12), installed only when CI asks for the
# real-node suite (REQUIRE_REAL_NODE=1) and a part is missing; otherwise those tests skip.
REAL_NODE_PACKAGES := containerd runc containernetworking-plugins busybox-static debootstrap \
	docker.io
REAL_NODE_BINARIES := /usr/bin/containerd /usr/bin/ctr /usr/sbin/runc /usr/lib/cni/bridge \
	/usr/bin/busybox /usr/sbin/debootstrap /usr/sbin/dockerd /usr/bin/docker
real-node-deps:
	@if [ "$(REQUIRE_REAL_NODE)" = 1 ]; then \
	  for b in $(REAL_NODE_BINARIES); do [ -x $$b ] || missing=1; done; \
	  if [ -n "$$missing" ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      $(REAL_NODE_PACKAGES); \
	  fi; \
	fi

# The image built offline, the real node (containerd, kubelet, kube-controller-manager), the
# chart and deploy/ installed on it (tests/e2e/test_real_node.py). `make test` runs it too.
real-node: $(STAMP) real-node-deps
	$(BIN)/pytest -m e2e tests/e2e/test_real_node.py

# The real node's image takes minutes to make (debootstrap, a Docker build) and much of that is
# waiting on the network and the disk: it is made in the background while the checks and the
# unit tier run, into the cache the real-node tests build from. Those tests still build it
# (from the warm cache now), so the background build decides nothing they see; if it fails,
# they take the same steps again and say why if those fail too (the background build's own
# output: build/real-node-prepare.log, printed before the end-to-end tier).
PREPARE_LOG := build/real-node-prepare.log
test: $(STAMP) real-node-deps
	@mkdir -p build
	@$(BIN)/python -m tests.e2e.realnode prepare build/real-node-prepare-logs \
	  > $(PREPARE_LOG) 2>&1 & prepare=$$!; \
	trap 'kill $$prepare 2>/dev/null; wait $$prepare' EXIT; \
	$(MAKE) --no-print-directory lint typecheck layering unit || exit $$?; \
	wait $$prepare || echo "the background image build failed (see $(PREPARE_LOG))"; \
	cat $(PREPARE_LOG); \
	trap - EXIT; \
	$(MAKE) --no-print-directory e2e

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
