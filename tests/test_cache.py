"""The artifact cache: builds once (also across processes), atomically, and repairs damage."""

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mlmlib import atomic, cache

HERE = "tests.test_cache"  # code_of: this module belongs to no paper (core digest only)


def test_builds_once_and_reuses(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    calls = []

    def build(folder):
        calls.append(folder)
        (folder / "weights.txt").write_text("w")

    first = cache.cached("model", {"size": 1}, build, code_of=HERE)
    second = cache.cached("model", {"size": 1}, build, code_of=HERE)
    assert first == second and len(calls) == 1 and (first / "weights.txt").read_text() == "w"
    assert cache.cached("model", {"size": 2}, build, code_of=HERE) != first and len(calls) == 2
    # the build ran in a temporary folder named with this host and process
    assert calls[0].name == f".{first.name}.{socket.gethostname()}.{os.getpid()}.tmp"


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))

    def build(folder):
        (folder / "half.txt").write_text("x")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        cache.cached("model", {"size": 3}, build, code_of=HERE)
    assert not cache.artifact_dir("model", {"size": 3}, code_of=HERE).exists()
    assert [p.suffix for p in (tmp_path / "cache" / "model").iterdir()] == [".lock"]


def test_damaged_entry_is_set_aside_and_rebuilt(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))

    def build(folder):
        (folder / "model.safetensors").write_text("weights")

    folder = cache.cached("model", {"size": 4}, build, code_of=HERE, expect=("model.safetensors",))
    (folder / "model.safetensors").unlink()  # a half-deleted or damaged artifact
    again = cache.cached("model", {"size": 4}, build, code_of=HERE, expect=("model.safetensors",))
    assert again == folder and (again / "model.safetensors").read_text() == "weights"
    assert "incomplete; set aside" in capsys.readouterr().out
    assert list(folder.parent.glob(f".{folder.name}.*.damaged"))  # moved, never deleted


def test_leftovers_of_killed_builds_are_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    final = cache.artifact_dir("model", {"size": 5}, code_of=HERE)
    # A PID no process can hold: Linux hands out PIDs below /proc/sys/kernel/pid_max (itself
    # at most 2**22), macOS and BSD below 99999. Not the PID of a child that just exited:
    # another process (a second pytest worker's) may get that PID again at once, and the
    # leftover would then rightly be kept.
    pid_max = Path("/proc/sys/kernel/pid_max")
    dead = int(pid_max.read_text()) if pid_max.exists() else 2**22
    assert not atomic.pid_alive(dead)
    leftover = final.with_name(f".{final.name}.{socket.gethostname()}.{dead}.tmp")
    leftover.mkdir(parents=True)
    cache.cached("model", {"size": 5}, lambda f: (f / "w").write_text("w"), code_of=HERE)
    assert not leftover.exists()


def test_two_processes_build_one_artifact_once(tmp_path):
    script = textwrap.dedent(f"""
        import os, sys, time
        from mlmlib import cache

        def build(folder):
            with open({str(tmp_path / "builds.log")!r}, "a") as log:
                log.write(f"{{os.getpid()}}\\n")
            time.sleep(1.0)  # long enough for the other process to arrive mid-build
            (folder / "w").write_text("w")

        print(cache.cached("model", {{"size": 6}}, build, code_of="x"))
    """)
    env = {**os.environ, "MLMLIB_WORK": str(tmp_path / "work")}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs[0] == outs[1]
    assert len((tmp_path / "builds.log").read_text().splitlines()) == 1


def test_unreadable_weights_are_set_aside_and_rebuilt(tmp_path, monkeypatch):
    import torch
    from safetensors.torch import save_file

    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))

    def build(folder):
        save_file({"w": torch.ones(1000)}, str(folder / "model.safetensors"))

    folder = cache.cached("model", {"size": 7}, build, code_of=HERE, expect=("model.safetensors",))
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])  # half-written by a disk or a copy
    again = cache.cached("model", {"size": 7}, build, code_of=HERE, expect=("model.safetensors",))
    assert again == folder and weights.stat().st_size > 4000


def test_a_saved_model_folder_is_complete_only_with_readable_weights(tmp_path, monkeypatch):
    """`expect` may name a folder (mlmlib.models.saved_files): a damaged weights file anywhere
    under it, or no weights at all, sets the entry aside for a rebuild."""
    import torch
    from safetensors.torch import save_file

    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    builds = []

    def build(folder):
        builds.append(folder)
        for half in ("generator", "discriminator"):
            (folder / "model" / half).mkdir(parents=True)
            save_file({"w": torch.ones(1000)}, str(folder / "model" / half / "model.safetensors"))

    folder = cache.cached("model", {"size": 8}, build, code_of=HERE, expect=("model",))
    assert cache.cached("model", {"size": 8}, build, code_of=HERE, expect=("model",)) == folder
    assert len(builds) == 1
    weights = folder / "model" / "discriminator" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    cache.cached("model", {"size": 8}, build, code_of=HERE, expect=("model",))
    assert len(builds) == 2 and weights.stat().st_size > 4000
    for half in ("generator", "discriminator"):
        (folder / "model" / half / "model.safetensors").unlink()  # a folder without weights
    cache.cached("model", {"size": 8}, build, code_of=HERE, expect=("model",))
    assert len(builds) == 3
