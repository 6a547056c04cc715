# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: install demo test bench bench-reference clean data-stats reproduce reproduce-quick figures collect results

install: $(INSTALLED)

$(INSTALLED): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[bench,cluster,dev]"
	touch $@

# ---- benchmark harness (paceggm.bench; recipes in conf/experiment/) ---------------
# Extra Hydra overrides for every sweep: make reproduce BENCH_ARGS="backend.n_jobs=2"
BENCH := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m paceggm.bench
BENCH_ARGS ?=
# solver last: its published first-order solvers cost more than all the others together
EXPERIMENTS := main main_strict measurements runtime components hyperparameters regression solver

# The whole pipeline on the embedded data: sweep -> store -> results.parquet -> figure.
# Its own store and output directory, so the demo never mixes with real runs or figures.
DEMO_RUNS := runs/demo-pipeline
demo: install
	$(BENCH) run experiment=demo runs_dir=$(DEMO_RUNS) $(BENCH_ARGS)
	$(BENCH) summary experiment=demo runs_dir=$(DEMO_RUNS) $(BENCH_ARGS)
	$(PY) -m paceggm.bench.figures --runs $(DEMO_RUNS) --out figures/demo \
	  --main-datasets breast_cancer_sklearn --main-methods paceggm,ssp,diagonal --preprocessing strict

# Every recipe at a reduced size (conf/experiment/quick.yaml), then the figures.
reproduce-quick: install
	$(BENCH) run experiment=quick $(BENCH_ARGS)
	$(MAKE) figures

# Every SPEC §8 experiment, then the committed results tables and the figures.
# Resumable: rerun after an interruption; finished cells are kept.
reproduce: install
	set -e; for e in $(EXPERIMENTS); do $(BENCH) run experiment=$$e $(BENCH_ARGS); done
	$(MAKE) results
	$(MAKE) figures

# Figures read results tables only: `make figures RUNS=figures/results` redraws every
# figure and table from the committed tables of the full reproduction, without running.
RUNS ?= runs
figures: install
	$(PY) -m paceggm.bench.figures --runs $(RUNS) --out figures

# Copy the collected results table of each experiment to figures/results/<experiment>/
# (small, committed: the reproduction's numbers without rerunning it).
results:
	for e in $(EXPERIMENTS); do if [ -f runs/$$e/results.parquet ]; then \
	  mkdir -p figures/results/$$e && cp runs/$$e/results.parquet figures/results/$$e/; fi; done

# Rebuild results.parquet of every recipe that has a store, reporting missing cells.
collect: install
	for e in $(EXPERIMENTS) quick; do if [ -d runs/$$e ]; then $(BENCH) collect experiment=$$e $(BENCH_ARGS); fi; done
# ---- end of benchmark harness ---------------------------------------------------

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

# --- solver benchmarks: Newton vs IPM-Cholesky (figures/tables/solver_benchmark.md, about 30 min on one
# core), and the first-order references' stopping settings (figures/tables/reference_solvers.md, about
# 10 min). Both read communities_crime from $(PACEGGM_DATA_DIR).
bench: install bench-reference
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m paceggm.bench.solver_benchmark

bench-reference: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m paceggm.bench.reference_solvers

# --- IPM-Cholesky's stopping rule: candidates' time vs error vs KKT residual on blocks and whole runs
# paired with the committed solver results (figures/tables/stopping_rule.md, about 15 min on one core).
.PHONY: bench-stopping
bench-stopping: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m paceggm.bench.stopping_rule

# --- privacy audit: confidence lower bounds on the privacy loss of the mechanisms on worst-case
# neighbouring data sets, with broken controls it must catch -> figures/tables/audit.{md,tex}
# (about 3 min on one core; a small version runs in `make test`). Fails if a bound exceeds a claim.
.PHONY: audit package-check
audit: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m paceggm.bench.audit --out figures/tables

# --- packaging: build the wheel, install it into a fresh venv and run the demo outside the clone
# (about a minute, needs the package index or pip's cache; also part of `make test`).
package-check: install
	$(PY) -m pytest -q tests/test_packaging.py
