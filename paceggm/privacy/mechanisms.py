"""The Gaussian, Laplace and exponential mechanisms under ρ-zCDP (docs/design.md, *Privacy model*).

Each mechanism takes ``noise``: ``"fast"`` (the default) draws in doubles from a
NumPy Generator (the published experiments' draws, bit for bit); ``"exact"``
draws integer noise on a power-of-two grid with exact arithmetic
(:mod:`paceggm.privacy.exact`, which states the accounting), from the
Generator when one is given and from :mod:`secrets` when ``rng`` is None: the
setting for a real release.
"""

from __future__ import annotations

import math

import numpy as np

from paceggm._validation import check_positive, check_random_state, check_rho
from paceggm.privacy import exact

#: The noise samplers a mechanism can use (see the module docstring).
NOISES = ("fast", "exact")
DEFAULT_NOISE = "fast"


def check_noise(noise) -> str:
    """``noise`` if it is one of :data:`NOISES`, else a one-line ``ValueError``."""
    if not isinstance(noise, str) or noise not in NOISES:
        raise ValueError(f"noise must be one of {list(NOISES)} ('exact' for a real release), got {noise!r}")
    return noise


def noise_source(random_state, noise: str = DEFAULT_NOISE):
    """What an estimator passes as ``rng`` to the mechanisms: a Generator, or None (``secrets``) for exact noise unseeded.

    ``noise="fast"`` always needs a Generator (``random_state=None`` seeds one
    from the operating system); ``noise="exact"`` with ``random_state=None``
    draws every bit from :mod:`secrets` instead, and with a seed or a
    Generator from that Generator (reproducible).
    """
    if check_noise(noise) == "exact" and random_state is None:
        return None
    return check_random_state(random_state)


def gaussian_sigma(*, rho: float, sensitivity: float) -> float:
    """Noise scale of the Gaussian mechanism that costs exactly ``rho``.

    Releasing ``f(X) + N(0, σ² I)`` where ``f`` has ℓ2 sensitivity ``Δ`` is
    ``Δ² / (2σ²)``-zCDP, hence ``σ = Δ / sqrt(2ρ)``.

    Parameters
    ----------
    rho : float
        zCDP budget, > 0.
    sensitivity : float
        ℓ2 sensitivity ``Δ`` of the released quantity, > 0.

    Returns
    -------
    sigma : float

    Examples
    --------
    >>> gaussian_sigma(rho=0.5, sensitivity=1.0)
    1.0
    """
    check_rho(rho)
    check_positive(sensitivity, "sensitivity")
    return sensitivity / math.sqrt(2.0 * rho)


def gaussian_mechanism(
    value,
    *,
    rho: float,
    sensitivity: float,
    rng: np.random.Generator | None,
    noise: str = DEFAULT_NOISE,
):
    """Release ``value + N(0, σ²)`` (elementwise) at zCDP cost ``rho``.

    Parameters
    ----------
    value : float or ndarray
        The exact query answer.
    rho, sensitivity : float
        Budget and ℓ2 sensitivity of ``value`` (of the whole vector if an array).
    rng : numpy.random.Generator or None
        None only with ``noise="exact"`` (bits from :mod:`secrets`).
    noise : {"fast", "exact"}
        ``"exact"``: the discrete Gaussian on a grid of step ``γ = 2^e <= σ 2^-32``
        (:func:`paceggm.privacy.exact.gaussian`), σ calibrated to the
        sensitivity plus the grid's rounding, so the cost is still exactly ``rho``.

    Returns
    -------
    noisy : float or ndarray
        Same shape as ``value``.
    sigma : float
        The noise standard deviation used.
    """
    exact_noise = check_noise(noise) == "exact"
    sigma = gaussian_sigma(rho=rho, sensitivity=sensitivity)  # refuses a bad budget or sensitivity for both
    if exact_noise:
        return exact.gaussian(value, rho=rho, sensitivity=sensitivity, bits=exact.RandomBits.of(rng))
    value = np.asarray(value, dtype=float)
    noisy = value + rng.normal(0.0, sigma, size=value.shape)
    return (float(noisy) if noisy.ndim == 0 else noisy), sigma


