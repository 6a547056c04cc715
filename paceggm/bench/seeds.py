"""Stable hashes and seeds derived from what a cell *is*, never from where it runs.

Everything goes through :func:`canonical_json` and SHA-256, so a key or a seed
is the same on every machine, Python version and worker (Python's ``hash()`` is
salted per process and must never be used here).

Two seeds per cell:

* the *data-side* seed depends on (base seed, data set, trial) only, so every
  method and every ρ of a trial sees the same train/test split;
* the *method* seed depends on (base seed, data set, trial, method, ρ): variants
  of one method (solver, connected components, α/β) share it on purpose —
  common random numbers make their comparison paired, and with the same noise
  the components on/off runs must agree exactly.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers

import numpy as np

__all__ = ["canonical_json", "stable_hash", "derive_seed", "data_seed", "method_seed", "seed_sequence"]


def _normalise(obj):
    """JSON-ready, type-stable form: numpy scalars to Python, tuples to lists."""
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        value = float(obj)
        if not math.isfinite(value):
            raise ValueError(f"cannot hash a non-finite number: {value!r}")
        return value
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, dict):
        return {str(k): _normalise(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_normalise(v) for v in obj]
    raise TypeError(f"cannot hash an object of type {type(obj).__name__}: {obj!r}")


def canonical_json(obj) -> str:
    """Sorted-key, whitespace-free JSON; floats in their shortest round-trip form."""
    return json.dumps(_normalise(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)


def stable_hash(obj, *, length: int = 20) -> str:
    """Hex SHA-256 of the canonical JSON of ``obj``, truncated to ``length`` digits.

    Examples
    --------
    >>> stable_hash({"b": 1, "a": [1.0, "x"]}) == stable_hash({"a": [1.0, "x"], "b": 1})
    True
    """
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def derive_seed(*parts) -> int:
    """A non-negative 63-bit integer seed from the canonical JSON of ``parts``."""
    digest = hashlib.sha256(canonical_json(list(parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def data_seed(base_seed: int, dataset: str, trial: int) -> int:
    """Seed of the data-side randomness of a trial (e.g. the regression split)."""
    return derive_seed("data", int(base_seed), str(dataset), int(trial))


def method_seed(base_seed: int, dataset: str, trial: int, method: str, rho: float) -> int:
    """Seed of a method's privacy noise in one cell."""
    return derive_seed("method", int(base_seed), str(dataset), int(trial), str(method), float(rho))


def seed_sequence(seed: int) -> np.random.SeedSequence:
    """The ``SeedSequence`` a seed stands for (what estimators receive as ``random_state``)."""
    return np.random.SeedSequence(int(seed))
