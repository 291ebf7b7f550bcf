"""One prepared check for a borrowed GPU: rehearse the paper plan there, and time the papers' loops.

A GPU may be lent to this project once, for minutes, so everything it should tell us is measured
in one run of this script:

1. two timings of mlmlib's own training loop (`mlmlib.pretrain`, through `PretrainConfig`, bf16
   autocast on CUDA), on synthetic token data (`mlmlib.bench.make_data`):
   - one paper-B ELECTRA arm (electra/none) at ELECTRA-small size: hidden 256, 12 layers, 4 heads,
     embeddings 128, generator 1/4 as wide, vocabulary 30522, batch 128 x 128 tokens;
   - one paper-A MLM (A2's setting): BERT 6 x 768, 12 heads, batch 128 x 257 tokens ([CLS] + a
     256-token sequence), vocabulary 2 * 1000 synonym sets + 3 specials = 2003;
   each gives tokens/s, the achieved TFLOP/s by mlmlib.bench's FLOP formulas and the MFU
   (achieved / the GPU's dense bf16 peak);
   then B1's correction arms at the ELECTRA-small shape, timed as B2 times them: each arm's
   overhead over the plain step, which `--dry-run --measured` adds to B1's GPU-hours per arm;
2. the paper plan's offline rehearsal on the GPU (`python -m mlmlib run --profile paper
   --rehearse --executor local --gpus 0`), as a subprocess with a time limit: exit code, wall
   time and the tail of its output. It runs after the timings so that a slow rehearsal cannot
   eat them, and its time limit shrinks to what is left of --budget-s.

Results: DIR/gpu_check.json (rewritten atomically after every step, so a killed run still leaves
what it measured), DIR/rehearsal_tail.txt (its last lines), DIR/rehearsal_full.log, and the logs
of the rehearsal's runs in DIR/rehearsal_logs/. Usage, from the repository root:

    python scripts/gpu_check.py --out DIR               # on the GPU: at most --budget-s (510 s)
    python scripts/gpu_check.py --tiny --skip-rehearsal --out DIR   # CPU smoke test, seconds
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python scripts/gpu_check.py` without an installed mlmlib
    sys.path.insert(0, str(ROOT))

# Dense bf16 tensor-core peaks: mlmlib.bench.PEAK_BF16_TFLOPS (H100 SXM/PCIe/NVL, H200 SXM/NVL,
# A100), matched on torch.cuda.get_device_name(); a GPU it does not know gets MFU null.

# Paper A's vocabulary: 2 * n_sets + 3 with n_sets = 1000
# (mlmlib.papers.distributional.synthetic.vocab_size; tests check it stays so).
PAPER_A_VOCAB = 2003
BERT_VOCAB = 30522  # bert-base-uncased's WordPiece vocabulary, paper B's tokenizer
TAIL_LINES = 300  # lines of the rehearsal's output kept in rehearsal_tail.txt
LOG_COPY_LIMIT = 4 * 2**20  # bytes of rehearsal run logs copied to the output folder


# ---------------------------------------------------------------- arithmetic


def achieved_tflops(tokens_per_s: float, tokens_per_step: int, step_flops: float) -> float:
    """TFLOP/s actually done: steps per second times the FLOPs of one step (bench's formulas)."""
    return tokens_per_s / tokens_per_step * step_flops / 1e12


def mfu(achieved: float, peak: float | None) -> float | None:
    """Model FLOPs utilisation, achieved / peak; None when the peak is unknown (e.g. a CPU)."""
    if peak is None or peak <= 0:
        return None
    return achieved / peak


def peak_tflops(device_name: str | None, override: float | None = None) -> float | None:
    """The device's dense bf16 peak: --peak-tflops if given, else the table, else unknown."""
    from mlmlib.bench import table_peak

    if override is not None:
        return override
    known = table_peak(device_name)
    return None if known is None else known[0]


def peak_note(peak: float | None, override: float | None, device: str, gpu: str | None) -> str:
    """Where the peak comes from, or why MFU is null (the JSON says so next to the number)."""
    from mlmlib.bench import table_peak

    if override is not None:
        return "--peak-tflops"
    if peak is not None:
        return table_peak(gpu)[1]
    if device == "cpu":
        return "MFU null: a CPU's peak is unknown here"
    return f"MFU null: no known bf16 peak for {gpu!r} (give --peak-tflops)"


# ---------------------------------------------------------------- the two timings


def timing_setups(tiny: bool, steps: int, warmup: int, electra_batch: int, mlm_batch: int,
                  mlm_vocab: int) -> dict[str, dict]:
    """The two runs to time: ELECTRA-small (paper B) and A2's BERT (paper A), or tiny versions.

    The learning rates, betas and weight decay are the papers' (they do not change the speed,
    but a diverging run would stop the timing); warm-up is 10% so the first steps stay tame.
    """
    if tiny:
        steps, warmup, electra_batch, mlm_batch = min(steps, 4), min(warmup, 2), 8, 8
    electra = {"kind": "electra", "vocab": BERT_VOCAB, "hidden": 256, "layers": 12, "heads": 4,
               "embedding_size": 128, "generator_fraction": 0.25, "seq": 128,
               "batch_size": electra_batch, "steps": steps, "warmup": warmup,
               "optim": {"lr": 5e-4, "weight_decay": 0.01}}
    mlm = {"kind": "mlm", "vocab": mlm_vocab, "hidden": 768, "layers": 6, "heads": 12,
           "embedding_size": None, "seq": 257, "max_len": 512, "batch_size": mlm_batch,
           "steps": steps, "warmup": warmup,
           "optim": {"lr": 5e-5, "weight_decay": 0.001, "betas": (0.9, 0.98)}}
    if tiny:
        for setup in (electra, mlm):
            setup.update(hidden=32, layers=2, heads=2, seq=32, max_len=32)
        electra["embedding_size"] = 16
    return {"electra_small_paper_b": electra, "bert_6x768_paper_a2": mlm}


def build_model(setup: dict):
    """The model of a setup, as the papers' notebooks build theirs (mlmlib.models)."""
    from mlmlib.models import ModelSize, bert_mlm, electra

    size = ModelSize(vocab_size=setup["vocab"], hidden=setup["hidden"], layers=setup["layers"],
                     heads=setup["heads"], max_len=setup.get("max_len") or setup["seq"],
                     embedding_size=setup["embedding_size"])
    if setup["kind"] == "electra":
        return size, electra(size, setup["generator_fraction"], seed=0)
    return size, bert_mlm(size, seed=0)


def step_flops(setup: dict, size, model) -> tuple[float, float]:
    """(FLOPs of one training step, masked positions per step) by mlmlib.bench's formulas.

    Masked positions: the expected 15% of the non-special tokens ([CLS] and [SEP] are never
    masked in make_data's rows), as `mlmlib bench` counts them.
    """
    from mlmlib.bench import electra_step_flops, mlm_step_flops

    tokens = setup["batch_size"] * setup["seq"]
    predicted = 0.15 * setup["batch_size"] * (setup["seq"] - 2)
    if setup["kind"] == "electra":
        return electra_step_flops(model, setup["seq"], tokens, predicted), predicted
    return mlm_step_flops(size, setup["seq"], tokens, predicted), predicted


def measured_rate(history: list[dict]) -> tuple[int, int, float]:
    """(steps, tokens, seconds) after the first log row, i.e. after the warm-up steps.

    pretrain's log rows carry cumulative tokens and wall time, and each log step waits for the
    device (it reads the stats), so the difference of two rows is a synchronised measurement.
    """
    first, last = history[0], history[-1]
    return (last["step"] - first["step"], last["tokens_seen"] - first["tokens_seen"],
            last["wall_s"] - first["wall_s"])


def time_setup(setup: dict, device: str, peak: float | None, quiet: bool) -> dict:
    """Time one setup with mlmlib.pretrain; returns its row for the JSON (an `error` on failure)."""
    import torch

    from mlmlib.bench import MASK, NUM_SPECIAL, make_data
    from mlmlib.pretrain import PretrainConfig, pretrain

    row, model = {"setup": dict(setup)}, None
    try:
        size, model = build_model(setup)
        flops, predicted = step_flops(setup, size, model)
        tokens_per_step = setup["batch_size"] * setup["seq"]
        bf16 = device == "cuda" and torch.cuda.is_bf16_supported()
        config = PretrainConfig(objective=setup["kind"], steps=setup["warmup"] + setup["steps"],
                                log_every=setup["warmup"], batch_size=setup["batch_size"],
                                warmup_frac=0.1, precision="bf16" if bf16 else "fp32",
                                **setup["optim"])
        data = make_data(setup["vocab"], setup["seq"], 4 * setup["batch_size"])
        row |= {"parameters": sum(p.numel() for p in model.parameters()),
                "tokens_per_step": tokens_per_step, "masked_per_step": predicted,
                "step_flops": flops, "bf16_autocast": bf16}
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        sink = contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext()
        with sink:
            history = pretrain(model, data, config, mask_id=MASK, num_special=NUM_SPECIAL,
                               progress=False)
        steps, tokens, seconds = measured_rate(history)
        tokens_per_s = tokens / seconds
        achieved = achieved_tflops(tokens_per_s, tokens_per_step, flops)
        row |= {"warmup_steps": setup["warmup"], "measured_steps": steps, "seconds": seconds,
                "tokens_per_s": tokens_per_s, "steps_per_s": steps / seconds,
                "achieved_tflops": achieved, "mfu": mfu(achieved, peak),
                "final_loss": history[-1]["loss"]}
        if device == "cuda":
            row["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
    except Exception as exc:  # noqa: BLE001 - reported; the other timing and the rehearsal still run
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["traceback"] = traceback.format_exc()[-4000:]
    finally:
        del model  # free the GPU for the next run
        if device == "cuda":
            torch.cuda.empty_cache()
    return row


def correction_overheads(setup: dict, reps: int, steps: int) -> dict:
    """B1's correction arms at `setup`'s shape (`overhead.overhead_on_random_tokens`, in bf16
    on a GPU that has it): {"rows": one per arm, its overhead over plain} or {"error": ...}."""
    import torch

    from mlmlib.models import ModelSize
    from mlmlib.papers.true_negatives.overhead import CORRECTION_ARMS, overhead_on_random_tokens
    from mlmlib.pretrain import PretrainConfig

    try:
        size = ModelSize(vocab_size=setup["vocab"], hidden=setup["hidden"],
                         layers=setup["layers"], heads=setup["heads"], max_len=setup["seq"],
                         embedding_size=setup["embedding_size"])
        bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        config = PretrainConfig(objective="electra", steps=steps, batch_size=setup["batch_size"],
                                warmup_frac=0.1, precision="bf16" if bf16 else "fp32",
                                **setup["optim"])
        rows = overhead_on_random_tokens(CORRECTION_ARMS, size, config, setup["seq"], reps=reps,
                                         generator_fraction=setup["generator_fraction"])
        return {"reps": reps, "steps": steps, "bf16_autocast": bf16, "rows": rows}
    except Exception as exc:  # noqa: BLE001 - reported; the rehearsal still runs
        return {"error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()[-4000:]}


def fair_benchmark(tiny: bool, quiet: bool = True) -> dict:
    """`mlmlib bench` on this device: the HF Trainer and a plain ELECTRA against mlmlib's loop,
    every arm on the same device in the same precision (bf16 on a GPU that has it), as tokens/s
    and MFU; at ELECTRA-small width (tiny: a CPU smoke size). An `error` on failure."""
    from mlmlib import bench
    from mlmlib.bench_config import BenchShape

    sizes = BenchShape(preset="tiny" if tiny else "paper", repeats=1).sizes()
    try:
        sink = contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext()
        with sink:
            found = bench.run(**sizes)
        return {"machine": found["machine"], "setup": found["setup"], "summary": found["summary"]}
    except Exception as exc:  # noqa: BLE001 - reported; the rehearsal still runs
        return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}


# ---------------------------------------------------------------- the rehearsal


def rehearsal_command(device: str, only: list[str] | None = None, force: bool = True) -> list[str]:
    """The paper plan's rehearsal: one run at a time on GPU 0 (on a CPU: one local slot).

    --force: records left by an earlier call on a warm machine must not turn it into a no-op.
    `only`: notebooks to rehearse (the whole plan is 41 runs, one after the other on the GPU).
    """
    cmd = [sys.executable, "-m", "mlmlib", "run", "--profile", "paper", "--rehearse",
           "--executor", "local"]
    if device == "cuda":
        cmd += ["--gpus", "0"]
    for notebook in only or ():
        cmd += ["--only", notebook]
    return cmd + (["--force"] if force else [])


def count_runs(log_text: str) -> dict:
    """How far the rehearsal got, from the executor's log lines ('... done NAME in 3.1s',
    '... FAIL NAME after 3s: ...') and the CLI's 'profile ...: N runs' header: a rehearsal
    stopped by its time limit still tells which runs went through on the GPU."""
    planned = re.search(r"^profile \S+ \(.*\): (\d+) runs", log_text, re.MULTILINE)
    return {"planned": int(planned.group(1)) if planned else None,
            "done": re.findall(r"\bdone (\S+) in [\d.]+s", log_text),
            "failed": re.findall(r"\bFAIL (\S+) after", log_text)}


def ensure_kernel() -> str:
    """Register the project's Jupyter kernel if it is missing (a fresh machine has none; the
    runner refuses to start without it). Returns what was found or done."""
    kernel = os.environ.get("MLMLIB_KERNEL", "mlmlib")
    try:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

        try:
            KernelSpecManager().get_kernel_spec(kernel)
            return f"kernel {kernel!r} registered"
        except NoSuchKernel:
            pass
        done = subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix",
                               "--name", kernel], check=False, capture_output=True, text=True,
                              timeout=120)
        return f"kernel {kernel!r} installed (exit {done.returncode}) {done.stderr.strip()[-300:]}"
    except Exception as exc:  # noqa: BLE001 - the rehearsal will say what is wrong
        return f"kernel check failed: {type(exc).__name__}: {exc}"


