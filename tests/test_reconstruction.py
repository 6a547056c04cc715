"""Maximum-entropy reconstruction: known answers, decomposition, PGD vs IPM."""

import numpy as np
import pytest

from paceggm import SOLVERS, reconstruct
from paceggm.reconstruction import pattern_components
from paceggm.reconstruction.chordal import chordal_maxdet_completion

# Relative accuracy each max-entropy solver promises on well-posed problems.
# IPM-Cholesky is first-order and stalls (see its module docstring).
TOL = {"ipm": 2e-4, "newton": 1e-8, "newton_pcg": 1e-8, "newton_chordal": 1e-8, "newton_xp": 1e-8, "auto": 1e-8}
MAX_ENTROPY = [name for name, spec in SOLVERS.items() if spec.max_entropy]


def random_cov(d, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    return A @ A.T / d + 0.5 * np.eye(d)


def path_pattern(d):
    lam = np.eye(d)
    for j in range(1, d):
        lam[j, j - 1] = lam[j - 1, j] = 1.0
    return lam


def relerr(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("solver", MAX_ENTROPY)
def test_noise_free_path_pattern_gives_closed_form_completion(solver):
    d = 7
    S = random_cov(d, 0)
    lam = path_pattern(d)
    y = np.where(lam > 0, S, 0.0)
    truth = chordal_maxdet_completion(S, [[j, j + 1] for j in range(d - 1)], [[j] for j in range(1, d - 1)])
    rec = reconstruct(y, lam, solver=solver)
    assert relerr(rec.covariance, truth) < TOL[solver]
    # The inverse vanishes off the pattern (to the solver's accuracy).
    P = np.linalg.inv(rec.covariance)
    assert np.abs(P[lam == 0]).max() < 10 * TOL[solver] * np.abs(P).max()


@pytest.mark.parametrize("solver", MAX_ENTROPY)
def test_noise_free_two_clique_pattern(solver):
    # Cliques {0,1,2} and {2,3,4} sharing separator {2}: chordal, not a tree of edges.
    d = 5
    S = random_cov(d, 1)
    lam = np.zeros((d, d))
    for c in ([0, 1, 2], [2, 3, 4]):
        lam[np.ix_(c, c)] = 1.0
    y = np.where(lam > 0, S, 0.0)
    truth = chordal_maxdet_completion(S, [[0, 1, 2], [2, 3, 4]], [[2]])
    assert relerr(reconstruct(y, lam, solver=solver).covariance, truth) < TOL[solver]


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_diagonal_only_pattern_is_clipped_diagonal(solver):
    y = np.diag([0.5, -0.2, 1.3, 0.0])
    rec = reconstruct(y, np.diag([1.0, 2.0, 3.0, 4.0]), solver=solver)
    np.testing.assert_array_equal(rec.covariance, np.diag([0.5, 0.0, 1.3, 0.0]))


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_negative_measured_diagonal_gives_finite_psd(solver):
    S = random_cov(4, 2)
    lam = np.ones((4, 4))
    lam[3, 0] = lam[0, 3] = 0.0
    y = S.copy()
    y[1, 1] = -0.3  # noise made a variance negative: no PSD matrix fits exactly
    cov = reconstruct(y, lam, solver=solver).covariance
    assert np.all(np.isfinite(cov))
    assert np.linalg.eigvalsh(cov).min() >= -1e-10 * np.abs(cov).max()


@pytest.mark.parametrize("solver", MAX_ENTROPY)
def test_components_on_and_off_agree(solver):
    d = 6
    S = random_cov(d, 3)
    lam = np.eye(d) * 2.0
    for j, k in [(1, 0), (2, 1), (4, 3)]:  # components {0,1,2}, {3,4}, {5}
        lam[j, k] = lam[k, j] = 1.0
    rng = np.random.default_rng(0)
    noise = rng.normal(scale=0.01, size=(d, d))
    y = np.where(lam > 0, S + (noise + noise.T) / 2, 0.0)
    on = reconstruct(y, lam, solver=solver, use_components=True)
    off = reconstruct(y, lam, solver=solver, use_components=False)
    assert [list(c) for c in on.components] == [[0, 1, 2], [3, 4], [5]]
    assert len(off.components) == 1
    assert relerr(on.covariance, off.covariance) < 5 * TOL[solver]
    # Block diagonal across components.
    assert np.all(on.covariance[np.ix_([0, 1, 2], [3, 4, 5])] == 0)


def test_pgd_init_zero_agrees_across_decomposition_and_init_one_may_not():
    d = 4
    S = random_cov(d, 4)
    lam = np.eye(d)
    lam[1, 0] = lam[0, 1] = lam[3, 2] = lam[2, 3] = 1.0
    y = np.where(lam > 0, S, 0.0)
    on = reconstruct(y, lam, solver="pgd0", use_components=True).covariance
    off = reconstruct(y, lam, solver="pgd0", use_components=False).covariance
    np.testing.assert_allclose(on, off, atol=1e-7)
    off1 = reconstruct(y, lam, solver="pgd1", use_components=False).covariance
    # A minimiser of the loss too, but not block diagonal.
    assert abs(off1[2, 0]) > 1e-3


def test_ipm_has_larger_log_det_than_pgd_at_equal_loss():
    d = 6
    S = random_cov(d, 5)
    lam = path_pattern(d)
    y = np.where(lam > 0, S, 0.0)
    rows, cols = np.nonzero(np.tril(lam > 0))

    def loss(W):
        return float(np.sum(lam[rows, cols] * (W[rows, cols] - y[rows, cols]) ** 2))

    ipm = reconstruct(y, lam, solver="ipm").covariance
    for solver in ("pgd0", "pgd1"):
        pgd = reconstruct(y, lam, solver=solver).covariance
        # Both fit the (PSD-completable) measurements; the loss is ~0 for both.
        assert loss(ipm) < 1e-6 and loss(pgd) < 1e-6
        sign_p, logdet_p = np.linalg.slogdet(pgd)
        sign_i, logdet_i = np.linalg.slogdet(ipm)
        assert sign_i > 0
        assert sign_p <= 0 or logdet_i >= logdet_p


def test_unchanged_blocks_are_reused_exactly():
    d = 5
    S = random_cov(d, 6)
    lam = np.eye(d)
    lam[1, 0] = lam[0, 1] = lam[4, 3] = lam[3, 4] = 1.0
    y = np.where(lam > 0, S, 0.0)
    first = reconstruct(y, lam, solver="ipm")
    y2, lam2 = y.copy(), lam.copy()
    y2[3, 4] = y2[4, 3] = S[3, 4] * 0.9  # touch only the {3,4} block
    second = reconstruct(y2, lam2, solver="ipm", previous=first)
    assert second.n_solved == 1
    np.testing.assert_array_equal(second.covariance[:2, :2], first.covariance[:2, :2])


def test_pattern_components():
    pattern = np.eye(5, dtype=bool)
    pattern[4, 1] = pattern[1, 4] = True
    assert [list(c) for c in pattern_components(pattern)] == [[0], [1, 4], [2], [3]]


@pytest.mark.parametrize(
    "y, lam, err",
    [
        (np.eye(2), np.eye(3), ValueError),
        (np.ones(3), np.ones(3), ValueError),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), np.eye(2), ValueError),
        (np.eye(2), -np.eye(2), ValueError),
        (np.eye(2), np.array([[1.0, 0.0], [0.0, 0.0]]), ValueError),
        (np.array([[1.0, 0.2], [0.3, 1.0]]), np.ones((2, 2)), ValueError),
    ],
)
def test_bad_inputs(y, lam, err):
    with pytest.raises(err):
        reconstruct(y, lam)


