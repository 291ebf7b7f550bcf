"""Command line: `python -m mlmlib run|book|status|mirror|bench`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mlmlib.runs.plans import PlanError, available_profiles, load_plan

HELP = """\
Run the book's experiments and build the book.

  python -m mlmlib run --profile smoke          execute every run of the smoke plan
  python -m mlmlib run --profile smoke --only A1_synthetic_data --force
  python -m mlmlib run --profile smoke --executor local --max-parallel 2   two runs side by side
  python -m mlmlib run --profile paper --rehearse   the paper plan at tiny size, offline, on
                                                stand-ins of its hub data and models (minutes, CPU)
  python -m mlmlib run --profile paper --executor local --gpus 0,1,2,3    one run per GPU
  python -m mlmlib run --profile paper --executor slurm --partition gpu --gpus-per-run 1 \
      --slurm-arg account=proj42 --slurm-setup "module load cuda"   one job per run, 1 GPU each
  python -m mlmlib run --profile paper --dry-run   list the runs, GPU-hours per paper
  python -m mlmlib book --profile smoke         build the HTML book from the executed runs
  python -m mlmlib status                       list finished and failed runs per profile
  python -m mlmlib mirror --profile paper --to DIR   copy the hub data and models it needs to DIR
                                                (then MLMLIB_HUB_MIRROR=DIR runs it offline)
  python -m mlmlib bench                        time mlmlib's training loop against HF Trainer