def laplace_epsilon(rho: float) -> float:
    """ε of the Laplace mechanism that costs ``rho``-zCDP: ``ε = sqrt(2ρ)``.

    The Laplace mechanism is ε-DP, and ε-DP implies ``ε²/2``-zCDP (Bun &
    Steinke 2016, Prop. 1.4).
    """
    check_rho(rho)
    return math.sqrt(2.0 * rho)


def laplace_mechanism(
    value,
    *,
    rho: float,
    sensitivity: float,
    rng: np.random.Generator | None,
    noise: str = DEFAULT_NOISE,
):
    """Release ``value + Lap(b)`` (elementwise, iid) at zCDP cost ``rho``.

    With ``ε = sqrt(2ρ)`` (:func:`laplace_epsilon`) and ``b = Δ/ε``, where ``Δ``
    is the ℓ1 sensitivity of ``value``: ε-DP (Dwork & Roth 2014, Thm. 3.6),
    hence ``rho``-zCDP.

    Parameters
    ----------
    value : float or ndarray
        The exact query answer.
    rho : float
        zCDP budget, > 0.
    sensitivity : float
        ℓ1 sensitivity ``Δ`` of ``value`` (of the whole vector if an array), > 0.
    rng : numpy.random.Generator or None
        None only with ``noise="exact"`` (bits from :mod:`secrets`).
    noise : {"fast", "exact"}
        ``"exact"``: discrete Laplace noise on a grid of step ``γ = 2^e <= b 2^-32``
        (:func:`paceggm.privacy.exact.laplace`), its scale calibrated to the
        sensitivity plus the grid's rounding, so the cost is still exactly ``rho``.

    Returns
    -------
    noisy : float or ndarray
        Same shape as ``value``.
    scale : float
        The noise scale ``b`` used (standard deviation ``sqrt(2) b``).

    Examples
    --------
    >>> noisy, b = laplace_mechanism(0.0, rho=0.5, sensitivity=1.0, rng=np.random.default_rng(0))
    >>> b
    1.0
    """
    exact_noise = check_noise(noise) == "exact"
    eps = laplace_epsilon(rho)  # refuses a bad budget, then a bad sensitivity, for both noises
    check_positive(sensitivity, "sensitivity")
    if exact_noise:
        return exact.laplace(value, epsilon=eps, rho=rho, sensitivity=sensitivity, bits=exact.RandomBits.of(rng))
    scale = sensitivity / eps
    value = np.asarray(value, dtype=float)
    noisy = value + rng.laplace(0.0, scale, size=value.shape)
    return (float(noisy) if noisy.ndim == 0 else noisy), scale


def exponential_mechanism_epsilon(rho: float) -> float:
    """ε of the exponential mechanism that costs ``rho``-zCDP: ``ε = sqrt(8ρ)``.

    The ε-DP exponential mechanism is ``ε²/8``-zCDP (Cesar & Rogers 2021).
    """
    check_rho(rho)
    return math.sqrt(8.0 * rho)


def _logits(scores, rho: float, sensitivity: float) -> np.ndarray:
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError("scores must be a non-empty 1-D array")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite")
    check_positive(sensitivity, "sensitivity")
    eps = exponential_mechanism_epsilon(rho)
    # Shifting by the best score leaves the distribution unchanged and keeps every
    # logit <= 0, so nothing overflows; hopeless candidates underflow to -inf (p = 0).
    with np.errstate(over="ignore"):
        return (eps / (2.0 * sensitivity)) * (scores - scores.max())


