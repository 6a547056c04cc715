"""The audited mechanisms, each on a worst-case pair of neighbouring data sets.

Every case runs the project's own code — :mod:`paceggm.privacy`'s mechanisms
with the sensitivities the estimators use, a whole :func:`paceggm.pace_ggm`
fit, :class:`paceggm.baselines.AdaptiveCov` — on two data sets ``D`` and
``D'`` of the same size that differ in one record (replace-one, the
neighbouring relation of every guarantee here), chosen so that the audited
release moves as far as its sensitivity allows. The broken controls are the
same mechanisms with a deliberate calibration bug; an audit that cannot catch
them is not worth its table.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import paceggm.estimator as _estimator
import paceggm.privacy.mechanisms as _mechanisms
import paceggm.privacy.selection as _selection
from paceggm import PACEGGM, pace_ggm
from paceggm.baselines import SSP, AdaptiveCov, GaussCov, SSPTight
from paceggm.privacy import (
    entry_sensitivity,
    exponential_mechanism,
    exponential_mechanism_epsilon,
    gaussian_mechanism,
    gaussian_sigma,
)

from ..methods import METHODS, resolve
from ..plugins import load_plugins
from ..seeds import derive_seed
from .invocations import InvocationCase

__all__ = ["AuditCase", "CASES", "draw"]


@dataclass(frozen=True)
class AuditCase:
    """One mechanism on one pair of neighbouring inputs.

    Attributes
    ----------
    name : str
        Stable identifier (also part of every draw's seed).
    mechanism, neighbours, statistic : str
        What runs, on which ``D`` / ``D'``, and what the test reads of its output.
    rho : float
        The zCDP cost the code claims for what the statistic reads.
    epsilon : float or None
        The pure-DP ε it claims, for pure-DP mechanisms.
    broken : bool
        A deliberately miscalibrated control: the audit must find its bound above the claim.
    run : callable
        ``run(inputs, rng) -> float``: one release's statistic; ``inputs`` is ``D`` or ``D'``.
    inputs : tuple
        ``(D, D')``.
    draws : int
        Draws per data set in the full audit (fewer for whole estimator fits, which cost more).
    """

    name: str
    mechanism: str
    neighbours: str
    statistic: str
    rho: float
    epsilon: float | None
    broken: bool
    run: Callable
    inputs: tuple
    draws: int = 100_000

    @property
    def metric(self) -> str:
        """The bound to maximise: ε for pure-DP claims (the sharper test), else ρ."""
        return "epsilon" if self.epsilon is not None else "rho"


def draw(case: AuditCase, side: int, n_draws: int, *, base_seed: int = 0) -> np.ndarray:
    """``n_draws`` independent runs of ``case`` on ``D`` (side 0) or ``D'`` (side 1).

    Draw ``i`` is seeded by ``(base_seed, case, side, i)`` alone, so a sample is
    the same whatever else runs and a smaller sample is a prefix of a larger one.
    """
    inputs = case.inputs[side]
    out = np.empty(n_draws)
    for i in range(n_draws):
        rng = np.random.default_rng(derive_seed("audit", int(base_seed), case.name, int(side), i))
        out[i] = case.run(inputs, rng)
    return out


# --- the Gaussian mechanism on one entry of Σ(X) = XᵀX/n, as PACE-GGM measures it --------------

_N_ENTRY, _BOUND = 10, 1.0
_DELTA = entry_sensitivity(n=_N_ENTRY, bound=_BOUND)


def _one_record_apart(first: tuple[float, float], first_prime: tuple[float, float], n: int):
    """``D`` and ``D'``: ``n`` rows of two coordinates, all zero but the first, which differs."""
    D, D_prime = np.zeros((n, 2)), np.zeros((n, 2))
    D[0], D_prime[0] = first, first_prime
    return D, D_prime


def _entry(X) -> float:
    return float(X[:, 0] @ X[:, 1] / X.shape[0])


_GAUSS_RHO = 0.5


def _gaussian(X, rng) -> float:
    return gaussian_mechanism(_entry(X), rho=_GAUSS_RHO, sensitivity=_DELTA, rng=rng)[0]


def _gaussian_half_noise(X, rng) -> float:
    # The bug: half the standard deviation the budget calls for (true cost 4ρ).
    return _entry(X) + rng.normal(0.0, gaussian_sigma(rho=_GAUSS_RHO, sensitivity=_DELTA) / 2.0)


# --- the exponential mechanism on scores of sensitivity Δ ----------------------------------------

_EM_RHO, _EM_CANDIDATES = 0.125, 20  # ε = sqrt(8ρ) = 1
# One record moves every score by up to Δ: the first one up, all others down, is the worst case.
_SCORES = np.zeros(_EM_CANDIDATES)
_SCORES_PRIME = np.r_[_DELTA, np.full(_EM_CANDIDATES - 1, -_DELTA)]


def _exponential(scores, rng) -> float:
    return float(exponential_mechanism(scores, rho=_EM_RHO, sensitivity=_DELTA, rng=rng))


def _exponential_half_sensitivity(scores, rng) -> float:
    # The bug: the scores' sensitivity halved (ε/Δ where ε/(2Δ) is due; true ε doubles).
    return float(exponential_mechanism(scores, rho=_EM_RHO, sensitivity=_DELTA / 2.0, rng=rng))


# --- one whole PACE-GGM fit ----------------------------------------------------------------------

_FIT_N, _FIT_RHO = 100, 1.0


def _balanced_signs(n: int, flipped: int) -> np.ndarray:
    """Rows ``(1, ±1)``: half with each sign, then ``flipped`` of the minus rows made plus."""
    X = np.ones((n, 2))
    X[n // 2 + flipped:, 1] = -1.0
    return X


def _pace_ggm_fit(X, rng) -> float:
    return float(pace_ggm(X, rho=_FIT_RHO, bound=_BOUND, random_state=rng).covariance[1, 0])


# --- AdaptiveCov's choice of clipping radius -----------------------------------------------------

# A large budget: the sparse vector's noise then leaves the shift of its queries visible.
_ADAPTIVE_N, _ADAPTIVE_RHO = 50, 128.0


def _adaptive_level(X, rng) -> float:
    return float(AdaptiveCov(rho=_ADAPTIVE_RHO, bound=_BOUND, random_state=rng).fit(X).level_index_)


def _adaptive_inputs():
    D = np.zeros((_ADAPTIVE_N, 2))
    D_prime = D.copy()
    D_prime[0] = _BOUND  # a row at the largest norm, sqrt(d)·B, where D has the smallest
    return D, D_prime


# --- the round loop: mutants of its sensitivities and noise scales ------------------------------
#
# A whole fit at the default (α, β) spreads its budget over many releases, and one statistic of
# one release sees only a share of it: a factor 2 in one calibration can stay below the claim.
# Each configuration below puts almost all of ρ on the release a mutant touches, on neighbours
# that move that release as far as its sensitivity allows, so a factor 2 in its calibration (a
# factor 4 in its ρ) shows up as a loss above the whole fit's claim.

@contextlib.contextmanager
def _mutated(module, name: str, replacement):
    """``module.name`` replaced for the duration: the call site sees the mutant, nothing else changes."""
    original = getattr(module, name)
    setattr(module, name, replacement(original))
    try:
        yield
    finally:
        setattr(module, name, original)


def _halve_sensitivity(mechanism):
    return lambda *args, sensitivity, **kw: mechanism(*args, sensitivity=sensitivity / 2.0, **kw)


def _halve_sigma(gaussian_sigma_):
    return lambda **kw: gaussian_sigma_(**kw) / 2.0


def _double_epsilon(epsilon_of):
    return lambda rho: 2.0 * epsilon_of(rho)


MUTATIONS = {
    "measure_sensitivity_half": (_estimator, "gaussian_mechanism", _halve_sensitivity),
    "noise_sigma_half": (_mechanisms, "gaussian_sigma", _halve_sigma),
    "select_sensitivity_half": (_estimator, "exponential_mechanism", _halve_sensitivity),
    "select_epsilon_double": (_mechanisms, "exponential_mechanism_epsilon", _double_epsilon),
}

# The statistics of the two cases below are drawn before the round's reconstruction (with T = 1
# nothing is selected after it), so the solver changes their cost, not one draw (tested): the
# cheapest one runs, 5-8x faster a fit than the maximum-entropy Newton path at these sizes.
_AUDIT_SOLVER = "pgd1"
# Measurement: one round after the diagonal; 85.5% of ρ measures the selected entry, and the
# off-diagonal entry (score 0.5 against the diagonals' noise ~0.09) is selected almost surely.
_MEASURE_KW = dict(rho=1.0, bound=_BOUND, alpha=0.05, beta=0.1, max_rounds=1, solver=_AUDIT_SOLVER)
_NOT_RELEASED = -10.0  # the statistic when entry (1, 0) was not measured (never, in practice)


def _measure_inputs():
    D = np.ones((_FIT_N, 2))
    D[_FIT_N * 3 // 4:, 1] = -1.0  # Σ₁₀ = 0.5
    D_prime = D.copy()
    D_prime[0, 1] = -1.0  # one row (1, 1) made (1, -1): Σ₁₀ moves by 2B²/n
    return D, D_prime


def _released_offdiagonal(X, rng) -> float:
    res = pace_ggm(X, random_state=rng, **_MEASURE_KW)
    return next((m.value for m in res.measurements if m.entry == (1, 0)), _NOT_RELEASED)


# Selection: 90.25% of ρ selects once among the 6 off-diagonal entries of d = 4 (the diagonals,
# scored by their noise, are never chosen). The replaced row x = (1, 1, -1, -1) ↔ x' = (1, -1, 1, -1)
# moves Σ₁₀, Σ₃₂ down by 2B²/n and Σ₂₀, Σ₃₁ up by as much: the exponential mechanism's worst case.
_SELECT_KW = dict(rho=1.0, bound=_BOUND, alpha=0.05, beta=0.95, max_rounds=1, solver=_AUDIT_SOLVER)
_HIGH_ON_D, _HIGH_ON_D_PRIME = {(1, 0), (3, 2)}, {(2, 0), (3, 1)}


def _select_inputs():
    hadamard = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]], dtype=float)
    base = np.vstack([np.ones((_FIT_N - 41, 4)), np.tile(hadamard, (10, 1))])  # every Σ_jk ≈ 0.6
    return (np.vstack([[1.0, 1.0, -1.0, -1.0], base]), np.vstack([[1.0, -1.0, 1.0, -1.0], base]))


def _selected_group(X, rng) -> float:
    entry = pace_ggm(X, random_state=rng, **_SELECT_KW).history[0].entry
    return 1.0 if entry in _HIGH_ON_D else -1.0 if entry in _HIGH_ON_D_PRIME else 0.0


def _mutant(run, mutation: str):
    module, name, replacement = MUTATIONS[mutation]

    def mutated_run(X, rng) -> float:
        with _mutated(module, name, replacement):
            return run(X, rng)

    return mutated_run


# --- the baselines: the released entry, and every Gaussian noise scale halved --------------------

_BASELINE_N = 100


def _baseline_run(cls):
    def run(X, rng) -> float:
        return float(cls(rho=1.0, bound=_BOUND, random_state=rng).fit(X).covariance_[1, 0])

    return run


_ENTRY_NEIGHBOURS = f"n={_N_ENTRY}, d=2, B=1: one row (1, -1) vs (1, 1), the rest 0 (entry moves by 2B²/n)"
_EM_NEIGHBOURS = f"{_EM_CANDIDATES} scores: all 0 vs (Δ, -Δ, …, -Δ), Δ = 2B²/n = {_DELTA:g}"
_MEASURE_NEIGHBOURS = f"n={_FIT_N}, d=2, B=1: rows (1, 1) ×3/4, (1, -1) ×1/4 vs one (1, 1) made (1, -1)"
_SELECT_NEIGHBOURS = (f"n={_FIT_N}, d=4, B=1: 59 rows of ones, 40 Hadamard rows, and (1, 1, -1, -1) vs (1, -1, 1, -1): "
                      "Σ₁₀, Σ₃₂ down by 2B²/n, Σ₂₀, Σ₃₁ up")
_SELECT_STATISTIC = "round-1 entry: +1 if (1,0)/(3,2), -1 if (2,0)/(3,1), else 0"
_BALANCED_NEIGHBOURS = f"n={_BASELINE_N}, d=2, B=1: rows (1, ±1) half each vs one (1, -1) made (1, 1)"
# Baselines whose released entry is calibrated within a factor sqrt(2) of its true sensitivity at
# d = 2, so that halving their noise (4× the ρ) must show; see docs/audit.md for the rest.
# Draws of the broken control: SSP's and GaussCov's correct release uses half the claim, so their
# mutant (twice the claim) needs more draws than SSPTight's (four times).
_AUDITED_BASELINES = {SSP: 20_000, SSPTight: 5000, GaussCov: 20_000}

# --- every registered method, each mechanism invocation of one fit audited on its own -----------
#
# The whole-fit cases above see a fit's budget through one statistic of its release; these see each
# invocation (paceggm.bench.audit.invocations), so a fit at its default configuration, whose budget
# is spread over many releases, is audited at every one of them. Each method also has a control
# whose noise makes its true ρ twice its claim: "twice" is against the truth, so a method whose
# sensitivity is conservative gets less noise still. SSP, SSPProjected, GaussCov and CoinPress (at each
# step) calibrate to sqrt(2)× the true sensitivity of their release at d = 2 (σ/2 makes them 2×),
# DiagonalOnly to 2× that of a variance (σ/(2 sqrt 2)); the others' most exactly calibrated release (an off-diagonal
# entry, the trace, the eigenvalues, Xᵀy) is at 2× with σ/sqrt(2). Every exponential mechanism, sparse
# vector and Laplace mechanism gets ε·sqrt(2) (2× in zCDP terms), EMCov's ε·2.5 (below).

_PACEGGM_DRAWS, _BASELINE_DRAWS = 100_000, 200_000
_SIGMA_AT_TWICE = {"ssp": 0.5, "ssp_projected": 0.5, "gausscov": 0.5, "coinpress": 0.5,
                   "diagonal": 0.5 / math.sqrt(2.0)}
# EMCov's Laplace release of the eigenvalues is loose against its claim ε²/2: its ℓ1 move (2/n) splits
# over two eigenvalues at ε/2 each, and the true ρ of that pair (the largest D_α/α of the two Laplace
# shifts, computed) is 0.43 of the claim; ε × 2.5 makes it 2.1 times the claim (ε × sqrt 2: 0.80).
_EPSILON_AT_TWICE = {"emcov": 2.5}


def _times(factor):
    return lambda f: lambda *args, **kw: factor * f(*args, **kw)


def _at_twice_the_claim(sigma_factor: float, epsilon_factor: float = math.sqrt(2.0)):
    """The control's calibration: every Gaussian σ times ``sigma_factor``, every ε times ``epsilon_factor``."""

    @contextlib.contextmanager
    def mutation():
        with contextlib.ExitStack() as stack:
            stack.enter_context(_mutated(_mechanisms, "gaussian_sigma", _times(sigma_factor)))
            for module, name in ((_mechanisms, "exponential_mechanism_epsilon"),
                                 (_selection, "exponential_mechanism_epsilon"),
                                 (_mechanisms, "sparse_vector_epsilon"),
                                 (_mechanisms, "laplace_epsilon")):
                stack.enter_context(_mutated(module, name, _times(epsilon_factor)))
            yield

    return mutation


# n = 100, d = 3 (a regression's two features and y): Σ₁₀ = Σ₂₀ = 0.5, Σ₂₁ = 0, so PACE-GGM's first
# selection is between two equal candidates, where the exponential mechanism loses all its ε²/8.
def _three_columns():
    D = np.vstack([np.tile([1.0, 1.0, 1.0], (50, 1)), np.tile([1.0, 1.0, -1.0], (25, 1)),
                   np.tile([1.0, -1.0, 1.0], (25, 1))])
    D_prime = D.copy()
    D_prime[0] = (1.0, -1.0, -1.0)
    return D, D_prime


_INVOCATION_INPUTS = {"covariance": (_balanced_signs(_BASELINE_N, 0), _balanced_signs(_BASELINE_N, 1)),
                      "regression": _three_columns()}
_INVOCATION_NEIGHBOURS = {
    "covariance": f"D: n={_BASELINE_N}, d=2, B=1, rows (1, ±1) half each; D': each query moved as far as a record "
                  "of {-1, 0, 1}^d replacing one of D's moves it",
    "regression": "D: n=100, [x, y] in {±1}^3: (1, 1, 1) ×50, (1, 1, -1) ×25, (1, -1, 1) ×25; D': each query moved "
                  "as far as a record of {-1, 0, 1}^3 replacing one of D's moves it",
}
# PACE-GGM is audited on the regression's data too: three columns, two equal first candidates.
_PACEGGM_TASK = {"paceggm": "regression"}


def _method_fit(spec):
    cls = resolve(spec)
    if spec.task == "regression":
        return lambda D, rng: cls(rho=1.0, bound=_BOUND, random_state=rng).fit(D[:, :-1], D[:, -1])
    return lambda D, rng: cls(rho=1.0, bound=_BOUND, random_state=rng).fit(D)


def _invocation_cases(spec) -> tuple[InvocationCase, ...]:
    data = _PACEGGM_TASK.get(spec.key, spec.task)
    label = spec.target.partition(":")[2]  # the class: two registered methods share the label "PACE-GGM"
    common = dict(neighbours=_INVOCATION_NEIGHBOURS[data], rho=1.0, fit=_method_fit(spec),
                  inputs=_INVOCATION_INPUTS[data], bound=_BOUND,
                  statistic="each invocation: its release (Gaussian, projected on the move) or its count of one "
                            "candidate (exponential), over k copies")
    factor = _SIGMA_AT_TWICE.get(spec.key, 1.0 / math.sqrt(2.0))
    eps_factor = _EPSILON_AT_TWICE.get(spec.key, math.sqrt(2.0))
    eps_text = "sqrt 2" if eps_factor == math.sqrt(2.0) else f"{eps_factor:g}"
    # A fit of PACE-GGM has a dozen invocations or more, each drawn k-fold and re-audited for the
    # power; a baseline's one to three can have more draws at the same cost.
    common["draws"] = _PACEGGM_DRAWS if spec.key.startswith("paceggm") else _BASELINE_DRAWS
    return (
        InvocationCase(f"invocations_{spec.key}", f"{label} fit (class defaults, ρ = 1): every invocation",
                       broken=False, **common),
        InvocationCase(f"invocations_{spec.key}_twice", f"BROKEN: {label} fit, true ρ twice the claim "
                       f"(σ × {factor:.3g}, ε × {eps_text}): every invocation", broken=True,
                       mutation=_at_twice_the_claim(factor, eps_factor), **common),
    )


def _paceggm_variant(**params):
    return lambda D, rng: PACEGGM(rho=1.0, bound=_BOUND, random_state=rng, **params).fit(D)


# PACE-GGM's other selection sampler (PairSampler), and its private mean, on the same data.
_PACEGGM_VARIANTS = {
    "rows": ("PACE-GGM fit, sampler='rows'", dict(sampler="rows"), None),
    "centred": ("PACE-GGM fit, centred on its private mean", dict(assume_centered=False),
                lambda X, fitted: X - fitted.location_),
}


def _variant_cases(key, label, params, view) -> tuple[InvocationCase, ...]:
    common = dict(neighbours=_INVOCATION_NEIGHBOURS["regression"], rho=1.0, fit=_paceggm_variant(**params),
                  inputs=_INVOCATION_INPUTS["regression"], bound=_BOUND, statistic="each invocation, as above",
                  data_view=view, draws=_PACEGGM_DRAWS)
    factor = 1.0 / math.sqrt(2.0)
    return (InvocationCase(f"invocations_paceggm_{key}", f"{label}: every invocation", broken=False, **common),
            InvocationCase(f"invocations_paceggm_{key}_twice", f"BROKEN: {label}, true ρ twice the claim "
                           f"(σ × {factor:.3g}, ε × sqrt 2): every invocation", broken=True,
                           mutation=_at_twice_the_claim(factor), **common))


load_plugins()  # the methods of user modules ($PACEGGM_PLUGINS, entry points) are audited like the others
INVOCATION_CASES: tuple[InvocationCase, ...] = (
    *(c for spec in METHODS.values() for c in _invocation_cases(spec)),
    *(c for key, variant in _PACEGGM_VARIANTS.items() for c in _variant_cases(key, *variant)),
)

CASES: tuple[AuditCase, ...] = (
    AuditCase("gaussian", "Gaussian mechanism on one entry of XᵀX/n", _ENTRY_NEIGHBOURS, "released value",
              _GAUSS_RHO, None, False, _gaussian, _one_record_apart((1.0, -1.0), (1.0, 1.0), _N_ENTRY)),
    AuditCase("exponential", "exponential mechanism (selection)", _EM_NEIGHBOURS, "selected index",
              _EM_RHO, exponential_mechanism_epsilon(_EM_RHO), False, _exponential,
              (_SCORES, _SCORES_PRIME)),
    AuditCase("pace_ggm", "PACE-GGM fit (α=0.3, β=0.5, Newton)",
              f"n={_FIT_N}, d=2, B=1: rows (1, ±1) half each vs one (1, -1) made (1, 1)",
              "estimated covariance[1, 0]", _FIT_RHO, None, False, _pace_ggm_fit,
              (_balanced_signs(_FIT_N, 0), _balanced_signs(_FIT_N, 1)), draws=20_000),
    AuditCase("adaptivecov_threshold", "AdaptiveCov: noisy trace + sparse vector over radii",
              f"n={_ADAPTIVE_N}, d=2, B=1: all rows 0 vs one row (1, 1)", "chosen level index",
              # the index is post-processing of the trace (ρ/8) and the sparse vector (ρ/8)
              _ADAPTIVE_RHO / 4, None, False, _adaptive_level, _adaptive_inputs(), draws=50_000),
    AuditCase("pace_ggm_measure", "PACE-GGM fit, budget on the measurement (α=0.05, β=0.1, T=1)",
              _MEASURE_NEIGHBOURS, "released measurement of entry (1, 0)", 1.0, None, False,
              _released_offdiagonal, _measure_inputs(), draws=4000),
    AuditCase("pace_ggm_select", "PACE-GGM fit, budget on the selection (α=0.05, β=0.95, T=1)",
              _SELECT_NEIGHBOURS, _SELECT_STATISTIC, 1.0, None, False, _selected_group, _select_inputs(), draws=4000),
    *(AuditCase(f"baseline_{cls.__name__.lower()}", f"{cls.__name__} fit", _BALANCED_NEIGHBOURS,
                "released covariance[1, 0]", 1.0, None, False, _baseline_run(cls),
                (_balanced_signs(_BASELINE_N, 0), _balanced_signs(_BASELINE_N, 1)), draws=5000)
      for cls in _AUDITED_BASELINES),
    AuditCase("gaussian_half_noise", "BROKEN: Gaussian mechanism with half the noise", _ENTRY_NEIGHBOURS,
              "released value", _GAUSS_RHO, None, True, _gaussian_half_noise,
              _one_record_apart((1.0, -1.0), (1.0, 1.0), _N_ENTRY)),
    AuditCase("exponential_half_sensitivity", "BROKEN: exponential mechanism with half the sensitivity",
              _EM_NEIGHBOURS, "selected index", _EM_RHO, exponential_mechanism_epsilon(_EM_RHO), True,
              _exponential_half_sensitivity, (_SCORES, _SCORES_PRIME)),
    *(AuditCase(f"pace_ggm_{mutation}", f"BROKEN: PACE-GGM fit, {what}", _MEASURE_NEIGHBOURS,
                "released measurement of entry (1, 0)", 1.0, None, True, _mutant(_released_offdiagonal, mutation),
                _measure_inputs(), draws=2000)
      for mutation, what in (("measure_sensitivity_half", "measurement sensitivity halved"),
                             ("noise_sigma_half", "every Gaussian noise σ halved"))),
    *(AuditCase(f"pace_ggm_{mutation}", f"BROKEN: PACE-GGM fit, {what}", _SELECT_NEIGHBOURS, _SELECT_STATISTIC,
                1.0, None, True, _mutant(_selected_group, mutation), _select_inputs(), draws=2000)
      for mutation, what in (("select_sensitivity_half", "selection sensitivity halved"),
                             ("select_epsilon_double", "selection ε = 2·sqrt(8ρ)"))),
    *(AuditCase(f"baseline_{cls.__name__.lower()}_noise_sigma_half", f"BROKEN: {cls.__name__}, every noise σ halved",
                _BALANCED_NEIGHBOURS, "released covariance[1, 0]", 1.0, None, True,
                _mutant(_baseline_run(cls), "noise_sigma_half"),
                (_balanced_signs(_BASELINE_N, 0), _balanced_signs(_BASELINE_N, 1)), draws=draws)
      for cls, draws in _AUDITED_BASELINES.items()),
    *INVOCATION_CASES,
)

# The exact samplers' cases (noise="exact") live in their own module, which reads the names above.
from .exact_noise_cases import EXACT_NOISE_CASES  # noqa: E402

CASES += EXACT_NOISE_CASES

# PrivateGridSearch's cases live in their own module, which reads AuditCase and _mutated above.
from .search_cases import SEARCH_CASES  # noqa: E402

CASES += SEARCH_CASES

# The published Wishart mechanism (not private) and a private release of its query: their own module.
from .wishart_cases import WISHART_CASES  # noqa: E402

CASES += WISHART_CASES

# The bound's rounding allowance, on data that reach it, and a control whose allowance admits too much.
from .bound_cases import BOUND_CASES  # noqa: E402

CASES += BOUND_CASES

# The exponential mechanism on the sphere (EMCov's eigenvectors), which the invocation audit does not redraw.
from .sphere_cases import SPHERE_CASES  # noqa: E402

CASES += SPHERE_CASES