def _signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to a process group that may already be gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _descendants(pid: int) -> list:
    """Every process below `pid` (psutil), wherever its session; [] without psutil."""
    try:
        import psutil

        return psutil.Process(pid).children(recursive=True)
    except Exception:  # noqa: BLE001 - no psutil, or the process is gone: the group kill remains
        return []


def _kill_tree(proc: subprocess.Popen) -> None:
    """Stop the process and everything it started: its group, and the descendants that left it
    (Jupyter kernels and submitit jobs start their own sessions). The group is frozen first, so
    that no child is started between listing the descendants and signalling them."""
    _signal_group(proc.pid, signal.SIGSTOP)
    family = _descendants(proc.pid)
    _signal_group(proc.pid, signal.SIGTERM)
    for child in family:
        with contextlib.suppress(Exception):
            child.terminate()
    _signal_group(proc.pid, signal.SIGCONT)  # a stopped process acts on SIGTERM once resumed
    for child in family:
        with contextlib.suppress(Exception):
            child.resume()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    for child in family:
        with contextlib.suppress(Exception):
            child.kill()


def run_command(cmd: list[str], timeout: float, log: Path) -> dict:
    """Run `cmd` from the repository root with a time limit, its output to `log`; never raises.

    Returns exit code (None when it was stopped), wall time, whether it timed out, and the tail.
    """
    start = time.perf_counter()
    result = {"command": cmd, "timeout_s": timeout, "exit_code": None, "timed_out": False}
    try:
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                result["exit_code"] = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                result["timed_out"] = True
                _kill_tree(proc)
    except OSError as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["wall_s"] = time.perf_counter() - start
    text = log.read_text(errors="replace") if log.exists() else ""
    result["runs"] = count_runs(text)
    result["tail"] = "\n".join(text.splitlines()[-TAIL_LINES:])
    return result


