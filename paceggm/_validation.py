"""Input checks shared by the estimators: one clear message per kind of bad input.

No message here quotes a data value or counts data-dependent events: error
messages end up in logs and result tables, which no privacy budget pays for.
"""

from __future__ import annotations

import difflib
import math
import numbers
import warnings
from collections.abc import Iterable

import numpy as np

from paceggm.exceptions import PrivacyLeakWarning

BOUND_CHECKS = ("raise", "clip", "waive")

#: How far past the declared bound, in units in the last place, a value still counts as inside it
#: (and is clipped to it) under ``bound_check="raise"``: the rounding of a rescaling onto
#: [-bound, bound]. MinMaxScaler(feature_range=(-1, 1)) overshoots 1 by at most 2 ulps on every
#: registered data set; a value 1e-9 beyond the bound (4.5 million ulps) is refused.
BOUND_ULPS = 4

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


def did_you_mean(word, choices: Iterable) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``.

    >>> did_you_mean("sssp", ["ssp", "diagonal"])
    " (did you mean 'ssp'?)"
    """
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def check_choice(value, choices: Iterable[str], name: str) -> str:
    """``value`` if it is one of ``choices``, else a ValueError naming the nearest and all of them."""
    choices = sorted(choices)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"unknown {name} {value!r}{did_you_mean(value, choices)}; choose one of {choices}")
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


def check_bound(bound, *, d: int = 1) -> float:
    """A coordinate bound ``B`` whose sensitivities (up to ``16 d B²``) are finite and non-zero."""
    bound = check_positive(bound, "bound")
    # Every sensitivity is a multiple of B or B² by at most 4d — 16d when a private mean
    # doubles the bound; B² must neither overflow (1e200² is inf) nor underflow to 0
    # (a zero sensitivity would mean no noise).
    if not math.isfinite(16.0 * d * bound * bound):
        raise ValueError(
            f"bound={bound!r} is too large: the sensitivities use d·bound², which overflows for d={d}; "
            "rescale the data so that a smaller bound holds"
        )
    if bound * bound < np.finfo(float).tiny:
        raise ValueError(f"bound={bound!r} is too small: bound² underflows to 0; rescale the data")
    return bound


def check_random_state(random_state) -> np.random.Generator:
    """A ``numpy.random.Generator`` from None, an int, a SeedSequence, a Generator or a RandomState.

    A Generator is used as it is (and advanced by the fit). A legacy
    :class:`numpy.random.RandomState` is a seeded source like an int: it gives
    128 bits (four 32-bit draws) that seed a fresh Generator, so equal-seeded
    RandomStates give equal fits and the RandomState is advanced, as a
    scikit-learn estimator advances the one it is given. (The mechanisms draw
    from a Generator: its Gaussian and Gumbel streams are the ones the
    published experiments used.)

    Examples
    --------
    >>> import numpy as np
    >>> a = check_random_state(np.random.RandomState(0)).random()
    >>> b = check_random_state(np.random.RandomState(0)).random()
    >>> a == b
    True
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32, size=4, dtype=np.uint64).tolist())
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    raise TypeError(
        f"random_state must be None, an int, a SeedSequence, a Generator or a RandomState, got {random_state!r}"
    )


def _from_frame(X, name: str) -> np.ndarray:
    """A pandas DataFrame as a float array, refusing what would not convert faithfully."""
    # ``kind`` covers numpy and pandas' nullable dtypes alike; object, string and category are "O".
    bad = [str(col) for col, dtype in X.dtypes.items() if getattr(dtype, "kind", "O") not in "biuf"]
    if bad:
        raise TypeError(
            f"{name} has non-numeric column(s) {bad} (dtype object, string or category — e.g. a column "
            "holding pd.NA or text); convert them to numbers first and impute or drop missing values"
        )
    # Nullable dtypes (Int64, Float64, boolean) carry pd.NA: make it NaN so the finiteness check names it.
    return X.to_numpy(dtype=float, na_value=np.nan)