def test_unknown_solver():
    with pytest.raises(ValueError, match="unknown solver"):
        reconstruct(np.eye(2), np.eye(2), solver="magic")


def test_ipm_mu_is_in_natural_units_and_matches_closed_form_barrier_solution():
    # Diagonal-only pattern solved as one block (components off): each entry
    # solves min λ(w−y)² − μ log w, i.e. w = (y + sqrt(y² + 2μ/λ))/2, with the
    # absolute μ = μ' · s²λ̄ (s = mean |y_jj|, λ̄ = geometric mean of λ).
    y = np.diag([0.8, -0.1, 2.0])
    lam = np.diag([4.0, 1.0, 0.25])
    mu_rel = 1e-2
    rec = reconstruct(y, lam, solver="ipm", use_components=False, solver_options={"mu0": 1e-1, "mu_min": mu_rel})
    s = np.abs(np.diag(y)).mean()
    lam_bar = np.exp(np.mean(np.log(np.diag(lam))))
    mu = mu_rel * s**2 * lam_bar
    assert np.isclose(rec.mu, mu)
    yd, ld = np.diag(y), np.diag(lam)
    expected = 0.5 * (yd + np.sqrt(yd**2 + 2 * mu / ld))
    np.testing.assert_allclose(np.diag(rec.covariance), expected, rtol=1e-6)
    # The default ends at μ_min = 1e-5, the "tight" preset at 1e-8, close to the μ → 0 limit max(y, 0).
    rec_default = reconstruct(y, lam, solver="ipm", use_components=False)
    mu = 1e-5 * s**2 * lam_bar
    assert np.isclose(rec_default.mu, mu)
    np.testing.assert_allclose(np.diag(rec_default.covariance), 0.5 * (yd + np.sqrt(yd**2 + 2 * mu / ld)), rtol=1e-6)
    rec0 = reconstruct(y, lam, solver="ipm", use_components=False, solver_options={"preset": "tight"})
    np.testing.assert_allclose(np.diag(rec0.covariance), np.maximum(yd, 0), atol=1e-7)


