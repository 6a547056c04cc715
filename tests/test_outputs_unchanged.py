"""Every estimator's output for a fixed seed is the recorded one: within its accuracy everywhere, bit for bit where it can be.

The recording (``tests/data/reference_outputs.*``, written by
``python tests/reference_outputs.py``) holds each case's arrays, its digests, its
selection path and what moved their last bits where they were computed
(:func:`paceggm.bench.bits.bit_environment`: the BLAS libraries with their kernels
and versions, NumPy's SIMD dispatch level, the NumPy, SciPy and Python versions,
the C library).

* :func:`test_values_match_the_recording` runs on any machine: the arrays agree within
  the tolerance of the estimator's accuracy class (derived in ``reference_outputs``,
  beside :data:`RTOL`), and PACE-GGM with the exact solver takes the recorded path.
  IPM-Cholesky is not exact; it is held to the exact answer on its own measurements.
* :func:`test_bits_match_the_recording` runs only where each of those is the recorded
  one and is skipped elsewhere, naming both sides of each difference.
"""

import numpy as np
import pytest

from paceggm import MeasuredEntries, reconstruct
from paceggm.bench.bits import ITEMS, bit_environment, bit_mismatch

from reference_outputs import IPM_RTOL, RTOL, case_names, compute, digest, kind, load, relative_difference

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
    assert set(env) == set(ITEMS)
    assert env["blas"] and all({"internal_api", "architecture", "version"} <= set(b) for b in env["blas"])
    assert env["numpy_simd"]["baseline"] and env["numpy"] and env["scipy"] and env["python"] and env["libc"]


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


def _environment_of_the_recorded_libraries() -> dict:
    """This process's bit environment, its BLAS libraries limited to those the recording loaded.

    A library loaded here and not there (cvxopt's OpenBLAS, once the chordal solver's tests ran in this
    process) is not one the recorded fits call: were it called, the recording would have loaded it too.
    Without this, a full test run on the recorded kernel would skip every bit comparison.
    """
    env = bit_environment()
    recorded = {b["library_dir"] for b in RECORDED["environment"]["blas"]}
    return {**env, "blas": [b for b in env["blas"] if b["library_dir"] in recorded]}


@pytest.mark.parametrize("name", CASES)
def test_bits_match_the_recording(name, outputs):
    reason = bit_mismatch(RECORDED["environment"], _environment_of_the_recorded_libraries())
    if reason is not None:
        pytest.skip(f"bits compared only where what moves them is the recorded: {reason}")
    out, _ = outputs(name)
    rec = RECORDED["cases"][name]
    assert {k: digest(v) for k, v in out.arrays.items()} == rec["digests"]
    for key, value in out.arrays.items():
        assert np.array_equal(value, ARRAYS[f"{name}:{key}"])
    if rec["path"] is not None:
        assert out.path == rec["path"]


RECORDED_HERE = {
    "blas": [{"library_dir": "numpy.libs", "internal_api": "openblas", "architecture": "Haswell", "version": "0.3.31"},
             {"library_dir": "scipy.libs", "internal_api": "openblas", "architecture": "Haswell", "version": "0.3.30"}],
    "numpy_simd": {"baseline": ["X86_V2"], "dispatch": ["X86_V3"]},
    "numpy": "2.4.6", "scipy": "1.17.1", "python": "CPython 3.11.7", "libc": "glibc 2.36",
}


def _with(key, value):
    return {**RECORDED_HERE, key: value}


def test_the_same_environment_compares_the_bits():
    assert bit_mismatch(RECORDED_HERE, RECORDED_HERE) is None
    assert bit_mismatch(RECORDED_HERE, {k: RECORDED_HERE[k] for k in reversed(list(RECORDED_HERE))}) is None


