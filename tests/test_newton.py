"""The Newton solver: KKT conditions, closed forms, agreement with IPM-Cholesky."""

from __future__ import annotations

import numpy as np
import pytest

from paceggm import PACEGGM, pace_ggm
from paceggm.reconstruction import SOLVERS, NewtonState, reconstruct
from paceggm.reconstruction.chordal import chordal_maxdet_completion
from paceggm.reconstruction.problem import make_problem, natural_units


def _random_pattern(d: int, n_off: int, rng: np.random.Generator) -> np.ndarray:
    """The diagonal and ``n_off`` off-diagonal pairs drawn uniformly (as the solver benchmark's problems)."""
    rows, cols = np.tril_indices(d, -1)
    pick = rng.choice(rows.size, n_off, replace=False)
    pat = np.zeros((d, d), dtype=bool)
    pat[rows[pick], cols[pick]] = True
    return pat | pat.T | np.eye(d, dtype=bool)


def _random_cov(d: int, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    A = rng.normal(size=(d, 2 * d))
    return scale * (A @ A.T / (2 * d) + 0.1 * np.eye(d))


def _lam_for(pattern: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Symmetric precisions on ``pattern`` (diagonal always), spread over two decades."""
    d = pattern.shape[0]
    lam = np.tril(np.where(pattern | np.eye(d, dtype=bool), 10 ** rng.uniform(0, 2, size=(d, d)), 0.0))
    return lam + np.tril(lam, -1).T


def _noisy(cov: np.ndarray, pattern: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    E = np.tril(rng.normal(scale=noise, size=cov.shape))
    E = E + np.tril(E, -1).T
    return np.where(pattern, cov + E, 0.0)


def _block_mu(rec, idx) -> float:
    return rec.blocks[tuple(int(i) for i in idx)]["mu"]


def _barrier(W, y, lam, mu) -> float:
    """``L(W) − μ log det W`` in data units (lower-triangle pairs counted once)."""
    r, c = np.nonzero(np.tril(lam > 0))
    res = W[r, c] - y[r, c]
    sign, logdet = np.linalg.slogdet(W)
    assert sign > 0
    return float(np.sum(lam[r, c] * res * res)) - mu * logdet


def test_newton_is_registered_and_auto_is_the_default():
    assert SOLVERS["newton"].max_entropy and SOLVERS["newton"].warm_start
    # the library's default is "auto" (an exact Newton path per block); "newton", the reference, is one argument away
    assert SOLVERS["auto"].max_entropy and SOLVERS["auto"].warm_start
    assert PACEGGM(1.0).solver == "auto" and PACEGGM(1.0, solver="newton").solver == "newton"
    X = np.random.default_rng(0).uniform(-1, 1, size=(300, 4))
    assert pace_ggm(X, rho=1.0, random_state=0).solver == "auto"
    assert pace_ggm(X, rho=1.0, random_state=0, solver="newton").solver == "newton"
    y = np.array([[1.0, 0.5], [0.5, 1.0]])
    assert reconstruct(y, np.ones((2, 2))).solver == "auto"
    assert reconstruct(y, np.ones((2, 2)), solver="newton").solver == "newton"


@pytest.mark.parametrize("seed", range(4))
def test_kkt_conditions_at_the_exact_limit(seed):
    rng = np.random.default_rng(seed)
    d = 30
    pattern = _random_pattern(d, 2 * d, rng)
    y = np.where(pattern, _random_cov(d, rng, scale=10.0 ** rng.uniform(-3, 3)), 0.0)
    lam = _lam_for(pattern, rng)
    rec = reconstruct(y, lam, solver="newton")
    W = rec.covariance
    assert rec.mu == 0.0  # noise-free: the μ → 0 limit is reached exactly
    # Primal feasibility on S, inverse zero off S.
    assert np.max(np.abs(W - y)[pattern]) <= 1e-12 * np.max(np.abs(y))
    P = np.linalg.inv(W)
    assert np.max(np.abs(P[~pattern])) <= 1e-12 * np.max(np.abs(P))
    assert np.linalg.eigvalsh(W).min() > 0


@pytest.mark.parametrize("mu_min", [1e-6, 1e-8])
@pytest.mark.parametrize("seed", range(3))
def test_kkt_conditions_at_a_barrier_solution(seed, mu_min):
    """Non-completable noise: ``W_jk = y_jk + μ P_jk/λ_jk``, ``W_jj = y_jj + μ P_jj/(2λ_jj)``.

    Here ``P`` grows like ``1/μ``; ``W = P⁻¹`` then carries a rounding error of
    about ``cond(P)·eps`` relative, which is the floor any solver working in
    double precision hits, so the tolerance is stated in those terms.
    """
    rng = np.random.default_rng(100 + seed)
    d = 25
    pattern = _random_pattern(d, 3 * d, rng)
    y = _noisy(_random_cov(d, rng), pattern, 1.0, rng)
    y[0, 0] = -0.2  # a negative measured diagonal: certainly not completable
    lam = _lam_for(pattern, rng)
    rec = reconstruct(y, lam, solver="newton", use_components=False, solver_options=dict(mu_min=mu_min))
    W = rec.covariance
    mu = rec.mu
    assert mu is not None and mu > 0  # the estimate is the barrier solution at μ_min
    s, lb = natural_units(y, lam)
    assert mu == pytest.approx(mu_min * s * s * lb, rel=1e-12)
    # Check the solver's own precision (exactly sparse) rather than inverting the
    # ill-conditioned W again, and that W is its inverse.
    (block,) = rec.blocks.values()
    P = block["state"].precision / block["state"].scale
    assert not np.any(P[~pattern])
    cond = np.linalg.cond(P)
    floor = 10 * np.finfo(float).eps * cond
    assert floor < 1e-3
    assert np.max(np.abs(W @ P - np.eye(d))) <= floor * 100
    target = y + mu * P / np.where(np.eye(d, dtype=bool), 2.0 * lam, np.where(pattern, lam, 1.0))
    assert np.max(np.abs(W - target)[pattern]) <= max(1e-12, floor) * np.abs(y).max()


def _banded(d: int, b: int):
    cliques = [list(range(i, i + b + 1)) for i in range(d - b)]
    separators = [list(range(i + 1, i + b + 1)) for i in range(d - b - 1)]
    pattern = np.abs(np.subtract.outer(np.arange(d), np.arange(d))) <= b
    return pattern, cliques, separators


def _tree(d: int, rng: np.random.Generator):
    parent = [int(rng.integers(0, i)) for i in range(1, d)]
    cliques = [[i + 1, p] for i, p in enumerate(parent)]
    degree = np.bincount(np.array(cliques).ravel(), minlength=d)
    separators = [[v] for v in range(d) for _ in range(degree[v] - 1)]
    pattern = np.eye(d, dtype=bool)
    for a, b in cliques:
        pattern[a, b] = pattern[b, a] = True
    return pattern, cliques, separators


@pytest.mark.parametrize("kind", ["band1", "band3", "tree", "tree2"])
def test_chordal_patterns_match_the_closed_form(kind):
    rng = np.random.default_rng(hash(kind) % 2**32)
    d = 40
    if kind.startswith("band"):
        pattern, cliques, seps = _banded(d, int(kind[-1]))
    else:
        pattern, cliques, seps = _tree(d, rng)
    sigma = _random_cov(d, rng)
    expected = chordal_maxdet_completion(sigma, cliques, seps)
    y = np.where(pattern, sigma, 0.0)
    lam = _lam_for(pattern, rng)
    rec = reconstruct(y, lam, solver="newton")
    assert rec.mu == 0.0
    err = np.max(np.abs(rec.covariance - expected)) / np.max(np.abs(expected))
    assert err <= 1e-8


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("noise", [0.0, 0.4])
def test_barrier_objective_never_worse_than_ipm(seed, noise):
    rng = np.random.default_rng(200 + seed)
    d = 15
    pattern = _random_pattern(d, 2 * d, rng)
    y = _noisy(_random_cov(d, rng), pattern, noise, rng)
    lam = _lam_for(pattern, rng)
    mu_min = 1e-6
    opts = dict(mu_min=mu_min)
    newton = reconstruct(y, lam, solver="newton", use_components=False,
                         solver_options=dict(opts, exact_limit=False))
    # IPM with the caps of its "tight" settings, which converge at this size.
    ipm = reconstruct(y, lam, solver="ipm", use_components=False,
                      solver_options=dict(opts, warm_start=False, stage_maxiter=5000, maxiter=7500))
    assert newton.mu == pytest.approx(ipm.mu, rel=1e-12)
    f_newton = _barrier(newton.covariance, y, lam, newton.mu)
    f_ipm = _barrier(ipm.covariance, y, lam, ipm.mu)
    assert f_newton <= f_ipm + 1e-12 * abs(f_ipm)
    # And they are the same point up to IPM's own convergence error.
    assert np.max(np.abs(newton.covariance - ipm.covariance)) <= 1e-2 * np.max(np.abs(newton.covariance))


def _rounds(d: int, n_rounds: int, noise: float, seed: int):
    """Measurement states of a PACE-GGM-like run: one entry (re)measured per round."""
    rng = np.random.default_rng(seed)
    sigma = _random_cov(d, rng)
    y = np.diag(np.diag(sigma) + rng.normal(scale=noise, size=d))
    lam = np.eye(d)
    rows, cols = np.tril_indices(d)
    out = []
    for _ in range(n_rounds):
        i = rng.integers(rows.size)
        j, k = rows[i], cols[i]
        z = sigma[j, k] + rng.normal(scale=noise)
        new_lam = lam[j, k] + 1.0
        y[j, k] = y[k, j] = (lam[j, k] * y[j, k] + z) / new_lam
        lam[j, k] = lam[k, j] = new_lam
        out.append((y.copy(), lam.copy()))
    return out


@pytest.mark.parametrize("noise", [0.0, 0.05, 0.5])
def test_warm_start_equals_cold_start(noise):
    previous = None
    n_warm = 0
    for y, lam in _rounds(20, 40, noise, seed=7):
        warm = reconstruct(y, lam, solver="newton", previous=previous)
        cold = reconstruct(y, lam, solver="newton")
        n_warm += warm.n_solved
        scale = np.max(np.abs(cold.covariance))
        # 1e-8, or the rounding floor cond(P)·eps of a barrier solution whose P
        # grows like 1/μ (non-completable measurements at μ_min).
        conds = [np.linalg.cond(b["state"].precision) for b in cold.blocks.values() if b["state"].mu > 0]
        tol = max([1e-8] + [10 * np.finfo(float).eps * c for c in conds])
        assert tol <= 1e-5
        assert np.max(np.abs(warm.covariance - cold.covariance)) <= tol * scale
        assert warm.mu == cold.mu or abs(warm.mu - cold.mu) <= 1e-12 * max(warm.mu, cold.mu)
        previous = warm
    assert n_warm > 0


def test_warm_start_converts_between_normalisations():
    """A block re-solved after its scale changed starts from the right precision."""
    rng = np.random.default_rng(3)
    d = 12
    pattern = _random_pattern(d, 2 * d, rng)
    sigma = _random_cov(d, rng)
    y = np.where(pattern, sigma, 0.0)
    lam = _lam_for(pattern, rng)
    first = reconstruct(y, lam, solver="newton", use_components=False)
    (state,) = [b["state"] for b in first.blocks.values()]
    assert isinstance(state, NewtonState) and state.mu == 0.0
    # Precision in data units is state.precision / state.scale.
    np.testing.assert_allclose(state.precision / state.scale, np.linalg.inv(first.covariance),
                               rtol=1e-9, atol=1e-9 * np.abs(state.precision).max() / state.scale)
    # The same precision stored under another normalisation (s' = 7s, P' = 7P) is
    # converted back and already optimal: the solver only confirms it (one or two
    # steps per stage), whereas taken at face value it would be 7× off.
    from paceggm.reconstruction.newton import solve_newton

    s, lb = natural_units(y, lam)
    prob = make_problem(y, lam, scale=s, lam_unit=lb)
    moved = NewtonState(state.precision * 7.0, state.scale * 7.0, 0.0)
    sol = solve_newton(prob, init=[(np.arange(d), moved)])
    assert sol.mu == 0.0 and sol.n_iter <= 4
    np.testing.assert_allclose(sol.W * s, first.covariance, rtol=1e-10, atol=1e-12)
    unconverted = NewtonState(state.precision * 7.0, state.scale, 0.0)
    assert solve_newton(prob, init=[(np.arange(d), unconverted)]).n_iter > sol.n_iter


@pytest.mark.parametrize("noise", [0.0, 0.5])
def test_components_on_and_off_agree(noise):
    rng = np.random.default_rng(11)
    d = 30
    sigma = _random_cov(d, rng)
    # Three blocks with no measured entry between them, plus two singletons.
    pattern = np.eye(d, dtype=bool)
    for lo, hi in [(0, 10), (10, 18), (18, 28)]:
        sub = _random_pattern(hi - lo, 2 * (hi - lo), rng)
        pattern[lo:hi, lo:hi] = sub
    y = _noisy(sigma, pattern, noise, rng)
    lam = _lam_for(pattern, rng)
    on = reconstruct(y, lam, solver="newton", use_components=True)
    off = reconstruct(y, lam, solver="newton", use_components=False)
    assert len(on.components) == 5
    scale = np.max(np.abs(on.covariance))
    if noise == 0.0:
        assert on.mu == 0.0 and off.mu == 0.0
        assert np.max(np.abs(on.covariance - off.covariance)) <= 1e-10 * scale
    else:
        # Off: one block at μ_min (units of the whole matrix); on: each block at its
        # own μ_min or exactly 0. Barrier solutions at μ_min are within ~1e-7 relative
        # of the limit on the blocks where it exists.
        assert np.max(np.abs(on.covariance - off.covariance)) <= 1e-5 * scale


def test_zero_and_negative_diagonals_are_handled():
    y = np.array([[1.0, 0.3, 0.0], [0.3, 0.0, 0.2], [0.0, 0.2, -0.5]])
    lam = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 3.0], [0.0, 3.0, 1.0]])
    rec = reconstruct(y, lam, solver="newton")
    W = rec.covariance
    assert np.all(np.isfinite(W)) and np.linalg.eigvalsh(W).min() > 0
    assert rec.mu > 0  # not completable: defined at μ_min
    # The least-squares projection trades the negative diagonal against its
    # measured neighbour: small and positive, and IPM agrees.
    assert 0 < W[2, 2] < 0.05
    ipm = reconstruct(y, lam, solver="ipm")
    assert np.max(np.abs(ipm.covariance - W)) <= 1e-2 * np.max(np.abs(W))
    all_zero = reconstruct(np.zeros((2, 2)), np.ones((2, 2)), solver="newton")
    assert np.all(np.isfinite(all_zero.covariance)) and np.abs(all_zero.covariance).max() < 1e-3


def test_divergence_guard_falls_back_to_the_last_good_stage():
    """At an absurdly small μ_min a non-completable block keeps the last μ it resolved."""
    rng = np.random.default_rng(5)
    d = 12
    pattern = _random_pattern(d, 3 * d, rng)
    y = _noisy(_random_cov(d, rng), pattern, 1.0, rng)
    lam = _lam_for(pattern, rng)
    rec = reconstruct(y, lam, solver="newton", use_components=False,
                      solver_options=dict(mu_min=1e-30, mu_factor=1e-2))
    s, lb = natural_units(y, lam)
    assert np.all(np.isfinite(rec.covariance)) and np.linalg.eigvalsh(rec.covariance).min() > 0
    assert 1e-30 * s * s * lb <= rec.mu
    ref = reconstruct(y, lam, solver="newton", use_components=False,
                      solver_options=dict(mu_min=rec.mu / (s * s * lb), exact_limit=False))
    assert rec.mu > 1e-12 * s * s * lb  # it did stop short of the requested μ_min
    # Same barrier problem, both at the rounding floor of that tiny μ.
    assert np.max(np.abs(rec.covariance - ref.covariance)) <= 1e-5 * np.max(np.abs(ref.covariance))


def test_rejects_bad_schedules():
    y = np.array([[1.0, 0.5], [0.5, 1.0]])
    with pytest.raises(ValueError, match="mu_min"):
        reconstruct(y, np.ones((2, 2)), solver="newton", solver_options=dict(mu_min=1.0, mu0=0.1))
    with pytest.raises(ValueError, match="mu_factor"):
        reconstruct(y, np.ones((2, 2)), solver="newton", solver_options=dict(mu_factor=1.5))


def test_paceggm_runs_agree_between_newton_and_ipm():
    """Same seed, same selections as long as the estimates agree: compare final answers."""
    rng = np.random.default_rng(0)
    X = np.clip(rng.normal(size=(2000, 6)) @ rng.normal(size=(6, 6)) / 3, -1, 1)
    a = pace_ggm(X, rho=1.0, random_state=1, solver="newton")
    # Reconstruct IPM's answer from Newton's own measurements: no selection feedback.
    from paceggm.measurement import MeasuredEntries

    state = MeasuredEntries.from_measurements(6, a.measurements)
    ipm = reconstruct(state.y, state.lam, solver="ipm")
    newton = reconstruct(state.y, state.lam, solver="newton")
    np.testing.assert_allclose(newton.covariance, a.covariance, rtol=1e-8, atol=1e-12)
    assert np.max(np.abs(ipm.covariance - newton.covariance)) <= 1e-2 * np.max(np.abs(newton.covariance))


def test_far_from_completable_block_restarts_the_path_at_a_larger_mu():
    # A 2×2 block from a PACE-GGM run (thyroid_ann, ρ = 0.01): the measured
    # off-diagonal is 17× the largest variance and one variance is negative.
    # From the diagonal start, damped Newton needs > 200 steps at μ_0; the path
    # restarted at 1e3·μ_0 converges and the barrier KKT conditions hold.
    y = np.array([[-0.3593, -28.1567], [-28.1567, 1.6407]]) * 0.0054
    lam = np.array([[1.6243, 0.3790], [0.3790, 1.6243]]) * 625.66
    rec = reconstruct(y, lam, solver="newton")
    W = rec.covariance
    assert np.all(np.isfinite(W)) and np.linalg.eigvalsh(W).min() > 0
    assert rec.mu > 0  # not completable: the estimate is the barrier solution at μ_min
    # KKT with the solver's own precision (as in the tests above), to the
    # rounding floor cond(P)·eps of a barrier solution at tiny μ.
    (block,) = rec.blocks.values()
    P = block["state"].precision / block["state"].scale
    floor = 10 * np.finfo(float).eps * np.linalg.cond(P)
    target = y + rec.mu * P / np.where(np.eye(2, dtype=bool), 2.0 * lam, lam)
    assert np.max(np.abs(W - target)) <= max(1e-12, floor) * np.abs(y).max()


@pytest.mark.parametrize("mu", [0.0, 1e-8, 1e-2])
def test_hessian_factor_is_the_textbook_assembly_bit_for_bit(mu):
    """The gathered, in-place assembly keeps the reference's arithmetic: the committed results rest on it."""
    from scipy.linalg import cho_factor

    from paceggm.reconstruction.newton import _hessian_factor, _Pattern

    rng = np.random.default_rng(5)
    d = 30
    pattern = _random_pattern(d, 60, rng)
    A = rng.normal(size=(d, 2 * d))
    W = A @ A.T / (2 * d) + 0.1 * np.eye(d)
    pat = _Pattern(make_problem(np.where(pattern, W, 0.0), pattern.astype(float), scale=1.0, lam_unit=1.0))
    r, c = pat.r, pat.c
    H = pat.mm * (W[np.ix_(r, r)] * W[np.ix_(c, c)] + W[np.ix_(r, c)] * W[np.ix_(c, r)])
    H[np.diag_indices_from(H)] += mu * pat.q
    h_ref = np.sqrt(np.diag(H))
    cf_ref = cho_factor(H / np.outer(h_ref, h_ref), lower=True, check_finite=False)[0]
    (cf, lower), h = _hessian_factor(pat, W, mu)
    assert lower and np.array_equal(h, h_ref) and np.array_equal(np.tril(cf), np.tril(cf_ref))


@pytest.mark.parametrize("d", [1, 2, 63, 64, 65, 130, 300])
@pytest.mark.parametrize("kind", ["dense", "block_diagonal", "nearly_diagonal"])
def test_inverse_is_bit_for_bit_the_textbook_mirror(d, kind):
    """The blocked mirror of dpotri's triangle gives the bytes of ``Winv.T + tril(Winv, -1)``,
    the negative zeros dpotri leaves in block-diagonal inverses turned positive as that sum
    turns them, for sizes around the block of rows."""
    from scipy.linalg.lapack import dpotri

    from paceggm.reconstruction.newton import _factor, _inverse

    rng = np.random.default_rng(d)
    A = rng.normal(size=(d, d))
    P = A @ A.T / d + np.eye(d)
    if kind == "block_diagonal":
        h = d // 2
        P[:h, h:] = P[h:, :h] = 0.0
    elif kind == "nearly_diagonal":
        P = np.diag(rng.random(d) + 1.0)
        if d > 1:
            P[0, -1] = P[-1, 0] = -0.1
    L = _factor(P)
    Winv, _ = dpotri(L, lower=1)
    expected = Winv.T + np.tril(Winv, -1)
    W = _inverse(L)
    assert W.flags.c_contiguous and W.tobytes() == expected.tobytes()
    np.testing.assert_allclose(W, np.linalg.inv(P), rtol=1e-10, atol=1e-12)
