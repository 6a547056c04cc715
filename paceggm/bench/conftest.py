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


def skip_when_a_module_is_missing(node):
    """The body of the two hook wrappers below (``yield from`` it), for any conftest that declares them:
    a failed collection of a file, or a failed test, becomes a skip when a harness module is missing."""
    report = (yield).get_result()
    missing = _missing_in(report) if report.failed and isinstance(node, (pytest.Item, pytest.File)) else []
    if missing:
        report.outcome = "skipped"
        line = (node.location[1] or 0) if isinstance(node, pytest.Item) else 0
        report.longrepr = (str(node.path), line, "Skipped: " + _skip_reason(missing))


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    yield from skip_when_a_module_is_missing(collector)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    yield from skip_when_a_module_is_missing(item)