def test_mu_schedule():
    from paceggm.reconstruction.problem import mu_schedule as _mu_schedule

    np.testing.assert_allclose(_mu_schedule(1e-1, 1e-8, 0.1), [10.0**-k for k in range(1, 9)])
    assert _mu_schedule(1e-1, 3e-3, 0.1)[-1] == 3e-3
    assert _mu_schedule(1e-1, 1e-8, 0.1)[-1] == 1e-8  # exactly, not a drifted product
    with pytest.raises(ValueError):
        _mu_schedule(1e-3, 1e-1, 0.1)


def test_ipm_barrier_gradient_matches_finite_differences():
    from paceggm.reconstruction.ipm import _ScaledBarrier
    from paceggm.reconstruction.problem import make_problem

    rng = np.random.default_rng(7)
    d = 6
    S = random_cov(d, 7)
    lam = np.eye(d) * 2.0
    for j, k in [(1, 0), (3, 1), (5, 2), (4, 3), (5, 4)]:
        lam[j, k] = lam[k, j] = rng.uniform(0.5, 3.0)
    y = np.where(lam > 0, S + 0.05 * rng.normal(size=(d, d)), 0.0)
    y = (y + y.T) / 2
    phi = _ScaledBarrier(make_problem(y, lam, scale=1.0, lam_unit=1.0))
    L = np.tril(rng.normal(size=(d, d)))
    np.fill_diagonal(L, rng.uniform(0.5, 1.5, size=d))
    v = L[phi.tril]
    mu = 0.3
    f, g = phi(v, mu)
    W = L @ L.T
    rows, cols = np.nonzero(np.tril(lam > 0))
    direct = (np.sum(lam[rows, cols] * (W[rows, cols] - y[rows, cols]) ** 2) - 2 * mu * np.sum(np.log(np.diag(L)))) / mu
    assert np.isclose(f, direct, rtol=1e-13)
    h = 1e-6
    numeric = np.array([(phi(v + h * e, mu)[0] - phi(v - h * e, mu)[0]) / (2 * h) for e in np.eye(v.size)])
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("d", [1, 5, 40])
def test_pgd_projection_is_the_nearest_psd_matrix(d):
    from paceggm.reconstruction.pgd import _project_psd

    rng = np.random.default_rng(d)
    A = rng.standard_normal((d, d))
    W = (A + A.T) / 2
    P = _project_psd(W)
    vals, vecs = np.linalg.eigh(W)
    expected = (vecs * np.maximum(vals, 0.0)) @ vecs.T
    assert np.allclose(P, expected, atol=1e-12, rtol=0)
    assert np.array_equal(P, P.T) and np.linalg.eigvalsh(P).min() > -1e-12
    assert np.allclose(_project_psd(P), P, atol=1e-12, rtol=0)  # a projection: idempotent