def check_data(X, *, min_samples: int = 2, name: str = "X") -> np.ndarray:
    """A finite 2-D float array with at least ``min_samples`` rows and one column.

    Refused with a specific message: sparse matrices (densify first — the
    sensitivities assume every coordinate is a real value), masked arrays with
    masked entries (their hidden values would otherwise be used as data),
    non-numeric or missing values, complex values, wrong shapes.

    Always a fresh :func:`aligned_copy`, so estimators give the same bits for
    any memory layout of the input (and never modify the caller's array).
    """
    if hasattr(X, "tocsr") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(
            f"{name} is a scipy sparse matrix; sparse input is not supported: pass a dense array "
            "(e.g. X.toarray()), whose every coordinate must lie in [-bound, bound]"
        )
    if isinstance(X, np.ma.MaskedArray):
        if np.ma.getmaskarray(X).any():
            raise ValueError(
                f"{name} is a masked array with masked entries; the estimators have no notion of missing "
                "values and would use the hidden values as data: drop or impute them first"
            )
        X = np.ma.getdata(X)
    if hasattr(X, "iloc") and hasattr(X, "dtypes"):
        X = _from_frame(X if X.ndim == 2 else X.to_frame(), name)
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged input and the like
        raise ValueError(f"{name} could not be converted to an array: {type(exc).__name__}") from exc
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"Complex data not supported: {name} must be real-valued")
    if arr.dtype == object:
        # Numbers stored as objects convert; pd.NA, None and text do not (the message quotes none of them).
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            raise TypeError(
                f"{name} has dtype object with entries that are not numbers (the float() argument must be a "
                "string or a real number holding a numeric value; pd.NA, None and text are not): encode or drop "
                "non-numeric columns and impute or drop missing values first"
            ) from None
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(
            f"{name} must be numeric, got dtype {arr.dtype}; encode or drop non-numeric columns "
            "(and impute or drop missing values such as pd.NA) first"
        )
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features), got shape {arr.shape}. Reshape your data either "
            f"using {name}.reshape(-1, 1) if it has a single feature or {name}.reshape(1, -1) if it has a single sample"
        )
    n, d = arr.shape
    if d < 1:
        raise ValueError(f"{name} is empty: 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
    if n == 0:
        raise ValueError(f"{name} is empty: 0 sample(s) (shape={arr.shape}) while a minimum of {min_samples} is required.")
    if n < min_samples:
        raise ValueError(f"{name} needs at least {min_samples} samples (rows), got {n} sample")
    # One memory layout for every input (a DataFrame arrives column-major, a worker may
    # receive a misaligned buffer, which np.ascontiguousarray would keep): reductions and
    # BLAS then take the same path, so results do not depend on it.
    arr = aligned_copy(arr)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf (missing or infinite values); remove or impute them first")
    return arr


def enforce_bound(X: np.ndarray, bound: float, policy: str, *, name: str = "X", stacklevel: int = 3) -> np.ndarray:
    """Apply the declared coordinate bound ``|x_ij| <= bound`` under ``policy``.

    ``"raise"`` refuses data outside the bound (the privacy guarantee would be
    void), ``"clip"`` clips them into it (the guarantee holds), ``"waive"``
    uses the data as they are, unchecked, and warns with
    :class:`~paceggm.exceptions.PrivacyLeakWarning`: the guarantee then holds
    only if the data happen to respect the bound. ``"waive"`` exists to
    reproduce published settings that violate their own bound. Neither the
    error nor the warning says how many values, or which, lie outside.

    Under ``"raise"``, values within :data:`BOUND_ULPS` units in the last place
    of the bound (``|x| <= bound · (1 + BOUND_ULPS · 2⁻⁵²)``) count as inside it:
    scaling onto ``[-1, 1]`` rounds (``MinMaxScaler(feature_range=(-1, 1))``
    returns ``1.0000000000000002``). They are clipped to ``±bound`` like any
    value under ``"clip"``, so the mechanisms never see a value beyond the
    bound: clipping at the declared bound is the same map for every data set,
    so the guarantee holds. Whenever values change, the result is a copy; ``X``
    is never modified.
    """
    if policy not in BOUND_CHECKS:
        raise ValueError(f"bound_check must be one of {BOUND_CHECKS}, got {policy!r}")
    if policy == "waive":
        warnings.warn(
            "bound_check='waive': the data are not checked against the declared bound, so the privacy "
            "guarantee does not hold if any value lies outside [-bound, bound]",
            PrivacyLeakWarning, stacklevel=stacklevel,
        )
        return X
    magnitude = np.abs(X)
    if not (magnitude > bound).any():
        return X
    if policy == "raise" and (magnitude > bound * (1.0 + BOUND_ULPS * np.finfo(float).eps)).any():
        raise ValueError(
            f"values of {name} lie outside [-bound, bound] = [-{bound}, {bound}] by more than rounding "
            f"({BOUND_ULPS} ulps); rescale the data (MinMaxScaler(feature_range=(-bound, bound), clip=True)), pass "
            "bound_check='clip' to clip them, or bound_check='waive' to skip the check (voids the privacy guarantee)"
        )
    clipped = aligned_copy(X)
    np.clip(clipped, -bound, bound, out=clipped)
    return clipped
