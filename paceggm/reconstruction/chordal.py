"""The closed-form maximum-determinant completion for chordal patterns.

For a chordal pattern with maximal cliques ``C`` and separators ``Sep`` (of a
clique tree), the completion of ``Σ`` on the pattern with the largest
determinant has precision

    P = Σ_C [Σ_C⁻¹]⁰ − Σ_Sep [Σ_Sep⁻¹]⁰

(``[·]⁰``: padded with zeros to d × d). It is the exact answer the solvers are
checked against on noise-free measurements (tests and ``make bench``).
"""

from __future__ import annotations

import numpy as np


def chordal_maxdet_completion(sigma: np.ndarray, cliques, separators) -> np.ndarray:
    """Max-determinant completion of ``sigma`` on a chordal pattern.

    Parameters
    ----------
    sigma : ndarray of shape (d, d)
        Positive definite on every clique (only entries inside cliques are read).
    cliques : iterable of sequences of int
        Maximal cliques of the pattern.
    separators : iterable of sequences of int
        Separators of a clique tree, with multiplicity.

    Returns
    -------
    ndarray of shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> S = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]])
    >>> W = chordal_maxdet_completion(S, [[0, 1], [1, 2]], [[1]])
    >>> float(W[2, 0])  # S_21 S_11⁻¹ S_10
    0.5
    """
    sigma = np.asarray(sigma, dtype=float)
    P = np.zeros_like(sigma)
    for C in cliques:
        ix = np.ix_(C, C)
        P[ix] += np.linalg.inv(sigma[ix])
    for S in separators:
        ix = np.ix_(S, S)
        P[ix] -= np.linalg.inv(sigma[ix])
    return np.linalg.inv(P)
