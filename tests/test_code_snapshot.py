"""SLURM jobs run the code snapshot their driver took at submission (mlmlib.runs.snapshot).

The last test drives a plan through submitit's real SlurmExecutor on a fake SLURM: an `sbatch`
that keeps the job script and runs it once the test releases the queue, an `srun` that runs its
command, a `squeue` that lists the jobs not yet done. The job script runs in a bare environment
(no MLMLIB_* or PYTHONPATH of the driver's) from this checkout's folder, so only the script's
own lines can point it at the snapshot.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from mlmlib import code_digest
from mlmlib.paths import PACKAGE_DIR
from mlmlib.runs import executors, plans, runner, snapshot
from mlmlib.runs.executors import Options, run_with_executor
from mlmlib.runs.plans import load_plan

submitit = pytest.importorskip("submitit")

BODY = """
import os
from mlmlib.runs import records
from mlmlib.snapshot_probe import VALUE
records.save_metrics(run_dir, {"value": VALUE, "cell": 1, "code": os.environ.get("MLMLIB_CODE")})
"""


def _notebook(path: Path, body: str) -> None:
    nb = new_notebook(cells=[new_code_cell('run_dir = ""', metadata={"tags": ["parameters"]}),
                             new_code_cell(body)])
    nb.metadata["kernelspec"] = {"name": "mlmlib", "display_name": "mlmlib", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project with its own copy of the package (the tests edit it, never the checkout's), a
    notebook importing a probe module of that copy, and a plan `s` of one run."""
    root = tmp_path / "project"
    package = root / "mlmlib"
    shutil.copytree(PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (package / "snapshot_probe.py").write_text("VALUE = 1\n")
    (root / "notebooks" / "plans").mkdir(parents=True)
    (root / "_config.yml").write_text("title: test\n")
    _notebook(root / "notebooks" / "probe.ipynb", BODY)
    (root / "notebooks" / "plans" / "s.yaml").write_text("notebooks:\n  - notebook: probe\n")
    monkeypatch.setenv("MLMLIB_ROOT", str(root))
    for name in ("MLMLIB_WORK", "MLMLIB_CODE", "MLMLIB_GIT_SHA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(snapshot, "SOURCE_PACKAGE", package)
    plans.notebook_parameters.cache_clear()
    return root


def _version(root: Path) -> str:
    return code_digest.notebook_version(root / "notebooks" / "probe.ipynb", root / "mlmlib")


def test_a_snapshot_is_named_by_its_content_and_written_whole(project):
    (project / "mlmlib" / "__pycache__").mkdir(exist_ok=True)
    (project / "mlmlib" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"cache")
    (project / "notebooks" / ".probe.ipynb.host.1.tmp").write_text("half-written")
    first = snapshot.take()
    assert first.parent == project / ".work" / snapshot.SNAPSHOTS
    assert snapshot.take() == first  # the same code: the same folder, not a second copy
    assert sorted(p.name for p in first.parent.iterdir()) == [first.name]  # no temporaries left
    plan = (project / "notebooks" / "plans" / "s.yaml").read_text()
    assert (first / "notebooks" / "plans" / "s.yaml").read_text() == plan
    assert not list(first.rglob("__pycache__")) and not list(first.rglob(".*.tmp"))
    # the snapshot's code version is the project's: a job keeps the key it was submitted with
    assert _version(first) == _version(project)
    with snapshot.code_root(first):
        assert plans.notebooks_dir() == first / "notebooks"
        assert runner.code_version("probe") == _version(project)
    assert plans.notebooks_dir() == project / "notebooks" and "MLMLIB_CODE" not in os.environ
    (project / "mlmlib" / "snapshot_probe.py").write_text("VALUE = 2\n")
    second = snapshot.take()
    assert second != first and (first / "mlmlib" / "snapshot_probe.py").read_text() == "VALUE = 1\n"
    assert (second / "mlmlib" / "snapshot_probe.py").read_text() == "VALUE = 2\n"


def test_no_snapshot_is_said_and_the_jobs_run_the_project(project):
    (project / ".work").mkdir()
    (project / ".work" / snapshot.SNAPSHOTS).write_text("a file where the snapshots would go")
    said: list[str] = []
    assert snapshot.take_or_explain(said.append) is None
    assert said and said[0].startswith("no code snapshot (") and "fails, saying so" in said[0]
    with snapshot.code_root(None):
        assert snapshot.job_setup() == [] and plans.notebooks_dir() == project / "notebooks"


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """sbatch, srun, squeue and sacct on PATH; a job waits in `queue/` until `queue/release` is."""
    bin_dir, queue = tmp_path / "bin", tmp_path / "queue"
    bin_dir.mkdir()
    queue.mkdir()
    _script(bin_dir / "sbatch", f"""#!/bin/bash
q={queue}
n=$(( $(ls "$q" | grep -c '\\.sh$') + 101 ))
cp "${{@: -1}}" "$q/$n.sh"  # sbatch keeps the script as it was at submission
(for _ in $(seq 6000); do
   [ -e "$q/release" ] && break; [ -e "$q/cancel" ] && exit 0; sleep 0.05
 done
 env -u MLMLIB_ROOT -u MLMLIB_WORK -u MLMLIB_CODE -u MLMLIB_GIT_SHA -u PYTHONPATH \\
   SLURM_JOB_ID=$n SLURM_NTASKS=1 SLURM_JOB_NUM_NODES=1 SLURM_NODEID=0 SLURM_PROCID=0 \\
   SLURM_LOCALID=0 SLURM_JOB_NODELIST=localhost bash "$q/$n.sh" >"$q/$n.out" 2>&1
 touch "$q/$n.done") </dev/null >/dev/null 2>&1 &
echo "Submitted batch job $n"
""")
    _script(bin_dir / "srun", """#!/bin/bash
while [ $# -gt 0 ]; do
  case "$1" in --output|--error) shift 2 ;; --*) shift ;; *) break ;; esac
done
exec "$@"
""")
    _script(bin_dir / "squeue", f"""#!/bin/bash
ids="${{@: -1}}"
for id in ${{ids//,/ }}; do [ -e "{queue}/$id.done" ] || echo "$id RUNNING"; done
""")
    _script(bin_dir / "sacct", "#!/bin/bash\nexit 0\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(executors, "SLURM_POLL_S", 0.0)
    yield queue
    (queue / "cancel").touch()  # a job never released (a failed test) gives up


def test_a_queued_job_runs_the_code_it_was_submitted_with(project, fake_slurm):
    """The module the notebook imports and the notebook itself are edited after submission,
    while the job waits: the job runs the submitted code, under the submitted code version."""
    submitted = _version(project)
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        if " submit probe/run" in line:  # in the queue, not started: edit the tree
            (project / "mlmlib" / "snapshot_probe.py").write_text("VALUE = 2\n")
            _notebook(project / "notebooks" / "probe.ipynb", BODY.replace('"cell": 1', '"cell": 2'))
            (fake_slurm / "release").touch()

    report = run_with_executor(load_plan("s"), Options(executor="slurm", poll_s=0.05), log=log)
    job_out = "\n".join(p.read_text() for p in sorted(fake_slurm.glob("*.out")))
    assert report.ok and report.done == ["probe/run"], "\n".join(lines) + "\n" + job_out
    assert _version(project) != submitted  # the edits changed the project's code version
    record = json.loads((project / "book" / "runs" / "s" / "probe" / "run.json").read_text())
    assert record["code_version"] == submitted
    code = project / ".work" / snapshot.SNAPSHOTS / Path(record["metrics"]["code"]).name
    assert record["metrics"] == {"value": 1, "cell": 1, "code": str(code)}
    script = (fake_slurm / "101.sh").read_text()
    assert f"cd {code}" in script and f"export MLMLIB_ROOT={project}" in script
    assert "MLMLIB_CODE" not in os.environ  # the driver's own environment is restored
