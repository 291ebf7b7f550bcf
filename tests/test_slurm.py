"""The SLURM executor on a real SLURM: the test plan through sbatch, one job requeued by hand.

Runs where a SLURM cluster answers (`make test-slurm` starts a one-node one on this machine
with scripts/slurm_local.sh); elsewhere it is skipped, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from mlmlib.paths import project_root


def _cluster_answers() -> bool:
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        return False
    out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, check=False)
    return out.returncode == 0 and any(s in out.stdout for s in ("idle", "mix", "alloc"))


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not _cluster_answers(),
                                 reason="no SLURM cluster answers here (make test-slurm starts one)")]


def _scontrol(job_id: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True,
                         check=False).stdout
    return dict(item.split("=", 1) for item in out.split() if "=" in item)


def test_the_test_plan_through_slurm_with_a_requeued_job(tmp_path):
    root = tmp_path / "project"  # a copy of the notebooks: records and caches stay out of the repo
    shutil.copytree(project_root() / "notebooks", root / "notebooks",
                    ignore=shutil.ignore_patterns("kernel-ipc-*", ".ipynb_checkpoints"))
    shutil.copy(project_root() / "_config.yml", root / "_config.yml")
    env = {**os.environ, "MLMLIB_ROOT": str(root)}
    start = time.time()
    driver = subprocess.Popen(
        [sys.executable, "-m", "mlmlib", "run", "--profile", "test", "--executor", "slurm",
         "--cpus-per-run", "1", "--time-min", "30"],
        env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    jobs = root / "book" / "runs" / "test" / "_jobs"
    requeued = None
    while requeued is None and driver.poll() is None and time.time() - start < 600:
        for path in sorted(jobs.glob("B1_*.json")):  # a run of some length: requeue it mid-run
            if path.name.endswith(".outcome.json"):
                continue
            info = json.loads(path.read_text())
            if _scontrol(info["job_id"]).get("JobState") == "RUNNING":
                time.sleep(3)
                subprocess.run(["scontrol", "requeue", info["job_id"]], check=True)
                requeued = info
                break
        time.sleep(0.5)
    out, _ = driver.communicate(timeout=900)
    print(out)
    assert requeued is not None, "no B1 job was seen running: nothing was requeued\n" + out
    assert driver.returncode == 0 and " 0 failed" in out, out
    assert int(_scontrol(requeued["job_id"]).get("Restarts", "0")) >= 1  # SLURM ran it twice
    plan_runs = subprocess.run([sys.executable, "-m", "mlmlib", "run", "--profile", "test", "--dry-run"],
                               env=env, text=True, capture_output=True, check=True).stdout
    expected = sorted(line.split(":")[0].strip() for line in plan_runs.splitlines()[1:] if line.strip())
    runs = root / "book" / "runs" / "test"
    found = sorted(f"{p.parent.name}/{p.stem}" for p in runs.glob("[!_]*/*.json"))
    assert found == expected  # every record, once
    rec = json.loads((runs / (requeued["run"] + ".json")).read_text())
    assert rec["device"]["executor"] == "slurm" and rec["device"]["job_id"] == requeued["job_id"]
    assert not list(runs.glob("_failed/*.error.txt"))
    again = subprocess.run([sys.executable, "-m", "mlmlib", "run", "--profile", "test", "--executor",
                            "slurm"], env=env, text=True, capture_output=True, check=True).stdout
    assert f"0 ran, {len(expected)} skipped, 0 failed" in again, again
