"""pytest: with only the library's dependencies installed, harness code is skipped, not an error.

A test module, doctest module or test that fails for want of one of the
harness's extra dependencies (:data:`paceggm.bench.REQUIREMENTS`) is reported
as skipped, naming the missing module; any other failure still fails.
``tests/conftest.py`` applies the same hooks to the harness's tests.
"""

import pytest

from paceggm.bench import missing_requirements

_HOW = "pip install -e '.[bench]'"


def _skip_reason(missing) -> str:
    return f"needs the benchmark harness's dependencies (missing {', '.join(missing)}; {_HOW})"


def _missing_in(report) -> list[str]:
    # pytest keeps the text of the error (an import error while collecting, a
    # package's failed setup, a doctest's exception); the module it names decides
    return [m for m in missing_requirements() if f"No module named '{m}" in str(report.longrepr)]


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    missing = _missing_in(report) if report.failed and isinstance(collector, pytest.File) else []
    if missing:
        report.outcome = "skipped"
        report.longrepr = (str(collector.path), 0, "Skipped: " + _skip_reason(missing))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    missing = _missing_in(report) if report.failed else []
    if missing:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, "Skipped: " + _skip_reason(missing))
