# mneme: `make demo` and `make test` set everything up on a fresh machine, no API key needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := true
export LANGSMITH_TRACING := false
export ANONYMIZED_TELEMETRY := False

.PHONY: setup demo test lint unit bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "mneme needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	@touch $(STAMP)

demo: setup
	$(BIN)/mneme demo

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -q

unit: setup
	$(BIN)/pytest -q tests/unit

# The peers (mem0, LangMem, BM25) and the plotting tools live in their own environment, so that
# their dependencies never touch the one `make test` uses. `make bench BENCH_ARGS=--quick`: a fast look.
BENCH_VENV ?= .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "mneme needs Python 3.11+"'
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install -q -e ".[bench]"
	@touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python -m benchmarks.run $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) .mneme .pytest_cache .mypy_cache .ruff_cache
