"""Connected components of the measured pattern: the reconstruction splits into independent blocks."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components


def pattern_components(pattern: np.ndarray) -> list[np.ndarray]:
    """Index sets ``V_1..V_K`` of the graph with one edge per measured off-diagonal entry.

    The max-entropy completion is block diagonal over these sets. Components
    are returned ordered by their smallest index, each sorted.
    """
    off = np.array(pattern, dtype=bool, copy=True)
    np.fill_diagonal(off, False)
    n_comp, labels = connected_components(csr_matrix(off), directed=False)
    groups = [np.flatnonzero(labels == c) for c in range(n_comp)]
    return sorted(groups, key=lambda g: int(g[0]))
