"""scripts/gpu_check.py: the one script a borrowed GPU runs must work the first time.

The end-to-end test runs it at --tiny size on the CPU (seconds); the GPU figures themselves can
only come from a GPU. The arithmetic that turns a rate into TFLOP/s and MFU is checked by hand.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlmlib.runs.plans import planned_params

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    """The script as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tiny_run_on_cpu_writes_both_timings(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--skip-rehearsal",
                           "--device", "cpu", "--out", str(out)],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((out / "gpu_check.json").read_text())
    assert result["done"] and result["environment"]["device"] == "cpu"
    assert set(result["timings"]) == {"electra_small_paper_b", "bert_6x768_paper_a2"}
    for row in result["timings"].values():
        assert "error" not in row, row.get("traceback")
        assert row["tokens_per_s"] > 0 and row["achieved_tflops"] > 0 and row["step_flops"] > 0
        assert row["measured_steps"] > 0 and row["bf16_autocast"] is False
        assert row["mfu"] is None  # a CPU's peak is unknown: no made-up MFU
    assert result["peak_bf16_tflops"] is None and "CPU" in result["peak_source"]
    assert result["rehearsal"]["skipped"]
    fair = result["benchmark"]  # the fair benchmark: every arm on this device, one precision
    assert "error" not in fair, fair.get("traceback")
    assert fair["machine"]["device"] == "cpu" and fair["machine"]["precision"] == "fp32"
    assert {tuple(s["ran_on"]) for s in fair["summary"]} == {("cpu/float32",)}
    assert {s["method"] for s in fair["summary"]} == {"hf_trainer", "hf_plain", "mlmlib"}
    corrections = result["corrections"]  # B1's correction arms, each against its plain step
    assert "error" not in corrections, corrections.get("traceback")
    rows = {row["arm"]: row for row in corrections["rows"]}
    assert set(rows) == set(gpu_check_arms())
    assert rows["electra/plain"]["overhead"] == 0 and rows["mlm/plain"]["overhead"] == 0
    assert all(row["step_ms"] > 0 and row["reps"] == 2 for row in rows.values())
    assert "correction electra/shield:" in done.stdout
    assert (out / "rehearsal_tail.txt").read_text().startswith("rehearsal skipped")
    assert not list(out.glob(".*tmp"))  # the atomic write left no temp file
    assert "MFU n/a" in done.stdout


def gpu_check_arms() -> tuple[str, ...]:
    from mlmlib.papers.true_negatives.overhead import CORRECTION_ARMS

    return CORRECTION_ARMS


def test_the_correction_arms_timed_are_b1s_arms_in_the_paper_plan():
    """Every method B1 trains in the paper plan is timed (a table variant costs as its method),
    with its objective's plain step as the reference."""
    from mlmlib.runs.plans import load_plan

    planned = {arm.split("@")[0] for r in load_plan("paper").runs
               if r.notebook == "B1_true_negatives_pretrain" for arm in r.params["arms"]}
    assert planned and planned <= set(gpu_check_arms())
    assert {"electra/plain", "mlm/plain"} <= set(gpu_check_arms())


def test_mfu_arithmetic_by_hand(gpu_check):
    # 1e6 tokens/s at 1000 tokens a step = 1000 steps/s; 5e11 FLOP a step -> 5e14 FLOP/s = 500 TFLOP/s
    assert gpu_check.achieved_tflops(1e6, 1000, 5e11) == pytest.approx(500.0)
    # 500 of the H200's 989.4 dense bf16 TFLOP/s
    assert gpu_check.mfu(500.0, 989.4) == pytest.approx(0.505357, abs=1e-6)
    assert gpu_check.mfu(500.0, None) is None
    assert gpu_check.peak_tflops("NVIDIA H200") == 989.4
    # the H100 (the other lent GPU) has a peak too: MFU is no longer null there
    assert gpu_check.peak_tflops("NVIDIA H100 80GB HBM3") == 989.4
    assert gpu_check.peak_tflops("NVIDIA H100 PCIe") == 756.5
    assert gpu_check.peak_tflops("NVIDIA H200 NVL") == 835.5  # lower clocks than the SXM part
    assert gpu_check.peak_tflops("Tesla V100-SXM2-16GB") is None
    assert gpu_check.peak_tflops(None) is None
    assert gpu_check.peak_tflops("Tesla V100-SXM2-16GB", override=125.0) == 125.0
    assert "H100 PCIe datasheet" in gpu_check.peak_note(756.5, None, "cuda", "NVIDIA H100 PCIe")
    assert "give --peak-tflops" in gpu_check.peak_note(None, None, "cuda", "Tesla V100")


