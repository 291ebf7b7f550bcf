"""The artifact cache builds once, atomically."""

import pytest

from mlmlib import cache


def test_builds_once_and_reuses(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    calls = []

    def build(folder):
        calls.append(folder)
        (folder / "weights.txt").write_text("w")

    first = cache.cached("model", {"size": 1}, build)
    second = cache.cached("model", {"size": 1}, build)
    assert first == second and len(calls) == 1 and (first / "weights.txt").read_text() == "w"
    assert cache.cached("model", {"size": 2}, build) != first and len(calls) == 2


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))

    def build(folder):
        (folder / "half.txt").write_text("x")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        cache.cached("model", {"size": 3}, build)
    assert not cache.artifact_dir("model", {"size": 3}).exists()
    assert not list((tmp_path / "cache" / "model").iterdir())
