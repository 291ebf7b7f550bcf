"""Run pages as the book shows them: the parameters each run used, and the page listing the runs
of a notebook that ran several times in a profile."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat

from mlmlib.atomic import atomic_path
from mlmlib.runs.plans import RESERVED
from mlmlib.runs.records import readable_records

DEFAULTS_TAG = "parameters"  # the template's cell of defaults
INJECTED_TAG = "injected-parameters"  # papermill's cell of the values it was given
HIDING_TAGS = ("remove-cell", "remove-input", "hide-cell", "hide-input")
PLAN_MARK = "  # plan"
HEADING = ('# Parameters of this run (as its record holds them): "# plan" marks the values its\n'
           "# plan set, the others are the notebook's defaults\n")
INDEX = "index"  # stem of the generated page listing a notebook's runs (git-ignored)


def tidy_page(path: Path, params: dict[str, Any] | None = None, out: Path | None = None) -> None:
    """Make an executed notebook a book page: the run's parameters shown, the template's defaults
    removed, no local paths in its metadata; written to `out` (default: in place).

    `params`: every parameter the run used (its record's `params`); by default read from the
    notebook itself, its defaults overridden by what papermill injected.
    """
    nb = nbformat.read(path, as_version=4)
    show_run_parameters(nb, run_parameters(nb) if params is None else params)
    meta = nb.metadata.get("papermill", {})
    for key in ("input_path", "output_path"):
        if meta.get(key):
            meta[key] = Path(meta[key]).name
    nbformat.write(nb, out or path)


def run_parameters(nb) -> dict[str, Any]:
    """The parameters a run used, from its executed notebook: defaults overridden by injected
    values, without the runner's own (run_dir), as the runner writes them into the record."""
    injected = nb.metadata.get("papermill", {}).get("parameters", {})
    merged = {**_assignments(_cell(nb, DEFAULTS_TAG)), **injected}
    return {k: v for k, v in merged.items() if k not in RESERVED}


def show_run_parameters(nb, params: dict[str, Any]) -> None:
    """Replace the injected cell's source by every parameter of the run, visible, in the
    template's order, and remove the defaults cell from the page.

    The defaults cell stays in the notebook (tagged remove-cell): run top to bottom, the
    notebook still defines every parameter, and papermill still finds where to inject. The
    runner's work folder (run_dir) is no parameter of the results and no record holds it:
    re-run by hand, the notebook takes its default (a fresh temporary folder).
    """
    defaults = _cell(nb, DEFAULTS_TAG)
    if defaults is not None and "remove-cell" not in _tags(defaults):
        _tags(defaults).append("remove-cell")
    injected = _cell(nb, INJECTED_TAG)
    if injected is None:
        if not params:
            return
        injected = nbformat.v4.new_code_cell(metadata={"tags": [INJECTED_TAG]})
        nb.cells.insert(nb.cells.index(defaults) + 1 if defaults is not None else 0, injected)
    planned = set(nb.metadata.get("papermill", {}).get("parameters", {}))
    injected.source = parameters_source(params, list(_assignments(defaults)), planned)
    # shown, not folded: these are the values the page's results come from
    injected.metadata["tags"] = [t for t in _tags(injected) if t not in HIDING_TAGS]


def parameters_source(params: dict[str, Any], order: Sequence[str], planned: set[str]) -> str:
    """The visible cell: a heading, then one `name = value` line per parameter, the template's
    order first (then any it lacks), the plan's values marked."""
    from papermill.translators import PythonTranslator  # writes values as papermill does

    names = [n for n in order if n in params] + [n for n in params if n not in order]
    lines = [f"{n} = {PythonTranslator.translate(params[n])}{PLAN_MARK if n in planned else ''}"
             for n in names]
    return HEADING + "\n".join(lines)


def _cell(nb, tag: str):
    """The first code cell carrying `tag`, or None."""
    return next((c for c in nb.cells if c.cell_type == "code" and tag in _tags(c)), None)


def _tags(cell) -> list[str]:
    """The cell's tag list (created when missing, so it can be edited in place)."""
    return cell.metadata.setdefault("tags", [])


def _assignments(cell) -> dict[str, Any]:
    """{name: value} of a cell's plain `name = literal` lines, in order ({} without a cell)."""
    if cell is None:
        return {}
    out = {}
    for node in ast.parse(cell.source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def retidy(profile: str, root: Path | None = None) -> list[Path]:
    """Re-tidy every executed notebook of a profile from its record's params, atomically, without
    executing anything; the records stay as they are. Return the notebooks rewritten."""
    done = []
    for path, rec in readable_records(profile, root):
        page = path.with_suffix(".ipynb")
        if not page.exists():
            continue
        with atomic_path(page) as tmp:
            tidy_page(page, rec["params"], out=tmp)
        done.append(page)
    return done


def index_name(title: str, shared: bool) -> str:
    """File stem of an entry's runs page: 'index', or, when several plan entries share the
    notebook's folder, one per title. Run slugs are 'key-value' parts, or 'run': no clash."""
    if not shared:
        return INDEX
    return f"{INDEX}_{re.sub(r'[^a-z0-9]+', '_', title.lower()).strip('_')}"


def write_runs_index(path: Path, title: str, profile: str, recs: list[dict]) -> Path:
    """Write the markdown page listing the runs of one plan entry (records with their '_path'):
    a link to each run's page and a table from the records; return its path."""
    intro = (f"The runs of the notebook `{recs[0]['notebook']}` in the `{profile}` profile, one "
             "page each; every page shows the parameters its run used at its top. From the "
             "runs' records:")
    lines = [f"# {title}", "", intro, "",
             "| Run | Seed | Wall time | Finished at | Code version |", "|---|---|---|---|---|"]
    for rec in recs:
        link = f"[{_md(rec['label'])}]({rec['_path'].with_suffix('.ipynb').name})"
        lines.append(f"| {link} | {_md(rec.get('seed'))} | {_duration(rec.get('wall_time_s'))} | "
                     f"{_md(rec.get('finished_at'))} | `{rec.get('code_version', '-')}` |")
    path.write_text("\n".join(lines) + "\n")
    return path


def _md(value: Any) -> str:
    """A value as a markdown table cell ('-' for none)."""
    if value is None or value == "":
        return "-"
    return str(value).replace("|", "\\|")


def _duration(seconds: Any) -> str:
    """Seconds as '42 s' or '35.6 min'."""
    if not isinstance(seconds, (int, float)):
        return "-"
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"
