"""What SLURM says of submitted jobs: which are still live (squeue) and how the ended ones ended
(sacct). The executor (mlmlib.runs.executors) asks both for every job of a batch at once.
"""

from __future__ import annotations

import subprocess

# SLURM's job states (squeue, sacct): a job not over yet (a requeued or held one too), one that ended,
# and the ends that the cluster, not the run, chose: the run is submitted again (--max-requeue)
SLURM_LIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD",
              "REQUEUE_FED", "RESIZING", "SUSPENDED", "SIGNALING", "STAGE_OUT", "STOPPED",
              "SPECIAL_EXIT", "RESV_DEL_HOLD"}
SLURM_ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "BOOT_FAIL",
               "DEADLINE", "OUT_OF_MEMORY", "REVOKED"}
SLURM_RESUBMIT = {"PREEMPTED", "NODE_FAIL", "BOOT_FAIL", "CANCELLED"}  # CANCELLED: not by the user


def slurm_alive(job_ids: list[str]) -> dict[str, bool]:
    """Which of these SLURM jobs have not ended: one `squeue` for all of them (a poll of a few
    hundred jobs must not be a few hundred calls to the controller)."""
    ids = sorted(set(map(str, job_ids)))
    if not ids:
        return {}
    asked = subprocess.run(["squeue", "-h", "-o", "%i %T", "-j", ",".join(ids)],
                           capture_output=True, text=True, check=False)
    if asked.returncode != 0:
        if "Invalid job id" not in asked.stderr:  # the controller is busy or away: ask again
            return {j: True for j in ids}  # later, never resubmit a job that may still run
        if len(ids) == 1:  # a job SLURM no longer knows has ended
            return {ids[0]: False}
        # squeue refuses a list with an id it has forgotten on some versions: ask each one
        return {j: slurm_alive([j])[j] for j in ids}
    states: dict[str, str] = {}
    for line in asked.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            states[parts[0]] = parts[1]
    # a state this list does not know (a newer SLURM) counts as live: never submit a run twice
    return {j: j in states and (states[j] in SLURM_LIVE or states[j] not in SLURM_ENDED) for j in ids}


def slurm_end_states(job_ids: list[str]) -> dict[str, str]:
    """The last state of each ended job as sacct words it ('PREEMPTED', 'CANCELLED by 1234'); a
    job missing from the answer (no accounting on this cluster, sacct away) is left out."""
    ids = sorted(set(map(str, job_ids)))
    try:
        asked = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobIDRaw,State", "-j", ",".join(ids)],
                               capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    rows = [line.strip().partition("|") for line in asked.stdout.splitlines()] if asked.returncode == 0 else []
    return {job: state.strip() for job, _, state in rows if job in ids and state.strip()}  # last: last try
