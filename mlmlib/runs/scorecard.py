"""The scorecard: every claim row the summaries saved, as tables, forest plots and a CSV.

The page opens with the verdicts counted per paper and profile, then a forest plot with one
panel per paper and scale (accuracy differences, cost ratios and correlations never share an
axis), then a table per paper: one row per claim and a column per profile and testbed, the dose
stated once in the column's header, each cell the verdict (coloured, linked to its summary page)
and one short line (the failed or unmeasured control, the arm at its majority class, or
"controls passed"). The effect's full text stays on the summary page. Written at build time from
the records, never typed.
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
CSV_COLUMNS = ("profile", "chapter", "testbed", "claim", "verdict", "estimate", "low", "high",
               "direction", "delta", "seeds", "unit", "scale", "controls_passed", "failed_controls",
               "unmeasured_controls", "majority", "at_majority", "dose", "delta_source", "effect",
               "notebook", "page")
# The outcomes in the order the count line gives them (verdicts.VERDICTS; the runs package
# imports no paper or verdict code, so the words are repeated here and a test holds the two
# equal).
OUTCOMES = ("reproduced", "contradicted", "equivalent within ±delta", "insensitive",
            "not resolved", "not measured")


def verdict_class(verdict: str) -> str:
    """The CSS class that colours a verdict ('equivalent within ±delta' -> 'verdict-equivalent',
    'not measured' -> 'verdict-not-measured', 'not resolved' -> 'verdict-not')."""
    if verdict == "not measured":
        return "verdict-not-measured"
    return "verdict-" + verdict.split()[0].lower()


def column_name(row: dict) -> str:
    """The scorecard column a row belongs to: its profile and testbed."""
    testbed = row.get("testbed") or ""
    return f"{row['profile']}: {testbed}" if testbed else row["profile"]


def status(control: dict) -> str:
    """A control's status: passed, failed or not measured (a control without `status`, and so
    without an interval, has only `passed`)."""
    return control.get("status") or ("passed" if control.get("passed") else "failed")


def failed(row: dict) -> list[dict]:
    """A row's controls that failed on their interval."""
    return [c for c in row.get("controls") or [] if status(c) == "failed"]


def unmeasured(row: dict) -> list[dict]:
    """A row's controls without an interval (too few blocks)."""
    return [c for c in row.get("controls") or [] if status(c) == "not measured"]


def _short(text: str) -> str:
    return text if len(text) <= NAME_WIDTH else text[:NAME_WIDTH - 1] + "…"


def controls_summary(row: dict) -> str:
    """The controls in one short line: the failed one named, the unmeasured one, the arms at their
    majority class, or all passed. The values stay on the summary page."""
    controls = row.get("controls") or []
    if not controls:
        return "no controls declared"
    for what, bad in (("failed", failed(row)), ("not measured", unmeasured(row))):
        if bad:
            more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
            return f"{what}: {_short(bad[0]['name'])}{more}"
    if row.get("at_majority"):
        return _short("at the majority class: " + ", ".join(row["at_majority"]))
    return f"controls passed ({len(controls)})"


def counts_table(rows: list[dict], papers: dict[str, str]) -> str:
    """How many claims each paper's rows give each outcome, per profile: the page's first lines."""
    head = ["Paper", "Profile", *OUTCOMES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for chapter, paper in papers.items():
        for profile in dict.fromkeys(r["profile"] for r in rows if r["chapter"] == chapter):
            mine = [r["verdict"] for r in rows
                    if r["chapter"] == chapter and r["profile"] == profile]
            cells = [str(sum(v == o for v in mine)) for o in OUTCOMES]
            link = f"[{paper}](/book/{chapter}.md)"
            lines.append("| " + " | ".join([link, profile, *cells]) + " |")
    return "\n".join(lines)


def page_link(row: dict, rendered: Sequence[str], root: Path) -> str | None:
    """The link to a row's summary page where this book renders its profile, else None."""
    if row["profile"] not in rendered:
        return None
    return "/" + Path(row["page"]).with_suffix(".ipynb").relative_to(root).as_posix()


def cell(row: dict, rendered: Sequence[str], root: Path) -> str:
    """One scorecard cell: the verdict coloured (linked to its summary page where this book
    renders the profile), then one short line in small type (`controls_summary`)."""
    verdict = f'<span class="verdict {verdict_class(row["verdict"])}">{escape(row["verdict"])}</span>'
    link = page_link(row, rendered, root)
    head = f"[{verdict}]({link})" if link else verdict
    text = f"{head}<br><small>{escape(controls_summary(row))}</small>"
    return text.replace("|", "\\|").replace("\n", " ")


def column_head(name: str, rows: list[dict]) -> str:
    """A column's header: its profile and testbed, and the dose once when every row of the column
    shares it (else the summary page gives each claim's)."""
    doses = {r.get("dose") or "" for r in rows}
    dose = doses.pop() if len(doses) == 1 else "per claim, on the summary page"
    text = f"{escape(name)}<br><small>dose: {escape(dose)}</small>" if dose else escape(name)
    return text.replace("|", "\\|").replace("\n", " ")


def table(rows: list[dict], rendered: Sequence[str], root: Path) -> str:
    """One row per claim, one column per profile and testbed (one paper's rows: its columns)."""
    if not rows:
        return "*No summary records yet: the scorecard fills in once a profile has run.*"
    columns = list(dict.fromkeys(column_name(r) for r in rows))
    claims: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        claims.setdefault((r["chapter"], r["claim"]), {})[column_name(r)] = r
    head = ["Claim"] + [column_head(c, [r for r in rows if column_name(r) == c])
                        for c in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (chapter, claim), by_column in claims.items():
        cells = [cell(by_column[c], rendered, root) if c in by_column else "-" for c in columns]
        lines.append("| " + " | ".join([claim.replace("|", "\\|")] + cells) + " |")
    return "\n".join(lines)


def panels(rows: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """The rows with an interval, grouped by paper and scale (what the difference measures)."""
    out: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        if r.get("estimate") is not None and r.get("low") is not None:
            scale = r.get("scale") or "accuracy difference"
            out.setdefault((PAPER_CHAPTERS.get(r["chapter"], r["chapter"]), scale), []).append(r)
    return out


def forest_figure(rows: list[dict], path: Path, title: str) -> Path | None:
    """Draw the rows' effects with their intervals (plots.forest) into a PNG, one panel per paper
    and scale, each with its own axis; None with no interval to draw."""
    import matplotlib

    matplotlib.use("Agg")  # a build has no display
    import matplotlib.pyplot as plt

    from mlmlib.plots import forest

    groups = panels(rows)
    if not groups:
        return None
    heights = [0.32 * len(g) + 1.2 for g in groups.values()]
    fig, axes = plt.subplots(len(groups), 1, figsize=(9, sum(heights) + 0.4),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, ((paper, scale), mine) in zip(axes[:, 0], groups.items()):
        forest(mine, title=f"{title}: paper {paper}", ax=ax)
        ax.set_xlabel(f"{scale}, with its 95% interval")
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
                          "controls_passed": sum(status(c) == "passed" for c in controls),
                          "failed_controls": json.dumps(failed(r)) if failed(r) else "",
                          "unmeasured_controls": json.dumps(unmeasured(r)) if unmeasured(r) else "",
                          "majority": json.dumps(r["majority"]) if r.get("majority") else "",
                          "at_majority": ", ".join(r.get("at_majority") or []),
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
