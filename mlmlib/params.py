"""Errors that name the notebook's parameter, not the library field it was passed to.

A notebook often prefixes a config's fields (`mlm_steps` for `PretrainConfig.steps`); a bad
value should be reported under the name the reader set.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def parameter_names(**names: str) -> Iterator[None]:
    """Inside the block, a ValueError or TypeError naming `field` is re-raised naming names[field]."""
    try:
        yield
    except (TypeError, ValueError) as exc:
        text = str(exc)
        for field, name in names.items():
            text = re.sub(rf"(?<![\w.]){re.escape(field)}(?!\w)", name, text)
        if text == str(exc):
            raise
        raise type(exc)(f"{text} (a notebook parameter)") from exc
