"""The scorecard: every claim row the summaries saved, as tables, forest plots and a CSV.

One row per claim and a column per profile and testbed: the verdict (coloured), the positive
controls (passed, or the failed one named) and the dose of the intervention (ours against the
paper profile's). The effect's full text stays on the summary page each cell links to. Written
at build time from the records, never typed.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from html import escape
from pathlib import Path

PAPER_CHAPTERS = {"paper_a": "A", "paper_b": "B", "paper_c": "C"}
CSV_NAME = "claims.csv"
NAME_WIDTH = 60  # a failed control's name in a cell; the summary page shows it whole
CSV_COLUMNS = ("profile", "chapter", "testbed", "claim", "verdict", "estimate", "low", "high", "direction",
               "delta", "seeds", "controls_passed", "failed_controls", "dose", "delta_source", "effect",
               "notebook", "page")


def verdict_class(verdict: str) -> str:
    """The CSS class that colours a verdict ('equivalent within ±delta' -> 'verdict-equivalent')."""
    return "verdict-" + verdict.split()[0].lower()


def column_name(row: dict) -> str:
    """The scorecard column a row belongs to: its profile and testbed."""
    testbed = row.get("testbed") or ""
    return f"{row['profile']}: {testbed}" if testbed else row["profile"]


def failed(row: dict) -> list[dict]:
    """A row's controls that did not pass (older records have none)."""
    return [c for c in row.get("controls") or [] if not c.get("passed")]


def controls_summary(row: dict) -> str:
    """The controls in a few words: all passed, the failed one named, or none declared."""
    controls = row.get("controls") or []
    if not controls:
        return "no controls declared"
    bad = failed(row)
    if not bad:
        return f"controls passed ({len(controls)})"
    first = bad[0]
    more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
    name = first["name"] if len(first["name"]) <= NAME_WIDTH else first["name"][:NAME_WIDTH - 1] + "…"
    return f"failed: {name}: {first['measured']:.3g} (needs {first['op']} {first['threshold']:g}){more}"


def page_link(row: dict, rendered: Sequence[str], root: Path) -> str | None:
    """The link to a row's summary page where this book renders its profile, else None."""
    if row["profile"] not in rendered:
        return None
    return "/" + Path(row["page"]).with_suffix(".ipynb").relative_to(root).as_posix()


def cell(row: dict, rendered: Sequence[str], root: Path) -> str:
    """One scorecard cell: the verdict coloured (linked to its summary page where this book
    renders the profile), then its controls and dose in small type."""
    verdict = f'<span class="verdict {verdict_class(row["verdict"])}">{escape(row["verdict"])}</span>'
    link = page_link(row, rendered, root)
    head = f"[{verdict}]({link})" if link else verdict
    parts = [head, f"<small>{escape(controls_summary(row))}</small>"]
    if row.get("dose"):
        parts.append(f"<small>dose: {escape(row['dose'])}</small>")
    return "<br>".join(parts).replace("|", "\\|").replace("\n", " ")


def table(rows: list[dict], rendered: Sequence[str], root: Path) -> str:
    """One row per claim, one column per profile and testbed (one paper's rows: its columns)."""
    if not rows:
        return "*No summary records yet: the scorecard fills in once a profile has run.*"
    columns = list(dict.fromkeys(column_name(r) for r in rows))
    claims: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        claims.setdefault((r["chapter"], r["claim"]), {})[column_name(r)] = r
    head = ["Claim"] + columns
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (chapter, claim), by_column in claims.items():
        cells = [cell(by_column[c], rendered, root) if c in by_column else "-" for c in columns]
        lines.append("| " + " | ".join([claim.replace("|", "\\|")] + cells) + " |")
    return "\n".join(lines)


def forest_figure(rows: list[dict], path: Path, title: str) -> Path | None:
    """Draw the rows' effects with their intervals (plots.forest) into a PNG; None with none."""
    import matplotlib

    matplotlib.use("Agg")  # a build has no display
    import matplotlib.pyplot as plt

    from mlmlib.plots import forest

    shown = [r for r in rows if r.get("estimate") is not None and r.get("low") is not None]
    if not shown:
        return None
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(shown) + 1.6))
    forest(shown, title=title, ax=ax)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
    return path


def write_csv(rows: list[dict], path: Path, root: Path) -> Path:
    """Every claim row of every profile, one line each (controls as JSON of the failed ones)."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        out.writeheader()
        for r in rows:
            controls = r.get("controls") or []
            out.writerow({**{k: r.get(k) for k in CSV_COLUMNS if k in r},
                          "controls_passed": sum(bool(c.get("passed")) for c in controls),
                          "failed_controls": json.dumps(failed(r)) if failed(r) else "",
                          "page": Path(r["page"]).relative_to(root).as_posix()})
    tmp.replace(path)
    return path


def forest_section(rows: list[dict], out: Path, stem: str, what: str) -> str:
    """Forest plots of `rows`, one per profile, written as PNGs under `out`; their markdown."""
    lines = []
    for profile in dict.fromkeys(r["profile"] for r in rows):
        mine = [r for r in rows if r["profile"] == profile]
        png = forest_figure(mine, out / f"{stem}_{profile}.png", f"{what}, {profile} profile")
        if png:
            lines += ["", f"![Forest plot of the {profile} profile's claims](/book/{out.name}/{png.name})"]
    return "\n".join(lines)
