# d2lmini: common tasks.  `make help` lists them.
#
# Everything runs from the virtual environment in .venv, which `make install`
# creates; every other target installs it first when it is missing or when
# requirements.txt or pyproject.toml changed since, so a fresh clone needs no
# other step.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

NOTEBOOKS := $(sort $(wildcard chapters/*.ipynb))
NB_TIMEOUT ?= 120           # seconds per notebook cell (tests and `notebooks`)
PYTEST_ARGS ?=              # extra pytest arguments, e.g. PYTEST_ARGS="-n 2 -x"
UNIT_ARGS ?=                # extra pytest arguments for tests/ only, e.g. UNIT_ARGS="-n 2"
SPHINXOPTS ?=               # extra sphinx-build arguments, e.g. SPHINXOPTS=-W
LAB_PORT ?= 8888
NO_BROWSER ?=               # NO_BROWSER=1: `make lab` opens no browser
LAB_ARGS ?=                 # extra `jupyter lab` arguments
BENCH_ARGS ?=               # extra benchmarks/run.py arguments

# The real Fashion-MNIST files beside a checkout (../shared/data/fashion-mnist,
# as on the course machines and in CI) are used when D2LMINI_DATA is unset;
# elsewhere the package's own search order (cache, Debian, download) applies.
SHARED_DATA := $(abspath ../shared/data/fashion-mnist)
ifeq ($(origin D2LMINI_DATA),undefined)
ifneq ($(wildcard $(SHARED_DATA)/train-images-idx3-ubyte.gz),)
export D2LMINI_DATA := $(SHARED_DATA)
endif
endif

# Jupyter refuses to run as root unless told to.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
NO_BROWSER_FLAG := $(if $(filter 1 yes true,$(NO_BROWSER)),--no-browser)

.PHONY: help install test test-units test-notebooks test-gpu test-gpu-standin book book-check lab notebooks bench clean distclean

help:
	@echo "make install    create .venv with everything (tests, notebooks, book)"
	@echo "make test       pytest tests/, then nbval over chapters/*.ipynb"
	@echo "make test-units / make test-notebooks   either part alone"
	@echo "make test-gpu-standin  tests and notebooks on gpu(0), the strict CuPy stand-in"
	@echo "make test-gpu   the same on a real GPU (CuPy installed)"
	@echo "make book       static site in _build/html (open _build/html/index.html)"
	@echo "make book-check load the built book in headless chromium and check it"
	@echo "make lab        JupyterLab on chapters/ (NO_BROWSER=1, LAB_PORT=8888)"
	@echo "make notebooks  re-execute chapters/*.ipynb in place, clean them, time them"
	@echo "make bench      python benchmarks/run.py (installs torch 2.13.0 if it can)"
	@echo "make clean      remove build outputs; make distclean also removes .venv"

install: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install -e .
	@cd / && $(abspath $(BIN))/python -c "import importlib.util, sys; \
	  sys.exit(importlib.util.find_spec('d2lmini') is None)" \
	  || { echo "make install: d2lmini is not importable from .venv;" \
	       "does d2lmini/__init__.py exist?"; exit 1; }
	touch $@

# Notebooks are checked with nbval in strict mode: every cell must run without
# error and print what the committed notebook shows, after
# tests/nbval_sanitize.cfg has rewritten what no run reproduces (memory
# addresses, temporary paths, process ids; SVG images, as nbval itself skips
# PNG).  How a cell is checked is said by nbval's cell tags, in the cell's
# metadata, never in the code a learner reads: `nbval-ignore-output` (the
# cell must run; its output -- timings, training curves, anything that
# depends on the machine or its BLAS kernels -- is not compared),
# `nbval-skip`, `nbval-raises-exception`.  --nbval-current-env runs the
# notebooks on .venv's Python.  MPLBACKEND=Agg is set for tests/ only: the
# notebooks keep the inline backend they have in JupyterLab.
# `make test-notebooks` runs the notebook part alone (OPENBLAS_CORETYPE=...
# in the environment picks other BLAS kernels, as .ci/run does).
# An empty tests/ is skipped (pytest would exit 5); a failing test is not.
test: test-units test-notebooks

test-units: $(STAMP)
	@if [ -n "$$(find tests -name 'test_*.py' -o -name '*_test.py' 2>/dev/null)" ]; then \
	  echo "MPLBACKEND=Agg $(BIN)/pytest -p no:cacheprovider -q $(UNIT_ARGS) $(PYTEST_ARGS) tests/"; \
	  PATH="$(abspath $(BIN)):$$PATH" MPLBACKEND=Agg \
	    $(BIN)/pytest -p no:cacheprovider -q $(UNIT_ARGS) $(PYTEST_ARGS) tests/; \
	else \
	  echo "make test: no test files under tests/ yet; skipping pytest tests/"; \
	fi

test-notebooks: $(STAMP)
ifneq ($(NOTEBOOKS),)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/pytest -p no:cacheprovider -q \
	  --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	  --nbval-cell-timeout=$(strip $(NB_TIMEOUT)) $(PYTEST_ARGS) $(NOTEBOOKS)
else
	@echo "make test: no chapters/*.ipynb yet; skipping nbval"
endif

# The GPU code paths without a GPU: the whole suite and every notebook with
# gpu(0) as the default context (two GPUs, so the multi-device code runs on
# gpu(0) and gpu(1)), backed by tests/cupy_standin.py, a CuPy stand-in that
# computes on the host and is strict about the host/device boundary.  The
# notebooks are executed, not compared: on a GPU they print other device
# names and other random draws (each device has its own generator) than the
# committed CPU outputs, so every cell must run and nothing more is checked.
# `make test-gpu` is the same on a machine with real GPUs (CuPy installed).
# STANDIN_GPUS=1 is a one-GPU machine: what needs two devices must skip.
GPU_ENV := D2LMINI_DEFAULT_CONTEXT='gpu(0)'
STANDIN_GPUS ?= 2
STANDIN_ENV := $(GPU_ENV) D2LMINI_CUPY=cupy_standin D2LMINI_STANDIN_GPUS=$(STANDIN_GPUS) \
  PYTHONPATH="$(abspath tests)$${PYTHONPATH:+:$$PYTHONPATH}"
STANDIN_TEST_ARGS ?=       # extra pytest arguments for its tests/ part, e.g. -n 2
define run_on_gpu          # $(1): the environment that makes gpu(0) the default
	PATH="$(abspath $(BIN)):$$PATH" MPLBACKEND=Agg $(1) \
	  $(BIN)/pytest -p no:cacheprovider -q $(STANDIN_TEST_ARGS) $(PYTEST_ARGS) tests/
	$(if $(NOTEBOOKS),PATH="$(abspath $(BIN)):$$PATH" $(1) $(BIN)/python \
	  tools/run_notebooks.py --no-write --timeout $(strip $(NB_TIMEOUT)) $(NOTEBOOKS))
endef
test-gpu-standin: $(STAMP)
	$(call run_on_gpu,$(STANDIN_ENV))
test-gpu: $(STAMP)
	$(call run_on_gpu,$(GPU_ENV))

# Renders the committed notebook outputs; executes nothing (see chapters/conf.py).
book: $(STAMP)
	$(BIN)/sphinx-build -b html -d _build/doctrees $(SPHINXOPTS) chapters _build/html
	@echo "open _build/html/index.html"

# Checks the site `make book` built, in a real headless browser (Debian's
# chromium; apt-get install chromium): every page free of console errors and
# failed loads, the navigation numbered in book.yml's order, images loaded,
# math rendered, the search working.  Screenshots go to _build/screenshots/.
# See tools/book_check.py.
book-check: $(STAMP)
	$(BIN)/python tools/book_check.py _build/html --book book.yml \
	  --screenshots _build/screenshots

# JupyterLab on chapters/, opened on chapter 1, with the site's files hidden
# and no news or update check: see lab/jupyter_lab_config.py.
# tests/test_lab.py runs this very command (it reads it from `make -n lab`)
# with NO_BROWSER=1, a free LAB_PORT and LAB_ARGS binding only 127.0.0.1.
lab: $(STAMP)
	$(BIN)/jupyter lab --config=lab/jupyter_lab_config.py --port=$(strip $(LAB_PORT)) \
	  $(ALLOW_ROOT) $(NO_BROWSER_FLAG) $(LAB_ARGS)

# Re-executes the notebooks in place, one by one (cells time out after
# NB_TIMEOUT s), strips timing metadata and widget state but keeps the
# outputs, and prints a table of the seconds each notebook took against the
# course's budgets; a notebook that fails is left as it was and the target
# fails.  `make notebooks NOTEBOOKS=chapters/03_async.ipynb` re-runs only
# some.  See tools/run_notebooks.py.
notebooks: $(STAMP)
ifneq ($(NOTEBOOKS),)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python tools/run_notebooks.py \
	  --timeout $(strip $(NB_TIMEOUT)) $(NOTEBOOKS)
else
	@echo "make notebooks: no chapters/*.ipynb yet"
endif

# torch is only an oracle for the benchmarks.  Only 2.13.0 is ever installed
# (here it installs from a local CPU wheel); if that fails the benchmarks run
# without torch.
bench: $(STAMP)
	@$(BIN)/python -c "import torch" 2>/dev/null \
	  || $(BIN)/python -m pip install "torch==2.13.0" \
	  || echo "make bench: could not install torch==2.13.0; going on without it"
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf _build .pytest_cache .hypothesis build dist *.egg-info
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name .ipynb_checkpoints \) \
	  -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
