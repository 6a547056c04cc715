# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: install demo test bench bench-reference clean data-stats reproduce reproduce-quick figures collect results

install: $(INSTALLED)

# PYTHONWARNINGS: setuptools announces on every editable install that a finder maps paceggm.baselines
# and paceggm.bench.conf (the layout keeps baselines/ and conf/ at the top); that notice is all it says.
$(INSTALLED): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet -e ".[bench,cluster,dev]"
	touch $@

# ---- benchmark harness (paceggm.bench; recipes in conf/experiment/) ---------------
# Extra Hydra overrides for every sweep: make reproduce BENCH_ARGS="backend.n_jobs=2"
BENCH := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m paceggm.bench
BENCH_ARGS ?=
# solver last: its published first-order solvers cost more than all the others together
EXPERIMENTS := main main_strict measurements runtime solver components hyperparameters regression

# The whole pipeline on the embedded data: sweep -> store -> results.parquet -> figure.
# Its own store and output directory, so the demo never mixes with real runs or figures.
DEMO_RUNS := runs/demo-pipeline
demo: install
	$(BENCH) run experiment=demo runs_dir=$(DEMO_RUNS) $(BENCH_ARGS)
	$(BENCH) summary experiment=demo runs_dir=$(DEMO_RUNS) $(BENCH_ARGS)
	$(PY) -m paceggm.bench.figures --runs $(DEMO_RUNS) --out $(DEMO_RUNS)/figures --experiments demo \
	  --main-datasets breast_cancer_sklearn --main-methods paceggm,ssp,diagonal --preprocessing strict

# Every recipe at a reduced size (conf/experiment/quick.yaml), then its figures, drawn from the
# quick table alone into its own folder: a reduced run never writes over the committed figures.
# Without PACEGGM_DATA_DIR (and no network) the run lists, per data set, the files it needs and
# where to put them, runs the embedded data's cells and exits 0: unavailable data is not a failure.
QUICK_FIGURES := runs/quick/figures
reproduce-quick: install
	$(BENCH) run experiment=quick $(BENCH_ARGS)
	$(PY) -m paceggm.bench.figures --runs runs --experiments quick --out $(QUICK_FIGURES)

# Every experiment of the publication, then the committed results tables and the figures.
# The recipes run as one pool of workers, longest cell first (each cell's time recorded in the
# committed tables estimates its cost), so that no core idles in one recipe's tail; each cell is
# stored in its own recipe's store, and a cell one recipe copies from another runs once.
# Resumable: rerun after an interruption; finished cells are kept. A cell whose data set is
# unavailable (no file, no network) is reported and left pending, not a failure.
# Failed cells (exit 1) do not stop the others: each recipe is reported, the tables and figures
# are still made, then make exits 1; a usage error or an interruption (exit >= 2) stops at once.
# The run's last line ([pool]) states the CPU seconds of the cells it computed.
# (One shell line without $(MAKE), so that `make -n reproduce` stays a dry run.)
comma := ,
empty :=
space := $(empty) $(empty)
reproduce: install
	status=0; $(BENCH) run --costs figures/results \
	  "experiment=[$(subst $(space),$(comma),$(strip $(EXPERIMENTS)))]" $(BENCH_ARGS) || status=$$?; \
	if [ $$status -ge 2 ]; then exit $$status; fi; \
	$(PUBLISH_RESULTS) && $(DRAW_COMMITTED) && $(PAIR_PGD_WITH_REFERENCE) && exit $$status

# Figures read results tables only. By default they are redrawn from the committed tables of
# the full reproduction (figures/results) into figures/, without running anything; any other
# RUNS (e.g. RUNS=runs) draws into $(RUNS)/figures, so partial or reduced results never write
# over the committed figures. FIGURES_OUT=… chooses another folder.
RUNS ?= figures/results
FIGURES_OUT ?= $(if $(filter figures/results figures/results/,$(RUNS)),figures,$(RUNS)/figures)
figures: install
	$(PY) -m paceggm.bench.figures --runs $(RUNS) --out $(FIGURES_OUT)

# Publish each experiment's table to figures/results/<experiment>/ (small, committed: the
# reproduction's numbers without rerunning it): the recipe's own grid, and only when every
# cell of it is stored (cells of unavailable data sets aside); otherwise the committed table
# is left as it is.
PUBLISH_RESULTS = for e in $(EXPERIMENTS); do if [ -d runs/$$e ]; then \
	  $(BENCH) collect --publish figures/results experiment=$$e || exit 1; fi; done
DRAW_COMMITTED = $(PY) -m paceggm.bench.figures --runs figures/results --out figures
# PGD's cells of the published `solver` table beside the same cells at PGD's tight preset
# (figures/tables/stopping_rule_pgd_reproduction.md; reads two tables, runs no fit).
PAIR_PGD_WITH_REFERENCE = $(PY) -m studies.stopping_rule_pgd --reproduction-only
results: install
	$(PUBLISH_RESULTS)

