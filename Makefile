# The README's two commands: `make demo` (set up + index a filing + show Items and cited passages) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STORE ?= demo-index
export HF_HUB_OFFLINE := 1
export HAYSTACK_TELEMETRY_ENABLED := False
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test lint clean

$(BIN)/haystack-fin: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# CPU torch first, pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev,trees,serve,ocr]"
	touch $@

setup: $(BIN)/haystack-fin

demo: setup
	$(BIN)/haystack-fin index tests/fixtures/bestbuy-10q-2023-07-29.pdf --store $(STORE)
	$(BIN)/haystack-fin inspect --store $(STORE)
	$(BIN)/haystack-fin ask "What was Best Buy's revenue in the second quarter?" --store $(STORE) -k 3

test: setup
	$(BIN)/ruff check haystack_fin tests benchmarks
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check haystack_fin tests benchmarks
	$(BIN)/ruff format --check haystack_fin tests benchmarks

clean:
	rm -rf $(VENV) $(STORE)
