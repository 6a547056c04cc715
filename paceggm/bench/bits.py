"""What moves the last bits of a floating-point result, and whether two machines agree on it.

The same code on the same data gives the same bits only where all of these are the same:

* each BLAS library loaded (threadpoolctl: its directory, internal API, version and kernel;
  OpenBLAS picks a kernel per CPU, ``Haswell`` on AVX2, ``SkylakeX`` on AVX-512, unless
  ``OPENBLAS_CORETYPE`` names one);
* NumPy's SIMD level: its baseline and the dispatch targets it uses at run time (the CPU's
  features among NumPy's targets, less those ``NPY_DISABLE_CPU_FEATURES`` turns off), which
  pick the loops of its ufuncs and reductions (float64 ``exp``/``log`` have AVX-512 loops and
  call the C library below that);
* the NumPy and SciPy versions, and the Python version (the built-in ``sum`` of floats, for
  one, changed between versions);
* the C library, whose ``libm`` computes what NumPy's and SciPy's own loops do not.

:func:`bit_environment` reads them in this process; :func:`bit_differences` names each
item two environments differ in, with both sides.
"""

from __future__ import annotations

import platform
from pathlib import Path

__all__ = ["bit_differences", "bit_environment", "bit_mismatch", "describe", "numpy_simd"]

#: The items of an environment, in the order they are described, with their names.
ITEMS = {"blas": "BLAS", "numpy_simd": "NumPy SIMD", "numpy": "NumPy", "scipy": "SciPy", "python": "Python",
         "libc": "C library"}


def numpy_simd() -> dict:
    """NumPy's baseline and the dispatch targets it uses here (what ``numpy.show_runtime()`` calls found)."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as umath
    features = umath.__cpu_features__
    return {"baseline": list(umath.__cpu_baseline__),
            "dispatch": [t for t in umath.__cpu_dispatch__ if features.get(t)]}


def bit_environment() -> dict:
    """What moves the last bits in this process (see the module's docstring); JSON-serialisable."""
    import numpy as np
    import scipy
    import scipy.linalg  # loads SciPy's own BLAS, which threadpoolctl then reports beside NumPy's  # noqa: F401
    from threadpoolctl import threadpool_info

    libs = sorted(
        (Path(i["filepath"]).parent.name, i["internal_api"], str(i.get("architecture")), str(i.get("version")))
        for i in threadpool_info() if i.get("user_api") == "blas"
    )
    libc = " ".join(platform.libc_ver()).strip()
    return {
        "blas": [{"library_dir": d, "internal_api": api, "architecture": arch, "version": v} for d, api, arch, v in libs],
        "numpy_simd": numpy_simd(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "libc": libc or "unknown",
    }


def _blas_text(b: dict) -> str:
    return f"{b['internal_api']} {b['version']} {b['architecture']} ({b['library_dir']})"


def _text(key: str, value) -> str:
    if value is None:
        return "not recorded"
    if key == "blas":
        return ", ".join(_blas_text(b) for b in value) or "none found"
    if key == "numpy_simd":
        return f"baseline {' '.join(value['baseline']) or 'none'}, dispatch {' '.join(value['dispatch']) or 'none'}"
    return str(value)


def describe(env: dict) -> str:
    """Every item on one line: ``"BLAS openblas 0.3.30 Haswell (scipy.libs); NumPy SIMD baseline X86_V2, …"``."""
    return "; ".join(f"{name} {_text(key, env.get(key))}" for key, name in ITEMS.items())


def _blas_differences(recorded: list, current: list) -> list[str]:
    """Library by library (its directory names it): a kernel, version or library that is not the recorded one."""
    rec, cur = {b["library_dir"]: b for b in recorded}, {b["library_dir"]: b for b in current}
    out = []
    for d in sorted(rec.keys() | cur.keys()):
        if rec.get(d) != cur.get(d):
            a, b = (f"{x['internal_api']} {x['version']} {x['architecture']}" if x else "none"
                    for x in (rec.get(d), cur.get(d)))
            out.append(f"BLAS in {d}: recorded [{a}], this machine [{b}]")
    return out


def bit_differences(recorded: dict, current: dict) -> list[str]:
    """Each item ``current`` differs from ``recorded`` in, as ``"<item>: recorded [<a>], this machine [<b>]"``.

    An item missing from either side differs ("not recorded"). Empty where the bits may be compared.
    """
    out = []
    for key, name in ITEMS.items():
        a, b = recorded.get(key), current.get(key)
        if a == b:
            continue
        if key == "blas" and a is not None and b is not None:
            out += _blas_differences(a, b)
        else:
            out.append(f"{name}: recorded [{_text(key, a)}], this machine [{_text(key, b)}]")
    return out


def bit_mismatch(recorded: dict, current: dict) -> str | None:
    """``None`` if ``current`` moves bits as ``recorded`` does, else every difference (both sides) on one line."""
    diffs = bit_differences(recorded, current)
    return "; ".join(diffs) if diffs else None
