"""make lab-check runs templates side by side as a batch does: a template starts once the
templates its smoke-plan entry needs have ended, and an `alone` entry has the machine alone."""

from __future__ import annotations

import importlib.util
import io
import types

from mlmlib.paths import PACKAGE_DIR

spec = importlib.util.spec_from_file_location("lab_check", PACKAGE_DIR.parent / "scripts" / "lab_check.py")
lab_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lab_check)


def test_templates_wait_for_what_they_need_and_alone_ones_run_alone(monkeypatch, capsys):
    events, live = [], {}

    class FakeProcess:
        def __init__(self, cmd, env, stdout, text):
            self.name = cmd[cmd.index("--only") + 1]
            events.append(("start", self.name, sorted(live)))
            assert env["OMP_NUM_THREADS"] == "1"
            live[self.name] = 0
            self.stdout, self.returncode = io.StringIO(f"{self.name} ok\nsummary\n"), None

        def poll(self):
            live[self.name] += 1
            if live[self.name] < 2:  # each process lives for two looks
                return None
            del live[self.name]
            events.append(("end", self.name))
            self.returncode = 1 if self.name == "A1_synthetic_data" else 0
            return self.returncode

    monkeypatch.setattr(lab_check.subprocess, "Popen", FakeProcess)
    monkeypatch.setattr(lab_check.time, "sleep", lambda s: None)
    names = ["data_overview", "compute_benchmark", "A1_synthetic_data", "A2_synthetic_pretrain",
             "A3_synthetic_finetune"]
    args = types.SimpleNamespace(timeout=60, out=PACKAGE_DIR)
    assert lab_check.run_side_by_side(names, args, 2) == 1  # A1's process failed
    starts = {e[1]: (i, e[2]) for i, e in enumerate(events) if e[0] == "start"}
    ends = {e[1]: i for i, e in enumerate(events) if e[0] == "end"}
    assert set(starts) == set(names) and set(ends) == set(names)
    assert starts["A3_synthetic_finetune"][0] > ends["A2_synthetic_pretrain"]  # its needs
    assert starts["compute_benchmark"][1] == []  # alone: nothing ran beside it
    assert not any("compute_benchmark" in beside for _, beside in starts.values())
    assert max(len(beside) for _, beside in starts.values()) == 1  # two at a time, never three
    assert "A3_synthetic_finetune ok" in capsys.readouterr().out
