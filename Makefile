# The README's two commands: `make demo` (set up + index a filing + show Items and cited passages) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STORE ?= demo-index
export HF_HUB_OFFLINE := 1
export HAYSTACK_TELEMETRY_ENABLED := False
export TOKENIZERS_PARALLELISM := false

# torch is installed first, pinned, and as a CPU build: on plain PyPI (Linux) torch==2.13.0 is the CUDA build plus
# about 20 nvidia-*/cuda-* packages (several GB) for a product that runs on CPU. pip is asked first what the
# configured index would install (a dry run, no download); only when that is a CUDA build does the install go to
# PyTorch's CPU index, so an index that already has a CPU wheel (a mirror, a wheelhouse) never waits on it.
TORCH_SPEC := torch==2.13.0
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
# Reads a `pip install --dry-run --report` JSON on stdin; prints "cuda" if it would install nvidia-* packages or a
# +cuXXX torch wheel, else "cpu" (macOS and Windows wheels on PyPI are CPU builds; a +cpu wheel is one).
define TORCH_BUILD_PY
import json, sys
install = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.load(sys.stdin).get("install", [])}
cuda = any(name.startswith("nvidia-") for name in install) or "+cu" in install.get("torch", "")
print("cuda" if cuda else "cpu")
endef
export TORCH_BUILD_PY

.PHONY: setup demo test lint clean torch-build

$(BIN)/haystack-fin: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --dry-run --report $(VENV)/torch-report.json $(TORCH_SPEC)
	@if [ "$$($(BIN)/python -c "$$TORCH_BUILD_PY" < $(VENV)/torch-report.json)" = cuda ]; then \
		echo "$(TORCH_SPEC): the configured index has a CUDA build; installing the CPU build from $(TORCH_CPU_INDEX)"; \
		$(BIN)/pip install -q $(TORCH_SPEC) --index-url $(TORCH_CPU_INDEX); \
	else \
		$(BIN)/pip install -q $(TORCH_SPEC); \
	fi
	$(BIN)/pip install -q -e ".[dev,trees,serve,ocr,docling,companies]"
	touch $@

# [docling] (FilingConverter(backend="docling") on HTML/DOCX, no models) adds 9-23 s (warm/cold pip cache) and
# ~105 MB, so CI runs its tests.

# The decision above for a saved report: make -s torch-build REPORT=report.json (tests/test_setup_torch.py).
torch-build:
	@$(PYTHON) -c "$$TORCH_BUILD_PY" < $(REPORT)

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
