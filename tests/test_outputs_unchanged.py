"""Every estimator's output for a fixed seed is the recorded one: within its accuracy everywhere, bit for bit where it can be.

The recording (``tests/data/reference_outputs.*``, written by
``python tests/reference_outputs.py``) holds each case's arrays, its digests, its
selection path and the BLAS kernel and NumPy/SciPy versions that computed them.

* :func:`test_values_match_the_recording` runs on any machine: the arrays agree within
  the tolerance of the estimator's accuracy class (derived in ``reference_outputs``,
  beside :data:`RTOL`), and PACE-GGM with the exact solver takes the recorded path.
  IPM-Cholesky is not exact; it is held to the exact answer on its own measurements.
* :func:`test_bits_match_the_recording` runs only on the recorded kernel and versions
  and is skipped elsewhere, naming both.
"""

import numpy as np
import pytest

from paceggm import MeasuredEntries, reconstruct

from reference_outputs import (
    IPM_RTOL,
    RTOL,
    blas_environment,
    case_names,
    compute,
    digest,
    environment_mismatch,
    kind,
    load,
    relative_difference,
)

RECORDED, ARRAYS = load()
CASES = case_names()


# Parallel runs (make test: pytest-xdist, --dist loadgroup) keep this module on one worker, so that its
# module fixture `outputs` is computed once.
pytestmark = pytest.mark.xdist_group("test_outputs_unchanged")


@pytest.fixture(scope="session")
def outputs():
    """Each case computed once for both layers."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = compute(name)
        return cache[name]

    return get


def test_the_recording_covers_every_case_and_names_its_environment():
    assert sorted(RECORDED["cases"]) == sorted(CASES)
    env = RECORDED["environment"]
    assert env["blas"] and all({"internal_api", "architecture", "version"} <= set(b) for b in env["blas"])
    assert env["numpy"] and env["scipy"]


@pytest.mark.parametrize("name", CASES)
def test_values_match_the_recording(name, outputs):
    out, fitted = outputs(name)
    rec = RECORDED["cases"][name]
    assert sorted(out.arrays) == sorted(rec["digests"])
    if kind(name) == "ipm":
        # Not exact: held to the exact completion of the measurements it released.
        d = fitted.covariance_.shape[0]
        state = MeasuredEntries.from_measurements(d, fitted.measurements_)
        exact = reconstruct(state.y, state.lam, solver="newton").covariance
        assert relative_difference(out.arrays["covariance"], exact) <= IPM_RTOL
        assert fitted.rho_spent_ <= 0.5
        return
    rtol = RTOL[kind(name)]
    for key, value in out.arrays.items():
        recorded = ARRAYS[f"{name}:{key}"]
        assert value.shape == recorded.shape
        assert relative_difference(value, recorded) <= rtol, (key, relative_difference(value, recorded))
    if rec["path"] is not None:
        assert out.path == rec["path"]


@pytest.mark.parametrize("name", CASES)
def test_bits_match_the_recording(name, outputs):
    reason = environment_mismatch(RECORDED["environment"], blas_environment())
    if reason is not None:
        pytest.skip(f"bit-for-bit check needs the recorded kernel and versions: {reason}")
    out, _ = outputs(name)
    rec = RECORDED["cases"][name]
    assert {k: digest(v) for k, v in out.arrays.items()} == rec["digests"]
    for key, value in out.arrays.items():
        assert np.array_equal(value, ARRAYS[f"{name}:{key}"])
    if rec["path"] is not None:
        assert out.path == rec["path"]


def test_a_different_kernel_skips_the_bits_naming_both():
    recorded = {"blas": [{"library_dir": "numpy.libs", "internal_api": "openblas", "architecture": "Haswell",
                          "version": "0.3.30"}], "numpy": "2.4.6", "scipy": "1.17.1"}
    other = {**recorded, "blas": [{**recorded["blas"][0], "architecture": "SkylakeX"}]}
    assert environment_mismatch(recorded, recorded) is None
    reason = environment_mismatch(recorded, other)
    assert "Haswell" in reason and "SkylakeX" in reason
    assert "1.18.0" in environment_mismatch(recorded, {**recorded, "scipy": "1.18.0"})


@pytest.mark.parametrize("name", ["strict/ssp", "paper/paceggm", "synthetic/pace_ggm_components"])
def test_the_value_check_catches_a_changed_output(name, outputs):
    """The tolerances are tight enough to see a change of the algorithm: another seed moves every case."""
    out, _ = outputs(name)
    setting = name.split("/")[0]
    moved, _ = compute(name, random_state=8 if setting != "synthetic" else 4)
    assert max(relative_difference(moved.arrays[k], out.arrays[k]) for k in out.arrays) > 1e3 * RTOL[kind(name)]