@pytest.mark.parametrize(("other", "item", "ours", "theirs"), [
    # NumPy's AVX-512 loops on an AVX-512 CPU under the recorded kernel: the IPM cases' last bits move
    (_with("numpy_simd", {"baseline": ["X86_V2"], "dispatch": ["X86_V3", "X86_V4", "AVX512_ICL"]}), "NumPy SIMD",
     "[baseline X86_V2, dispatch X86_V3]", "[baseline X86_V2, dispatch X86_V3 X86_V4 AVX512_ICL]"),
    (_with("numpy_simd", {"baseline": ["X86_V2"], "dispatch": []}), "NumPy SIMD",
     "[baseline X86_V2, dispatch X86_V3]", "[baseline X86_V2, dispatch none]"),
    (_with("blas", [RECORDED_HERE["blas"][0], {**RECORDED_HERE["blas"][1], "architecture": "SkylakeX"}]),
     "BLAS in scipy.libs", "[openblas 0.3.30 Haswell]", "[openblas 0.3.30 SkylakeX]"),
    (_with("blas", [{**RECORDED_HERE["blas"][0], "version": "0.3.32"}, RECORDED_HERE["blas"][1]]),
     "BLAS in numpy.libs", "[openblas 0.3.31 Haswell]", "[openblas 0.3.32 Haswell]"),
    (_with("blas", RECORDED_HERE["blas"][:1]), "BLAS in scipy.libs", "[openblas 0.3.30 Haswell]", "[none]"),
    (_with("numpy", "2.5.0"), "NumPy", "[2.4.6]", "[2.5.0]"),
    (_with("scipy", "1.18.0"), "SciPy", "[1.17.1]", "[1.18.0]"),
    (_with("python", "CPython 3.12.1"), "Python", "[CPython 3.11.7]", "[CPython 3.12.1]"),
    (_with("libc", "glibc 2.41"), "C library", "[glibc 2.36]", "[glibc 2.41]"),
    ({k: v for k, v in RECORDED_HERE.items() if k != "numpy_simd"}, "NumPy SIMD",
     "[baseline X86_V2, dispatch X86_V3]", "[not recorded]"),
])
def test_each_thing_that_moves_bits_differing_skips_the_bits_naming_both_sides(other, item, ours, theirs):
    assert bit_mismatch(RECORDED_HERE, other) == f"{item}: recorded {ours}, this machine {theirs}"
    assert bit_mismatch(other, RECORDED_HERE) == f"{item}: recorded {theirs}, this machine {ours}"


def test_every_difference_is_named():
    other = {**_with("numpy_simd", {"baseline": ["X86_V2"], "dispatch": ["X86_V3", "X86_V4"]}), "scipy": "1.18.0",
             "blas": [{**b, "architecture": "SkylakeX"} for b in RECORDED_HERE["blas"]]}
    reason = bit_mismatch(RECORDED_HERE, other)
    assert reason.count("recorded [") == 4
    assert reason.index("numpy.libs") < reason.index("scipy.libs") < reason.index("NumPy SIMD") < reason.index("SciPy")


def test_the_simd_level_is_what_numpy_dispatches_to_here():
    """``numpy.show_runtime()``'s targets found, and none of those ``NPY_DISABLE_CPU_FEATURES`` turns off."""
    import contextlib
    import io
    import json
    import os
    import re
    import subprocess
    import sys

    from paceggm.bench import bits

    env = bit_environment()
    assert set(env) == set(ITEMS) and env["numpy"] == np.__version__
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        np.show_runtime()
    found = re.search(r"'found': \[([^\]]*)\]", shown.getvalue().replace("\n", " ")).group(1)
    assert env["numpy_simd"]["dispatch"] == re.findall(r"'(\w+)'", found)
    # every target found here turned off: NumPy runs its baseline loops, and the level says so (the module
    # alone, by its path: the package would import scikit-learn)
    capped = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u, json, sys; s = u.spec_from_file_location('bits', sys.argv[1]); "
                               "m = u.module_from_spec(s); s.loader.exec_module(m); print(json.dumps(m.numpy_simd()))",
         bits.__file__],
        env={**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join([os.environ.get("NPY_DISABLE_CPU_FEATURES", ""),
                                                                 *env["numpy_simd"]["dispatch"]]).strip()},
        capture_output=True, text=True, check=True)
    assert json.loads(capped.stdout) == {"baseline": env["numpy_simd"]["baseline"], "dispatch": []}


@pytest.mark.parametrize("name", ["strict/ssp", "paper/paceggm", "synthetic/pace_ggm_components"])
def test_the_value_check_catches_a_changed_output(name, outputs):
    """The tolerances are tight enough to see a change of the algorithm: another seed moves every case."""
    out, _ = outputs(name)
    setting = name.split("/")[0]
    moved, _ = compute(name, random_state=8 if setting != "synthetic" else 4)
    assert max(relative_difference(moved.arrays[k], out.arrays[k]) for k in out.arrays) > 1e3 * RTOL[kind(name)]