def exponential_mechanism(
    scores,
    *,
    rho: float,
    sensitivity: float,
    rng: np.random.Generator | None,
    noise: str = DEFAULT_NOISE,
) -> int:
    """Pick an index with probability ``∝ exp(ε/(2Δ) · score)`` at cost ``rho``.

    Sampling uses the Gumbel-max trick: ``argmax(logit_r + G_r)`` with iid
    standard Gumbel ``G_r`` has exactly the softmax distribution, and it never
    exponentiates a score, so it stays exact and finite however large the
    scores (or ε) are.

    Parameters
    ----------
    scores : array_like of shape (m,)
        Utility of each candidate; higher is more likely.
    rho : float
        zCDP budget; ``ε = sqrt(8ρ)``.
    sensitivity : float
        Sensitivity ``Δ`` of every score.
    rng : numpy.random.Generator or None
        None only with ``noise="exact"`` (bits from :mod:`secrets`).
    noise : {"fast", "exact"}
        ``"exact"``: scores rounded to a grid of step ``2^e <= Δ 2^-32`` and
        an exact rejection sampler (:func:`paceggm.privacy.exact.exponential`),
        ε-DP for the rounded scores' sensitivity; its running time depends on
        the scores.

    Returns
    -------
    index : int
    """
    logits = _logits(scores, rho, sensitivity)
    if check_noise(noise) == "exact":
        return exact.exponential(np.asarray(scores, dtype=float), epsilon=exponential_mechanism_epsilon(rho), rho=rho,
                                 sensitivity=sensitivity, bits=exact.RandomBits.of(rng))
    return _gumbel_argmax(logits, rng)


# Relative margin by which the pruning thresholds of _gumbel_argmax are widened: far
# above the few-ulp rounding of the quantities they are computed from.
_PRUNE_MARGIN = 1e-9
# Candidates left after pruning up to which their values are computed one by one.
_EXACT_AT_MOST = 32


def _gumbel(u) -> float:
    """The Gumbel draw NumPy makes from the uniform ``u``, to the bit (libm's ``log``, as NumPy's C code)."""
    return -math.log(-math.log(1.0 - u))


def _gumbel_argmax(logits: np.ndarray, rng: np.random.Generator) -> int:
    """``argmax(logits + rng.gumbel(size=logits.size))``: the same index, the same generator state after.

    NumPy draws each Gumbel as ``G = −log(−log(1 − U))`` from one uniform double
    ``U`` of the stream :meth:`~numpy.random.Generator.random` reads (redrawing
    the ``U = 0`` it cannot use), and the two logarithms cost 6–7× as much as
    the uniforms (measured with 2,000,000 candidates, d = 2,000: 22.4 against
    3.4 ms, most of a round there). But ``G`` decreases in ``U`` and only the
    largest ``logit + G`` matters: with ``v₀`` the value of a good candidate,
    a candidate can only win if ``G ≥ v₀ − logit ≥ v₀`` (logits are ``≤ 0``) and
    ``logit ≥ v₀ − max G``, two comparisons per candidate that leave a handful.
    Their values are computed as NumPy does (libm's ``log``), ties go to the
    lowest index as in :func:`numpy.argmax`: the choice is the reference's, so
    the mechanism and every committed selection are unchanged (tested). Any
    other source of randomness (a legacy ``RandomState``, whose Gumbel draws
    are not defined this way) gets the textbook draw.
    """
    if not isinstance(rng, np.random.Generator):
        return int(np.argmax(logits + rng.gumbel(size=logits.shape)))
    state = rng.bit_generator.state
    u = rng.random(logits.size)
    low = int(np.argmin(u))  # the largest Gumbel draw
    if u[low] == 0.0:  # NumPy would redraw it, shifting the stream: replay its way
        rng.bit_generator.state = state
        return int(np.argmax(logits + rng.gumbel(size=logits.shape)))
    top = int(np.argmax(logits))
    g_max = _gumbel(u[low])
    v0 = max(logits[top] + _gumbel(u[top]), logits[low] + g_max)
    slack = _PRUNE_MARGIN * (1.0 + abs(v0) + abs(g_max))
    # G ≥ t  ⟺  U ≤ 1 − exp(−exp(−t)); for t far below 0 every U qualifies (and exp(−t) would overflow).
    t = v0 - slack
    u_max = 1.0 if t < -700.0 else -math.expm1(-math.exp(-t)) * (1.0 + _PRUNE_MARGIN)
    alive = np.flatnonzero((u <= u_max) & (logits >= v0 - g_max - slack))
    if alive.size > _EXACT_AT_MOST:
        # Vectorised logarithms may differ from libm's by an ulp: they only narrow
        # the field to what is within rounding of the best.
        approx = logits[alive] - np.log(-np.log(1.0 - u[alive]))
        best = float(approx.max())
        alive = alive[approx >= best - _PRUNE_MARGIN * (1.0 + abs(best))]
    values = [logits[i] + _gumbel(u[i]) for i in alive]
    return int(alive[int(np.argmax(values))])


