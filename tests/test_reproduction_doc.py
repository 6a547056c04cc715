"""REPRODUCTION.md reads as a verdict: short, its headline the one `make figures` generates, and
no diary in it or in the design notes."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if not (REPO / "REPRODUCTION.md").is_file():  # a release (the sdist's tests) carries no reproduction write-up
    pytest.skip("REPRODUCTION.md is part of a clone, not of a release", allow_module_level=True)
DOC = (REPO / "REPRODUCTION.md").read_text(encoding="utf-8")
START, END = "<!-- headline: copied from figures/tables/headline.md (make figures); do not edit by hand -->", \
    "<!-- end headline -->"


def test_the_reproduction_opens_with_the_verdict_and_stays_short():
    assert len(DOC.splitlines()) < 400
    sections = re.findall(r"^## (.+)$", DOC, flags=re.M)
    assert sections[0] == "Verdict" and sections[-1] == "9. Settings and provenance"
    # places kept for text that other work adds
    assert "### Verification across machines" in DOC and "### Scale" in DOC


def test_the_headline_is_the_generated_one_and_the_report_opens_with_it():
    generated = (REPO / "figures" / "tables" / "headline.md").read_text(encoding="utf-8").strip()
    copied = DOC.split(START)[1].split(END)[0].strip()
    assert copied == generated, "copy figures/tables/headline.md into REPRODUCTION.md between the markers"
    report = (REPO / "figures" / "REPORT.md").read_text(encoding="utf-8")
    assert report.index("## Headline") < report.index("\n## ", report.index("## Headline") + 1)
    assert generated in report


def test_no_run_numbers_or_change_numbers_as_narrative():
    for path in [REPO / "REPRODUCTION.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\b[Rr]uns? [0-9]\b", text), path
        assert not re.search(r"\bchanges? [0-9]+[–-][0-9]+\b", text), path
