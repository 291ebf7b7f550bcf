"""Build the Jupyter Book: the committed table of contents plus the executed runs of a profile."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from mlmlib.paths import project_root, runs_dir
from mlmlib.runs.records import readable_records


def generated_toc(profile: str) -> Path:
    """Write the table of contents with each run of `profile` under its chapter; return its path."""
    root = project_root()
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    chapters = {}
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            chapters[Path(chapter["file"]).stem] = chapter
    by_entry: dict[tuple[str, str], list[dict]] = {}  # one plan entry: notebook and title
    for path, rec in readable_records(profile, root):
        if not path.with_suffix(".ipynb").exists():
            continue
        by_entry.setdefault((rec["notebook"], rec["title"]), []).append(rec | {"_path": path})
    order = _plan_order(profile)
    for entry in sorted(by_entry, key=lambda e: order.get(e, len(order))):
        recs = sorted(by_entry[entry], key=lambda r: r["label"])
        chapter = chapters.get(recs[0].get("chapter")) or chapters.get("about_runs")
        if chapter is None:
            continue
        entries = [{"file": r["_path"].with_suffix("").relative_to(root).as_posix(),
                    "title": r["title"] if len(recs) == 1 else f"{r['title']} ({r['label']})"}
                   for r in recs]
        head = entries[0]
        if len(entries) > 1:
            head["title"] = f"{recs[0]['title']}: {len(recs)} runs ({recs[0]['label']}, ...)"
            head["sections"] = entries[1:]
        chapter.setdefault("sections", []).append(head)
    out = runs_dir(profile) / "_toc.yml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(toc, sort_keys=False))
    return out


def _plan_order(profile: str) -> dict[tuple[str, str], int]:
    """Position of each (notebook, title) entry in the profile's plan: the book follows it."""
    path = project_root() / "notebooks" / "plans" / f"{profile}.yaml"
    if not path.exists():
        return {}
    entries = yaml.safe_load(path.read_text()).get("notebooks", [])
    return {(e["notebook"], e.get("title", e["notebook"])): i
            for i, e in enumerate(entries) if isinstance(e, dict)}


def check_profile(profile: str) -> None:
    """Refuse a profile with neither a plan nor records (a typo would build an empty book)."""
    from mlmlib.runs.plans import PlanError, available_profiles, check_name

    check_name("profile", profile)
    if profile not in available_profiles() and not runs_dir(profile).is_dir():
        raise PlanError(f"unknown profile {profile!r}: no plan in notebooks/plans/ and no records "
                        f"in book/runs/; profiles with a plan: {available_profiles()}")


def build_book(profile: str, strict: bool = True, output: Path | None = None) -> Path:
    """Run `jupyter-book build` (no execution of its own) and return the HTML folder."""
    root = project_root()
    check_profile(profile)
    output = Path(output) if output else root / "book"
    toc = generated_toc(profile)
    cli = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(cli) if cli.exists() else "jupyter-book", "build", str(root), "--toc", str(toc),
           "--path-output", str(output)]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    subprocess.run(cmd, cwd=root, check=True)
    return output / "_build" / "html"
