"""GPU-hours a plan asks for: each entry's estimate, the totals per paper, and the timeouts beside.

A plan entry states `gpu_hours`, the estimated GPU-hours of each of its runs. For a training run
the estimate is the usual 6 x parameters x tokens (forward and backward, a multiply-add counted
as 2) divided by what the GPU delivers, its dense bf16 peak times a stated model FLOPs
utilisation (MFU); the plan's comments show the arithmetic (`estimate_gpu_hours` does it).
An entry may name the MFU it assumed (`gpu_mfu`) and the loop timed on a GPU that stands for its
training (`gpu_loop`, a timing of scripts/gpu_check.py): given that script's JSON, the dry run
scales the estimate by assumed / measured MFU and says which figures are measured.
Runs that train nothing (summaries, data pages) hold a GPU on a cluster all the same: a small
figure from their timeouts. The per-run timeouts are the plan's upper bounds: their sum is
shown beside the estimates, for comparison, and is what a scheduler's time limits would reserve.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mlmlib.runs.plans import Plan, Run

# The dense bf16 peak the estimates assume: an H100 SXM (the H200 has the same tensor cores and
# clocks; mlmlib.bench.PEAK_BF16_TFLOPS holds the table of devices)
ESTIMATE_PEAK_TFLOPS = 989.4
CHAPTER_NAMES = {"paper_a": "Paper A", "paper_b": "Paper B", "paper_c": "Paper C",
                 "data": "Data", "compute": "Compute benchmark", "about_runs": "Run report"}


def training_flops(parameters: float, tokens: float) -> float:
    """FLOPs of training `parameters` weights on `tokens` tokens: 6 x parameters x tokens."""
    return 6.0 * parameters * tokens


def estimate_gpu_hours(parameters: float, tokens: float, mfu: float,
                       peak_tflops: float = ESTIMATE_PEAK_TFLOPS) -> float:
    """GPU-hours of training at `mfu` (0 < mfu <= 1) of a `peak_tflops` dense peak."""
    if not 0 < mfu <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu!r}")
    if parameters <= 0 or tokens <= 0 or peak_tflops <= 0:
        raise ValueError("parameters, tokens and peak_tflops must be positive")
    return training_flops(parameters, tokens) / (mfu * peak_tflops * 1e12) / 3600


@dataclass
class ChapterBudget:
    """One chapter (paper) of a plan: its runs, their estimated GPU-hours and timeouts."""

    chapter: str
    runs: int
    gpu_hours: float  # the sum over runs that have an estimate
    timeout_hours: float  # the sum of the per-run timeouts
    unestimated: int  # runs whose entry states no gpu_hours

    @property
    def name(self) -> str:
        """A readable name ('Paper B')."""
        return CHAPTER_NAMES.get(self.chapter, self.chapter or "(no chapter)")


def measured_mfu(path: Path | None) -> dict[str, float]:
    """{timing name: MFU} from scripts/gpu_check.py's JSON ({} without a file); a timing that
    failed or has no MFU (a GPU of unknown peak) is left out."""
    if path is None:
        return {}
    try:
        timings = json.loads(Path(path).read_text())["timings"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"--measured {path}: not a gpu_check.json with timings ({exc})") from None
    return {name: float(row["mfu"]) for name, row in timings.items()
            if isinstance(row, dict) and isinstance(row.get("mfu"), (int, float)) and row["mfu"] > 0}


def measured_overhead(path: Path | None) -> dict[str, float]:
    """{arm: its step's overhead over its objective's plain step} from scripts/gpu_check.py's
    JSON (its `corrections`; {} without a file, or where that timing failed)."""
    if path is None:
        return {}
    try:
        rows = (json.loads(Path(path).read_text()).get("corrections") or {}).get("rows", [])
        return {row["arm"]: float(row["overhead"]) for row in rows}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"--measured {path}: its corrections are not overhead rows "
                         f"({exc})") from None


def arm_overhead(run: Run, overhead: dict[str, float]) -> tuple[str, float] | None:
    """(arm, overhead) of a run that trains a measured correction arm (`arms`, its table variant
    `@source` costing as the method does), the costliest where it names several; else None."""
    arms = run.params.get("arms")
    found = [(arm, overhead[arm.split("@")[0]]) for arm in (arms if isinstance(arms, list) else [])
             if isinstance(arm, str) and arm.split("@")[0] in overhead]
    return max(found, key=lambda pair: pair[1]) if found else None


def run_hours(run: Run, measured: dict[str, float],
              overhead: dict[str, float] | None = None) -> tuple[float | None, str]:
    """(GPU-hours of the run, where they come from): the estimate, scaled by assumed over
    measured MFU where its loop was timed, and by 1 + its correction arm's measured overhead."""
    hours, source = run.gpu_hours, "estimate"
    if hours is None:
        return None, source
    if run.gpu_loop in measured:
        hours *= run.gpu_mfu / measured[run.gpu_loop]
        source = (f"measured: {run.gpu_loop} at MFU {measured[run.gpu_loop]:.2f}, the estimate "
                  f"assumed {run.gpu_mfu:.2f}")
    arm = arm_overhead(run, overhead or {})
    if arm is not None:
        hours *= 1.0 + arm[1]
        source += f"; {arm[0]} measured at {arm[1]:+.1%} a step over plain"
    return hours, source


