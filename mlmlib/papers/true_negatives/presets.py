"""Named presets of paper B's parameter groups: a set of field values that belongs together.

A group with presets has a field `preset` naming one, and each field a preset sets defaults to
None: None takes the preset's value, any other value replaces it. Built, the group holds the
values (`fill`, in its `__post_init__`); its `resolve_fields` completes a plan's overrides the
same way for mlmlib.configs.resolve (`resolved`), so records carry the numbers, not None.
Standard library only: the plan loader reads the groups.
"""

from __future__ import annotations

from typing import Any


def fill(group: Any, presets: dict[str, dict[str, Any]]) -> None:
    """Set a (frozen) group's fields left None to the values of the preset it names."""
    if not isinstance(group.preset, str) or group.preset not in presets:
        raise ValueError(f"preset must be one of {list(presets)}, got {group.preset!r}")
    for name, value in presets[group.preset].items():
        if getattr(group, name) is None:
            object.__setattr__(group, name, value)


def resolved(values: dict[str, Any], presets: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A group's fields (`values`, as mlmlib.configs.resolve holds them) with those left None
    taken from the preset `values["preset"]` names; an unknown name leaves them None (building
    the group names the error)."""
    name = values.get("preset")
    preset = presets.get(name) if isinstance(name, str) else None
    if preset is None:
        return values
    return {**values, **{k: v for k, v in preset.items() if values.get(k) is None}}
