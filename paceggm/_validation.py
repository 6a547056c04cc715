"""Input checks shared by the estimators: one clear message per kind of bad input."""

from __future__ import annotations

import math
import numbers

import numpy as np

BOUND_CHECKS = ("raise", "clip", "waive")

# BLAS kernels and numpy's matmul pick their code path by the alignment of the
# operands, and the paths round differently: the same X in a buffer at another
# address (as arrays arrive after pickling to a worker) gives a different XᵀX in
# the last bits. A fresh buffer at a fixed alignment takes that choice away.
ALIGNMENT = 64


def aligned_copy(a, dtype=float) -> np.ndarray:
    """A C-contiguous copy of ``a`` whose data start on a 64-byte boundary.

    Whatever the memory layout of the input — C or Fortran order, a strided
    view, a buffer at any address — the copy is laid out identically, so
    every computation on it takes the same path and gives the same bits.
    (``np.ascontiguousarray`` returns an already contiguous but misaligned
    buffer unchanged.)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    >>> Y = aligned_copy(X)
    >>> Y.flags.c_contiguous, Y.ctypes.data % 64, bool((Y == X).all())
    (True, 0, True)
    """
    a = np.asarray(a)
    dtype = np.dtype(dtype)
    nbytes = a.size * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    out = raw[start:start + nbytes].view(dtype).reshape(a.shape)
    out[...] = a
    return out


def check_positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def check_rho(rho, name: str = "rho") -> float:
    return check_positive(rho, name)


def check_open_fraction(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not (0.0 < value < 1.0):
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    return value


def check_random_state(random_state) -> np.random.Generator:
    """A ``numpy.random.Generator`` from None, an int, a SeedSequence or a Generator."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    raise TypeError(f"random_state must be None, an int, a SeedSequence or a Generator, got {random_state!r}")


def check_data(X, *, min_samples: int = 2) -> np.ndarray:
    """A finite 2-D float array with at least ``min_samples`` rows and one column.

    Always a fresh :func:`aligned_copy`, so estimators give the same bits for
    any memory layout of the input (and never modify the caller's array).
    """
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged input and the like
        raise ValueError(f"X could not be converted to an array: {exc}") from exc
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"X must be numeric, got dtype {arr.dtype}; encode or drop non-numeric columns first")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError("X must be real-valued, got complex values")
    if arr.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {arr.shape}")
    n, d = arr.shape
    if d < 1 or n == 0:
        raise ValueError(f"X is empty: shape {arr.shape}")
    if n < min_samples:
        raise ValueError(f"X needs at least {min_samples} rows, got {n}")
    arr = aligned_copy(arr)
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"X contains {bad} NaN or infinite value(s); remove or impute them first")
    return arr


def enforce_bound(X: np.ndarray, bound: float, policy: str) -> tuple[np.ndarray, int]:
    """Apply the declared coordinate bound ``|x_ij| <= bound`` under ``policy``.

    ``"raise"`` refuses data outside the bound (the privacy guarantee would be
    void), ``"clip"`` clips and counts the clipped values, ``"waive"`` accepts
    the data as it is (only for reproducing published settings that violate
    their own bound; the guarantee then does not hold). Returns the data and
    the number of values outside the bound.
    """
    if policy not in BOUND_CHECKS:
        raise ValueError(f"bound_check must be one of {BOUND_CHECKS}, got {policy!r}")
    outside = np.abs(X) > bound
    n_out = int(np.count_nonzero(outside))
    if n_out == 0 or policy == "waive":
        return X, n_out
    if policy == "raise":
        raise ValueError(
            f"{n_out} value(s) of X lie outside [-bound, bound] = [-{bound}, {bound}] "
            f"(max |x| = {np.abs(X).max():.6g}); rescale the data, pass bound_check='clip' "
            "to clip them, or bound_check='waive' to skip the check (voids the privacy guarantee)"
        )
    clipped = aligned_copy(X)
    np.clip(clipped, -bound, bound, out=clipped)
    return clipped, n_out