def copy_run_logs(out: Path) -> list[str]:
    """Copy the rehearsal runs' logs and error texts (small files) beside the results."""
    from mlmlib.paths import runs_dir
    from mlmlib.runs.plans import REHEARSAL

    base = runs_dir(f"paper{REHEARSAL}")
    copied, budget = [], LOG_COPY_LIMIT
    for folder in ("_failed", "_logs"):
        for path in sorted((base / folder).glob("*")):
            if not path.is_file() or path.suffix == ".ipynb" or path.stat().st_size > budget:
                continue
            target = out / "rehearsal_logs" / folder / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            budget -= path.stat().st_size
            copied.append(f"{folder}/{path.name}")
    return copied


# ---------------------------------------------------------------- environment and output


def environment(device: str) -> dict:
    """Versions and hardware: what the figures depend on."""
    import torch
    import transformers

    env = {"python": platform.python_version(), "torch": torch.__version__,
           "transformers": transformers.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           "device": device, "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
           "host": platform.node(), "gpu_name": None}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env |= {"gpu_name": props.name, "gpu_count": torch.cuda.device_count(),
                "gpu_memory_gib": props.total_memory / 2**30,
                "gpu_capability": f"{props.major}.{props.minor}",
                "bf16_supported": torch.cuda.is_bf16_supported()}
        env["nvidia_smi"] = _nvidia_smi()
    return env


