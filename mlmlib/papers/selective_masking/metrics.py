"""Which test metric each task's claims are judged on, and its majority-class key.

Separate from claims.py so the training page (C2) can pick the metric it plots without reaching
the claims module: an edit of the claims then reruns the summary, never the training.
"""

from __future__ import annotations

# The test metrics C2 records per row (finetune.evaluate's "f1" is macro-F1), as the page names them
METRIC_NAMES = {"accuracy": "accuracy", "f1": "macro-F1"}
# C2's record keys of the majority-class score per metric (experiment.majority_scores)
PRIOR_KEYS = {"accuracy": "majority_accuracy", "f1": "majority_f1"}
# Tasks whose claims use another metric than the summary's: always answering "not hate speech"
# is right on about 93% of the tweets, so accuracy hides a classifier that learned nothing.
TASK_METRICS = {"tweets-hate-speech": "f1"}


def check_metric(metric: str, task_metrics: dict[str, str] | None = None) -> None:
    """Raise unless `metric` and every value of `task_metrics` is a metric C2 records."""
    if metric not in METRIC_NAMES:
        raise ValueError(f"metric must be one of {list(METRIC_NAMES)}, got {metric!r}")
    bad = {t: m for t, m in (task_metrics or {}).items() if m not in METRIC_NAMES}
    if bad:
        raise ValueError(f"task_metrics: {bad} are not metrics; allowed: {list(METRIC_NAMES)}")


def claim_metric(task: str, metric: str = "accuracy", task_metrics: dict[str, str] | None = None) -> str:
    """The metric the claims about `task` use: its entry in `task_metrics`, else `metric`."""
    return (task_metrics or {}).get(task, metric)
