"""Reconstruction kept up to date one measured entry at a time.

PACE-GGM changes one entry of ``(y, λ)`` per round, so only the component of
the measured pattern that holds the entry changes: it is the union of the (at
most two) components its ends belonged to, and every other block's answer
stays as it was. :class:`IncrementalReconstruction` tracks the components by
merging (a measured entry is never removed, so components only ever merge),
re-solves only the block that changed — warm-started from the blocks it was
made of — and writes only that block into the covariance. A round therefore
touches nothing of size ``d × d``; a call of :func:`reconstruct` from scratch
validates, decomposes and copies the whole matrix.

Its answers are those of :func:`reconstruct` called with ``previous`` after
every change, bit for bit (tested): the same blocks are solved from the same
measurements and the same warm starts.
"""

from __future__ import annotations

import time

import numpy as np

from paceggm.reconstruction.blocks import solve_block
from paceggm.reconstruction.counters import piece
from paceggm.reconstruction.result import Reconstruction


class IncrementalReconstruction:
    """The reconstruction of ``(y, λ)`` while their entries are measured one by one.

    Starts, as PACE-GGM does, from the measured diagonal alone.

    Parameters
    ----------
    y, lam : ndarray of shape (d, d)
        The measured values and precisions: symmetric, the diagonal measured and
        nothing else yet. Held by reference, not copied: the caller updates them in
        place and then calls :meth:`update` with the entry it changed. Checked
        once here.
    solver : str
        A key of :data:`paceggm.reconstruction.SOLVERS`.
    use_components : bool
        Solve each connected component separately (otherwise every change
        re-solves the whole matrix).
    solver_options : dict, optional
        Keyword options of the solver.
    spec : SolverSpec, optional
        The registered spec of ``solver`` when the caller has checked ``solver`` and
        ``solver_options`` with :func:`paceggm.reconstruction.check_solver` already;
        None: they are checked here.

    Attributes
    ----------
    covariance : ndarray of shape (d, d)
        The current estimate, updated in place by :meth:`update`.
    n_iter, n_solved, n_capped : int
        Solver iterations of the last update, blocks it solved (0 or 1) and how
        many of those stopped before converging.
    converged : bool
        Whether every current block converged; when not, :meth:`update` warns
        as :func:`paceggm.reconstruction.reconstruct` does.
    last_block : dict or None
        The block record (see :func:`paceggm.reconstruction.blocks.solve_block`)
        of the last solve.

    Examples
    --------
    >>> import numpy as np
    >>> y, lam = np.eye(3), np.eye(3)
    >>> inc = IncrementalReconstruction(y, lam)
    >>> y[1, 0] = y[0, 1] = 0.5; lam[1, 0] = lam[0, 1] = 1.0
    >>> round(float(inc.update(1, 0).covariance[1, 0]), 6)
    0.5
    """

    def __init__(self, y: np.ndarray, lam: np.ndarray, *, solver: str | None = None, use_components: bool = True,
                 solver_options: dict | None = None, spec=None) -> None:
        from paceggm.reconstruction import DEFAULT_SOLVER, _check_inputs, check_solver

        solver = DEFAULT_SOLVER if solver is None else solver
        # A caller whose solver and options passed check_solver already (PACE-GGM's settings) hands its spec over.
        self._spec = check_solver(solver, solver_options) if spec is None else spec
        _check_inputs(y, lam)
        if not (isinstance(y, np.ndarray) and isinstance(lam, np.ndarray) and y.dtype == lam.dtype == float):
            raise TypeError("y and lam must be float arrays (they are held by reference and updated in place)")
        d = y.shape[0]
        if np.count_nonzero(lam) != d:
            raise ValueError("start from the measured diagonal alone; off-diagonal entries are added by update()")
        self.y, self.lam = y, lam
        self.solver = solver
        self._options = dict(solver_options or {})
        self.use_components = bool(use_components)
        # Singletons have the closed form max(y_jj, 0), also when decomposing is
        # off: then nothing is solved before the first off-diagonal entry.
        self.covariance = np.diag(np.maximum(np.diag(y), 0.0))
        self.solve_time = 0.0
        self.n_iter = self.n_solved = self.n_capped = 0
        self.converged = True
        self.last_block = None
        self._unconverged: set[int] = set()  # labels of blocks that did not converge
        # A component is named by its label, the smallest index in it.
        if self.use_components:
            self._label = np.arange(d)
            self._members = {j: np.array([j]) for j in range(d)}
        else:
            self._label = np.zeros(d, dtype=np.intp)
            self._members = {0: np.arange(d)}
        self._blocks: dict[int, dict] = {}

    def component(self, j: int) -> np.ndarray:
        """Sorted indices of the component holding ``j``."""
        return self._members[int(self._label[j])]

    def update(self, j: int, k: int) -> IncrementalReconstruction:
        """Bring the estimate up to date after entry ``(j, k)`` of ``(y, λ)`` changed.

        Returns ``self``; ``solve_time`` is then the seconds this update spent.
        """
        with piece("reconstruction updates"):
            self._update(j, k)
        if not self.converged:
            from paceggm.reconstruction import warn_unconverged

            warn_unconverged(self.solver, stacklevel=2)
        return self

    def _update(self, j: int, k: int) -> None:
        t0 = time.perf_counter()
        self.n_iter = self.n_solved = self.n_capped = 0
        a, b = int(self._label[j]), int(self._label[k])
        parts = [a] if a == b else [a, b]
        idx = self._members[a] if a == b else np.union1d(self._members[a], self._members[b])
        head = int(idx[0])
        ix = np.ix_(idx, idx)
        if idx.size == 1 and self.use_components:
            self.covariance[j, j] = max(self.y[j, j], 0.0)
            block = None
        else:
            block = self._blocks.get(head) if a == b else None
            if block is None:
                y_b, lam_b = self.y[ix], self.lam[ix]
                block = self._solve(idx, parts, y_b, lam_b)
            else:
                block = self._resolve(block, idx, j, k)
            W = block["W"]
            self.covariance[ix] = 0.5 * (W + W.T)
        for p in parts:
            self._members.pop(p)
            self._blocks.pop(p, None)
            self._unconverged.discard(p)
        self._members[head] = idx
        self._label[idx] = head
        if block is not None:
            self._blocks[head] = block
            if not block.get("converged", True):
                self._unconverged.add(head)
        self.last_block = block
        # As for reconstruct(): every current block counts, reused ones as they were solved.
        self.converged = not self._unconverged
        self.solve_time = time.perf_counter() - t0

    def _solve(self, idx: np.ndarray, parts: list[int], y_b: np.ndarray, lam_b: np.ndarray) -> dict:
        init = self._warm_start(idx, parts) if self._spec.warm_start else None
        # The record takes over y_b and lam_b, fresh gathers or the previous record's.
        block = solve_block(y_b, lam_b, solve=self._spec.solve, init=init, options=self._options, copy=False)
        self.n_iter, self.n_solved = block["n_iter"], 1
        self.n_capped = int(not block["converged"])
        return block

    def _resolve(self, block: dict, idx: np.ndarray, j: int, k: int) -> dict:
        """The block ``block`` after its entry ``(j, k)`` changed: re-solved, or reused if the values are the same.

        Only that entry can differ from what the block was solved from, so its
        measurements are updated in place rather than gathered again from ``y``
        and ``λ`` (two ``d_b × d_b`` gathers and two comparisons a round: 2.9 ms
        at d_b = 750, a twentieth of a round's solve there), and handed over to
        the new record. If the solve fails, the old record is left as it was.
        """
        lj, lk = (int(i) for i in np.searchsorted(idx, (j, k)))
        y_b, lam_b = block["y"], block["lam"]
        entries = ((lj, lk, j, k), (lk, lj, k, j))
        old = [(y_b[a, b], lam_b[a, b]) for a, b, _, _ in entries]
        new = [(self.y[g, h], self.lam[g, h]) for _, _, g, h in entries]
        if old == new:
            return block
        for (a, b, _, _), (value, weight) in zip(entries, new):
            y_b[a, b], lam_b[a, b] = value, weight
        try:
            return self._solve(idx, [int(idx[0])], y_b, lam_b)
        except BaseException:
            for (a, b, _, _), (value, weight) in zip(entries, old):
                y_b[a, b], lam_b[a, b] = value, weight
            raise

    def _warm_start(self, idx: np.ndarray, parts: list[int]) -> list:
        out = []
        for p in parts:
            block = self._blocks.get(p)
            if block is not None and block["state"] is not None:
                out.append((np.searchsorted(idx, self._members[p]), block["state"]))
        return out

    def result(self) -> Reconstruction:
        """The current estimate as a :class:`Reconstruction` record (a copy)."""
        comps = sorted(self._members.values(), key=lambda g: int(g[0]))
        mus = [b["mu"] for b in self._blocks.values() if b["mu"] is not None]
        return Reconstruction(
            covariance=self.covariance.copy(),
            solver=self.solver,
            components=comps,
            solve_time=self.solve_time,
            mu=max(mus) if mus else None,
            n_solved=self.n_solved,
            # The records' measurements are updated in place by later rounds: copies.
            blocks={tuple(int(i) for i in self._members[h]): {**b, "y": b["y"].copy(), "lam": b["lam"].copy()}
                    for h, b in self._blocks.items()},
            n_iter=self.n_iter,
            converged=self.converged,
            n_capped=self.n_capped,
            max_iter=self.n_iter,
        )
