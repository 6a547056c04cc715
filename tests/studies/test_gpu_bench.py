"""The GPU study's tables and arguments (the study itself runs on a machine with a GPU)."""

from __future__ import annotations

import pytest


def test_gpu_bench_tables_from_a_report():
    from studies.gpu_bench import markdown

    report = {"machine": "m", "backend": "numpy", "backend_min_d": 400, "tolerance": 3.5e-9, "seconds": 1.0,
              "agreement": [{"shape": "lowrank", "d": 10, "rho": 1.0, "rounds": 3, "same_selection": True,
                             "difference": 1e-12, "agrees": True, "cpu_s": 0.1, "device_s": 0.2}],
              "newton_step": [{"d_b": 50, "cpu_s": 1e-3, "device_s": 5e-4, "speedup": 2.0}],
              "fits": [{"shape": "hard", "d": 80, "n": 100, "rho": 10.0, "cpu_rounds": 5, "cpu_s": 1.0,
                        "cpu_finished": False, "gpu_rounds": 9, "gpu_s": 1.0, "gpu_finished": True,
                        "common_rounds": 5, "cpu_s_common": 1.0, "gpu_s_common": 0.5, "speedup_common": 2.0}]}
    md = markdown(report)
    assert "| lowrank | 10 | 1 | 3 | True | 1.0e-12 | True |" in md
    assert "| 50 | 1.00 | 0.50 | 2.0 |" in md and "| hard | 80 | 100 | 10 | 5 (False) |" in md


def test_gpu_bench_fit_cells_and_sections_are_parsed_and_checked():
    import argparse

    from studies.gpu_bench import _fit_cells, _sections, markdown

    assert _fit_cells("lowrank:800:10:250,hard:1000:1:70") == [("lowrank", 800, 20000, 10.0, 250.0),
                                                               ("hard", 1000, 9144, 1.0, 70.0)]
    for bad in ("lowrank:800:10", "cube:10:1:5", "lowrank:800:0:5", "lowrank:x:1:5", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            _fit_cells(bad)
    assert _sections("fits") == ["fits"]
    with pytest.raises(argparse.ArgumentTypeError):
        _sections("fits,gpu")
    # only the sections run are drawn; an unfinished run says so
    md = markdown({"machine": "m", "backend": "numpy", "backend_min_d": 200, "tolerance": 3.5e-9, "fits": []})
    assert "## Agreement" not in md and "## Whole fits" not in md and "(run not finished)" in md