def exponential_mechanism_probabilities(scores, *, rho: float, sensitivity: float) -> np.ndarray:
    """Selection probabilities of :func:`exponential_mechanism` (log-sum-exp safe)."""
    weights = np.exp(_logits(scores, rho, sensitivity))
    return weights / weights.sum()


def sparse_vector_epsilon(rho: float) -> float:
    """ε of the AboveThreshold instance that costs ``rho``-zCDP: ``ε = sqrt(2ρ)``.

    AboveThreshold is ε-DP, and ε-DP implies ``ε²/2``-zCDP (Bun & Steinke 2016,
    Prop. 1.4).
    """
    check_rho(rho)
    return math.sqrt(2.0 * rho)


def sparse_vector(
    queries,
    *,
    threshold: float,
    rho: float,
    sensitivity: float,
    rng: np.random.Generator | None,
    noise: str = DEFAULT_NOISE,
) -> int:
    """AboveThreshold (sparse vector technique): the first query above a threshold.

    With ``ε = sqrt(2ρ)``, draws ``T̃ = threshold + Lap(2Δ/ε)`` and returns the
    first index ``i`` with ``queries[i] + Lap(4Δ/ε) ≥ T̃`` (Dwork & Roth 2014,
    Alg. 1); ε-DP for queries of sensitivity ``Δ`` each, hence ``rho``-zCDP.
    The queries may be evaluated up front: only the noisy comparisons are
    released, and noise is drawn for every query in order until one fires.

    Parameters
    ----------
    queries : array_like of shape (m,)
        Query answers on the data, in the order they are asked.
    threshold : float
    rho : float
        zCDP budget.
    sensitivity : float
        Sensitivity ``Δ`` of every query.
    rng : numpy.random.Generator or None
        None only with ``noise="exact"`` (bits from :mod:`secrets`).
    noise : {"fast", "exact"}
        ``"exact"``: queries and threshold rounded to a grid of step
        ``2^e <= Δ 2^-32``, discrete Laplace noise
        (:func:`paceggm.privacy.exact.above_threshold`), still ε-DP.

    Returns
    -------
    index : int
        The first index above the threshold, or ``m`` if none is.
    """
    queries = np.asarray(queries, dtype=float)
    if queries.ndim != 1:
        raise ValueError("queries must be a 1-D array")
    if not np.all(np.isfinite(queries)):
        raise ValueError("queries must be finite")
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be finite, got {threshold!r}")
    check_positive(sensitivity, "sensitivity")
    eps = sparse_vector_epsilon(rho)
    if check_noise(noise) == "exact":
        return exact.above_threshold(queries, threshold=float(threshold), epsilon=eps, rho=rho,
                                     sensitivity=float(sensitivity), bits=exact.RandomBits.of(rng))
    noisy_threshold = threshold + rng.laplace(0.0, 2.0 * sensitivity / eps)
    for i, q in enumerate(queries):
        if q + rng.laplace(0.0, 4.0 * sensitivity / eps) >= noisy_threshold:
            return i
    return int(queries.size)
