# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: install demo test bench clean data-stats

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

# --- data sets (issue 3) -------------------------------------------------------
# The data-set table (ours vs published) -> figures/tables/datasets.{md,tex}.
# Raw files: $$PACEGGM_DATA_DIR, else datasets/raw; see datasets/README.md.
data-stats: install
	$(PY) -m paceggm.bench.data stats
# --------------------------------------------------------------------------------

clean:
	rm -rf $(VENV) .pytest_cache

# --- figures stage (issue 5): every figure/table of SPEC §8 + figures/REPORT.md from runs/*/results.parquet
.PHONY: figures
figures: install
	$(PY) -m paceggm.bench.figures --runs runs --out figures
