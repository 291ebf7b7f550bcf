"""The measured numbers the about-runs page quotes: the cpu batch as a whole, one registered
`quantity` each."""

from __future__ import annotations

from mlmlib.page_quantities import hours, minutes, quantity, span
from mlmlib.runs.budget import CHAPTER_NAMES

# The run that measures time alone (its entry's `alone`), leaving the other core idle.
ALONE = "B2_true_negatives_overhead"


def two_core_seconds(records) -> float:
    """The records' time on two cores: their core time plus the alone run's idle core, halved."""
    alone = records[records["notebook"] == ALONE]["wall_time_s"].sum()
    return (records["wall_time_s"].sum() + alone) / 2

# ----------------------------------------------------------------------------------------------
# The cpu batch as a whole (every record of the profile)


@quantity("cpu_runs", "*", "one record per run", "how many runs the cpu profile's records hold")
def _(records):
    return str(len(records))


@quantity("cpu_core_time", "*", "wall_time_s", "the cpu runs' wall times added up")
def _(records):
    return f"{records['wall_time_s'].sum():,.0f} s ({hours(records['wall_time_s'].sum())})"


@quantity("cpu_two_cores", "*", "wall_time_s",
          "the batch's time on two cores: its core time plus B2's, whose run leaves a core idle, "
          "halved")
def _(records):
    return hours(two_core_seconds(records))


@quantity("cpu_by_chapter", "*", "wall_time_s",
          "each chapter's part of the batch on two cores (its runs' core time, with the alone "
          "run's idle core, halved)")
def _(records):
    parts = records.groupby("chapter", sort=False)
    return "; ".join(f"{CHAPTER_NAMES.get(chapter, chapter)} {hours(two_core_seconds(part))}"
                     for chapter, part in parts)


@quantity("cpu_commits", "*", "git_sha", "the commits whose code made the cpu records")
def _(records):
    return ", ".join(sorted(records["git_sha"].str[:7].unique()))


@quantity("cpu_longest", "*", "wall_time_s", "the notebooks with the longest runs, time per run")
def _(records):
    times = records.groupby("notebook")["wall_time_s"].agg(["min", "max", "count"])
    times = times.sort_values("max", ascending=False).head(7)
    runs = [f"{nb} {span(minutes(t['min']), minutes(t['max']))}"
            + (f" ({int(t['count'])} runs)" if t["count"] > 1 else "") for nb, t in times.iterrows()]
    return "; ".join(runs)


