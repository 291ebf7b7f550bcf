"""Errors about a notebook's prefixed parameters name the notebook's parameter."""

import pytest

from mlmlib.finetune import FinetuneConfig
from mlmlib.params import parameter_names
from mlmlib.pretrain import PretrainConfig


def test_a_bad_value_is_reported_under_the_notebooks_name():
    with (pytest.raises(ValueError, match=r"mlm_steps") as info,
          parameter_names(steps="mlm_steps", batch_size="mlm_batch_size")):
        PretrainConfig(steps=-1)
    assert "notebook parameter" in str(info.value) and " steps " not in f" {info.value} "


def test_errors_about_other_names_pass_unchanged():
    with pytest.raises(ValueError) as info, parameter_names(steps="mlm_steps"):
        FinetuneConfig(lr=-1.0)
    assert "mlm_steps" not in str(info.value) and "notebook parameter" not in str(info.value)