def plan_budget(plan: Plan, measured: dict[str, float] | None = None,
                overhead: dict[str, float] | None = None) -> list[ChapterBudget]:
    """The plan's GPU-hours per chapter, in the plan's order of chapters."""
    by: dict[str, ChapterBudget] = {}
    for run in plan.runs:
        b = by.setdefault(run.chapter, ChapterBudget(run.chapter, 0, 0.0, 0.0, 0))
        b.runs += 1
        b.timeout_hours += run.timeout / 3600
        hours, _ = run_hours(run, measured or {}, overhead)
        if hours is None:
            b.unestimated += 1
        else:
            b.gpu_hours += hours
    return list(by.values())


def entry_lines(plan: Plan, measured: dict[str, float] | None = None,
                overhead: dict[str, float] | None = None) -> list[str]:
    """The dry run's per-entry lines: each notebook's runs, its GPU-hours per run (training with
    its fine-tuning and evaluation, as the entry's comment derives it) and in all; each says
    whether a measured MFU gave it."""
    by: dict[tuple[str, float | None, str], int] = {}
    for run in plan.runs:
        hours, source = run_hours(run, measured or {}, overhead)
        key = (run.notebook, hours, source)
        by[key] = by.get(key, 0) + 1
    if not any(hours for _, hours, _ in by):
        return []
    lines = ["GPU-hours per entry (per run, including its fine-tuning and evaluation):"]
    for (notebook, hours, source), n in by.items():
        per = ("no estimate" if hours is None else
               f"{hours:7.2f} GPU-h/run  {n * hours:8.2f} GPU-h  ({source})")
        lines.append(f"  {notebook:34s} {n:4d} runs  {per}")
    return lines


def budget_lines(plan: Plan, measured: dict[str, float] | None = None,
                 overhead: dict[str, float] | None = None) -> list[str]:
    """The dry run's lines: GPU-hours per paper and in all, beside the timeouts' sum."""
    rows = plan_budget(plan, measured, overhead)
    if not any(r.runs > r.unestimated for r in rows):
        return []
    timed = ("estimates, with the measured MFUs and correction overheads where given"
             if measured or overhead else "estimate")
    lines = [f"GPU-hours ({timed}; sum of the runs' timeouts for comparison):"]
    for r in rows:
        note = f" ({r.unestimated} run(s) without an estimate)" if r.unestimated else ""
        lines.append(f"  {r.name:18s} {r.runs:4d} runs  {r.gpu_hours:9.1f} GPU-h  "
                     f"timeouts {r.timeout_hours:9.1f} h{note}")
    total = sum(r.gpu_hours for r in rows)
    timeouts = sum(r.timeout_hours for r in rows)
    lines.append(f"  {'total':18s} {sum(r.runs for r in rows):4d} runs  {total:9.1f} GPU-h  "
                 f"timeouts {timeouts:9.1f} h")
    return lines


def budget_markdown(plan: Plan) -> str:
    """The plan's GPU-hours per paper as a markdown table (the compute page includes it)."""
    rows = plan_budget(plan)
    lines = [(f"GPU-hours of the `{plan.profile}` plan, read from `{plan.path.name}` when the book was "
             f"built: the estimate of each entry (6 x parameters x tokens at a stated MFU of a "
             f"{ESTIMATE_PEAK_TFLOPS:g} TFLOP/s dense bf16 peak, the plan's comments show the "
             "arithmetic) summed over its runs, and the sum of the runs' timeouts, the upper "
             "bound a scheduler reserves."), "",
             "| part | runs | estimated GPU-hours | sum of timeouts (hours) |",
             "| --- | ---: | ---: | ---: |"]
    for r in rows:
        estimate = f"{r.gpu_hours:.1f}" + (f" ({r.unestimated} runs without)" if r.unestimated else "")
        lines.append(f"| {r.name} | {r.runs} | {estimate} | {r.timeout_hours:.1f} |")
    lines.append(f"| **total** | {sum(r.runs for r in rows)} | "
                 f"**{sum(r.gpu_hours for r in rows):.1f}** | {sum(r.timeout_hours for r in rows):.1f} |")
    return "\n".join(lines) + "\n"
