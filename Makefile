# Two commands: `make book` (run the smoke profile, build the book) and `make test`.
# Each sets up .venv on first use. GPU users pick their torch build, e.g.
#   make book TORCH_SPEC="torch==2.13.0" TORCH_PIP_ARGS="--index-url <your CUDA wheel index>"
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
EXTRAS ?= vectors,base,dev,cluster
PROFILE ?= smoke
# profiles whose committed runs the book shows beside PROFILE's (book/runs/cpu/: the cpu profile)
BOOK_ALSO ?= cpu
# two runs side by side, one torch thread each (measured faster and steadier on 2 cores than one
# run with two threads; README); RUN_ARGS= runs them one after the other in this process
RUN_ARGS ?= --executor local --max-parallel 2
KERNEL ?= mlmlib
# headless Chromium for the browser check of the book (tests/browser.py); Debian package `chromium`
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM

.PHONY: book run html test test-fast rehearse lab-check test-slurm lab kernel clean-runs help

help:
	@echo "make book     set up .venv, run the $(PROFILE) profile, build the book"
	@echo "make test     run the test suite (the plan rehearsals apart: make rehearse)"
	@echo "make test-fast   the unit tests only (no notebooks, no book build)"
	@echo "make rehearse    every entry of the paper and cpu plans at tiny size, offline"
	@echo "make lab-check   every template top to bottom with its own defaults, as JupyterLab runs it"
	@echo "make test-slurm  the SLURM executor on a one-node SLURM on this machine (root, apt-get)"
	@echo "make lab      open the notebooks in JupyterLab with the project kernel"
	@echo "make book PROFILE=paper   paper-scale runs (GPUs, network)"

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)" $(TORCH_PIP_ARGS)
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (mlmlib)"
	touch $@

kernel: $(VENV)/.installed

# The book is built even when a run failed (the failed runs stay out of it); then make fails.
book: $(VENV)/.installed
	$(PY) -m mlmlib run --profile $(PROFILE) $(RUN_ARGS); status=$$?; \
	$(PY) -m mlmlib book --profile $(PROFILE) $(addprefix --also ,$(BOOK_ALSO)) && exit $$status

run: $(VENV)/.installed
	$(PY) -m mlmlib run --profile $(PROFILE) $(RUN_ARGS)

html: $(VENV)/.installed
	$(PY) -m mlmlib book --profile $(PROFILE) $(addprefix --also ,$(BOOK_ALSO))

# Installed with apt-get where it is missing and we are root; otherwise the browser tests skip.
$(CHROMIUM):
	@if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "installing chromium (apt-get) for the browser check of the book"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; } \
	    || echo "could not install chromium: the browser tests will be skipped"; \
	else \
	  echo "no chromium at $(CHROMIUM) and no apt-get as root to install it:" \
	       "the browser tests will be skipped (set CHROMIUM=/path/to/chromium to use another)"; \
	fi

# Two pytest workers, a test file each at a time (--dist loadfile: a file's fixtures and files
# stay in one process): most tests use one core, so the suite takes about 0.6 of a serial run.
TEST_WORKERS ?= 2
test: $(VENV)/.installed $(CHROMIUM)
	$(PY) -m pytest -q -m "not rehearsal" -n $(TEST_WORKERS) --dist loadfile

# The paper and cpu plans, every entry at tiny size, offline, through the real notebooks: run it
# before spending GPU (or hours of CPU) time on a changed plan. CI runs it after `make test`.
rehearse: $(VENV)/.installed
	$(PY) -m pytest -q -m rehearsal

# Every template top to bottom with its own defaults and no papermill, as a reader runs it in
# JupyterLab (the defaults are the smoke sizes); CI runs it after `make rehearse`.
lab-check: $(VENV)/.installed
	$(PY) scripts/lab_check.py

# The SLURM executor on a one-node SLURM started on this machine (root and apt-get), stopped after.
test-slurm: $(VENV)/.installed
	SLURM_LOCAL_ACCOUNTING=0 scripts/slurm_local.sh up
	$(PY) -m pytest -q -rs tests/test_slurm.py; status=$$?; scripts/slurm_local.sh down; exit $$status

test-fast: $(VENV)/.installed
	$(PY) -m pytest -q -m "not slow"

lab: $(VENV)/.installed
	$(VENV)/bin/jupyter lab notebooks/

clean-runs:
	rm -rf book/runs/$(PROFILE) book/_build .work/$(PROFILE)
