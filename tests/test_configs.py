from __future__ import annotations

import dataclasses

import pytest

from mlmlib import configs


@dataclasses.dataclass(frozen=True)
class Group:
    steps: int = 10
    lr: float = 1e-3
    name: str = "a"
    sizes: tuple[int, ...] = (1, 2)
    limit: int | None = None
    flag: bool = False

    def __post_init__(self):
        if self.steps <= 0:
            raise ValueError(f"steps must be positive, got {self.steps}")


def test_build_applies_overrides_and_keeps_defaults():
    g = configs.build(Group, {"steps": 5, "lr": 1, "sizes": [3, 4]}, "group")
    assert (g.steps, g.lr, g.name, g.sizes) == (5, 1, "a", (3, 4))


@pytest.mark.parametrize("overrides, message", [
    ({"stepz": 5}, r"group: unknown field 'stepz' of Group; its fields: \['flag', 'limit'"),
    ({"steps": 1.5}, r"group.steps = 1.5 is a float; Group.steps is int"),
    ({"steps": True}, r"group.steps = True is a bool"),
    ({"lr": "x"}, r"group.lr = 'x' is a str; Group.lr is float"),
    ({"sizes": [1, "b"]}, r"group.sizes"),
    ({"limit": "none"}, r"group.limit"),
    ([1], r"group: expected a mapping"),
])
def test_check_overrides_names_the_parameter_and_field(overrides, message):
    with pytest.raises(ValueError, match=message):
        configs.check_overrides(Group, overrides, "group")


def test_build_names_the_parameter_in_the_dataclass_own_error():
    with pytest.raises(ValueError, match="group: steps must be positive, got 0"):
        configs.build(Group, {"steps": 0}, "group")


def test_none_allowed_only_where_the_field_says_so():
    configs.check_overrides(Group, {"limit": None}, "g")
    with pytest.raises(ValueError):
        configs.check_overrides(Group, {"steps": None}, "g")


def test_resolve_gives_every_field_as_plain_values():
    assert configs.resolve(Group, {"steps": 3}) == {"steps": 3, "lr": 1e-3, "name": "a",
                                                     "sizes": [1, 2], "limit": None, "flag": False}


def test_load_class():
    assert configs.load_class("mlmlib.stats:Interval").__name__ == "Interval"
    with pytest.raises(ValueError, match="expected 'package.module:ClassName'"):
        configs.load_class("mlmlib.stats.Interval")
    with pytest.raises(ValueError, match="no dataclass Missing"):
        configs.load_class("mlmlib.stats:Missing")
