"""Build the Jupyter Book: the committed table of contents plus the executed runs of a profile."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from mlmlib.floors import missed as missed_checks
from mlmlib.paths import project_root, runs_dir
from mlmlib.runs.plans import check_name
from mlmlib.runs.records import readable_records


def generated_toc(profile: str, also: Sequence[str] = ()) -> Path:
    """Write the table of contents with each run of `profile` under its chapter, then the runs of
    the profiles in `also` (their titles name the profile); return its path."""
    root = project_root()
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    chapters = {}
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            chapters[Path(chapter["file"]).stem] = chapter
    for shown in (profile, *[p for p in also if p != profile]):
        _add_runs(chapters, shown, root, suffix="" if shown == profile else f" [{shown} profile]")
    out = runs_dir(profile) / "_toc.yml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(toc, sort_keys=False))
    return out


def _add_runs(chapters: dict[str, dict], profile: str, root: Path, suffix: str) -> None:
    """Put each executed run of `profile` under its chapter, in the order of the profile's plan."""
    by_entry: dict[tuple[str, str], list[dict]] = {}  # one plan entry: notebook and title
    for path, rec in readable_records(profile, root):
        if not path.with_suffix(".ipynb").exists():
            continue
        by_entry.setdefault((rec["notebook"], rec["title"]), []).append(rec | {"_path": path})
    order = _plan_order(profile)
    for entry in sorted(by_entry, key=lambda e: order.get(e, len(order))):
        recs = sorted(by_entry[entry], key=lambda r: r["label"])
        recs = [r | {"title": r["title"] + suffix} for r in recs]
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


def missed_floors(root: Path | None = None, profiles: Sequence[str] = PROFILE_ORDER) -> list[dict]:
    """Per summary record of `profiles` that missed sanity floors (metrics['floors']): its
    profile, chapter, notebook, page, the checks it made and the ones it missed."""
    out = []
    for profile in dict.fromkeys(profiles):
        for path, rec in readable_records(profile, root):
            checks = rec["metrics"].get("floors") or []
            missed = missed_checks(checks)
            if missed:
                out.append({"profile": rec["profile"], "chapter": rec.get("chapter", ""),
                            "notebook": rec["notebook"], "page": path.with_suffix(""),
                            "checks": len(checks), "missed": missed})
    return out


def _floor_notes(notes: list[dict], rendered: Sequence[str], root: Path) -> str:
    """The missed floors under a claim table: a verdict there compares models below them."""
    if not notes:
        return ""
    head = ("**Sanity floors missed.** The verdicts of these summaries compare models that did not "
            "reach a floor (the summary page lists every check, the missed ones in red):")
    lines = ["", head, ""]
    for n in notes:
        worst = n["missed"][0]
        measured = "not measured" if worst.get("measured") is None else f"{worst['measured']:.3f}"
        lines.append(f"- {n['notebook']} ({_profile_link(n, rendered, root)}): {len(n['missed'])} of "
                     f"{n['checks']} checks missed, e.g. {_cell(worst['check'])}: {measured} against "
                     f"{worst['floor']:g}.")
    return "\n".join(lines)


def scorecard_rows(root: Path | None = None, profiles: Sequence[str] = PROFILE_ORDER) -> list[dict]:
    """Every claim row that summary notebooks of `profiles` saved (metrics['scorecard'])."""
    rows = []
    profiles = list(dict.fromkeys(profiles))
    for profile in profiles:
        for path, rec in readable_records(profile, root):
            for row in rec["metrics"].get("scorecard") or []:
                rows.append({**row, "profile": rec["profile"], "chapter": rec.get("chapter", ""),
                             "notebook": rec["notebook"], "page": path.with_suffix("")})
    order = {p: i for i, p in enumerate(profiles)}
    return sorted(rows, key=lambda r: (r["chapter"], order.get(r["profile"], len(order))))


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


