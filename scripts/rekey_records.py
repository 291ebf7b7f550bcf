"""Carry run records over a change of the code-version rule, without rerunning them.

A record's key hashes its run's code version; when the rule that computes code versions
changes (mlmlib.code_digest), every key changes with it, although the code the runs executed
did not. This script gives the new key to the records it can vouch for, and to no other:

1. the record was current at the base commit: its stored key is the key that the base commit's
   own runner computes for the run (in a temporary git worktree of that commit, in a subprocess
   importing that tree's mlmlib), and the current plan gives the run the same parameters;
2. the code its notebook runs is the same at the base and here: the current rule's code version
   of the base tree's files equals that of the working tree's (byte-identical), or else every
   top-level definition its cells reach, followed through what those definitions mention (moved
   definitions too), has the same source text in both trees, and so has the code each module of
   its closure runs at import; its cells and the data manifest are byte-identical
   (mlmlib.runs.rekey states the rules, and refuses what it cannot follow for sure).

A re-keyed record gets the code version and key the current runner computes (in plan order) and
keeps the old ones under `rekeyed`; it is written atomically. Any other record is left alone and
listed as needing a rerun. Summary notebooks are never re-keyed: they are cheap, and rerun.

Usage, from the repository root:

    python scripts/rekey_records.py --profile cpu --base 52beca6 --dry-run   # decide, write nothing
    python scripts/rekey_records.py --profile cpu --base 52beca6             # book/runs/cpu
    python scripts/rekey_records.py --profile cpu --base 52beca6 --runs-dir DIR   # a copy of it
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from mlmlib.atomic import write_json
from mlmlib.code_digest import notebook_version
from mlmlib.paths import PACKAGE_DIR, project_root, runs_dir
from mlmlib.runs import runner
from mlmlib.runs.plans import Run, is_summary, load_plan, notebooks_dir
from mlmlib.runs.rekey import Comparison, compare_notebook

RULE = ("current at the base commit, and the code its notebook runs (the modules it imports, followed "
        "through their imports, the data manifest and its cells) is byte-identical there and here")
# The same code, definition by definition: {changes} says what was compared and where edits lie.
RULE_UNREACHED = ("current at the base commit, and what its notebook runs is unchanged at base {base}: "
                  "its cells, the data manifest, the code its modules run at import and the definitions "
                  "its code reaches {changes}")
REKEY, CURRENT, SUMMARY, RERUN = "rekey", "current", "summary", "rerun"

# Run in the base tree by that tree's own code: each run's record key under the base rules.
BASE_KEYS = """
import json, sys
import mlmlib
from mlmlib.runs.plans import load_plan
from mlmlib.runs.runner import code_version, run_key, run_name
plan = load_plan(sys.argv[1])
versions = {nb: code_version(nb) for nb in {r.notebook for r in plan.runs}}
keys = {run_name(r): {"key": run_key(plan, i, versions), "params": r.params}
        for i, r in enumerate(plan.runs)}
