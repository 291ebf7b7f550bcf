"""Run records: what a notebook measured, written atomically, read back as one pandas table."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from mlmlib.atomic import with_nan, write_json
from mlmlib.page_quantities import explode_rows  # noqa: F401 - the summaries read rows with it
from mlmlib.paths import project_root

METRICS_FILE = "metrics.json"
# Records are strict JSON: NaN and infinities are stored as null, and listed under this field
# (with where they were) so that reading a record gives back the numbers the notebook saved.
NON_FINITE = "non_finite"


def run_folder(run_dir: str) -> Path:
    """Return the folder a run may write to; a fresh temporary one when run_dir is empty."""
    if not run_dir:
        return Path(tempfile.mkdtemp(prefix="mlmlib-run-"))
    path = Path(run_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path


def save_metrics(run_dir: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """Write a run's metrics for the runner to turn into its record (a no-op outside a batch)."""
    if not isinstance(metrics, dict):
        raise TypeError("metrics must be a dict of JSON-able values")
    text = json.dumps(metrics, default=_plain)  # fail here, inside the notebook, if not JSON-able
    if run_dir:
        write_json(Path(run_dir) / METRICS_FILE, json.loads(text))
    return metrics


def read_metrics(run_dir: str | Path) -> dict[str, Any]:
    """Read the metrics a notebook saved in its run folder."""
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: the notebook saved no metrics; end it with results.save_metrics(run_dir, {{...}})"
        )
    return json.loads(path.read_text())


class RecordError(ValueError):
    """A record file that cannot be read: names the file and what to do."""


def read_record(path: str | Path) -> dict[str, Any]:
    """Read one run record; a damaged file raises RecordError naming it."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: damaged record ({exc}); the runner reruns its notebook") from exc
    if not isinstance(record, dict) or not {"notebook", "params", "metrics"} <= set(record):
        raise RecordError(f"{path}: not a run record (no notebook/params/metrics); the runner "
                          "reruns its notebook")
    return with_nan(record, record.get(NON_FINITE, []))


def record_paths(profile: str | None = None, root: Path | None = None) -> list[Path]:
    """List the record files of one profile (or of all profiles present); _failed and the like
    (folders starting with '_') hold no current records."""
    base = (root or project_root()) / "book" / "runs"
    pattern = f"{profile}/*/*.json" if profile else "*/*/*.json"
    return sorted(p for p in base.glob(pattern)
                  if not p.name.startswith(".") and not p.parent.name.startswith("_"))


def readable_records(profile: str | None = None, root: Path | None = None, warn=print):
    """(path, record) for each record of a profile; a damaged one is named and left out."""
    out = []
    for path in record_paths(profile, root):
        try:
            out.append((path, read_record(path)))
        except RecordError as exc:
            warn(f"warning: {exc}")
    return out


def load_records(
    profile: str | None = None, notebook: str | None = None, root: Path | None = None
) -> pd.DataFrame:
    """Load records into one table: a row per run, parameters and metrics as columns."""
    rows = []
    for _, rec in readable_records(profile, root):
        if notebook and rec["notebook"] != notebook:
            continue
        rows.append(record_row(rec))
    return pd.DataFrame(rows)


def record_row(rec: dict[str, Any]) -> dict[str, Any]:
    """One table row: parameters, overridden by metrics, then the record's own fields, which
    nothing overwrites (a colliding parameter or metric stays as 'params.<name>')."""
    fields = {k: v for k, v in rec.items() if k not in ("params", "metrics")}
    row = {**rec["params"], **rec["metrics"]}
    for k in set(row) & set(fields):
        if row[k] != fields[k]:
            row[f"params.{k}"] = row[k]
    return row | fields


def _plain(value: Any) -> Any:
    """Turn numpy and torch values into plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"metric value not JSON-serialisable: {type(value).__name__}")
