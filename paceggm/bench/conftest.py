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


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if not report.failed or not isinstance(collector, pytest.File):
        return
    # pytest keeps only the text of an import error raised while collecting
    missing = [m for m in missing_requirements() if f"No module named '{m}" in str(report.longrepr)]
    if missing:
        report.outcome = "skipped"
        report.longrepr = (str(collector.path), 0, "Skipped: " + _skip_reason(missing))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    exc = call.excinfo.value if call.excinfo is not None else None
    exc = getattr(exc, "exc_info", (None, exc))[1]  # a doctest's own exception (doctest.UnexpectedException)
    if not report.failed or not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return
    top = exc.name.split(".")[0]
    if top in missing_requirements():
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, "Skipped: " + _skip_reason([top]))
