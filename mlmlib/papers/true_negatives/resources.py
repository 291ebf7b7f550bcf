"""Paper B's hub resources: a question-answering task (SQuAD) among a run's downstream tasks.

Read by the mirror and the rehearsal (mlmlib.offline.resources); the GLUE tasks and the corpus
are the data layer's (mlmlib.data.resources).
"""

from __future__ import annotations

from mlmlib.data.hub_resources import Resource, RunParameters
from mlmlib.papers.true_negatives.qa import QA_TASKS, SQUAD_CONFIG, SQUAD_PATH


def hub_resources(p: RunParameters) -> list[Resource]:
    """SQuAD, when the run's tasks hold a QA task."""
    return [Resource("dataset", SQUAD_PATH, SQUAD_CONFIG, why=f"task {task}")
            for task in p.named("task", "tasks") if task in QA_TASKS]
