"""GPU-hours a plan asks for: each entry's estimate, the totals per paper, and the timeouts beside.

A plan entry states `gpu_hours`, the estimated GPU-hours of each of its runs. For a training run
the estimate is the usual 6 x parameters x tokens (forward and backward, a multiply-add counted
as 2) divided by what the GPU delivers, its dense bf16 peak times a stated model FLOPs
utilisation (MFU); the plan's comments show the arithmetic (`estimate_gpu_hours` does it).
Runs that train nothing (summaries, data pages) hold a GPU on a cluster all the same: a small
figure from their timeouts. The per-run timeouts are the plan's upper bounds: their sum is
shown beside the estimates, for comparison, and is what a scheduler's time limits would reserve.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlmlib.runs.plans import Plan

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


def plan_budget(plan: Plan) -> list[ChapterBudget]:
    """The plan's GPU-hours per chapter, in the plan's order of chapters."""
    by: dict[str, ChapterBudget] = {}
    for run in plan.runs:
        b = by.setdefault(run.chapter, ChapterBudget(run.chapter, 0, 0.0, 0.0, 0))
        b.runs += 1
        b.timeout_hours += run.timeout / 3600
        if run.gpu_hours is None:
            b.unestimated += 1
        else:
            b.gpu_hours += run.gpu_hours
    return list(by.values())


def entry_lines(plan: Plan) -> list[str]:
    """The dry run's per-entry lines: each notebook's runs, its estimate per run (training with
    its fine-tuning and evaluation, as the entry's comment derives it) and in all."""
    by: dict[tuple[str, float | None], int] = {}
    for run in plan.runs:
        key = (run.notebook, run.gpu_hours)
        by[key] = by.get(key, 0) + 1
    if not any(hours for _, hours in by):
        return []
    lines = ["GPU-hours per entry (estimate per run, including its fine-tuning and evaluation):"]
    for (notebook, hours), n in by.items():
        per = "no estimate" if hours is None else f"{hours:7.2f} GPU-h/run  {n * hours:8.2f} GPU-h"
        lines.append(f"  {notebook:34s} {n:4d} runs  {per}")
    return lines


def budget_lines(plan: Plan) -> list[str]:
    """The dry run's lines: estimated GPU-hours per paper and in all, beside the timeouts' sum."""
    rows = plan_budget(plan)
    if not any(r.runs > r.unestimated for r in rows):
        return []
    lines = ["GPU-hours (estimate; sum of the runs' timeouts for comparison):"]
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
