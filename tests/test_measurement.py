"""Measurement records and the inverse-variance merge."""

import dataclasses

import numpy as np
import pytest

from paceggm import MeasuredEntries, Measurement
from paceggm.measurement import inverse_variance_merge


def test_measurement_is_frozen():
    m = Measurement(entry=(1, 0), value=0.5, sigma=0.1, rho=0.01)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.value = 1.0


def test_merge_equals_closed_form():
    rng = np.random.default_rng(0)
    z = rng.normal(size=7)
    sig = rng.uniform(0.1, 2.0, size=7)
    state = MeasuredEntries(3)
    for zi, si in zip(z, sig):
        state.add(Measurement(entry=(2, 1), value=zi, sigma=si, rho=0.1))
    w = 1 / sig**2
    assert np.isclose(state.y[2, 1], np.sum(w * z) / np.sum(w), rtol=1e-13)
    assert np.isclose(state.lam[2, 1], np.sum(w), rtol=1e-13)
    assert state.y[1, 2] == state.y[2, 1] and state.lam[1, 2] == state.lam[2, 1]
    assert state.n_offdiagonal() == 1
    assert inverse_variance_merge(0.0, 0.0, 3.0, 2.0) == (3.0, 0.25)


def test_rebuild_from_records_is_identical():
    ms = [Measurement((0, 0), 1.0, 0.5, 0.1), Measurement((1, 0), 0.2, 0.3, 0.1), Measurement((0, 0), 1.2, 0.2, 0.1)]
    a = MeasuredEntries.from_measurements(2, ms)
    b = MeasuredEntries(2)
    for m in ms:
        b.add(m)
    assert np.array_equal(a.y, b.y) and np.array_equal(a.lam, b.lam)


def test_rejects_upper_triangle_or_out_of_range_entries():
    state = MeasuredEntries(2)
    with pytest.raises(ValueError):
        state.add(Measurement((0, 1), 1.0, 1.0, 1.0))
    with pytest.raises(ValueError):
        state.add(Measurement((2, 0), 1.0, 1.0, 1.0))
