"""Build the Jupyter Book: the committed table of contents plus the executed runs of a profile."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from mlmlib.paths import project_root, runs_dir
from mlmlib.runs.records import readable_records
from mlmlib.stats import NOT_RESOLVED, VERDICTS, combine


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


GENERATED = "_generated"  # book/_generated/: claim tables written from the records at build time
PAPER_CHAPTERS = {"paper_a": "A", "paper_b": "B", "paper_c": "C"}
PROFILE_ORDER = ("smoke", "cpu", "paper")  # the others (test, ...) after these


def scorecard_rows(root: Path | None = None) -> list[dict]:
    """Every claim row that summary notebooks saved (metrics['scorecard']), of every profile."""
    rows = []
    for path, rec in readable_records(None, root):
        for row in rec["metrics"].get("scorecard") or []:
            rows.append({**row, "profile": rec["profile"], "chapter": rec.get("chapter", ""),
                         "notebook": rec["notebook"], "page": path.with_suffix("")})
    order = {p: i for i, p in enumerate(PROFILE_ORDER)}
    return sorted(rows, key=lambda r: (r["chapter"], order.get(r["profile"], len(order)), r["profile"]))


def _cell(value) -> str:
    """A value as a markdown table cell."""
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _verdict(verdict: str) -> str:
    """The verdict, emphasised so a reader finds it at a glance."""
    return f"**{verdict}**"


def write_claim_tables(built_profile: str, root: Path | None = None) -> Path:
    """Write book/_generated/scorecard.md and claims_<chapter>.md from the records; return the folder.

    The chapters include them at their top: results first, generated from the records at
    build time (never typed). Rows of every profile with records are shown; the summary
    page is linked for the profile this book renders.
    """
    root = root or project_root()
    out = root / "book" / GENERATED
    out.mkdir(parents=True, exist_ok=True)
    rows = scorecard_rows(root)
    for chapter in PAPER_CHAPTERS:
        mine = [r for r in rows if r["chapter"] == chapter]
        lines = [_table_note(mine, built_profile)]
        if mine:
            lines += ["| Profile | Claim | Effect [95% CI] | Seeds | ±delta | Verdict |",
                      "|---|---|---|---|---|---|"]
            lines += [f"| {_profile_link(r, built_profile, root)} | {_cell(r['claim'])} | "
                      f"{_cell(r['effect'])} | {_cell(r['seeds'])} | {_cell(r.get('delta'))} | "
                      f"{_verdict(r['verdict'])} |" for r in mine]
        (out / f"claims_{chapter}.md").write_text("\n".join(lines) + "\n")
    (out / "scorecard.md").write_text(_scorecard(rows, root) + "\n")
    return out


def _table_note(rows: list[dict], built_profile: str) -> str:
    if not rows:
        return ("*No summary records yet: run `python -m mlmlib run --profile smoke` (or another "
                "profile) and rebuild the book.*")
    profiles = sorted({r["profile"] for r in rows})
    return (f"Measured claims, generated from the run records of {', '.join(profiles)} "
            f"(this book shows the executed pages of `{built_profile}`).\n")


def _profile_link(row: dict, built_profile: str, root: Path) -> str:
    """The profile's name, linked to the summary page when this book renders that profile."""
    if row["profile"] != built_profile:
        return row["profile"]
    return f"[{row['profile']}](/{Path(row['page']).with_suffix('.ipynb').relative_to(root).as_posix()})"


def _scorecard(rows: list[dict], root: Path) -> str:
    """One line per paper claim: its verdict in each profile (all rows of a claim combined)."""
    from collections import defaultdict

    if not rows:
        return "*No summary records yet: the scorecard fills in once a profile has run.*"
    profiles = sorted({r["profile"] for r in rows},
                      key=lambda p: (PROFILE_ORDER.index(p) if p in PROFILE_ORDER else 99, p))
    cells: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        cells[(r["chapter"], r["claim"])][r["profile"]].append(r["verdict"])
    lines = ["| Paper | Claim | " + " | ".join(profiles) + " |",
             "|---|---|" + "---|" * len(profiles)]
    for (chapter, claim), by_profile in cells.items():
        verdicts = []
        for p in profiles:
            found = by_profile.get(p)
            if not found:
                verdicts.append("-")
                continue
            known = [v for v in found if v in VERDICTS]
            combined = combine(known) if len(known) == len(found) else NOT_RESOLVED
            verdicts.append(_verdict(combined) + (f" ({len(found)} rows)" if len(found) > 1 else ""))
        paper = PAPER_CHAPTERS.get(chapter, chapter)
        lines.append(f"| [{paper}](/book/{chapter}.md) | {_cell(claim)} | " + " | ".join(verdicts) + " |")
    return "\n".join(lines)


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
    write_claim_tables(profile, root)
    cli = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(cli) if cli.exists() else "jupyter-book", "build", str(root), "--toc", str(toc),
           "--path-output", str(output)]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    subprocess.run(cmd, cwd=root, check=True)
    return output / "_build" / "html"
