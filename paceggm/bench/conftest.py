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


def skip_for_missing_module(report, node) -> None:
    """Turn a failed collection or test ``report`` of ``node`` into a skip when a harness module is missing."""
    missing = _missing_in(report) if report.failed else []
    if not missing:
        return
    if isinstance(node, pytest.Item):
        where = (str(node.path), node.location[1] or 0)
    elif isinstance(node, pytest.File):
        where = (str(node.path), 0)
    else:
        return
    report.outcome = "skipped"
    report.longrepr = (*where, "Skipped: " + _skip_reason(missing))


def skip_when_a_module_is_missing(node):
    """The body of the two hook wrappers below (``yield from`` it), for any conftest that declares them."""
    outcome = yield
    skip_for_missing_module(outcome.get_result(), node)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    yield from skip_when_a_module_is_missing(collector)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    yield from skip_when_a_module_is_missing(item)
