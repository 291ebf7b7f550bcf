"""Kill -9 at random moments, rerun each time: the records equal an uninterrupted batch's.

The batch is the test plan's training notebooks (A2, A3, B1 with checkpoints, C2), run in two
throwaway copies of the project side by side (one thread each): one uninterrupted, one killed 6
times (the runner with its kernel, or the kernel alone) at seeded random moments, then run to the
end. Six, not ten: each kill costs about 11 s, and `make test` has a 15-minute budget.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from mlmlib.runs.plan_files import compose
from mlmlib.runs.records import readable_records

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("A2_synthetic_pretrain", "A3_synthetic_finetune", "B1_true_negatives_pretrain",
             "C2_selective_mlm")
# Timings differ between any two runs; everything else must be equal.
TIMING = re.compile(r"(_s|_ms|per_s|overhead.*|speedup.*|gflops|wall.*)$")
KILLS = 6
# Each kill comes 1 s to KILL_WINDOW_S after its batch starts: about a third of the uninterrupted
# batch (70-80 s on 2 cores). Finished runs are skipped on rerun, so the kills move along it.
KILL_WINDOW_S = 25.0


def _project(root: Path) -> None:
    """A copy of the project's notebooks and config, with a plan of the training notebooks."""
    (root / "notebooks" / "plans").mkdir(parents=True)
    for name in NOTEBOOKS:
        shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", root / "notebooks")
    shutil.copy(ROOT / "_config.yml", root)
    plan = compose(ROOT / "notebooks" / "plans" / "test.yaml")  # with what it takes from smoke
    entries = [e for e in plan["notebooks"] if e["notebook"] in NOTEBOOKS]
    c2 = [e for e in entries if e["notebook"] == "C2_selective_mlm"]
    entries = [e for e in entries if e not in c2[1:]]  # C2's first entry (the dose entry apart)
    for e in entries:
        # C2 builds the base itself here (under its cache lock) instead of after the base page
        e["needs"] = [n for n in e.get("needs", []) if n in NOTEBOOKS]
        if e["notebook"] == "A2_synthetic_pretrain":  # one language: the one A3's seed 0 uses
            e["grid"] = {**e["grid"], "language_seed": [0]}
        if e["notebook"] == "A3_synthetic_finetune":
            e["grid"] = {"seed": [0]}
        if e["notebook"] == "C2_selective_mlm":
            e["grid"] = {"seed": [0]}
        if e["notebook"] == "B1_true_negatives_pretrain":  # resumable pretraining
            e["params"]["pretraining"] = {**e["params"].get("pretraining", {}),
                                          "checkpoint_every": 2, "steps": 8}
    (root / "notebooks" / "plans" / "kill.yaml").write_text(yaml.safe_dump({"notebooks": entries}))


def _env(root: Path) -> dict:
    return {**os.environ, "MLMLIB_ROOT": str(root), "MLMLIB_WORK": str(root / ".work"),
            "OMP_NUM_THREADS": "1"}


def _batch(root: Path, force: bool = False) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mlmlib", "run", "--profile", "kill",
                             *(["--force"] if force else [])],
                            env=_env(root), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _kernels(runner: int) -> list[int]:
    """Kernel processes of the batch (children of the runner; jupyter gives them a session)."""
    out = subprocess.run(["ps", "-eo", "pid,ppid,args"], capture_output=True, text=True,
                         check=True).stdout
    return [int(line.split()[0]) for line in out.splitlines()[1:]
            if line.split()[1] == str(runner) and "ipykernel_launcher" in line]


def _strip(value):
    """Metrics without timings; NaN as a word, so that equal records compare equal."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not TIMING.search(str(k))}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _results(root: Path) -> dict:
    return {rec["run_id"]: _strip(rec["metrics"]) for _, rec in readable_records("kill", root)}


def _leftovers(root: Path) -> list[str]:
    """Temporary files of killed writers: hidden names under the records, work and cache."""
    found = []
    for base in (root / "book" / "runs", root / ".work"):
        for path in base.rglob(".*"):
            if not path.name.endswith(".lock"):
                found.append(str(path.relative_to(root)))
    return found


@pytest.mark.slow
def test_random_kills_give_the_uninterrupted_records(tmp_path):
    reference, killed = tmp_path / "reference", tmp_path / "killed"
    for root in (reference, killed):
        _project(root)
    uninterrupted = _batch(reference)  # beside the killed batches: the records must not care
    started = [uninterrupted]
    try:
        rng = random.Random(0)
        kinds, force = [], False
        for _attempt in range(4 * KILLS):
            if len(kinds) == KILLS:
                break
            proc = _batch(killed, force)
            started.append(proc)
            deadline = time.time() + rng.uniform(1.0, KILL_WINDOW_S)
            while time.time() < deadline and proc.poll() is None:
                time.sleep(0.1)
            if proc.poll() is not None:  # it finished first: keep killing reruns of finished runs
                force = proc.returncode == 0
                continue
            kernels = _kernels(proc.pid)
            if kernels and rng.random() < 0.3:  # the kernel alone: the runner sees it die
                os.kill(kernels[0], signal.SIGKILL)
                proc.wait(timeout=300)
                kinds.append("kernel")
            else:  # the runner, and its kernel with it (as a node or a job being killed)
                os.killpg(proc.pid, signal.SIGKILL)
                for pid in kernels:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                proc.wait()
                kinds.append("runner")
        assert len(kinds) == KILLS, kinds
        final = _batch(killed)
        started.append(final)
        assert final.wait(timeout=1200) == 0
        assert uninterrupted.wait(timeout=1200) == 0
        expected = _results(reference)
        assert sorted(expected) == sorted(["A2_synthetic_pretrain/corpus-mix_language_seed-0",
                                           "A2_synthetic_pretrain/corpus-shift_language_seed-0",
                                           "A3_synthetic_finetune/seed-0", "B1_true_negatives_pretrain/seed-0",
                                           "C2_selective_mlm/seed-0"])
        assert _results(killed) == expected
    finally:  # a failed test leaves no batch behind
        for batch in started:
            if batch.poll() is None:
                os.killpg(batch.pid, signal.SIGKILL)
    assert _leftovers(killed) == []
    assert not list((killed / "book" / "runs" / "kill").glob("_failed/*"))  # successes cleared them
