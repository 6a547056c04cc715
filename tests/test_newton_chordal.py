"""newton_chordal: Newton on a chordal embedding of the pattern gives the reference's answers, warm or cold."""

from __future__ import annotations

import numpy as np
import pytest

from paceggm.reconstruction import SOLVERS, reconstruct
from paceggm.reconstruction.chordal import chordal_maxdet_completion
from paceggm.reconstruction.counters import Counters
from paceggm.reconstruction.newton import _Pattern, solve_newton
from paceggm.reconstruction.newton_chordal import (
    ChordalNewtonState,
    _Kernels,
    embedding_of,
    solve_newton_chordal,
)
from paceggm.reconstruction.problem import make_problem, measured_pattern, natural_units

# The exact solvers agree to this, relative to the largest entry (tests/test_newton_pcg.py's tolerance).
TOL = 1e-8
# Where y is not completable the answer is the barrier solution at μ_min, with P of the order of 1/μ: it is
# defined only to about 1e-8 in floating point, and other roundings of the same Newton path move it by that
# much (newton_pcg's docstring: 0.9-2e-8 measured), so answers there agree to a few times that.
TOL_MU_MIN = 1e-7


def _covariance(d: int, rng: np.random.Generator) -> np.ndarray:
    B = rng.normal(size=(d, 3))
    C = B @ B.T + np.eye(d)
    s = np.sqrt(np.diag(C))
    return C / np.outer(s, s)


def _problem(y: np.ndarray, lam: np.ndarray):
    pattern = measured_pattern(lam)
    s, lam_bar = natural_units(y, lam, pattern=pattern)
    return make_problem(y, lam, scale=s, lam_unit=lam_bar, pattern=pattern)


def _measure(C: np.ndarray, pairs, rng: np.random.Generator, noise: float = 0.0):
    """``(y, λ)``: ``C`` (plus symmetric noise) on the diagonal and ``pairs``, precisions in [0.5, 2]."""
    d = C.shape[0]
    mask = np.eye(d, dtype=bool)
    for i, j in pairs:
        mask[i, j] = mask[j, i] = True
    lam = np.where(mask, rng.uniform(0.5, 2.0, size=(d, d)), 0.0)
    lam = np.triu(lam) + np.triu(lam, 1).T
    E = noise * rng.normal(size=(d, d))
    y = np.where(mask, C + np.triu(E) + np.triu(E, 1).T, 0.0)
    return y, lam


