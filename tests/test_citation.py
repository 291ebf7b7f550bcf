"""The licence and the citation file: present, and saying what pyproject says."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pyproject_license() -> str:
    """pyproject's `license` (a plain string; read without tomllib, which Python 3.10 lacks)."""
    text = (ROOT / "pyproject.toml").read_text()
    found = re.search(r'^license\s*=\s*"([^"]+)"', text, re.MULTILINE)
    assert found, "pyproject.toml names no license"
    return found.group(1)


def test_the_licence_file_is_the_one_pyproject_names():
    license_id = _pyproject_license()
    assert license_id == "MIT"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Permission is hereby granted, free of charge" in text


def test_the_citation_file_cites_the_companion_and_the_three_papers():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert cff["type"] == "software" and cff["title"] and cff["message"]
    assert cff["license"] == _pyproject_license()
    assert cff["authors"] and all("name" in a or "family-names" in a for a in cff["authors"])
    arxiv = {"2310.16261", "2212.00460", "2211.13815"}  # papers A, B and C
    refs = cff["references"]
    assert len(refs) == len(arxiv)
    cited = set()
    for ref in refs:
        assert ref["type"] and ref["title"] and ref["authors"] and isinstance(ref["year"], int)
        cited |= {i["value"].removeprefix("arXiv:") for i in ref.get("identifiers", [])}
    assert cited == arxiv