def _nvidia_smi() -> str | None:
    """Driver, clocks and power limit: why the same GPU model can time differently."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        query = "--query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit,temperature.gpu"
        done = subprocess.run(["nvidia-smi", query, "--format=csv"], check=False,
                              capture_output=True, text=True, timeout=20)
        return done.stdout.strip() or done.stderr.strip()
    except Exception as exc:  # noqa: BLE001 - only context for the figures
        return f"{type(exc).__name__}: {exc}"


def save(out: Path, result: dict) -> None:
    """Write DIR/gpu_check.json atomically (temp file beside it, then os.replace)."""
    from mlmlib.atomic import write_json

    result["finished_utc" if result.get("done") else "updated_utc"] = _now()
    write_json(out / "gpu_check.json", result)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def summary(result: dict) -> str:
    """A few lines for a human: device, the two timings, the rehearsal."""
    env = result["environment"]
    head = (f"device {env['device']} {env.get('gpu_name') or ''} | torch {env['torch']} "
            f"| CUDA {env['cuda']} | peak {result['peak_bf16_tflops']} TFLOP/s")
    lines = [head]
    for name, row in result["timings"].items():
        if "error" in row:
            lines.append(f"{name}: FAILED {row['error']}")
            continue
        share = "MFU n/a (peak unknown)" if row["mfu"] is None else f"MFU {row['mfu']:.1%}"
        lines.append(f"{name}: {row['tokens_per_s']:,.0f} tok/s, {row['steps_per_s']:.2f} steps/s,"
                     f" {row['achieved_tflops']:.3g} TFLOP/s, {share}")
    corrections = result.get("corrections") or {}
    if "error" in corrections:
        lines.append(f"corrections: FAILED {corrections['error']}")
    for row in corrections.get("rows", []):
        lines.append(f"correction {row['arm']}: {row['step_ms']:.1f} ms/step, "
                     f"{row['overhead']:+.1%} over {row['reference']}")
    fair = result.get("benchmark")
    if fair is not None and "error" in fair:
        lines.append(f"fair benchmark: FAILED {fair['error']}")
    elif fair is not None:
        for row in fair["summary"]:
            lines.append(f"bench {row['task']} {row['method']}: {row['tokens_per_s']:,.0f} tok/s, "
                         f"MFU {row['mfu']:.1%} ({','.join(row['ran_on'])}), x{row['speedup']:.2f}")
    reh = result["rehearsal"]
    if reh.get("skipped"):
        lines.append("rehearsal: skipped")
    else:
        state = "TIMED OUT" if reh.get("timed_out") else f"exit {reh.get('exit_code')}"
        runs = reh.get("runs", {})
        lines.append(f"rehearsal: {state} after {reh.get('wall_s', 0):.0f} s "
                     f"(limit {reh.get('timeout_s', 0):.0f} s); runs done {len(runs.get('done', []))}"
                     f" of {runs.get('planned')}, failed {len(runs.get('failed', []))}")
    lines.append(f"total {result.get('total_wall_s', 0):.0f} s; results in {result['out']}")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="folder for the results")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="auto (default): cuda if available, else cpu")
    parser.add_argument("--tiny", action="store_true",
                        help="2 layers, width 32, a few steps: a CPU smoke test in seconds")
    parser.add_argument("--steps", type=int, default=300, help="timed steps per run (default 300)")
    parser.add_argument("--warmup", type=int, default=30,
                        help="untimed steps before them (default 30)")
    parser.add_argument("--correction-reps", type=int, default=5,
                        help="repetitions of B1's correction arms, 10 steps each (default 5)")
    parser.add_argument("--electra-batch", type=int, default=128)
    parser.add_argument("--mlm-batch", type=int, default=128)
    parser.add_argument("--mlm-vocab", type=int, default=PAPER_A_VOCAB,
                        help=f"paper A's vocabulary (default {PAPER_A_VOCAB})")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="dense bf16 peak of a GPU that mlmlib.bench.PEAK_BF16_TFLOPS lacks")
    parser.add_argument("--skip-timings", action="store_true")
    parser.add_argument("--skip-bench", action="store_true",
                        help="skip the fair benchmark (HF Trainer and plain ELECTRA vs mlmlib)")
    parser.add_argument("--skip-rehearsal", action="store_true")
    parser.add_argument("--rehearsal-timeout", type=float, default=420,
                        help="seconds (default 420; also capped by what is left of --budget-s)")
    parser.add_argument("--rehearsal-only", action="append", metavar="NOTEBOOK",
                        help="rehearse only this notebook (repeatable; default: the whole plan)")
    parser.add_argument("--budget-s", type=float, default=510,
                        help="the whole script's time; the rehearsal gets what is left (default 510)")
    parser.add_argument("--verbose", action="store_true", help="show the training log lines")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 1:
        parser.error("--steps and --warmup must be >= 1")
    return args


def pick_device(choice: str) -> str:
    """cuda or cpu. For cpu, CUDA is hidden before torch starts: pretrain takes the GPU whenever
    it sees one."""
    if choice == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import torch

    if choice == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no GPU (torch "
                         f"{torch.__version__}, CUDA {torch.version.cuda})")
    return "cuda" if choice != "cpu" and torch.cuda.is_available() else "cpu"


def main(argv: list[str] | None = None) -> int:
    """Timings, then the rehearsal; the JSON is saved after each. Exit 0 if everything ran."""
    args = parse_args(argv)
    start = time.perf_counter()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    device = pick_device(args.device)
    env = environment(device)
    peak = peak_tflops(env["gpu_name"], args.peak_tflops) if device == "cuda" else None
    result = {"script": "scripts/gpu_check.py", "started_utc": _now(), "out": str(out),
              "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
              "environment": env, "peak_bf16_tflops": peak,
              "peak_source": peak_note(peak, args.peak_tflops, device, env["gpu_name"]),
              "timings": {}, "rehearsal": {"skipped": True}}
    save(out, result)

    if not args.skip_timings:
        setups = timing_setups(args.tiny, args.steps, args.warmup, args.electra_batch,
                               args.mlm_batch, args.mlm_vocab)
        for name, setup in setups.items():
            print(f"timing {name} on {device} ...", flush=True)
            result["timings"][name] = time_setup(setup, device, peak, quiet=not args.verbose)
            save(out, result)
        print(f"timing B1's correction arms on {device} ...", flush=True)
        reps = 2 if args.tiny else args.correction_reps
        result["corrections"] = correction_overheads(setups["electra_small_paper_b"], reps,
                                                     min(args.steps, 2 if args.tiny else 10))
        save(out, result)

    if not args.skip_bench:
        print(f"fair benchmark on {device} ...", flush=True)
        result["benchmark"] = fair_benchmark(args.tiny, quiet=not args.verbose)
        save(out, result)

    tail_file = out / "rehearsal_tail.txt"
    if args.skip_rehearsal:
        tail_file.write_text("rehearsal skipped (--skip-rehearsal)\n")
    else:
        left = args.budget_s - (time.perf_counter() - start) - 20
        timeout = max(30.0, min(args.rehearsal_timeout, left))
        kernel = ensure_kernel()
        cmd = rehearsal_command(device, args.rehearsal_only)
        print(f"rehearsal (limit {timeout:.0f} s): {' '.join(cmd[1:])}", flush=True)
        reh = run_command(cmd, timeout, out / "rehearsal_full.log")
        tail_file.write_text(reh.pop("tail") + "\n")
        reh |= {"skipped": False, "kernel": kernel, "tail_file": tail_file.name,
                "ok": reh["exit_code"] == 0}
        try:
            reh["copied_logs"] = copy_run_logs(out)
        except Exception as exc:  # noqa: BLE001 - the logs are a convenience; the tail remains
            reh["copied_logs"] = f"{type(exc).__name__}: {exc}"
        result["rehearsal"] = reh

    result["total_wall_s"] = time.perf_counter() - start
    result["done"] = True
    save(out, result)
    print(summary(result), flush=True)
    timing_failed = any("error" in row for row in result["timings"].values())
    timing_failed |= any("error" in (result.get(k) or {}) for k in ("benchmark", "corrections"))
    rehearsal_failed = not result["rehearsal"]["skipped"] and not result["rehearsal"]["ok"]
    return 1 if timing_failed or rehearsal_failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
