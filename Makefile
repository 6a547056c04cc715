# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: install demo test bench clean

install: $(INSTALLED)

$(INSTALLED): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[bench,cluster,dev]"
	touch $@

demo: install
	$(PY) -m paceggm.demo

test: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache

# --- solver benchmark (issue 7): Newton vs IPM-Cholesky, writes figures/tables/solver_benchmark.md
# Reads communities_crime from $(PACEGGM_DATA_DIR). About 30 min on one core (IPM-Cholesky is the slow part).
bench: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m paceggm.bench.solver_benchmark
