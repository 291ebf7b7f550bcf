"""Parameter groups: one dataclass is the only source of a group's fields and defaults.

A notebook takes a group as one dict parameter of overrides (`setup = {}`: every default), and
names the dataclass in its parameters cell's metadata:

    "mlmlib_groups": {"setup": "mlmlib.papers.distributional.config:Setup"}

The notebook builds the group with `build`; the plan loader checks a plan's keys and value types
against the same fields (`check_overrides`) before anything runs, and records carry the group
resolved to every field (`resolve`). This module imports nothing heavier than the standard
library, so the runner may read it; the group dataclasses live in torch-free modules too.

A group may have named presets, sets of field values that belong together (`model: {preset:
electra-small}`): its field `preset` names one, and each field a preset sets defaults to None,
which takes the preset's value, while any other value replaces it. Built, the group holds the
values (`fill_preset`, in its `__post_init__`); its `resolve_fields` completes a plan's
overrides the same way (`resolve_preset`), so records carry the numbers, not None.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from typing import Any

METADATA_KEY = "mlmlib_groups"


def load_class(path: str) -> type:
    """The dataclass named by 'package.module:ClassName'."""
    module, _, name = path.partition(":")
    if not module or not name:
        raise ValueError(f"group class {path!r}: expected 'package.module:ClassName'")
    cls = getattr(importlib.import_module(module), name, None)
    if cls is None or not dataclasses.is_dataclass(cls):
        raise ValueError(f"group class {path!r}: no dataclass {name} in {module}")
    return cls


def fields(cls: type) -> dict[str, Any]:
    """{field name: its type} of a group dataclass (string annotations resolved)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def check_overrides(cls: type, overrides: Any, where: str) -> None:
    """Raise ValueError naming `where.key` for an unknown field or a value of the wrong type."""
    if not isinstance(overrides, dict):
        raise ValueError(f"{where}: expected a mapping of {cls.__name__}'s fields to values, "
                         f"got {overrides!r}")
    known = fields(cls)
    for key, value in overrides.items():
        if key not in known:
            raise ValueError(f"{where}: unknown field {key!r} of {cls.__name__}; "
                             f"its fields: {sorted(known)}")
        if not matches(value, known[key]):
            raise ValueError(f"{where}.{key} = {value!r} is a {type(value).__name__}; "
                             f"{cls.__name__}.{key} is {_type_name(known[key])}")


def build(cls: type, overrides: dict | None, parameter: str):
    """cls(**overrides), after `check_overrides`; the dataclass's own checks name `parameter`."""
    overrides = {} if overrides is None else overrides
    check_overrides(cls, overrides, parameter)
    try:
        return cls(**{k: tuple(v) if _is_tuple(fields(cls)[k]) and isinstance(v, list) else v
                      for k, v in overrides.items()})
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{parameter}: {exc}") from exc


def resolve(cls: type, overrides: dict | None) -> dict[str, Any]:
    """Every field of the group: the dataclass defaults overridden by `overrides` (plain values),
    then completed by the group's `resolve_fields(values)` where it has one (a field whose None
    stands for a value the group derives, such as a named preset's sizes)."""
    values = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            values[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            values[f.name] = f.default_factory()
    values.update(overrides or {})
    complete = getattr(cls, "resolve_fields", None)
    if complete is not None:
        values = complete(values)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


def fill_preset(group: Any, presets: dict[str, dict[str, Any]]) -> None:
    """Set a (frozen) group's fields left None to the values of the preset its `preset` names;
    a ValueError naming the presets for an unknown name (`build` prefixes the parameter)."""
    if not isinstance(group.preset, str) or group.preset not in presets:
        raise ValueError(f"preset must be one of {list(presets)}, got {group.preset!r}")
    for name, value in presets[group.preset].items():
        if getattr(group, name) is None:
            object.__setattr__(group, name, value)


def resolve_preset(values: dict[str, Any], presets: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A group's fields (`values`, as `resolve` holds them) with those left None taken from the
    preset `values["preset"]` names; an unknown name leaves them None (building the group names
    the error)."""
    name = values.get("preset")
    preset = presets.get(name) if isinstance(name, str) else None
    if preset is None:
        return values
    return {**values, **{k: v for k, v in preset.items() if values.get(k) is None}}


def matches(value: Any, kind: Any) -> bool:
    """True when a plan value may stand for a field of type `kind` (an int for a float, a list for
    a tuple or list; not a bool for a number)."""
    if kind is Any:
        return True
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return any(matches(value, k) for k in typing.get_args(kind))
    if kind is type(None):
        return value is None
    if origin is typing.Literal:
        return value in typing.get_args(kind)
    if origin in (list, tuple) or kind in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return False
        args = [a for a in typing.get_args(kind) if a is not Ellipsis]
        return not args or all(any(matches(v, a) for a in args) for v in value)
    if origin is dict or kind is dict:
        return isinstance(value, dict)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(kind, type):
        return isinstance(value, kind)
    return True  # an annotation we do not check (a callable, a forward reference)


def _is_tuple(kind: Any) -> bool:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return any(_is_tuple(k) for k in typing.get_args(kind))
    return kind is tuple or origin is tuple


def _type_name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind).replace("typing.", "")