# Rebuild results.parquet of every recipe that has a store, reporting missing cells.
collect: install
	for e in $(EXPERIMENTS) quick; do if [ -d runs/$$e ]; then $(BENCH) collect experiment=$$e $(BENCH_ARGS); fi; done
# The peers beside PACE-GGM (our comparison, not the publication's): conf/experiment/peers.yaml (real data,
# strict preprocessing) and peers_populations.yaml (populations with a known Σ, the loose-bound arm), then their
# figures, tables and the verdict on our CoinPress statement P1, drawn from those two tables alone into
# runs/peers/figures (never the committed figures/). Needs the raw data ($PACEGGM_DATA_DIR). Resumable; a
# recipe with failed cells does not stop the other (exit 1 after the figures). 5,250 cells: 5 min 8 s wall on
# 2 cores beside other jobs (load 3-4): 85 s + 125 s of sweeps, the rest drawing.
PEERS := peers peers_populations
PEERS_FIGURES := runs/peers/figures
.PHONY: peers
peers: install
	status=0; for e in $(PEERS); do $(BENCH) run experiment=$$e $(BENCH_ARGS) || status=$$?; \
	  if [ $$status -ge 2 ]; then exit $$status; fi; done; \
	$(PY) -m paceggm.bench.figures --runs runs --experiments peers,peers_populations --out $(PEERS_FIGURES) \
	  && exit $$status
# ---- end of benchmark harness ---------------------------------------------------

# The linter first (configured in pyproject.toml), then the suite on every core (pytest-xdist, in the dev
# extra; TEST_WORKERS=0 runs it in one process); `pytest -m "not slow"` skips the end-to-end sweeps and figure
# builds when iterating. The suite starts dozens of interpreters (command lines, dask and loky workers, a
# fresh venv): where the environment sets PYTHONDONTWRITEBYTECODE, each would compile the package again and
# every xdist worker would rewrite every test module's asserts, so the suite keeps its bytecode caches.
TEST_WORKERS ?= auto
test: install
	$(PY) -m ruff check .
	PYTHONDONTWRITEBYTECODE= OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=20

# --- data sets ---------------------------------------------------------------
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
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.solver_benchmark

bench-reference: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.reference_solvers

# --- IPM-Cholesky's stopping rule: candidates' time vs error vs KKT residual on blocks and whole runs
# paired with the committed solver results (figures/tables/stopping_rule.md, about 15 min on one core);
# then PGD's step tolerance, the same two measurements (figures/tables/stopping_rule_pgd.md, about 18 min),
# and the committed reproduction's PGD cells paired with the reference (stopping_rule_pgd_reproduction.md).
.PHONY: bench-stopping
bench-stopping: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.stopping_rule
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.stopping_rule_pgd

# --- privacy audit: confidence lower bounds on the privacy loss of the mechanisms on worst-case
# neighbouring data sets, whole fits and every mechanism invocation of a fit of each registered method,
# with broken controls it must catch (true ρ 2× and 4× the claim) -> figures/tables/audit.{md,tex}
# (669 s = 11 min 9 s wall for 52 cases on 2 cores, 2 worker processes, measured beside other jobs at a load of
# 4-6; a small version runs in `make test`).
# Fails if a bound exceeds a claim or a broken control is missed.
.PHONY: audit package-check
audit: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m paceggm.bench.audit --out figures/tables --jobs 2

# --- private choice of (alpha, beta) (PrivateGridSearch at a total rho) beside the recipe's non-private
# best pairs (Tables 5, 6, figures/results/hyperparameters); needs the raw data ($PACEGGM_DATA_DIR).
.PHONY: private-tuning
private-tuning: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.private_tuning

# --- packaging: build the wheel, install it into a fresh venv and run the demo outside the clone
# (about a minute, needs the package index or pip's cache; also part of `make test`).
package-check: install
	$(PY) -m pytest -q tests/test_packaging.py

# --- newton_pcg against the reference newton on real PACE-GGM runs (adult, spambase, communities_crime,
# rho in {1, 10}, ten trials): same selections, estimates within 1e-8 -> figures/tables/solver_agreement.md
# (about a minute; needs the raw data, see datasets/README.md). Fails if a fit disagrees.
AGREEMENT_ARGS ?=
.PHONY: bench-agreement
bench-agreement: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m paceggm.bench.solver_agreement --publish $(AGREEMENT_ARGS)

# --- PACE-GGM at scale: whole fits on synthetic data, d = 100..1,600, rho in {1, 10}, three covariance
# shapes, one core per fit -> the store runs/scale/ (one file per cell; a rerun resumes) and its tables;
# published to figures/tables/scale_benchmark.{md,tex,json}, figures/scale_benchmark.{pdf,png} only when
# the store holds the whole default grid measured by one commit.
# Then the hard shapes (--hard: indian_pines- and madeline-like data beside the publication's seconds,
# indian_pines's model at d = 1,000-4,000, and with its columns scaled onto [-1, 1] at d = 187 and 1,000).
# Where torch with CUDA imports, a GPU column (solver auto+torch). Run it on an idle machine: its figures
# are CPU seconds, which another busy process on the same cores inflates (measured: about 3x at load 2.4).
# Smaller grids: make bench-scale SCALE_ARGS="--dims 100,200 --rhos 1 --timeout 60"; two fits at once: --jobs 2
SCALE_ARGS ?=
.PHONY: bench-scale
bench-scale: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.scale_benchmark --gpu auto $(SCALE_ARGS)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.scale_benchmark --gpu auto --hard --publish $(SCALE_ARGS)

