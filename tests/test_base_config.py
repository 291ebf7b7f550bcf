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


def test_presets_name_each_profiles_base_and_take_a_field_on_top():
    from mlmlib.base_config import BASE_PRESETS

    assert list(BASE_PRESETS) == ["smoke", "cpu", "paper"]  # the first is the default
    smoke = configs.resolve(BaseModelConfig, {"preset": "smoke"})
    assert configs.resolve(BaseModelConfig, {}) == smoke
    cpu = configs.build(BaseModelConfig, {"preset": "cpu", "steps": 2}, "base")
    assert (cpu.name, cpu.tokenizer, cpu.steps, cpu.hidden) == ("minilm-l6", "minilm-l6", 2, 128)
    paper = configs.resolve(BaseModelConfig, {"preset": "paper"})
    assert (paper["name"], paper["tokenizer"]) == ("bert-base-uncased", "bert-base-uncased")
    for name in BASE_PRESETS:  # records carry the numbers the built group holds
        built = configs.build(BaseModelConfig, {"preset": name}, "base")
        assert configs.resolve(BaseModelConfig, {"preset": name}) == {"preset": name, **built.key()}
    with pytest.raises(ValueError, match=r"^base: preset must be one of \['smoke', 'cpu', 'pap"):
        configs.build(BaseModelConfig, {"preset": "huge"}, "base")


def test_the_cache_key_is_the_values_not_the_presets_name():
    """B1 names MiniLM by its fields; the base model page by the cpu preset: one cached head."""
    by_name = configs.build(BaseModelConfig, {"preset": "cpu"}, "base")
    by_fields = BaseModelConfig(name="minilm-l6", tokenizer="minilm-l6", steps=300)
    assert by_name.key() == by_fields.key() and "preset" not in by_name.key()


def test_b1s_head_fit_defaults_to_the_smoke_base():
    from mlmlib.papers.true_negatives.config import Start

    smoke = BaseModelConfig()
    assert (Start().base_steps, Start().base_max_sentences, Start().base_max_length) == (
        smoke.steps, smoke.max_sentences, smoke.max_length)
