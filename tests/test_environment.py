"""The two ways to install the project give the same environment: make and conda."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _make_default(name: str) -> str:
    """A `NAME ?= value` default of the Makefile."""
    match = re.search(rf"^{name} \?= (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, f"the Makefile sets no default for {name}"
    return match.group(1).strip()


def _conda_pip() -> list[str]:
    """The pip lines of environment.yml."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    (pip,) = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    return pip


def test_conda_installs_the_extras_make_installs():
    extras = set(_make_default("EXTRAS").split(","))
    (editable,) = [line for line in _conda_pip() if line.startswith("-e ")]
    conda = set(re.search(r"\[(.+)\]", editable).group(1).split(","))
    assert conda == extras, f"environment.yml installs {sorted(conda)}, make installs {sorted(extras)}"


def test_conda_pins_the_torch_make_pins():
    assert _make_default("TORCH_SPEC") in _conda_pip()


def test_the_kernel_name_is_the_one_the_runner_uses():
    from mlmlib.runs.runner import KERNEL

    assert _make_default("KERNEL") == KERNEL