# --- One scale-benchmark cell taken apart: its time per round in pieces (in Choleskys), the Newton systems
# per solve, the floor a chordal solver would leave, the chordal fill of its pattern and IPF's updates per
# round (about a minute; prints only). Another cell: FLOOR_ARGS="--shape banded --d 800 --rho 1"
FLOOR_ARGS ?=
.PHONY: bench-round-floor
bench-round-floor: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.round_floor $(FLOOR_ARGS)

# --- make verify: rerun a stratified sample of the committed results (figures/results; every recipe, method,
# solver, preprocessing and available data set, about 1,000 cells drawn from a fixed seed, 2 workers) and
# compare cell by cell; exits 1 beyond the tolerances of docs/verify.md.
# Needs the raw data (PACEGGM_DATA_DIR); unavailable data sets are reported. VERIFY_ARGS="--out FILE.md …"
VERIFY_ARGS ?=
.PHONY: verify
verify: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m paceggm.bench.verify $(VERIFY_ARGS)

# --- mutation testing (mutmut, in the dev extra): the privacy package, PACE-GGM's round loop and the settings
# that split its budget over rounds (the round cap T and the annealing factor), the private
# parameter search (paceggm/selection.py), the coordinate-bound check (paceggm._validation.enforce_bound)
# and the harness's budget check, each mutant against the tests that
# cover it ([tool.mutmut] in pyproject.toml);
# then each mutant mutmut's forked runs timed out on or never reached again, in a fresh interpreter
# (.ci/mutation_fresh.py: the accountant's tests start worker pools, which a forked run can hang); then
# docs/mutation.md: counts and every survivor with its reason (.ci/mutation_reasons.json). Fails if a
# survivor is unexplained. Hours on two cores (each mutant runs the tests that reach its
# function, and the round loop's reach most of the estimator's tests); a rerun resumes (.ci/mutation_run.py runs only the mutants
# not yet decided; mutmut itself resets those of functions whose code changed). After adding tests, retest the
# survivors by name (.venv/bin/python .ci/mutation_fresh.py --names NAME...) or delete mutants/ to start over.
MUTATION_SCOPE := "paceggm.privacy.*" "paceggm.estimator.x__run__*" "paceggm.selection.*" "paceggm._validation.x_enforce_bound__*" "paceggm.bench.execute.x_check_spent__*" "paceggm.settings.xǁPACEGGMSettingsǁrounds__*" "paceggm.settings.xǁPACEGGMSettingsǁannealing__*" "paceggm.settings.x__round_divisor__*"
.PHONY: mutation
mutation: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) .ci/mutation_run.py --max-children 2 $(MUTATION_SCOPE)
	$(PY) .ci/mutation_fresh.py --jobs 2 $(MUTATION_SCOPE)
	$(PY) .ci/mutation_table.py --out docs/mutation.md $(MUTATION_SCOPE)

# --- studies (studies/, one command each; need the raw data, $PACEGGM_DATA_DIR; stores under runs/studies/, resumable):
# the data's scale against Table 3's counts on adult and communities_crime; PACE-GGM regression with y's row
# measured first against AdaSSP; more trials where Tables 5/6's best pairs are within noise
# -> figures/results/investigations/{scale_sweep,forced_target,best_pairs}.{md,csv}
.PHONY: study-scale study-forced-target study-best-pairs
study-scale: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.scale_sweep
study-forced-target: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.forced_target
study-best-pairs: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m studies.best_pairs

# --- the round cap T and the annealing factor against Table 3: the `round_cap` recipe (Table 3's cells on the
# grid T in {d(d-1)/4, d(d-1)/2, d(d-1)} x anneal_factor in {1/2, 1, 2} x sqrt(2/pi); 7,560 cells, resumable,
# cheapest first), then its verdict by the criterion of studies/round_cap.py
# -> figures/results/investigations/round_cap.{md,csv}
.PHONY: study-round-cap
study-round-cap: install
	$(BENCH) run experiment=round_cap $(BENCH_ARGS)
	$(PY) -m studies.round_cap

# --- Table 3 without the target column (d - 1) on the five data sets Tables 3 and 4 print d - 1 for, beside the
# full-d cells and the publication -> figures/results/investigations/drop_target.txt
.PHONY: study-drop-target
study-drop-target: install
	$(BENCH) run experiment=measurements_drop_target $(BENCH_ARGS)
	$(PY) -m studies.investigations drop-target --full figures/results/measurements/results.parquet \
	  --dropped runs/measurements_drop_target/results.parquet > figures/results/investigations/drop_target.txt
	cat figures/results/investigations/drop_target.txt