def _sparse_pairs(d: int, n_extra: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """A random spanning tree plus ``n_extra`` random pairs: connected, with cycles (not chordal)."""
    pairs = {(j, int(rng.integers(0, j))) for j in range(1, d)}
    while len(pairs) < d - 1 + n_extra:
        i, j = (int(v) for v in rng.integers(0, d, 2))
        if i != j:
            pairs.add((max(i, j), min(i, j)))
    return sorted(pairs)


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_it_is_registered_as_an_exact_warm_starting_solver():
    spec = SOLVERS["newton_chordal"]
    assert spec.solve is solve_newton_chordal and spec.max_entropy and spec.warm_start


@pytest.mark.parametrize("shape", ["band", "tree"])
def test_chordal_patterns_give_the_closed_form_completion(shape):
    rng = np.random.default_rng(1)
    d = 14
    C = _covariance(d, rng)
    if shape == "band":  # bandwidth 2: cliques {i, i+1, i+2}, separators {i+1, i+2}
        pairs = [(i + k, i) for i in range(d) for k in (1, 2) if i + k < d]
        cliques = [[i, i + 1, i + 2] for i in range(d - 2)]
        separators = [[i + 1, i + 2] for i in range(d - 3)]
    else:  # a tree: its edges are the cliques, every inner vertex a separator once per extra edge
        parent = [int(rng.integers(0, j)) for j in range(1, d)]
        pairs = [(j, parent[j - 1]) for j in range(1, d)]
        cliques = [[parent[j - 1], j] for j in range(1, d)]
        degree = np.bincount(np.array(pairs).ravel(), minlength=d)
        separators = [[v] for v in range(d) for _ in range(degree[v] - 1)]
    y, lam = _measure(C, pairs, rng)
    rec = reconstruct(y, lam, solver="newton_chordal")
    expected = chordal_maxdet_completion(C, cliques, separators)
    assert rec.mu == 0.0
    assert _rel(rec.covariance, expected) < TOL


def test_on_a_chordal_pattern_the_preconditioner_is_exact():
    """No fill: the S × S block of the inverse E-Hessian is the inverse μ = 0 Hessian, so CG needs one step."""
    rng = np.random.default_rng(2)
    d = 12
    pairs = [(i + 1, i) for i in range(d - 1)] + [(2, 0), (7, 5)]
    y, lam = _measure(_covariance(d, rng), pairs, rng)
    p = _problem(y, lam)
    pat = _Pattern(p)
    emb = embedding_of(p)
    assert emb.entries == p.rows.size  # chordal: its own embedding
    ops = _Kernels(emb, pat, emb.locate(pat.r, pat.c))
    pt = ops.point(solve_newton(p).state.precision[pat.r, pat.c] * 0.8)
    v = rng.normal(size=pat.r.size)
    assert np.allclose(ops.precondition(pt, ops.hessian_times(pt, v, 0.0)), v, rtol=1e-9, atol=1e-12)
    with Counters() as c:
        solve_newton_chordal(p)
    assert c.calls["Hessian factorisations"] == 0  # CG never fell back to the dense Hessian


@pytest.mark.parametrize("seed,noise,mu", [(3, 0.0, 0.0), (4, 0.0, 0.0), (5, 0.4, 1e-8), (6, 0.4, 1e-8)])
def test_non_chordal_sparse_patterns_agree_with_newton(seed, noise, mu):
    """Completable measurements (the exact μ = 0 limit) and noisy ones (the μ_min answer where it is not)."""
    rng = np.random.default_rng(seed)
    d = 40
    y, lam = _measure(_covariance(d, rng), _sparse_pairs(d, 30, rng), rng, noise)
    p = _problem(y, lam)
    assert embedding_of(p).entries > p.rows.size  # not chordal: the embedding has fill
    ref = solve_newton(p)
    sol = solve_newton_chordal(p)
    assert sol.mu == ref.mu == mu and sol.converged == ref.converged
    assert _rel(sol.W, ref.W) < (TOL if ref.mu == 0.0 else TOL_MU_MIN)
    assert np.array_equal(sol.W, sol.W.T)


def test_the_kernels_match_their_dense_formulas():
    """Factor, log-determinant, projected inverse, Hessian products and the preconditioner, against dense algebra."""
    rng = np.random.default_rng(7)
    d = 30
    y, lam = _measure(_covariance(d, rng), _sparse_pairs(d, 25, rng), rng)
    p = _problem(y, lam)
    pat = _Pattern(p)
    emb = embedding_of(p)
    ops = _Kernels(emb, pat, emb.locate(pat.r, pat.c))
    x = solve_newton(p).state.precision[pat.r, pat.c]
    x[pat.r != pat.c] *= 0.9  # away from the optimum
    pt = ops.point(x)
    P = pat.matrix(x)
    W = np.linalg.inv(P)
    assert pt.logdet == pytest.approx(np.linalg.slogdet(P)[1], rel=1e-12)
    assert np.allclose(pt.w, W[pat.r, pat.c], rtol=1e-10, atol=1e-12)
    assert np.allclose(pt.w_diag, np.diag(W), rtol=1e-10)
    v = rng.normal(size=x.size)
    for mu in (0.0, 1e-2):
        dense = pat.m * (W @ pat.matrix(v) @ W)[pat.r, pat.c] + mu * pat.q * v
        assert np.allclose(ops.hessian_times(pt, v, mu), dense, rtol=1e-9, atol=1e-12)
    # The preconditioner M⁻¹ = (K_E⁻¹)_SS: symmetric, and M is the Schur complement of the fill, below the Hessian H.
    r, c = pat.r, pat.c
    H = 0.5 * np.outer(pat.m, pat.m) * (W[np.ix_(r, r)] * W[np.ix_(c, c)] + W[np.ix_(r, c)] * W[np.ix_(c, r)])
    u = rng.normal(size=x.size)
    assert np.dot(u, ops.precondition(pt, v)) == pytest.approx(np.dot(v, ops.precondition(pt, u)), rel=1e-9)
    Minv = np.column_stack([ops.precondition(pt, e) for e in np.eye(x.size)])
    assert np.linalg.eigvalsh(0.5 * (Minv + Minv.T) - np.linalg.inv(H)).min() > -1e-9 * np.abs(Minv).max()
    assert np.allclose(ops.dense_inverse(pt), W, rtol=1e-10, atol=1e-12)
    assert ops.point(np.where(pat.r == pat.c, -1.0, 0.0)) is None  # not positive definite


def test_the_dense_inverse_survives_a_dense_factorisation_that_fails(monkeypatch):
    """Where P is barely positive definite the dense Cholesky may fail on rounding the sparse one survived:
    W then comes from the sparse factor."""
    import paceggm.reconstruction.newton_chordal as nc

    rng = np.random.default_rng(13)
    d = 20
    y, lam = _measure(_covariance(d, rng), _sparse_pairs(d, 10, rng), rng)
    p = _problem(y, lam)
    pat = _Pattern(p)
    emb = embedding_of(p)
    ops = _Kernels(emb, pat, emb.locate(pat.r, pat.c))
    x = solve_newton(p).state.precision[pat.r, pat.c]
    pt = ops.point(x)
    monkeypatch.setattr(nc, "_factor_at", lambda pat, x: None)
    W = ops.dense_inverse(pt)
    assert np.array_equal(W, W.T) and np.allclose(W, np.linalg.inv(pat.matrix(x)), rtol=1e-10, atol=1e-12)


def _fill_entries(emb, pattern_keys: set, d: int) -> list[tuple[int, int]]:
    """Entries of the embedding outside the pattern, in original indices ``(i > j)``."""
    perm = np.asarray(emb.symb.p, dtype=int).ravel()
    out = []
    for key in emb.keys:
        a, b = divmod(int(key), d)
        i, j = int(perm[a]), int(perm[b])
        i, j = max(i, j), min(i, j)
        if i != j and (i, j) not in pattern_keys:
            out.append((i, j))
    return out


def test_warm_rounds_over_a_growing_pattern_agree_with_cold_solves():
    """Entries added one by one: inside the embedding it is kept, outside it a new symbolic analysis is made."""
    rng = np.random.default_rng(8)
    d = 30
    C = _covariance(d, rng)
    pairs = _sparse_pairs(d, 15, rng)
    y_all, lam_all = _measure(C, [(i, j) for i in range(d) for j in range(i)], rng)
    mask = np.eye(d, dtype=bool)
    for i, j in pairs:
        mask[i, j] = mask[j, i] = True

    def problem():
        return _problem(np.where(mask, y_all, 0.0), np.where(mask, lam_all, 0.0))

    sol = solve_newton_chordal(problem())
    emb = sol.state.embedding
    fill = _fill_entries(emb, set(pairs), d)
    outside = next((i, j) for i in range(d) for j in range(i)
                   if not mask[i, j] and emb.locate(np.array([i]), np.array([j])) is None)
    added = [*fill[:3], outside]
    assert len(added) == 4
    for i, j in added:
        mask[i, j] = mask[j, i] = True
        p = problem()
        with Counters() as c:
            warm = solve_newton_chordal(p, init=[(np.arange(d), sol.state)])
        inside = (i, j) != outside
        assert c.calls["symbolic analyses"] == (0 if inside else 1)
        assert (warm.state.embedding is sol.state.embedding) == inside
        cold = solve_newton_chordal(p)
        assert warm.mu == cold.mu == 0.0
        assert _rel(warm.W, cold.W) < TOL
        assert _rel(warm.W, solve_newton(p).W) < TOL
        sol = warm
    assert isinstance(sol.state, ChordalNewtonState)


def test_an_entry_outside_the_embedding_keeps_the_ordering_and_the_answer():
    """One round's entry outside the embedding: one symbolic analysis in the kept order, no fresh ordering; on
    noise-free measurements of C the answer is the completion, W = C on the pattern (and newton's)."""
    rng = np.random.default_rng(14)
    d = 40
    C = _covariance(d, rng)
    pairs = _sparse_pairs(d, 20, rng)
    y, lam = _measure(C, pairs, rng)
    first = solve_newton_chordal(_problem(y, lam))
    emb = first.state.embedding
    i, j = next((i, j) for i in range(d) for j in range(i)
                if lam[i, j] == 0 and emb.locate(np.array([i]), np.array([j])) is None)
    y2, lam2 = _measure(C, [*pairs, (i, j)], rng)
    p = _problem(y2, lam2)
    with Counters() as c:
        warm = solve_newton_chordal(p, init=[(np.arange(d), first.state)])
    assert c.calls["symbolic analyses"] == 1 and c.calls["fill-reducing orderings"] == 0
    assert warm.state.embedding.order is emb.order and warm.state.embedding.fresh_fill == emb.fill
    assert warm.state.embedding.locate(np.array([i]), np.array([j])) is not None
    assert warm.mu == 0.0
    mask = lam2 > 0
    assert _rel(warm.W[mask], C[mask]) < TOL
    assert _rel(warm.W, solve_newton(p).W) < TOL


def test_a_kept_ordering_whose_fill_has_grown_is_made_afresh(monkeypatch):
    """Past _REORDER_FILL times the last fresh ordering's fill the pattern is ordered afresh, in the same single
    analysis; the fresh embedding's fill is its own reference from then on."""
    import paceggm.reconstruction.newton_chordal as nc

    rng = np.random.default_rng(15)
    d = 30
    y, lam = _measure(_covariance(d, rng), _sparse_pairs(d, 15, rng), rng)
    p = _problem(y, lam)
    kept = embedding_of(p)
    assert kept.fresh_fill == kept.fill > 1.0
    i, j = next((i, j) for i in range(d) for j in range(i)
                if lam[i, j] == 0 and kept.locate(np.array([i]), np.array([j])) is None)
    lam[i, j] = lam[j, i] = 1.0
    p2 = _problem(y, lam)
    with Counters() as c:
        extended = embedding_of(p2, kept)
    assert (c.calls["symbolic analyses"], c.calls["fill-reducing orderings"]) == (1, 0)
    assert extended.order is kept.order
    monkeypatch.setattr(nc, "_REORDER_FILL", 0.99 * kept.fill / kept.fresh_fill)  # the kept fill is now past it
    with Counters() as c:
        fresh = embedding_of(p2, kept)
    assert (c.calls["symbolic analyses"], c.calls["fill-reducing orderings"]) == (1, 1)
    assert fresh.order is not kept.order and fresh.fresh_fill == fresh.fill
    assert embedding_of(p2, fresh) is fresh  # it covers the pattern: nothing analysed


def test_other_exact_solvers_warm_start_from_its_state_and_it_from_theirs():
    rng = np.random.default_rng(9)
    d = 25
    C = _covariance(d, rng)
    pairs = _sparse_pairs(d, 10, rng)
    y, lam = _measure(C, pairs, rng)
    first = {name: reconstruct(y, lam, solver=name) for name in ("newton_chordal", "newton_pcg")}
    i, j = next((i, j) for i in range(d) for j in range(i) if lam[i, j] == 0)
    lam2, y2 = lam.copy(), y.copy()
    lam2[i, j] = lam2[j, i] = 1.0
    y2[i, j] = y2[j, i] = C[i, j]
    ref = reconstruct(y2, lam2, solver="newton").covariance
    for solver, previous in (("newton_pcg", "newton_chordal"), ("newton_chordal", "newton_pcg")):
        blocks = first[previous]
        warm = reconstruct(y2, lam2, solver=solver, previous=blocks.__class__(**{**blocks.__dict__, "solver": solver}))
        assert _rel(warm.covariance, ref) < TOL


# ---------------------------------------------------------------- auto's choice (paceggm.reconstruction.auto)
def _large_sparse_problem(d: int, seed: int):
    rng = np.random.default_rng(seed)
    y, lam = _measure(np.eye(d), _sparse_pairs(d, d // 2, rng), rng)
    return _problem(y, lam)


def _state(p, **fields) -> ChordalNewtonState:
    return ChordalNewtonState(np.eye(p.d), 1.0, 0.0, **fields)


def test_auto_keeps_small_or_dense_blocks_dense_without_analysing_them():
    from paceggm.reconstruction.auto import CHORDAL_MIN_D, choose_cpu

    rng = np.random.default_rng(10)
    small = _problem(*_measure(np.eye(50), _sparse_pairs(50, 10, rng), rng))
    d = CHORDAL_MIN_D
    dense_pairs = [(i, j) for i in range(d) for j in range(i) if (i + j) % 5 == 0]  # 10 % of the triangle
    dense = _problem(*_measure(np.eye(d), dense_pairs, rng))
    with Counters() as c:
        assert choose_cpu(small, None) == ("newton_pcg", None)
        assert choose_cpu(dense, None) == ("newton_pcg", None)
    assert c.calls["symbolic analyses"] == 0


def test_auto_sends_large_sparse_blocks_to_the_chordal_path_where_newton_pcg_works():
    from paceggm.reconstruction.auto import CHORDAL_MIN_D, CHORDAL_MIN_ITER, choose_cpu

    p = _large_sparse_problem(CHORDAL_MIN_D, 11)
    whole = np.arange(p.d)
    with Counters() as c:
        solver, emb = choose_cpu(p, None)  # cold: the embedding decides
        assert solver == "newton_chordal" and emb.entries <= 0.05 * p.d * (p.d + 1) / 2
        # newton_pcg's last solve was cheap (one Newton iteration): it keeps the block, nothing analysed
        assert choose_cpu(p, [(whole, _state(p, n_iter=CHORDAL_MIN_ITER - 1))]) == ("newton_pcg", None)
        assert c.calls["symbolic analyses"] == 1
        # ... it worked: the embedding is measured, and the chordal path is cheaper
        assert choose_cpu(p, [(whole, _state(p, n_iter=CHORDAL_MIN_ITER))])[0] == "newton_chordal"
        assert c.calls["symbolic analyses"] == 2
        # the chordal path solved it last, on an embedding that still covers the pattern: no analysis
        last = _state(p, embedding=emb, entries=(p.rows, p.cols, np.zeros(p.rows.size)))
        assert choose_cpu(p, [(whole, last)]) == ("newton_chordal", emb)
        assert c.calls["symbolic analyses"] == 2


def test_auto_with_the_chordal_path_on_small_blocks_agrees_with_newton_over_rounds(monkeypatch):
    """The rule lowered to d = 20: rounds that add entries one by one, auto against newton from scratch."""
    import paceggm.reconstruction.auto as auto

    monkeypatch.setattr(auto, "CHORDAL_MIN_D", 20)
    monkeypatch.setattr(auto, "CHORDAL_MAX_FILL", 0.5)
    rng = np.random.default_rng(12)
    d = 24
    C = _covariance(d, rng)
    y_all, lam_all = _measure(C, [(i, j) for i in range(d) for j in range(i)], rng)
    mask = np.eye(d, dtype=bool)
    for i, j in _sparse_pairs(d, 4, rng):
        mask[i, j] = mask[j, i] = True
    previous = None
    with Counters() as c:
        for _ in range(6):
            i, j = next((i, j) for i in range(d) for j in range(i) if not mask[i, j] and rng.random() < 0.05)
            mask[i, j] = mask[j, i] = True
            y, lam = np.where(mask, y_all, 0.0), np.where(mask, lam_all, 0.0)
            previous = reconstruct(y, lam, solver="auto", previous=previous)
            ref = reconstruct(y, lam, solver="newton")
            assert _rel(previous.covariance, ref.covariance) < TOL
    assert c.calls["projected inverses"] > 0  # the chordal path did solve


# ---------------------------------------------------------------- the shared stages (newton._solve, _recentre)
def test_a_stalled_warm_stage_is_re_centred_on_the_embedding(stalled_round):
    """The chordal path runs newton's stages: a stalled warm μ_min stage is re-centred warm from the kept points,
    with no cold continuation, to the reference's answer; without them it takes the cold continuation."""
    from dataclasses import replace

    from test_warm_recentre import LEVELS, MU_MIN, _close, _stationarity

    p, init = stalled_round
    with Counters() as c:
        got = solve_newton_chordal(p, init=init)
    assert c.events["warm re-centrings"] == 1
    assert c.events["cold restarts"] == 0 and c.events["cold starts"] == 0
    assert c.calls["projected inverses"] > 0  # the stages ran on the embedding
    ref = solve_newton(p)
    assert got.mu == ref.mu == MU_MIN
    assert _close(got, ref) and _stationarity(p, got) <= 1e-7
    assert {mu for mu, *_ in got.state.path} == set(LEVELS)  # the levels it passed through, kept for later rounds
    ix, state = init[0]
    with Counters() as c:
        cold = solve_newton_chordal(p, init=[(ix, replace(state, path=()))])
    assert c.events["warm re-centrings"] == 1 and c.events["cold restarts"] == 1
    assert _close(cold, ref)


def test_chordal_rounds_keep_centred_points_and_re_centre_them():
    """Rounds solved by the chordal path alone, far from completable: each answer the reference's, and the points
    its own solves kept re-centre stalled rounds."""
    from test_warm_recentre import _close

    rng = np.random.default_rng(0)
    d = 12
    A = rng.normal(size=(d, 2 * d))
    y = A @ A.T / (2 * d)
    s = np.sqrt(np.diag(y))
    y = y / np.outer(s, s) + 0.6 * np.triu(rng.normal(size=(d, d)), 1)
    y = np.triu(y) + np.triu(y, 1).T
    pattern = np.eye(d, dtype=bool)
    state = None
    events = Counters()
    for a, b in rng.permutation([(j, k) for j in range(d) for k in range(j)])[:40]:
        pattern[a, b] = pattern[b, a] = True
        p = make_problem(np.where(pattern, y, 0.0), pattern.astype(float), scale=1.0, lam_unit=1.0)
        with events:
            sol = solve_newton_chordal(p, init=None if state is None else [(np.arange(d), state)])
        assert _close(sol, solve_newton(p))
        state = sol.state
    # Every re-centring that fails ends in a cold restart: more re-centrings than cold restarts is some that held.
    assert events.events["warm re-centrings"] > events.events["cold restarts"]
    assert events.events["cold starts"] == 1
