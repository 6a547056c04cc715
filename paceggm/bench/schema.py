"""The tidy results table: the contract between the harness and the figures stage.

One row per cell (data set, method + parameters, ρ, trial). The harness writes
one file per finished cell under ``runs/<experiment>/cells/`` and collects them
into ``runs/<experiment>/results.parquet``; figures and tables read only that
table. Columns, in order:

| column | type | meaning |
|---|---|---|
| experiment | str | recipe name: main, measurements, runtime, solver, components, hyperparameters, regression, quick, demo |
| cell_key | str | stable hash of the cell's canonical description |
| dataset | str | data-set key (e.g. adult, breast_cancer_sklearn) |
| preprocessing | str | paper / strict |
| n, d | int | size of the data after preprocessing |
| method | str | estimator key: paceggm, ssp, ssp_projected, ssp_tight, diagonal, gausscov, separatecov, adaptivecov, adassp, paceggm_regression |
| variant | str | label of method + its non-default parameters inside the experiment, used for legends/grouping: e.g. "paceggm", "paceggm[solver=pgd0]", "paceggm[use_components=False]", "paceggm[alpha=0.1,beta=0.5]", "ssp" |
| solver | str | reconstruction solver for PACE-GGM variants ("" otherwise) |
| use_components | bool or NA | PACE-GGM only |
| alpha, beta | float or NaN | PACE-GGM only |
| rho | float | zCDP budget of the cell |
| trial | int | 0-based trial index |
| seed | int | the cell's method seed (derived from base seed, dataset, trial, method, rho) |
| status | str | "ok" or "failed" |
| error | str | exception type + message + traceback ("" when ok) |
| mahalanobis | float | Mahalanobis error (NaN for regression or failed) |
| frobenius | float | Frobenius error (NaN for regression or failed) |
| mse | float | test MSE (regression only, else NaN) |
| n_measured_diag | int or NA | diagonal entries measured (PACE-GGM: d) |
| n_measured_offdiag | int or NA | distinct off-diagonal entries measured |
| n_rounds | int or NA | PACE-GGM rounds |
| rho_spent | float | budget actually spent |
| wall_time | float | seconds for the whole cell's fit |
| solve_time | float or NaN | seconds in the reconstruction solver |
| guarantee_holds | bool | whether the cell's privacy guarantee holds: False when the bound was waived (``bound_check="waive"``, the published preprocessing), so the data may exceed the bound the noise was calibrated to |
| converged | bool or NA | PACE-GGM: whether the reconstruction solver converged in every round (no iteration cap hit); NA for other methods |
| n_solves | int or NA | PACE-GGM: block solves over all rounds (blocks whose measurements did not change are reused, not solved) |
| n_capped_solves | int or NA | PACE-GGM: of those, how many stopped at an iteration cap (where the solver's answer is not its converged one) |
| max_solve_iter | int or NA | PACE-GGM: most iterations one block solve took |

Tables written before these two columns existed are read with ``guarantee_holds``
derived from the preprocessing under the default bound policy (``"auto"``: waived
for ``paper``, enforced for ``strict``; see :func:`paceggm.bench.execute.bound_policy`)
and ``converged`` and the three solve counts unknown (NA).

The stored table has one more column, ``params``: the cell's constructor
parameters as canonical JSON, for grouping by anything the named columns do
not cover.
"""

RESULT_COLUMNS = (
    "experiment", "cell_key", "dataset", "preprocessing", "n", "d", "method", "variant",
    "solver", "use_components", "alpha", "beta", "rho", "trial", "seed", "status", "error",
    "mahalanobis", "frobenius", "mse", "n_measured_diag", "n_measured_offdiag", "n_rounds",
    "rho_spent", "wall_time", "solve_time", "guarantee_holds", "converged",
    "n_solves", "n_capped_solves", "max_solve_iter",
)


def guarantee_holds(bound_check: str) -> bool:
    """Whether a cell run under ``bound_check`` keeps its privacy guarantee (all but ``"waive"``)."""
    return bound_check != "waive"
STORED_COLUMNS = (*RESULT_COLUMNS, "params")
