"""The base-model group: torch-free, its defaults the smoke base, bad values named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mlmlib import configs
from mlmlib.base_config import BaseModelConfig


def test_the_group_imports_without_torch():
    code = "import sys, mlmlib.base_config; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_overrides_keep_the_smoke_defaults():
    config = configs.build(BaseModelConfig, {"name": "minilm-l6", "tokenizer": "minilm-l6",
                                             "steps": 300}, "base")
    assert (config.name, config.steps, config.hidden, config.max_sentences) == ("minilm-l6", 300, 128, 40000)


@pytest.mark.parametrize("overrides, message", [
    ({"steps": 0}, "base: steps must be a positive integer"),
    ({"hidden": 30, "heads": 4}, "hidden=30 must be a multiple of heads=4"),
    ({"mask_rate": 1.0}, r"mask_rate must be in \(0, 1\)"),
    ({"lr": 0.0}, "lr must be positive"),
    ({"name": "minilm-l6"}, "needs tokenizer='minilm-l6'"),
    ({"tokenizer": ""}, "tokenizer must name"),
])
def test_bad_values_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        configs.build(BaseModelConfig, overrides, "base")