A profile is a plan file in notebooks/plans/ (smoke: CPU in minutes; paper: GPUs, hub data).
"""


def main(argv: list[str] | None = None, prepare_rehearsal=None) -> int:
    """Parse the command line and dispatch; return the exit code.

    `prepare_rehearsal(plan)` builds a rehearsal's stand-ins and points the hub loaders at them
    before it runs: the entry point (mlmlib.__main__) passes it, as the runs package builds
    nothing of the hub's data or models itself.
    """
    parser = argparse.ArgumentParser(prog="python -m mlmlib", description=HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute a profile's notebooks with papermill")
    run.add_argument("--profile", default="smoke", help="plan name in notebooks/plans/ (default: smoke)")
    run.add_argument("--only", action="append", metavar="NOTEBOOK",
                     help="run only this notebook (repeatable)")
    run.add_argument("--force", action="store_true", help="rerun runs that already have a record")
    run.add_argument("--dry-run", action="store_true", help="list the runs without executing them")
    run.add_argument("--measured", type=Path, metavar="GPU_CHECK_JSON",
                     help="with --dry-run: scripts/gpu_check.py's JSON; entries whose training "
                          "loop it timed take its measured MFU in place of the assumed one")
    run.add_argument("--rehearse", action="store_true",
                     help="run the profile's every entry at the tiny sizes of notebooks/plans/rehearse/"
                          "<profile>.yaml, offline, on stand-ins of its hub data and models "
                          "(records in book/runs/<profile>-rehearsal/)")
    ex = run.add_argument_group("executors (serial: one run after the other, in this process)")
    ex.add_argument("--executor", default="serial", help="serial (default), local or slurm")
    ex.add_argument("--max-parallel", type=int, default=0, metavar="N",
                    help="local: N runs side by side on the CPU, cores/N threads each; "
                         "slurm: at most N jobs in flight (default: no cap)")
    ex.add_argument("--gpus", default="", metavar="0,1,..",
                    help="local: one run per listed GPU at a time, each seeing only its GPU")
    ex.add_argument("--partition", default=None, help="slurm: partition")
    ex.add_argument("--time-min", type=float, default=None, metavar="MIN",
                    help="time limit of a job (local, slurm); a run stopped by it is requeued and "
                         "resumes from its checkpoint")
    ex.add_argument("--cpus-per-run", type=int, default=None, metavar="N", help="slurm: CPUs per run")
    ex.add_argument("--mem-gb", type=float, default=None, metavar="GB", help="slurm: memory per run")
    ex.add_argument("--gpus-per-run", type=int, default=None, metavar="N",
                    help="slurm: GPUs per run: 1 (a run trains on one GPU; run several side by side)")
    ex.add_argument("--slurm-arg", action="append", default=[], metavar="KEY=VALUE",
                    help="slurm: an sbatch option passed through, e.g. account=proj42, qos=high, "
                         "constraint=a100 (repeatable; a bare KEY is a flag)")
    ex.add_argument("--slurm-setup", action="append", default=[], metavar="LINE",
                    help="slurm: a shell line run before each job, e.g. \"module load cuda/12.4\" "
                         "(repeatable)")
    ex.add_argument("--max-requeue", type=int, default=3, metavar="N",
                    help="requeues after a time limit, and (slurm) resubmissions of a job the "
                         "cluster ended (preempted, cancelled, node failure), before a run counts "
                         "as failed (default 3)")
    book = sub.add_parser("book", help="build the Jupyter Book from the executed runs")
    book.add_argument("--profile", default="smoke", help="whose executed notebooks appear as pages")
    book.add_argument("--no-strict", action="store_true", help="do not fail on Sphinx warnings")
    book.add_argument("--output", default=None, help="folder for _build/ (default: book/)")
    book.add_argument("--also", action="append", default=[], metavar="PROFILE",
                      help="also show this profile's executed runs, e.g. the committed cpu results "
                           "(repeatable; a profile without records is left out)")
    status = sub.add_parser("status", help="which runs exist and which failed")
    status.add_argument("--profile", default=None, help="one profile (default: all present)")
    sub.add_parser("mirror", help="fill a folder with the hub data and models a profile needs "
                   "(--profile P --to DIR [--list])",
                   add_help=False)  # handled by mlmlib.__main__ (mlmlib.offline.mirror): it fetches
    sub.add_parser("bench", help="training-throughput benchmark (see book page on compute)",
                   add_help=False)  # handled by mlmlib.__main__: the runs package trains nothing
    args = parser.parse_args(argv)

    if args.command == "run":
        return _run(args, prepare_rehearsal)
    if args.command == "book":
        from mlmlib.runs.book import build_book

        try:
            write_budget_page()
            html = build_book(args.profile, strict=not args.no_strict, output=args.output,
                              also=args.also)
        except PlanError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"\nThe book is at {(html / 'index.html').resolve().as_uri()}")
        return 0
    if args.command == "status":
        if args.profile is not None:
            from mlmlib.runs.book import check_profile

            try:
                check_profile(args.profile)
            except PlanError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
        return _status(args.profile)
    return 2


def _run(args, prepare_rehearsal=None) -> int:
    """Validate the plan, then execute it and summarise failures."""
    from mlmlib.runs.executors import ExecutorError, run_with_executor
    from mlmlib.runs.plans import REHEARSAL, rehearsed_profile
    from mlmlib.runs.runner import remove_unplanned_records, run_plan

    profile = args.profile
    if args.rehearse and not profile.endswith(REHEARSAL):
        profile += REHEARSAL
    try:
        plan = load_plan(profile, args.only)
    except PlanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        options = _options(args, plan)
    except ExecutorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.measured and not args.dry_run:
        print("error: --measured goes with --dry-run (it changes the GPU-hours shown, nothing run)",
              file=sys.stderr)
        return 2
    print(f"profile {plan.profile} ({plan.path.name}): {len(plan.runs)} runs")
    if args.dry_run:
        from mlmlib.runs.budget import budget_lines, entry_lines, measured_mfu, measured_overhead
        from mlmlib.runs.disk import disk_lines

        try:
            measured, overhead = measured_mfu(args.measured), measured_overhead(args.measured)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for run in plan.runs:
            device = f" [{run.device}]" if run.device else ""  # `device: gpu` needs CUDA to start
            print(f"  {run.notebook}/{run.slug}{device}: {json.dumps(run.params)}")
        lines = [*entry_lines(plan, measured, overhead), *budget_lines(plan, measured, overhead),
                 *disk_lines(plan.runs)]
        for line in lines:
            print(line)
        return 0
    if rehearsed_profile(plan.profile):
        if prepare_rehearsal is None:
            print("error: a rehearsal runs on stand-ins that `python -m mlmlib run --rehearse` "
                  "builds; run it that way", file=sys.stderr)
            return 2
        prepare_rehearsal(plan)
    remove_unplanned_records(plan)
    if options.executor == "serial":
        report = run_plan(plan, force=args.force)
    else:
        report = run_with_executor(plan, options, force=args.force, only=args.only)
    if report.seconds:
        print("\n  seconds  run")
        for name, seconds in report.seconds.items():
            print(f"  {seconds:7.1f}  {name}{'  FAILED' if name in report.failed else ''}")
    print(f"\n{len(report.done)} ran, {len(report.skipped)} skipped, {len(report.failed)} failed")
    for name, error in report.failed.items():
        print(f"  FAILED {name}: {error}")
    if report.failed:
        print("Executed notebooks and errors of failed runs are in book/runs/<profile>/_failed/")
    return 0 if report.ok else 1


def _options(args, plan):
    """Executor options from the command line, checked against the machine and the plan."""
    from mlmlib.runs.executors import ExecutorError, Options, check_options

    try:
        gpus = tuple(int(g) for g in args.gpus.split(",") if g.strip())
    except ValueError:
        raise ExecutorError(f"--gpus {args.gpus!r}: give GPU numbers separated by commas, e.g. 0,1") from None
    return check_options(Options(
        executor=args.executor, gpus=gpus, max_parallel=args.max_parallel, partition=args.partition,
        time_min=args.time_min, cpus_per_run=args.cpus_per_run, mem_gb=args.mem_gb,
        gpus_per_run=args.gpus_per_run, max_requeue=args.max_requeue,
        slurm_args=parse_slurm_args(args.slurm_arg), slurm_setup=list(args.slurm_setup)), plan)


def parse_slurm_args(given: list[str]) -> dict:
    """`--slurm-arg key=value` (repeatable; a bare `key` is a flag such as `exclusive`) as a dict."""
    from mlmlib.runs.executors import ExecutorError

    args: dict = {}
    for item in given:
        key, has_value, value = item.partition("=")
        key = key.strip()
        if not key or (has_value and not value.strip()):
            raise ExecutorError(f"--slurm-arg {item!r}: give key=value (an sbatch option without its "
                                "dashes, e.g. account=proj42, qos=high, constraint=a100) or a flag "
                                "key (e.g. exclusive)")
        args[key] = value.strip() if has_value else True
    return args


BUDGET_PAGE = "gpu_budget.md"  # book/_generated/, included by book/compute.md
BUDGET_PROFILE = "paper"


def write_budget_page() -> Path:
    """Write book/_generated/gpu_budget.md, the paper plan's GPU-hours per paper, from the plan."""
    from mlmlib.atomic import atomic_path
    from mlmlib.paths import project_root
    from mlmlib.runs.budget import budget_markdown

    out = project_root() / "book" / "_generated" / BUDGET_PAGE
    out.parent.mkdir(parents=True, exist_ok=True)
    if BUDGET_PROFILE in available_profiles():
        text = budget_markdown(load_plan(BUDGET_PROFILE))
    else:
        text = f"*No `{BUDGET_PROFILE}` plan in notebooks/plans/: no GPU-hours to show.*\n"
    with atomic_path(out) as tmp:
        tmp.write_text(text)
    return out


def _status(profile: str | None) -> int:
    """Print finished runs (per notebook) and failed ones, for each profile present."""
    from mlmlib.paths import project_root
    from mlmlib.runs.records import load_records

    table = load_records(profile)
    runs_root = project_root() / "book" / "runs"
    profiles = [profile] if profile else sorted(p.name for p in runs_root.glob("*") if p.is_dir())
    if not profiles:
        print(f"no runs yet; profiles with a plan: {available_profiles()}")
    for name in profiles:
        sub = table[table["profile"] == name] if not table.empty else table
        print(f"profile {name}: {len(sub)} finished runs")
        if not sub.empty:
            for nb, group in sub.groupby("notebook"):
                print(f"  {nb}: {len(group)} runs, {group['wall_time_s'].sum():.0f}s in all, "
                      f"last {group['finished_at'].max()}")
        for err in sorted((runs_root / name / "_failed").glob("*.error.txt")):
            lines = err.read_text().strip().splitlines() or ["?"]
            print(f"  FAILED {err.name[:-len('.error.txt')]}: {lines[0][:160]}")
    return 0
