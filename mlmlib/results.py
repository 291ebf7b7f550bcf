"""Run records: what a notebook measured, written atomically, read back as one pandas table."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from mlmlib.atomic import write_json
from mlmlib.paths import project_root

METRICS_FILE = "metrics.json"


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


def record_paths(profile: str | None = None, root: Path | None = None) -> list[Path]:
    """List the record files of one profile (or of all profiles present)."""
    base = (root or project_root()) / "book" / "runs"
    pattern = f"{profile}/*/*.json" if profile else "*/*/*.json"
    return sorted(p for p in base.glob(pattern) if not p.name.startswith("."))


def load_records(
    profile: str | None = None, notebook: str | None = None, root: Path | None = None
) -> pd.DataFrame:
    """Load records into one table: a row per run, parameters and metrics as columns."""
    rows = []
    for path in record_paths(profile, root):
        rec = json.loads(path.read_text())
        if notebook and rec["notebook"] != notebook:
            continue
        row = {k: v for k, v in rec.items() if k not in ("params", "metrics")}
        row.update(rec["params"])
        row.update(rec["metrics"])
        rows.append(row)
    return pd.DataFrame(rows)


def explode_rows(records: pd.DataFrame, key: str, keep: list[str] | None = None) -> pd.DataFrame:
    """Expand a metric holding a list of row dicts into a long table, one row per entry."""
    if records.empty or key not in records:
        return pd.DataFrame()
    keep = keep or [c for c in ("run_id", "profile", "seed") if c in records]
    out = []
    for _, rec in records.iterrows():
        for item in rec[key] or []:
            out.append({**{k: rec[k] for k in keep}, **item})
    return pd.DataFrame(out)


def _plain(value: Any) -> Any:
    """Turn numpy and torch values into plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"metric value not JSON-serialisable: {type(value).__name__}")
