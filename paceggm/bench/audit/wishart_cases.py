"""The Wishart mechanism: a published covariance release claimed ε-DP that is not, as the audit's negative control.

Jiang, Xie and Zhang, "Wishart Mechanism for Differentially Private Principal
Components Analysis" (AAAI 2016; arXiv:1511.05680), Algorithm 1: for rows
with ``‖x‖₂ ≤ 1``, release ``Â = A + W`` with ``A = XᵀX/n`` and
``W ~ Wishart_d(d + 1, C)``, ``C = 3/(2nε)·I``; their privacy theorem claims ε-DP.
It is not private at any ε (Amin et al., NeurIPS 2019, §1.2; diffprivlib
deprecated and then removed its implementation for this reason). The noise is
positive semi-definite, so every release on ``D`` satisfies ``Â ⪰ A(D)``;
the proof compares the two Wishart densities only where both are positive
and misses that their supports ``{Â ⪰ A(D)}`` and ``{Â ⪰ A(D')}`` differ. A
neighbour ``D'`` whose replaced row takes ``xxᵀ/n`` out of ``A`` makes
``Â ⋡ A(D)`` possible, an event of probability 0 on ``D``: the likelihood
ratio is unbounded.

The audit reads ``s = e₁ᵀ(Â − A(D))e₁``, the release's quadratic form along the
direction the neighbours differ in (``A(D)`` is the auditor's, fixed): on
``D`` it is ``W₁₁ ≥ 0``; on ``D'`` it is ``W₁₁ − 1/n`` with
``W₁₁ ~ (3/(2nε))·χ²_{d+1}``, negative with probability ``P[χ²_{d+1} < 2ε/3]``
whatever ``n`` (0.12 at ``d = 2``, ``ε = 1``). The event ``{s ≤ t}``, ``t < 0``,
has no draw on ``D``, so ``ε ≥ ln(p/q)`` with ``q``'s upper bound at about
``3.7/m`` for ``m`` evaluation draws: the bound grows with the draws, without
limit, far above any claim.

The same query and statistic under a private release — the Laplace mechanism
on the ``d(d+1)/2`` entries of ``A``'s upper triangle at the same ε, their
ℓ₁ sensitivity ``(d + 1)/n`` (``Σ_{i≤j}|x_i x_j| = (‖x‖₁² + ‖x‖₂²)/2 ≤ (d + 1)/2``
for one row, and a replaced row removes one and adds one) — is the row that
shows the statistic raises no false alarm.

Implemented here only: never a method of the harness.
"""

from __future__ import annotations

import math

import numpy as np

from .cases import AuditCase, _one_record_apart

__all__ = ["WISHART_CASES", "laplace_release", "wishart_release"]

_N, _D, _EPSILON = 10, 2, 1.0
_RHO = _EPSILON**2 / 2.0  # ε-DP ⇒ ε²/2-zCDP: the zCDP claim that goes with the published ε


def _second_moment(X) -> np.ndarray:
    return X.T @ X / X.shape[0]


def wishart_release(X, rng, *, epsilon: float = _EPSILON) -> np.ndarray:
    """Algorithm 1 of Jiang, Xie and Zhang (2016): ``XᵀX/n + W``, ``W ~ Wishart_d(d + 1, 3/(2nε)·I)``."""
    n, d = X.shape
    G = rng.standard_normal((d, d + 1)) * math.sqrt(3.0 / (2.0 * n * epsilon))
    return _second_moment(X) + G @ G.T


def laplace_release(X, rng, *, epsilon: float = _EPSILON) -> np.ndarray:
    """``XᵀX/n`` with Laplace noise of scale ``((d + 1)/n)/ε`` on its upper triangle, mirrored: ε-DP."""
    n, d = X.shape
    rows, cols = np.triu_indices(d)
    noise = np.zeros((d, d))
    noise[rows, cols] = rng.laplace(0.0, (d + 1) / n / epsilon, size=rows.size)
    return _second_moment(X) + np.triu(noise, 1).T + noise


# D: one row e₁, the rest 0; D': that row 0. A(D') = A(D) − e₁e₁ᵀ/n: one row taken out along e₁.
_INPUTS = _one_record_apart((1.0, 0.0), (0.0, 0.0), _N)
_A_D = _second_moment(_INPUTS[0])


def _along_e1(release):
    def run(X, rng) -> float:
        return float(release(X, rng)[0, 0] - _A_D[0, 0])

    return run


_NEIGHBOURS = f"n={_N}, d={_D}, ‖x‖₂ ≤ 1: one row (1, 0) vs (0, 0), the rest 0 (A = XᵀX/n loses e₁e₁ᵀ/n)"
_STATISTIC = "e₁ᵀ(release − A(D))e₁: the released entry (0, 0) minus D's"

WISHART_CASES: tuple[AuditCase, ...] = (
    AuditCase("wishart_published", f"BROKEN (published, not a mutation of ours): Wishart mechanism, Jiang, Xie & "
              f"Zhang 2016, XᵀX/n + Wishart(d+1, 3/(2nε)·I), claimed ε = {_EPSILON:g}", _NEIGHBOURS, _STATISTIC,
              _RHO, _EPSILON, True, _along_e1(wishart_release), _INPUTS, draws=20_000),
    AuditCase("wishart_query_laplace", f"Laplace mechanism on the Wishart control's query, ε = {_EPSILON:g} "
              "(ℓ₁ sensitivity (d+1)/n)", _NEIGHBOURS, _STATISTIC, _RHO, _EPSILON, False,
              _along_e1(laplace_release), _INPUTS, draws=20_000),
)
