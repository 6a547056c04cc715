"""README.md stays a short page for users: its length, the make targets and files it names, its example."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
if not (ROOT / "docs").is_dir():  # a release (the sdist's tests) carries README.md but not docs/
    pytest.skip("no docs/ beside the tests", allow_module_level=True)
TEXT = README.read_text(encoding="utf-8")
MAX_LINES = 250
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*):(?!=)", makefile, re.M))


def test_the_readme_is_short():
    assert len(TEXT.splitlines()) <= MAX_LINES


def test_every_make_target_the_readme_names_exists():
    named = set(re.findall(r"\bmake ([a-z][\w-]*)", TEXT))
    assert {"demo", "test", "reproduce", "reproduce-quick", "figures"} <= named
    assert named <= _targets(), sorted(named - _targets())


@pytest.mark.parametrize("doc", [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "datasets" / "README.md"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_local_link_leads_to_a_file_and_heading_that_exist(doc):
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        assert file.exists(), f"{doc.relative_to(ROOT)} links to {target}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.M)
            assert anchor in {_anchor(h) for h in headings}, f"{doc.relative_to(ROOT)}: no heading for #{anchor}"


def test_the_readme_names_the_install_commands_and_the_data_directory():
    assert 'pip install -e ".[bench]"' in TEXT and "PACEGGM_DATA_DIR" in TEXT
    assert "docs/extending.md" in TEXT and "REPRODUCTION.md" in TEXT


def test_the_python_example_runs_and_prints_what_the_readme_shows(capsys):
    code, shown = re.search(r"```python\n(.*?)```\n\n```text\n(.*?)```", TEXT, re.S).groups()
    assert len(code.strip().splitlines()) <= 10
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    got = re.fullmatch(r"spent rho = ([\d.]+) in (\d+) rounds\nMahalanobis error ([\d.]+)\n", printed)
    want = re.fullmatch(r"spent rho = ([\d.]+) in (\d+) rounds\nMahalanobis error ([\d.]+)\n", shown)
    assert got and want, (printed, shown)
    assert got[1] == want[1] == "0.1"  # the budget, spent exactly
    # the rounds and the error move with the BLAS that rounds the reconstruction, and only a little
    assert abs(int(got[2]) - int(want[2])) <= 2 and abs(float(got[3]) - float(want[3])) <= 0.05 * float(want[3])


def test_the_methods_table_names_every_method_of_the_package():
    from conftest import package_methods

    table = TEXT[TEXT.index("## Methods"):].split("\n## ")[0]
    keys = set(re.findall(r"`([a-z_]+)`", table))
    assert set(package_methods()) <= keys, sorted(set(package_methods()) - keys)