print(json.dumps({"package": mlmlib.__file__, "runs": keys}, default=str))
"""


@dataclass
class Facts:
    """What the decision about one record rests on."""

    summary: bool
    complete: bool  # its executed notebook lies beside it (the runner requires both)
    stored_key: str | None
    current_key: str | None  # the current runner's key (None for a summary: never computed)
    base_key: str | None  # the base runner's key (None: not in the base plan)
    same_params: bool  # the base plan and the current plan give the run the same parameters
    base_version: str | None  # the current rule applied to the base tree (None: no notebook)
    version: str | None  # the current rule applied to the working tree
    unreached: str | None = None  # the versions differ, what the notebook reaches does not: what


def decide(f: Facts) -> tuple[str, str]:
    """The verdict on one record (rekey, current, summary or rerun) and the reason."""
    if f.summary:
        return SUMMARY, "a summary: never re-keyed, it reruns"
    if not f.complete:
        return RERUN, "no executed notebook beside the record"
    if f.stored_key is not None and f.stored_key == f.current_key:
        return CURRENT, "already has the current key"
    if f.base_key is None or f.stored_key != f.base_key:
        return RERUN, "not current at the base commit"
    if not f.same_params:
        return RERUN, "its parameters changed since the base commit"
    if f.base_version is None or (f.base_version != f.version and f.unreached is None):
        return RERUN, "the code its notebook runs changed since the base commit"
    if f.base_version != f.version:
        return REKEY, "current at the base commit, the definitions it reaches unchanged"
    return REKEY, "current at the base commit, same code"


def git(*args: str, cwd: Path) -> str:
    """Run git in `cwd`; return its stdout."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def base_keys(tree: Path, profile: str) -> dict[str, dict]:
    """Each run's key and parameters under the base rules, computed by the base tree's code."""
    # the tree first on the path and as the project root: its mlmlib, notebooks, plan and records
    env = {**os.environ, "PYTHONPATH": str(tree), "MLMLIB_ROOT": str(tree)}
    done = subprocess.run([sys.executable, "-c", BASE_KEYS, profile], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the base tree's runner failed to compute its keys:\n{done.stderr[-3000:]}")
    answer = json.loads(done.stdout)
    if tree.resolve() not in Path(answer["package"]).resolve().parents:
        raise RuntimeError(f"the base keys were computed by {answer['package']}, not the base tree")
    return answer["runs"]


def base_version(tree: Path, notebook: str) -> str | None:
    """The current rule's code version of a notebook in the base tree (None if it has none)."""
    path = tree / "notebooks" / f"{notebook}.ipynb"
    return notebook_version(path, tree / "mlmlib") if path.exists() else None


def compare(tree: Path, notebook: str, version: str) -> Comparison:
    """How the code a notebook runs differs between the base tree and the working tree."""
    code = compare_notebook(tree / "notebooks" / f"{notebook}.ipynb", tree / "mlmlib",
                            notebooks_dir() / f"{notebook}.ipynb", PACKAGE_DIR)
    # the version a record is given must be that of the code compared: refuse if it moved meanwhile
    if runner.code_version(notebook) != version:
        code.problems.append("its code changed here while it was being compared")
    return code


def facts(record: Path, run: Run, base: dict | None, versions: tuple[str | None, str],
          current_key: str | None, code: Comparison | None = None) -> Facts:
    """Gather what decide() needs about one record of the current plan's run (`code`: how the
    code its notebook runs differs from the base's, when its versions differ)."""
    same = base is not None and _same(base["params"], run.params)
    return Facts(summary=is_summary(run.notebook), complete=record.with_suffix(".ipynb").exists(),
                 stored_key=json.loads(record.read_text()).get("key"), current_key=current_key,
                 base_key=base["key"] if base else None, same_params=same,
                 base_version=versions[0], version=versions[1],
                 unreached=code.summary() if code is not None and code.accepted else None)


def _same(a: dict, b: dict) -> bool:
    """Parameters compared as the key hashes them (JSON, sorted keys, str for the rest)."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def rule(f: Facts, base_sha: str) -> str:
    """The sentence a re-keyed record keeps: byte-identical code, or what was compared."""
    return RULE if f.unreached is None else RULE_UNREACHED.format(base=base_sha[:7], changes=f.unreached)


def rekey(record: Path, key: str, version: str, base_sha: str, why: str = RULE) -> None:
    """Give a record its new key and code version, keeping the old ones; written atomically."""
    data = json.loads(record.read_text())  # as stored: non-finite numbers stay null, as listed
    entry = {"from_key": data.get("key"), "from_code_version": data.get("code_version"),
             "base": base_sha, "rule": why}
    if "rekeyed" in data:  # re-keyed before: the chain back to the code that ran it stays
        entry["earlier"] = data["rekeyed"]
    data["rekeyed"] = entry
    data["key"], data["code_version"] = key, version
    write_json(record, data)


def rekey_profile(profile: str, base_sha: str, tree: Path, folder: Path, dry_run: bool) -> Counter:
    """Decide on (and re-key) every record of the profile in `folder`; print one line each."""
    plan, keys = load_plan(profile), base_keys(tree, profile)
    notebooks = sorted({r.notebook for r in plan.runs})
    versions = {nb: runner.code_version(nb) for nb in notebooks}
    at_base = {nb: base_version(tree, nb) for nb in notebooks}
    counts: Counter = Counter()
    seen: set[str] = set()
    code: dict[str, Comparison] = {}  # per notebook whose versions differ, compared once
    for i, run in enumerate(plan.runs):  # plan order: a key that reads earlier records sees new ones
        name = runner.run_name(run)
        record = folder / run.notebook / f"{run.slug}.json"
        if not record.exists() or name in seen:
            continue
        seen.add(name)
        # run_key reads records only for summaries (runner._inputs_digest), never re-keyed here,
        # so computing it for the others does not depend on which folder holds the records
        current = None if is_summary(run.notebook) else runner.run_key(plan, i, versions)
        both = (at_base[run.notebook], versions[run.notebook])
        differs = None not in both and both[0] != both[1] and not is_summary(run.notebook)
        if differs and run.notebook not in code:
            code[run.notebook] = compare(tree, run.notebook, versions[run.notebook])
        f = facts(record, run, keys.get(name), both, current, code.get(run.notebook))
        verdict, why = decide(f)
        if verdict in (REKEY, RERUN) and run.notebook in code:  # what was compared, or why refused
            why += ": " + code[run.notebook].explain()
        if verdict == REKEY and not dry_run:
            rekey(record, current, versions[run.notebook], base_sha, rule(f, base_sha))
        counts[verdict] += 1
        print(f"{verdict:8}{name}: {why}" + (f" ({keys[name]['key']} -> {current})" if verdict == REKEY else ""))
    counts["not in plan"] = _others(folder, seen)
    return counts


def _others(folder: Path, seen: set[str]) -> int:
    """Name (and count) the records in `folder` of no run of the current plan: left alone."""
    others = [f"{p.parent.name}/{p.stem}" for p in sorted(folder.glob("[!_]*/*.json"))]
    others = [name for name in others if name not in seen]
    for name in others:
        print(f"{'left':8}{name}: not a run of the current plan")
    return len(others)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", required=True, help="the plan whose records are re-keyed")
    parser.add_argument("--base", required=True, help="the commit at which the records were current")
    parser.add_argument("--runs-dir", type=Path, help="the records' folder (default: the profile's)")
    parser.add_argument("--dry-run", action="store_true", help="decide and print, write nothing")
    args = parser.parse_args(argv)
    root = project_root()
    sha = git("rev-parse", "--verify", f"{args.base}^{{commit}}", cwd=root).strip()
    folder = args.runs_dir or runs_dir(args.profile)
    scratch = Path(tempfile.mkdtemp(prefix="rekey-"))
    tree = scratch / "base"
    git("worktree", "add", "--detach", str(tree), sha, cwd=root)
    try:
        print(f"base {sha[:12]} ({tree}); records in {folder}; notebooks of {notebooks_dir()}")
        counts = rekey_profile(args.profile, sha, tree, folder, args.dry_run)
    finally:
        git("worktree", "remove", "--force", str(tree), cwd=root)
        shutil.rmtree(scratch, ignore_errors=True)
    done = "would be re-keyed" if args.dry_run else "re-keyed"
    print(f"{sum(counts.values())} records: {counts[REKEY]} {done}, {counts[CURRENT]} already current, "
          f"{counts[RERUN]} need a rerun, {counts[SUMMARY]} summaries (rerun), "
          f"{counts['not in plan']} not in the plan (left alone)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