def write_claim_tables(built_profile: str, root: Path | None = None, also: Sequence[str] = ()) -> Path:
    """Write book/_generated/scorecard.md and claims_<chapter>.md from the records; return the folder.

    The chapters include them at their top: results first, generated from the records at
    build time (never typed). Rows of the smoke, cpu and paper profiles (and of the rendered
    ones) are shown; a row links its summary page where this book renders its profile.
    """
    root = root or project_root()
    out = root / "book" / GENERATED
    out.mkdir(parents=True, exist_ok=True)
    rendered = (built_profile, *also)
    rows = scorecard_rows(root, (*PROFILE_ORDER, *rendered))
    notes = missed_floors(root, (*PROFILE_ORDER, *rendered))
    for chapter in PAPER_CHAPTERS:
        mine = [r for r in rows if r["chapter"] == chapter]
        lines = [_table_note(mine, rendered)]
        if mine:
            lines += ["| Profile | Claim | Verdict | Seeds | ±delta | Effect [95% CI] |",
                      "|---|---|---|---|---|---|"]
            lines += [f"| {_profile_link(r, rendered, root)} | {_cell(r['claim'])} | "
                      f"{_verdict(r['verdict'])} | {_cell(r['seeds'])} | {_cell(r.get('delta'))} | "
                      f"{_cell(r['effect'])} |" for r in mine]
            lines.append(_floor_notes([n for n in notes if n["chapter"] == chapter], rendered, root))
        (out / f"claims_{chapter}.md").write_text("\n".join(lines) + "\n")
    (out / "scorecard.md").write_text(_scorecard(rows, rendered, root) + "\n"
                                      + _floor_notes(notes if rows else [], rendered, root) + "\n")
    return out


def _table_note(rows: list[dict], rendered: Sequence[str]) -> str:
    if not rows:
        return ("*No summary records yet: run `python -m mlmlib run --profile smoke` (or another "
                "profile) and rebuild the book.*")
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    return (f"Measured claims, generated from the run records of {', '.join(profiles)} "
            f"(this book shows the executed pages of {', '.join(f'`{p}`' for p in rendered)}).\n")


def _profile_link(row: dict, rendered: Sequence[str], root: Path) -> str:
    """The profile's name, linked to the summary page when this book renders that profile."""
    if row["profile"] not in rendered:
        return row["profile"]
    return f"[{row['profile']}](/{Path(row['page']).with_suffix('.ipynb').relative_to(root).as_posix()})"


def _scorecard(rows: list[dict], rendered: Sequence[str], root: Path) -> str:
    """Every paper claim, one line per profile that measured it: effect, interval, seeds, margin,
    verdict, and the profile linked to its summary page. Lines of one claim stay together."""
    if not rows:
        return "*No summary records yet: the scorecard fills in once a profile has run.*"
    first: dict[tuple[str, str], int] = {}
    for i, r in enumerate(rows):
        first.setdefault((r["chapter"], r["claim"]), i)
    ordered = sorted(range(len(rows)), key=lambda i: (first[(rows[i]["chapter"], rows[i]["claim"])], i))
    # the verdict before the effect's long text: on a narrow page the table scrolls sideways,
    # and what a reader came for stays in view
    lines = ["| Paper | Claim | Profile | Verdict | Seeds | ±delta | Effect [95% CI] |",
             "|---|---|---|---|---|---|---|"]
    for i in ordered:
        r = rows[i]
        paper = PAPER_CHAPTERS.get(r["chapter"], r["chapter"])
        lines.append(f"| [{paper}](/book/{r['chapter']}.md) | {_cell(r['claim'])} | "
                     f"{_profile_link(r, rendered, root)} | {_verdict(r['verdict'])} | "
                     f"{_cell(r['seeds'])} | {_cell(r.get('delta'))} | {_cell(r['effect'])} |")
    return "\n".join(lines)


def check_profile(profile: str) -> None:
    """Refuse a profile with neither a plan nor records (a typo would build an empty book)."""
    from mlmlib.runs.plans import PlanError, available_profiles

    check_name("profile", profile)
    if profile not in available_profiles() and not runs_dir(profile).is_dir():
        raise PlanError(f"unknown profile {profile!r}: no plan in notebooks/plans/ and no records "
                        f"in book/runs/; profiles with a plan: {available_profiles()}")


def build_book(profile: str, strict: bool = True, output: Path | None = None,
               also: Sequence[str] = ()) -> Path:
    """Run `jupyter-book build` (no execution of its own) and return the HTML folder.

    `also`: further profiles whose executed runs appear beside `profile`'s (the committed `cpu`
    results beside a fresh smoke run); one without records is left out with a note.
    """
    root = project_root()
    check_profile(profile)
    also = [p for p in also if p != profile]
    for extra in also:
        check_name("profile", extra)
    missing = [p for p in also if not any(True for _ in readable_records(p, root))]
    for extra in missing:
        print(f"book: no records of profile {extra!r} in book/runs/{extra}/: left out")
    also = [p for p in also if p not in missing]
    output = Path(output) if output else root / "book"
    toc = generated_toc(profile, also)
    write_claim_tables(profile, root, also)
    cli = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(cli) if cli.exists() else "jupyter-book", "build", str(root), "--toc", str(toc),
           "--path-output", str(output)]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    subprocess.run(cmd, cwd=root, check=True)
    return output / "_build" / "html"