def test_paper_sizes(gpu_check):
    """The GPU timings use the papers' shapes; paper A's vocabulary is the synthetic language's:
    both alphabets of the paper plan's n_sets (its language's) plus [MASK], [PAD], [CLS]
    (synthetic.vocab_size)."""
    for a2 in planned_params("paper", "A2_synthetic_pretrain"):
        assert gpu_check.PAPER_A_VOCAB == 2 * a2["setup"]["n_sets"] + 3
    setups = gpu_check.timing_setups(False, 300, 30, 128, 128, gpu_check.PAPER_A_VOCAB)
    electra, mlm = setups["electra_small_paper_b"], setups["bert_6x768_paper_a2"]
    assert (electra["hidden"], electra["layers"], electra["heads"], electra["embedding_size"],
            electra["seq"], electra["batch_size"], electra["vocab"]) == (256, 12, 4, 128, 128, 128, 30522)
    assert (mlm["hidden"], mlm["layers"], mlm["heads"], mlm["batch_size"]) == (768, 6, 12, 128)


def test_rehearsal_command_reports_exit_tail_and_timeout(gpu_check, tmp_path):
    cmd = [sys.executable, "-c", "import sys; print('line 1'); print('last line'); sys.exit(3)"]
    done = gpu_check.run_command(cmd, 60, tmp_path / "a.log")
    assert done["exit_code"] == 3 and not done["timed_out"]
    assert done["tail"].splitlines()[-1] == "last line"
    slow = [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"]
    stopped = gpu_check.run_command(slow, 1, tmp_path / "b.log")
    assert stopped["timed_out"] and stopped["exit_code"] is None and stopped["wall_s"] < 20
    assert "started" in stopped["tail"]
    assert gpu_check.rehearsal_command("cuda")[-4:] == ["local", "--gpus", "0", "--force"]
    assert "--gpus" not in gpu_check.rehearsal_command("cpu")


def test_rehearsal_progress_is_read_from_its_log(gpu_check):
    log = ("profile paper-rehearsal (paper.yaml): 41 runs\n"
           "[1/41] submit data_overview/seed-0: job 12 on gpu0, 16 thread(s)\n"
           "[1/41] done data_overview/seed-0 in 7.7s (gpu0)\n"
           "[2/41] FAIL base_model/run after 9s: RuntimeError: boom\n")
    assert gpu_check.count_runs(log) == {"planned": 41, "done": ["data_overview/seed-0"],
                                         "failed": ["base_model/run"]}
    assert gpu_check.count_runs("") == {"planned": None, "done": [], "failed": []}


def test_a_stopped_rehearsal_takes_its_detached_children_along(gpu_check, tmp_path):
    """Jupyter kernels start their own sessions: killing the process group alone would leave them."""
    psutil = pytest.importorskip("psutil")
    code = ("import subprocess, sys, time; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], "
            "start_new_session=True); print(p.pid, flush=True); time.sleep(60)")
    stopped = gpu_check.run_command([sys.executable, "-c", code], 6, tmp_path / "c.log")
    assert stopped["timed_out"]
    pid = int(stopped["tail"].split()[0])
    deadline = time.monotonic() + 10  # signals land asynchronously: give it a moment to die
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"process {pid} outlived the stopped command")


def test_the_paper_plans_measured_loops_are_timings_gpu_check_makes(gpu_check):
    """An entry's gpu_loop names a timing of this script, so --measured can find its MFU."""
    from mlmlib.runs.plans import load_plan

    loops = {r.gpu_loop for r in load_plan("paper").runs if r.gpu_loop}
    assert loops == {"electra_small_paper_b", "bert_6x768_paper_a2"}
    assert loops <= set(gpu_check.timing_setups(False, 300, 30, 128, 128, gpu_check.PAPER_A_VOCAB))
