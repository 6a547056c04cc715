"""Dense linear algebra on an array library chosen at run time: NumPy on the CPU, or torch / CuPy on a GPU.

The dense Newton solver (:mod:`.newton_xp`) is written once against the few
operations of :class:`Backend`; each library supplies them. The CPU backend
(``"numpy"``) runs the same code path as a GPU one, so the solver is tested
without an accelerator; ``"torch"`` (``"torch:cuda"``, ``"torch:cpu"``) and
``"cupy"`` need those libraries (the optional extra ``gpu``), which the library
never imports unless asked to.

Only float64 is used: the answers must agree with the CPU solvers to their
tolerance.
"""

from __future__ import annotations

import numpy as np

#: Backend names :func:`get_backend` accepts.
BACKENDS = ("numpy", "torch", "torch:cpu", "torch:cuda", "cupy")


class Backend:
    """The operations the dense solver needs, on one array library and device.

    Arrays are the library's own (``numpy.ndarray``, ``torch.Tensor``,
    ``cupy.ndarray``); integer-array indexing and the arithmetic operators
    are used directly (all three support them alike).
    """

    name = "numpy"

    def __init__(self) -> None:
        self.xp = np

    def asarray(self, a, dtype=None):
        return np.asarray(a, dtype=dtype if dtype is not None else None)

    def to_numpy(self, a) -> np.ndarray:
        return np.asarray(a)

    def index(self, idx: np.ndarray):
        """An integer index array on the device."""
        return np.asarray(idx, dtype=np.intp)

    def zeros(self, shape):
        return np.zeros(shape)

    def cholesky(self, A):
        """Lower Cholesky factor of ``A``, or None when ``A`` is not (numerically) positive definite."""
        try:
            L = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            return None
        return L if bool(np.all(np.isfinite(np.diagonal(L)))) else None

    def cho_inverse(self, L):
        """``(L Lᵀ)⁻¹`` from its lower factor, exactly symmetric."""
        from scipy.linalg import solve_triangular

        Linv = solve_triangular(L, np.eye(L.shape[0]), lower=True, check_finite=False)
        W = Linv.T @ Linv
        return 0.5 * (W + W.T)

    def cho_solve(self, L, b):
        from scipy.linalg import cho_solve

        return cho_solve((L, True), b, check_finite=False)

    def scalar(self, a) -> float:
        return float(a)

    def all_finite(self, a) -> bool:
        return bool(np.all(np.isfinite(a)))

    def synchronize(self) -> None:
        pass


class _TorchBackend(Backend):
    def __init__(self, device: str) -> None:
        import torch

        self.torch = torch
        self.xp = torch
        self.device = torch.device(device)
        self.name = f"torch:{self.device.type}"

    def asarray(self, a, dtype=None):
        return self.torch.as_tensor(np.asarray(a), dtype=self.torch.float64, device=self.device)

    def to_numpy(self, a) -> np.ndarray:
        return a.detach().cpu().numpy()

    def index(self, idx: np.ndarray):
        return self.torch.as_tensor(np.asarray(idx, dtype=np.int64), device=self.device)

    def zeros(self, shape):
        return self.torch.zeros(shape, dtype=self.torch.float64, device=self.device)

    def cholesky(self, A):
        L, info = self.torch.linalg.cholesky_ex(A)
        if int(info) != 0 or not self.all_finite(self.torch.diagonal(L)):
            return None
        return L

    def cho_inverse(self, L):
        W = self.torch.cholesky_inverse(L)
        return 0.5 * (W + W.T)

    def cho_solve(self, L, b):
        return self.torch.cholesky_solve(b.reshape(-1, 1), L).reshape(-1)

    def scalar(self, a) -> float:
        return float(a.item()) if hasattr(a, "item") else float(a)

    def all_finite(self, a) -> bool:
        return bool(self.torch.isfinite(a).all())

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()


class _CupyBackend(Backend):
    name = "cupy"

    def __init__(self) -> None:
        import cupy
        import cupyx.scipy.linalg as cl

        self.xp = cupy
        self._cl = cl

    def asarray(self, a, dtype=None):
        return self.xp.asarray(np.asarray(a), dtype=self.xp.float64)

    def to_numpy(self, a) -> np.ndarray:
        return self.xp.asnumpy(a)

    def index(self, idx: np.ndarray):
        return self.xp.asarray(np.asarray(idx, dtype=np.int64))

    def zeros(self, shape):
        return self.xp.zeros(shape)

    def cholesky(self, A):
        try:
            L = self.xp.linalg.cholesky(A)
        except Exception:  # noqa: BLE001 - CuPy raises LinAlgError only in its debug mode
            return None
        return L if self.all_finite(self.xp.diagonal(L)) else None

    def cho_inverse(self, L):
        Linv = self._cl.solve_triangular(L, self.xp.eye(L.shape[0]), lower=True)
        W = Linv.T @ Linv
        return 0.5 * (W + W.T)

    def cho_solve(self, L, b):
        y = self._cl.solve_triangular(L, b, lower=True)
        return self._cl.solve_triangular(L, y, lower=True, trans=1)

    def all_finite(self, a) -> bool:
        return bool(self.xp.all(self.xp.isfinite(a)))

    def synchronize(self) -> None:
        self.xp.cuda.Stream.null.synchronize()


_CACHE: dict[str, Backend] = {}


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (one of :data:`BACKENDS`); ``"torch"`` is the GPU when there is one.

    Raises
    ------
    ValueError
        An unknown name.
    ImportError
        The library is not installed (``pip install paceggm[gpu]``).
    """
    if not isinstance(name, str) or name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {list(BACKENDS)}")
    if name not in _CACHE:
        if name == "numpy":
            _CACHE[name] = Backend()
        elif name.startswith("torch"):
            try:
                import torch
            except ImportError as exc:
                raise ImportError(f"backend {name!r} needs torch (pip install 'paceggm[gpu]')") from exc
            device = name.partition(":")[2] or ("cuda" if torch.cuda.is_available() else "cpu")
            _CACHE[name] = _TorchBackend(device)
        else:
            try:
                _CACHE[name] = _CupyBackend()
            except ImportError as exc:
                raise ImportError("backend 'cupy' needs CuPy (pip install 'paceggm[gpu]')") from exc
    return _CACHE[name]
